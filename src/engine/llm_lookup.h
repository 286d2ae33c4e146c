/*
 * Prompt lookup, a draft-free proposer for speculative decoding: the output
 * of agent and coding requests repeats what the request holds (a file being
 * edited, tool arguments copied from the user's message), so the tokens that
 * followed the latest earlier occurrence of the sequence's last few tokens
 * are a good guess of what comes next.
 */
#ifndef LLM_LOOKUP_H
#define LLM_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

/* A sequence's tokens as two pieces: its prompt, then its output. */
typedef struct {
    const int32_t *a;
    size_t         na;
    const int32_t *b;
    size_t         nb;
} llm_tokens2;

/*
 * The longest n in [n_min, n_max] for which the last n tokens of t occur
 * earlier in t (the latest such occurrence on ties); writes the k tokens
 * that followed it into out (where those run past the end of t, the ones
 * this proposal put there: a repeating tail goes on repeating) and returns
 * k, or 0 when nothing matches, with the match length in *match.
 */
int llm_lookup_propose(const llm_tokens2 *t, int n_min, int n_max,
    int32_t *out, int k, int *match);

#endif
