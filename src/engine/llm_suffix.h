/*
 * A worker's memory of recent requests for speculative decoding: a suffix
 * automaton over their tokens (prompts and outputs, each stream closed by a
 * separator), so the longest suffix of a sequence's output that occurred in
 * any recent request is found in time linear in the suffix, and the tokens
 * that followed it are proposed.  Agents send the same tool results, files
 * and system prompts request after request.
 *
 * Bounded: it holds at most max_tokens tokens; when full it is rebuilt from
 * the newer half.  One per model and worker; event loop only.
 */
#ifndef LLM_SUFFIX_H
#define LLM_SUFFIX_H

#include <stddef.h>
#include <stdint.h>

typedef struct llm_suffix llm_suffix;

/* NULL when out of memory; max_tokens >= 16 */
llm_suffix *llm_suffix_create(size_t max_tokens);
void llm_suffix_free(llm_suffix *sx);
/* The bytes llm_suffix_create(max_tokens) allocates. */
size_t llm_suffix_memory(size_t max_tokens);

/* Appends one token stream (a request's prompt and output); longer streams keep their tail. */
void llm_suffix_add(llm_suffix *sx, const int32_t *t, size_t n);
size_t llm_suffix_tokens(const llm_suffix *sx);

/*
 * The longest suffix of t[0..n) (at most n_max tokens of it are looked at)
 * that occurs in the store, when at least n_min long: up to k tokens that
 * followed it into out, their number returned, the match length in *match.
 */
int llm_suffix_propose(const llm_suffix *sx, const int32_t *t, size_t n,
    int n_min, int n_max, int32_t *out, int k, int *match);

#endif
