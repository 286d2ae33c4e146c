/*
 * The runtime's side of the disk tier of the prefix cache (llm_kv_disk.h is
 * the file format): which blocks go to disk and when, and reading a prefix
 * back into the pool.
 *
 * A slot's full blocks are queued for writing when the slot closes (its
 * sequence ended or was preempted: the blocks are idle from then on and may
 * be evicted at any time), unless a file holds them already.  Queueing takes
 * no reference, so a queued block stays evictable: when it is written, it
 * must still be indexed as the block after the queued prefix (a block the
 * pool gave to other content since is skipped; its content is gone).
 * Indexed blocks are read-only, so what is written is exactly what the
 * sequence computed.  Writing and reading are blocking file I/O: the
 * scheduler calls both from its step thread, never from the event loop.
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
    rt->persist = calloc((size_t) n_blocks, sizeof(*rt->persist));
    if (rt->on_disk == NULL || rt->persist == NULL) {
        snprintf(err, errlen, "out of memory for the disk tier's %d blocks", n_blocks);
        goto failed;
    }
    rt->disk = llm_kv_disk_open(dir, max_size, &shape, err, errlen);
    if (rt->disk == NULL) goto failed;
    return 0;

failed:
    free(rt->on_disk);
    free(rt->persist);
    rt->on_disk = NULL;
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
llm_kv_tier_queue_block(llm_runtime *rt, int b, uint64_t parent)
{
    int n_blocks = llm_kv_pool_blocks(rt->kv);

    if (rt->on_disk[b] != LLM_KV_DISK_NONE) return;
    if (rt->n_persist == n_blocks) return;    /* stale entries fill it: this one waits */
    rt->persist[(rt->persist_head + rt->n_persist++) % n_blocks] = (llm_kv_persist) { b, parent };
    rt->on_disk[b] = LLM_KV_DISK_QUEUED;
}

void
llm_kv_tier_queue(llm_runtime *rt, const llm_kv_seq *q)
{
    int i;

    for (i = 0; i < (q->len >> LLM_KV_BLOCK_SHIFT) && i < q->n_blocks; i++) {
        llm_kv_tier_queue_block(rt, q->table[i], llm_kv_parent(q, i));
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
        if (llm_kv_lookup(rt->kv, e.parent, tokens, LLM_KV_BLOCK, &common) != b
            || common != LLM_KV_BLOCK)
        {
            rt->on_disk[b] = LLM_KV_DISK_NONE;    /* evicted before it was written */
            continue;
        }
        if (llm_kv_disk_write(rt->disk, e.parent, tokens, llm_kv_block_data(rt, rt->k_cache, b),
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
        if (ms >= 0 && now_ms() >= until) break;
    }
    return rt->n_persist;
}

int
llm_seq_restore(llm_runtime *rt, int slot, const int32_t *tokens, int n, char *why, size_t whylen)
{
    llm_kv_seq *q;
    uint64_t parent;
    int i, b, common, rc;

    if (whylen) why[0] = '\0';
    if (slot < 0 || slot >= rt->n_seq_max || !rt->seqs[slot].used) return -1;
    q = &rt->seqs[slot];
    if (n > rt->n_ctx) n = rt->n_ctx;
    if (rt->disk == NULL) return q->len;
    while ((q->len & (LLM_KV_BLOCK - 1)) == 0 && q->len + LLM_KV_BLOCK <= n
           && q->n_blocks == (q->len >> LLM_KV_BLOCK_SHIFT))
    {
        i = q->len >> LLM_KV_BLOCK_SHIFT;
        parent = llm_kv_parent(q, i);
        b = llm_kv_lookup(rt->kv, parent, tokens + q->len, LLM_KV_BLOCK, &common);
        if (b >= 0 && common == LLM_KV_BLOCK) {
            /* another sequence of this step read it from disk first */
            llm_kv_ref(rt->kv, b);
        } else {
            b = llm_kv_take(rt);
            if (b < 0) break;
            rc = llm_kv_disk_read(rt->disk, parent, tokens + q->len,
                                  llm_kv_block_data(rt, rt->k_cache, b),
                                  llm_kv_block_data(rt, rt->v_cache, b), why, whylen);
            if (rc != 1) {
                llm_kv_unref(rt->kv, b);    /* not indexed: free again */
                break;
            }
            memcpy(llm_kv_tokens(rt->kv, b), tokens + q->len, LLM_KV_BLOCK * sizeof(int32_t));
            llm_kv_publish(rt->kv, b, parent, LLM_KV_BLOCK);
            rt->on_disk[b] = LLM_KV_DISK_STORED;
        }
        q->table[q->n_blocks++] = b;
        q->chain[i] = llm_kv_chain(parent, tokens + q->len);
        q->len += LLM_KV_BLOCK;
    }
    return q->len;
}

void
llm_kv_tier_free(llm_runtime *rt)
{
    char err[256];
    int i;

    if (rt->disk == NULL) return;
    /* what the slots still hold, then everything queued: a reload finds it */
    for (i = 0; i < rt->n_seq_max; i++) {
        if (rt->seqs[i].used) llm_kv_tier_queue(rt, &rt->seqs[i]);
    }
    (void) llm_runtime_kv_persist(rt, -1, err, sizeof(err));
    llm_kv_disk_close(rt->disk);
    free(rt->on_disk);
    free(rt->persist);
    rt->disk = NULL;
}
