/*
 * Snapshots of recurrent state (the conv tails of LFM2's short-convolution
 * blocks; any layer whose state after a prefix cannot be rebuilt from the KV
 * cache): a fixed number of entries, each the whole state of one sequence
 * after some prefix of tokens.  KV blocks can be shared at any block
 * boundary, recurrent state cannot be truncated, so the prefix cache of a
 * model with such layers reuses a prompt head only up to a prefix whose
 * state was snapshotted.
 *
 * An entry is keyed like a KV block (llm_kv.h): the chain hash of the full
 * blocks before its last partial block (LLM_KV_ROOT for none), the length,
 * and the tokens of that partial block, compared, never trusted to a hash.
 * Full: the least recently made or taken entry is replaced.  The
 * bookkeeping and the copies only; the runtime decides when to snapshot.
 */
#ifndef LLM_STATE_H
#define LLM_STATE_H

#include <stddef.h>
#include <stdint.h>

/* Snapshots a runtime keeps per sequence slot. */
#define LLM_STATE_SNAPS_PER_SLOT 4

typedef struct llm_state_snaps llm_state_snaps;

/* What a store holds and has done (/health "state_snapshots", /metrics llm_state_snapshots_*). */
typedef struct {
    uint64_t capacity;      /* entries */
    uint64_t held;          /* entries holding a state */
    uint64_t made;          /* states kept (llm_state_snaps_put) */
    uint64_t restored;      /* states given back for a prefix (llm_state_snaps_take that found one) */
} llm_state_stats;

/* What llm_state_snaps_create allocates for n entries of `floats` values. */
size_t llm_state_snaps_bytes(int n, size_t floats);
/* NULL when out of memory; every page written once (committed, as the runtime's buffers). */
llm_state_snaps *llm_state_snaps_create(int n, size_t floats);
void llm_state_snaps_free(llm_state_snaps *s);
/* Entries, those holding a state, states kept and restored since creation (all 0 for NULL). */
void llm_state_snaps_get_stats(const llm_state_snaps *s, llm_state_stats *st);

/*
 * Keeps state as the state after the len (> 0) tokens whose full blocks
 * chain to `parent` and whose last len % LLM_KV_BLOCK tokens are tail: in
 * the entry of the same key, else the least recently used one.
 */
void llm_state_snaps_put(llm_state_snaps *s, uint64_t parent, int len, const int32_t *tail,
    const float *state);

/*
 * The longest entry that is a prefix of a sequence of at most max_len
 * tokens: chain[i] is the chain hash through its block i (for the full
 * blocks of the first max_len tokens), tokens its tokens.  Copies its state
 * into dst and returns its length (the entry counts as used); 0 (dst
 * untouched) when none is.
 */
int llm_state_snaps_take(llm_state_snaps *s, const uint64_t *chain, const int32_t *tokens, int max_len,
    float *dst);

#endif
