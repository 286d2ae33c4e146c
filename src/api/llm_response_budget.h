/*
 * What one response may hold in memory while it is generated
 * (llm_max_response_size): counted before the request is admitted, from
 * what it asks for, and measured token by token while it runs.
 *
 * A non-streaming response keeps everything until its JSON is written: the
 * text of every choice and, with logprobs, an entry for the chosen token and
 * each of the top_logprobs alternatives of every generated token.  A
 * streaming response sends its logprobs as it goes and keeps only its text
 * (its unsent output is bounded separately, by backpressure).  No nginx.
 */
#ifndef LLM_RESPONSE_BUDGET_H
#define LLM_RESPONSE_BUDGET_H

#include <stddef.h>

/*
 * Bytes a response is expected to hold per generated token of one choice,
 * for admission: text, plus for a non-streaming response with logprobs the
 * kept token record and the JSON of 1 + top_logprobs entries of a typical
 * (4-byte) token.  Generation is still measured (llm_response_token_bytes),
 * so an estimate that proves low ends the response early, never over the
 * limit.
 */
size_t llm_response_bytes_per_token(int stream, int logprobs, int top_logprobs);

/* The most tokens per choice that n choices may generate within limit bytes
 * at per_token bytes each; 0 when not even one fits. */
size_t llm_response_tokens_fit(size_t limit, size_t n, size_t per_token);

/*
 * What one generated token adds, measured: text_len bytes of text and, for
 * a non-streaming response with logprobs, the record and the JSON of its
 * entries, whose token texts are entry_len[0 .. n_entries) bytes long
 * (the chosen token first, then the alternatives).  An upper bound of what
 * the formatters write for them (every byte escaped as \u00XX, listed in
 * "bytes").
 */
size_t llm_response_token_bytes(size_t text_len, int logprobs_kept,
    const size_t *entry_len, size_t n_entries);

#endif
