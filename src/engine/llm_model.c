/*
 * Model loading: config.json (with the Hugging Face defaults of each
 * architecture), generation_config.json, safetensors (single or sharded),
 * and the binding of every tensor with its dtype and shape checked.
 */
#include <errno.h>
#include <stddef.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/llm_deltanet.h"
#include "engine/llm_gguf.h"
#include "engine/llm_gptoss.h"
#include "engine/llm_mlx.h"
#include "engine/llm_model_impl.h"
#include "kernels/cpu/llm_quant.h"

/*
 * Defaults of the transformers config classes, for keys a config.json leaves
 * out, and the family that decides tensor names and the block shape.
 */
typedef struct {
    const char *architecture;
    const char *model_type;
    llm_family  family;
    int vocab, hidden, intermediate, layers, heads, kv_heads, head_dim, max_pos;
    double eps, theta;
    int sliding;         /* default sliding window, 0 none */
    int tie;             /* default tie_word_embeddings */
    int text_config;     /* a multimodal checkpoint: the text model's config is its "text_config" */
} llm_arch_defaults;

static const llm_arch_defaults arch_table[] = {
    { "LlamaForCausalLM",   "llama",       LLM_FAM_LLAMA,   32000,  4096, 11008, 32, 32, -1, -1,  2048,   1e-6, 10000.0,   0,    0, 0 },
    { "MistralForCausalLM", "mistral",     LLM_FAM_MISTRAL, 32000,  4096, 14336, 32, 32,  8, -1,  131072, 1e-6, 10000.0,   4096, 0, 0 },
    { "Qwen2ForCausalLM",   "qwen2",       LLM_FAM_QWEN2,   151936, 4096, 22016, 32, 32, 32, -1,  32768,  1e-6, 10000.0,   0,    0, 0 },
    { "Qwen3ForCausalLM",   "qwen3",       LLM_FAM_QWEN3,   151936, 4096, 22016, 32, 32, 32, 128, 32768,  1e-6, 10000.0,   0,    0, 0 },
    { "Gemma2ForCausalLM",  "gemma2",      LLM_FAM_GEMMA2,  256000, 2304, 9216,  26, 8,  4,  256, 8192,   1e-6, 10000.0,   4096, 1, 0 },
    { "Gemma3ForCausalLM",  "gemma3_text", LLM_FAM_GEMMA3,  262208, 2304, 9216,  26, 8,  4,  256, 131072, 1e-6, 1000000.0, 4096, 1, 0 },
    { "Gemma3ForConditionalGeneration", "gemma3", LLM_FAM_GEMMA3, 262208, 2304, 9216, 26, 8, 4, 256, 131072, 1e-6, 1000000.0, 4096, 1, 1 },
    { "Phi3ForCausalLM",    "phi3",        LLM_FAM_PHI3,    32064,  3072, 8192,  32, 32, -1, -1,  4096,   1e-5, 10000.0,   0,    0, 0 },
    { "SmolLM3ForCausalLM", "smollm3",     LLM_FAM_SMOLLM3, 128256, 2048, 11008, 36, 16, 4,  -1,  32768,  1e-6, 2000000.0, 0,    1, 0 },
    { "Glm4ForCausalLM",    "glm4",        LLM_FAM_GLM4,    151552, 4096, 13696, 40, 32, 2,  128, 131072, 1.5625e-7, 10000.0, 0,  0, 0 },
    { "GraniteForCausalLM", "granite",     LLM_FAM_GRANITE, 32000,  4096, 11008, 32, 32, -1, -1,  2048,   1e-6, 10000.0,   0,    0, 0 },
    { "Olmo2ForCausalLM",   "olmo2",       LLM_FAM_OLMO2,   50304,  4096, 11008, 32, 32, -1, -1,  2048,   1e-5, 10000.0,   0,    0, 0 },
    { "Qwen3MoeForCausalLM", "qwen3_moe",  LLM_FAM_QWEN3MOE, 151936, 2048, 6144, 24, 32, 4,  -1,  32768,  1e-6, 10000.0,   4096, 0, 0 },
    { "MixtralForCausalLM", "mixtral",     LLM_FAM_MIXTRAL, 32000,  4096, 14336, 32, 32, 8,  -1,  131072, 1e-5, 1000000.0, 0,    0, 0 },
    { "Glm4MoeForCausalLM", "glm4_moe",    LLM_FAM_GLM4MOE, 151552, 4096, 10944, 46, 96, 8,  128, 131072, 1e-5, 10000.0,   0,    0, 0 },
    { "GptOssForCausalLM",  "gpt_oss",     LLM_FAM_GPTOSS,  201088, 2880, 2880,  36, 64, 8,  64,  131072, 1e-5, 150000.0,  128,  0, 0 },
    { "Lfm2ForCausalLM",    "lfm2",        LLM_FAM_LFM2,    65536,  2560, 12288, 32, 32, 8,  -1,  128000, 1e-5, 1000000.0, 0,    1, 0 },
    { "Qwen3NextForCausalLM", "qwen3_next", LLM_FAM_QWEN3NEXT, 151936, 2048, 5632, 48, 16, 2, 256, 32768, 1e-6, 10000.0, 0,   0, 0 },
    { "Qwen3_5ForCausalLM", "qwen3_5_text", LLM_FAM_QWEN35, 248320, 4096, 12288, 32, 16, 4,  256, 32768,  1e-6, 10000.0,   0,    0, 0 },
    { "Qwen3_5ForConditionalGeneration", "qwen3_5_text", LLM_FAM_QWEN35, 248320, 4096, 12288, 32, 16, 4, 256, 32768, 1e-6, 10000.0, 0, 0, 1 },
    { "Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", LLM_FAM_QWEN35MOE, 248320, 2048, 512, 40, 16, 2, 256, 32768, 1e-6, 10000.0, 0, 0, 0 },
    { "Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe_text", LLM_FAM_QWEN35MOE, 248320, 2048, 512, 40, 16, 2, 256, 32768, 1e-6, 10000.0, 0, 0, 1 },
    { "DeepseekV3ForCausalLM", "deepseek_v3", LLM_FAM_DEEPSEEKV3, 129280, 7168, 18432, 61, 128, 128, -1, 163840, 1e-6, 10000.0, 0, 0, 0 },
};

/* MoE defaults of the config classes: experts, chosen per token, expert rows, renormalize */
typedef struct {
    llm_family family;
    int        experts, top_k, moe_intermediate, norm_topk;
    int        sigmoid;      /* grouped sigmoid routing with n_shared_experts, first_k_dense_replace */
} llm_moe_defaults;

static const llm_moe_defaults moe_table[] = {
    { LLM_FAM_QWEN3MOE, 128, 8, 768,  0, 0 },
    { LLM_FAM_MIXTRAL,  8,   2, -1,   1, 0 },     /* -1: intermediate_size (every layer is sparse) */
    { LLM_FAM_GLM4MOE,  128, 8, 1408, 1, 1 },
    { LLM_FAM_GPTOSS,   128, 4, -1,   1, 0 },     /* softmax over the chosen logits = softmax, renormalized */
    { LLM_FAM_QWEN3NEXT, 512, 10, 512, 1, 0 },    /* + a shared expert (shared_expert_intermediate_size) */
    { LLM_FAM_QWEN35MOE, 256, 8, 512, 1, 0 },     /* the same; every layer sparse, always renormalized */
    { LLM_FAM_DEEPSEEKV3, 256, 8, 2048, 1, 1 },
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

/* A soft-capping value: absent gives the family default, null turns it off. */
static int
jcap(json_t *o, const char *key, double def, float *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL) {
        *out = (float) def;
        return 0;
    }
    if (json_is_null(v)) {
        *out = 0;
        return 0;
    }
    if (json_is_number(v) && json_number_value(v) > 0 && json_number_value(v) < 1e30) {
        *out = (float) json_number_value(v);
        return 0;
    }
    snprintf(err, errlen, "config.json: \"%s\" must be a positive number or null", key);
    return -1;
}

