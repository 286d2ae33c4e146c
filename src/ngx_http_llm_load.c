/*
 * Configuration-time model loading, in the master before fork, so that
 * `nginx -t` reports a bad model and workers share the mmap'd weights.
 */
#include "ngx_http_llm_module.h"


static void ngx_http_llm_model_cleanup(void *data);


char *
ngx_http_llm_model_load(ngx_conf_t *cf, ngx_http_llm_model_t *m)
{
    char                *path;
    json_t              *v;
    json_error_t         jerr;
    ngx_file_info_t      fi;
    ngx_pool_cleanup_t  *cln;

    path = (char *) m->path.data;   /* NUL-terminated by the conf parser */

    if (ngx_file_info(path, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "llm_model \"%V\": cannot access \"%s\"",
                           &m->alias, path);
        return NGX_CONF_ERROR;
    }

    if (!ngx_is_dir(&fi)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "llm_model \"%V\": \"%s\" is not a directory",
                           &m->alias, path);
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }
    cln->handler = ngx_http_llm_model_cleanup;
    cln->data = m;

    {
        char  file[NGX_MAX_PATH];

        ngx_snprintf((u_char *) file, sizeof(file), "%s/config.json%Z", path);
        m->config = json_load_file(file, 0, &jerr);
        if (m->config == NULL || !json_is_object(m->config)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "llm_model \"%V\": cannot load %s: %s",
                               &m->alias, file,
                               m->config ? "not a JSON object" : jerr.text);
            return NGX_CONF_ERROR;
        }
    }

    v = json_object_get(m->config, "max_position_embeddings");
    m->context_length = json_is_integer(v) && json_integer_value(v) > 0
                        ? (ngx_uint_t) json_integer_value(v) : 2048;

    if (m->ctx) {
        m->context_length = m->ctx;
    }

    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                       "llm_model \"%V\": %s, context %ui, parallel %ui",
                       &m->alias, path, m->context_length, m->parallel);

    return NGX_CONF_OK;
}


static void
ngx_http_llm_model_cleanup(void *data)
{
    ngx_http_llm_model_t  *m = data;

    json_decref(m->config);
    m->config = NULL;
}


/* Parser ids accepted by llm_tool_parser / llm_reasoning_parser. */

static const char *ngx_http_llm_tool_parser_ids[] = {
    "hermes", "llama3_json", "mistral", "qwen3_coder", "glm4",
    "deepseek_v3", "harmony", "pythonic", NULL
};

static const char *ngx_http_llm_reasoning_parser_ids[] = {
    "think", "harmony", NULL
};


ngx_uint_t
ngx_http_llm_parser_known(ngx_uint_t kind, const char *id)
{
    const char  **p;

    p = kind == NGX_HTTP_LLM_PARSER_TOOL ? ngx_http_llm_tool_parser_ids
                                         : ngx_http_llm_reasoning_parser_ids;
    for ( /* void */ ; *p; p++) {
        if (ngx_strcmp(*p, id) == 0) {
            return 1;
        }
    }

    return 0;
}


const char *
ngx_http_llm_parser_ids(ngx_uint_t kind)
{
    return kind == NGX_HTTP_LLM_PARSER_TOOL
           ? "hermes, llama3_json, mistral, qwen3_coder, glm4, deepseek_v3, "
             "harmony, pythonic"
           : "think, harmony";
}
