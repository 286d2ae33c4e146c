/*
 * Generation requests (chat, completions, messages) and the helpers the
 * handler shares with them.
 */
#ifndef _NGX_HTTP_LLM_GENERATE_H_INCLUDED_
#define _NGX_HTTP_LLM_GENERATE_H_INCLUDED_

#include "ngx_http_llm_module.h"
#include "ngx_http_llm_sched.h"

#include "api/llm_openai.h"
#include "chat/llm_chat.h"
#include "engine/llm_tokenizer.h"
#include "parsers/llm_parser.h"


#define NGX_HTTP_LLM_MAX_BIAS     LLM_API_DEFAULT_MAX_LOGIT_BIAS
#define NGX_HTTP_LLM_FINGERPRINT  "fp_ngx_llm"


/* Starts generation; NGX_DONE while it runs, or a response status. */
ngx_int_t ngx_http_llm_generate(ngx_http_request_t *r,
    ngx_http_llm_model_t *m, llm_request *req);

/* 429 (529 for Anthropic) with Retry-After: the model is busy, retry. */
ngx_int_t ngx_http_llm_send_busy(ngx_http_request_t *r,
    ngx_http_llm_model_t *m);

/* POST /v1/embeddings (ngx_http_llm_embeddings.c). */
ngx_int_t ngx_http_llm_embeddings(ngx_http_request_t *r, u_char *body,
    size_t len);

/* Parsers for a request: the location's choice, "auto" = the model's. */
const llm_parser_def *ngx_http_llm_tool_parser(ngx_http_request_t *r,
    ngx_http_llm_model_t *m, const llm_request *req);
const llm_parser_def *ngx_http_llm_reasoning_parser(ngx_http_request_t *r,
    ngx_http_llm_model_t *m);

#endif
