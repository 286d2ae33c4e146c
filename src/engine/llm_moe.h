/*
 * The sparse MLP of mixture-of-experts layers (llm_moe in llm_model_impl.h),
 * run by the forward pass in place of the dense gate/up/down.
 *
 * Per step: the router scores every expert for every token, each token keeps
 * its top_k experts, and the tokens are grouped per expert so that each chosen
 * expert's matrices are read once for all of its tokens; experts no token
 * chose are not read at all.
 */
#ifndef LLM_MOE_H
#define LLM_MOE_H

#include <stddef.h>

#include "engine/llm_model_impl.h"

typedef struct llm_moe_scratch llm_moe_scratch;
struct llm_runtime;

/* Bytes of the scratch for up to n_tokens tokens a step (0 when the model has no experts). */
size_t llm_moe_scratch_bytes(const llm_model *m, int n_tokens);
/* NULL when the model has no experts; *fail = 1 when out of memory. */
llm_moe_scratch *llm_moe_scratch_create(const llm_model *m, int n_tokens, int *fail);
void llm_moe_scratch_free(llm_moe_scratch *s);

/*
 * out[t] (+)= sum over token t's chosen experts of weight * expert(in[t]),
 * for the n tokens whose rows are hidden floats apart; accumulate = 1 adds
 * to out.  in and out may be the same rows.
 */
void llm_moe_ffn(struct llm_runtime *rt, const llm_moe *moe, const float *in, float *out, int n, int accumulate);

#endif
