/* Per-process runtime: compute threads, KV cache, scratch, sequence slots. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/llm_runtime_impl.h"
#include "kernels/cpu/llm_quant.h"

/*
 * Zeroed memory, committed now: one write per page, so that what the
 * configuration accepted (llm_runtime_memory, checked at nginx -t) is
 * resident when the worker starts instead of failing on first use.
 */
static void *
alloc_f(size_t n, size_t size, int *fail)
{
    size_t i, bytes = (n ? n : 1) * size, page = (size_t) sysconf(_SC_PAGESIZE);
    volatile unsigned char *p = calloc(n ? n : 1, size);

    if (p == NULL) {
        *fail = 1;
        return NULL;
    }
    for (i = 0; i < bytes; i += page) p[i] = 0;
    p[bytes - 1] = 0;    /* the last page, when p does not start one */
    return (void *) p;
}

/* Threads and context as llm_runtime_create_kv resolves them; -1 if invalid. */
static int
resolve_shape(const llm_model_info *in, int *n_threads, int *n_ctx)
{
    if (*n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        *n_threads = n > 0 ? (int) n : 1;
    }
    if (*n_threads > 256) *n_threads = 256;
    if (*n_ctx <= 0) *n_ctx = in->max_position_embeddings < 4096 ? in->max_position_embeddings : 4096;
    return *n_ctx <= 0 || *n_ctx > (1 << 22) ? -1 : 0;
}

/* (n ? n : 1) * size, as alloc_f allocates it */
static size_t
buf_bytes(size_t n, size_t size)
{
    return (n ? n : 1) * size;
}
#define BUF_BYTES(n, size) buf_bytes((size_t) (n), (size_t) (size))

size_t
llm_runtime_memory(const llm_model *m, int n_threads, int n_ctx, int n_seq_max,
    llm_kv_type kv, size_t *kv_bytes)
{
    const llm_model_info *in = &m->info;
    size_t per_seq, kvs = kv == LLM_KV_F16 ? 2 : sizeof(float), total = 0, S, C = LLM_CHUNK;
    size_t kv_dim = (size_t) in->n_kv_heads * in->head_dim, q_dim = (size_t) in->n_heads * in->head_dim;
    size_t half = (size_t) (m->rot_dim / 2);

    if (kv_bytes) *kv_bytes = 0;
    if (resolve_shape(in, &n_threads, &n_ctx) != 0 || n_seq_max <= 0) return 0;
    S = (size_t) n_seq_max;
    per_seq = (size_t) in->n_layers * (size_t) n_ctx * kv_dim;
    if (kv_bytes) *kv_bytes = 2 * per_seq * S * kvs;

    /* the buffers of llm_runtime_create_kv, in its order */
    total += 2 * BUF_BYTES(per_seq * S, kvs);                            /* k_cache, v_cache */
    total += BUF_BYTES(S, sizeof(int)) + BUF_BYTES(S, 1);                /* seq_len, seq_used */
    total += (size_t) m->n_rope * 2 * BUF_BYTES((size_t) n_ctx * half, sizeof(float));
    total += BUF_BYTES(C, sizeof(int32_t)) + 2 * BUF_BYTES(C, sizeof(int));  /* tok, tslot, tpos */
    total += 2 * BUF_BYTES(C * in->hidden, sizeof(float));               /* x, xn */
    total += BUF_BYTES(C * q_dim, sizeof(float));                        /* q */
    total += 2 * BUF_BYTES(C * kv_dim, sizeof(float));                   /* kn, vn */
    total += BUF_BYTES(C * q_dim, sizeof(float));                        /* att */
    total += 2 * BUF_BYTES(C * in->intermediate, sizeof(float));         /* gate, up */
    total += BUF_BYTES((size_t) n_threads * n_ctx, sizeof(float));       /* scores */
    total += llm_moe_scratch_bytes(m, LLM_CHUNK);                        /* moe */
    total += BUF_BYTES((S + LLM_VERIFY_ROWS) * in->hidden, sizeof(float));   /* rows */
    total += BUF_BYTES((S + LLM_VERIFY_ROWS) * in->n_vocab, sizeof(float));  /* logits */
    total += BUF_BYTES(S * in->hidden, sizeof(float));                   /* emb */
    total += 3 * BUF_BYTES(S, sizeof(int));                /* logit_row, n_logit, emb_row */
    total += BUF_BYTES(S, LLM_ITEM_ERRLEN);                              /* item_err */
    return total;
}

