/* /v1/completions request -> llm_request (raw prompt, no template). */
#include "api/llm_openai.h"
#include "api/llm_openai_common.h"

#include <stdlib.h>
#include <string.h>

#define OOM(err) llm_api_error_set(err, 500, "api_error", NULL, NULL, \
                                   "Out of memory while reading the request.")

static int
prompt_text_in(const json_t *s, llm_request *req, llm_api_error *err)
{
    size_t len = json_string_length(s);

    req->prompt = malloc(len + 1);
    if (req->prompt == NULL) {
        return OOM(err);
    }
    memcpy(req->prompt, json_string_value(s), len + 1);
    req->prompt_len = len;
    return 0;
}

static int
prompt_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *p = json_object_get(root, "prompt");
    const json_t *first;
    size_t        n;

    if (p == NULL || json_is_null(p)) {
        return llm_api_bad_request(err, "missing_required_parameter",
            "prompt", "Missing required parameter: 'prompt'.");
    }
    if (json_is_string(p)) {
        return prompt_text_in(p, req, err);
    }
    if (!json_is_array(p)) {
        return llm_api_type_error(err, "prompt", "a string, an array of "
            "strings, an array of token ids or an array of token id arrays",
            p);
    }
    n = json_array_size(p);
    if (n == 0) {
        return llm_api_bad_request(err, "invalid_value", "prompt",
            "Invalid value for 'prompt': the array is empty.");
    }
    first = json_array_get(p, 0);
    if (json_is_integer(first)) {
        return llm_api_token_ids_in(p, "prompt", 0, req, err);
    }
    if (!json_is_string(first) && !json_is_array(first)) {
        return llm_api_type_error(err, "prompt[0]",
            "a string, a token id or an array of token ids", first);
    }
    if (n > 1) {
        return llm_api_bad_request(err, "unsupported_value", "prompt",
            "Invalid value for 'prompt': this server takes one prompt per "
            "request, but got %zu; send them as separate requests.", n);
    }
    if (json_is_string(first)) {
        return prompt_text_in(first, req, err);
    }
    return llm_api_token_ids_in(first, "prompt[0]", 0, req, err);
}

static int
completions_in(const json_t *root, const llm_api_limits *lim, void *ctx,
    llm_request *req, llm_api_error *err)
{
    const json_t *suffix;
    long long     i;
    int           b, rc;

    if (prompt_in(root, req, err) < 0) {
        return -1;
    }
    req->default_max_tokens = 16;         /* OpenAI's default here */
    if (llm_openai_parse_common(root, lim, req, err) < 0) {
        return -1;
    }
    if ((rc = llm_api_opt_bool(root, "echo", "echo", &b, err)) < 0) {
        return -1;
    }
    if (rc) {
        req->echo = b;
    }
    suffix = json_object_get(root, "suffix");
    if (suffix && !json_is_null(suffix)) {
        if (!json_is_string(suffix)) {
            return llm_api_type_error(err, "suffix", "a string", suffix);
        }
        if (json_string_length(suffix) > 0) {
            return llm_api_bad_request(err, "unsupported_value", "suffix",
                "Invalid value for 'suffix': insertion after a suffix is not "
                "supported by this server.");
        }
    }
    if ((rc = llm_api_opt_int(root, "best_of", "best_of", 1, req->n, &i,
                              err)) < 0)
    {
        return -1;
    }
    if (rc && i != req->n && i != 1) {
        return llm_api_bad_request(err, "unsupported_value", "best_of",
            "Invalid value for 'best_of': only 1 or the value of 'n' is "
            "supported.");
    }
    /* legacy logprobs: how many alternatives per token, 0 = chosen only */
    if ((rc = llm_api_opt_int(root, "logprobs", "logprobs", 0,
                              LLM_MAX_TOP_LOGPROBS, &i, err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.logprobs = 1;
        req->sampling.top_logprobs = (int) i;
    }
    return 0;
}

int
llm_openai_parse_completions(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err)
{
    return llm_api_parse_body(body, len, lim, LLM_API_COMPLETIONS,
                              completions_in, NULL, req, err);
}
