/*
 * GGUF reader: header, key/value metadata and tensor infos of each split,
 * bounds-checked; tensors renamed to the Hugging Face names the loader
 * binds.  The metadata -> JSON documents live in llm_gguf_meta.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/llm_gguf.h"
#include "kernels/cpu/llm_quant.h"

#define GGUF_MAGIC   0x46554747u     /* "GGUF" little-endian */
#define MAX_SPLITS   256
#define MAX_STRING   (64u << 20)

enum {
    T_U8 = 0, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64
};

typedef struct {
    const unsigned char *p, *end;
    const char          *path;
    char                *err;
    size_t               errlen;
} rd;

static int
need(rd *r, size_t n)
{
    if ((size_t) (r->end - r->p) < n) {
        snprintf(r->err, r->errlen, "%s: truncated GGUF header", r->path);
        return -1;
    }
    return 0;
}

static int
u32(rd *r, uint32_t *v)
{
    if (need(r, 4)) return -1;
    memcpy(v, r->p, 4);
    r->p += 4;
    return 0;
}

static int
u64(rd *r, uint64_t *v)
{
    if (need(r, 8)) return -1;
    memcpy(v, r->p, 8);
    r->p += 8;
    return 0;
}

/* a GGUF string: u64 length, bytes (no NUL) */
static int
str(rd *r, const char **s, size_t *n)
{
    uint64_t len;
    if (u64(r, &len)) return -1;
    if (len > MAX_STRING || need(r, (size_t) len)) {
        if (len > MAX_STRING) snprintf(r->err, r->errlen, "%s: string of %llu bytes in the header", r->path,
                                       (unsigned long long) len);
        return -1;
    }
    *s = (const char *) r->p;
    *n = (size_t) len;
    r->p += len;
    return 0;
}

static size_t
scalar_size(uint32_t t)
{
    switch (t) {
    case T_U8: case T_I8: case T_BOOL: return 1;
    case T_U16: case T_I16: return 2;
    case T_U32: case T_I32: case T_F32: return 4;
    case T_U64: case T_I64: case T_F64: return 8;
    default: return 0;
    }
}

static json_t *
scalar(rd *r, uint32_t t)
{
    const unsigned char *p = r->p;
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32;
            uint64_t u64; int64_t i64; double f64; } v;
    size_t n = scalar_size(t);

    if (n == 0 || need(r, n)) return NULL;
    memcpy(&v, p, n);
    r->p += n;
    switch (t) {
    case T_U8:   return json_integer(v.u8);
    case T_I8:   return json_integer(v.i8);
    case T_U16:  return json_integer(v.u16);
    case T_I16:  return json_integer(v.i16);
    case T_U32:  return json_integer(v.u32);
    case T_I32:  return json_integer(v.i32);
    case T_F32:  return json_real(v.f32);
    case T_BOOL: return json_boolean(v.u8 != 0);
    case T_U64:  return json_integer((json_int_t) v.u64);
    case T_I64:  return json_integer(v.i64);
    default:     return json_real(v.f64);
    }
}

