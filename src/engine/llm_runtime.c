/* Per-process runtime: compute threads, KV cache, scratch, sequence slots. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/llm_deltanet.h"
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

size_t
llm_runtime_kv_block_bytes(const llm_model *m, llm_kv_type kv)
{
    const llm_model_info *in = &m->info;

    size_t n = (size_t) m->n_kv_layers * LLM_KV_BLOCK * (size_t) in->n_kv_heads * in->head_dim;
    size_t caches = m->mla_kv_rank > 0 ? 1 : 2;     /* keys and values, or latent attention's one */

    if (kv == LLM_KV_Q8_0) return in->head_dim % 32 ? 0 : caches * (n / 32) * sizeof(llm_block_q8_0);
    return caches * n * (kv == LLM_KV_F16 ? 2 : sizeof(float));
}

const char *
llm_kv_type_name(llm_kv_type kv)
{
    return kv == LLM_KV_Q8_0 ? "q8_0" : kv == LLM_KV_F16 ? "f16" : "f32";
}

/* Recurrent state of n_seq_max slots and their snapshots: 0 for attention-only models. */
static size_t
state_bytes(const llm_model *m, int n_seq_max)
{
    if (m->state_floats == 0) return 0;
    return (size_t) n_seq_max * m->state_floats * sizeof(float)
           + llm_state_snaps_bytes(LLM_STATE_SNAPS_PER_SLOT * n_seq_max, m->state_floats);
}

/* The options as llm_runtime_create_opts resolves them, with the pool's blocks; -1 if invalid. */
static int
resolve_shape(const llm_model *m, llm_runtime_opts *o, int *n_blocks, char *err, size_t errlen)
{
    const llm_model_info *in = &m->info;
    size_t bb = llm_runtime_kv_block_bytes(m, o->kv), nb;
    int max_pos = in->max_position_embeddings > 0 ? in->max_position_embeddings : 2048;

    if (o->threads_of) {
        o->n_threads = o->threads_of->n_threads;
    }
    if (o->n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->n_threads = n > 0 ? (int) n : 1;
    }
    if (o->n_threads > 256) o->n_threads = 256;
    if (o->kv == LLM_KV_Q8_0 && in->head_dim % 32 != 0) {
        /* a Q8_0 block of 32 values must not straddle two heads */
        snprintf(err, errlen, "kv=q8_0 needs a head size that is a multiple of 32 (this model's is %d); "
                 "use kv=f16 or kv=f32", in->head_dim);
        return -1;
    }
    if (o->n_seq_max <= 0 || o->n_seq_max > 4096) {
        snprintf(err, errlen, "bad number of sequences %d", o->n_seq_max);
        return -1;
    }
    if (o->n_ctx > (1 << 22) || bb == 0) {
        snprintf(err, errlen, "bad context size %d", o->n_ctx);
        return -1;
    }
    if (o->kv_memory > 0) {
        /* a budget: the context fits it, the sequences share it; recurrent state comes out of it first */
        size_t st = state_bytes(m, o->n_seq_max);
        if (o->kv_memory <= st) {
            snprintf(err, errlen, "kv_memory of %zu bytes holds no more than the recurrent state of %d "
                     "sequences and its snapshots (%zu bytes)", o->kv_memory, o->n_seq_max, st);
            return -1;
        }
        nb = (o->kv_memory - st) / bb;
        if (nb > (1u << 26)) nb = 1u << 26;
        if (nb == 0) {
            snprintf(err, errlen, "kv_memory of %zu bytes holds no block of %d positions (%zu bytes)",
                     o->kv_memory, LLM_KV_BLOCK, bb);
            return -1;
        }
        if (o->n_ctx <= 0) {
            o->n_ctx = (size_t) max_pos < nb * LLM_KV_BLOCK ? max_pos : (int) (nb * LLM_KV_BLOCK);
        }
        if ((size_t) o->n_ctx > nb * LLM_KV_BLOCK) {
            snprintf(err, errlen, "a context of %d tokens needs more than the kv_memory of %zu MiB "
                     "(%zu tokens)", o->n_ctx, o->kv_memory >> 20, nb * LLM_KV_BLOCK);
            return -1;
        }
    } else {
        /* no budget: every sequence can fill its context at once */
        if (o->n_ctx <= 0) o->n_ctx = max_pos < 4096 ? max_pos : 4096;
        nb = (size_t) o->n_seq_max * ((size_t) (o->n_ctx + LLM_KV_BLOCK - 1) / LLM_KV_BLOCK);
    }
    if (o->n_ctx <= 0) {
        snprintf(err, errlen, "bad context size %d", o->n_ctx);
        return -1;
    }
    *n_blocks = (int) nb;
    return 0;
}

