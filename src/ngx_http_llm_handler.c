/*
 * Content handler of llm_api locations: method checks, body reading and
 * dispatch to the endpoint.
 */
#include "ngx_http_llm_generate.h"

#include "api/llm_anthropic.h"
#include "api/llm_api_route.h"


/*
 * A worker told to shut down (nginx -s reload, -s quit) stays while
 * non-cancelable timers exist; a request that is generating or waiting for a
 * slot owns none, so without this one the worker would drop it.  The timer
 * lives as long as the request: it keeps the worker until the request is
 * done; worker_shutdown_timeout still bounds that (it closes the connection,
 * and the pool cleanup deletes the timer).
 */
#define NGX_HTTP_LLM_HOLD_MS  (3600 * 1000)


static void ngx_http_llm_body_handler(ngx_http_request_t *r);


/* A refusal before the body is read: the body, if any, is discarded. */
static ngx_int_t
ngx_http_llm_refuse(ngx_http_request_t *r, const llm_api_error *err)
{
    ngx_int_t  rc;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_http_llm_send_api_error(r, err);
}


/* 405 with Allow. */
static ngx_int_t
ngx_http_llm_not_allowed(ngx_http_request_t *r, char *allowed)
{
    ngx_str_t      value;
    llm_api_error  err;

    value.data = (u_char *) allowed;
    value.len = ngx_strlen(allowed);

    if (ngx_http_llm_add_header(r, "Allow", &value) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    llm_api_error_method(&err, (char *) r->method_name.data,
                         r->method_name.len, allowed);
    return ngx_http_llm_refuse(r, &err);
}


static void
ngx_http_llm_hold_handler(ngx_event_t *ev)
{
    ngx_add_timer(ev, NGX_HTTP_LLM_HOLD_MS);
}


static void
ngx_http_llm_hold_cleanup(void *data)
{
    ngx_event_t  *ev = data;

    if (ev->timer_set) {
        ngx_del_timer(ev);
    }
}


/* Keeps a shutting-down worker alive until this request is done. */
static ngx_int_t
ngx_http_llm_hold_worker(ngx_http_request_t *r)
{
    ngx_event_t         *ev;
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_event_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }

    ev = cln->data;
    ngx_memzero(ev, sizeof(ngx_event_t));
    ev->handler = ngx_http_llm_hold_handler;
    ev->data = r;
    ev->log = r->connection->log;

    cln->handler = ngx_http_llm_hold_cleanup;

    ngx_add_timer(ev, NGX_HTTP_LLM_HOLD_MS);

    return NGX_OK;
}


ngx_int_t
ngx_http_llm_handler(ngx_http_request_t *r)
{
    ngx_int_t                 rc;
    ngx_uint_t                info;
    llm_api_error             err;
    llm_api_route             route;
    ngx_table_elt_t          *ct;
    ngx_http_llm_ctx_t       *ctx;
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    ctx = ngx_http_llm_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* 404 in the protocol's shape for a path the location does not answer */
    if (llm_api_route_uri(lcf->api, (char *) r->uri.data, r->uri.len, &route)
        != 0)
    {
        llm_api_error_unknown_url(&err, (char *) r->method_name.data,
                                  r->method_name.len, (char *) r->uri.data,
                                  r->uri.len);
        return ngx_http_llm_refuse(r, &err);
    }

    /* GET and DELETE of a kept response */
    if (route.api == LLM_API_RESPONSES && route.id) {
        if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_DELETE))) {
            return ngx_http_llm_not_allowed(r, "GET, HEAD, DELETE");
        }

        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_llm_responses_handler(r, route.id, route.id_len);
    }

    info = llm_api_route_reads(lcf->api);

    if (info ? !(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
             : r->method != NGX_HTTP_POST)
    {
        return ngx_http_llm_not_allowed(r, info ? "GET, HEAD" : "POST");
    }

    if (info) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return lcf->api == LLM_API_MODELS ? ngx_http_llm_models_handler(r)
               : lcf->api == LLM_API_HEALTH ? ngx_http_llm_health_handler(r)
               : lcf->api == LLM_API_PAGE ? ngx_http_llm_page_handler(r)
               : ngx_http_llm_metrics_handler(r);
    }

    /* 415 in the protocol's shape unless the body says it is JSON */
    ct = r->headers_in.content_type;
    if (ct == NULL
        || !llm_api_content_type_is_json((char *) ct->value.data,
                                         ct->value.len))
    {
        llm_api_error_content_type(&err, ct ? (char *) ct->value.data : NULL,
                                   ct ? ct->value.len : 0);
        return ngx_http_llm_refuse(r, &err);
    }

    if (ngx_http_llm_hold_worker(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->request_body_in_single_buf = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_llm_body_handler);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/* Collects the request body into one buffer, reading a temp file if needed. */
u_char *
ngx_http_llm_collect_body(ngx_http_request_t *r, size_t *len)
{
    u_char       *p, *body;
    size_t        size;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    if (r->request_body == NULL || r->request_body->bufs == NULL) {
        *len = 0;
        return (u_char *) "";
    }

    size = 0;
    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;
        size += b->in_file ? (size_t) (b->file_last - b->file_pos)
                           : (size_t) (b->last - b->pos);
    }

    body = ngx_pnalloc(r->pool, size + 1);
    if (body == NULL) {
        return NULL;
    }

    p = body;
    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;
        if (b->in_file) {
            n = ngx_read_file(b->file, p, b->file_last - b->file_pos,
                              b->file_pos);
            if (n != b->file_last - b->file_pos) {
                return NULL;
            }
            p += n;

        } else {
            p = ngx_cpymem(p, b->pos, b->last - b->pos);
        }
    }

    *p = '\0';
    *len = size;

    return body;
}


static void
ngx_http_llm_body_handler(ngx_http_request_t *r)
{
    u_char         *body;
    size_t          len;
    ngx_int_t       rc;
    llm_api_error   err;

    body = ngx_http_llm_collect_body(r, &len);
    if (body == NULL) {
        llm_api_error_internal(&err, "Could not read the request body.");
        ngx_http_finalize_request(r, ngx_http_llm_send_api_error(r, &err));
        return;
    }

    /* parsing, the template and the tokenizer run in a thread */
    rc = ngx_http_llm_prepare(r, body, len);

    if (rc == NGX_DONE) {
        return;    /* the prepared request is answered when the task is done */
    }

    ngx_http_finalize_request(r, rc);
}
