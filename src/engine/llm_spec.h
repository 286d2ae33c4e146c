/*
 * Speculative decoding policy for one sequence: which draft-free proposer
 * guesses its next tokens (prompt lookup over its own prompt and output, or
 * the worker's suffix store of recent requests), and how many tokens to
 * propose, from the acceptance it has seen.  The scheduler verifies the
 * proposal in the sequence's next decode step (llm_sched.c); exactness does
 * not depend on the policy: a draft-free proposal (one token named per
 * position) is kept only when it is what sampling from the model's own
 * logits at that position gives, and a draft model's sampled proposal by
 * llm_spec_verify_token.
 */
#ifndef LLM_SPEC_H
#define LLM_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/llm_ir.h"
#include "engine/llm_engine.h"
#include "engine/llm_lookup.h"
#include "engine/llm_tokenizer.h"
#include "engine/llm_suffix.h"

/*
 * Most tokens proposed in one step: by lookup or the suffix store (a long
 * copied stretch is kept almost whole, so long proposals pay), and by a
 * draft model (each of its tokens costs a draft pass and keeps a
 * distribution over the vocabulary per position).
 */
#define LLM_SPEC_K_MAX        16
#define LLM_SPEC_DRAFT_K_MAX  8

/* the request's and the directive's values (llm_ir.h) */
typedef enum {
    LLM_SPEC_OFF = LLM_SPECULATION_OFF,    /* never */
    LLM_SPEC_AUTO = LLM_SPECULATION_AUTO,  /* when the measured acceptance pays for the verification */
    LLM_SPEC_ON = LLM_SPECULATION_ON       /* whenever a proposer has a guess */
} llm_spec_mode;

typedef enum {
    LLM_PROPOSER_LOOKUP = 0,
    LLM_PROPOSER_SUFFIX,
    LLM_PROPOSER_DRAFT,    /* a small model of the same vocabulary, sampling as the
                              request does (llm_spec_verify_token) */
    LLM_PROPOSERS
} llm_proposer;

typedef struct {
    llm_spec_mode  mode;
    float          acc[LLM_PROPOSERS];  /* moving average of the acceptance per proposed token */
    float          acc_long[LLM_PROPOSERS];  /* the same for proposals from a long match
                                                (LLM_SPEC_MATCH_LONG): copying a stretch */
    int            skip;                /* steps left without proposing (auto: it did not pay) */
    int            backoff;             /* the next skip */
    int            probe;               /* the skip just ended: propose at least one */
    int            proposer;            /* of the proposal in flight, -1 none */
    int            n_proposed;          /* its length */
    int            long_match;          /* it came from a long match */
} llm_spec_state;

void llm_spec_init(llm_spec_state *st, llm_spec_mode mode);

/*
 * Tokens to propose when each is accepted with probability alpha (given
 * the ones before it were) and verifying one costs `cost` decode steps: the
 * k in [0, k_max] that maximises expected tokens per unit of time,
 * (1 + alpha + ... + alpha^k) / (1 + k cost).  0: speculation does not pay.
 */
int llm_spec_best_k(double alpha, double cost, int k_max);

/*
 * A proposal of up to k_max tokens for the sequence whose tokens are t
 * (suffix store may be NULL); cost as for llm_spec_best_k (<= 0: not yet
 * measured).  Returns the number written to out, 0 for none this step.
 * With a draft model (draft_cost >= 0: one draft token in decode steps of
 * the target), when the draft-free proposers have no guess, *draft_k gets
 * how many tokens the draft should propose instead (0: none); the caller
 * corrects st->n_proposed if the draft makes fewer.
 */
int llm_spec_propose(llm_spec_state *st, const llm_tokens2 *t,
    const llm_suffix *sx, double cost, double draft_cost, int k_max,
    int32_t *out, int *draft_k);

/*
 * A draft model must speak the target's vocabulary: the same number of ids
 * and the same token at every id.  0, or -1 with the first difference in
 * err.
 */
int llm_spec_draft_check(const llm_model *m, const llm_tokenizer *tok,
    const llm_model *draft, const llm_tokenizer *draft_tok, char *err,
    size_t errlen);

/*
 * Speculative rejection sampling at one position (Leviathan et al. 2023,
 * Chen et al. 2023): the proposal d was drawn from the draft's processed
 * distribution q; it is kept with probability min(1, p(d) / q(d)), and
 * otherwise the token is drawn from normalize(max(0, p - q)), so that the
 * result has the target's distribution p whatever q is.  p and q hold
 * llm_sampler_n_vocab(s) probabilities (llm_sampler_dist); p is overwritten
 * by the residual on a rejection.  Random draws from the sampler's stream.
 * Returns the token (-1 only if p is all 0), *kept 1 when it is d.
 */
int32_t llm_spec_verify_token(llm_sampler *s, float *p, const float *q,
    int32_t d, int *kept);

/* The verification of the proposal in flight kept `accepted` of its tokens. */
void llm_spec_update(llm_spec_state *st, int accepted);

#endif
