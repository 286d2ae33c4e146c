/*
 * Checks shared by the tests of the weight readers (test_gguf.c, test_mlx.c):
 * the fixture writers record an FNV-1a hash of every tensor's dequantized
 * float32 values (dequant.json) and transformers' logits on those values
 * (reference.json + reference_logits.f32); these compare a loaded model
 * with both.  Static functions, as tap.h: each test is one translation unit.
 */
#ifndef WEIGHTS_CHECK_H
#define WEIGHTS_CHECK_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/llm_fnv.h"
#include "engine/llm_engine.h"
#include "engine/llm_model_impl.h"
#include "kernels/cpu/llm_quant.h"

typedef struct {
    json_t *want;                    /* {tensor name: hash} of one fixture */
    int     checked, bad;
    char    first_bad[160];
} hash_ctx;

/* llm_model_tensors callback: hash one bound tensor's dequantized rows */
static int
check_tensor(void *arg, const llm_tensor_spec *s)
{
    hash_ctx *c = arg;
    const char *w = json_string_value(json_object_get(c->want, s->name));
    uint64_t h = LLM_FNV_BASIS;
    char got[17];
    int i, r;

    if (w == NULL) return 0;         /* optional tensors the file does not have */
    if (s->cols == 0) {
        if (*s->vec == NULL) return 0;
        h = llm_fnv1a(h, *s->vec, (size_t) s->rows * sizeof(float));
    } else {
        float *row = malloc((size_t) s->cols * sizeof(float));
        for (i = 0; i < s->n_parts; i++) {
            const llm_mat *m = s->part[i];
            size_t rb = llm_wtype_row_bytes(m->type, m->cols);
            for (r = 0; r < m->rows; r++) {
                /* Q8_0 / Q4_0 / Q5_0 matrices are repacked into panels at load: their rows read back from them */
                if (llm_wtype_info(m->type)->panel_rows) llm_panel_dequant_row(m->type, m->data, m->cols, r, row);
                else llm_dequant_row(m->type, (const char *) m->data + (size_t) r * rb, row, m->cols);
                h = llm_fnv1a(h, row, (size_t) m->cols * sizeof(float));
            }
        }
        free(row);
    }
    snprintf(got, sizeof(got), "%016llx", (unsigned long long) h);
    c->checked++;
    if (strcmp(got, w) != 0 && c->bad++ == 0) snprintf(c->first_bad, sizeof(c->first_bad), "%s", s->name);
    return 0;
}

/* logits of every position of a prompt, fed one token per forward call */
static int
prompt_logits(llm_model *m, const int32_t *ids, int n, float *out, int vocab)
{
    char err[256];
    llm_runtime *rt = llm_runtime_create(m, 1, 64, 1, err, sizeof(err));
    int slot, i;

    if (rt == NULL) return -1;
    slot = llm_seq_open(rt);
    for (i = 0; i < n; i++) {
        llm_batch_item it = { slot, &ids[i], 1, 1, 0 };
        if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) {
            llm_runtime_free(rt);
            return -1;
        }
        memcpy(out + (size_t) i * vocab, llm_forward_logits(rt, 0), (size_t) vocab * sizeof(float));
    }
    llm_runtime_free(rt);
    return 0;
}

/*
 * The worst max |ours - ref| / max |ref| over the reference prompts for the
 * fixture `name` (its place in `names` locates its logits in lf, stored
 * fixture after fixture, prompt after prompt); INFINITY when the logits
 * cannot be read or computed, -1 when `names` does not list it.
 */
static double
reference_error(llm_model *m, json_t *names, json_t *prompts, FILE *lf, const char *name, int vocab)
{
    size_t fi, pi;
    long off = 0;
    json_t *fv;

    json_array_foreach(names, fi, fv) {
        if (strcmp(json_string_value(fv), name) == 0) {
            double worst = 0;
            for (pi = 0; pi < json_array_size(prompts); pi++) {
                json_t *p = json_array_get(prompts, pi);
                int n = (int) json_array_size(p), i;
                int32_t ids[64];
                float *want = malloc((size_t) n * vocab * 4), *got = malloc((size_t) n * vocab * 4);
                double mx = 0, md = 0;
                for (i = 0; i < n; i++) ids[i] = (int32_t) json_integer_value(json_array_get(p, (size_t) i));
                fseek(lf, off, SEEK_SET);
                if (fread(want, 4, (size_t) n * vocab, lf) != (size_t) n * vocab
                    || prompt_logits(m, ids, n, got, vocab) != 0)
                {
                    worst = INFINITY;
                } else {
                    for (i = 0; i < n * vocab; i++) {
                        if (fabs(want[i]) > mx) mx = fabs(want[i]);
                        if (fabs(got[i] - want[i]) > md) md = fabs(got[i] - want[i]);
                    }
                    if (md / mx > worst) worst = md / mx;
                }
                off += (long) n * vocab * 4;
                free(want);
                free(got);
            }
            return worst;
        }
        for (pi = 0; pi < json_array_size(prompts); pi++) {
            off += (long) json_array_size(json_array_get(prompts, pi)) * vocab * 4;
        }
    }
    return -1;
}

#endif
