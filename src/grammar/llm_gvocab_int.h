/* Layout of llm_gvocab, shared by the trie builder and the mask walk. */
#ifndef LLM_GVOCAB_INT_H
#define LLM_GVOCAB_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/llm_grammar_int.h"

/*
 * A cut stack's verdicts over the vocabulary (llm_gmatch.c): tokens allowed
 * whatever lies below the cut (as a list when few, else a bitset) and tokens
 * whose fate the stack below decides (listed in trie order).  Token ids
 * only, so a walk is a property of the vocabulary and of the grammar text
 * above the cut, not of one grammar: equal texts share one walk.
 */
typedef struct {
    int32_t  *acc;
    uint64_t *acc_bits;
    int32_t  *dep;
    uint32_t  n_acc, n_dep;
    /* a walk through a counted repetition's twin: by_count[k - 1] (bitsets,
     * k < LLM_GVOCAB_LONG) holds the accepted tokens that start at most k
     * items, the same stack's verdict for k items left; NULL when the items
     * cannot be counted on the walk (an ambiguous item) */
    uint64_t *by_count;
    int       shared;        /* owned by the vocabulary's table */
    size_t    bytes;
} llm_gcut;

void llm_gcut_free(llm_gcut *c);

/* One entry of the vocabulary's table of walks, keyed by the canonical
 * text of the cut (see cut_key in llm_gmatch.c) and the bytes the walk let
 * past the cut (the FOLLOW set it was filtered with). */
typedef struct {
    uint64_t  hash;
    int32_t  *key;
    size_t    n_key;
    uint8_t   follow[32];
    llm_gcut *cut;
} llm_gcut_entry;

struct llm_gvocab {
    size_t    n_vocab;
    char     *arena;       /* token bytes */
    uint32_t *off;         /* by id */
    int32_t  *len;         /* by id: > 0 in the trie; -1 unknown; -2 - n excluded (n bytes) */
    /* trie in preorder; node 0 is the root (empty string) */
    size_t    n_nodes;
    size_t    max_depth;
    uint8_t  *byte;
    uint16_t *depth;
    uint32_t *skip;        /* first node after the subtree */
    int32_t  *first_tok;   /* token ending here, -1 none; more via next_tok */
    int32_t  *next_tok;    /* by id */
    /* the tokens longer than LLM_GVOCAB_LONG bytes, in trie order (a mask
     * limited to shorter tokens rechecks these; llm_gmatch.c) */
    int32_t  *long_tok;
    size_t    n_long;
    /* walks shared by every grammar on this vocabulary (any thread) */
    pthread_mutex_t  cut_mu;
    llm_gcut_entry  *cut_tab;
    size_t           cut_cap, cut_n, cut_bytes;
};

/* A shared walk with this key whose FOLLOW set holds follow (a walk
 * filtered with more bytes lists more tokens for the stack below: a
 * superset, which the check from the state sorts out), or NULL. */
llm_gcut *llm_gvocab_cut_find(llm_gvocab *v, uint64_t hash, const int32_t *key, size_t n,
                              const uint8_t follow[32]);
/* Shares c under key and follow (c becomes the table's; the walk already
 * there when another thread shared one first, c then freed).  Returns the
 * walk to use: c itself, unshared, when the table is over its budget. */
llm_gcut *llm_gvocab_cut_put(llm_gvocab *v, uint64_t hash, const int32_t *key, size_t n,
                             const uint8_t follow[32], llm_gcut *c);
/* Every cut stack of the index's states (explored breadth first from the
 * start, at most max_states) that ends over the cut gets its walk in the
 * vocabulary's table (llm_gmatch.c).  Returns the states explored, -1 on
 * failure. */
long llm_gindex_walk_cuts(llm_gindex *x, size_t max_states);

#define LLM_GVOCAB_LONG 24

#endif
