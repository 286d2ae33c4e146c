/*
 * Per-worker step loops: each model's engine scheduler (engine/llm_sched.h)
 * driven by the nginx thread pool, one step in flight per model.
 */
#ifndef _NGX_HTTP_LLM_SCHED_H_INCLUDED_
#define _NGX_HTTP_LLM_SCHED_H_INCLUDED_

#include "ngx_http_llm_module.h"
#include "engine/llm_sched.h"


/* The scheduler configuration of an llm_model line (without its wake). */
void ngx_http_llm_sched_config(ngx_http_llm_main_conf_t *mcf,
    ngx_http_llm_model_t *m, llm_sched_config *cfg);

#endif
