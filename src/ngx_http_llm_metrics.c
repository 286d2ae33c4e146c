/*
 * /metrics (llm_api metrics): the shared zone that holds the metrics of
 * every worker (core/llm_metrics.h lays it out and renders it), the log
 * phase handler that counts each request of an llm_api location, and what
 * the step loop and the generation path report.
 */
#include "ngx_http_llm_generate.h"

#include "api/llm_api_route.h"


#define NGX_HTTP_LLM_METRICS_TYPE  "text/plain; version=0.0.4; charset=utf-8"


static ngx_str_t  ngx_http_llm_metrics_zone_name = ngx_string("llm_metrics");


static ngx_http_llm_main_conf_t *
ngx_http_llm_metrics_conf(void)
{
    return ngx_http_cycle_get_module_main_conf(ngx_cycle, ngx_http_llm_module);
}


/*
 * Lays the block out.  A reload that keeps the zone's size reuses its
 * memory (nginx keeps the slab pool as it was): the block goes on counting
 * when the models and workers are as many as before, else starts over.
 */
static ngx_int_t
ngx_http_llm_metrics_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_llm_main_conf_t *mcf = shm_zone->data;

    ngx_slab_pool_t  *sp;

    sp = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (data && sp->data) {
        mcf->metrics = sp->data;
        if (!llm_metrics_has_shape(mcf->metrics, mcf->models.nelts,
                                   mcf->metrics_workers))
        {
            ngx_slab_free(sp, sp->data);
            sp->data = NULL;
        }
    }

    if (sp->data == NULL) {
        sp->data = ngx_slab_alloc(sp, mcf->metrics_size);
        if (sp->data == NULL) {
            return NGX_ERROR;
        }
        llm_metrics_init(sp->data, mcf->models.nelts, mcf->metrics_workers);
    }

    mcf->metrics = sp->data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_llm_metrics_log(ngx_http_request_t *r)
{
    llm_api_route              route;
    ngx_http_llm_ctx_t        *ctx;
    ngx_http_llm_loc_conf_t   *lcf;
    ngx_http_llm_main_conf_t  *mcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);

    if (lcf->api == NGX_CONF_UNSET || mcf->metrics == NULL
        || r != r->main)
    {
        return NGX_OK;
    }

    route.api = (llm_api_kind) lcf->api;
    (void) llm_api_route_uri((llm_api_kind) lcf->api, (char *) r->uri.data,
                             r->uri.len, &route);
    llm_metrics_request(mcf->metrics, route.api, r->headers_out.status);

    ctx = ngx_http_get_module_ctx(r, ngx_http_llm_module);
    if (ctx && ctx->model && ctx->ttft_ms >= 0) {
        llm_metrics_observe(mcf->metrics,
                            ctx->model - (llm_served_model *)
                                         mcf->models.elts,
                            LLM_METRICS_TTFT,
                            (uint64_t) ctx->ttft_ms * 1000000);
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_llm_metrics_postconfiguration(ngx_conf_t *cf)
{
    ngx_core_conf_t            *ccf;
    ngx_shm_zone_t             *zone;
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;
    ngx_http_llm_main_conf_t   *mcf;

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_llm_module);
    if (mcf->models.nelts == 0) {
        return NGX_OK;
    }

    /* a slot per worker; worker_processes may follow http {} (then 1) */
    ccf = (ngx_core_conf_t *) ngx_get_conf(cf->cycle->conf_ctx,
                                           ngx_core_module);
    mcf->metrics_workers = ccf->worker_processes > 0
                           && ccf->worker_processes != NGX_CONF_UNSET
                           ? (ngx_uint_t) ccf->worker_processes : 1;
    mcf->metrics_size = llm_metrics_size(mcf->models.nelts,
                                         mcf->metrics_workers);

    zone = ngx_shared_memory_add(cf, &ngx_http_llm_metrics_zone_name,
                                 8 * ngx_pagesize
                                 + 2 * ngx_align(mcf->metrics_size,
                                                 ngx_pagesize),
                                 &ngx_http_llm_module);
    if (zone == NULL) {
        return NGX_ERROR;
    }
    zone->init = ngx_http_llm_metrics_init_zone;
    zone->data = mcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }
    *h = ngx_http_llm_metrics_log;

    return NGX_OK;
}


void
ngx_http_llm_metrics_observe(llm_served_model *m, ngx_uint_t kind,
    uint64_t ns)
{
    ngx_http_llm_main_conf_t  *mcf = ngx_http_llm_metrics_conf();

    if (mcf && mcf->metrics) {
        llm_metrics_observe(mcf->metrics,
                            m - (llm_served_model *) mcf->models.elts,
                            (llm_metrics_hist_kind) kind, ns);
    }
}


void
ngx_http_llm_metrics_publish(llm_served_model *m)
{
    ngx_http_llm_main_conf_t  *mcf = ngx_http_llm_metrics_conf();

    if (m && mcf && mcf->metrics) {
        llm_served_publish(mcf->metrics, mcf->models.elts,
                           m - (llm_served_model *) mcf->models.elts,
                           ngx_worker);
    }
}


ngx_int_t
ngx_http_llm_metrics_handler(ngx_http_request_t *r)
{
    llm_buf                    b;
    ngx_int_t                  rc;
    llm_api_error              err;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);

    if (mcf->metrics == NULL) {
        llm_api_error_no_metrics(&err);
        return ngx_http_llm_send_api_error(r, &err);
    }

    llm_buf_init(&b);
    if (llm_served_metrics(mcf->metrics, mcf->models.elts, mcf->models.nelts,
                           ngx_worker, &b)
        != 0)
    {
        llm_buf_free(&b);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_llm_send_bytes(r, NGX_HTTP_OK, NGX_HTTP_LLM_METRICS_TYPE,
                                 (u_char *) b.data, b.len, 1);
    llm_buf_free(&b);

    return rc;
}
