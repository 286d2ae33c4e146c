/*
 * Protocol layer: shared error type, limits and entry points common to the
 * OpenAI and Anthropic front ends (llm_openai.h, llm_anthropic.h).
 *
 * Parsers turn request body bytes into an llm_request (core/llm_ir.h);
 * formatters turn llm_event / llm_result values into response bytes in an
 * llm_buf.  Nothing here touches nginx or the engine.
 */
#ifndef LLM_API_H
#define LLM_API_H

#include <stddef.h>
#include <stdint.h>

#include "core/llm_buf.h"
#include "core/llm_ir.h"

/* One error, written by any parser and printed in either protocol's shape. */
typedef struct {
    int         status;        /* HTTP status: 400, 404, 413, 429, 500, ... */
    const char *type;          /* "invalid_request_error", ... (static string) */
    char        param[128];    /* JSON path of the offending field, "" if none */
    char        message[512];
    const char *code;          /* "invalid_type", ... (static string) or NULL */
} llm_api_error;

/*
 * The kept responses a Responses request's previous_response_id is read
 * from (the server's llm_responses_store): get appends the record kept
 * under id (llm_responses.h) to out and returns 1, 0 when none is kept
 * (unknown, expired, evicted), -1 on a failure.
 */
typedef struct {
    int   (*get)(void *ctx, const char *id, size_t id_len, llm_buf *out);
    void   *ctx;
} llm_response_lookup;

/* Resource bounds applied while parsing a request body. */
typedef struct {
    int     max_depth;      /* JSON nesting depth; default 64 */
    size_t  max_messages;   /* default 2048 */
    size_t  max_tools;      /* default 128 */
    size_t  max_stop;       /* stop strings; default 4 */
    int     max_n;          /* choices per request; default 8 */
    size_t  max_logit_bias; /* logit_bias entries; default 300 */
    size_t  max_tool_calls; /* tool calls in one assistant message; default 128 */
    /* Anthropic thinking blocks sent back must carry this key's signature
     * (api/llm_thinking_sig.h); NULL (the default): not checked */
    const struct llm_thinking_key *thinking_key;
    /* kept responses (previous_response_id, store); NULL: none are kept */
    const llm_response_lookup *responses;
} llm_api_limits;

#define LLM_API_DEFAULT_MAX_DEPTH     64
#define LLM_API_DEFAULT_MAX_MESSAGES  2048
#define LLM_API_DEFAULT_MAX_TOOLS     128
#define LLM_API_DEFAULT_MAX_STOP      4
#define LLM_API_DEFAULT_MAX_N         8
#define LLM_API_DEFAULT_MAX_LOGIT_BIAS 300
#define LLM_API_DEFAULT_MAX_TOOL_CALLS 128

void llm_api_limits_default(llm_api_limits *lim);

/* Fill err (printf-style message); always returns -1 so callers can
 * `return llm_api_error_set(...)`.  param may be NULL. */
