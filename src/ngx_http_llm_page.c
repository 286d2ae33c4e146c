/*
 * llm_api page: the chat page (src/page/chat.html) compiled into the module
 * and answered for GET and HEAD.
 *
 * The file is embedded by the assembler (.incbin) from the path config gives
 * as LLM_PAGE_FILE, so the module needs no installed share directory and the
 * page always matches the API of the module serving it; config lists the
 * file among the module's dependencies, so editing it rebuilds this object.
 * The page revalidates on every load (Cache-Control: no-cache) against an
 * ETag of its bytes: nginx's not-modified filter answers a matching
 * If-None-Match with 304, and a new module build shows its new page at once.
 */
#include "ngx_http_llm_module.h"

#ifndef LLM_PAGE_FILE
#error "LLM_PAGE_FILE (the chat page's path) is set by the addon's config"
#endif

__asm__(
    "    .pushsection .rodata\n"
    "    .balign 16\n"
    "ngx_http_llm_page_start:\n"
    "    .incbin \"" LLM_PAGE_FILE "\"\n"
    "ngx_http_llm_page_end:\n"
    "    .popsection\n");

extern const u_char  ngx_http_llm_page_start[] __asm__("ngx_http_llm_page_start");
extern const u_char  ngx_http_llm_page_end[] __asm__("ngx_http_llm_page_end");


ngx_int_t
ngx_http_llm_page_handler(ngx_http_request_t *r)
{
    size_t            len;
    ngx_str_t         v;
    ngx_table_elt_t  *etag;

    static ngx_str_t  cache = ngx_string("no-cache");
    static ngx_str_t  nosniff = ngx_string("nosniff");
    /* inline script and style only; fetch to this origin only */
    static ngx_str_t  csp = ngx_string("default-src 'none'; "
                                       "script-src 'unsafe-inline'; "
                                       "style-src 'unsafe-inline'; "
                                       "connect-src 'self'; "
                                       "base-uri 'none'; form-action 'none'");

    len = ngx_http_llm_page_end - ngx_http_llm_page_start;

    if (ngx_http_llm_add_header(r, "Cache-Control", &cache) != NGX_OK
        || ngx_http_llm_add_header(r, "X-Content-Type-Options", &nosniff)
           != NGX_OK
        || ngx_http_llm_add_header(r, "Content-Security-Policy", &csp)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* "crc32-length" of the bytes: changes with any change of the page */
    v.data = ngx_pnalloc(r->pool, sizeof("\"ffffffff-\"") + NGX_SIZE_T_LEN);
    if (v.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    v.len = ngx_sprintf(v.data, "\"%08xD-%uz\"",
                        ngx_crc32_long((u_char *) ngx_http_llm_page_start, len),
                        len)
            - v.data;

    if (ngx_http_llm_add_header(r, "ETag", &v) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    etag = r->headers_out.headers.last->elts;
    r->headers_out.etag = &etag[r->headers_out.headers.last->nelts - 1];

    /* the page is in the module's image: sent from there, not copied */
    return ngx_http_llm_send_bytes(r, NGX_HTTP_OK, "text/html; charset=utf-8",
                                   ngx_http_llm_page_start, len, 0);
}
