/*
 * Attention of one layer for the tokens of a forward chunk, tiled and
 * threaded (flash-attention style): no score row per query is ever held,
 * each work item keeps a running max, sum and unnormalised output per query
 * row (online softmax) while it walks the KV blocks of its sequence once.
 *
 * Work is split over (sequence, KV head, query tile, KV range):
 *   - a query tile is up to LLM_ATT_ROWS rows: consecutive tokens of one
 *     sequence times the query heads that share one KV head (GQA), so a
 *     block's keys and values are read once for all of them (prefill reuses
 *     each block across the tile instead of once per query);
 *   - when there are fewer tiles than the threads can share (decode, short
 *     chunks deep into a long context) a tile's KV range is cut into pieces
 *     whose partial states are merged afterwards (split-K, "flash decoding"),
 *     so a single sequence decoding at 16k context uses every thread.
 * Causal masking and sliding windows are per row (row r sees positions
 * lo[r] .. hi[r]); logit soft-capping is applied per score by the kernel;
 * an attention sink (gpt-oss: exp(sink) in the softmax denominator only)
 * is added when a row's output is normalised.
 */
#ifndef LLM_ATTENTION_H
#define LLM_ATTENTION_H

#include <stddef.h>

#include "engine/llm_engine.h"

/* Query rows of one tile (tokens x heads of one KV group).  Each KV block is
 * read, widened and transposed once per tile, so longer tiles spend less of a
 * long context's prefill on that (64 -> 128 rows: the widening's share of a
 * 8k-token prefill fell from 7.6% to 5.2% of the samples). */
#define LLM_ATT_ROWS 128

typedef struct llm_att_scratch llm_att_scratch;

/* Bytes of the attention scratch of a runtime of model m with n_threads threads and
 * chunks of up to n_tokens tokens. */
size_t llm_attention_scratch_bytes(const llm_model *m, int n_threads, int n_tokens);

/* The scratch laid out in mem (llm_attention_scratch_bytes bytes, 64-byte aligned). */
llm_att_scratch *llm_attention_scratch_init(void *mem, const llm_model *m, int n_threads,
    int n_tokens);

/*
 * rt->att = attention of layer `layer` for the rt->n chunk tokens (queries in
 * rt->q after RoPE, their keys and values already stored in the cache), on
 * rt's thread pool.
 */
void llm_attention(llm_runtime *rt, int layer, int n_tokens);

#endif
