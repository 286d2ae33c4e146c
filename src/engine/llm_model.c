/*
 * Model loading: config.json (with the Hugging Face defaults of each
 * architecture), generation_config.json, safetensors (single or sharded),
 * and the binding of every tensor with its dtype and shape checked.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/llm_model_impl.h"

typedef struct {
    const char *architecture;
    const char *model_type;
    int vocab, hidden, intermediate, layers, heads, kv_heads, head_dim, max_pos;
    double eps, theta;
    int qkv_bias;        /* q/k/v biases always present */
    int qk_norm;         /* per-head q/k RMSNorm */
    int sliding;         /* default sliding window, 0 none */
} llm_arch_defaults;

/* Defaults of the transformers config classes, for keys a config.json leaves out. */
static const llm_arch_defaults arch_table[] = {
    { "LlamaForCausalLM",   "llama",   32000,  4096, 11008, 32, 32, -1, -1, 2048,   1e-6, 10000.0, 0, 0, 0 },
    { "MistralForCausalLM", "mistral", 32000,  4096, 14336, 32, 32,  8, -1, 131072, 1e-6, 10000.0, 0, 0, 4096 },
    { "Qwen2ForCausalLM",   "qwen2",   151936, 4096, 22016, 32, 32, 32, -1, 32768,  1e-6, 10000.0, 1, 0, 0 },
    { "Qwen3ForCausalLM",   "qwen3",   151936, 4096, 22016, 32, 32, 32, 128, 32768, 1e-6, 10000.0, 0, 1, 0 },
};

/* ---- small JSON helpers ---- */

static int
jint(json_t *o, const char *key, int def, int *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (json_is_integer(v) && json_integer_value(v) >= INT_MIN && json_integer_value(v) <= INT_MAX) {
        *out = (int) json_integer_value(v);
        return 0;
    }
    if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v))
        && json_real_value(v) >= INT_MIN && json_real_value(v) <= INT_MAX)   /* else the cast is undefined */
    {
        *out = (int) json_real_value(v);
        return 0;
    }
    snprintf(err, errlen, "config.json: \"%s\" is not an integer", key);
    return -1;
}

static int
jnum(json_t *o, const char *key, double def, double *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    snprintf(err, errlen, "config.json: \"%s\" is not a number", key);
    return -1;
}

static int
jbool(json_t *o, const char *key, int def)
{
    json_t *v = json_object_get(o, key);
    if (json_is_boolean(v)) return json_is_true(v);
    return def;
}

