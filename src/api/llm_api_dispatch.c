/* Request-kind dispatch and the errors and checks every endpoint shares. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/llm_anthropic.h"
#include "api/llm_api_json.h"
#include "api/llm_openai.h"
#include "api/llm_responses.h"

static int
is_anthropic(llm_api_kind api)
{
    return api == LLM_API_MESSAGES || api == LLM_API_COUNT_TOKENS;
}

int
llm_api_parse_request(llm_api_kind api, const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err)
{
    switch (api) {
    case LLM_API_CHAT:
        return llm_openai_parse_chat(body, len, lim, req, err);
    case LLM_API_COMPLETIONS:
        return llm_openai_parse_completions(body, len, lim, req, err);
    case LLM_API_MESSAGES:
        return llm_anthropic_parse_messages(body, len, lim, req, err);
    case LLM_API_COUNT_TOKENS:
        return llm_anthropic_parse_count_tokens(body, len, lim, req, err);
    case LLM_API_RESPONSES:
        return llm_responses_parse(body, len, lim, req, err);
    default:
        llm_request_init(req);
        req->api = api;
        return llm_api_bad_request(err, NULL, NULL,
            "This endpoint does not take a request body to parse.");
    }
}

int
llm_openai_error_json(llm_buf *b, const llm_api_error *err,
    const char *request_id)
{
    json_t *e, *root;
    int     rc;

    e = json_object();
    json_object_set_new(e, "message", llm_api_jstr_or_null(err->message));
    json_object_set_new(e, "type", json_string(
        err->type ? err->type : "invalid_request_error"));
    json_object_set_new(e, "param", err->param[0]
        ? llm_api_jstr_or_null(err->param) : json_null());
    json_object_set_new(e, "code", llm_api_jstr_or_null(err->code));
    if (request_id) {
        json_object_set_new(e, "request_id", llm_api_jstr_or_null(request_id));
    }
    root = json_object();
    json_object_set_new(root, "error", e);
    rc = llm_api_dump(b, root);
    json_decref(root);
    return rc;
}

int
llm_anthropic_error_json(llm_buf *b, const llm_api_error *err,
    const char *request_id)
{
    json_t *e, *root;
    int     rc;

    e = json_object();
    json_object_set_new(e, "type",
        json_string(llm_anthropic_error_type(err->status)));
    /* messages already name the offending field's path */
    json_object_set_new(e, "message", llm_api_jstr_or_null(err->message));
    root = json_object();
    json_object_set_new(root, "type", json_string("error"));
    json_object_set_new(root, "error", e);
    if (request_id) {
        json_object_set_new(root, "request_id",
            llm_api_jstr_or_null(request_id));
    }
    rc = llm_api_dump(b, root);
    json_decref(root);
    return rc;
}

int
llm_api_error_body(llm_api_kind api, llm_buf *b, const llm_api_error *err,
    const char *request_id, size_t request_id_len)
{
    char  rid[LLM_API_REQUEST_ID_MAX + 1];

    /* the glue holds the id as nginx's string (not NUL-terminated) */
    rid[0] = '\0';
    if (request_id && request_id_len <= LLM_API_REQUEST_ID_MAX) {
        memcpy(rid, request_id, request_id_len);
        rid[request_id_len] = '\0';
    }

    return is_anthropic(api)
           ? llm_anthropic_error_json(b, err, rid[0] ? rid : NULL)
           : llm_openai_error_json(b, err, rid[0] ? rid : NULL);
}

int
llm_api_error_model_not_found(llm_api_error *err, const char *model)
{
    return llm_api_error_set(err, 404, "invalid_request_error",
        "model_not_found", "model", "The model '%.200s' does not exist.",
        model ? model : "");
}

int
llm_api_error_context_length(llm_api_error *err, const char *param,
    size_t prompt_tokens, size_t context)
{
    return llm_api_error_set(err, 400, "invalid_request_error",
        "context_length_exceeded", param,
        "This model's maximum context length is %zu tokens. However, your "
        "prompt has %zu tokens.", context, prompt_tokens);
}

int
llm_api_error_overloaded(llm_api_error *err, llm_api_kind api,
    const char *model, size_t parallel)
{
    /* Anthropic's clients retry 529 overloaded_error, OpenAI's 429 */
    return llm_api_error_set(err, is_anthropic(api) ? 529 : 429,
        is_anthropic(api) ? "overloaded_error" : "rate_limit_error",
        "server_busy", NULL,
        "Model '%.200s' is busy: %zu sequences run and the wait queue is "
        "full; retry later.", model, parallel);
}

