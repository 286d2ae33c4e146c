/* Internal layout of a runtime: KV cache, slots, scratch; shared by runtime and forward pass. */
#ifndef LLM_RUNTIME_IMPL_H
#define LLM_RUNTIME_IMPL_H

#include "engine/llm_attention.h"
#include "engine/llm_engine.h"
#include "engine/llm_kv.h"
#include "engine/llm_kv_disk.h"
#include "engine/llm_mla.h"
#include "engine/llm_model_impl.h"
#include "engine/llm_moe.h"
#include "engine/llm_pool.h"
#include "engine/llm_state.h"
#include "kernels/cpu/llm_kernels.h"
#include "kernels/cpu/llm_quant.h"

/* Tokens per internal pass of the forward: bounds the scratch buffers. */
#define LLM_CHUNK 256

/* Room for one item's error message of the last forward. */
#define LLM_ITEM_ERRLEN 128

/* A block to be written to the disk tier: it holds the n positions after
 * prefix `parent` while the prefix index says so. */
typedef struct {
    int32_t            block;
    int32_t            n;
    uint64_t           parent;
} llm_kv_persist;

/* on_disk states; a block's state starts over when it gets new content */
#define LLM_KV_DISK_NONE    0
#define LLM_KV_DISK_QUEUED  1
#define LLM_KV_DISK_STORED  2

/* One sequence slot's view of the KV memory. */
typedef struct {
    int32_t           *table;       /* [max_blocks] block ids in position order */
    uint64_t          *chain;       /* [max_blocks] chain hash through each full block */
    int                n_blocks;    /* entries held (one reference each); may exceed len */
    int                len;         /* positions whose keys and values are stored */
    unsigned char      used;
} llm_kv_seq;

struct llm_runtime {
    const llm_model   *m;
    const llm_kernels *k;
    llm_pool          *pool;
    int                pool_borrowed;  /* the pool of llm_runtime_opts.threads_of */
    int                n_threads;
    int                n_ctx;
    int                n_seq_max;
    int                kv_dim;
    int                q_dim;

    /* KV memory: blocks of LLM_KV_BLOCK positions, [block][layer][position][kv_dim]
     * of float, float16 or Q8_0 blocks of 32; sequences read and write them through
     * their tables.  Positions are addressed as element indexes (llm_kv_index),
     * turned into bytes by llm_kv_bytes. */
    void              *k_cache;
    void              *v_cache;      /* k_cache itself for latent attention (llm_mla.h): values in the keys */
    llm_wtype          kv_wt;        /* LLM_WT_F32, LLM_WT_F16 or LLM_WT_Q8_0 */
    size_t             kv_bytes;
    size_t             block_elems;  /* elements of one block: n_layers * LLM_KV_BLOCK * kv_dim */
    llm_kv_pool       *kv;
    int                max_blocks;   /* a table's entries: n_ctx in blocks */
    llm_kv_seq        *seqs;         /* [n_seq_max] */

    /* recurrent state (llm_state.c): each slot's, [n_seq_max][m->state_floats], zero at
     * position 0, and snapshots of states at reusable prefixes; NULL for attention-only models */
    float             *state;
    llm_state_snaps   *snaps;
    size_t             state_bytes;  /* both: what comes out of the KV budget */

    /* the disk tier of the prefix cache (llm_kv_tier.c), NULL without one */
    llm_kv_disk       *disk;
    unsigned char     *on_disk;      /* [blocks] LLM_KV_DISK_*: where the block's content is */
    unsigned char     *disk_seen;    /* [blocks] disk_minute when its file was last written,
                                        read or touched */
    unsigned char      disk_minute;  /* llm_runtime_kv_set_now's clock: minutes, modulo 256 */
    llm_kv_persist    *persist;      /* [blocks] a ring of full blocks to write */
    int                persist_head, n_persist;

    float             *rope_cos[LLM_MAX_ROPE];   /* per table [n_ctx][rot_dim/2], attention scale folded in */
    float             *rope_sin[LLM_MAX_ROPE];

    /* per chunk */
    int32_t           *tok;
    int               *tslot, *tpos;
    float             *x, *xn, *q, *kn, *vn, *att, *gate, *up;
    float             *conv;        /* short-convolution blocks: [LLM_CHUNK][3 * hidden] */
    float             *dn;          /* Gated DeltaNet blocks: [LLM_CHUNK][llm_deltanet_row_floats] */
    float             *dn_w;        /* [n_threads][llm_deltanet_thread_floats]: the chunked delta rule's */
    float             *qg;          /* gated attention (llm_model.attn_gate): q_proj's [LLM_CHUNK][2 * q_dim] */
    float             *mla;         /* latent attention (llm_mla.h): [LLM_CHUNK][mla_row] */
    size_t             mla_row;
    float             *mla_w;       /* [n_threads][mla_wf]: a kv_b_proj head widened per thread */
    size_t             mla_wf;
    llm_att_scratch   *attn;        /* tiles, work items, per-thread and split-K states */
    llm_moe_scratch   *moe;         /* sparse MLP layers' buffers, NULL without experts */
    unsigned char     *xq;          /* int8 activation rows of a quantized matmul's input */
    size_t             ldq;         /* bytes between them (llm_qa_row_bytes of the widest input) */