static json_t *
load_json(const char *dir, const char *name, int required, char *err, size_t errlen)
{
    char path[4096];
    json_error_t jerr;
    json_t *j;
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (stat(path, &st) != 0) {
        if (required) snprintf(err, errlen, "%s: %s", name, strerror(errno));
        return NULL;
    }
    j = json_load_file(path, 0, &jerr);
    if (j == NULL) {
        snprintf(err, errlen, "%s: line %d: %s", name, jerr.line, jerr.text);
    } else if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: not a JSON object", name);
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* eos_token_id: an integer or a list of integers */
static void
read_eos(json_t *v, llm_model_info *info)
{
    size_t i;

    if (json_is_integer(v)) {
        info->n_eos = 1;
        info->eos_ids[0] = (int32_t) json_integer_value(v);
    } else if (json_is_array(v)) {
        info->n_eos = 0;
        for (i = 0; i < json_array_size(v) && info->n_eos < LLM_MAX_EOS; i++) {
            if (json_is_integer(json_array_get(v, i))) {
                info->eos_ids[info->n_eos++] = (int32_t) json_integer_value(json_array_get(v, i));
            }
        }
    }
}

/* ---- RoPE configuration (old "rope_theta" + "rope_scaling", or "rope_parameters") ---- */

static int
parse_rope(llm_model *m, json_t *cfg, double theta_default, char *err, size_t errlen)
{
    json_t *rp = json_object_get(cfg, "rope_parameters");
    json_t *sc = json_object_get(cfg, "rope_scaling");
    json_t *src, *t;
    const char *kind = "default";
    llm_rope_cfg *r = &m->rope;

    memset(r, 0, sizeof(*r));
    if (jnum(cfg, "rope_theta", theta_default, &r->theta, err, errlen) != 0) return -1;
    src = json_is_object(rp) ? rp : (json_is_object(sc) ? sc : NULL);
    if (src == NULL) {
        r->kind = LLM_ROPE_DEFAULT;
        return 0;
    }
    if (jnum(src, "rope_theta", r->theta, &r->theta, err, errlen) != 0) return -1;
    t = json_object_get(src, "rope_type");
    if (!json_is_string(t)) t = json_object_get(src, "type");
    if (json_is_string(t)) kind = json_string_value(t);
    if (jnum(src, "factor", 1.0, &r->factor, err, errlen) != 0) return -1;
    if (strcmp(kind, "default") == 0) {
        r->kind = LLM_ROPE_DEFAULT;
    } else if (strcmp(kind, "linear") == 0) {
        r->kind = LLM_ROPE_LINEAR;
    } else if (strcmp(kind, "llama3") == 0) {
        r->kind = LLM_ROPE_LLAMA3;
        if (jnum(src, "low_freq_factor", 1.0, &r->low_freq_factor, err, errlen) != 0
            || jnum(src, "high_freq_factor", 4.0, &r->high_freq_factor, err, errlen) != 0
            || jnum(src, "original_max_position_embeddings", 8192, &r->original_max_pos, err, errlen) != 0)
        {
            return -1;
        }
        if (r->high_freq_factor <= r->low_freq_factor) {
            snprintf(err, errlen, "config.json: llama3 rope needs high_freq_factor > low_freq_factor");
            return -1;
        }
    } else if (strcmp(kind, "yarn") == 0) {
        r->kind = LLM_ROPE_YARN;
        if (jnum(src, "original_max_position_embeddings", m->info.max_position_embeddings,
                 &r->original_max_pos, err, errlen) != 0
            || jnum(src, "beta_fast", 32.0, &r->beta_fast, err, errlen) != 0
            || jnum(src, "beta_slow", 1.0, &r->beta_slow, err, errlen) != 0
            || jnum(src, "attention_factor", r->factor > 1 ? 0.1 * log(r->factor) + 1.0 : 1.0,
                    &r->attention_factor, err, errlen) != 0)
        {
            return -1;
        }
    } else {
        snprintf(err, errlen, "config.json: unsupported rope type \"%s\" (default, linear, llama3, yarn)", kind);
        return -1;
    }
    if ((r->kind == LLM_ROPE_LINEAR || r->kind == LLM_ROPE_LLAMA3 || r->kind == LLM_ROPE_YARN)
        && !(r->factor > 0))
    {
        snprintf(err, errlen, "config.json: rope scaling factor must be positive");
        return -1;
    }
    return 0;
}

void
llm_rope_inv_freq(const llm_rope_cfg *r, int head_dim, float *inv, float *mscale)
{
    int half = head_dim / 2, i;

    *mscale = 1.0f;
    for (i = 0; i < half; i++) {
        /* float32 as transformers computes it */
        inv[i] = 1.0f / powf((float) r->theta, (float) (2 * i) / (float) head_dim);
    }
    if (r->kind == LLM_ROPE_LINEAR) {
        for (i = 0; i < half; i++) inv[i] = (float) (inv[i] / r->factor);
    } else if (r->kind == LLM_ROPE_LLAMA3) {
        double low_wl = r->original_max_pos / r->low_freq_factor;
        double high_wl = r->original_max_pos / r->high_freq_factor;
        for (i = 0; i < half; i++) {
            double f = inv[i], wl = 2 * M_PI / f;
            if (wl > low_wl) {
                f = f / r->factor;
            } else if (wl >= high_wl) {
                double s = (r->original_max_pos / wl - r->low_freq_factor)
                         / (r->high_freq_factor - r->low_freq_factor);
                f = (1 - s) * f / r->factor + s * f;
            }
            inv[i] = (float) f;
        }
    } else if (r->kind == LLM_ROPE_YARN) {
        double d = head_dim, base = r->theta, lo, hi;
        lo = floor(d * log(r->original_max_pos / (r->beta_fast * 2 * M_PI)) / (2 * log(base)));
        hi = ceil(d * log(r->original_max_pos / (r->beta_slow * 2 * M_PI)) / (2 * log(base)));
        if (lo < 0) lo = 0;
        if (hi > d - 1) hi = d - 1;
        if (lo == hi) hi += 0.001;
        for (i = 0; i < half; i++) {
            double pf = pow(base, (2.0 * i) / d), ramp, ex;
            ramp = (i - lo) / (hi - lo);
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            ex = 1 - ramp;
            inv[i] = (float) ((1.0 / (r->factor * pf)) * (1 - ex) + (1.0 / pf) * ex);
        }
        *mscale = (float) r->attention_factor;
    }
}

/* ---- tensors ---- */

static const llm_st_tensor *
find_tensor(const llm_model *m, const char *name)
{
    const llm_st_tensor *t;
    int i;
    for (i = 0; i < m->n_files; i++) {
        if ((t = llm_st_find(&m->files[i], name)) != NULL) return t;
    }
    return NULL;
}

static int
bind_mat(llm_model *m, llm_mat *out, const char *name, int rows, int cols, char *err, size_t errlen)
{
    const llm_st_tensor *t = find_tensor(m, name);

    if (t == NULL) {
        snprintf(err, errlen, "tensor \"%s\" is missing", name);
        return -1;
    }
    if (t->type < 0) {
        snprintf(err, errlen, "tensor \"%s\" has dtype %s (F32, F16 or BF16 expected)", name, t->dtype);
        return -1;
    }
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols) {
        snprintf(err, errlen, "tensor \"%s\" has shape [%lld, %lld] (%d dims), config says [%d, %d]",
                 name, (long long) t->shape[0], (long long) (t->ndim > 1 ? t->shape[1] : 0),
                 t->ndim, rows, cols);
        return -1;
    }
    out->data = t->data;
    out->type = (llm_wtype) t->type;
    out->rows = rows;
    out->cols = cols;
    m->info.n_params += (uint64_t) rows * cols;
    m->info.weight_bytes += t->nbytes;
    return 0;
}

