/*
 * Endpoints that need no inference: GET /v1/models[/{id}] and GET /health.
 */
#include "ngx_http_llm_module.h"

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


static json_t *
ngx_http_llm_model_object(ngx_http_llm_model_t *m)
{
    json_t  *o;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }

    json_object_set_new(o, "id", json_stringn((char *) m->alias.data,
                                              m->alias.len));
    json_object_set_new(o, "object", json_string("model"));
    json_object_set_new(o, "created", json_integer(m->created));
    json_object_set_new(o, "owned_by", json_string("ngx_llm"));
    json_object_set_new(o, "context_length",
                        json_integer(m->context_length));

    return o;
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
    json_t                    *list, *data;
    ngx_str_t                  id;
    ngx_uint_t                 i;
    llm_api_route              route;
    ngx_http_llm_model_t      *m;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);
    m = mcf->models.elts;

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
                                            ngx_http_llm_model_object(&m[i]));
            }
        }

        return ngx_http_llm_send_error(r, NGX_HTTP_NOT_FOUND, NULL, "model",
                                       "model_not_found",
                                       "The model '%V' does not exist.", &id);
    }

    list = json_object();
    data = json_array();
    if (list == NULL || data == NULL) {
        json_decref(list);
        json_decref(data);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set_new(list, "object", json_string("list"));
    json_object_set_new(list, "data", data);

    for (i = 0; i < mcf->models.nelts; i++) {
        json_array_append_new(data, ngx_http_llm_model_object(&m[i]));
    }

    return ngx_http_llm_send_json_value(r, NGX_HTTP_OK, list);
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
