/*
 * Request preparation off the event loop: body JSON -> protocol IR -> model
 * -> chat template -> prompt token ids (or the embeddings inputs' ids) runs
 * as a task in llm_prepare_thread_pool, so that a large body, a template
 * render near its step bound or a long prompt to tokenize never stalls the
 * other streams of the worker.  The event loop then answers from the
 * prepared request: errors, count_tokens, or admission and generation.
 *
 * The task only reads the body, the configuration and the model-scoped
 * objects (templates and tokenizers are shared read-only by design) and
 * writes the prepared request, all malloc'd; it never touches the request
 * or its pool.  While it runs the request is "blocked" as for nginx's own
 * thread tasks, so a client that goes away cannot free it under the task.
 */
#include "ngx_http_llm_generate.h"

#include "api/llm_anthropic.h"
#include "api/llm_api_route.h"
#include "api/llm_volatile.h"


static void ngx_http_llm_prepare_thread(void *data, ngx_log_t *log);
static void ngx_http_llm_prepare_done(ngx_event_t *ev);
static void ngx_http_llm_prepared(ngx_http_request_t *r);


static void
ngx_http_llm_prep_cleanup(void *data)
{
    ngx_http_llm_prep_t *p = data;

    size_t  i;

    llm_request_free(&p->req);
    llm_embed_request_free(&p->ereq);
    llm_session_prompt_free(&p->prompt);
    llm_buf_free(&p->answer);
    for (i = 0; p->input_ids && i < p->n_inputs; i++) {
        free(p->input_ids[i]);
    }
    free(p->input_ids);
    free(p->input_n);
}


ngx_int_t
ngx_http_llm_prepare(ngx_http_request_t *r, u_char *body, size_t len)
{
    llm_api_route              route;
    ngx_table_elt_t           *h;
    ngx_thread_task_t         *task;
    ngx_pool_cleanup_t        *cln;
    ngx_http_llm_prep_t       *p;
    ngx_http_llm_loc_conf_t   *lcf;
    ngx_http_llm_main_conf_t  *mcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);

    task = ngx_thread_task_alloc(r->pool, sizeof(ngx_http_llm_prep_t));
    if (task == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = task->ctx;
    llm_request_init(&p->req);

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    cln->handler = ngx_http_llm_prep_cleanup;
    cln->data = p;

    /* messages or count_tokens: the handler let only those paths through */
    p->api = lcf->api;
    if (llm_api_route_uri(lcf->api, (char *) r->uri.data, r->uri.len, &route)
        == 0)
    {
        p->api = route.api;
    }
    h = ngx_http_llm_find_header(r, "anthropic-beta",
                                 sizeof("anthropic-beta") - 1);
    if (h) {
        p->anthropic_beta = h->value;
    }
    p->body = body;
    p->len = len;
    p->mcf = mcf;
    p->split_special_tokens = lcf->split_special_tokens;
    p->any_model = lcf->any_model;
    p->embeddings_max_tokens = (size_t) lcf->embeddings_max_tokens;

    task->handler = ngx_http_llm_prepare_thread;
    task->event.handler = ngx_http_llm_prepare_done;
    task->event.data = r;

    ngx_http_llm_get_ctx(r)->prep = p;

    /* as nginx's own thread tasks: the request outlives the task */
    r->main->blocked++;
    r->aio = 1;
    r->write_event_handler = ngx_http_llm_prepared;
    r->read_event_handler = ngx_http_test_reading;

    if (ngx_thread_task_post(mcf->prepare_pool, task) != NGX_OK) {
        r->main->blocked--;
        r->aio = 0;
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DONE;
}


static void
ngx_http_llm_prepare_done(ngx_event_t *ev)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = ev->data;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    r->main->blocked--;
    r->aio = 0;

    /* ngx_http_llm_prepared, or nginx's finalizer if the client went away */
    r->write_event_handler(r);

    ngx_http_run_posted_requests(c);
}


/* ---- the task (a thread of llm_prepare_thread_pool) ---- */

