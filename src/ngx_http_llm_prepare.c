/*
 * Request preparation off the event loop: chat/llm_prepare.h (body JSON ->
 * protocol IR -> model -> chat template -> prompt token ids, or the
 * embeddings inputs' ids, or a /tokenize answer) runs as a task in
 * llm_prepare_thread_pool, so that a large body, a template render near its
 * step bound or a long prompt to tokenize never stalls the other streams of
 * the worker.  The event loop then answers from the prepared request:
 * errors, count_tokens, or admission and generation.
 *
 * The task only reads the body, the configuration and the model-scoped
 * objects (templates and tokenizers are shared read-only by design) and
 * writes the prepared request, all malloc'd; it never touches the request
 * or its pool.  While it runs the request is "blocked" as for nginx's own
 * thread tasks, so a client that goes away cannot free it under the task.
 */
#include "ngx_http_llm_generate.h"

#include "api/llm_api_route.h"


static void ngx_http_llm_prepare_thread(void *data, ngx_log_t *log);
static void ngx_http_llm_prepare_done(ngx_event_t *ev);
static void ngx_http_llm_prepared(ngx_http_request_t *r);


static int ngx_http_llm_prep_find(void *data, const char *name,
    llm_prepare_model *pm);


static void
ngx_http_llm_prep_cleanup(void *data)
{
    ngx_http_llm_prep_t *p = data;

    llm_prepared_free(&p->pr);
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
    llm_prepared_init(&p->pr);

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    cln->handler = ngx_http_llm_prep_cleanup;
    cln->data = p;

    /* messages or count_tokens: the handler let only those paths through */
    p->cfg.api = lcf->api;
    if (llm_api_route_uri(lcf->api, (char *) r->uri.data, r->uri.len, &route)
        == 0)
    {
        p->cfg.api = route.api;
    }
    h = ngx_http_llm_find_header(r, "anthropic-beta",
                                 sizeof("anthropic-beta") - 1);
    if (h) {
        p->cfg.anthropic_beta = (char *) h->value.data;
        p->cfg.anthropic_beta_len = h->value.len;
    }
    p->cfg.prompt_strip = mcf->prompt_strip;
    p->cfg.thinking_key = &mcf->thinking_key;
    p->cfg.responses = ngx_http_llm_responses_lookup(mcf);
    p->cfg.split_special_tokens = lcf->split_special_tokens != 0;
    p->cfg.embeddings_max_tokens = (size_t) lcf->embeddings_max_tokens;
    p->cfg.find_model = ngx_http_llm_prep_find;
    p->cfg.find_data = p;
    p->body = body;
    p->len = len;
    p->mcf = mcf;
    p->any_model = lcf->any_model;

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

/* The model a request names, from the configuration (read only). */
static int
ngx_http_llm_prep_find(void *data, const char *name, llm_prepare_model *pm)
{
    ngx_http_llm_prep_t *p = data;

    return llm_served_pick(p->mcf->models.elts, p->mcf->models.nelts, name,
                           p->any_model, pm);
}


static void
ngx_http_llm_prepare_thread(void *data, ngx_log_t *log)
{
    ngx_http_llm_prep_t *p = data;

    llm_prepare(&p->cfg, (char *) p->body, p->len, &p->pr);
}


/* ---- back on the event loop ---- */

static void
ngx_http_llm_prepared(ngx_http_request_t *r)
{
    ngx_int_t             rc;
    llm_api_error        *err;
    ngx_http_llm_ctx_t   *ctx;
    ngx_http_llm_prep_t  *p;

    ctx = ngx_http_llm_get_ctx(r);
    p = ctx->prep;
    p->model = p->pr.model.owner;
    ctx->model = p->model;

    /* nothing runs until the next handler is set */
    r->write_event_handler = ngx_http_request_empty_handler;

    err = &p->pr.err;

    if (err->status) {
        if (p->pr.prompt.template_error[0]) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "llm: chat template of \"%s\": %s",
                          p->model->alias, p->pr.prompt.template_error);
        }
        rc = ngx_http_llm_send_api_error(r, err);

    } else if (p->pr.answer.len) {    /* count_tokens, tokenize, detokenize */
        rc = ngx_http_llm_send_json(r, NGX_HTTP_OK, p->pr.answer.data,
                                    p->pr.answer.len);

    } else if (p->model->sched == NULL) {   /* not served by this worker */
        llm_api_error_not_loaded(err, p->model->alias, p->model->alias_len);
        rc = ngx_http_llm_send_api_error(r, err);

    } else if (p->cfg.api == LLM_API_EMBEDDINGS) {
        rc = ngx_http_llm_embeddings(r, p);

    } else {
        rc = ngx_http_llm_generate(r, p);
    }

    if (rc == NGX_DONE) {
        return;    /* generation runs; it finalizes the request */
    }

    ngx_http_finalize_request(r, rc);
}
