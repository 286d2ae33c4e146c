/*
 * Endpoints that need no inference: GET /v1/models[/{id}] and GET /health.
 */
#include "ngx_http_llm_module.h"

#include "api/llm_api_models.h"
#include "api/llm_api_route.h"


ngx_http_llm_model_t *
ngx_http_llm_find_model(ngx_http_request_t *r, const char *name)
{
    return ngx_http_llm_find_model_in(
               ngx_http_get_module_main_conf(r, ngx_http_llm_module), name);
}


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


/* max_tokens: the llm_max_tokens of the models location, or NGX_CONF_UNSET */
static void
ngx_http_llm_model_card(ngx_http_llm_model_t *m, ngx_int_t max_tokens,
    llm_api_model_card *card)
{
    card->id = (char *) m->alias.data;
    card->id_len = m->alias.len;
    card->created = (long long) m->created;
    card->context_length = (long) m->context_length;
    card->max_output_tokens = max_tokens != NGX_CONF_UNSET
                              && (ngx_uint_t) max_tokens < m->context_length
                              ? (long) max_tokens : (long) m->context_length;
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
    u_char                    *name;
    ngx_str_t                  id;
    ngx_uint_t                 i, anthropic;
    llm_api_error              err;
    llm_api_route              route;
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
        ngx_http_llm_model_card(&m[i], lcf->max_tokens, &cards[i]);
    }

    /* the handler answered paths other than /models[/{id}] with a 404 */
    if (llm_api_route_uri(LLM_API_MODELS, (char *) r->uri.data, r->uri.len,
                          &route) == 0
        && route.id != NULL)
    {
        id.data = (u_char *) route.id;
        id.len = route.id_len;

        for (i = 0; i < mcf->models.nelts; i++) {
            if (m[i].alias.len == id.len
                && ngx_strncmp(m[i].alias.data, id.data, id.len) == 0)
            {
                return ngx_http_llm_send_json_value(r, NGX_HTTP_OK,
                                    llm_api_model_object(&cards[i], anthropic));
            }
        }

        /* the id is part of the URI: a NUL-terminated copy for the words */
        name = ngx_pnalloc(r->pool, id.len + 1);
        if (name == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        *ngx_cpymem(name, id.data, id.len) = '\0';

        llm_api_error_model_not_found(&err, (char *) name);
        return ngx_http_llm_send_api_error(r, &err);
    }

    return ngx_http_llm_send_json_value(r, NGX_HTTP_OK,
                    llm_api_model_list(cards, mcf->models.nelts, anthropic));
}


ngx_int_t
ngx_http_llm_health_handler(ngx_http_request_t *r)
{
    json_t                    *root, *models, *o;
    ngx_uint_t                 i, status;
    ngx_http_llm_model_t      *m;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);
    m = mcf->models.elts;

    root = json_object();
    models = json_array();
    if (root == NULL || models == NULL) {
        json_decref(root);
        json_decref(models);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set_new(root, "status", json_string("ok"));
    json_object_set_new(root, "models", models);
    status = NGX_HTTP_OK;

    for (i = 0; i < mcf->models.nelts; i++) {
        o = json_object();
        if (o == NULL) {
            json_decref(root);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        json_object_set_new(o, "id", json_stringn((char *) m[i].alias.data,
                                                  m[i].alias.len));
        json_object_set_new(o, "context_length",
                            json_integer(m[i].context_length));
        json_object_set_new(o, "parallel", json_integer(m[i].parallel));

        if (m[i].sched == NULL) {
            /* not served by this worker (see the error log): 503 */
            json_object_set_new(o, "status", json_string("unavailable"));
            json_object_set_new(root, "status", json_string("unavailable"));
            status = NGX_HTTP_SERVICE_UNAVAILABLE;
        }

        ngx_http_llm_sched_health(m[i].sched, o);
        json_array_append_new(models, o);
    }

    json_object_set_new(root, "pid", json_integer(ngx_pid));

    return ngx_http_llm_send_json_value(r, status, root);
}