static ngx_http_llm_model_t *
ngx_http_llm_prep_model(ngx_http_llm_prep_t *p, const char *name)
{
    ngx_http_llm_model_t  *m;

    m = ngx_http_llm_find_model_in(p->mcf, name);

    /*
     * llm_any_model: agents send their own model names (and some rewrite
     * one they do not know); a single-model server may answer them all
     */
    if (m == NULL && p->any_model && p->mcf->models.nelts == 1) {
        m = p->mcf->models.elts;
    }

    if (m == NULL) {
        llm_api_error_model_not_found(&p->err, name);
    }

    return m;
}


/* Embeddings: every input's ids, bounded in total before the work. */
static void
ngx_http_llm_prep_embeddings(ngx_http_llm_prep_t *p, ngx_http_llm_model_t *m)
{
    long              bad, n_vocab;
    size_t            i, total;
    llm_embed_input  *in;

    p->n_inputs = p->ereq.n_inputs;
    p->input_ids = calloc(p->n_inputs + 1, sizeof(int32_t *));
    p->input_n = calloc(p->n_inputs + 1, sizeof(size_t));
    if (p->input_ids == NULL || p->input_n == NULL) {
        p->internal = "out of memory";
        return;
    }

    n_vocab = llm_model_get_info(m->model)->n_vocab;
    total = 0;

    for (i = 0; i < p->n_inputs; i++) {
        in = &p->ereq.inputs[i];

        if (in->text) {
            if (llm_tokenizer_encode(m->tokenizer, in->text, in->text_len, 1,
                                     &p->input_ids[i], &p->input_n[i])
                != 0)
            {
                p->internal = "out of memory";
                return;
            }

        } else {
            /* the engine would refuse it in the middle of a batch */
            bad = llm_model_find_bad_token(m->model, in->ids, in->n_ids);
            if (bad >= 0) {
                llm_api_error_set(&p->err, 400, NULL, "invalid_value",
                                  "input", "input token %ld is outside the "
                                  "vocabulary (0..%ld).", (long) in->ids[bad],
                                  n_vocab - 1);
                return;
            }
            p->input_n[i] = in->n_ids;
        }

        /* the whole request is work for one worker: bounded in total */
        total += p->input_n[i];
        if (total > p->embeddings_max_tokens) {
            llm_api_error_set(&p->err, 400, NULL, "too_many_tokens", "input",
                              "The inputs hold more than %zu tokens in all "
                              "(the limit per request, llm_embeddings_max_"
                              "tokens); send fewer or shorter inputs per "
                              "request.", p->embeddings_max_tokens);
            return;
        }
    }
}


static int
ngx_http_llm_token_bytes(void *ctx, int32_t id, char *out, size_t cap)
{
    return llm_tokenizer_token_bytes(ctx, id, out, cap);
}


/* /tokenize, /detokenize: the answer, written here off the event loop. */
static void
ngx_http_llm_prep_tokens(ngx_http_llm_prep_t *p, ngx_http_llm_model_t *m,
    const llm_session_model *sm)
{
    int     rc;
    char   *text;
    size_t  len;

    if (p->api == LLM_API_DETOKENIZE) {
        if (llm_session_detokenize(sm, &p->req, &text, &len, &p->err) != 0) {
            return;
        }
        rc = llm_api_detokenize_json(&p->answer, text, len);
        free(text);

    } else {
        if (llm_session_tokenize(sm, &p->req, &p->tokenize, &p->prompt,
                                 &p->err)
            != 0)
        {
            return;
        }
        rc = llm_api_tokenize_json(&p->answer, &p->tokenize, p->prompt.ids,
                                   p->prompt.n_ids, (long) m->context_length,
                                   ngx_http_llm_token_bytes, m->tokenizer);
    }

    if (rc != 0) {
        p->internal = "out of memory";
    }
}


