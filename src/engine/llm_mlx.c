/*
 * MLX affine-quantized weights unpacked into block matrices (see llm_mlx.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/llm_mlx.h"
#include "kernels/cpu/llm_quant.h"

/* bits and group size of a module: its override object, else the defaults; 1 when it is not quantized */
static int
module_params(const json_t *q, const char *module, int *bits, int *group, char *err, size_t errlen)
{
    const json_t *o = json_object_get(q, module), *b, *g;

    if (json_is_false(o)) return 1;
    if (!json_is_object(o)) o = q;
    b = json_object_get(o, "bits");
    g = json_object_get(o, "group_size");
    if (!json_is_integer(b) || !json_is_integer(g)) {
        snprintf(err, errlen, "config.json \"quantization\"%s%s has no integer \"bits\" and \"group_size\"",
                 o == q ? "" : " of ", o == q ? "" : module);
        return -1;
    }
    *bits = (int) json_integer_value(b);
    *group = (int) json_integer_value(g);
    if (*bits < 2 || *bits > 8 || *bits == 7) {
        snprintf(err, errlen, "%s: MLX quantization with %d bits is not supported (2, 3, 4, 5, 6, 8)", module, *bits);
        return -1;
    }
    if (*group <= 0 || *group % LLM_QB != 0) {
        snprintf(err, errlen, "%s: MLX group size %d is not supported (a multiple of 32: 32, 64, 128)",
                 module, *group);
        return -1;
    }
    return 0;
}

/* a [rows, groups] float tensor as f32 */
static float *
group_params(llm_st_file *files, int n, const char *module, const char *what, int64_t rows, int64_t groups,
    char *err, size_t errlen)
{
    char name[300];
    llm_st_tensor *t;
    float *v;

    snprintf(name, sizeof(name), "%s.%s", module, what);
    t = llm_st_find_in(files, n, name);
    if (t == NULL) {
        snprintf(err, errlen, "tensor \"%s.weight\" is U32 but \"%s\" is missing (not an MLX quantized module)",
                 module, name);
        return NULL;
    }
    if ((t->type != LLM_WT_F32 && t->type != LLM_WT_F16 && t->type != LLM_WT_BF16)
        || t->ndim != 2 || t->shape[0] != rows || t->shape[1] != groups)
    {
        snprintf(err, errlen, "tensor \"%s\" has dtype %s and shape [%lld, %lld]; the weight needs [%lld, %lld] "
                 "of F32, F16 or BF16", name, t->dtype, (long long) t->shape[0],
                 (long long) (t->ndim > 1 ? t->shape[1] : 0), (long long) rows, (long long) groups);
        return NULL;
    }
    v = malloc((size_t) (rows * groups) * sizeof(float));
    if (v == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    llm_dequant_row((llm_wtype) t->type, t->data, v, rows * groups);
    return v;
}

static int
exact_f16(const float *v, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (llm_f16_to_f32(llm_f32_to_f16(v[i])) != v[i]) return 0;
    }
    return 1;
}

/* the cols values of one packed row: an LSB-first bit stream */
static void
unpack_row(const uint8_t *p, int bits, int64_t cols, uint8_t *q)
{
    unsigned mask = (1u << bits) - 1;
    int64_t j;
    for (j = 0; j < cols; j++) {
        int64_t bit = j * bits;
        unsigned v = p[bit >> 3] >> (bit & 7);
        if ((bit & 7) + bits > 8) v |= (unsigned) p[(bit >> 3) + 1] << (8 - (bit & 7));
        q[j] = (uint8_t) (v & mask);
    }
}

/* one 32-value block of the target type from values q, scale d and bias m */
static void
make_block(llm_wtype t, const uint8_t *q, float d, float m, void *dst)
{
    int j;

    if (t == LLM_WT_Q4_1) {
        llm_block_q4_1 *b = dst;
        b->d = llm_f32_to_f16(d);
        b->m = llm_f32_to_f16(m);
        for (j = 0; j < 16; j++) b->qs[j] = (uint8_t) (q[j] | q[j + 16] << 4);
    } else if (t == LLM_WT_Q5_1) {
        llm_block_q5_1 *b = dst;
        uint32_t qh = 0;
        b->d = llm_f32_to_f16(d);
        b->m = llm_f32_to_f16(m);
        for (j = 0; j < 16; j++) b->qs[j] = (uint8_t) ((q[j] & 0xF) | (q[j + 16] & 0xF) << 4);
        for (j = 0; j < 32; j++) qh |= (uint32_t) (q[j] >> 4) << j;
        memcpy(b->qh, &qh, 4);
    } else {
        llm_block_aq8 *b = dst;
        b->d = d;
        b->m = m;
        memcpy(b->qs, q, 32);
    }
}

