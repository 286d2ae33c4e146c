/*
 * gpt-oss experts into the engine's layout (llm_gptoss.h has the contract).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/llm_gptoss.h"
#include "kernels/cpu/llm_quant.h"

static int
has_shape(const llm_st_tensor *t, int ndim, int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t want[4] = { a, b, c, d };
    int i;

    if (t->ndim != ndim) return 0;
    for (i = 0; i < ndim; i++) {
        if (t->shape[i] != want[i]) return 0;
    }
    return 1;
}

/* a new tensor entry of f owning data (freed with the file, or here on failure) */
static int
add_tensor(llm_st_file *f, const char *name, llm_wtype type, int ndim, int64_t a, int64_t b, int64_t c,
    void *data, size_t nbytes, char *err, size_t errlen)
{
    llm_st_tensor *t = realloc(f->t, (size_t) (f->n + 1) * sizeof(*t));
    char *nm = strdup(name);

    if (t != NULL) f->t = t;
    if (t == NULL || nm == NULL) {
        free(nm);
        free(data);
        snprintf(err, errlen, "out of memory unpacking the experts");
        return -1;
    }
    t = &f->t[f->n++];
    memset(t, 0, sizeof(*t));
    t->name = nm;
    t->type = (int) type;
    snprintf(t->dtype, sizeof(t->dtype), "%s", llm_wtype_name(type));
    t->ndim = ndim;
    t->shape[0] = a; t->shape[1] = b; t->shape[2] = c;
    t->data = data;
    t->owned = data;
    t->nbytes = nbytes;
    return 0;
}

static int
is_float(const llm_st_tensor *t)
{
    return t->type == LLM_WT_F32 || t->type == LLM_WT_F16 || t->type == LLM_WT_BF16;
}

/*
 * [E][R][C] float -> [E][C/step][R] taking every step-th column from column
 * first: the transpose (step 1) or one of the interleaved halves (step 2).
 */
static void *
transpose(const llm_st_tensor *t, int step, int first, size_t *nbytes)
{
    int64_t E = t->shape[0], R = t->shape[1], C = t->shape[2], e, r, c, oc = C / step;
    size_t es = llm_wtype_row_bytes((llm_wtype) t->type, 1);
    char *dst = malloc((size_t) (E * oc * R) * es);
    const char *src = t->data;

    if (dst == NULL) return NULL;
    for (e = 0; e < E; e++) {
        for (c = 0; c < oc; c++) {
            char *o = dst + (size_t) ((e * oc + c) * R) * es;
            for (r = 0; r < R; r++) {
                memcpy(o + (size_t) r * es, src + (size_t) ((e * R + r) * C + c * step + first) * es, es);
            }
        }
    }
    *nbytes = (size_t) (E * oc * R) * es;
    return dst;
}

/* MXFP4 rows (every step-th from row first) of [E][R][C/32][16] blocks into ggml blocks [E][R/step][C/32] */
static void *
mxfp4_rows(const llm_st_tensor *blocks, const llm_st_tensor *scales, int step, int first, size_t *nbytes)
{
    int64_t E = blocks->shape[0], R = blocks->shape[1], G = blocks->shape[2], e, r, orows = R / step;
    llm_block_mxfp4 *dst = malloc((size_t) (E * orows * G) * sizeof(*dst));

    if (dst == NULL) return NULL;
    for (e = 0; e < E; e++) {
        for (r = 0; r < orows; r++) {
            int64_t src = e * R + r * step + first;
            llm_mxfp4_from_hf((const uint8_t *) blocks->data + (size_t) (src * G) * 16,
                              (const uint8_t *) scales->data + (size_t) (src * G), (size_t) G,
                              dst + (size_t) ((e * orows + r) * G));
        }
    }
    *nbytes = (size_t) (E * orows * G) * sizeof(*dst);
    return dst;
}

/* every step-th value from first of an [E][n] float vector tensor, as f32 [E * n / step] */
static float *
bias_part(const llm_st_tensor *t, int step, int first)
{
    int64_t n = t->shape[0] * t->shape[1], i;
    float *all = malloc((size_t) n * sizeof(float)), *out = malloc((size_t) (n / step) * sizeof(float));

    if (all == NULL || out == NULL) {
        free(all);
        free(out);
        return NULL;
    }
    llm_kernels_scalar()->to_f32(all, t->data, (llm_wtype) t->type, (int) n);
    for (i = 0; i < n / step; i++) out[i] = all[i * step + first];
    free(all);
    return out;
}

