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
#include "ngx_http_llm_sched.h"

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
    size_t                     kv;
    uint64_t                   limit, total, workers, per_worker;
    ngx_uint_t                 i;
    llm_memory_need            need;
    llm_sched_config           cfg;
    ngx_core_conf_t           *ccf;
    ngx_http_llm_model_t      *m;
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

    ngx_memzero(&need, sizeof(need));

    m = mcf->models.elts;
    for (i = 0; i < mcf->models.nelts; i++) {
        ngx_http_llm_sched_config(mcf, &m[i], &cfg);
        per_worker = llm_sched_memory(m[i].served.model, &cfg, &kv);
        llm_memory_add(&need, llm_model_get_info(m[i].served.model)->weight_bytes
                              + (m[i].served.draft
                                 ? llm_model_get_info(m[i].served.draft)
                                                  ->weight_bytes : 0),
                       per_worker);

        total = llm_memory_total(&need, workers);
        if (total <= limit) {
            continue;
        }

        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "llm_model \"%V\": each worker needs %uL MiB for it "
                      "(KV memory of %uL MiB, kv_memory=, for parallel=%d "
                      "sequences of up to ctx=%d, and scratch), so the "
                      "models need %uL MiB (weights "
                      "%uL MiB, shared, plus %uL worker%s x %uL MiB), more "
                      "than the %uL MiB of %s; lower kv_memory= or ctx=, use "
                      "kv=f16 or kv=q8_0, or fewer worker_processes in %s:%ui",
                      &m[i].alias, per_worker >> 20, (uint64_t) kv >> 20,
                      m[i].opts.parallel, m[i].served.n_ctx, total >> 20, need.shared >> 20,
                      workers, workers == 1 ? "" : "s",
                      need.per_worker >> 20, limit >> 20,
                      mcf->memory_limit != NGX_CONF_UNSET
                      ? "llm_memory_limit" : "this machine's memory",
                      m[i].conf_file, m[i].conf_line);
        return NGX_CONF_ERROR;
    }

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "llm: the models need %uL MiB (weights %uL MiB, shared, "
                  "plus %uL worker%s x %uL MiB) of %uL MiB",
                  llm_memory_total(&need, workers) >> 20, need.shared >> 20,
                  workers, workers == 1 ? "" : "s", need.per_worker >> 20,
                  limit >> 20);

    return NGX_CONF_OK;
}
