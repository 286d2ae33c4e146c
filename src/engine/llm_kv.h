/*
 * KV memory as a pool of fixed-size blocks with a content-addressed cache:
 * the bookkeeping only (which block holds which tokens, who uses it, which
 * may be evicted); the runtime owns the K/V arrays the block ids index.
 * No model math, no threads: one caller at a time.
 *
 * A block holds the keys and values of LLM_KV_BLOCK consecutive positions of
 * one sequence.  A sequence holds a table of block ids and one reference on
 * each.  A block is in one of three states:
 *
 *   free     no reference, no content worth keeping;
 *   used     referenced by one or more sequences;
 *   cached   no reference, but indexed: its content stays until the pool
 *            needs the block for something else (least recently released
 *            first).  A cached block whose retention runs (llm_kv_pin:
 *            Anthropic cache_control TTLs) is pinned: evicted only when no
 *            other free or cached block is left.  At most half the pool is
 *            pinned; retention beyond that is not kept (it is a hint).
 *
 * The index is keyed by the hash of everything before a block (its parent
 * chain hash, as vLLM's prefix caching does): the children of one prefix
 * are found together, each with its own tokens, so a new sequence reuses
 * every whole block its prompt shares with any earlier sequence and the
 * longest common head of a partial one.  A full block's own chain hash is
 * the parent key of the block after it.  Lookups compare tokens, never
 * trust a hash alone within a block.  An indexed block is read-only: a
 * sequence that must write into one copies it first (copy-on-write).
 */
#ifndef LLM_KV_H
#define LLM_KV_H

#include <stddef.h>
#include <stdint.h>

/* Positions per block (a power of two). */
#define LLM_KV_BLOCK        16
#define LLM_KV_BLOCK_SHIFT  4

/* Parent key of a sequence's first block. */
#define LLM_KV_ROOT         0x6c6c6d6b76726f6fULL

typedef struct llm_kv_pool llm_kv_pool;

typedef struct {
    size_t   blocks;        /* all of them */
    size_t   used;          /* referenced by a sequence */
    size_t   cached;        /* unreferenced, content kept */
    size_t   pinned;        /* of those, kept from eviction by their retention */
    size_t   free;          /* neither */
    uint64_t evicted;       /* cached blocks given to new content */
} llm_kv_stats;

llm_kv_pool *llm_kv_pool_create(int n_blocks);
/* What llm_kv_pool_create allocates for n_blocks (the bookkeeping, not the K/V arrays). */
size_t llm_kv_pool_bytes(int n_blocks);
void llm_kv_pool_free(llm_kv_pool *p);
int llm_kv_pool_blocks(const llm_kv_pool *p);
void llm_kv_pool_get_stats(const llm_kv_pool *p, llm_kv_stats *st);
/* Blocks a sequence could get now: free ones plus cached ones not pinned. */
int llm_kv_available(const llm_kv_pool *p);

/*
 * A block with one reference and no content: a free one, else the least
 * recently released cached one (evicted from the index).  -1 when every
 * block is in use.  A used block is never taken.
 */
int llm_kv_alloc(llm_kv_pool *p);
void llm_kv_ref(llm_kv_pool *p, int b);     /* a cached block becomes used */
void llm_kv_unref(llm_kv_pool *p, int b);   /* the last one: cached if indexed, else free */
int llm_kv_refs(const llm_kv_pool *p, int b);
/* 1 when the block is shared or indexed: a writer must copy it first. */
int llm_kv_readonly(const llm_kv_pool *p, int b);

/* The LLM_KV_BLOCK token ids whose keys and values the block holds. */
int32_t *llm_kv_tokens(llm_kv_pool *p, int b);

/* Chain hash of a block: its parent's key and its LLM_KV_BLOCK tokens. */
uint64_t llm_kv_chain(uint64_t parent, const int32_t *tokens);

/*
 * Indexes a block holding n (1..LLM_KV_BLOCK) tokens after the prefix whose
 * chain hash is parent.  Full blocks are published when they fill, partial
 * ones when their sequence ends.  A block whose content an indexed sibling
 * already holds (same parent, its tokens a head of the sibling's) is not
 * indexed; a cached partial sibling the new block extends is dropped.
 */
void llm_kv_publish(llm_kv_pool *p, int b, uint64_t parent, int n);

/*
 * The indexed child of parent sharing the longest head with tokens[0..n):
 * its id (-1 if none shares a token) and the length in *common (at most n
 * and at most the tokens the block holds).
 */
int llm_kv_lookup(const llm_kv_pool *p, uint64_t parent, const int32_t *tokens,
    int n, int *common);

/*
 * Retention: the block is kept from eviction until `until` (the pool's
 * clock, llm_kv_set_now), once it is cached.  A later time extends it.
 */
void llm_kv_pin(llm_kv_pool *p, int b, double until);
/* The pool's clock (seconds, any origin): pins that ran out become evictable. */
void llm_kv_set_now(llm_kv_pool *p, double now);

#endif