static int
unpack_layer(llm_st_file *files, int n_files, const char *base, int H, int I, int E, char *err, size_t errlen)
{
    char name[256], what[64];
    llm_st_tensor *gu, *gub, *gus, *dn, *dnb, *dns, *gub_bias, *dn_bias;
    void *mats[2], *down;
    float *biases[3];
    size_t mat_bytes[2] = { 0, 0 }, down_bytes = 0;
    llm_wtype type;
    int mx, k, rc;

#define T(var, suffix) (snprintf(name, sizeof(name), "%s%s", base, suffix), var = llm_st_find_in(files, n_files, name))
    T(gu, "gate_up_proj"); T(gub, "gate_up_proj_blocks"); T(gus, "gate_up_proj_scales");
    T(dn, "down_proj"); T(dnb, "down_proj_blocks"); T(dns, "down_proj_scales");
    T(gub_bias, "gate_up_proj_bias"); T(dn_bias, "down_proj_bias");
#undef T
    mx = gu == NULL && gub != NULL;
    snprintf(what, sizeof(what), "%s", mx ? "gate_up_proj_blocks/_scales" : "gate_up_proj");
    if (mx ? !(gus && has_shape(gub, 4, E, 2 * I, H / 32, 16) && has_shape(gus, 3, E, 2 * I, H / 32, 0)
               && strcmp(gub->dtype, "U8") == 0 && strcmp(gus->dtype, "U8") == 0 && H % 32 == 0)
           : !(gu && is_float(gu) && has_shape(gu, 3, E, H, 2 * I, 0)))
    {
        snprintf(err, errlen, "%s%s: missing, or not %s (experts %d, hidden %d, intermediate %d)", base, what,
                 mx ? "U8 [E][2I][H/32][16] with U8 scales [E][2I][H/32]" : "F32/F16/BF16 [E][H][2I]", E, H, I);
        return -1;
    }
    if (mx ? !(dnb && dns && has_shape(dnb, 4, E, H, I / 32, 16) && has_shape(dns, 3, E, H, I / 32, 0)
               && strcmp(dnb->dtype, "U8") == 0 && strcmp(dns->dtype, "U8") == 0 && I % 32 == 0)
           : !(dn && is_float(dn) && has_shape(dn, 3, E, I, H, 0)))
    {
        snprintf(err, errlen, "%sdown_proj%s: missing, or not %s", base, mx ? "_blocks/_scales" : "",
                 mx ? "U8 [E][H][I/32][16] with U8 scales [E][H][I/32]" : "F32/F16/BF16 [E][I][H]");
        return -1;
    }
    if (!(gub_bias && is_float(gub_bias) && has_shape(gub_bias, 2, E, 2 * I, 0, 0))
        || !(dn_bias && is_float(dn_bias) && has_shape(dn_bias, 2, E, H, 0, 0)))
    {
        snprintf(err, errlen, "%sgate_up_proj_bias [E][2I] / down_proj_bias [E][H]: missing or of another shape",
                 base);
        return -1;
    }
    /*
     * Everything is made first: add_tensor may move the tensor table these
     * pointers point into.  gate is every even row / column, up every odd one.
     */
    for (k = 0; k < 2; k++) {
        mats[k] = mx ? mxfp4_rows(gub, gus, 2, k, &mat_bytes[k]) : transpose(gu, 2, k, &mat_bytes[k]);
        biases[k] = bias_part(gub_bias, 2, k);
    }
    biases[2] = bias_part(dn_bias, 1, 0);
    down = mx ? mxfp4_rows(dnb, dns, 1, 0, &down_bytes) : transpose(dn, 1, 0, &down_bytes);
    type = mx ? LLM_WT_MXFP4 : (llm_wtype) gu->type;
    if (mats[0] == NULL || mats[1] == NULL || biases[0] == NULL || biases[1] == NULL || biases[2] == NULL
        || down == NULL)
    {
        for (k = 0; k < 3; k++) free(biases[k]);
        free(mats[0]);
        free(mats[1]);
        free(down);
        snprintf(err, errlen, "out of memory unpacking the experts");
        return -1;
    }
    if (!mx) {
        /* the float down_proj becomes [E][H][I] in place */
        free(dn->owned);
        dn->owned = down;
        dn->data = down;
        dn->nbytes = down_bytes;
        dn->shape[1] = H;
        dn->shape[2] = I;
        down = NULL;
    }
    rc = 0;
    for (k = 0; k < 3; k++) {
        static const char *const mat_name[2] = { "gate_proj", "up_proj" };
        static const char *const bias_name[3] = { "gate_bias", "up_bias", "down_bias" };
        int64_t n = (int64_t) E * (k < 2 ? I : H);
        if (k < 2) {
            snprintf(name, sizeof(name), "%s%s", base, mat_name[k]);
            if (rc == 0) rc = add_tensor(&files[0], name, type, 3, E, I, H, mats[k], mat_bytes[k], err, errlen);
            else free(mats[k]);
        }
        snprintf(name, sizeof(name), "%s%s", base, bias_name[k]);
        if (rc == 0) rc = add_tensor(&files[0], name, LLM_WT_F32, 1, n, 0, 0, biases[k], (size_t) n * sizeof(float),
                                     err, errlen);
        else free(biases[k]);
    }
    if (down != NULL) {
        snprintf(name, sizeof(name), "%sdown_proj", base);
        if (rc == 0) rc = add_tensor(&files[0], name, LLM_WT_MXFP4, 3, E, H, I, down, down_bytes, err, errlen);
        else free(down);
    }
    return rc;
}

int
llm_gptoss_unpack(llm_st_file *files, int n_files, const char *prefix, int n_layers, int H, int I, int E,
    char *err, size_t errlen)
{
    char base[128];
    int l;

    if (n_files <= 0) {
        snprintf(err, errlen, "no tensor files");
        return -1;
    }
    for (l = 0; l < n_layers; l++) {
        snprintf(base, sizeof(base), "%slayers.%d.mlp.experts.", prefix, l);
        if (unpack_layer(files, n_files, base, H, I, E, err, errlen) != 0) return -1;
    }
    return 0;
}
