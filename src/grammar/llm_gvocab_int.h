/* Layout of llm_gvocab, shared by the trie builder and the mask walk. */
#ifndef LLM_GVOCAB_INT_H
#define LLM_GVOCAB_INT_H

#include <stdint.h>

#include "grammar/llm_grammar_int.h"

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
};

#define LLM_GVOCAB_LONG 24

#endif
