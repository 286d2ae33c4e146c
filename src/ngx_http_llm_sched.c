/*
 * Per-worker schedulers: one per model, created after fork.
 */
#include "ngx_http_llm_module.h"


ngx_int_t
ngx_http_llm_workers_init(ngx_cycle_t *cycle)
{
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_llm_module);
    if (mcf == NULL || mcf->models.nelts == 0) {
        return NGX_OK;
    }

    mcf->thread_pool = ngx_thread_pool_get(cycle, &mcf->thread_pool_name);
    if (mcf->thread_pool == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "llm: thread pool \"%V\" not found",
                      &mcf->thread_pool_name);
        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_http_llm_workers_exit(ngx_cycle_t *cycle)
{
}


void
ngx_http_llm_sched_health(ngx_http_llm_sched_t *s, json_t *out)
{
}
