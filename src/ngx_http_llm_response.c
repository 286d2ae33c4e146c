/*
 * Responses: JSON bodies, protocol-shaped errors, and a header/body filter
 * that gives every response of an llm_api location an X-Request-ID and turns
 * nginx's own error pages (413 from client_max_body_size, 429/503 from
 * limit_req, 401 from auth_basic, ...) into the location's protocol error shape.
 */
#include "ngx_http_llm_module.h"

#include "api/llm_api.h"


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/*
 * The protocol whose shape a response of this configuration takes: the
 * location's llm_api kind, else its llm_errors, or, while no location is
 * chosen yet (the server's own level), the server's; NGX_CONF_UNSET when
 * none has one.
 */
ngx_int_t
ngx_http_llm_error_api(ngx_http_llm_loc_conf_t *lcf)
{
    return lcf->api != NGX_CONF_UNSET ? lcf->api
           : lcf->errors != NGX_CONF_UNSET ? lcf->errors
           : lcf->server_api;
}


u_char *
ngx_http_llm_error_json(ngx_http_request_t *r, const llm_api_error *err,
    size_t *len)
{
    int                       rc;
    u_char                   *out;
    llm_buf                   b;
    ngx_http_llm_ctx_t       *ctx;
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);
    ctx = ngx_http_llm_get_ctx(r);

    llm_buf_init(&b);
    rc = llm_api_error_body(ctx && ctx->anthropic_shape
                            ? LLM_API_MESSAGES
                            : (llm_api_kind) ngx_http_llm_error_api(lcf),
                            &b, err, ctx ? (char *) ctx->request_id.data : NULL,
                            ctx ? ctx->request_id.len : 0);

    out = NULL;
    if (rc == 0) {
        out = ngx_pnalloc(r->pool, b.len + 1);
        if (out) {
            ngx_memcpy(out, b.data, b.len);
            out[b.len] = '\0';
            *len = b.len;
        }
    }
    llm_buf_free(&b);

    return out;
}


ngx_int_t
ngx_http_llm_send_json(ngx_http_request_t *r, ngx_uint_t status,
    const char *body, size_t len)
{
    return ngx_http_llm_send_bytes(r, status, "application/json",
                                   (const u_char *) body, len, 1);
}


ngx_int_t
ngx_http_llm_send_bytes(ngx_http_request_t *r, ngx_uint_t status,
    const char *content_type, const u_char *body, size_t len, ngx_uint_t copy)
{
    ngx_int_t            rc;
    ngx_buf_t           *b;
    ngx_chain_t          out;
    ngx_http_llm_ctx_t  *ctx;

    ctx = ngx_http_llm_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ctx->own_response = 1;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;
    r->headers_out.content_type.data = (u_char *) content_type;
    r->headers_out.content_type.len = ngx_strlen(content_type);
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    if (r->method == NGX_HTTP_HEAD || len == 0) {
        r->header_only = 1;
        return ngx_http_send_header(r);
    }

    b = copy ? ngx_create_temp_buf(r->pool, len) : ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (copy) {
        b->last = ngx_cpymem(b->pos, body, len);
    } else {
        b->pos = (u_char *) body;
        b->last = b->pos + len;
        b->memory = 1;
    }
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    return ngx_http_output_filter(r, &out);
}


ngx_int_t
ngx_http_llm_send_api_error(ngx_http_request_t *r, const llm_api_error *err)
{
    u_char  *body;
    size_t   len;

    if (err->status >= 500) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "llm: %s",
                      err->message);
    } else {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "llm: client error %d: %s", err->status, err->message);
    }

    body = ngx_http_llm_error_json(r, err, &len);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_llm_send_json(r, err->status, (char *) body, len);
}


ngx_int_t
ngx_http_llm_add_header(ngx_http_request_t *r, const char *key,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) key;
    h->key.len = ngx_strlen(key);
    h->value = *value;

    return NGX_OK;
}


static ngx_int_t
ngx_http_llm_header_filter(ngx_http_request_t *r)
{
    u_char                   *body;
    size_t                    len;
    ngx_uint_t                status;
    llm_api_error             err;
    ngx_http_llm_ctx_t       *ctx;
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    if (lcf == NULL || ngx_http_llm_error_api(lcf) == NGX_CONF_UNSET
        || r != r->main)
    {
        return ngx_http_next_header_filter(r);
    }

    /*
     * llm_errors alone (a proxy location): responses from elsewhere, a
     * node's own errors included, pass untouched; only nginx's own error
     * pages (err_status set) are replaced.
     */
    if (lcf->api == NGX_CONF_UNSET && lcf->errors != NGX_CONF_UNSET
        && (r->err_status < 400 || r->header_only))
    {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_llm_get_ctx(r);
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_llm_add_header(r, "X-Request-ID", &ctx->request_id)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    status = r->headers_out.status;

    if (ctx->own_response || status < 400 || r->header_only) {
        return ngx_http_next_header_filter(r);
    }

    /* an error page generated by nginx itself: send the protocol's shape */

    llm_api_error_set(&err, (int) status, llm_openai_error_type((int) status),
                      NULL, NULL, "%s", llm_api_status_message((int) status));
    body = ngx_http_llm_error_json(r, &err, &len);
    if (body == NULL) {
        return ngx_http_next_header_filter(r);
    }

    ctx->error_body.data = body;
    ctx->error_body.len = len;
    ctx->rewrite_body = 1;

    r->headers_out.content_length_n = len;
    if (r->headers_out.content_length) {
        r->headers_out.content_length->hash = 0;
        r->headers_out.content_length = NULL;
    }
    ngx_str_set(&r->headers_out.content_type, "application/json");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.charset.len = 0;

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_llm_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_buf_t           *b;
    ngx_uint_t           last;
    ngx_chain_t         *cl, out;
    ngx_http_llm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_llm_module);

    if (ctx == NULL || !ctx->rewrite_body || in == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    /* swallow nginx's HTML page, send the JSON body once */

    last = 0;
    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf || cl->buf->last_in_chain) {
            last = 1;
        }
        cl->buf->pos = cl->buf->last;
        if (cl->buf->in_file) {
            cl->buf->file_pos = cl->buf->file_last;
        }
    }

    if (ctx->rewritten || !last) {
        return NGX_OK;
    }

    ctx->rewritten = 1;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = ctx->error_body.data;
    b->last = ctx->error_body.data + ctx->error_body.len;
    b->memory = 1;
    b->last_buf = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_next_body_filter(r, &out);
}


ngx_int_t
ngx_http_llm_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_llm_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_llm_body_filter;

    return NGX_OK;
}
