/*
 * Generation requests (chat, completions, messages) and the helpers the
 * handler shares with them.
 */
#ifndef _NGX_HTTP_LLM_GENERATE_H_INCLUDED_
#define _NGX_HTTP_LLM_GENERATE_H_INCLUDED_

#include "ngx_http_llm_module.h"

#include "api/llm_api_tokenize.h"
#include "api/llm_openai.h"
#include "api/llm_openai_embeddings.h"
#include "chat/llm_chat.h"
#include "chat/llm_prepare.h"
#include "chat/llm_reply.h"
#include "chat/llm_session.h"
#include "engine/llm_tokenizer.h"
#include "parsers/llm_parser.h"


#define NGX_HTTP_LLM_FINGERPRINT  "fp_ngx_llm"


/*
 * A request made ready off the event loop (ngx_http_llm_prepare.c runs
 * chat/llm_prepare.h as a thread task): body -> protocol IR -> model ->
 * prompt token ids, a /tokenize answer, or the embeddings inputs' ids.  The
 * event loop answers from it; its results are malloc'd, freed by a pool
 * cleanup.
 */
typedef struct {
    /* set before the task runs */
    llm_prepare_config         cfg;
    u_char                    *body;
    size_t                     len;
    ngx_http_llm_main_conf_t  *mcf;
    ngx_flag_t                 any_model;       /* llm_any_model */

    /* the task's results */
    llm_prepared               pr;
    llm_served_model          *model;           /* pr.model's owner */
} ngx_http_llm_prep_t;


/* Prepares the request body in a thread; NGX_DONE, or a response status. */
ngx_int_t ngx_http_llm_prepare(ngx_http_request_t *r, u_char *body,
    size_t len);

/* Starts generation; NGX_DONE while it runs, or a response status. */
ngx_int_t ngx_http_llm_generate(ngx_http_request_t *r,
    ngx_http_llm_prep_t *p);

/* 429 (529 for Anthropic) with Retry-After: the model is busy, retry. */
ngx_int_t ngx_http_llm_send_busy(ngx_http_request_t *r, llm_served_model *m);

/*
 * Kept responses of the Responses API (ngx_http_llm_responses.c): the
 * lookup previous_response_id is read with (NULL without a store); keeping
 * a finished response (its record, when llm_reply_record gives one); GET /
 * DELETE /v1/responses/{id}.
 */
const llm_response_lookup *ngx_http_llm_responses_lookup(
    ngx_http_llm_main_conf_t *mcf);
void ngx_http_llm_responses_keep(ngx_http_request_t *r, llm_reply *reply);
ngx_int_t ngx_http_llm_responses_handler(ngx_http_request_t *r,
    const char *id, size_t id_len);

/* POST /v1/embeddings (ngx_http_llm_embeddings.c). */
ngx_int_t ngx_http_llm_embeddings(ngx_http_request_t *r,
    ngx_http_llm_prep_t *p);

#endif
