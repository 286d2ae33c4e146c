/*
 * Endpoints that need no inference: GET /v1/models[/{id}] and GET /health.
 */
#include "ngx_http_llm_module.h"


static ngx_int_t
ngx_http_llm_send_json_value(ngx_http_request_t *r, ngx_uint_t status,
    json_t *v)
{
    char       *s;
    ngx_int_t   rc;

    if (v == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    s = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    if (s == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_llm_send_json(r, status, s, ngx_strlen(s));
    free(s);

    return rc;
}


ngx_int_t
ngx_http_llm_models_handler(ngx_http_request_t *r)
{
    json_t                    *v;
    ngx_uint_t                 anthropic;
    llm_api_error              err;
    ngx_http_llm_main_conf_t  *mcf;
    ngx_http_llm_loc_conf_t   *lcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);
    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    /* Anthropic clients send anthropic-version: answer (errors too) in
     * their shape */
    anthropic = ngx_http_llm_find_header(r, "anthropic-version",
                                     sizeof("anthropic-version") - 1) != NULL;
    ngx_http_llm_get_ctx(r)->anthropic_shape = anthropic;

    /* max_output_tokens: the models location's llm_max_tokens, if set */
    v = llm_served_models_get(mcf->models.elts, mcf->models.nelts,
                              (long) lcf->max_tokens, (char *) r->uri.data,
                              r->uri.len, (int) anthropic, &err);
    if (v == NULL && err.status != 0) {
        return ngx_http_llm_send_api_error(r, &err);
    }

    return ngx_http_llm_send_json_value(r, NGX_HTTP_OK, v);
}


ngx_int_t
ngx_http_llm_health_handler(ngx_http_request_t *r)
{
    int                        unavailable;
    json_t                    *root;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);

    root = llm_served_health(mcf->models.elts, mcf->models.nelts,
                             (long) ngx_pid, &unavailable);

    /* a model not served by this worker (the error log says why): 503 */
    return ngx_http_llm_send_json_value(r, unavailable
                                           ? NGX_HTTP_SERVICE_UNAVAILABLE
                                           : NGX_HTTP_OK, root);
}