int llm_api_error_set(llm_api_error *err, int status, const char *type,
    const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Shorthand for the common 400 invalid_request_error. */
int llm_api_bad_request(llm_api_error *err, const char *code,
    const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * OpenAI error body:
 *   {"error":{"message","type","param","code","request_id"}}
 * param/code are null when unset; request_id is left out when NULL.
 */
int llm_openai_error_json(llm_buf *b, const llm_api_error *err,
    const char *request_id);

/*
 * Anthropic error body:
 *   {"type":"error","error":{"type","message"},"request_id"}
 * The error type follows the HTTP status (llm_anthropic_error_type).
 */
int llm_anthropic_error_json(llm_buf *b, const llm_api_error *err,
    const char *request_id);

/* 400 invalid_request_error, 401 authentication_error, 403 permission_error,
 * 404 not_found_error, 413 request_too_large, 429 rate_limit_error,
 * 529 overloaded_error, other 5xx api_error. */
const char *llm_anthropic_error_type(int status);

/* The OpenAI error `type` for a status that carries none of its own (nginx's
 * error pages, unknown models and paths): 401 authentication_error, 403
 * permission_error, 429 rate_limit_error, other 4xx (404 included, as
 * OpenAI answers an unknown model or URL) invalid_request_error, 5xx
 * server_error. */
const char *llm_openai_error_type(int status);

/* The message of an error page nginx itself answers with status (413 from
 * client_max_body_size, 429 from limit_req, ...), for the protocol's shape. */
const char *llm_api_status_message(int status);

/* ---- conveniences for the glue ---- */

/* Parse a body for any request kind (CHAT, COMPLETIONS, MESSAGES,
 * COUNT_TOKENS, RESPONSES); other kinds take no body and are a 400. */
int llm_api_parse_request(llm_api_kind api, const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err);

/* The error body in the protocol of `api`: Anthropic's shape for MESSAGES
 * and COUNT_TOKENS, OpenAI's for the rest, with the request's id when it
 * has one (request_id_len 1 to LLM_API_REQUEST_ID_MAX bytes, not
 * NUL-terminated; else none). */
int llm_api_error_body(llm_api_kind api, llm_buf *b, const llm_api_error *err,
    const char *request_id, size_t request_id_len);

/* Common errors, worded once: 404 model_not_found; 400
 * context_length_exceeded on param ("messages" or "prompt"); 429 (OpenAI) /
 * 529 (Anthropic) when the model's queue is full.  All return -1. */
int llm_api_error_model_not_found(llm_api_error *err, const char *model);
int llm_api_error_context_length(llm_api_error *err, const char *param,
    size_t prompt_tokens, size_t context);
int llm_api_error_overloaded(llm_api_error *err, llm_api_kind api,
    const char *model, size_t parallel);

/*
 * The server's own refusals, worded once, each with the type OpenAI gives
 * its status (llm_openai_error_type; Anthropic's shape maps it): 405
 * method_not_allowed naming the methods allowed; 404 unknown_url for a
 * path no endpoint answers (quoted up to LLM_API_QUOTE_MAX bytes); 503 for
 * a model this worker cannot serve (its error log says why); 400
 * invalid_value on "n" for more choices than the model holds at once; 503
 * for /metrics with no model; 500 for a failure of the server itself
 * (printf-style).  All return -1.
 */
#define LLM_API_QUOTE_MAX  400
int llm_api_error_method(llm_api_error *err, const char *method,
    size_t method_len, const char *allowed);
int llm_api_error_unknown_url(llm_api_error *err, const char *method,
    size_t method_len, const char *uri, size_t uri_len);
int llm_api_error_not_loaded(llm_api_error *err, const char *model,
    size_t model_len);
int llm_api_error_choices(llm_api_error *err, size_t n, const char *model,
    size_t parallel, size_t queue, size_t capacity);
int llm_api_error_no_metrics(llm_api_error *err);
int llm_api_error_internal(llm_api_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Token ids a request names (logit_bias keys, /v1/completions prompt ids)
 * against the model's vocabulary of n_vocab ids: 0, or -1 with a 400
 * invalid_value naming the offending id.  Run once the model is known.
 */
int llm_api_check_token_ids(const llm_request *req, long n_vocab,
    llm_api_error *err);

/*
 * 1 when a Content-Type header value declares a JSON body: the media type
 * application/json in any case, optionally followed by parameters
 * ("; charset=utf-8").  0 for anything else, and for no header (NULL).
 * The JSON endpoints refuse other bodies with 415, so that a browser's
 * "simple" cross-origin POST (text/plain, a form, an untyped Blob) cannot
 * start work on a deployment without authentication.
 */
int llm_api_content_type_is_json(const char *value, size_t len);

/*
 * 1 when a client's X-Request-ID may be kept as the request's id (logged,
 * echoed, passed on): 1 to LLM_API_REQUEST_ID_MAX bytes of letters,
 * digits, '-', '_', '.' and ':'; else the server makes its own.
 */
#define LLM_API_REQUEST_ID_MAX  128
int llm_api_request_id_valid(const char *id, size_t len);

/* The 415 for a body that is not declared as JSON (value NULL: no header). */
int llm_api_error_content_type(llm_api_error *err, const char *value,
    size_t len);

/* ---- logprobs output ---- */

/*
 * The glue's detokenizer for logprobs: write the raw bytes of token `id`
 * into out (at most cap bytes) and return how many it wrote, or -1 for an
 * unknown id.  Bytes need not be valid UTF-8 on their own.
 */
typedef int (*llm_token_bytes_fn)(void *ctx, int32_t id, char *out,
    size_t cap);

/* Logprob records of the tokens behind one choice (or one chunk). */
typedef struct {
    const llm_token_logprobs *tokens;
    size_t                    n;
} llm_logprobs_list;

#endif
