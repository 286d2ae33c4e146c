/*
 * Configuration-time model loading, in the master before fork, so that
 * `nginx -t` reports a bad model and workers share the mmap'd weights.
 */
#include "ngx_http_llm_module.h"

#include "chat/llm_served.h"


static void ngx_http_llm_model_cleanup(void *data);
static char *ngx_http_llm_model_load_engine(ngx_conf_t *cf,
    ngx_http_llm_model_t *m);


char *
ngx_http_llm_model_load(ngx_conf_t *cf, ngx_http_llm_model_t *m)
{
    char                *path;
    size_t               len;
    ngx_file_info_t      fi;
    ngx_pool_cleanup_t  *cln;

    path = (char *) m->path.data;   /* NUL-terminated by the conf parser */

    if (ngx_file_info(path, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "llm_model \"%V\": cannot access \"%s\"",
                           &m->alias, path);
        return NGX_CONF_ERROR;
    }

    /* a Hugging Face / MLX folder, or a GGUF file (the first of its splits) */
    len = ngx_strlen(path);
    if (!ngx_is_dir(&fi)
        && !(ngx_is_file(&fi) && len > 5
             && ngx_strcmp(path + len - 5, ".gguf") == 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "llm_model \"%V\": \"%s\" is neither a model "
                           "folder nor a .gguf file", &m->alias, path);
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }
    cln->handler = ngx_http_llm_model_cleanup;
    cln->data = m;

    return ngx_http_llm_model_load_engine(cf, m);
}


/* Weights, tokenizer, chat template and parser choice (chat/llm_served.h). */
static char *
ngx_http_llm_model_load_engine(ngx_conf_t *cf, ngx_http_llm_model_t *m)
{
    char                   err[1024];
    llm_served            *sv = &m->served;
    const llm_model_info  *info;

    if (llm_served_load(&m->opts, sv, err, sizeof(err)) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "llm_model \"%V\": %s",
                           &m->alias, err);
        return NGX_CONF_ERROR;
    }

    if (m->opts.chat_off) {
        ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                           "llm_model \"%V\": chat=off: chat and messages "
                           "requests are refused", &m->alias);

    } else if (sv->chat == NULL) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "llm_model \"%V\": %s: chat and messages "
                           "requests are refused", &m->alias,
                           sv->chat_missing);
    }

    info = llm_model_get_info(sv->model);

    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                       "llm_model \"%V\": %s %s, %uL parameters, %s, "
                       "%uL MiB of weights, context %d (trained %d), "
                       "parallel %d, threads %d, kv_memory %uz MiB; %s",
                       &m->alias, info->architecture, m->opts.path,
                       (uint64_t) info->n_params, info->dtype,
                       (uint64_t) (info->weight_bytes >> 20),
                       sv->n_ctx, info->max_position_embeddings,
                       m->opts.parallel, m->opts.threads,
                       sv->kv_memory >> 20, sv->why);

    return NGX_CONF_OK;
}


static void
ngx_http_llm_model_cleanup(void *data)
{
    ngx_http_llm_model_t  *m = data;

    llm_served_free(&m->served);
}
