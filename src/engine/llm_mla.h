/*
 * Multi-head latent attention (DeepSeek-V3), absorbed: the form whose cache
 * holds one compressed latent per position instead of every head's keys and
 * values.
 *
 * transformers' form, per token with normed input x and per head h:
 *   q_h = [q_nope_h; q_rope_h]  = q_b_proj(rmsnorm(q_a_proj x))  (or q_proj x)
 *   [c; k_rope] = kv_a_proj_with_mqa x,  c = rmsnorm(c) (kv_a_layernorm)
 *   [k_nope_h; v_h] = kv_b_proj_h c          (W_UK_h: nope rows, W_UV_h: v rows)
 *   k_h = [k_nope_h; rope(k_rope)], q_rope_h = rope(q_rope_h)
 *   o_h = sum_p softmax_p(q_h . k_h,p * scale) v_h,p;  out = o_proj [o_h]
 * Since q_nope_h . (W_UK_h c) = (W_UK_h^T q_nope_h) . c and
 * sum_p a_p W_UV_h c_p = W_UV_h sum_p a_p c_p, the same values come from
 *   q'_h = [W_UK_h^T q_nope_h; rope(q_rope_h)],  key_p = [c_p; rope(k_rope_p)]
 *   l_h = sum_p softmax_p(q'_h . key_p * scale) key_p[0 .. kv_rank)
 *   o_h = W_UV_h l_h
 * which is attention with one KV head of kv_rank + rope values
 * (llm_attention.c) whose values are the keys' first kv_rank entries: a KV
 * block's row holds [c; rope(k_rope)] of a position, once.  It runs this way
 * for prefill and decode alike (each kv_b_proj head is widened once per
 * forward chunk, not per token).
 *
 * RoPE turns adjacent pairs (rope_interleave, the published default) or
 * halves; the softmax scale is (nope + rope)^-1/2, times YaRN's
 * mscale(mscale_all_dim)^2 when the config has it.
 */
#ifndef LLM_MLA_H
#define LLM_MLA_H

#include <stddef.h>

#include "engine/llm_model_impl.h"

/* floats of the per-token scratch (llm_runtime.mla): query LoRA [q_rank],
 * the heads' queries [heads][nope + rope], the heads' outputs [heads][v]; 0 without MLA */
size_t llm_mla_row_floats(const llm_model *m);

/* floats of one pool thread's scratch: a head's rows of kv_b_proj widened (W_UK_h transposed and a row, or W_UV_h) */
size_t llm_mla_thread_floats(const llm_model *m);

/* offsets in a scratch row */
#define LLM_MLA_QF(m) ((size_t) (m)->mla_q_rank)
#define LLM_MLA_O(m)  ((size_t) (m)->mla_q_rank + (size_t) (m)->info.n_heads * ((m)->mla_nope + (m)->mla_rope))

/* The RMSNorm epsilon of q_a_layernorm and kv_a_layernorm (transformers builds them with its default). */
#define LLM_MLA_NORM_EPS 1e-6f

/*
 * Chunk token t: rt->kn's row [c; k_rope] (kv_a_proj's output) becomes the
 * cache row [rmsnorm(c); rope(k_rope)], and each head's query in rt->q gets
 * its turned rope part after the latent part.
 */
void llm_mla_rope(llm_runtime *rt, const llm_layer *L, int t);

/* heads [h0, h1) of the chunk's n tokens: the latent part of rt->q = W_UK_h^T q_nope_h;
 * scratch: llm_mla_thread_floats */
void llm_mla_absorb(llm_runtime *rt, const llm_layer *L, int n, int h0, int h1, float *scratch);

/* heads [h0, h1): the scratch rows' outputs o_h = W_UV_h (rt->att's first kv_rank values of h) */
void llm_mla_values(llm_runtime *rt, const llm_layer *L, int n, int h0, int h1, float *scratch);

#endif