static int
unpack_tensor(llm_st_file *files, int n, llm_st_tensor *w, const char *module, int bits, int group,
    char *err, size_t errlen)
{
    int64_t rows = w->shape[0], cols, groups, r, b;
    float *scales = NULL, *biases = NULL;
    uint8_t *q = NULL;
    char *dst = NULL;
    llm_wtype t;
    size_t rb;

    if (w->ndim != 2 || (w->shape[1] * 32) % bits != 0) {
        snprintf(err, errlen, "tensor \"%s\": a U32 MLX weight of %d dims, shape [%lld, ...] does not hold %d-bit values",
                 w->name, w->ndim, (long long) rows, bits);
        return -1;
    }
    cols = w->shape[1] * 32 / bits;
    if (cols % group != 0) {
        snprintf(err, errlen, "tensor \"%s\": %lld values per row are not whole groups of %d",
                 w->name, (long long) cols, group);
        return -1;
    }
    groups = cols / group;
    scales = group_params(files, n, module, "scales", rows, groups, err, errlen);
    biases = scales ? group_params(files, n, module, "biases", rows, groups, err, errlen) : NULL;
    if (biases == NULL) goto fail;

    t = LLM_WT_AQ8;
    if ((bits == 4 || bits == 5) && exact_f16(scales, (size_t) (rows * groups))
        && exact_f16(biases, (size_t) (rows * groups)))
    {
        t = bits == 4 ? LLM_WT_Q4_1 : LLM_WT_Q5_1;
    }
    rb = llm_wtype_row_bytes(t, cols);
    dst = malloc(rb * (size_t) rows);
    q = malloc((size_t) cols);
    if (dst == NULL || q == NULL) {
        snprintf(err, errlen, "out of memory unpacking \"%s\"", w->name);
        goto fail;
    }
    for (r = 0; r < rows; r++) {
        unpack_row((const uint8_t *) w->data + (size_t) r * (size_t) w->shape[1] * 4, bits, cols, q);
        for (b = 0; b < cols / LLM_QB; b++) {
            int64_t g = r * groups + b * LLM_QB / group;
            make_block(t, q + b * LLM_QB, scales[g], biases[g],
                       dst + (size_t) r * rb + (size_t) b * (size_t) llm_wtype_info(t)->bytes);
        }
    }
    free(w->owned);
    w->owned = dst;
    w->data = dst;
    w->nbytes = rb * (size_t) rows;
    w->type = t;
    w->shape[1] = cols;
    snprintf(w->dtype, sizeof(w->dtype), "%s", llm_wtype_info(t)->name);
    free(q);
    free(scales);
    free(biases);
    return 0;

fail:
    free(dst);
    free(q);
    free(scales);
    free(biases);
    return -1;
}

int
llm_mlx_unpack(llm_st_file *files, int n_files, const json_t *quantization, char *err, size_t errlen)
{
    const json_t *mode = json_object_get(quantization, "mode");
    int f, i;

    if (!json_is_object(quantization)) {
        snprintf(err, errlen, "config.json: \"quantization\" is not an object");
        return -1;
    }
    if (mode != NULL && !(json_is_string(mode) && strcmp(json_string_value(mode), "affine") == 0)) {
        snprintf(err, errlen, "config.json: MLX quantization mode %s is not supported (affine)",
                 json_is_string(mode) ? json_string_value(mode) : "(not a string)");
        return -1;
    }
    for (f = 0; f < n_files; f++) {
        for (i = 0; i < files[f].n; i++) {
            llm_st_tensor *w = &files[f].t[i];
            char module[300];
            size_t len = strlen(w->name);
            int bits, group, rc;

            if (strcmp(w->dtype, "U32") != 0 || len < 7 || strcmp(w->name + len - 7, ".weight") != 0) continue;
            if (len - 7 >= sizeof(module)) {
                snprintf(err, errlen, "tensor name \"%.64s...\" is too long", w->name);
                return -1;
            }
            memcpy(module, w->name, len - 7);
            module[len - 7] = '\0';
            rc = module_params(quantization, module, &bits, &group, err, errlen);
            if (rc == 1) {
                snprintf(err, errlen, "tensor \"%s\" is U32 but config.json \"quantization\" says \"%s\" is not "
                         "quantized", w->name, module);
                return -1;
            }
            if (rc != 0 || unpack_tensor(files, n_files, w, module, bits, group, err, errlen) != 0) return -1;
        }
    }
    return 0;
}
