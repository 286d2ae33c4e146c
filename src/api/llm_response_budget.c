/* What a response may hold while it is generated: see llm_response_budget.h. */
#include "api/llm_response_budget.h"

#include <stdint.h>

#include "core/llm_ir.h"

/* JSON-escaped text of a typical token (a few bytes, some escaped). */
#define TEXT_BYTES           8
/* {"token":"","logprob":-12.345678901,"bytes":[],"top_logprobs":[]}, */
#define ENTRY_FIXED_BYTES    72
/* per byte of the token: up to 6 escaped ("\u00e9") and 4 in "bytes" ("233,") */
#define ENTRY_PER_BYTE       10
#define TYPICAL_TOKEN_BYTES  4

size_t
llm_response_bytes_per_token(int stream, int logprobs, int top_logprobs)
{
    size_t entries;

    if (stream || !logprobs) {
        return TEXT_BYTES;
    }
    entries = 1 + (size_t) (top_logprobs > 0 ? top_logprobs : 0);
    return TEXT_BYTES + sizeof(llm_token_logprobs)
           + entries * (ENTRY_FIXED_BYTES + ENTRY_PER_BYTE * TYPICAL_TOKEN_BYTES);
}

size_t
llm_response_tokens_fit(size_t limit, size_t n, size_t per_token)
{
    if (n == 0) n = 1;
    if (per_token == 0) per_token = 1;
    if (limit / n < per_token) return 0;
    return limit / n / per_token;
}

size_t
llm_response_token_bytes(size_t text_len, int logprobs_kept,
    const size_t *entry_len, size_t n_entries)
{
    size_t i, total = text_len;

    if (!logprobs_kept) {
        return total;
    }
    total += sizeof(llm_token_logprobs);
    for (i = 0; i < n_entries; i++) {
        total += ENTRY_FIXED_BYTES + ENTRY_PER_BYTE * entry_len[i];
    }
    return total;
}
