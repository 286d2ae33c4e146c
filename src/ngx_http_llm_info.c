/*
 * Endpoints that need no inference: GET /v1/models[/{id}] and GET /health.
 */
#include "ngx_http_llm_module.h"

#include "api/llm_api_models.h"
#include "chat/llm_report.h"


ngx_http_llm_model_t *
ngx_http_llm_find_model_in(ngx_http_llm_main_conf_t *mcf, const char *name)
{
    size_t                     len;
    ngx_uint_t                 i;
    ngx_http_llm_model_t      *m;

    m = mcf->models.elts;

    if (name == NULL || name[0] == '\0') {
        /* a single model answers requests that name none */
        return mcf->models.nelts == 1 ? &m[0] : NULL;
    }

    len = ngx_strlen(name);

    for (i = 0; i < mcf->models.nelts; i++) {
        if (m[i].alias.len == len
            && ngx_strncmp(m[i].alias.data, name, len) == 0)
        {
            return &m[i];
        }
    }

    return NULL;
}


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
    ngx_uint_t                 i, anthropic;
    llm_api_error              err;
    llm_api_model_card        *cards;
    ngx_http_llm_model_t      *m;
    ngx_http_llm_main_conf_t  *mcf;
    ngx_http_llm_loc_conf_t   *lcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);
    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);
    m = mcf->models.elts;

    /* Anthropic clients send anthropic-version: answer (errors too) in
     * their shape */
    anthropic = ngx_http_llm_find_header(r, "anthropic-version",
                                     sizeof("anthropic-version") - 1) != NULL;
    ngx_http_llm_get_ctx(r)->anthropic_shape = anthropic;

    cards = ngx_palloc(r->pool, (mcf->models.nelts + 1) * sizeof(*cards));
    if (cards == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    for (i = 0; i < mcf->models.nelts; i++) {
        /* max_output_tokens: the models location's llm_max_tokens, if set */
        llm_api_model_card_init(&cards[i], (char *) m[i].alias.data,
                                m[i].alias.len, (long long) m[i].created,
                                m[i].served.n_ctx, (long) lcf->max_tokens);
    }

    v = llm_api_models_get(cards, mcf->models.nelts, (char *) r->uri.data,
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
    ngx_uint_t                 i;
    llm_report_model          *list;
    ngx_http_llm_model_t      *m;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);
    m = mcf->models.elts;

    list = ngx_palloc(r->pool, (mcf->models.nelts + 1) * sizeof(*list));
    if (list == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    for (i = 0; i < mcf->models.nelts; i++) {
        list[i].id = (char *) m[i].alias.data;
        list[i].id_len = m[i].alias.len;
        list[i].context_length = m[i].served.n_ctx;
        list[i].parallel = m[i].opts.parallel;
        list[i].sched = m[i].sched;
    }

    root = llm_report_health(list, mcf->models.nelts, (long) ngx_pid,
                             &unavailable);

    /* a model not served by this worker (the error log says why): 503 */
    return ngx_http_llm_send_json_value(r, unavailable
                                           ? NGX_HTTP_SERVICE_UNAVAILABLE
                                           : NGX_HTTP_OK, root);
}
