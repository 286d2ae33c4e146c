/*
 * Random-weight model of any supported config, for benchmarks: writes
 * config.json (dtype set), generation_config.json and one model.safetensors
 * whose tensors are exactly those the loader binds, then loads it back.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/llm_model_impl.h"
#include "kernels/cpu/llm_quant.h"

typedef struct {
    char name[128];
    int  rows, cols;      /* cols 0: a vector of rows entries */
    int  is_norm;
} synth_tensor;

typedef struct {
    synth_tensor *t;
    int           n, cap;
} synth_list;

static int
add(void *ctx, const llm_tensor_spec *s)
{
    synth_list *l = ctx;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        synth_tensor *t = realloc(l->t, (size_t) cap * sizeof(*t));
        if (t == NULL) return -1;
        l->t = t;
        l->cap = cap;
    }
    snprintf(l->t[l->n].name, sizeof(l->t[l->n].name), "%s", s->name);
    l->t[l->n].rows = s->rows;
    l->t[l->n].cols = s->cols;
    l->t[l->n].is_norm = s->is_norm;
    l->n++;
    return 0;
}

static uint64_t
xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int
write_values(FILE *f, const synth_tensor *t, llm_wtype wt, int norm_plus_one, uint64_t *rng)
{
    size_t n = (size_t) t->rows * (t->cols ? t->cols : 1), done = 0, i, chunk;
    /* uniform with the standard deviation of a 0.02 normal init; norms near 1
     * (stored near 0 where the family applies 1 + w) */
    float a = t->is_norm ? 0.1f : 0.02f * sqrtf(3.0f), base = t->is_norm && !norm_plus_one ? 1.0f : 0.0f;
    unsigned char buf[1 << 16];
    size_t es = (size_t) llm_wtype_info(wt)->bytes;

    while (done < n) {
        chunk = n - done < sizeof(buf) / 4 ? n - done : sizeof(buf) / 4;
        for (i = 0; i < chunk; i++) {
            float v = base + a * ((float) (xorshift(rng) >> 40) * (2.0f / 16777216.0f) - 1.0f);
            if (wt == LLM_WT_F32) {
                memcpy(buf + i * 4, &v, 4);
            } else {
                uint16_t h = wt == LLM_WT_F16 ? llm_f32_to_f16(v) : llm_f32_to_bf16(v);
                memcpy(buf + i * 2, &h, 2);
            }
        }
        if (fwrite(buf, es, chunk, f) != chunk) return -1;
        done += chunk;
    }
    return 0;
}

int
llm_model_synth(const char *config_path, const char *out_dir, const char *dtype,
    uint64_t seed, char *err, size_t errlen)
{
    llm_wtype wt;
    const char *torch_name;
    json_t *cfg = NULL, *gen = NULL, *hdr = NULL;
    json_error_t jerr;
    llm_model *m = NULL;
    synth_list l = { NULL, 0, 0 };
    char path[4096], msg[512];
    char *hs = NULL;
    FILE *f = NULL;
    uint64_t off = 0, hlen, rng = seed * 2654435761u + 88172645463325252ull;
    int i, rc = -1;

    if (strcmp(dtype, "f32") == 0) { wt = LLM_WT_F32; torch_name = "float32"; }
    else if (strcmp(dtype, "f16") == 0) { wt = LLM_WT_F16; torch_name = "float16"; }
    else if (strcmp(dtype, "bf16") == 0) { wt = LLM_WT_BF16; torch_name = "bfloat16"; }
    else {
        snprintf(err, errlen, "dtype must be f32, f16 or bf16, not \"%s\"", dtype);
        return -1;
    }
    cfg = json_load_file(config_path, 0, &jerr);
    if (!json_is_object(cfg)) {
        snprintf(err, errlen, "%s: %s", config_path, cfg ? "not a JSON object" : jerr.text);
        goto done;
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", out_dir, strerror(errno));
        goto done;
    }
    json_object_set_new(cfg, "torch_dtype", json_string(torch_name));
    snprintf(path, sizeof(path), "%s/config.json", out_dir);
    if (json_dump_file(cfg, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
        snprintf(err, errlen, "cannot write %s", path);
        goto done;
    }
    gen = json_object();
    if (json_object_get(cfg, "bos_token_id")) json_object_set(gen, "bos_token_id", json_object_get(cfg, "bos_token_id"));
    if (json_object_get(cfg, "eos_token_id")) json_object_set(gen, "eos_token_id", json_object_get(cfg, "eos_token_id"));
    snprintf(path, sizeof(path), "%s/generation_config.json", out_dir);
    if (json_dump_file(gen, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
        snprintf(err, errlen, "cannot write %s", path);
        goto done;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL || llm_model_parse_config(m, out_dir, msg, sizeof(msg)) != 0) {
        snprintf(err, errlen, "%s", m ? msg : "out of memory");
        goto done;
    }
    if (llm_model_tensors(m, add, &l) != 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    hdr = json_object();
    for (i = 0; i < l.n; i++) {
        uint64_t n = (uint64_t) l.t[i].rows * (l.t[i].cols ? l.t[i].cols : 1);
        json_t *e = json_object(), *shape = json_array();
        json_array_append_new(shape, json_integer(l.t[i].rows));
        if (l.t[i].cols) json_array_append_new(shape, json_integer(l.t[i].cols));
        json_object_set_new(e, "dtype", json_string(wt == LLM_WT_F32 ? "F32" : wt == LLM_WT_F16 ? "F16" : "BF16"));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", json_pack("[II]", (json_int_t) off,
                            (json_int_t) (off + n * (uint64_t) llm_wtype_info(wt)->bytes)));
        json_object_set_new(hdr, l.t[i].name, e);
        off += n * (uint64_t) llm_wtype_info(wt)->bytes;
    }
    hs = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (hs == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    snprintf(path, sizeof(path), "%s/model.safetensors", out_dir);
    f = fopen(path, "wb");
    if (f == NULL) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    hlen = (strlen(hs) + 7) / 8 * 8;     /* data starts 8-byte aligned */
    {
        unsigned char le[8];
        size_t pad = hlen - strlen(hs);
        for (i = 0; i < 8; i++) le[i] = (unsigned char) (hlen >> (8 * i));
        if (fwrite(le, 1, 8, f) != 8 || fwrite(hs, 1, strlen(hs), f) != strlen(hs)
            || fwrite("        ", 1, pad, f) != pad)
        {
            snprintf(err, errlen, "write error on %s", path);
            goto done;
        }
    }
    for (i = 0; i < l.n; i++) {
        if (write_values(f, &l.t[i], wt, m->norm_plus_one, &rng) != 0) {
            snprintf(err, errlen, "write error on %s: %s", path, strerror(errno));
            goto done;
        }
    }
    if (fclose(f) != 0) {
        f = NULL;
        snprintf(err, errlen, "write error on %s: %s", path, strerror(errno));
        goto done;
    }
    f = NULL;
    llm_model_free(m);
    m = llm_model_load(out_dir, msg, sizeof(msg));
    if (m == NULL) {
        snprintf(err, errlen, "written model does not load: %s", msg);
        goto done;
    }
    rc = 0;
done:
    if (f) fclose(f);
    free(hs);
    free(l.t);
    json_decref(hdr);
    json_decref(cfg);
    json_decref(gen);
    llm_model_free(m);
    return rc;
}