/* a JSON document of the model (a folder's file, or made from a GGUF file's metadata) */
static json_t *
load_json(const char *dir, const char *name, int required, char *err, size_t errlen)
{
    json_t *j;
    int absent;

    j = llm_model_doc(dir, name, 0, &absent, err, errlen);
    if (absent) {
        if (required) snprintf(err, errlen, "%s: %s", name, strerror(ENOENT));
        else err[0] = '\0';
        return NULL;
    }
    if (j != NULL && !json_is_object(j)) {
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

/* longrope short_factor / long_factor: exactly rot_dim/2 numbers */
static int
read_factors(json_t *src, const char *key, int n, float *out, char *err, size_t errlen)
{
    json_t *a = json_object_get(src, key);
    int i;

    if (!json_is_array(a) || (int) json_array_size(a) != n) {
        snprintf(err, errlen, "config.json: longrope \"%s\" must be a list of %d numbers (rotary dims / 2)", key, n);
        return -1;
    }
    for (i = 0; i < n; i++) {
        json_t *v = json_array_get(a, (size_t) i);
        if (!json_is_number(v) || !(json_number_value(v) > 0)) {
            snprintf(err, errlen, "config.json: longrope \"%s\" holds a value that is not a positive number", key);
            return -1;
        }
        out[i] = (float) json_number_value(v);
    }
    return 0;
}

/*
 * One RoPE table from a rope_scaling / rope_parameters object (src may be
 * NULL: default RoPE with theta).  cfg: the whole config, for the keys some
 * families keep at the top level (Phi-3's original_max_position_embeddings).
 */
/* YaRN's attention scale for a context factor: 0.1 mscale ln(factor) + 1 (transformers' get_mscale) */
static double
yarn_mscale(double factor, double mscale)
{
    return factor <= 1 ? 1.0 : 0.1 * mscale * log(factor) + 1.0;
}

static int
parse_rope_obj(llm_model *m, llm_rope_cfg *r, json_t *cfg, json_t *src, double theta, char *err, size_t errlen)
{
    json_t *t, *top_omax = json_object_get(cfg, "original_max_position_embeddings");
    const char *kind = "default";
    double mscale, af;

    memset(r, 0, sizeof(*r));
    r->theta = theta;
    r->kind = LLM_ROPE_DEFAULT;
    if (src == NULL) return 0;
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
        r->truncate = jbool(src, "truncate", 1);     /* gpt-oss: false, the range is not rounded */
        if (jnum(src, "original_max_position_embeddings", m->info.max_position_embeddings,
                 &r->original_max_pos, err, errlen) != 0
            || jnum(src, "beta_fast", 32.0, &r->beta_fast, err, errlen) != 0
            || jnum(src, "beta_slow", 1.0, &r->beta_slow, err, errlen) != 0
            || jnum(src, "mscale", 0, &mscale, err, errlen) != 0
            || jnum(src, "mscale_all_dim", 0, &r->mscale_all_dim, err, errlen) != 0)
        {
            return -1;
        }
        /* transformers' default: get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
         * when the config has both (DeepSeek), else get_mscale(factor) */
        af = mscale != 0 && r->mscale_all_dim != 0
             ? yarn_mscale(r->factor, mscale) / yarn_mscale(r->factor, r->mscale_all_dim)
             : yarn_mscale(r->factor, 1.0);
        if (jnum(src, "attention_factor", af, &r->attention_factor, err, errlen) != 0) return -1;
    } else if (strcmp(kind, "longrope") == 0 || strcmp(kind, "su") == 0) {
        /* Phi-3: original_max_position_embeddings at the top level, and the
         * attention scale from max_position_embeddings / that, as transformers does */
        double factor = r->factor;
        r->kind = LLM_ROPE_LONGROPE;
        if (json_is_number(top_omax)) {
            r->original_max_pos = json_number_value(top_omax);
            factor = m->info.max_position_embeddings / r->original_max_pos;
        } else if (jnum(src, "original_max_position_embeddings", m->info.max_position_embeddings,
                        &r->original_max_pos, err, errlen) != 0)
        {
            return -1;
        }
        if (!(r->original_max_pos >= 2)) {
            snprintf(err, errlen, "config.json: longrope needs original_max_position_embeddings >= 2");
            return -1;
        }
        if (jnum(src, "attention_factor",
                 factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log(r->original_max_pos)),
                 &r->attention_factor, err, errlen) != 0)
        {
            return -1;
        }
        r->n_factors = m->rot_dim / 2;
        if (r->n_factors > LLM_ROPE_MAX_FACTORS
            || read_factors(src, "short_factor", r->n_factors, r->short_factor, err, errlen) != 0
            || read_factors(src, "long_factor", r->n_factors, r->long_factor, err, errlen) != 0)
        {
            return -1;
        }
        r->factor = factor;
    } else {
        snprintf(err, errlen, "config.json: unsupported rope type \"%s\" (default, linear, llama3, yarn, longrope)", kind);
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

/*
 * rope[0] is the table of full-attention layers, rope[1] (Gemma 3 only) that
 * of sliding-window layers.  transformers 5 writes "rope_parameters", per
 * layer type when they differ ({"full_attention": {...}, "sliding_attention":
 * {...}}); published checkpoints mostly have "rope_theta" + "rope_scaling"
 * (+ Gemma 3's "rope_local_base_freq" for the sliding layers, which are
 * never scaled).
 */
static int
parse_rope(llm_model *m, json_t *cfg, double theta_default, int per_type, char *err, size_t errlen)
{
    json_t *rp = json_object_get(cfg, "rope_parameters");
    json_t *sc = json_object_get(cfg, "rope_scaling");
    json_t *full = NULL, *slide = NULL;
    double theta, local;

    if (jnum(cfg, "rope_theta", theta_default, &theta, err, errlen) != 0
        || jnum(cfg, "rope_local_base_freq", 10000.0, &local, err, errlen) != 0)
    {
        return -1;
    }
    if (json_is_object(rp) && (json_is_object(json_object_get(rp, "full_attention"))
                               || json_is_object(json_object_get(rp, "sliding_attention"))))
    {
        full = json_object_get(rp, "full_attention");
        slide = json_object_get(rp, "sliding_attention");
        if (!json_is_object(full) || (per_type && !json_is_object(slide))) {
            snprintf(err, errlen, "config.json: \"rope_parameters\" per layer type lacks %s",
                     json_is_object(full) ? "\"sliding_attention\"" : "\"full_attention\"");
            return -1;
        }
    } else {
        full = json_is_object(rp) ? rp : (json_is_object(sc) ? sc : NULL);
    }
    m->n_rope = per_type ? 2 : 1;
    if (parse_rope_obj(m, &m->rope[0], cfg, full, theta, err, errlen) != 0) return -1;
    if (per_type && parse_rope_obj(m, &m->rope[1], cfg, slide, local, err, errlen) != 0) return -1;
    return 0;
}

void
llm_rope_inv_freq(const llm_rope_cfg *r, int rot_dim, int n_ctx, float *inv, float *mscale)
{
    int half = rot_dim / 2, i;

    *mscale = 1.0f;
    for (i = 0; i < half; i++) {
        /* float32 as transformers computes it */
        inv[i] = 1.0f / powf((float) r->theta, (float) (2 * i) / (float) rot_dim);
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
        double d = rot_dim, base = r->theta, lo, hi;
        lo = d * log(r->original_max_pos / (r->beta_fast * 2 * M_PI)) / (2 * log(base));
        hi = d * log(r->original_max_pos / (r->beta_slow * 2 * M_PI)) / (2 * log(base));
        if (r->truncate) {
            lo = floor(lo);
            hi = ceil(hi);
        }
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
    } else if (r->kind == LLM_ROPE_LONGROPE) {
        /*
         * transformers switches factors by the length of the sequence in the
         * forward call; a KV cache keeps keys rotated once, so the choice is
         * made per runtime from its context: long factors when the context
         * can exceed the original length (llama.cpp does the same).
         */
        const float *ext = n_ctx > r->original_max_pos ? r->long_factor : r->short_factor;
        for (i = 0; i < half && i < r->n_factors; i++) {
            inv[i] = 1.0f / (ext[i] * powf((float) r->theta, (float) (2 * i) / (float) rot_dim));
        }
        *mscale = (float) r->attention_factor;
    }
}

/* ---- tensors ---- */

static const llm_st_tensor *
find_tensor(const llm_model *m, const char *name)
{
    return llm_st_find_in(m->files, m->n_files, name);
}

static int
open_files(llm_model *m, const char *dir, char *err, size_t errlen)
{
    char path[4096], msg[512];
    json_t *idx, *map, *v;
    const char *key;
    size_t i, nf = 0;
    const char **names;

    if (llm_gguf_is_path(dir)) {
        llm_gguf g;
        if (llm_gguf_open(&g, dir, err, errlen) != 0) {
            llm_gguf_close(&g);
            return -1;
        }
        m->files = g.files;          /* the tensors are the model's now */
        m->n_files = g.n_files;
        g.files = NULL;
        g.n_files = 0;
        llm_gguf_close(&g);
        return 0;
    }
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

/* an MLX folder's quantized weights (config.json "quantization") as block matrices */
static int
unpack_mlx(llm_model *m, const char *dir, char *err, size_t errlen)
{
    json_t *cfg, *q;
    int rc = 0;

    if (llm_gguf_is_path(dir)) return 0;
    cfg = load_json(dir, "config.json", 1, err, errlen);
    if (cfg == NULL) return -1;
    q = json_object_get(cfg, "quantization");
    if (q != NULL) rc = llm_mlx_unpack(m->files, m->n_files, q, err, errlen);
    json_decref(cfg);
    return rc;
}

/* ---- the tensors of each family ---- */

typedef struct {
    llm_model  *m;
    int       (*fn)(void *ctx, const llm_tensor_spec *t);
    void       *ctx;
    int         layer;
} tensor_walk;

static int
walk_emit(tensor_walk *w, llm_tensor_spec *t, const char *name)
{
    if (w->layer >= 0) {
        snprintf(t->name, sizeof(t->name), "%slayers.%d.%s", w->m->prefix, w->layer, name);
    } else if (strncmp(name, "model.", 6) == 0) {
        snprintf(t->name, sizeof(t->name), "%s%s", w->m->prefix, name + 6);
    } else {
        snprintf(t->name, sizeof(t->name), "%s%s", w->m->head_prefix, name);
    }
    return w->fn(w->ctx, t);
}

static int
walk_mat(tensor_walk *w, const char *name, int rows, int cols, llm_mat *dst)
{
    llm_tensor_spec t;
    memset(&t, 0, sizeof(t));
    t.rows = rows;
    t.cols = cols;
    t.n_parts = 1;
    t.part[0] = dst;
    t.part_rows[0] = rows;
    return walk_emit(w, &t, name);
}

/* one tensor holding several matrices one after the other (Phi-3 qkv_proj, gate_up_proj) */
static int
walk_fused(tensor_walk *w, const char *name, int cols, int n, llm_mat *d0, int r0, llm_mat *d1, int r1,
    llm_mat *d2, int r2)
{
    llm_tensor_spec t;
    memset(&t, 0, sizeof(t));
    t.rows = r0 + r1 + (n > 2 ? r2 : 0);
    t.cols = cols;
    t.n_parts = n;
    t.part[0] = d0; t.part_rows[0] = r0;
    t.part[1] = d1; t.part_rows[1] = r1;
    t.part[2] = d2; t.part_rows[2] = r2;
    return walk_emit(w, &t, name);
}

static int
walk_vec(tensor_walk *w, const char *name, int n, int is_norm, float **dst)
{
    llm_tensor_spec t;
    memset(&t, 0, sizeof(t));
    t.rows = n;
    t.is_norm = is_norm;
    t.vec = dst;
    return walk_emit(w, &t, name);
}

/* a 3-d tensor [n][rows][cols] whose slices hold one matrix each (or, fused, two: d0 then d1 rows) */
static int
walk_stacked(tensor_walk *w, const char *name, int n, int cols, llm_mat *d0, int r0, llm_mat *d1, int r1)
{
    llm_tensor_spec t;
    memset(&t, 0, sizeof(t));
    t.rows = r0 + r1;
    t.cols = cols;
    t.n_stack = n;
    t.n_parts = d1 ? 2 : 1;
    t.part[0] = d0; t.part_rows[0] = r0;
    t.part[1] = d1; t.part_rows[1] = r1;
    return walk_emit(w, &t, name);
}

/*
 * A sparse MLP: the router, then the experts one by one as published
 * checkpoints have them (Qwen3-MoE mlp.experts.E.gate_proj/up_proj/down_proj,
 * Mixtral block_sparse_moe.experts.E.w1/w3/w2), or stacked per layer as
 * transformers 5 saves them (experts.gate_up_proj [E][2I][H], experts.down_proj
 * [E][H][I]), or as GGUF files keep them (gate_proj and up_proj [E][I][H]
 * apart: llama.cpp's ffn_gate_exps / ffn_up_exps).
 */
static int
walk_moe(tensor_walk *w, const llm_model *m, llm_moe *moe)
{
    const char *pre = m->moe_legacy_names ? "block_sparse_moe" : "mlp";
    int H = m->info.hidden, I = m->moe_intermediate, E = m->n_experts, e, rc;
    char name[96];

    if (m->family == LLM_FAM_GPTOSS) {
        /* the router has a bias; the experts as llm_gptoss_unpack left them, with their biases */
        static const char *const vec[3] = { "gate_bias", "up_bias", "down_bias" };
        float **dst[3] = { &moe->gate_bias, &moe->up_bias, &moe->down_bias };
        if ((rc = walk_mat(w, "mlp.router.weight", E, H, &moe->router)) != 0
            || (rc = walk_vec(w, "mlp.router.bias", E, 0, &moe->router_bias)) != 0) return rc;
        for (e = 0; e < 3; e++) {
            snprintf(name, sizeof(name), "mlp.experts.%s", vec[e]);
            if ((rc = walk_vec(w, name, E * (e < 2 ? I : H), 0, dst[e])) != 0) return rc;
        }
    } else {
        snprintf(name, sizeof(name), "%s.gate.weight", pre);
        if ((rc = walk_mat(w, name, E, H, &moe->router)) != 0) return rc;
    }
    if (m->moe_sigmoid) {
        snprintf(name, sizeof(name), "%s.gate.e_score_correction_bias", pre);
        if ((rc = walk_vec(w, name, E, 0, &moe->score_bias)) != 0) return rc;
    }
    if (m->shared_intermediate > 0) {
        /* Qwen3-Next: one shared_expert and its sigmoid gate; GLM-4.5: shared_experts */
        int S = m->shared_intermediate, next = m->family == LLM_FAM_QWEN3NEXT || m->family == LLM_FAM_QWEN35MOE;
        const char *sh = next ? "shared_expert" : "shared_experts";
        snprintf(name, sizeof(name), "%s.%s.gate_proj.weight", pre, sh);
        if ((rc = walk_mat(w, name, S, H, &moe->sh_gate)) != 0) return rc;
        snprintf(name, sizeof(name), "%s.%s.up_proj.weight", pre, sh);
        if ((rc = walk_mat(w, name, S, H, &moe->sh_up)) != 0) return rc;
        snprintf(name, sizeof(name), "%s.%s.down_proj.weight", pre, sh);
        if ((rc = walk_mat(w, name, H, S, &moe->sh_down)) != 0) return rc;
        snprintf(name, sizeof(name), "%s.shared_expert_gate.weight", pre);
        if (next && (rc = walk_vec(w, name, H, 0, &moe->sh_weight)) != 0) return rc;
    }
    if (m->experts_stacked == 2) {
        snprintf(name, sizeof(name), "%s.experts.gate_proj", pre);
        if ((rc = walk_stacked(w, name, E, H, moe->gate, I, NULL, 0)) != 0) return rc;
        snprintf(name, sizeof(name), "%s.experts.up_proj", pre);
        if ((rc = walk_stacked(w, name, E, H, moe->up, I, NULL, 0)) != 0) return rc;
        snprintf(name, sizeof(name), "%s.experts.down_proj", pre);
        return walk_stacked(w, name, E, I, moe->down, H, NULL, 0);
    }
    if (m->experts_stacked) {
        snprintf(name, sizeof(name), "%s.experts.gate_up_proj", pre);
        if ((rc = walk_stacked(w, name, E, H, moe->gate, I, moe->up, I)) != 0) return rc;
        snprintf(name, sizeof(name), "%s.experts.down_proj", pre);
        return walk_stacked(w, name, E, I, moe->down, H, NULL, 0);
    }
    for (e = 0; e < E; e++) {
        const char *g = m->moe_legacy_names ? "w1" : "gate_proj", *u = m->moe_legacy_names ? "w3" : "up_proj";
        const char *d = m->moe_legacy_names ? "w2" : "down_proj";
        snprintf(name, sizeof(name), "%s.experts.%d.%s.weight", pre, e, g);
        if ((rc = walk_mat(w, name, I, H, &moe->gate[e])) != 0) return rc;
        snprintf(name, sizeof(name), "%s.experts.%d.%s.weight", pre, e, u);
        if ((rc = walk_mat(w, name, I, H, &moe->up[e])) != 0) return rc;
        snprintf(name, sizeof(name), "%s.experts.%d.%s.weight", pre, e, d);
        if ((rc = walk_mat(w, name, H, I, &moe->down[e])) != 0) return rc;
    }
    return 0;
}

/*
 * An LFM2 layer: operator_norm, then a gated short convolution (conv.*) or
 * attention with per-head q/k layernorms (self_attn.*, out_proj), then
 * ffn_norm and a SwiGLU MLP named w1 (gate), w3 (up), w2 (down).
 */
static int
walk_lfm2_layer(tensor_walk *w, const llm_model *m, llm_layer *L)
{
    const llm_model_info *in = &m->info;
    int H = in->hidden, I = in->intermediate, hd = in->head_dim, K = m->conv_kernel, rc;
    int q = in->n_heads * hd, kv = in->n_kv_heads * hd;

    if ((rc = walk_vec(w, "operator_norm.weight", H, 1, &L->attn_norm)) != 0) return rc;
    if (L->conv) {
        /* conv.conv.weight is [hidden][1][kernel]: read as hidden x kernel values */
        if ((rc = walk_mat(w, "conv.in_proj.weight", 3 * H, H, &L->conv_in)) != 0
            || (rc = walk_vec(w, "conv.conv.weight", H * K, 0, &L->conv_w)) != 0
            || (rc = walk_mat(w, "conv.out_proj.weight", H, H, &L->conv_out)) != 0) return rc;
        if (m->conv_bias
            && ((rc = walk_vec(w, "conv.in_proj.bias", 3 * H, 0, &L->conv_in_b)) != 0
                || (rc = walk_vec(w, "conv.conv.bias", H, 0, &L->conv_b)) != 0
                || (rc = walk_vec(w, "conv.out_proj.bias", H, 0, &L->conv_out_b)) != 0)) return rc;
    } else if ((rc = walk_mat(w, "self_attn.q_proj.weight", q, H, &L->wq)) != 0
               || (rc = walk_mat(w, "self_attn.k_proj.weight", kv, H, &L->wk)) != 0
               || (rc = walk_mat(w, "self_attn.v_proj.weight", kv, H, &L->wv)) != 0
               || (rc = walk_vec(w, "self_attn.q_layernorm.weight", hd, 1, &L->q_norm)) != 0
               || (rc = walk_vec(w, "self_attn.k_layernorm.weight", hd, 1, &L->k_norm)) != 0
               || (rc = walk_mat(w, "self_attn.out_proj.weight", H, q, &L->wo)) != 0) {
        return rc;
    }
    if ((rc = walk_vec(w, "ffn_norm.weight", H, 1, &L->ffn_norm)) != 0
        || (rc = walk_mat(w, "feed_forward.w1.weight", I, H, &L->w_gate)) != 0
        || (rc = walk_mat(w, "feed_forward.w3.weight", I, H, &L->w_up)) != 0) return rc;
    return walk_mat(w, "feed_forward.w2.weight", H, I, &L->w_down);
}

/*
 * A Gated DeltaNet block (linear_attn.*): the input projections (Qwen3-Next's
 * two interleaved ones or Qwen3.5's four), the convolution weight
 * [conv_dim][1][kernel], per value head A_log and dt_bias, the gated norm
 * over a value head, the output projection.
 */
static int
walk_deltanet(tensor_walk *w, const llm_model *m, llm_layer *L)
{
    int H = m->info.hidden, kd = m->dn_k_heads * m->dn_k_dim, vd = m->dn_v_heads * m->dn_v_dim;
    int nv = m->dn_v_heads, conv = 2 * kd + vd, rc;

    if (m->family == LLM_FAM_QWEN3NEXT) {
        if ((rc = walk_mat(w, "linear_attn.in_proj_qkvz.weight", conv + vd, H, &L->dn_qkv)) != 0
            || (rc = walk_mat(w, "linear_attn.in_proj_ba.weight", 2 * nv, H, &L->dn_b)) != 0) return rc;
    } else if ((rc = walk_mat(w, "linear_attn.in_proj_qkv.weight", conv, H, &L->dn_qkv)) != 0
               || (rc = walk_mat(w, "linear_attn.in_proj_z.weight", vd, H, &L->dn_z)) != 0
               || (rc = walk_mat(w, "linear_attn.in_proj_b.weight", nv, H, &L->dn_b)) != 0
               || (rc = walk_mat(w, "linear_attn.in_proj_a.weight", nv, H, &L->dn_a)) != 0) {
        return rc;
    }
    if ((rc = walk_vec(w, "linear_attn.conv1d.weight", conv * m->dn_kernel, 0, &L->dn_conv_w)) != 0
        || (rc = walk_vec(w, "linear_attn.A_log", nv, 0, &L->dn_a_log)) != 0
        || (rc = walk_vec(w, "linear_attn.dt_bias", nv, 0, &L->dn_dt_bias)) != 0
        || (rc = walk_vec(w, "linear_attn.norm.weight", m->dn_v_dim, 0, &L->dn_norm)) != 0) return rc;
    return walk_mat(w, "linear_attn.out_proj.weight", H, vd, &L->dn_out);
}

/*
 * A multi-head latent attention block's tensors (DeepSeek-V3 self_attn.*):
 * the query through its LoRA (q_a_proj, q_a_layernorm, q_b_proj) or q_proj,
 * the latent and the rope key (kv_a_proj_with_mqa), the latent's norm, the
 * latent's per-head up-projection to keys and values (kv_b_proj), o_proj.
 */
static int
walk_mla(tensor_walk *w, const llm_model *m, llm_layer *L)
{
    int H = m->info.hidden, nh = m->info.n_heads, qk = m->mla_nope + m->mla_rope, r = m->mla_q_rank, rc;
    int kv = m->mla_kv_rank + m->mla_rope;

    if (r > 0) {
        if ((rc = walk_mat(w, "self_attn.q_a_proj.weight", r, H, &L->wq_a)) != 0
            || (m->qkv_bias && (rc = walk_vec(w, "self_attn.q_a_proj.bias", r, 0, &L->bq_a)) != 0)
            || (rc = walk_vec(w, "self_attn.q_a_layernorm.weight", r, 1, &L->q_a_norm)) != 0
            || (rc = walk_mat(w, "self_attn.q_b_proj.weight", nh * qk, r, &L->wq)) != 0) return rc;
    } else if ((rc = walk_mat(w, "self_attn.q_proj.weight", nh * qk, H, &L->wq)) != 0) {
        return rc;
    }
    if ((rc = walk_mat(w, "self_attn.kv_a_proj_with_mqa.weight", kv, H, &L->wk)) != 0
        || (m->qkv_bias && (rc = walk_vec(w, "self_attn.kv_a_proj_with_mqa.bias", kv, 0, &L->bk)) != 0)
        || (rc = walk_vec(w, "self_attn.kv_a_layernorm.weight", m->mla_kv_rank, 1, &L->kv_a_norm)) != 0
        || (rc = walk_mat(w, "self_attn.kv_b_proj.weight", nh * (m->mla_nope + m->mla_v), m->mla_kv_rank,
                          &L->kv_b)) != 0
        || (rc = walk_mat(w, "self_attn.o_proj.weight", H, nh * m->mla_v, &L->wo)) != 0) return rc;
    if (m->o_bias && (rc = walk_vec(w, "self_attn.o_proj.bias", H, 0, &L->bo)) != 0) return rc;
    return 0;
}

/* an attention block's tensors (self_attn.*) */
static int
walk_attention(tensor_walk *w, const llm_model *m, llm_layer *L)
{
    const llm_model_info *in = &m->info;
    int H = in->hidden, hd = in->head_dim, q = in->n_heads * hd, kv = in->n_kv_heads * hd, rc;
    int qn = m->qk_norm == LLM_QK_NORM_ALL ? q : hd, kn = m->qk_norm == LLM_QK_NORM_ALL ? kv : hd;

    if (m->family == LLM_FAM_PHI3) {
        rc = walk_fused(w, "self_attn.qkv_proj.weight", H, 3, &L->wq, q, &L->wk, kv, &L->wv, kv);
    } else if ((rc = walk_mat(w, "self_attn.q_proj.weight", m->attn_gate ? 2 * q : q, H, &L->wq)) == 0
               && (rc = walk_mat(w, "self_attn.k_proj.weight", kv, H, &L->wk)) == 0) {
        rc = walk_mat(w, "self_attn.v_proj.weight", kv, H, &L->wv);
    }
    if (rc != 0) return rc;
    if (m->qkv_bias
        && ((rc = walk_vec(w, "self_attn.q_proj.bias", q, 0, &L->bq)) != 0
            || (rc = walk_vec(w, "self_attn.k_proj.bias", kv, 0, &L->bk)) != 0
            || (rc = walk_vec(w, "self_attn.v_proj.bias", kv, 0, &L->bv)) != 0)) return rc;
    if (m->qk_norm != LLM_QK_NORM_NONE
        && ((rc = walk_vec(w, "self_attn.q_norm.weight", qn, 1, &L->q_norm)) != 0
            || (rc = walk_vec(w, "self_attn.k_norm.weight", kn, 1, &L->k_norm)) != 0)) return rc;
    if (m->family == LLM_FAM_GPTOSS
        && (rc = walk_vec(w, "self_attn.sinks", in->n_heads, 0, &L->sinks)) != 0) return rc;
    if ((rc = walk_mat(w, "self_attn.o_proj.weight", H, q, &L->wo)) != 0) return rc;
    if (m->o_bias && (rc = walk_vec(w, "self_attn.o_proj.bias", H, 0, &L->bo)) != 0) return rc;
    return 0;
}

int
llm_model_tensors(llm_model *m, int (*fn)(void *ctx, const llm_tensor_spec *t), void *ctx)
{
    const llm_model_info *in = &m->info;
    int H = in->hidden, I = in->intermediate, l, rc;
    llm_family f = m->family;
    tensor_walk w = { m, fn, ctx, -1 };

    if ((rc = walk_mat(&w, "model.embed_tokens.weight", in->n_vocab, H, &m->embed)) != 0) return rc;
    for (l = 0; l < in->n_layers; l++) {
        llm_layer *L = &m->layers[l];
        w.layer = l;
        if (f == LLM_FAM_LFM2) {
            if ((rc = walk_lfm2_layer(&w, m, L)) != 0) return rc;
            continue;
        }
        /* norms before the blocks: all but OLMo 2, which has post-norms only */
        if (f != LLM_FAM_OLMO2
            && (rc = walk_vec(&w, "input_layernorm.weight", H, 1, &L->attn_norm)) != 0) return rc;
        if ((rc = L->dn ? walk_deltanet(&w, m, L) : m->mla_kv_rank ? walk_mla(&w, m, L)
                  : walk_attention(&w, m, L)) != 0) return rc;
        switch (f) {
        case LLM_FAM_GEMMA2:
        case LLM_FAM_GEMMA3:
            if ((rc = walk_vec(&w, "post_attention_layernorm.weight", H, 1, &L->attn_post_norm)) != 0
                || (rc = walk_vec(&w, "pre_feedforward_layernorm.weight", H, 1, &L->ffn_norm)) != 0
                || (rc = walk_vec(&w, "post_feedforward_layernorm.weight", H, 1, &L->ffn_post_norm)) != 0) return rc;
            break;
        case LLM_FAM_GLM4:
            if ((rc = walk_vec(&w, "post_self_attn_layernorm.weight", H, 1, &L->attn_post_norm)) != 0
                || (rc = walk_vec(&w, "post_attention_layernorm.weight", H, 1, &L->ffn_norm)) != 0
                || (rc = walk_vec(&w, "post_mlp_layernorm.weight", H, 1, &L->ffn_post_norm)) != 0) return rc;
            break;
        case LLM_FAM_OLMO2:
            if ((rc = walk_vec(&w, "post_attention_layernorm.weight", H, 1, &L->attn_post_norm)) != 0
                || (rc = walk_vec(&w, "post_feedforward_layernorm.weight", H, 1, &L->ffn_post_norm)) != 0) return rc;
            break;
        default:
            if ((rc = walk_vec(&w, "post_attention_layernorm.weight", H, 1, &L->ffn_norm)) != 0) return rc;
            break;
        }
        if (L->moe) {
            if ((rc = walk_moe(&w, m, L->moe)) != 0) return rc;
            continue;
        }
        if (f == LLM_FAM_PHI3 || f == LLM_FAM_GLM4) {
            /* gate rows first, then up rows */
            rc = walk_fused(&w, "mlp.gate_up_proj.weight", H, 2, &L->w_gate, I, &L->w_up, I, NULL, 0);
        } else if ((rc = walk_mat(&w, "mlp.gate_proj.weight", I, H, &L->w_gate)) == 0) {
            rc = walk_mat(&w, "mlp.up_proj.weight", I, H, &L->w_up);
        }
        if (rc != 0 || (rc = walk_mat(&w, "mlp.down_proj.weight", H, I, &L->w_down)) != 0) return rc;
    }
    w.layer = -1;
    if ((rc = walk_vec(&w, f == LLM_FAM_LFM2 ? "model.embedding_norm.weight" : "model.norm.weight", H, 1,
                       &m->final_norm)) != 0) return rc;
    if (!in->tie_word_embeddings && (rc = walk_mat(&w, "lm_head.weight", in->n_vocab, H, &m->lm_head)) != 0) {
        return rc;
    }
    return 0;
}

/* ---- binding the tensors of the files ---- */

typedef struct {
    llm_model *m;
    char      *err;
    size_t     errlen;
} bind_ctx;

/*
 * Bind one tensor: matrices are used in place (a fused tensor as row ranges,
 * one per part); vectors are widened to f32 copies, norm weights of
 * families that store w - 1 with 1 added.
 */
static int
bind_tensor(void *ctx, const llm_tensor_spec *s)
{
    bind_ctx *b = ctx;
    llm_model *m = b->m;
    const llm_st_tensor *t = find_tensor(m, s->name);
    int i;

    if (t == NULL) {
        snprintf(b->err, b->errlen, "tensor \"%s\" is missing", s->name);
        return -1;
    }
    if (t->type < 0 && strcmp(t->dtype, "U32") == 0) {
        snprintf(b->err, b->errlen, "tensor \"%s\" has type U32: an MLX quantized weight needs config.json "
                 "\"quantization\" {\"bits\", \"group_size\"}", s->name);
        return -1;
    }
    if (t->type < 0) {
        snprintf(b->err, b->errlen, "tensor \"%s\" has type %s, which is not supported (F32, F16, BF16, Q8_0, "
                 "Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4)", s->name, t->dtype);
        return -1;
    }
    if (s->cols == 0) {
        float *v;
        /* a vector, GGUF's [E][n] expert biases (gpt-oss) read as one vector of E * n, or LFM2's
         * [hidden][1][kernel] convolution weights as one of hidden * kernel */
        long long count = 1;
        int dim;
        for (dim = 0; dim < t->ndim; dim++) count *= t->shape[dim];
        if (t->ndim < 1 || t->ndim > 3 || count != s->rows) {
            snprintf(b->err, b->errlen, "tensor \"%s\" has shape [%lld] (%d dims), config says [%d]",
                     s->name, (long long) (t->ndim ? t->shape[0] : 0), t->ndim, s->rows);
            return -1;
        }
        v = malloc((size_t) s->rows * sizeof(float));
        if (v == NULL || llm_model_own(m, v) != 0) {
            free(v);
            snprintf(b->err, b->errlen, "out of memory");
            return -1;
        }
        llm_kernels_scalar()->to_f32(v, t->data, (llm_wtype) t->type, s->rows);
        if (s->is_norm && m->norm_plus_one) {
            for (i = 0; i < s->rows; i++) v[i] = 1.0f + v[i];
        }
        *s->vec = v;
    } else {
        size_t row_bytes = llm_wtype_row_bytes((llm_wtype) t->type, s->cols);
        int r0 = 0, slices = s->n_stack > 0 ? s->n_stack : 1, k;
        if (s->n_stack > 0
            ? t->ndim != 3 || t->shape[0] != s->n_stack || t->shape[1] != s->rows || t->shape[2] != s->cols
            : t->ndim != 2 || t->shape[0] != s->rows || t->shape[1] != s->cols)
        {
            if (s->n_stack > 0) {
                snprintf(b->err, b->errlen, "tensor \"%s\" has %d dims, config says [%d, %d, %d]",
                         s->name, t->ndim, s->n_stack, s->rows, s->cols);
            } else {
                snprintf(b->err, b->errlen, "tensor \"%s\" has shape [%lld, %lld] (%d dims), config says [%d, %d]",
                         s->name, (long long) t->shape[0], (long long) (t->ndim > 1 ? t->shape[1] : 0),
                         t->ndim, s->rows, s->cols);
            }
            return -1;
        }
        /* slice k of a stacked tensor starts k * rows rows in */
        for (k = 0; k < slices; k++) {
            for (i = 0; i < s->n_parts; i++) {
                llm_mat *d = s->part[i] + (s->n_stack > 0 ? k : 0);
                d->data = (const char *) t->data + (size_t) r0 * row_bytes;
                d->type = (llm_wtype) t->type;
                d->rows = s->part_rows[i];
                d->cols = s->cols;
                r0 += s->part_rows[i];
            }
        }
    }
    return 0;
}

/*
 * How the checkpoint names its experts: Mixtral's block_sparse_moe or mlp,
 * one tensor per expert or stacked.  The first sparse layer decides.
 */
static void
probe_experts(llm_model *m)
{
    char name[128];
    int l;

    for (l = 0; l < m->info.n_layers && m->layers[l].moe == NULL; l++) { }
    if (l == m->info.n_layers) return;
    if (m->family == LLM_FAM_GPTOSS) {
        m->experts_stacked = 2;     /* llm_gptoss_unpack's layout, whatever the checkpoint's */
        return;
    }
    snprintf(name, sizeof(name), "%slayers.%d.block_sparse_moe.gate.weight", m->prefix, l);
    m->moe_legacy_names = find_tensor(m, name) != NULL;
    snprintf(name, sizeof(name), "%slayers.%d.%s.experts.gate_up_proj", m->prefix, l,
             m->moe_legacy_names ? "block_sparse_moe" : "mlp");
    m->experts_stacked = find_tensor(m, name) != NULL;
    if (!m->experts_stacked) {
        snprintf(name, sizeof(name), "%slayers.%d.mlp.experts.gate_proj", m->prefix, l);
        m->experts_stacked = find_tensor(m, name) != NULL ? 2 : 0;
    }
}

/*
 * Where a multimodal checkpoint keeps its text model: transformers 5 saves
 * model.language_model.*, the published Gemma 3 checkpoints have
 * language_model.model.* (and language_model.lm_head).  The vision tower's
 * tensors are left unread.
 */
static void
probe_prefix(llm_model *m)
{
    static const struct { const char *prefix, *head; } layouts[] = {
        { "model.language_model.", "" }, { "language_model.model.", "language_model." },
    };
    char name[128];
    size_t i;

    for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        snprintf(name, sizeof(name), "%sembed_tokens.weight", layouts[i].prefix);
        if (find_tensor(m, name) != NULL) {
            snprintf(m->prefix, sizeof(m->prefix), "%s", layouts[i].prefix);
            snprintf(m->head_prefix, sizeof(m->head_prefix), "%s", layouts[i].head);
            return;
        }
    }
}

static int
bind_all(llm_model *m, char *err, size_t errlen)
{
    bind_ctx b = { m, err, errlen };

    probe_prefix(m);
    probe_experts(m);
    if (llm_model_tensors(m, bind_tensor, &b) != 0) return -1;
    if (m->info.tie_word_embeddings) m->lm_head = m->embed;
    return 0;
}

typedef struct {
    uint64_t per_type[LLM_WT_COUNT];     /* matrix parameters by type */
    uint64_t bytes, vec;
} count_ctx;

static int
count_tensor(void *ctx, const llm_tensor_spec *s)
{
    count_ctx *c = ctx;
    int i, k;

    if (s->cols == 0) {
        if (*s->vec) c->vec += (uint64_t) s->rows;
        return 0;
    }
    for (k = 0; k < (s->n_stack > 0 ? s->n_stack : 1); k++) {
        for (i = 0; i < s->n_parts; i++) {
            const llm_mat *w = s->part[i] + k;
            c->per_type[w->type] += (uint64_t) w->rows * w->cols;
            c->bytes += llm_wtype_row_bytes(w->type, w->cols) * (uint64_t) w->rows;
        }
    }
    return 0;
}

/* parameters and bytes of the weights as held (after any quantization); dtype: the type of most */
static void
count_weights(llm_model *m)
{
    llm_model_info *in = &m->info;
    count_ctx c;
    int t, best = 0, kinds = 0;

    memset(&c, 0, sizeof(c));
    llm_model_tensors(m, count_tensor, &c);
    in->n_params = c.vec;
    for (t = 0; t < LLM_WT_COUNT; t++) {
        in->n_params += c.per_type[t];
        if (c.per_type[t]) kinds++;
        if (c.per_type[t] > c.per_type[best]) best = t;
    }
    in->weight_bytes = c.bytes + c.vec * sizeof(float);
    in->active_bytes = in->weight_bytes;
    if (!in->tie_word_embeddings) {
        in->active_bytes -= llm_wtype_row_bytes(m->embed.type, m->embed.cols) * (uint64_t) (m->embed.rows - 1);
    }
    for (t = 0; t < in->n_layers; t++) {
        const llm_moe *moe = m->layers[t].moe;
        uint64_t experts = 0;
        int e;
        for (e = 0; moe && e < m->n_experts; e++) {
            const llm_mat *w[3] = { &moe->gate[e], &moe->up[e], &moe->down[e] };
            int j;
            for (j = 0; j < 3; j++) experts += llm_wtype_row_bytes(w[j]->type, w[j]->cols) * (uint64_t) w[j]->rows;
        }
        in->active_bytes -= experts / (uint64_t) (moe ? m->n_experts : 1) * (uint64_t) (m->n_experts - m->top_k);
    }
    snprintf(m->dtype, sizeof(m->dtype), "%s%s", llm_wtype_name((llm_wtype) best), kinds > 1 ? " mix" : "");
    in->dtype = m->dtype;
}

/* hidden_act / hidden_activation: the gated MLP's activation */
static int
parse_act(llm_model *m, json_t *cfg, char *err, size_t errlen)
{
    json_t *v = NULL;
    const char *a, *key = "hidden_activation";

    /* Gemma's modeling code reads hidden_activation; the others hidden_act */
    if (m->family == LLM_FAM_GEMMA2 || m->family == LLM_FAM_GEMMA3) v = json_object_get(cfg, "hidden_activation");
    if (!json_is_string(v)) {
        v = json_object_get(cfg, "hidden_act");
        key = "hidden_act";
    }
    if (m->family == LLM_FAM_GPTOSS) {
        /* its experts' activation is fixed in the modeling code (alpha 1.702); the limit is
         * swiglu_limit in the published configs (transformers keeps 7 whatever they say) */
        double limit;
        if (jnum(cfg, "swiglu_limit", 7.0, &limit, err, errlen) != 0) return -1;
        if (!(limit > 0) || !isfinite(limit)) {
            snprintf(err, errlen, "config.json: swiglu_limit must be positive");
            return -1;
        }
        m->act = LLM_ACT_SWIGLU_LIMIT;
        m->swiglu_limit = (float) limit;
        m->swiglu_alpha = 1.702f;
        return 0;
    }
    if (!json_is_string(v)) {
        m->act = m->family == LLM_FAM_GEMMA2 || m->family == LLM_FAM_GEMMA3 ? LLM_ACT_GELU_TANH : LLM_ACT_SILU;
        return 0;
    }
    a = json_string_value(v);
    if (strcmp(a, "silu") == 0 || strcmp(a, "swish") == 0) {
        m->act = LLM_ACT_SILU;
    } else if (strcmp(a, "gelu_pytorch_tanh") == 0 || strcmp(a, "gelu_new") == 0) {
        m->act = LLM_ACT_GELU_TANH;
    } else {
        snprintf(err, errlen, "config.json: %s \"%s\" is not supported (silu, gelu_pytorch_tanh)", key, a);
        return -1;
    }
    return 0;
}

/* partial_rotary_factor, at the top level or (transformers 5) inside rope_parameters */
static int
parse_rot_dim(llm_model *m, json_t *cfg, double def, char *err, size_t errlen)
{
    json_t *rp = json_object_get(cfg, "rope_parameters");
    double f;

    if (jnum(cfg, "partial_rotary_factor", def, &f, err, errlen) != 0) return -1;
    if (json_is_object(rp) && json_is_number(json_object_get(rp, "partial_rotary_factor"))) {
        f = json_number_value(json_object_get(rp, "partial_rotary_factor"));
    }
    if (!(f > 0 && f <= 1)) {
        snprintf(err, errlen, "config.json: partial_rotary_factor must be in (0, 1]");
        return -1;
    }
    m->rot_dim = (int) (m->info.head_dim * f);     /* int() as transformers truncates */
    if (m->rot_dim < 2 || m->rot_dim % 2 != 0) {
        snprintf(err, errlen, "config.json: partial_rotary_factor %g gives %d rotary dims of %d (an even number >= 2 needed)",
                 f, m->rot_dim, m->info.head_dim);
        return -1;
    }
    return 0;
}

/*
 * Per layer: sliding window and RoPE table.  "layer_types" when the config
 * has it (transformers 5 writes it); otherwise each family's own rule.
 */
static int
parse_layers(llm_model *m, json_t *cfg, const llm_arch_defaults *d, char *err, size_t errlen)
{
    llm_model_info *in = &m->info;
    json_t *types = json_object_get(cfg, "layer_types"), *v = json_object_get(cfg, "sliding_window");
    json_t *nope = json_object_get(cfg, "no_rope_layers");
    int window = 0, l, pattern = 6, nope_every = 4, any_sliding = 0, interval = 4;

    if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < INT_MAX) {
        window = (int) json_integer_value(v);
    } else if (v == NULL) {
        window = d->sliding;
    }
    m->layers = calloc((size_t) in->n_layers, sizeof(*m->layers));
    if (m->layers == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (types != NULL && !json_is_null(types)
        && (!json_is_array(types) || (int) json_array_size(types) != in->n_layers))
    {
        snprintf(err, errlen, "config.json: \"layer_types\" must list one type per layer (%d)", in->n_layers);
        return -1;
    }
    if (nope != NULL && !json_is_null(nope)
        && (!json_is_array(nope) || (int) json_array_size(nope) < in->n_layers))
    {
        snprintf(err, errlen, "config.json: \"no_rope_layers\" must have an entry per layer (%d)", in->n_layers);
        return -1;
    }
    if (jint(cfg, "sliding_window_pattern", 6, &pattern, err, errlen) != 0
        || jint(cfg, "no_rope_layer_interval", 4, &nope_every, err, errlen) != 0
        || jint(cfg, "full_attention_interval", 4, &interval, err, errlen) != 0)
    {
        return -1;
    }
    if (pattern <= 0 || nope_every <= 0 || interval <= 0) {
        snprintf(err, errlen, "config.json: sliding_window_pattern, no_rope_layer_interval and "
                 "full_attention_interval must be positive");
        return -1;
    }
    for (l = 0; l < in->n_layers; l++) {
        llm_layer *L = &m->layers[l];
        int sliding;

        L->rope = 0;
        if (m->family == LLM_FAM_SMOLLM3) {
            /* no_rope_layers[l] == 1: the layer uses RoPE */
            int has_rope = json_is_array(nope) ? json_is_true(json_array_get(nope, (size_t) l))
                           || json_integer_value(json_array_get(nope, (size_t) l)) != 0
                         : (l + 1) % nope_every != 0;
            if (!has_rope) L->rope = -1;
        }
        if (json_is_array(types) && m->family == LLM_FAM_LFM2) {
            const char *t = json_string_value(json_array_get(types, (size_t) l));
            if (t == NULL || (strcmp(t, "conv") != 0 && strcmp(t, "full_attention") != 0)) {
                snprintf(err, errlen, "config.json: layer_types[%d] is not \"full_attention\" or \"conv\"", l);
                return -1;
            }
            L->conv = strcmp(t, "conv") == 0;
            sliding = 0;
        } else if (m->family == LLM_FAM_LFM2) {
            /* older configs: full_attn_idxs lists the attention layers (none listed: all are) */
            json_t *idx = json_object_get(cfg, "full_attn_idxs");
            size_t k;
            L->conv = json_is_array(idx);
            for (k = 0; L->conv && k < json_array_size(idx); k++) {
                if (json_integer_value(json_array_get(idx, k)) == l) L->conv = 0;
            }
            sliding = 0;
        } else if (m->dn_kernel > 0) {
            /* Qwen3-Next / Qwen3.5: layer_types "linear_attention" (Gated DeltaNet) or
             * "full_attention"; without them every full_attention_interval-th layer attends */
            const char *t = json_string_value(json_array_get(types, (size_t) l));
            if (json_is_array(types)
                && (t == NULL || (strcmp(t, "linear_attention") != 0 && strcmp(t, "full_attention") != 0)))
            {
                snprintf(err, errlen, "config.json: layer_types[%d] is not \"full_attention\" or \"linear_attention\"", l);
                return -1;
            }
            L->dn = json_is_array(types) ? strcmp(t, "linear_attention") == 0 : (l + 1) % interval != 0;
            sliding = 0;
        } else if (json_is_array(types)) {
            const char *t = json_string_value(json_array_get(types, (size_t) l));
            if (t == NULL || (strcmp(t, "sliding_attention") != 0 && strcmp(t, "full_attention") != 0)) {
                snprintf(err, errlen, "config.json: layer_types[%d] is not \"full_attention\" or \"sliding_attention\"", l);
                return -1;
            }
            sliding = strcmp(t, "sliding_attention") == 0;
        } else {
            switch (m->family) {
            case LLM_FAM_GEMMA2:
            case LLM_FAM_GPTOSS:  sliding = (l + 1) % 2 != 0; break;
            case LLM_FAM_GEMMA3:  sliding = (l + 1) % pattern != 0; break;
            case LLM_FAM_QWEN2:
            case LLM_FAM_QWEN3:
            case LLM_FAM_QWEN3MOE: sliding = jbool(cfg, "use_sliding_window", 0); break;
            case LLM_FAM_SMOLLM3: sliding = jbool(cfg, "use_sliding_window", 0) && L->rope < 0; break;
            default:              sliding = 1; break;
            }
        }
        L->window = sliding ? window : 0;
        if (sliding && m->n_rope > 1 && L->rope >= 0) L->rope = 1;
        if (L->window > 0) any_sliding = 1;
    }
    in->sliding_window = any_sliding ? window : 0;
    /* KV blocks hold the attention layers only; recurrent layers keep a state per sequence */
    m->n_kv_layers = 0;
    m->state_floats = 0;
    for (l = 0; l < in->n_layers; l++) {
        llm_layer *L = &m->layers[l];
        L->kv = L->conv || L->dn ? -1 : m->n_kv_layers++;
        if (L->conv || L->dn) {
            L->rope = -1;
            L->state_off = m->state_floats;
        }
        if (L->conv) m->state_floats += (size_t) (m->conv_kernel - 1) * in->hidden;
        if (L->dn) m->state_floats += llm_deltanet_state_floats(m);
    }
    in->state_bytes = m->state_floats * sizeof(float);
    if (m->n_kv_layers == 0) {
        snprintf(err, errlen, "config.json: no attention layer (layer_types)");
        return -1;
    }
    return 0;
}

/*
 * Sparse MLP layers (Qwen3-MoE, Mixtral): the experts' shape and which
 * layers have them.  A layer is sparse unless listed in mlp_only_layers, and
 * then only every decoder_sparse_step-th layer (transformers' rule).
 */
static int
parse_moe(llm_model *m, json_t *cfg, char *err, size_t errlen)
{
    llm_model_info *in = &m->info;
    const llm_moe_defaults *d = NULL;
    json_t *only = json_object_get(cfg, "mlp_only_layers");
    int step, l, experts_key_def, first_dense = 0;
    size_t i;

    for (i = 0; i < sizeof(moe_table) / sizeof(moe_table[0]); i++) {
        if (moe_table[i].family == m->family) d = &moe_table[i];
    }
    if (d == NULL) return 0;
    /* Qwen3-MoE's config names it num_experts, Mixtral's num_local_experts (each aliases the other) */
    experts_key_def = d->experts;
    if (jint(cfg, "num_local_experts", experts_key_def, &experts_key_def, err, errlen) != 0
        || jint(cfg, "n_routed_experts", experts_key_def, &experts_key_def, err, errlen) != 0
        || jint(cfg, "num_experts", experts_key_def, &m->n_experts, err, errlen) != 0
        || jint(cfg, "num_experts_per_tok", d->top_k, &m->top_k, err, errlen) != 0
        || jint(cfg, "moe_intermediate_size", d->moe_intermediate > 0 ? d->moe_intermediate : in->intermediate,
                &m->moe_intermediate, err, errlen) != 0
        || jint(cfg, "decoder_sparse_step", 1, &step, err, errlen) != 0)
    {
        return -1;
    }
    /* Mixtral's and Qwen3.5-MoE's routers renormalize whatever the config says */
    m->norm_topk = m->family == LLM_FAM_MIXTRAL || m->family == LLM_FAM_QWEN35MOE
                   || jbool(cfg, "norm_topk_prob", d->norm_topk);
    m->moe_sigmoid = d->sigmoid;
    m->routed_scale = 1.0f;
    m->n_group = m->topk_group = 1;
    if (d->sigmoid) {
        int shared;
        double scale;
        if (jint(cfg, "n_group", 1, &m->n_group, err, errlen) != 0
            || jint(cfg, "topk_group", 1, &m->topk_group, err, errlen) != 0
            || jint(cfg, "n_shared_experts", 1, &shared, err, errlen) != 0
            || jint(cfg, "first_k_dense_replace", 1, &first_dense, err, errlen) != 0
            || jnum(cfg, "routed_scaling_factor", 1.0, &scale, err, errlen) != 0)
        {
            return -1;
        }
        /* groups score by their two best experts, so each group holds at least two */
        if (m->n_group <= 0 || m->n_experts % m->n_group != 0 || m->n_experts / m->n_group < 2
            || m->topk_group <= 0 || m->topk_group > m->n_group || shared < 0 || shared > 64
            || (m->n_experts / m->n_group) * m->topk_group < m->top_k || !(scale > 0) || !isfinite(scale))
        {
            snprintf(err, errlen, "config.json: inconsistent expert groups (%d experts in %d groups, best %d "
                     "groups, %d per token, %d shared, routed_scaling_factor %g)", m->n_experts, m->n_group,
                     m->topk_group, m->top_k, shared, scale);
            return -1;
        }
        m->routed_scale = (float) scale;
        m->shared_intermediate = shared * m->moe_intermediate;
    }
    if (m->family == LLM_FAM_QWEN3NEXT || m->family == LLM_FAM_QWEN35MOE) {
        if (jint(cfg, "shared_expert_intermediate_size", 512, &m->shared_intermediate, err, errlen) != 0) return -1;
        if (m->shared_intermediate < 0 || m->shared_intermediate > (1 << 18)) {
            snprintf(err, errlen, "config.json: shared_expert_intermediate_size %d out of range", m->shared_intermediate);
            return -1;
        }
    }
    if (m->n_experts <= 0 || m->n_experts > 4096 || m->top_k <= 0 || m->top_k > m->n_experts
        || m->top_k > LLM_MOE_MAX_TOPK || m->moe_intermediate <= 0 || m->moe_intermediate > (1 << 18) || step <= 0)
    {
        snprintf(err, errlen, "config.json: inconsistent experts (%d experts, %d per token, %d rows each, "
                 "decoder_sparse_step %d; at most %d per token)", m->n_experts, m->top_k, m->moe_intermediate,
                 step, LLM_MOE_MAX_TOPK);
        return -1;
    }
    if (only != NULL && !json_is_null(only) && !json_is_array(only)) {
        snprintf(err, errlen, "config.json: \"mlp_only_layers\" must be a list of layer indices");
        return -1;
    }
    for (l = 0; l < in->n_layers; l++) {
        llm_layer *L = &m->layers[l];
        /* first_k_dense_replace (sigmoid-routed families): the first layers are dense */
        int dense = (l + 1) % step != 0 || l < first_dense;
        for (i = 0; json_is_array(only) && i < json_array_size(only); i++) {
            if (json_integer_value(json_array_get(only, i)) == l) dense = 1;
        }
        if (dense) continue;
        L->moe = calloc(1, sizeof(*L->moe));
        if (L->moe == NULL || llm_model_own(m, L->moe) != 0) {
            free(L->moe);
            L->moe = NULL;
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        L->moe->gate = calloc((size_t) m->n_experts * 3, sizeof(llm_mat));
        if (L->moe->gate == NULL || llm_model_own(m, L->moe->gate) != 0) {
            free(L->moe->gate);
            L->moe->gate = NULL;
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        L->moe->up = L->moe->gate + m->n_experts;
        L->moe->down = L->moe->up + m->n_experts;
    }
    m->moe_legacy_names = m->family == LLM_FAM_MIXTRAL;
    in->n_experts = m->n_experts;
    in->n_experts_per_token = m->top_k;
    return 0;
}

/*
 * A multimodal config (Gemma3ForConditionalGeneration, Qwen3_5[Moe]ForConditionalGeneration):
 * *cfg becomes its "text_config", with the keys the text model takes from
 * the top level (token ids, tied embeddings) where text_config has none.
 * Only the text model is loaded.
 */
static int
text_config_of(json_t **cfg, char *err, size_t errlen)
{
    static const char *outer[] = { "bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings" };
    json_t *text = json_object_get(*cfg, "text_config"), *copy;
    size_t i;

    if (!json_is_object(text)) {
        snprintf(err, errlen, "config.json: no \"text_config\" object");
        return -1;
    }
    copy = json_deep_copy(text);
    if (copy == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (i = 0; i < sizeof(outer) / sizeof(outer[0]); i++) {
        json_t *v = json_object_get(*cfg, outer[i]);
        if (v != NULL && json_object_get(copy, outer[i]) == NULL) json_object_set(copy, outer[i], v);
    }
    json_object_set(copy, "architectures", json_object_get(*cfg, "architectures"));
    json_decref(*cfg);
    *cfg = copy;
    return 0;
}

/*
 * LFM2's own keys: the MLP width as block_ff_dim, adjusted as transformers'
 * Lfm2MLP does (two thirds, times block_ffn_dim_multiplier, rounded up to
 * block_multiple_of), norm_eps, and the short convolutions' width and biases.
 */
static int
parse_lfm2(llm_model *m, json_t *cfg, char *msg, size_t msglen)
{
    llm_model_info *in = &m->info;
    int I, multiple;
    double mult;

    if (jint(cfg, "block_ff_dim", in->intermediate, &I, msg, msglen) != 0
        || jint(cfg, "block_multiple_of", 256, &multiple, msg, msglen) != 0
        || jnum(cfg, "block_ffn_dim_multiplier", 1.0, &mult, msg, msglen) != 0
        || jnum(cfg, "norm_eps", in->rms_norm_eps, &in->rms_norm_eps, msg, msglen) != 0
        || jint(cfg, "conv_L_cache", 3, &m->conv_kernel, msg, msglen) != 0)
    {
        return -1;
    }
    if (multiple <= 0 || !(mult > 0 && mult < 64) || I <= 0 || I > (1 << 20)
        || m->conv_kernel < 1 || m->conv_kernel > 64)
    {
        snprintf(msg, msglen, "config.json: LFM2 sizes out of range (block_ff_dim %d, block_multiple_of %d, "
                 "block_ffn_dim_multiplier %g, conv_L_cache %d)", I, multiple, mult, m->conv_kernel);
        return -1;
    }
    if (jbool(cfg, "block_auto_adjust_ff_dim", 1)) {
        I = (int) (2.0 * I / 3.0);
        if (!json_is_null(json_object_get(cfg, "block_ffn_dim_multiplier"))) {
            I = (int) (mult * I);
            I = multiple * ((I + multiple - 1) / multiple);
        }
    }
    in->intermediate = I;
    m->conv_bias = jbool(cfg, "conv_bias", 0);
    return 0;
}

/*
 * Qwen3-Next / Qwen3.5: the Gated DeltaNet layers' heads (value heads a
 * multiple of key heads: each key head serves v_heads / k_heads of them) and
 * convolution width, and the gated attention of the others.
 */
static int
parse_deltanet(llm_model *m, json_t *cfg, char *msg, size_t msglen)
{
    if (jint(cfg, "linear_conv_kernel_dim", 4, &m->dn_kernel, msg, msglen) != 0
        || jint(cfg, "linear_key_head_dim", 128, &m->dn_k_dim, msg, msglen) != 0
        || jint(cfg, "linear_value_head_dim", 128, &m->dn_v_dim, msg, msglen) != 0
        || jint(cfg, "linear_num_key_heads", 16, &m->dn_k_heads, msg, msglen) != 0
        || jint(cfg, "linear_num_value_heads", 32, &m->dn_v_heads, msg, msglen) != 0)
    {
        return -1;
    }
    if (m->dn_kernel < 1 || m->dn_kernel > 64 || m->dn_k_dim <= 0 || m->dn_k_dim > 1024 || m->dn_v_dim <= 0
        || m->dn_v_dim > 1024 || m->dn_k_heads <= 0 || m->dn_v_heads <= 0 || m->dn_v_heads > 1024
        || m->dn_v_heads % m->dn_k_heads != 0)
    {
        snprintf(msg, msglen, "config.json: inconsistent linear attention (kernel %d, key heads %d of %d, "
                 "value heads %d of %d; value heads a multiple of key heads)", m->dn_kernel, m->dn_k_heads,
                 m->dn_k_dim, m->dn_v_heads, m->dn_v_dim);
        return -1;
    }
    m->attn_gate = 1;
    return 0;
}

/*
 * DeepSeek-V3's multi-head latent attention: the query and KV LoRA ranks and
 * the heads' parts (q_lora_rank null: q_proj, as DeepSeek-V2-Lite).  The
 * attention runs absorbed (llm_mla.h) as one KV head of kv_lora_rank +
 * qk_rope_head_dim values, which is what info's KV heads and head size say.
 */
static int
parse_mla(llm_model *m, json_t *cfg, char *msg, size_t msglen)
{
    llm_model_info *in = &m->info;
    json_t *q = json_object_get(cfg, "q_lora_rank");

    if (jint(cfg, "q_lora_rank", 1536, &m->mla_q_rank, msg, msglen) != 0
        || jint(cfg, "kv_lora_rank", 512, &m->mla_kv_rank, msg, msglen) != 0
        || jint(cfg, "qk_nope_head_dim", 128, &m->mla_nope, msg, msglen) != 0
        || jint(cfg, "qk_rope_head_dim", 64, &m->mla_rope, msg, msglen) != 0
        || jint(cfg, "v_head_dim", 128, &m->mla_v, msg, msglen) != 0)
    {
        return -1;
    }
    if (q != NULL && json_is_null(q)) m->mla_q_rank = 0;
    if (m->mla_q_rank < 0 || m->mla_q_rank > (1 << 16) || m->mla_kv_rank <= 0 || m->mla_nope <= 0
        || m->mla_rope < 2 || m->mla_rope % 2 != 0 || m->mla_v <= 0 || m->mla_nope > 1024 || m->mla_v > 1024
        || m->mla_kv_rank + m->mla_rope > 1024)
    {
        snprintf(msg, msglen, "config.json: inconsistent latent attention (q_lora_rank %d, kv_lora_rank %d, "
                 "qk_nope_head_dim %d, qk_rope_head_dim %d (even), v_head_dim %d; kv_lora_rank + "
                 "qk_rope_head_dim at most 1024)", m->mla_q_rank, m->mla_kv_rank, m->mla_nope, m->mla_rope,
                 m->mla_v);
        return -1;
    }
    in->n_kv_heads = 1;
    in->head_dim = m->mla_kv_rank + m->mla_rope;
    return 0;
}

int
llm_model_parse_config(llm_model *m, const char *dir, char *msg, size_t msglen)
{
    llm_model_info *in = &m->info;
    json_t *cfg = NULL, *gen = NULL, *archs, *v;
    const llm_arch_defaults *d = NULL;
    const char *arch;
    size_t i;
    int bos, mlp_bias, attention_bias;
    double x;

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
                 "Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM, "
                 "SmolLM3ForCausalLM, Glm4ForCausalLM, GraniteForCausalLM, Olmo2ForCausalLM, "
                 "Gemma3ForConditionalGeneration (text), Qwen3MoeForCausalLM, MixtralForCausalLM, "
                 "Glm4MoeForCausalLM, GptOssForCausalLM, Lfm2ForCausalLM, Qwen3NextForCausalLM, "
                 "Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration (text), Qwen3_5MoeForCausalLM, "
                 "Qwen3_5MoeForConditionalGeneration (text), DeepseekV3ForCausalLM)", arch);
        goto fail;
    }
    if (d->text_config && text_config_of(&cfg, msg, msglen) != 0) goto fail;
    m->family = d->family;
    snprintf(m->prefix, sizeof(m->prefix), "model.");
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
    if (d->family == LLM_FAM_LFM2 && parse_lfm2(m, cfg, msg, msglen) != 0) goto fail;
    if ((d->family == LLM_FAM_QWEN3NEXT || d->family == LLM_FAM_QWEN35 || d->family == LLM_FAM_QWEN35MOE)
        && parse_deltanet(m, cfg, msg, msglen) != 0)
    {
        goto fail;
    }
    if (jint(cfg, "num_key_value_heads", d->kv_heads > 0 ? d->kv_heads : in->n_heads, &in->n_kv_heads, msg, msglen)) goto fail;
    if (in->n_heads <= 0 || in->hidden <= 0) {
        snprintf(msg, msglen, "config.json: hidden_size and num_attention_heads must be positive");
        goto fail;
    }
    if (jint(cfg, "head_dim", d->head_dim > 0 ? d->head_dim : in->hidden / in->n_heads, &in->head_dim, msg, msglen)) goto fail;
    if (d->family == LLM_FAM_DEEPSEEKV3 && parse_mla(m, cfg, msg, msglen) != 0) goto fail;
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
    if (parse_act(m, cfg, msg, msglen) != 0) goto fail;
    mlp_bias = jbool(cfg, "mlp_bias", 0);
    if (mlp_bias) {
        snprintf(msg, msglen, "config.json: mlp_bias is not supported");
        goto fail;
    }
    in->tie_word_embeddings = jbool(cfg, "tie_word_embeddings", d->tie);
    if (d->family == LLM_FAM_LFM2) in->tie_word_embeddings = jbool(cfg, "tie_embedding", in->tie_word_embeddings);

    /* biases: Qwen2 always has q/k/v biases; GLM-4 q/k/v ones when attention_bias
     * (its default); Phi-3 none; the others q/k/v/o when attention_bias */
    attention_bias = jbool(cfg, "attention_bias", d->family == LLM_FAM_GLM4 || d->family == LLM_FAM_GPTOSS);
    switch (d->family) {
    case LLM_FAM_QWEN2: m->qkv_bias = 1; m->o_bias = 0; break;
    case LLM_FAM_GLM4:
    case LLM_FAM_GLM4MOE: m->qkv_bias = attention_bias; m->o_bias = 0; break;
    case LLM_FAM_PHI3:  m->qkv_bias = 0; m->o_bias = 0; break;
    default:            m->qkv_bias = attention_bias; m->o_bias = attention_bias; break;
    }
    m->qk_norm = d->family == LLM_FAM_QWEN3 || d->family == LLM_FAM_GEMMA3 || d->family == LLM_FAM_QWEN3MOE
                 || d->family == LLM_FAM_LFM2 || m->attn_gate
               ? LLM_QK_NORM_HEAD
               : d->family == LLM_FAM_OLMO2 ? LLM_QK_NORM_ALL
               : d->family == LLM_FAM_GLM4MOE && jbool(cfg, "use_qk_norm", 0) ? LLM_QK_NORM_HEAD : LLM_QK_NORM_NONE;
    /* Qwen3-Next / Qwen3.5 too, except the DeltaNet's gated norm (walked as no norm) */
    m->norm_plus_one = d->family == LLM_FAM_GEMMA2 || d->family == LLM_FAM_GEMMA3 || m->attn_gate;
    /* DeepSeek-V3's rope_interleave: the rope dims as pairs, as its checkpoints were trained */
    m->rope_pairs = d->family == LLM_FAM_GLM4 || (d->family == LLM_FAM_DEEPSEEKV3 && jbool(cfg, "rope_interleave", 1));

    /* scales: 1 unless the family has its own */
    m->embed_scale = 1.0f;
    m->attn_scale = (float) pow(in->head_dim, -0.5);
    m->residual_scale = 1.0f;
    m->logit_scale = 1.0f;
    m->attn_softcap = 0;
    m->final_softcap = 0;
    if (d->family == LLM_FAM_GEMMA2 || d->family == LLM_FAM_GEMMA3) {
        int g2 = d->family == LLM_FAM_GEMMA2;
        m->embed_scale = (float) sqrt((double) in->hidden);
        if (jnum(cfg, "query_pre_attn_scalar", 256, &x, msg, msglen) != 0) goto fail;
        if (!(x > 0)) {
            snprintf(msg, msglen, "config.json: query_pre_attn_scalar must be positive");
            goto fail;
        }
        m->attn_scale = (float) pow(x, -0.5);
        /* transformers' Gemma 3 attention takes no soft-capping even when the
         * config names one; its final soft-capping applies to both */
        if ((g2 && jcap(cfg, "attn_logit_softcapping", 50.0, &m->attn_softcap, msg, msglen) != 0)
            || jcap(cfg, "final_logit_softcapping", g2 ? 30.0 : 0, &m->final_softcap, msg, msglen) != 0)
        {
            goto fail;
        }
    } else if (d->family == LLM_FAM_GRANITE) {
        double e, a, r, lg;
        if (jnum(cfg, "embedding_multiplier", 1.0, &e, msg, msglen) != 0
            || jnum(cfg, "attention_multiplier", 1.0, &a, msg, msglen) != 0
            || jnum(cfg, "residual_multiplier", 1.0, &r, msg, msglen) != 0
            || jnum(cfg, "logits_scaling", 1.0, &lg, msg, msglen) != 0)
        {
            goto fail;
        }
        if (!(lg != 0) || !isfinite(e) || !isfinite(a) || !isfinite(r) || !isfinite(lg)) {
            snprintf(msg, msglen, "config.json: granite multipliers must be finite and logits_scaling non-zero");
            goto fail;
        }
        m->embed_scale = (float) e;
        m->attn_scale = (float) a;
        m->residual_scale = (float) r;
        m->logit_scale = (float) (1.0 / lg);
    }

    if (parse_rot_dim(m, cfg, d->family == LLM_FAM_GLM4 || d->family == LLM_FAM_GLM4MOE ? 0.5
                              : m->attn_gate ? 0.25 : 1.0, msg, msglen) != 0)
    {
        goto fail;
    }
    if (m->mla_kv_rank > 0) m->rot_dim = m->mla_rope;       /* the decoupled rope part turns, all of it */
    if (parse_rope(m, cfg, d->theta, d->family == LLM_FAM_GEMMA3, msg, msglen) != 0
        || parse_layers(m, cfg, d, msg, msglen) != 0
        || parse_moe(m, cfg, msg, msglen) != 0)
    {
        goto fail;
    }
    in->rope_theta = m->rope[0].theta;
    if (m->mla_kv_rank > 0) {
        /* the scale of a head's q.k: (nope + rope)^-1/2, times YaRN's mscale(mscale_all_dim)^2 */
        const llm_rope_cfg *r = &m->rope[0];
        double mscale = r->kind == LLM_ROPE_YARN && r->mscale_all_dim != 0 ? yarn_mscale(r->factor, r->mscale_all_dim)
                        : 1.0;
        m->attn_scale = (float) (pow(m->mla_nope + m->mla_rope, -0.5) * mscale * mscale);
    }

    if (jint(cfg, "bos_token_id", -1, &bos, msg, msglen)) goto fail;
    in->bos_id = bos;
    read_eos(json_object_get(cfg, "eos_token_id"), in);

    gen = load_json(dir, "generation_config.json", 0, msg, msglen);
    if (gen == NULL && msg[0]) goto fail;
    if (gen) {
        v = json_object_get(gen, "bos_token_id");
        if (json_is_integer(v)) in->bos_id = (int32_t) json_integer_value(v);
        v = json_object_get(gen, "eos_token_id");
        if (json_is_integer(v) || json_is_array(v)) read_eos(v, in);
        x = 0;
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
    return llm_model_load_opts(dir, NULL, err, errlen);
}

llm_model *
llm_model_load_opts(const char *dir, const llm_model_opts *opts, char *err, size_t errlen)
{
    llm_model *m;
    llm_wtype scheme = LLM_WT_COUNT;
    char msg[512] = "";

    if (errlen) err[0] = '\0';
    if (opts && opts->quant && llm_quant_scheme_parse(opts->quant, &scheme) != 0) {
        snprintf(err, errlen, "quant=%s is not supported (q8_0, q4_0, q4_k, q6_k)", opts->quant);
        return NULL;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (llm_model_parse_config(m, dir, msg, sizeof(msg)) != 0
        || open_files(m, dir, msg, sizeof(msg)) != 0
        || unpack_mlx(m, dir, msg, sizeof(msg)) != 0
        || (m->family == LLM_FAM_GPTOSS && !llm_gguf_is_path(dir)
            && llm_gptoss_unpack(m->files, m->n_files, m->prefix, m->info.n_layers, m->info.hidden,
                                 m->moe_intermediate, m->n_experts, msg, sizeof(msg)) != 0)
        || bind_all(m, msg, sizeof(msg)) != 0
        || (scheme != LLM_WT_COUNT && llm_model_quantize(m, scheme, msg, sizeof(msg)) != 0))
    {
        snprintf(err, errlen, "model %s: %s", dir, msg);
        llm_model_free(m);
        return NULL;
    }
    count_weights(m);
    if (llm_model_repack(m, msg, sizeof(msg)) != 0) {
        snprintf(err, errlen, "model %s: %s", dir, msg);
        llm_model_free(m);
        return NULL;
    }
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
llm_model_files_changed(const llm_model *m, char *err, size_t errlen)
{
    int i;

    for (i = 0; i < m->n_files; i++) {
        if (llm_st_changed(&m->files[i], err, errlen)) return 1;
    }
    return 0;
}

int
llm_model_has_state(const llm_model *m)
{
    return m->state_floats > 0;
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

long
llm_model_find_bad_token(const llm_model *m, const int32_t *ids, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= m->info.n_vocab) return (long) i;
    }
    return -1;
}