static void
ngx_http_llm_prepare_thread(void *data, ngx_log_t *log)
{
    ngx_http_llm_prep_t *p = data;

    int                    rc;
    llm_api_limits         lim;
    llm_session_model      sm;
    ngx_http_llm_model_t  *m;

    llm_api_limits_default(&lim);

    if (p->api == LLM_API_EMBEDDINGS) {
        rc = llm_openai_parse_embeddings((char *) p->body, p->len, &lim,
                                         &p->ereq, &p->err);
        if (rc != 0) {
            return;
        }

        m = ngx_http_llm_prep_model(p, p->ereq.model);
        if (m == NULL) {
            return;
        }
        p->model = m;

        ngx_http_llm_prep_embeddings(p, m);
        return;
    }

    if (p->api == LLM_API_TOKENIZE) {
        rc = llm_api_parse_tokenize((char *) p->body, p->len, &lim, &p->req,
                                    &p->tokenize, &p->err);

    } else if (p->api == LLM_API_DETOKENIZE) {
        rc = llm_api_parse_detokenize((char *) p->body, p->len, &lim, &p->req,
                                      &p->err);

    } else {
        rc = llm_api_parse_request(p->api, (char *) p->body, p->len, &lim,
                                   &p->req, &p->err);
    }
    if (rc != 0) {
        return;
    }

    if (llm_anthropic_check_thinking_budget(&p->req,
                                            (char *) p->anthropic_beta.data,
                                            p->anthropic_beta.len, &p->err)
        != 0)
    {
        return;
    }

    m = ngx_http_llm_prep_model(p, p->req.model);
    if (m == NULL) {
        return;
    }
    p->model = m;

    /* /detokenize names its ids "tokens": the session checks them */
    if (p->api != LLM_API_DETOKENIZE
        && llm_api_check_token_ids(&p->req,
                                   llm_model_get_info(m->model)->n_vocab,
                                   &p->err)
           != 0)
    {
        return;
    }

    sm.alias = (char *) m->alias.data;
    sm.chat = m->chat;
    sm.tok = m->tokenizer;
    sm.reasoning_parser = m->reasoning_parser;
    sm.split_special_tokens = p->split_special_tokens != 0;

    /* lines that change per request would end every prefix match there */
    if (p->req.messages
        && llm_volatile_strip_messages(p->mcf->prompt_strip, p->req.messages)
           < 0)
    {
        llm_api_error_set(&p->err, 500, "api_error", "internal_error", NULL,
                          "out of memory");
        return;
    }

    if (p->api == LLM_API_TOKENIZE || p->api == LLM_API_DETOKENIZE) {
        ngx_http_llm_prep_tokens(p, m, &sm);
        return;
    }

    llm_session_build_prompt(&sm, &p->req, &p->prompt, &p->err);
}


/* ---- back on the event loop ---- */

static ngx_int_t
ngx_http_llm_count_tokens(ngx_http_request_t *r, ngx_http_llm_prep_t *p)
{
    llm_buf    b;
    ngx_int_t  status;

    llm_buf_init(&b);
    if (llm_anthropic_count_tokens_json(&b, (long) p->prompt.n_ids) != 0) {
        llm_buf_free(&b);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    status = ngx_http_llm_send_json(r, NGX_HTTP_OK, b.data, b.len);
    llm_buf_free(&b);

    return status;
}


static void
ngx_http_llm_prepared(ngx_http_request_t *r)
{
    ngx_int_t             rc;
    llm_api_error        *err;
    ngx_http_llm_ctx_t   *ctx;
    ngx_http_llm_prep_t  *p;

    ctx = ngx_http_llm_get_ctx(r);
    p = ctx->prep;
    ctx->model = p->model;

    /* nothing runs until the next handler is set */
    r->write_event_handler = ngx_http_request_empty_handler;

    err = &p->err;

    if (p->internal) {
        rc = ngx_http_llm_send_error(r, NGX_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                     NULL, NULL, "Preparing the request "
                                     "failed: %s.", p->internal);

    } else if (err->status) {
        if (p->prompt.template_error[0]) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "llm: chat template of \"%V\": %s",
                          &p->model->alias, p->prompt.template_error);
        }
        rc = ngx_http_llm_send_api_error(r, err);

    } else if (p->api == LLM_API_COUNT_TOKENS) {
        rc = ngx_http_llm_count_tokens(r, p);

    } else if (p->api == LLM_API_TOKENIZE || p->api == LLM_API_DETOKENIZE) {
        rc = ngx_http_llm_send_json(r, NGX_HTTP_OK, p->answer.data,
                                    p->answer.len);

    } else if (p->api == LLM_API_EMBEDDINGS) {
        rc = ngx_http_llm_embeddings(r, p);

    } else {
        rc = ngx_http_llm_generate(r, p);
    }

    if (rc == NGX_DONE) {
        return;    /* generation runs; it finalizes the request */
    }

    ngx_http_finalize_request(r, rc);
}
