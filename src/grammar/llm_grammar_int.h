/* Internal layout of a built grammar, shared by the files of src/grammar. */
#ifndef LLM_GRAMMAR_INT_H
#define LLM_GRAMMAR_INT_H

#include <stdint.h>

#include "grammar/llm_grammar.h"

/*
 * A rule body is its alternatives back to back, separated by ALT and closed
 * by END; within an alternative each element is one byte from a class or a
 * reference to a rule.  A position is an index into el[].
 */
enum { LLM_GE_END = 0, LLM_GE_ALT, LLM_GE_RULE, LLM_GE_CLASS };

typedef struct {
    int32_t type;
    int32_t val;          /* rule id or class id */
} llm_gelem;

struct llm_grammar {
    llm_gelem  *el;
    size_t      n_el;
    uint32_t   *rule_start;    /* by rule id (twins included): first element of its body */
    char      **names;
    size_t      n_rules;       /* rules of the grammar; twins follow them */
    /*
     * Counted repetitions: `item{0,k}` is a chain of rules opt_k ::= item
     * opt_(k-1) | (empty).  rep_count[r] is k for such a rule (k >= 2; 0
     * otherwise) and rep_twin[r] its twin, item* (twin ::= item twin |
     * (empty), same layout, used by no rule): for a byte string of at most
     * k bytes, a stack in opt_k behaves as the same stack in the twin (a
     * non-nullable item takes a byte at least), which lets the matcher share
     * one vocabulary walk among all counts (llm_gmatch.c).  -1: no twin
     * (the item is nullable).  Both arrays are indexed by rule id.
     */
    int32_t    *rep_count, *rep_twin;
    uint8_t   (*cls)[32];      /* byte sets */
    size_t      n_cls;
    int         root;
};

static inline int
llm_gelem_ends(const llm_gelem *e)
{
    return e->type == LLM_GE_END || e->type == LLM_GE_ALT;
}

static inline int
llm_gset_has(const uint8_t set[32], unsigned b)
{
    return (set[b >> 3] >> (b & 7)) & 1;
}

static inline void
llm_gset_add(uint8_t set[32], unsigned b)
{
    set[b >> 3] |= (uint8_t) (1u << (b & 7));
}

/* Elements in a sequence under construction; move its elements from `from`
 * on into a new rule (a lone rule reference is returned as is), leaving the
 * sequence cut at `from` -- for quantifiers applied to the last item. */
size_t llm_gseq_len(const llm_gseq *s);
int    llm_gseq_take_rule(llm_gbuild *b, llm_gseq *s, size_t from, const char *name);

/* A regular expression as a rule (llm_regex.c); json: emit characters as they
 * are written inside a JSON string literal. */
int llm_gregex_rule(llm_gbuild *b, const char *re, size_t len, int json,
                    char *err, size_t errlen);

/* The schema a local `$ref` ("#", "#/a/b" JSON pointer) names within root,
 * NULL when it names nothing (llm_jref.c). */
const json_t *llm_jschema_ref(const json_t *root, const char *ref);

/* 1 when no JSON text the grammar of schema a writes is valid against b and
 * none of b's is valid against a -- oneOf branches a grammar keeps apart;
 * 0 when that is not proven (llm_jexclusive.c). */
int llm_jschema_exclusive(const json_t *root, const json_t *a, const json_t *b);

/* Set err and return NULL / -1 in the callers (printf-style). */
void llm_gerr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