int
llm_runtime_resolve(const llm_model *m, llm_runtime_opts *o, char *err, size_t errlen)
{
    int n_blocks;

    return resolve_shape(m, o, &n_blocks, err, errlen);
}

/* (n ? n : 1) * size, as alloc_f allocates it */
static size_t
buf_bytes(size_t n, size_t size)
{
    return (n ? n : 1) * size;
}
#define BUF_BYTES(n, size) buf_bytes((size_t) (n), (size_t) (size))

size_t
llm_runtime_memory(const llm_model *m, const llm_runtime_opts *opts, size_t *kv_bytes)
{
    const llm_model_info *in = &m->info;
    llm_runtime_opts o = *opts;
    size_t total = 0, S, C = LLM_CHUNK, mb;
    size_t kv_dim = (size_t) in->n_kv_heads * in->head_dim, q_dim = (size_t) in->n_heads * in->head_dim;
    size_t half = (size_t) (m->rot_dim / 2);
    int n_blocks;
    char err[256];

    if (kv_bytes) *kv_bytes = 0;
    if (resolve_shape(m, &o, &n_blocks, err, sizeof(err)) != 0) return 0;
    S = (size_t) o.n_seq_max;
    mb = (size_t) (o.n_ctx + LLM_KV_BLOCK - 1) / LLM_KV_BLOCK;
    if (kv_bytes) *kv_bytes = (size_t) n_blocks * llm_runtime_kv_block_bytes(m, o.kv) + state_bytes(m, o.n_seq_max);

    /* the buffers of llm_runtime_create_opts, in its order */
    total += (size_t) n_blocks * llm_runtime_kv_block_bytes(m, o.kv);   /* k_cache, v_cache */
    total += state_bytes(m, o.n_seq_max);                                /* state, snaps */
    total += llm_kv_pool_bytes(n_blocks);
    total += BUF_BYTES(S, sizeof(llm_kv_seq)) + S * (BUF_BYTES(mb, sizeof(int32_t))
                                                     + BUF_BYTES(mb, sizeof(uint64_t)));
    total += (size_t) m->n_rope * 2 * BUF_BYTES((size_t) o.n_ctx * half, sizeof(float));
    total += BUF_BYTES(C, sizeof(int32_t)) + 2 * BUF_BYTES(C, sizeof(int));  /* tok, tslot, tpos */
    total += 2 * BUF_BYTES(C * in->hidden, sizeof(float));               /* x, xn */
    total += BUF_BYTES(C * q_dim, sizeof(float));                        /* q */
    total += 2 * BUF_BYTES(C * kv_dim, sizeof(float));                   /* kn, vn */
    total += BUF_BYTES(C * q_dim, sizeof(float));                        /* att */
    total += 2 * BUF_BYTES(C * in->intermediate, sizeof(float));         /* gate, up */
    total += m->conv_kernel ? BUF_BYTES(C * 3 * in->hidden, sizeof(float)) : 0;   /* conv */
    total += m->dn_kernel ? BUF_BYTES(C * llm_deltanet_row_floats(m), sizeof(float)) : 0;   /* dn */
    total += m->dn_kernel ? BUF_BYTES((size_t) o.n_threads * llm_deltanet_thread_floats(m), sizeof(float)) : 0;  /* dn_w */
    total += m->attn_gate ? BUF_BYTES(C * 2 * q_dim, sizeof(float)) : 0;          /* qg */
    total += m->mla_kv_rank ? BUF_BYTES(C * llm_mla_row_floats(m), sizeof(float))
                              + BUF_BYTES((size_t) o.n_threads * llm_mla_thread_floats(m), sizeof(float)) : 0;   /* mla, mla_w */
    total += llm_attention_scratch_bytes(m, o.n_threads, LLM_CHUNK);     /* attn */
    total += llm_moe_scratch_bytes(m, LLM_CHUNK);                        /* moe */
    total += BUF_BYTES((S + LLM_VERIFY_ROWS) * in->hidden, sizeof(float));   /* rows */
    total += BUF_BYTES((S + LLM_VERIFY_ROWS) * in->n_vocab, sizeof(float));  /* logits */
    total += BUF_BYTES(S * in->hidden, sizeof(float));                   /* emb */
    total += 3 * BUF_BYTES(S, sizeof(int));                /* logit_row, n_logit, emb_row */
    total += BUF_BYTES(S, LLM_ITEM_ERRLEN);                              /* item_err */
    return total;
}