/* A vector widened to an f32 copy; *out stays NULL when optional and absent. */
static int
bind_vec(llm_model *m, float **out, const char *name, int n, int optional, char *err, size_t errlen)
{
    const llm_st_tensor *t = find_tensor(m, name);
    float *v;

    *out = NULL;
    if (t == NULL) {
        if (optional) return 0;
        snprintf(err, errlen, "tensor \"%s\" is missing", name);
        return -1;
    }
    if (t->type < 0) {
        snprintf(err, errlen, "tensor \"%s\" has dtype %s (F32, F16 or BF16 expected)", name, t->dtype);
        return -1;
    }
    if (t->ndim != 1 || t->shape[0] != n) {
        snprintf(err, errlen, "tensor \"%s\" has shape [%lld] (%d dims), config says [%d]",
                 name, (long long) (t->ndim ? t->shape[0] : 0), t->ndim, n);
        return -1;
    }
    if (m->n_owned == m->cap_owned) {
        int cap = m->cap_owned ? m->cap_owned * 2 : 64;
        float **o = realloc(m->owned, (size_t) cap * sizeof(*o));
        if (o == NULL) goto oom;
        m->owned = o;
        m->cap_owned = cap;
    }
    v = malloc((size_t) n * sizeof(float));
    if (v == NULL) goto oom;
    llm_kernels_scalar()->to_f32(v, t->data, (llm_wtype) t->type, n);
    m->owned[m->n_owned++] = v;
    m->info.n_params += (uint64_t) n;
    m->info.weight_bytes += t->nbytes;
    *out = v;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int
open_files(llm_model *m, const char *dir, char *err, size_t errlen)
{
    char path[4096], msg[512];
    json_t *idx, *map, *v;
    const char *key;
    size_t i, nf = 0;
    const char **names;

    idx = load_json(dir, "model.safetensors.index.json", 0, err, errlen);
    if (idx == NULL) {
        if (err[0]) return -1;
        m->files = calloc(1, sizeof(*m->files));
        if (m->files == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        m->n_files = 1;
        if (llm_st_open(&m->files[0], path, msg, sizeof(msg)) != 0) {
            snprintf(err, errlen, "%s", msg);
            return -1;
        }
        return 0;
    }
    map = json_object_get(idx, "weight_map");
    if (!json_is_object(map)) {
        snprintf(err, errlen, "%s/model.safetensors.index.json: no \"weight_map\" object", dir);
        json_decref(idx);
        return -1;
    }
    names = calloc(json_object_size(map) + 1, sizeof(*names));
    m->files = calloc(json_object_size(map) + 1, sizeof(*m->files));
    if (names == NULL || m->files == NULL) {
        free(names);
        json_decref(idx);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    json_object_foreach(map, key, v) {
        const char *fn = json_string_value(v);
        if (fn == NULL || strchr(fn, '/') != NULL) {
            snprintf(err, errlen, "model.safetensors.index.json: bad file name for \"%s\"", key);
            free(names);
            json_decref(idx);
            return -1;
        }
        for (i = 0; i < nf && strcmp(names[i], fn) != 0; i++) { }
        if (i == nf) names[nf++] = fn;
    }
    for (i = 0; i < nf; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        m->n_files++;
        if (llm_st_open(&m->files[i], path, msg, sizeof(msg)) != 0) {
            snprintf(err, errlen, "%s", msg);
            free(names);
            json_decref(idx);
            return -1;
        }
    }
    free(names);
    json_decref(idx);
    return 0;
}

static int
bind_all(llm_model *m, int qkv_bias, int o_bias, int qk_norm, char *err, size_t errlen)
{
    llm_model_info *in = &m->info;
    int H = in->hidden, hd = in->head_dim, q = in->n_heads * hd, kv = in->n_kv_heads * hd, l;
    char n[160];

    if (bind_mat(m, &m->embed, "model.embed_tokens.weight", in->n_vocab, H, err, errlen) != 0) return -1;
    if (in->tie_word_embeddings) {
        m->lm_head = m->embed;
    } else if (bind_mat(m, &m->lm_head, "lm_head.weight", in->n_vocab, H, err, errlen) != 0) {
        return -1;
    }
    if (bind_vec(m, &m->final_norm, "model.norm.weight", H, 0, err, errlen) != 0) return -1;
    m->layers = calloc((size_t) in->n_layers, sizeof(*m->layers));
    if (m->layers == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (l = 0; l < in->n_layers; l++) {
        llm_layer *L = &m->layers[l];
#define P(s) (snprintf(n, sizeof(n), "model.layers.%d.%s", l, s), n)
        if (bind_mat(m, &L->wq, P("self_attn.q_proj.weight"), q, H, err, errlen) != 0
            || bind_mat(m, &L->wk, P("self_attn.k_proj.weight"), kv, H, err, errlen) != 0
            || bind_mat(m, &L->wv, P("self_attn.v_proj.weight"), kv, H, err, errlen) != 0
            || bind_mat(m, &L->wo, P("self_attn.o_proj.weight"), H, q, err, errlen) != 0
            || bind_mat(m, &L->w_gate, P("mlp.gate_proj.weight"), in->intermediate, H, err, errlen) != 0
            || bind_mat(m, &L->w_up, P("mlp.up_proj.weight"), in->intermediate, H, err, errlen) != 0
            || bind_mat(m, &L->w_down, P("mlp.down_proj.weight"), H, in->intermediate, err, errlen) != 0
            || bind_vec(m, &L->attn_norm, P("input_layernorm.weight"), H, 0, err, errlen) != 0
            || bind_vec(m, &L->ffn_norm, P("post_attention_layernorm.weight"), H, 0, err, errlen) != 0)
        {
            return -1;
        }
        if (qkv_bias) {
            if (bind_vec(m, &L->bq, P("self_attn.q_proj.bias"), q, 0, err, errlen) != 0
                || bind_vec(m, &L->bk, P("self_attn.k_proj.bias"), kv, 0, err, errlen) != 0
                || bind_vec(m, &L->bv, P("self_attn.v_proj.bias"), kv, 0, err, errlen) != 0)
            {
                return -1;
            }
        }
        if (o_bias && bind_vec(m, &L->bo, P("self_attn.o_proj.bias"), H, 0, err, errlen) != 0) return -1;
        if (qk_norm) {
            if (bind_vec(m, &L->q_norm, P("self_attn.q_norm.weight"), hd, 0, err, errlen) != 0
                || bind_vec(m, &L->k_norm, P("self_attn.k_norm.weight"), hd, 0, err, errlen) != 0)
            {
                return -1;
            }
        }
#undef P
    }
    return 0;
}

static const char *
dtype_label(llm_wtype t)
{
    return llm_wtype_name(t);
}

int
llm_model_parse_config(llm_model *m, const char *dir, char *msg, size_t msglen)
{
    llm_model_info *in = &m->info;
    json_t *cfg = NULL, *gen = NULL, *archs, *v;
    const llm_arch_defaults *d = NULL;
    const char *arch;
    size_t i;
    int bos, mlp_bias;

    msg[0] = '\0';
    cfg = load_json(dir, "config.json", 1, msg, msglen);
    if (cfg == NULL) goto fail;

    archs = json_object_get(cfg, "architectures");
    arch = json_string_value(json_array_get(archs, 0));
    if (arch == NULL) {
        snprintf(msg, msglen, "config.json: no \"architectures\" entry");
        goto fail;
    }
    for (i = 0; i < sizeof(arch_table) / sizeof(arch_table[0]); i++) {
        if (strcmp(arch, arch_table[i].architecture) == 0) d = &arch_table[i];
    }
    if (d == NULL) {
        snprintf(msg, msglen, "unsupported architecture \"%s\" (LlamaForCausalLM, MistralForCausalLM, "
                 "Qwen2ForCausalLM, Qwen3ForCausalLM)", arch);
        goto fail;
    }
    snprintf(m->architecture, sizeof(m->architecture), "%s", arch);
    v = json_object_get(cfg, "model_type");
    snprintf(m->model_type, sizeof(m->model_type), "%s", json_is_string(v) ? json_string_value(v) : d->model_type);
    in->architecture = m->architecture;
    in->model_type = m->model_type;

    if (jint(cfg, "vocab_size", d->vocab, &in->n_vocab, msg, msglen)
        || jint(cfg, "hidden_size", d->hidden, &in->hidden, msg, msglen)
        || jint(cfg, "intermediate_size", d->intermediate, &in->intermediate, msg, msglen)
        || jint(cfg, "num_hidden_layers", d->layers, &in->n_layers, msg, msglen)
        || jint(cfg, "num_attention_heads", d->heads, &in->n_heads, msg, msglen)
        || jint(cfg, "max_position_embeddings", d->max_pos, &in->max_position_embeddings, msg, msglen)
        || jnum(cfg, "rms_norm_eps", d->eps, &in->rms_norm_eps, msg, msglen))
    {
        goto fail;
    }
    if (jint(cfg, "num_key_value_heads", d->kv_heads > 0 ? d->kv_heads : in->n_heads, &in->n_kv_heads, msg, msglen)) goto fail;
    if (in->n_heads <= 0 || in->hidden <= 0) {
        snprintf(msg, msglen, "config.json: hidden_size and num_attention_heads must be positive");
        goto fail;
    }
    if (jint(cfg, "head_dim", d->head_dim > 0 ? d->head_dim : in->hidden / in->n_heads, &in->head_dim, msg, msglen)) goto fail;
    if (in->n_vocab <= 0 || in->intermediate <= 0 || in->n_layers <= 0 || in->n_kv_heads <= 0
        || in->head_dim <= 0 || in->head_dim % 2 != 0 || in->n_heads % in->n_kv_heads != 0
        || in->n_vocab > (1 << 24) || in->hidden > (1 << 16) || in->intermediate > (1 << 18)
        || in->n_layers > 1024 || in->head_dim > 1024 || in->n_heads > 1024)
    {
        snprintf(msg, msglen, "config.json: inconsistent sizes (vocab %d, hidden %d, intermediate %d, "
                 "layers %d, heads %d, kv heads %d, head_dim %d)", in->n_vocab, in->hidden,
                 in->intermediate, in->n_layers, in->n_heads, in->n_kv_heads, in->head_dim);
        goto fail;
    }
    v = json_object_get(cfg, "hidden_act");
    if (json_is_string(v) && strcmp(json_string_value(v), "silu") != 0) {
        snprintf(msg, msglen, "config.json: hidden_act \"%s\" is not supported (silu)", json_string_value(v));
        goto fail;
    }
    mlp_bias = jbool(cfg, "mlp_bias", 0);
    if (mlp_bias) {
        snprintf(msg, msglen, "config.json: mlp_bias is not supported");
        goto fail;
    }
    in->tie_word_embeddings = jbool(cfg, "tie_word_embeddings", 0);
    m->qkv_bias = d->qkv_bias || jbool(cfg, "attention_bias", 0);
    m->o_bias = !d->qkv_bias && jbool(cfg, "attention_bias", 0);
    m->qk_norm = d->qk_norm;

    in->sliding_window = 0;
    v = json_object_get(cfg, "sliding_window");
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        /* Qwen2/3 only slide when use_sliding_window is set */
        if (d->qkv_bias || d->qk_norm) {
            if (jbool(cfg, "use_sliding_window", 0)) in->sliding_window = (int) json_integer_value(v);
        } else {
            in->sliding_window = (int) json_integer_value(v);
        }
    } else if (v == NULL && d->sliding) {
        in->sliding_window = d->sliding;
    }
    if (parse_rope(m, cfg, d->theta, msg, msglen) != 0) goto fail;
    in->rope_theta = m->rope.theta;

    if (jint(cfg, "bos_token_id", -1, &bos, msg, msglen)) goto fail;
    in->bos_id = bos;
    read_eos(json_object_get(cfg, "eos_token_id"), in);

    gen = load_json(dir, "generation_config.json", 0, msg, msglen);
    if (gen == NULL && msg[0]) goto fail;
    if (gen) {
        double x = 0;
        v = json_object_get(gen, "bos_token_id");
        if (json_is_integer(v)) in->bos_id = (int32_t) json_integer_value(v);
        v = json_object_get(gen, "eos_token_id");
        if (json_is_integer(v) || json_is_array(v)) read_eos(v, in);
        if (json_is_number(json_object_get(gen, "temperature"))) {
            jnum(gen, "temperature", 1.0, &x, msg, msglen);
            in->has_temperature = 1; in->temperature = x;
        }
        if (json_is_number(json_object_get(gen, "top_p"))) {
            jnum(gen, "top_p", 1.0, &x, msg, msglen);
            in->has_top_p = 1; in->top_p = x;
        }
        if (json_is_integer(json_object_get(gen, "top_k"))) {
            in->has_top_k = 1; in->top_k = (int) json_integer_value(json_object_get(gen, "top_k"));
        }
        if (json_is_number(json_object_get(gen, "repetition_penalty"))) {
            jnum(gen, "repetition_penalty", 1.0, &x, msg, msglen);
            in->has_repetition_penalty = 1; in->repetition_penalty = x;
        }
    }

    json_decref(cfg);
    json_decref(gen);
    return 0;

fail:
    json_decref(cfg);
    json_decref(gen);
    return -1;
}

llm_model *
llm_model_load(const char *dir, char *err, size_t errlen)
{
    llm_model *m;
    char msg[512] = "";

    if (errlen) err[0] = '\0';
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (llm_model_parse_config(m, dir, msg, sizeof(msg)) != 0
        || open_files(m, dir, msg, sizeof(msg)) != 0
        || bind_all(m, m->qkv_bias, m->o_bias, m->qk_norm, msg, sizeof(msg)) != 0)
    {
        snprintf(err, errlen, "model %s: %s", dir, msg);
        llm_model_free(m);
        return NULL;
    }
    m->info.dtype = dtype_label(m->embed.type);
    return m;
}

void
llm_model_free(llm_model *m)
{
    int i;

    if (m == NULL) return;
    for (i = 0; i < m->n_files; i++) llm_st_close(&m->files[i]);
    free(m->files);
    for (i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    free(m);
}

const llm_model_info *
llm_model_get_info(const llm_model *m)
{
    return &m->info;
}

int
llm_model_is_eos(const llm_model *m, int32_t id)
{
    int i;
    for (i = 0; i < m->info.n_eos; i++) {
        if (m->info.eos_ids[i] == id) return 1;
    }
    return 0;
}
