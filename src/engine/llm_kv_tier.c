/*
 * The runtime's side of the disk tier of the prefix cache (llm_kv_disk.h is
 * the file format): which blocks go to disk and when, and reading a prefix
 * back into the pool.
 *
 * A block is queued for writing when it fills (a running sequence's blocks
 * reach the disk while it runs) and, with its partial last block, when its
 * slot closes (the sequence ended or was preempted: its blocks are idle from
 * then on and may be evicted at any time), unless a file holds it already.
 * Queueing takes no reference, so a queued block stays evictable: when it is
 * written, it must still be indexed as the block after the queued prefix (a
 * block the pool gave to other content since is skipped; its content is
 * gone).  Indexed blocks are read-only, so what is written is exactly what
 * the sequence computed.  Reading a prefix back takes its whole blocks, then
 * the longest head of a partial one (the memory tier's may be shorter).
 * Writing and reading are blocking file I/O: the scheduler calls both from
 * its step thread, never from the event loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/llm_runtime_impl.h"

static double
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
llm_runtime_kv_disk_open(llm_runtime *rt, const char *dir, uint64_t max_size, char *err,
    size_t errlen)
{
    const llm_model_info *in = &rt->m->info;
    int n_blocks = llm_kv_pool_blocks(rt->kv);
    llm_kv_disk_shape shape;

    if (rt->disk) return 0;
    if (rt->state) {
        /* a prefix of such a model is its blocks and a state snapshot, which are not kept on disk */
        snprintf(err, errlen, "the model has recurrent state, whose snapshots are not kept on disk");
        return -1;
    }
    /* the weights and the KV element type: f32, f16 and q8_0 blocks are different files */
    shape.fingerprint = llm_model_fingerprint(rt->m)
                        ^ (rt->kv_wt == LLM_WT_F16 ? 0x6631366b76ULL : rt->kv_wt == LLM_WT_Q8_0 ? 0x71385f306b76ULL : 0);
    shape.row_bytes = (int) llm_kv_bytes(rt, (size_t) rt->kv_dim);
    shape.n_layers = in->n_layers;
    shape.kv_dim = rt->kv_dim;
    rt->on_disk = calloc((size_t) n_blocks, 1);
    rt->disk_seen = calloc((size_t) n_blocks, 1);
    rt->persist = calloc((size_t) n_blocks, sizeof(*rt->persist));
    if (rt->on_disk == NULL || rt->disk_seen == NULL || rt->persist == NULL) {
        snprintf(err, errlen, "out of memory for the disk tier's %d blocks", n_blocks);
        goto failed;
    }
    rt->disk = llm_kv_disk_open(dir, max_size, &shape, err, errlen);
    if (rt->disk == NULL) goto failed;
    return 0;

failed:
    free(rt->on_disk);
    free(rt->disk_seen);
    free(rt->persist);
    rt->on_disk = NULL;
    rt->disk_seen = NULL;
    rt->persist = NULL;
    return -1;
}

int
llm_runtime_kv_disk_stats(const llm_runtime *rt, llm_kv_disk_stats *st)
{
    if (rt->disk == NULL) {
        memset(st, 0, sizeof(*st));
        return -1;
    }
    llm_kv_disk_get_stats(rt->disk, st);
    return 0;
}

void
llm_kv_tier_queue_block(llm_runtime *rt, int b, uint64_t parent, int n)
{
    int n_blocks = llm_kv_pool_blocks(rt->kv);

    if (rt->on_disk[b] != LLM_KV_DISK_NONE) return;
    if (rt->n_persist == n_blocks) return;    /* stale entries fill it: this one waits */
    rt->persist[(rt->persist_head + rt->n_persist++) % n_blocks] = (llm_kv_persist) { b, n, parent };
    rt->on_disk[b] = LLM_KV_DISK_QUEUED;
}

