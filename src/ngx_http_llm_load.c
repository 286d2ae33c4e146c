/*
 * Configuration-time model loading, in the master before fork, so that
 * `nginx -t` reports a bad model and workers share the mmap'd weights.
 */
#include "ngx_http_llm_module.h"

#include "chat/llm_served.h"


static void ngx_http_llm_model_cleanup(void *data);


/* Weights, tokenizer, chat template and parser choice (chat/llm_served.h). */
char *
ngx_http_llm_model_load(ngx_conf_t *cf, llm_served_model *m)
{
    char                 msg[1024];
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }
    cln->handler = ngx_http_llm_model_cleanup;
    cln->data = m;

    if (llm_served_load(&m->opts, &m->served, msg, sizeof(msg)) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "llm_model \"%s\": %s",
                           m->alias, msg);
        return NGX_CONF_ERROR;
    }

    if (m->opts.chat_off) {
        ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                           "llm_model \"%s\": chat=off: chat and messages "
                           "requests are refused", m->alias);

    } else if (m->served.chat == NULL) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "llm_model \"%s\": %s: chat and messages "
                           "requests are refused", m->alias,
                           m->served.chat_missing);
    }

    llm_served_summary(&m->opts, &m->served, msg, sizeof(msg));
    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0, "llm_model \"%s\": %s",
                       m->alias, msg);

    return NGX_CONF_OK;
}


static void
ngx_http_llm_model_cleanup(void *data)
{
    llm_served_model  *m = data;

    llm_served_free(&m->served);
}
