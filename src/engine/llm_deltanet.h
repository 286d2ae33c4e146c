/*
 * Gated DeltaNet blocks: the "linear_attention" layers of Qwen3-Next and
 * Qwen3.5, in the batched forward pass.
 *
 * For a token with normed input h (K = dn_kernel, dk / dv the key / value
 * head sizes, each key head serving v_heads / k_heads value heads):
 *   [q; k; v], z, b, a = the input projections of h
 *   [q; k; v] = silu(causal depthwise convolution over the last K tokens)
 *   q, k = per head x / sqrt(sum x^2 + 1e-6) (q then times dk^-1/2)
 *   per value head: beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias),
 *     S = exp(g) S;  S += k (beta (v - S^T k))^T;  o = S^T q     (S: [dk][dv])
 *   o = rmsnorm(o) * norm_weight * silu(z) per value head;  out = out_proj o
 * That is the recurrent form, which a decode step (one token of a slot) runs.
 * A slot's run of consecutive tokens in a forward chunk (a prompt being read)
 * runs the chunked (WY) form instead, LLM_DN_CHUNK tokens at a time, as
 * transformers' prefill does: the same values summed in another order, with
 * the per-token rank-one updates of S replaced by products of the chunk's
 * keys, values and queries and one update of S per chunk (llm_deltanet.c
 * rule_chunk has the algebra).
 *
 * Recurrent state of a sequence, per layer, from llm_layer.state_off: the
 * convolution's last K - 1 inputs [K - 1][conv_dim] (oldest first), then S of
 * every value head [v_heads][dk][dv].  Zero at position 0.
 */
#ifndef LLM_DELTANET_H
#define LLM_DELTANET_H

#include <stddef.h>

#include "engine/llm_model_impl.h"

/* the convolution's channels: q and k of every key head, v of every value head */
int llm_deltanet_conv_dim(const llm_model *m);

/* floats of one layer's recurrent state of one sequence */
size_t llm_deltanet_state_floats(const llm_model *m);

/* tokens of one step of the chunked form (transformers' chunk_size) */
#define LLM_DN_CHUNK 64

/* floats of one pool thread's scratch for the chunked form (llm_runtime.dn_w) */
size_t llm_deltanet_thread_floats(const llm_model *m);

/* floats of the per-token scratch (llm_runtime.dn) */
size_t llm_deltanet_row_floats(const llm_model *m);

/*
 * Layer L (L->dn) for the chunk's n tokens: reads rt->xn (normed), advances
 * each token's slot state, and writes out_proj's result into out ([n][hidden]),
 * added to it when accumulate.
 */
void llm_deltanet_block(llm_runtime *rt, const llm_layer *L, int n, float *out, int accumulate);

#endif