/* the name of a method or model as a request gave it, at most so long */
static int
quote_len(size_t len)
{
    return (int) (len < LLM_API_QUOTE_MAX ? len : LLM_API_QUOTE_MAX);
}

int
llm_api_error_method(llm_api_error *err, const char *method,
    size_t method_len, const char *allowed)
{
    return llm_api_error_set(err, 405, llm_openai_error_type(405),
        "method_not_allowed", NULL, "Method %.*s is not allowed here; use %s.",
        quote_len(method_len), method, allowed);
}

int
llm_api_error_unknown_url(llm_api_error *err, const char *method,
    size_t method_len, const char *uri, size_t uri_len)
{
    return llm_api_error_set(err, 404, llm_openai_error_type(404),
        "unknown_url", NULL,
        "Invalid URL (%.*s %.*s): this server has no such endpoint.",
        quote_len(method_len), method, quote_len(uri_len), uri);
}

int
llm_api_error_not_loaded(llm_api_error *err, const char *model,
    size_t model_len)
{
    return llm_api_error_set(err, 503, llm_openai_error_type(503), NULL, NULL,
        "Model '%.*s' is not loaded in this worker.", quote_len(model_len),
        model);
}

int
llm_api_error_choices(llm_api_error *err, size_t n, const char *model,
    size_t parallel, size_t queue, size_t capacity)
{
    return llm_api_error_set(err, 400, llm_openai_error_type(400),
        "invalid_value", "n",
        "n=%zu is more than model '%s' can hold at once (parallel %zu + "
        "queue %zu = %zu sequences).", n, model, parallel, queue, capacity);
}

int
llm_api_error_no_metrics(llm_api_error *err)
{
    return llm_api_error_set(err, 503, llm_openai_error_type(503), NULL, NULL,
        "No metrics: no model is configured.");
}

int
llm_api_error_internal(llm_api_error *err, const char *fmt, ...)
{
    va_list  ap;
    char     msg[sizeof(err->message)];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return llm_api_error_set(err, 500, llm_openai_error_type(500), NULL, NULL,
                             "%s", msg);
}

int
llm_api_check_token_ids(const llm_request *req, long n_vocab,
    llm_api_error *err)
{
    size_t      i;
    long        id;
    char        path[128];

    for (i = 0; i < req->sampling.n_logit_bias; i++) {
        id = req->sampling.logit_bias[i].id;    /* >= 0: checked at parse */
        if (id >= n_vocab) {
            snprintf(path, sizeof(path), "logit_bias.%ld", id);
            return llm_api_bad_request(err, "invalid_value", path,
                "logit_bias token %ld is outside the vocabulary (0..%ld).",
                id, n_vocab - 1);
        }
    }
    for (i = 0; i < req->n_prompt_ids; i++) {
        if (req->prompt_ids[i] < 0 || req->prompt_ids[i] >= n_vocab) {
            return llm_api_bad_request(err, "invalid_value", "prompt",
                "prompt token %ld is outside the vocabulary (0..%ld).",
                (long) req->prompt_ids[i], n_vocab - 1);
        }
    }
    return 0;
}

int
llm_api_content_type_is_json(const char *value, size_t len)
{
    static const char  json[] = "application/json";
    size_t             n = sizeof(json) - 1, i;

    if (value == NULL) {
        return 0;
    }
    while (len && (*value == ' ' || *value == '\t')) {
        value++;
        len--;
    }
    if (len < n || strncasecmp(value, json, n) != 0) {
        return 0;
    }
    for (i = n; i < len && (value[i] == ' ' || value[i] == '\t'); i++) {
        /* void */
    }
    return i == len || value[i] == ';';
}

int
llm_api_request_id_valid(const char *id, size_t len)
{
    size_t  i;
    char    c;

    if (len == 0 || len > LLM_API_REQUEST_ID_MAX) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
              || c == ':'))
        {
            return 0;
        }
    }
    return 1;
}

int
llm_api_error_content_type(llm_api_error *err, const char *value, size_t len)
{
    if (value == NULL) {
        return llm_api_error_set(err, 415, "invalid_request_error",
            "unsupported_media_type", NULL,
            "This endpoint takes a JSON body: send it with the header "
            "'Content-Type: application/json'.");
    }
    return llm_api_error_set(err, 415, "invalid_request_error",
        "unsupported_media_type", NULL,
        "Unsupported Content-Type '%.*s': this endpoint takes a JSON body "
        "sent as 'application/json'.", (int) (len > 100 ? 100 : len), value);
}
