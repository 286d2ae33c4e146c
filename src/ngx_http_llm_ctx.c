/*
 * The request context of every module of the library (ngx_http_llm_ctx_t):
 * created on first use with the request's id, and the request-header lookup
 * it and the endpoints share.  Its own file, so that every part of the glue
 * can reach it without depending on the content handler.
 */
#include "ngx_http_llm_module.h"


ngx_table_elt_t *
ngx_http_llm_find_header(ngx_http_request_t *r, const char *name, size_t len)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }
            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == len
            && ngx_strncasecmp(h[i].key.data, (u_char *) name, len) == 0)
        {
            return &h[i];
        }
    }

    return NULL;
}


ngx_http_llm_ctx_t *
ngx_http_llm_get_ctx(ngx_http_request_t *r)
{
    ngx_table_elt_t            *h;
    ngx_http_llm_ctx_t         *ctx;
    ngx_http_variable_value_t  *vv;
    ngx_http_llm_main_conf_t   *mcf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_llm_module);
    if (ctx) {
        return ctx;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_llm_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ctx->ttft_ms = -1;
    ctx->start_ms = ngx_current_msec;

    h = ngx_http_llm_find_header(r, "X-Request-ID", sizeof("X-Request-ID") - 1);
    if (h && llm_api_request_id_valid((char *) h->value.data, h->value.len)) {
        ctx->request_id = h->value;

    } else {
        mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);
        vv = ngx_http_get_indexed_variable(r, mcf->request_id_index);
        if (vv == NULL || vv->not_found) {
            return NULL;
        }
        ctx->request_id.data = vv->data;
        ctx->request_id.len = vv->len;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_llm_module);

    return ctx;
}