static json_t *
value(rd *r, uint32_t t, int depth)
{
    if (t == T_STR) {
        const char *s;
        size_t n;
        if (str(r, &s, &n)) return NULL;
        return json_stringn_nocheck(s, n);
    }
    if (t == T_ARR) {
        uint32_t et;
        uint64_t n, i;
        json_t *a;
        if (depth > 2 || u32(r, &et) || u64(r, &n)) return NULL;
        /* every element takes at least one byte */
        if (n > (uint64_t) (r->end - r->p)) {
            snprintf(r->err, r->errlen, "%s: array of %llu elements in a header of %zu bytes", r->path,
                     (unsigned long long) n, (size_t) (r->end - r->p));
            return NULL;
        }
        a = json_array();
        for (i = 0; a && i < n; i++) {
            json_t *e = value(r, et, depth + 1);
            if (e == NULL || json_array_append_new(a, e) != 0) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    return scalar(r, t);
}

/* Hugging Face name of a GGUF tensor name (arch: general.architecture, may be NULL) */
static int
hf_name(const char *g, const char *arch, char *out, size_t outlen)
{
    /* names that depend on the architecture: the post-norms of OLMo 2, GLM-4
     * and Gemma 2/3 (whose ffn_norm is the pre-MLP one, pre_feedforward_layernorm)
     * (GLM-4's post_attention_layernorm is its pre-MLP norm, llama.cpp's
     * ffn_norm, as Llama's); the fused gate/up matrix of GLM-4 and Phi-3 and
     * Phi-3's fused Q/K/V */
    static const struct { const char *arch, *gguf, *hf; } by_arch[] = {
        { "olmo2", "post_attention_norm.weight", "post_attention_layernorm.weight" },
        { "olmo2", "post_ffw_norm.weight", "post_feedforward_layernorm.weight" },
        { "glm4", "post_attention_norm.weight", "post_self_attn_layernorm.weight" },
        { "glm4", "post_ffw_norm.weight", "post_mlp_layernorm.weight" },
        { "glm4", "ffn_up.weight", "mlp.gate_up_proj.weight" },
        { "phi3", "attn_qkv.weight", "self_attn.qkv_proj.weight" },
        { "phi3", "ffn_up.weight", "mlp.gate_up_proj.weight" },
        { "gemma2", "post_attention_norm.weight", "post_attention_layernorm.weight" },
        { "gemma2", "ffn_norm.weight", "pre_feedforward_layernorm.weight" },
        { "gemma2", "post_ffw_norm.weight", "post_feedforward_layernorm.weight" },
        { "gemma3", "post_attention_norm.weight", "post_attention_layernorm.weight" },
        { "gemma3", "ffn_norm.weight", "pre_feedforward_layernorm.weight" },
        { "gemma3", "post_ffw_norm.weight", "post_feedforward_layernorm.weight" },
        /* gpt-oss: its pre-MLP norm, sinks, the router with a bias, the experts' biases ([E][n],
         * bound as one vector each) */
        { "gpt-oss", "post_attention_norm.weight", "post_attention_layernorm.weight" },
        { "gpt-oss", "attn_sinks.weight", "self_attn.sinks" },
        { "gpt-oss", "ffn_gate_inp.weight", "mlp.router.weight" },
        { "gpt-oss", "ffn_gate_inp.bias", "mlp.router.bias" },
        { "gpt-oss", "ffn_gate_exps.bias", "mlp.experts.gate_bias" },
        { "gpt-oss", "ffn_up_exps.bias", "mlp.experts.up_bias" },
        { "gpt-oss", "ffn_down_exps.bias", "mlp.experts.down_bias" },
    };
    static const struct { const char *gguf, *hf; } glob[] = {
        { "token_embd.weight", "model.embed_tokens.weight" },
        { "output_norm.weight", "model.norm.weight" },
        { "output.weight", "lm_head.weight" },
        { "rope_freqs.weight", "rope_freqs.weight" },
    }, blk[] = {
        { "attn_norm.weight", "input_layernorm.weight" },
        { "attn_q.weight", "self_attn.q_proj.weight" },
        { "attn_k.weight", "self_attn.k_proj.weight" },
        { "attn_v.weight", "self_attn.v_proj.weight" },
        { "attn_q.bias", "self_attn.q_proj.bias" },
        { "attn_k.bias", "self_attn.k_proj.bias" },
        { "attn_v.bias", "self_attn.v_proj.bias" },
        { "attn_output.weight", "self_attn.o_proj.weight" },
        { "attn_output.bias", "self_attn.o_proj.bias" },
        { "attn_q_norm.weight", "self_attn.q_norm.weight" },
        { "attn_k_norm.weight", "self_attn.k_norm.weight" },
        { "ffn_norm.weight", "post_attention_layernorm.weight" },
        { "ffn_gate.weight", "mlp.gate_proj.weight" },
        { "ffn_up.weight", "mlp.up_proj.weight" },
        { "ffn_down.weight", "mlp.down_proj.weight" },
        /* a sparse layer: the router, each expert matrix stacked [E][rows][cols] */
        { "ffn_gate_inp.weight", "mlp.gate.weight" },
        { "ffn_gate_exps.weight", "mlp.experts.gate_proj" },
        { "ffn_up_exps.weight", "mlp.experts.up_proj" },
        { "ffn_down_exps.weight", "mlp.experts.down_proj" },
    };
    size_t i;
    int layer, pos = 0;

    for (i = 0; i < sizeof(glob) / sizeof(glob[0]); i++) {
        if (strcmp(g, glob[i].gguf) == 0) {
            snprintf(out, outlen, "%s", glob[i].hf);
            return 0;
        }
    }
    if (sscanf(g, "blk.%d.%n", &layer, &pos) == 1 && pos > 0 && layer >= 0) {
        for (i = 0; arch && i < sizeof(by_arch) / sizeof(by_arch[0]); i++) {
            if (strcmp(arch, by_arch[i].arch) == 0 && strcmp(g + pos, by_arch[i].gguf) == 0) {
                snprintf(out, outlen, "model.layers.%d.%s", layer, by_arch[i].hf);
                return 0;
            }
        }
        for (i = 0; i < sizeof(blk) / sizeof(blk[0]); i++) {
            if (strcmp(g + pos, blk[i].gguf) == 0) {
                snprintf(out, outlen, "model.layers.%d.%s", layer, blk[i].hf);
                return 0;
            }
        }
    }
    snprintf(out, outlen, "gguf:%s", g);     /* kept under its own name: never bound */
    return 0;
}

static int
open_one(llm_st_file *f, const char *path, json_t *meta, char *err, size_t errlen)
{
    uint32_t magic = 0, version = 0, alignment = 32;
    uint64_t n_tensors, n_kv, i;
    const unsigned char *base, *data;
    rd r;
    json_t *al;

    if (llm_st_map(f, path, 24, "GGUF", err, errlen) != 0) return -1;
    base = f->map;
    r.p = base;
    r.end = base + f->size;
    r.path = path;
    r.err = err;
    r.errlen = errlen;
    err[0] = '\0';
    if (u32(&r, &magic) || magic != GGUF_MAGIC) {
        snprintf(err, errlen, "%s: not a GGUF file (bad magic)", path);
        return -1;
    }
    if (u32(&r, &version) || version < 2 || version > 3) {
        snprintf(err, errlen, "%s: GGUF version %u is not supported (2, 3)", path, version);
        return -1;
    }
    if (u64(&r, &n_tensors) || u64(&r, &n_kv)) return -1;
    if (n_tensors > (1u << 20) || n_kv > (1u << 20)) {
        snprintf(err, errlen, "%s: implausible header (%llu tensors, %llu keys)", path,
                 (unsigned long long) n_tensors, (unsigned long long) n_kv);
        return -1;
    }
    for (i = 0; i < n_kv; i++) {
        const char *k;
        size_t kn;
        uint32_t t;
        json_t *v;
        char key[256];
        if (str(&r, &k, &kn) || u32(&r, &t)) goto bad;
        v = value(&r, t, 0);
        if (v == NULL) goto bad;
        snprintf(key, sizeof(key), "%.*s", (int) (kn < 255 ? kn : 255), k);
        json_object_set_new(meta, key, v);
    }
    al = json_object_get(meta, "general.alignment");
    if (json_is_integer(al)) {
        json_int_t a = json_integer_value(al);
        if (a <= 0 || a > 65536 || (a & (a - 1)) != 0) {
            snprintf(err, errlen, "%s: bad general.alignment %lld", path, (long long) a);
            return -1;
        }
        alignment = (uint32_t) a;
    }
    f->t = calloc((size_t) n_tensors + 1, sizeof(*f->t));
    if (f->t == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    {
        /* tensor infos first; the data section starts after them, aligned */
        struct { uint64_t off; } *offs = calloc((size_t) n_tensors + 1, sizeof(*offs));
        uint64_t data_off;
        if (offs == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (i = 0; i < n_tensors; i++) {
            llm_st_tensor *t = &f->t[f->n];
            const char *nm;
            size_t nn;
            uint32_t nd, gt, d;
            uint64_t ne[4] = { 1, 1, 1, 1 }, numel = 1;
            char g[256], hf[300];
            int wt;

            if (str(&r, &nm, &nn) || u32(&r, &nd)) { free(offs); goto bad; }
            snprintf(g, sizeof(g), "%.*s", (int) (nn < 255 ? nn : 255), nm);
            if (nd == 0 || nd > 4) {
                snprintf(err, errlen, "%s: tensor \"%s\" has %u dimensions", path, g, nd);
                free(offs);
                return -1;
            }
            for (d = 0; d < nd; d++) {
                if (u64(&r, &ne[d])) { free(offs); goto bad; }
                if (ne[d] > (1ull << 40) || (numel *= ne[d]) > (1ull << 40)) {
                    snprintf(err, errlen, "%s: tensor \"%s\" is too large", path, g);
                    free(offs);
                    return -1;
                }
            }
            if (u32(&r, &gt) || u64(&r, &offs[i].off)) { free(offs); goto bad; }
            hf_name(g, json_string_value(json_object_get(meta, "general.architecture")), hf, sizeof(hf));
            t->name = strdup(hf);
            if (t->name == NULL) {
                free(offs);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            f->n++;
            wt = llm_wtype_from_ggml((int) gt);
            t->type = wt;
            snprintf(t->dtype, sizeof(t->dtype), "%s", llm_ggml_type_name((int) gt));
            /* Hugging Face order: the outermost dimension first */
            t->ndim = 0;
            while (nd > 1 && ne[nd - 1] == 1) nd--;
            for (d = 0; d < nd; d++) t->shape[d] = (int64_t) ne[nd - 1 - d];
            t->ndim = (int) nd;
            if (wt >= 0) {
                size_t rb = llm_wtype_row_bytes((llm_wtype) wt, (int64_t) ne[0]);
                if (rb == 0) {
                    snprintf(err, errlen, "%s: tensor \"%s\" of type %s has rows of %llu values, not whole blocks",
                             path, g, t->dtype, (unsigned long long) ne[0]);
                    free(offs);
                    return -1;
                }
                t->nbytes = rb * (size_t) (numel / ne[0]);
            }
        }
        data_off = (uint64_t) (r.p - base);
        data_off = (data_off + alignment - 1) / alignment * alignment;
        data = base + data_off;
        for (i = 0; i < (uint64_t) f->n; i++) {
            llm_st_tensor *t = &f->t[i];
            if (t->type < 0) continue;        /* unsupported type: refused when bound, by name */
            if (offs[i].off % alignment != 0 || data_off > f->size
                || offs[i].off > f->size - data_off || t->nbytes > f->size - data_off - offs[i].off)
            {
                snprintf(err, errlen, "%s: tensor \"%s\" lies outside the file: truncated or corrupt file",
                         path, t->name);
                free(offs);
                return -1;
            }
            t->data = data + offs[i].off;
        }
        free(offs);
    }
    return 0;
bad:
    if (err[0] == '\0') snprintf(err, errlen, "%s: malformed GGUF header", path);
    return -1;
}

int
llm_gguf_is_path(const char *path)
{
    size_t n = strlen(path);
    return n > 5 && strcmp(path + n - 5, ".gguf") == 0;
}

/*
 * llama.cpp stores the Q and K rows of each head of llama, granite and smollm3 in
 * interleaved-pair order (its RoPE rotates pairs); the forward pass here
 * rotates halves as transformers does.  Row (h, i, a) of the file, i < hd/2,
 * a in {0, 1}, is row (h, a, i) of the Hugging Face weight.
 */
static int
unpermute(llm_st_tensor *t, int n_head, char *err, size_t errlen)
{
    int64_t rows = t->shape[0], cols = t->ndim > 1 ? t->shape[1] : 1, hd, h, i, a;
    size_t rb;
    unsigned char *out;

    if (t->type < 0 || n_head <= 0 || rows % n_head != 0 || (rows / n_head) % 2 != 0) {
        snprintf(err, errlen, "tensor \"%s\": cannot undo the RoPE row order for %d heads", t->name, n_head);
        return -1;
    }
    hd = rows / n_head;
    rb = t->nbytes / (size_t) rows;
    out = malloc(t->nbytes);
    if (out == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    (void) cols;
    for (h = 0; h < n_head; h++) {
        for (i = 0; i < hd / 2; i++) {
            for (a = 0; a < 2; a++) {
                memcpy(out + (size_t) (h * hd + a * hd / 2 + i) * rb,
                       (const unsigned char *) t->data + (size_t) (h * hd + 2 * i + a) * rb, rb);
            }
        }
    }
    t->owned = out;
    t->data = out;
    return 0;
}

static int
fix_rope_order(llm_gguf *g, char *err, size_t errlen)
{
    const char *arch = json_string_value(json_object_get(g->meta, "general.architecture"));
    json_t *nh, *nkv;
    int f, i, heads, kv_heads;
    char key[128];

    if (arch == NULL || (strcmp(arch, "llama") != 0 && strcmp(arch, "granite") != 0 && strcmp(arch, "smollm3") != 0)) {
        return 0;
    }
    snprintf(key, sizeof(key), "%s.attention.head_count", arch);
    nh = json_object_get(g->meta, key);
    snprintf(key, sizeof(key), "%s.attention.head_count_kv", arch);
    nkv = json_object_get(g->meta, key);
    heads = json_is_integer(nh) ? (int) json_integer_value(nh) : 0;
    kv_heads = json_is_integer(nkv) ? (int) json_integer_value(nkv) : heads;
    for (f = 0; f < g->n_files; f++) {
        for (i = 0; i < g->files[f].n; i++) {
            llm_st_tensor *t = &g->files[f].t[i];
            const char *s = strstr(t->name, ".self_attn.");
            if (s == NULL) continue;
            if (strcmp(s, ".self_attn.q_proj.weight") == 0 || strcmp(s, ".self_attn.q_proj.bias") == 0) {
                if (unpermute(t, heads, err, errlen) != 0) return -1;
            } else if (strcmp(s, ".self_attn.k_proj.weight") == 0 || strcmp(s, ".self_attn.k_proj.bias") == 0) {
                if (unpermute(t, kv_heads, err, errlen) != 0) return -1;
            }
        }
    }
    return 0;
}

/*
 * llama.cpp's Gemma converters store each RMSNorm's scale as 1 + w; the
 * forward pass, as transformers, computes 1 + w itself: w is taken back
 * (exactly: the stored values lie in [0.5, 2] for any |w| <= 0.5, and
 * outside that the subtraction rounds no worse than the converter did).
 */
static int
fix_gemma_norms(llm_gguf *g, char *err, size_t errlen)
{
    const char *arch = json_string_value(json_object_get(g->meta, "general.architecture"));
    int f, i;
    int64_t j;

    if (arch == NULL || (strcmp(arch, "gemma2") != 0 && strcmp(arch, "gemma3") != 0)) return 0;
    for (f = 0; f < g->n_files; f++) {
        for (i = 0; i < g->files[f].n; i++) {
            llm_st_tensor *t = &g->files[f].t[i];
            size_t nl = strlen(t->name);
            float *w;
            if (nl < 11 || strcmp(t->name + nl - 11, "norm.weight") != 0 || strncmp(t->name, "gguf:", 5) == 0) continue;
            if (t->type != 0 || t->ndim != 1) {
                snprintf(err, errlen, "tensor \"%s\": a Gemma norm must be one F32 vector", t->name);
                return -1;
            }
            if ((w = malloc(t->nbytes)) == NULL) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            for (j = 0; j < t->shape[0]; j++) w[j] = ((const float *) t->data)[j] - 1.0f;
            free(t->owned);
            t->owned = w;
            t->data = w;
        }
    }
    return 0;
}

int
llm_gguf_open(llm_gguf *g, const char *path, char *err, size_t errlen)
{
    char pfx[4096];
    int n = 1, i, len, no = 0, cnt = 0;
    size_t pl;

    memset(g, 0, sizeof(*g));
    g->meta = json_object();
    /* name-00001-of-00003.gguf: open every split */
    pl = strlen(path);
    if (pl > 20 && sscanf(path + pl - 20, "-%5d-of-%5d.gguf%n", &no, &cnt, &len) == 2 && len == 20
        && cnt >= 1 && cnt <= MAX_SPLITS && no >= 1 && no <= cnt)
    {
        n = cnt;
        snprintf(pfx, sizeof(pfx), "%.*s", (int) (pl - 20), path);
    }
    g->files = calloc((size_t) n, sizeof(*g->files));
    if (g->meta == NULL || g->files == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (i = 0; i < n; i++) {
        char p[4200];
        if (n > 1) snprintf(p, sizeof(p), "%s-%05d-of-%05d.gguf", pfx, i + 1, n);
        else snprintf(p, sizeof(p), "%s", path);
        g->n_files++;
        if (open_one(&g->files[i], p, g->meta, err, errlen) != 0) return -1;
    }
    if (fix_rope_order(g, err, errlen) != 0) return -1;
    return fix_gemma_norms(g, err, errlen);
}

void
llm_gguf_close(llm_gguf *g)
{
    int i;

    for (i = 0; g->files && i < g->n_files; i++) llm_st_close(&g->files[i]);
    free(g->files);
    json_decref(g->meta);
    memset(g, 0, sizeof(*g));
}