    /* results of the last forward */
    int                logit_rows;  /* n_seq_max + LLM_VERIFY_ROWS */
    float             *rows;        /* [logit_rows][hidden] final-normed rows for logits */
    float             *logits;      /* [logit_rows][n_vocab] */
    float             *emb;         /* [n_seq_max][hidden] */
    int               *logit_row;   /* per item: its first logit row, -1 */
    int               *n_logit;     /* per item: its logit rows */
    int               *emb_row;     /* per item, -1 */
    char              *item_err;    /* [n_seq_max][LLM_ITEM_ERRLEN], "" = the item ran */
    int                n_items;

    llm_phase_times   *phases;      /* llm_runtime_time_phases, NULL: not timed */
};

/* element index of (a layer's slab, llm_layer.kv; position) of a slot in a cache; the position's block is held */
static inline size_t
llm_kv_index(const llm_runtime *rt, int kv, int slot, int pos)
{
    size_t b = (size_t) rt->seqs[slot].table[pos >> LLM_KV_BLOCK_SHIFT];

    return b * rt->block_elems
           + ((size_t) kv * LLM_KV_BLOCK + (pos & (LLM_KV_BLOCK - 1))) * rt->kv_dim;
}

/* Bytes of n elements of the cache from an element index on: n and the index are
 * multiples of 32 for Q8_0 (every index llm_kv_index and the head offsets give is). */
static inline size_t
llm_kv_bytes(const llm_runtime *rt, size_t n)
{
    return rt->kv_wt == LLM_WT_Q8_0 ? n / 32 * sizeof(llm_block_q8_0)
           : n * (rt->kv_wt == LLM_WT_F16 ? 2 : sizeof(float));
}

/* A block for new content (llm_kv_alloc), not on disk as far as anyone knows. */
static inline int
llm_kv_take(llm_runtime *rt)
{
    int b = llm_kv_alloc(rt->kv);

    if (b >= 0 && rt->on_disk) rt->on_disk[b] = LLM_KV_DISK_NONE;
    return b;
}

/* The keys (or values) of block b: llm_kv_disk_half_bytes of them. */
static inline void *
llm_kv_block_data(const llm_runtime *rt, void *cache, int b)
{
    return (char *) cache + llm_kv_bytes(rt, (size_t) b * rt->block_elems);
}

/* Parent key of a slot's block i: the chain hash of the block before it. */
static inline uint64_t
llm_kv_parent(const llm_kv_seq *q, int i)
{
    return i == 0 ? LLM_KV_ROOT : q->chain[i - 1];
}

/*
 * A block holding n positions after prefix `parent`, indexed (so read-only: a
 * writer copies it first) and not on disk yet, joins the write queue: a full
 * one as soon as it fills (llm_kv_seq_commit), so a long prompt's blocks
 * reach the disk while its sequence still runs; a partial one when its
 * sequence ends (llm_seq_close).
 */
void llm_kv_tier_queue_block(llm_runtime *rt, int b, uint64_t parent, int n);
/*
 * A whole block the prefix cache served (llm_seq_reuse) after prefix
 * `parent`: its file, if it has one, is touched (once a minute at most, in
 * the write queue's turn), so that the size sweep, which sees only the files'
 * times, keeps the blocks memory keeps using (a shared system prompt's blocks
 * are written once and then only hit in memory).
 */
void llm_kv_tier_used(llm_runtime *rt, int b, uint64_t parent);
/* A closing slot's full blocks that no file holds yet (those that filled before the tier saw them). */
void llm_kv_tier_queue(llm_runtime *rt, const llm_kv_seq *q);
/* At llm_runtime_free, after its slots are closed: the queue written, the tier closed. */
void llm_kv_tier_free(llm_runtime *rt);

/*
 * Before a forward appends n positions to a slot: blocks for them, and the
 * block being continued copied first when it is shared or indexed.  0, or
 * -1 with msg when the KV memory has no room (the blocks it got stay held
 * by the slot, unused).
 */
int llm_kv_seq_reserve(llm_runtime *rt, int slot, int n, char *msg, size_t len);
/* After it: the n tokens are stored; blocks they filled join the prefix index. */
void llm_kv_seq_commit(llm_runtime *rt, int slot, const int32_t *tokens, int n);

#endif
