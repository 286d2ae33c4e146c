/*
 * Per-worker step loops: each model's engine scheduler (engine/llm_sched.h)
 * driven by the nginx thread pool, one step in flight per model.
 */
#ifndef _NGX_HTTP_LLM_SCHED_H_INCLUDED_
#define _NGX_HTTP_LLM_SCHED_H_INCLUDED_

#include "ngx_http_llm_module.h"
#include "engine/llm_sched.h"


/* The KV cache bytes of a worker's scheduler (for logs and /health). */
size_t ngx_http_llm_kv_bytes(llm_sched *s);

/* The runtime options of an llm_model line (before the engine resolves defaults). */
void ngx_http_llm_runtime_opts(ngx_http_llm_model_t *m, llm_runtime_opts *o);

#endif