llm_runtime *
llm_runtime_create(const llm_model *m, int n_threads, int n_ctx, int n_seq_max,
    char *err, size_t errlen)
{
    return llm_runtime_create_kv(m, n_threads, n_ctx, n_seq_max, LLM_KV_F32, err, errlen);
}

llm_runtime *
llm_runtime_create_kv(const llm_model *m, int n_threads, int n_ctx, int n_seq_max,
    llm_kv_type kv, char *err, size_t errlen)
{
    const llm_model_info *in = &m->info;
    llm_runtime *rt;
    size_t per_seq;
    float *inv;
    float mscale;
    int fail = 0, half = m->rot_dim / 2, p, i, r, C = LLM_CHUNK;

    if (resolve_shape(in, &n_threads, &n_ctx) != 0) {
        snprintf(err, errlen, "bad context size %d", n_ctx);
        return NULL;
    }
    if (n_seq_max <= 0 || n_seq_max > 4096) {
        snprintf(err, errlen, "bad number of sequences %d", n_seq_max);
        return NULL;
    }
    rt = calloc(1, sizeof(*rt));
    if (rt == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    rt->m = m;
    rt->k = llm_kernels_best();
    rt->n_threads = n_threads;
    rt->n_ctx = n_ctx;
    rt->n_seq_max = n_seq_max;
    rt->kv_dim = in->n_kv_heads * in->head_dim;
    rt->q_dim = in->n_heads * in->head_dim;

    rt->kv_f16 = kv == LLM_KV_F16;
    per_seq = (size_t) in->n_layers * n_ctx * rt->kv_dim;
    rt->kv_bytes = 2 * per_seq * n_seq_max * (rt->kv_f16 ? 2 : sizeof(float));
    rt->k_cache = alloc_f(per_seq * n_seq_max, rt->kv_f16 ? 2 : sizeof(float), &fail);
    rt->v_cache = alloc_f(per_seq * n_seq_max, rt->kv_f16 ? 2 : sizeof(float), &fail);
    if (fail) {
        snprintf(err, errlen, "cannot allocate %zu MiB of KV cache (%d sequences x %d tokens)",
                 rt->kv_bytes >> 20, n_seq_max, n_ctx);
        llm_runtime_free(rt);
        return NULL;
    }
    rt->seq_len = alloc_f((size_t) n_seq_max, sizeof(int), &fail);
    rt->seq_used = alloc_f((size_t) n_seq_max, 1, &fail);
    for (r = 0; r < m->n_rope; r++) {
        rt->rope_cos[r] = alloc_f((size_t) n_ctx * half, sizeof(float), &fail);
        rt->rope_sin[r] = alloc_f((size_t) n_ctx * half, sizeof(float), &fail);
    }
    rt->tok = alloc_f((size_t) C, sizeof(int32_t), &fail);
    rt->tslot = alloc_f((size_t) C, sizeof(int), &fail);
    rt->tpos = alloc_f((size_t) C, sizeof(int), &fail);
    rt->x = alloc_f((size_t) C * in->hidden, sizeof(float), &fail);
    rt->xn = alloc_f((size_t) C * in->hidden, sizeof(float), &fail);
    rt->q = alloc_f((size_t) C * rt->q_dim, sizeof(float), &fail);
    rt->kn = alloc_f((size_t) C * rt->kv_dim, sizeof(float), &fail);
    rt->vn = alloc_f((size_t) C * rt->kv_dim, sizeof(float), &fail);
    rt->att = alloc_f((size_t) C * rt->q_dim, sizeof(float), &fail);
    rt->gate = alloc_f((size_t) C * in->intermediate, sizeof(float), &fail);
    rt->up = alloc_f((size_t) C * in->intermediate, sizeof(float), &fail);
    rt->scores = alloc_f((size_t) n_threads * n_ctx, sizeof(float), &fail);
    rt->moe = llm_moe_scratch_create(m, C, &fail);
    {
        /* rows: a chunk of tokens, or the rows of the lm head (one per sequence) */
        int widest = in->hidden > rt->q_dim ? in->hidden : rt->q_dim;
        if (in->intermediate > widest) widest = in->intermediate;
        rt->ldq = llm_qa_row_bytes(widest);
        rt->xq = alloc_f((size_t) (C > n_seq_max ? C : n_seq_max), rt->ldq, &fail);
    }
    rt->logit_rows = n_seq_max + LLM_VERIFY_ROWS;
    rt->rows = alloc_f((size_t) rt->logit_rows * in->hidden, sizeof(float), &fail);
    rt->logits = alloc_f((size_t) rt->logit_rows * in->n_vocab, sizeof(float), &fail);
    rt->emb = alloc_f((size_t) n_seq_max * in->hidden, sizeof(float), &fail);
    rt->logit_row = alloc_f((size_t) n_seq_max, sizeof(int), &fail);
    rt->n_logit = alloc_f((size_t) n_seq_max, sizeof(int), &fail);
    rt->emb_row = alloc_f((size_t) n_seq_max, sizeof(int), &fail);
    rt->item_err = alloc_f((size_t) n_seq_max, LLM_ITEM_ERRLEN, &fail);
    inv = alloc_f((size_t) half, sizeof(float), &fail);
    if (fail) {
        free(inv);
        snprintf(err, errlen, "out of memory for runtime buffers");
        llm_runtime_free(rt);
        return NULL;
    }
    /* cos/sin as transformers computes them: float32 angle = pos * inv_freq */
    for (r = 0; r < m->n_rope; r++) {
        llm_rope_inv_freq(&m->rope[r], m->rot_dim, n_ctx, inv, &mscale);
        for (p = 0; p < n_ctx; p++) {
            for (i = 0; i < half; i++) {
                float a = (float) p * inv[i];
                rt->rope_cos[r][(size_t) p * half + i] = (float) cos((double) a) * mscale;
                rt->rope_sin[r][(size_t) p * half + i] = (float) sin((double) a) * mscale;
            }
        }
    }
    free(inv);
    rt->pool = llm_pool_create(n_threads, err, errlen);
    if (rt->pool == NULL) {
        llm_runtime_free(rt);
        return NULL;
    }
    return rt;
}

void
llm_runtime_free(llm_runtime *rt)
{
    int i;

    if (rt == NULL) return;
    llm_pool_free(rt->pool);
    free(rt->k_cache); free(rt->v_cache);
    free(rt->seq_len); free(rt->seq_used);
    for (i = 0; i < LLM_MAX_ROPE; i++) {
        free(rt->rope_cos[i]);
        free(rt->rope_sin[i]);
    }
    free(rt->tok); free(rt->tslot); free(rt->tpos);
    free(rt->x); free(rt->xn); free(rt->q); free(rt->kn); free(rt->vn);
    free(rt->att); free(rt->gate); free(rt->up); free(rt->scores); free(rt->xq);
    llm_moe_scratch_free(rt->moe);
    free(rt->rows); free(rt->logits); free(rt->emb);
    free(rt->logit_row); free(rt->n_logit); free(rt->emb_row); free(rt->item_err);
    free(rt);
}

size_t llm_runtime_kv_bytes(const llm_runtime *rt) { return rt->kv_bytes; }
int llm_runtime_n_ctx(const llm_runtime *rt) { return rt->n_ctx; }
int llm_runtime_n_seq_max(const llm_runtime *rt) { return rt->n_seq_max; }
int llm_runtime_logit_rows(const llm_runtime *rt) { return rt->logit_rows; }
const llm_model *llm_runtime_model(const llm_runtime *rt) { return rt->m; }
const char *llm_runtime_kernels(const llm_runtime *rt) { return rt->k->name; }

int
llm_seq_open(llm_runtime *rt)
{
    int i;
    for (i = 0; i < rt->n_seq_max; i++) {
        if (!rt->seq_used[i]) {
            rt->seq_used[i] = 1;
            rt->seq_len[i] = 0;
            return i;
        }
    }
    return -1;
}

void
llm_seq_close(llm_runtime *rt, int slot)
{
    if (slot < 0 || slot >= rt->n_seq_max) return;
    rt->seq_used[slot] = 0;
    rt->seq_len[slot] = 0;
}

int
llm_seq_len(const llm_runtime *rt, int slot)
{
    if (slot < 0 || slot >= rt->n_seq_max || !rt->seq_used[slot]) return -1;
    return rt->seq_len[slot];
}

void
llm_seq_truncate(llm_runtime *rt, int slot, int n)
{
    if (slot < 0 || slot >= rt->n_seq_max || !rt->seq_used[slot]) return;
    if (n < 0) n = 0;
    if (n < rt->seq_len[slot]) rt->seq_len[slot] = n;
}