size_t
llm_runtime_kv_disk_memory(const llm_model *m, const llm_runtime_opts *o)
{
    llm_runtime_opts r = *o;
    char err[256];
    int n_blocks;

    /* the disk tier's (llm_kv_tier.c) on_disk, disk_seen and write queue: two bytes and an
     * entry per block */
    if (resolve_shape(m, &r, &n_blocks, err, sizeof(err)) != 0) return 0;
    return (size_t) n_blocks * (2 + sizeof(llm_kv_persist));
}

size_t
llm_runtime_kv_default(const llm_model *m, llm_kv_type kv, int n_seq_max, int n_ctx,
    uint64_t available)
{
    const llm_model_info *in = &m->info;
    uint64_t want, cap = available / 8;
    int max_pos = n_ctx > 0 ? n_ctx
                  : in->max_position_embeddings > 0 ? in->max_position_embeddings : 2048;

    want = (uint64_t) (n_seq_max > 0 ? n_seq_max : 1)
           * (((uint64_t) max_pos + LLM_KV_BLOCK - 1) / LLM_KV_BLOCK)
           * llm_runtime_kv_block_bytes(m, kv);
    if (cap > 0 && want > cap) want = cap;
    if (want < llm_runtime_kv_block_bytes(m, kv)) want = llm_runtime_kv_block_bytes(m, kv);
    return (size_t) want + state_bytes(m, n_seq_max > 0 ? n_seq_max : 1);
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
    llm_runtime_opts o = { n_threads, n_ctx, n_seq_max, kv, 0, NULL };

    return llm_runtime_create_opts(m, &o, err, errlen);
}

