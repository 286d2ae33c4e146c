/*
 * Error values and the status -> type maps of both protocols.  Their JSON
 * bodies are written by llm_api_dispatch.c, which picks the shape.
 */
#include "api/llm_api.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
llm_api_limits_default(llm_api_limits *lim)
{
    lim->max_depth = LLM_API_DEFAULT_MAX_DEPTH;
    lim->max_messages = LLM_API_DEFAULT_MAX_MESSAGES;
    lim->max_tools = LLM_API_DEFAULT_MAX_TOOLS;
    lim->max_stop = LLM_API_DEFAULT_MAX_STOP;
    lim->max_n = LLM_API_DEFAULT_MAX_N;
    lim->max_logit_bias = LLM_API_DEFAULT_MAX_LOGIT_BIAS;
    lim->max_tool_calls = LLM_API_DEFAULT_MAX_TOOL_CALLS;
    lim->thinking_key = NULL;
    lim->responses = NULL;
}

static int
error_vset(llm_api_error *err, int status, const char *type, const char *code,
    const char *param, const char *fmt, va_list ap)
{
    if (err == NULL) {
        return -1;
    }
    err->status = status;
    err->type = type;
    err->code = code;
    snprintf(err->param, sizeof(err->param), "%s", param ? param : "");
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    return -1;
}

int
llm_api_error_set(llm_api_error *err, int status, const char *type,
    const char *code, const char *param, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    error_vset(err, status, type, code, param, fmt, ap);
    va_end(ap);
    return -1;
}

int
llm_api_bad_request(llm_api_error *err, const char *code, const char *param,
    const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    error_vset(err, 400, "invalid_request_error", code, param, fmt, ap);
    va_end(ap);
    return -1;
}

const char *
llm_anthropic_error_type(int status)
{
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    case 503: return "overloaded_error";
    default:  return status >= 400 && status < 500
                     ? "invalid_request_error" : "api_error";
    }
}

const char *
llm_openai_error_type(int status)
{
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 429: return "rate_limit_error";
    default:  return status < 500 ? "invalid_request_error" : "server_error";
    }
}

const char *
llm_api_status_message(int status)
{
    switch (status) {
    case 400: return "Bad request.";
    case 401: return "Authentication required.";
    case 403: return "Forbidden.";
    case 404: return "Not found.";
    case 405: return "Method not allowed.";
    case 408: return "Request timeout.";
    case 411: return "Length required.";
    case 413: return "Request body too large: it exceeds client_max_body_size.";
    case 414: return "Request URI too long.";
    case 429: return "Too many requests: rate limit exceeded.";
    case 500: return "Internal server error.";
    case 502: return "Bad gateway.";
    case 503: return "Service temporarily unavailable.";
    case 504: return "Gateway timeout.";
    default:  return "Request failed.";
    }
}