void
llm_kv_tier_used(llm_runtime *rt, int b, uint64_t parent)
{
    if (rt->on_disk[b] != LLM_KV_DISK_STORED || rt->disk_seen[b] == rt->disk_minute) return;
    /* written again: its file is there, so the writer only touches it */
    rt->on_disk[b] = LLM_KV_DISK_NONE;
    llm_kv_tier_queue_block(rt, b, parent, LLM_KV_BLOCK);
}

void
llm_kv_tier_queue(llm_runtime *rt, const llm_kv_seq *q)
{
    int i;

    for (i = 0; i < (q->len >> LLM_KV_BLOCK_SHIFT) && i < q->n_blocks; i++) {
        llm_kv_tier_queue_block(rt, q->table[i], llm_kv_parent(q, i), LLM_KV_BLOCK);
    }
}

int
llm_runtime_kv_persist_pending(const llm_runtime *rt)
{
    return rt->disk ? rt->n_persist : 0;
}

int
llm_runtime_kv_persist(llm_runtime *rt, double ms, char *err, size_t errlen)
{
    int n_blocks = llm_kv_pool_blocks(rt->kv), b, common;
    double until = now_ms() + ms;
    llm_kv_persist e;
    int32_t *tokens;

    if (rt->disk == NULL) return 0;
    while (rt->n_persist > 0) {
        e = rt->persist[rt->persist_head];
        rt->persist_head = (rt->persist_head + 1) % n_blocks;
        rt->n_persist--;
        b = e.block;
        if (rt->on_disk[b] != LLM_KV_DISK_QUEUED) continue;
        tokens = llm_kv_tokens(rt->kv, b);
        if (llm_kv_lookup(rt->kv, e.parent, tokens, e.n, &common) != b || common != e.n) {
            rt->on_disk[b] = LLM_KV_DISK_NONE;    /* evicted before it was written */
            continue;
        }
        if (llm_kv_disk_write(rt->disk, e.parent, tokens, e.n, llm_kv_block_data(rt, rt->k_cache, b),
                              llm_kv_block_data(rt, rt->v_cache, b), err, errlen) != 0)
        {
            /* the directory is unusable (full, removed): the rest is dropped, tried again later */
            rt->on_disk[b] = LLM_KV_DISK_NONE;
            while (rt->n_persist > 0) {
                b = rt->persist[rt->persist_head].block;
                if (rt->on_disk[b] == LLM_KV_DISK_QUEUED) rt->on_disk[b] = LLM_KV_DISK_NONE;
                rt->persist_head = (rt->persist_head + 1) % n_blocks;
                rt->n_persist--;
            }
            return -1;
        }
        rt->on_disk[b] = LLM_KV_DISK_STORED;
        rt->disk_seen[b] = rt->disk_minute;
        if (ms >= 0 && now_ms() >= until) break;
    }
    return rt->n_persist;
}

/* The full block after parent holding tokens[0..LLM_KV_BLOCK), referenced: one
 * another sequence of this step read first, else its file.  -1: none (why
 * says when a file was not trusted). */
static int
restore_full(llm_runtime *rt, uint64_t parent, const int32_t *tokens, char *why, size_t whylen)
{
    int b, common;

    b = llm_kv_lookup(rt->kv, parent, tokens, LLM_KV_BLOCK, &common);
    if (b >= 0 && common == LLM_KV_BLOCK) {
        llm_kv_ref(rt->kv, b);
        return b;
    }
    /* a block is taken (maybe evicting a cached one) only for a file that is there */
    if (!llm_kv_disk_has(rt->disk, parent, tokens) || (b = llm_kv_take(rt)) < 0) return -1;
    if (llm_kv_disk_read(rt->disk, parent, tokens, llm_kv_block_data(rt, rt->k_cache, b),
                         llm_kv_block_data(rt, rt->v_cache, b), why, whylen) != 1)
    {
        llm_kv_unref(rt->kv, b);    /* not indexed: free again */
        return -1;
    }
    memcpy(llm_kv_tokens(rt->kv, b), tokens, LLM_KV_BLOCK * sizeof(int32_t));
    llm_kv_publish(rt->kv, b, parent, LLM_KV_BLOCK);
    rt->on_disk[b] = LLM_KV_DISK_STORED;
    rt->disk_seen[b] = rt->disk_minute;    /* the read touched it */
    return b;
}