llm_runtime *
llm_runtime_create_opts(const llm_model *m, const llm_runtime_opts *opts, char *err, size_t errlen)
{
    const llm_model_info *in = &m->info;
    llm_runtime *rt;
    llm_runtime_opts o = *opts;
    float *inv;
    float mscale;
    int fail = 0, half = m->rot_dim / 2, p, i, r, C = LLM_CHUNK, n_threads, n_ctx, n_seq_max, n_blocks;

    if (resolve_shape(m, &o, &n_blocks, err, errlen) != 0) {
        return NULL;
    }
    n_threads = o.n_threads;
    n_ctx = o.n_ctx;
    n_seq_max = o.n_seq_max;
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

    rt->kv_wt = o.kv == LLM_KV_Q8_0 ? LLM_WT_Q8_0 : o.kv == LLM_KV_F16 ? LLM_WT_F16 : LLM_WT_F32;
    rt->block_elems = (size_t) m->n_kv_layers * LLM_KV_BLOCK * rt->kv_dim;
    rt->kv_bytes = (size_t) n_blocks * llm_runtime_kv_block_bytes(m, o.kv);
    if (m->mla_kv_rank > 0) {
        rt->k_cache = rt->v_cache = alloc_f(rt->kv_bytes, 1, &fail);
    } else {
        rt->k_cache = alloc_f(rt->kv_bytes / 2, 1, &fail);
        if (!fail) rt->v_cache = alloc_f(rt->kv_bytes / 2, 1, &fail);
    }
    if (!fail) rt->kv = llm_kv_pool_create(n_blocks);
    if (fail || rt->kv == NULL) {
        snprintf(err, errlen, "cannot allocate %zu MiB of KV memory (%d blocks of %d tokens)",
                 rt->kv_bytes >> 20, n_blocks, LLM_KV_BLOCK);
        llm_runtime_free(rt);
        return NULL;
    }
    if (m->state_floats > 0) {
        rt->state_bytes = state_bytes(m, n_seq_max);
        rt->state = alloc_f((size_t) n_seq_max * m->state_floats, sizeof(float), &fail);
        rt->snaps = llm_state_snaps_create(LLM_STATE_SNAPS_PER_SLOT * n_seq_max, m->state_floats);
        if (fail || rt->snaps == NULL) {
            snprintf(err, errlen, "cannot allocate %zu KiB of recurrent state", rt->state_bytes >> 10);
            llm_runtime_free(rt);
            return NULL;
        }
    }
    rt->max_blocks = (n_ctx + LLM_KV_BLOCK - 1) / LLM_KV_BLOCK;
    rt->seqs = alloc_f((size_t) n_seq_max, sizeof(llm_kv_seq), &fail);
    for (i = 0; !fail && i < n_seq_max; i++) {
        rt->seqs[i].table = alloc_f((size_t) rt->max_blocks, sizeof(int32_t), &fail);
        rt->seqs[i].chain = alloc_f((size_t) rt->max_blocks, sizeof(uint64_t), &fail);
    }
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
    if (m->conv_kernel) rt->conv = alloc_f((size_t) C * 3 * in->hidden, sizeof(float), &fail);
    if (m->dn_kernel) rt->dn = alloc_f((size_t) C * llm_deltanet_row_floats(m), sizeof(float), &fail);
    if (m->dn_kernel) rt->dn_w = alloc_f((size_t) n_threads * llm_deltanet_thread_floats(m), sizeof(float), &fail);
    if (m->attn_gate) rt->qg = alloc_f((size_t) C * 2 * rt->q_dim, sizeof(float), &fail);
    if (m->mla_kv_rank) {
        rt->mla_row = llm_mla_row_floats(m);
        rt->mla_wf = llm_mla_thread_floats(m);
        rt->mla = alloc_f((size_t) C * rt->mla_row, sizeof(float), &fail);
        rt->mla_w = alloc_f((size_t) n_threads * rt->mla_wf, sizeof(float), &fail);
    }
    {
        void *mem = alloc_f(llm_attention_scratch_bytes(m, n_threads, C), 1, &fail);
        rt->attn = mem ? llm_attention_scratch_init(mem, m, n_threads, C) : NULL;
    }
    rt->moe = llm_moe_scratch_create(m, C, &fail);
    {
        /* rows: a chunk of tokens, or the rows of the lm head (one per sequence) */
        int widest = in->hidden > rt->q_dim ? in->hidden : rt->q_dim;
        if (in->intermediate > widest) widest = in->intermediate;
        if (m->dn_v_heads * m->dn_v_dim > widest) widest = m->dn_v_heads * m->dn_v_dim;    /* DeltaNet out_proj */
        if (m->mla_q_rank > widest) widest = m->mla_q_rank;                                   /* MLA q_b_proj */
        if (in->n_heads * m->mla_v > widest) widest = in->n_heads * m->mla_v;                 /* MLA o_proj */
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
    if (o.threads_of) {
        rt->pool = o.threads_of->pool;
        rt->pool_borrowed = 1;
    } else {
        rt->pool = llm_pool_create(n_threads, err, errlen);
    }
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
    /* the slots still open end as sequences do: their blocks (partial last ones too) are
     * cached and, with a disk tier, queued, which llm_kv_tier_free writes */
    if (rt->disk && rt->seqs) {
        for (i = 0; i < rt->n_seq_max; i++) {
            if (rt->seqs[i].used) llm_seq_close(rt, i);
        }
    }
    llm_kv_tier_free(rt);
    if (!rt->pool_borrowed) llm_pool_free(rt->pool);
    if (rt->v_cache != rt->k_cache) free(rt->v_cache);
    free(rt->k_cache);
    llm_kv_pool_free(rt->kv);
    free(rt->state);
    llm_state_snaps_free(rt->snaps);
    free(rt->conv);
    free(rt->dn);
    free(rt->dn_w);
    free(rt->qg);
    free(rt->mla);
    free(rt->mla_w);
    for (i = 0; rt->seqs && i < rt->n_seq_max; i++) {
        free(rt->seqs[i].table);
        free(rt->seqs[i].chain);
    }
    free(rt->seqs);
    for (i = 0; i < LLM_MAX_ROPE; i++) {
        free(rt->rope_cos[i]);
        free(rt->rope_sin[i]);
    }
    free(rt->tok); free(rt->tslot); free(rt->tpos);
    free(rt->x); free(rt->xn); free(rt->q); free(rt->kn); free(rt->vn);
    free(rt->att); free(rt->gate); free(rt->up); free(rt->attn); free(rt->xq);
    llm_moe_scratch_free(rt->moe);
    free(rt->rows); free(rt->logits); free(rt->emb);
    free(rt->logit_row); free(rt->n_logit); free(rt->emb_row); free(rt->item_err);
    free(rt);
}

size_t llm_runtime_kv_bytes(const llm_runtime *rt) { return rt->kv_bytes; }
size_t llm_runtime_state_bytes(const llm_runtime *rt) { return rt->state_bytes; }
int llm_runtime_has_state(const llm_runtime *rt) { return rt->state != NULL; }
void llm_runtime_state_stats(const llm_runtime *rt, llm_state_stats *st) { llm_state_snaps_get_stats(rt->snaps, st); }
int llm_runtime_n_ctx(const llm_runtime *rt) { return rt->n_ctx; }
int llm_runtime_n_seq_max(const llm_runtime *rt) { return rt->n_seq_max; }
int llm_runtime_logit_rows(const llm_runtime *rt) { return rt->logit_rows; }
const llm_model *llm_runtime_model(const llm_runtime *rt) { return rt->m; }
const char *llm_runtime_kernels(const llm_runtime *rt) { return rt->k->name; }

const char *
llm_phase_name(llm_phase ph)
{
    static const char *const names[LLM_PHASE_N] = {
        "embed", "norm", "quantize", "qkv", "rope", "attention", "o", "conv", "gate_up", "down", "moe", "lm_head",
    };
    return ph >= 0 && ph < LLM_PHASE_N ? names[ph] : "?";
}

void
llm_runtime_time_phases(llm_runtime *rt, llm_phase_times *t)
{
    rt->phases = t;
    /* a borrowed pool's waits are its owner's to time */
    if (rt->pool_borrowed) return;
    if (t) llm_pool_time_waits(rt->pool, &t->pool_wait, &t->pool_steps, &t->pool_wakes);
    else llm_pool_time_waits(rt->pool, NULL, NULL, NULL);
}

int llm_runtime_kv_blocks(const llm_runtime *rt) { return llm_kv_pool_blocks(rt->kv); }
void llm_runtime_kv_stats(const llm_runtime *rt, llm_kv_stats *st) { llm_kv_pool_get_stats(rt->kv, st); }

static int
slot_ok(const llm_runtime *rt, int slot)
{
    return slot >= 0 && slot < rt->n_seq_max && rt->seqs[slot].used;
}

void
llm_runtime_kv_pin(llm_runtime *rt, int slot, int n, double until)
{
    llm_kv_seq *q;
    int i;

    if (!slot_ok(rt, slot)) return;
    q = &rt->seqs[slot];
    if (n > q->len) n = q->len;
    for (i = 0; i < (n >> LLM_KV_BLOCK_SHIFT) && i < q->n_blocks; i++) {
        llm_kv_pin(rt->kv, q->table[i], until);
    }
}

void
llm_runtime_kv_set_now(llm_runtime *rt, double now)
{
    llm_kv_set_now(rt->kv, now);
    rt->disk_minute = (unsigned char) ((long long) (now / 60) & 0xff);
}

/* Drops a slot's blocks from entry `from` on. */
static void
release_blocks(llm_runtime *rt, llm_kv_seq *q, int from)
{
    while (q->n_blocks > from) {
        llm_kv_unref(rt->kv, q->table[--q->n_blocks]);
    }
}


static float *
state_of(llm_runtime *rt, int slot)
{
    return rt->state + (size_t) slot * rt->m->state_floats;
}

/* the state before the first token */
static void
reset_state(llm_runtime *rt, int slot)
{
    memset(state_of(rt, slot), 0, rt->m->state_floats * sizeof(float));
}

void
llm_seq_snapshot(llm_runtime *rt, int slot)
{
    llm_kv_seq *q;
    int full;

    if (!slot_ok(rt, slot) || rt->state == NULL || rt->seqs[slot].len == 0) return;
    q = &rt->seqs[slot];
    full = q->len >> LLM_KV_BLOCK_SHIFT;
    llm_state_snaps_put(rt->snaps, llm_kv_parent(q, full), q->len,
                        (q->len & (LLM_KV_BLOCK - 1)) ? llm_kv_tokens(rt->kv, q->table[full]) : NULL,
                        state_of(rt, slot));
}

int
llm_seq_open(llm_runtime *rt)
{
    int i;
    for (i = 0; i < rt->n_seq_max; i++) {
        if (!rt->seqs[i].used) {
            rt->seqs[i].used = 1;
            rt->seqs[i].len = 0;
            rt->seqs[i].n_blocks = 0;
            if (rt->state) reset_state(rt, i);
            return i;
        }
    }
    return -1;
}

void
llm_seq_close(llm_runtime *rt, int slot)
{
    llm_kv_seq *q;
    int tail;

    if (!slot_ok(rt, slot)) return;
    q = &rt->seqs[slot];
    /* its state too: a conversation's next turn continues what this one read and wrote */
    llm_seq_snapshot(rt, slot);
    /* a partial last block stays reusable by whoever continues this prefix,
     * in memory and on disk (a block the slot shares is someone else's) */
    tail = q->len & (LLM_KV_BLOCK - 1);
    if (tail && !llm_kv_readonly(rt->kv, q->table[q->len >> LLM_KV_BLOCK_SHIFT])) {
        llm_kv_publish(rt->kv, q->table[q->len >> LLM_KV_BLOCK_SHIFT],
                       llm_kv_parent(q, q->len >> LLM_KV_BLOCK_SHIFT), tail);
        if (rt->disk) {
            llm_kv_tier_queue_block(rt, q->table[q->len >> LLM_KV_BLOCK_SHIFT],
                                    llm_kv_parent(q, q->len >> LLM_KV_BLOCK_SHIFT), tail);
        }
    }
    if (rt->disk) llm_kv_tier_queue(rt, q);
    release_blocks(rt, q, 0);
    q->used = 0;
    q->len = 0;
}

int
llm_seq_len(const llm_runtime *rt, int slot)
{
    if (!slot_ok(rt, slot)) return -1;
    return rt->seqs[slot].len;
}

int
llm_seq_blocks_to_grow(const llm_runtime *rt, int slot, int n)
{
    const llm_kv_seq *q;
    int need, cur, grow;

    if (!slot_ok(rt, slot)) return 0;
    q = &rt->seqs[slot];
    need = (q->len + n + LLM_KV_BLOCK - 1) >> LLM_KV_BLOCK_SHIFT;
    grow = need > q->n_blocks ? need - q->n_blocks : 0;
    cur = q->len >> LLM_KV_BLOCK_SHIFT;
    /* as llm_kv_seq_reserve: continuing a block someone else reads copies it */
    if (n > 0 && (q->len & (LLM_KV_BLOCK - 1)) && cur < q->n_blocks
        && llm_kv_readonly(rt->kv, q->table[cur]))
    {
        grow++;
    }
    return grow;
}

void
llm_seq_truncate(llm_runtime *rt, int slot, int n)
{
    llm_kv_seq *q;

    if (!slot_ok(rt, slot)) return;
    q = &rt->seqs[slot];
    if (n < 0) n = 0;
    if (n >= q->len) return;
    if (rt->state) {
        /* recurrent state cannot go back: the slot starts over */
        n = 0;
        reset_state(rt, slot);
    }
    q->len = n;
    /* a kept partial block that others share is copied before it is written */
    release_blocks(rt, q, (n + LLM_KV_BLOCK - 1) >> LLM_KV_BLOCK_SHIFT);
}

/* A private copy of the first n positions of block `from` (all layers, K and V). */
static int
copy_block(llm_runtime *rt, int from, int n)
{
    size_t row = llm_kv_bytes(rt, (size_t) rt->kv_dim);
    int b = llm_kv_take(rt), l;

    if (b < 0) return -1;
    for (l = 0; l < rt->m->n_kv_layers; l++) {
        size_t src = llm_kv_bytes(rt, (size_t) from * rt->block_elems + (size_t) l * LLM_KV_BLOCK * rt->kv_dim);
        size_t dst = llm_kv_bytes(rt, (size_t) b * rt->block_elems + (size_t) l * LLM_KV_BLOCK * rt->kv_dim);
        memcpy((char *) rt->k_cache + dst, (char *) rt->k_cache + src, (size_t) n * row);
        if (rt->v_cache != rt->k_cache) memcpy((char *) rt->v_cache + dst, (char *) rt->v_cache + src, (size_t) n * row);
    }
    memcpy(llm_kv_tokens(rt->kv, b), llm_kv_tokens(rt->kv, from), (size_t) n * sizeof(int32_t));
    return b;
}

int
llm_seq_reuse(llm_runtime *rt, int slot, const int32_t *tokens, int n)
{
    llm_kv_seq *q;
    int b, common, i;

    if (!slot_ok(rt, slot) || rt->seqs[slot].len != 0) return 0;
    q = &rt->seqs[slot];
    release_blocks(rt, q, 0);
    if (n > rt->n_ctx) n = rt->n_ctx;
    for (i = 0; q->len < n; i++) {
        b = llm_kv_lookup(rt->kv, llm_kv_parent(q, i), tokens + q->len, n - q->len, &common);
        if (b < 0) break;
        if (common == LLM_KV_BLOCK) {
            /* a whole block: shared as it is */
            llm_kv_ref(rt->kv, b);
            if (rt->disk) llm_kv_tier_used(rt, b, llm_kv_parent(q, i));
            q->table[q->n_blocks++] = b;
            q->chain[i] = llm_kv_chain(llm_kv_parent(q, i), tokens + q->len);
            q->len += LLM_KV_BLOCK;
            continue;
        }
        /* the head of a block: shared too; the slot copies it before it writes
         * after that head (llm_kv_seq_reserve), so the block stays as it is */
        llm_kv_ref(rt->kv, b);
        q->table[q->n_blocks++] = b;
        q->len += common;
        break;
    }
    if (rt->state) {
        /* recurrent layers: only as far as the longest snapshot of a prefix of what the KV cache holds */
        int len = llm_state_snaps_take(rt->snaps, q->chain, tokens, q->len, state_of(rt, slot));
        q->len = len;
        release_blocks(rt, q, (len + LLM_KV_BLOCK - 1) >> LLM_KV_BLOCK_SHIFT);
    }
    return q->len;
}

int
llm_kv_seq_reserve(llm_runtime *rt, int slot, int n, char *msg, size_t len)
{
    llm_kv_seq *q = &rt->seqs[slot];
    int need = (q->len + n + LLM_KV_BLOCK - 1) >> LLM_KV_BLOCK_SHIFT, cur, b;

    cur = q->len >> LLM_KV_BLOCK_SHIFT;
    if ((q->len & (LLM_KV_BLOCK - 1)) && cur < q->n_blocks && llm_kv_readonly(rt->kv, q->table[cur])) {
        /* continuing a block someone else reads: write a copy */
        b = copy_block(rt, q->table[cur], q->len & (LLM_KV_BLOCK - 1));
        if (b < 0) goto full;
        llm_kv_unref(rt->kv, q->table[cur]);
        q->table[cur] = b;
    }
    while (q->n_blocks < need) {
        b = llm_kv_take(rt);
        if (b < 0) goto full;
        q->table[q->n_blocks++] = b;
    }
    return 0;

full:
    {
        llm_kv_stats st;
        llm_kv_pool_get_stats(rt->kv, &st);
        snprintf(msg, len, "the KV memory is full (%zu blocks of %d tokens, all in use)",
                 st.blocks, LLM_KV_BLOCK);
    }
    return -1;
}

void
llm_kv_seq_commit(llm_runtime *rt, int slot, const int32_t *tokens, int n)
{
    llm_kv_seq *q = &rt->seqs[slot];
    int j, i;

    for (j = 0; j < n; j++) {
        int pos = q->len + j;
        llm_kv_tokens(rt->kv, q->table[pos >> LLM_KV_BLOCK_SHIFT])[pos & (LLM_KV_BLOCK - 1)] = tokens[j];
        if ((pos & (LLM_KV_BLOCK - 1)) == LLM_KV_BLOCK - 1) {
            /* a block filled: its content is now addressable by its prefix */
            i = pos >> LLM_KV_BLOCK_SHIFT;
            q->chain[i] = llm_kv_chain(llm_kv_parent(q, i), llm_kv_tokens(rt->kv, q->table[i]));
            llm_kv_publish(rt->kv, q->table[i], llm_kv_parent(q, i), LLM_KV_BLOCK);
            if (rt->disk) llm_kv_tier_queue_block(rt, q->table[i], llm_kv_parent(q, i), LLM_KV_BLOCK);
        }
    }
    q->len += n;
}
