/*
 * Anthropic request JSON -> llm_request: the messages and count_tokens
 * parsers see every input; a rejected one must carry a status and a
 * message, and its error body is formatted.
 */
#include "llm_fuzz.h"
#include "api/llm_api.h"
#include "api/llm_anthropic.h"

static void
check(llm_api_kind api, const uint8_t *data, size_t size)
{
    llm_api_limits lim;
    llm_request req;
    llm_api_error err;
    llm_buf b;
    int rc;

    llm_api_limits_default(&lim);
    llm_request_init(&req);
    memset(&err, 0, sizeof(err));
    rc = llm_api_parse_request(api, (const char *) data, size, &lim, &req, &err);
    if (rc != 0) {
        /* every failure carries a status and a message */
        if (err.status < 400 || err.message[0] == '\0') __builtin_trap();
        llm_buf_init(&b);
        if (llm_api_error_body(api, &b, &err, "req-1", 5) != 0) __builtin_trap();
        llm_buf_free(&b);
    }
    llm_request_free(&req);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(LLM_API_MESSAGES, data, size);
    check(LLM_API_COUNT_TOKENS, data, size);
    return 0;
}