/* The block after parent sharing the longest head (more than `held`
 * positions) with tokens[0..n), referenced, its head's length in *common: a
 * partial block's file, or one another sequence of this step read first. */
static int
restore_head(llm_runtime *rt, uint64_t parent, const int32_t *tokens, int n, int held,
    int *common, char *why, size_t whylen)
{
    int32_t file_tokens[LLM_KV_BLOCK];
    int best = -1, c, b, n_file;

    *common = held;
    b = llm_kv_lookup(rt->kv, parent, tokens, n, &c);
    if (b >= 0 && c > *common) {
        llm_kv_ref(rt->kv, b);
        best = b;
        *common = c;
    }
    if (!llm_kv_disk_has(rt->disk, parent, NULL) || (b = llm_kv_take(rt)) < 0) return best;
    c = llm_kv_disk_read_head(rt->disk, parent, tokens, n, file_tokens, &n_file,
                              llm_kv_block_data(rt, rt->k_cache, b),
                              llm_kv_block_data(rt, rt->v_cache, b), why, whylen);
    if (c <= *common) {
        llm_kv_unref(rt->kv, b);
        return best;
    }
    memcpy(llm_kv_tokens(rt->kv, b), file_tokens, (size_t) n_file * sizeof(int32_t));
    llm_kv_publish(rt->kv, b, parent, n_file);
    rt->on_disk[b] = LLM_KV_DISK_STORED;
    rt->disk_seen[b] = rt->disk_minute;
    if (best >= 0) llm_kv_unref(rt->kv, best);
    *common = c;
    return b;
}

int
llm_seq_restore(llm_runtime *rt, int slot, const int32_t *tokens, int n, char *why, size_t whylen)
{
    llm_kv_seq *q;
    uint64_t parent;
    int i, b, held, start, left, common;

    if (whylen) why[0] = '\0';
    if (slot < 0 || slot >= rt->n_seq_max || !rt->seqs[slot].used) return -1;
    q = &rt->seqs[slot];
    if (n > rt->n_ctx) n = rt->n_ctx;
    if (rt->disk == NULL) return q->len;
    for (;;) {
        /* block i: the slot holds `held` of its positions (a head that the
         * memory tier had), its table ends there as llm_seq_reuse left it */
        i = q->len >> LLM_KV_BLOCK_SHIFT;
        held = q->len & (LLM_KV_BLOCK - 1);
        start = q->len - held;
        left = n - start;
        if (left <= held || q->n_blocks != i + (held > 0)) break;
        parent = llm_kv_parent(q, i);
        b = -1;
        if (left >= LLM_KV_BLOCK) {
            b = restore_full(rt, parent, tokens + start, why, whylen);
            if (b < 0 && why[0]) break;    /* a file not trusted: what follows is computed */
            common = LLM_KV_BLOCK;
        }
        if (b < 0) {
            b = restore_head(rt, parent, tokens + start, left < LLM_KV_BLOCK ? left : LLM_KV_BLOCK,
                             held, &common, why, whylen);
            if (b < 0) break;
        }
        if (held) {
            llm_kv_unref(rt->kv, q->table[i]);    /* the shorter head it replaces */
        } else {
            q->n_blocks++;
        }
        q->table[i] = b;
        q->len = start + common;
        if (common < LLM_KV_BLOCK) break;    /* a head: the slot writes after it */
        q->chain[i] = llm_kv_chain(parent, tokens + start);
    }
    return q->len;
}

void
llm_kv_tier_free(llm_runtime *rt)
{
    char err[256];

    if (rt->disk == NULL) return;
    /* everything queued (llm_runtime_free closed the slots first): a reload finds it */
    (void) llm_runtime_kv_persist(rt, -1, err, sizeof(err));
    llm_kv_disk_close(rt->disk);
    free(rt->on_disk);
    free(rt->disk_seen);
    free(rt->persist);
    rt->disk = NULL;
}
