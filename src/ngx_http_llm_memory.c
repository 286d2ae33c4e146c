/*
 * ngx_http_llm_memory_module: the memory check of a configuration.
 *
 * Every worker allocates, per model, its KV memory (kv_memory: blocks the
 * sequences share) and scratch buffers (llm_runtime_memory), committed when
 * the worker starts;
 * the mapped weights are shared by all workers.  A configuration whose total
 * exceeds llm_memory_limit (default: the memory of the machine or of its
 * cgroup) is refused here, with the file and line of the llm_model that tips
 * it over: at nginx -t, at nginx -s reload (the old workers keep serving)
 * and at start, instead of workers that die allocating it or are killed
 * later.
 *
 * A core module, so that its init_conf runs once the whole configuration
 * has been read: worker_processes may come after the http block.
 */
#include "ngx_http_llm_module.h"

#include "engine/llm_memory.h"


static char *ngx_http_llm_memory_init_conf(ngx_cycle_t *cycle, void *conf);


static ngx_core_module_t  ngx_http_llm_memory_module_ctx = {
    ngx_string("llm_memory"),
    NULL,
    ngx_http_llm_memory_init_conf
};


ngx_module_t  ngx_http_llm_memory_module = {
    NGX_MODULE_V1,
    &ngx_http_llm_memory_module_ctx,       /* module context */
    NULL,                                  /* module directives */
    NGX_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static char *
ngx_http_llm_memory_init_conf(ngx_cycle_t *cycle, void *conf)
{
    char                       msg[NGX_MAX_ERROR_STR];
    uint64_t                   limit, workers;
    ngx_core_conf_t           *ccf;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_llm_module);
    if (mcf == NULL || mcf->models.nelts == 0) {
        return NGX_CONF_OK;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);
    workers = ccf->worker_processes > 0 ? (uint64_t) ccf->worker_processes
                                        : 1;

    limit = mcf->memory_limit != NGX_CONF_UNSET
            ? (uint64_t) mcf->memory_limit : llm_memory_available();
    if (limit == 0) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "llm: the machine's memory is unknown and no "
                      "llm_memory_limit is set: KV caches are not checked");
        return NGX_CONF_OK;
    }

    if (llm_served_memory_check(mcf->models.elts, mcf->models.nelts,
                                &mcf->kv_cache, workers, limit,
                                mcf->memory_limit != NGX_CONF_UNSET, msg,
                                sizeof(msg))
        != 0)
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "%s", msg);
        return NGX_CONF_ERROR;
    }

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0, "%s", msg);

    return NGX_CONF_OK;
}
