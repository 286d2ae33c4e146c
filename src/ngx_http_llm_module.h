/*
 * ngx_http_llm_module: shared declarations of the nginx glue.
 */
#ifndef _NGX_HTTP_LLM_MODULE_H_INCLUDED_
#define _NGX_HTTP_LLM_MODULE_H_INCLUDED_

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <ngx_thread_pool.h>

#include <jansson.h>

#include "api/llm_api.h"
#include "api/llm_thinking_sig.h"
#include "chat/llm_served_set.h"
#include "core/llm_ir.h"


typedef struct ngx_http_llm_responses_s  ngx_http_llm_responses_t;


typedef struct {
    /* the llm_model lines, loaded in the master at configuration time; each
     * worker gives each its scheduler and step loop (_sched.c) */
    ngx_array_t                models;       /* llm_served_model */
    ngx_str_t                  thread_pool_name;
    ngx_thread_pool_t         *thread_pool;
    ngx_str_t                  prepare_pool_name;    /* llm_prepare_thread_pool */
    ngx_thread_pool_t         *prepare_pool;
    ngx_int_t                  request_id_index;
    off_t                      memory_limit; /* llm_memory_limit, or unset */
    /* llm_prompt_strip: volatile system-prompt lines; NULL = the default list */
    struct llm_volatile_set   *prompt_strip;
    /* /metrics: the block in the shared zone (_metrics.c), a slot per worker */
    struct llm_metrics        *metrics;
    ngx_uint_t                 metrics_workers;
    size_t                     metrics_size;
    /* llm_thinking_key FILE, else random per configuration (made in the
     * master, so every worker has it) */
    ngx_str_t                  thinking_key_file;
    llm_thinking_key           thinking_key;
    /* llm_kv_cache_path: the disk tier of the prefix caches, or NULL */
    ngx_path_t                *kv_cache_path;
    llm_served_disk            kv_cache;     /* its name, NUL-terminated;
                                                max_size= */
    /* llm_responses_store: the kept responses' zone, or NULL */
    ngx_http_llm_responses_t  *responses;
} ngx_http_llm_main_conf_t;


typedef struct {
    ngx_int_t                  api;          /* llm_api_kind, NGX_CONF_UNSET if none */
    /*
     * Server level only (not inherited): the error shape of a server with
     * llm_api locations, for errors nginx answers before a location is
     * chosen (TRACE, Content-Length with Transfer-Encoding): MESSAGES when
     * every llm_api location of the server is Anthropic, else CHAT.
     */
    ngx_int_t                  server_api;
    ngx_int_t                  errors;       /* llm_errors: LLM_API_CHAT (OpenAI
                                                shape), LLM_API_MESSAGES
                                                (Anthropic) or NGX_CONF_UNSET */
    ngx_str_t                  tool_parser;  /* "auto", "none" or an id */
    ngx_str_t                  reasoning_parser;
    llm_parser_choice          tool;         /* the two, resolved at merge */
    llm_parser_choice          reasoning;
    ngx_int_t                  max_tokens;   /* llm_max_tokens, NGX_CONF_UNSET: none */
    size_t                     max_response_size;  /* llm_max_response_size */
    ngx_int_t                  embeddings_max_tokens;   /* all inputs of a request */
    ngx_flag_t                 split_special_tokens;    /* request text: no control tokens */
    ngx_msec_t                 stream_keepalive;  /* llm_stream_keepalive; 0 = off */
    ngx_flag_t                 any_model;    /* llm_any_model: the only model
                                                answers every model name */
    ngx_uint_t                 speculation;  /* llm_speculation: LLM_SPECULATION_* */
} ngx_http_llm_loc_conf_t;


/* Request context. */
typedef struct {
    ngx_str_t                  request_id;
    ngx_uint_t                 own_response:1;   /* body produced by this module */
    ngx_uint_t                 anthropic_shape:1;  /* errors in Anthropic's shape
                                                      (GET /v1/models with
                                                      anthropic-version) */
    ngx_uint_t                 rewrite_body:1;   /* nginx error page replaced */
    ngx_uint_t                 rewritten:1;
    ngx_str_t                  error_body;       /* JSON for a replaced error page */

    llm_served_model          *model;
    long                       prompt_tokens;
    long                       completion_tokens;
    ngx_msec_int_t             ttft_ms;          /* -1 until the first token */
    ngx_msec_t                 start_ms;
    void                      *gen;              /* generation (_generate.c) */
    void                      *prep;             /* prepared request (_prepare.c) */
} ngx_http_llm_ctx_t;


extern ngx_module_t  ngx_http_llm_module;


ngx_http_llm_ctx_t *ngx_http_llm_get_ctx(ngx_http_request_t *r);
/* The first request header called name (case-insensitive), or NULL. */
ngx_table_elt_t *ngx_http_llm_find_header(ngx_http_request_t *r,
    const char *name, size_t len);

/* Responses (ngx_http_llm_response.c). */
ngx_int_t ngx_http_llm_send_json(ngx_http_request_t *r, ngx_uint_t status,
    const char *body, size_t len);
/* A body of content_type; copy = 0: it outlives the request (sent from
 * where it is), else copied to the request's pool. */
ngx_int_t ngx_http_llm_send_bytes(ngx_http_request_t *r, ngx_uint_t status,
    const char *content_type, const u_char *body, size_t len,
    ngx_uint_t copy);
/* err (the layers' only error type) in the location's protocol shape. */
ngx_int_t ngx_http_llm_send_api_error(ngx_http_request_t *r,
    const llm_api_error *err);
/* err's body in the shape of the request's protocol; NULL when out of memory. */
u_char *ngx_http_llm_error_json(ngx_http_request_t *r, const llm_api_error *err,
    size_t *len);
ngx_int_t ngx_http_llm_filter_init(ngx_conf_t *cf);
ngx_int_t ngx_http_llm_add_header(ngx_http_request_t *r, const char *key,
    ngx_str_t *value);
ngx_int_t ngx_http_llm_error_api(ngx_http_llm_loc_conf_t *lcf);

/* Endpoints that need no inference (ngx_http_llm_info.c). */
ngx_int_t ngx_http_llm_models_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_llm_health_handler(ngx_http_request_t *r);
/* The chat page compiled into the module (ngx_http_llm_page.c). */
ngx_int_t ngx_http_llm_page_handler(ngx_http_request_t *r);

/*
 * /metrics (ngx_http_llm_metrics.c): the shared zone and the log-phase
 * counter of requests (postconfiguration), the scrape, and what the step
 * loop and generation report: an observation of a model's histogram
 * (LLM_METRICS_TTFT, _ITL, _STEP of core/llm_metrics.h) and this worker's
 * scheduler counters and gauges for a model.
 */
ngx_int_t ngx_http_llm_metrics_postconfiguration(ngx_conf_t *cf);
ngx_int_t ngx_http_llm_metrics_handler(ngx_http_request_t *r);
void ngx_http_llm_metrics_observe(llm_served_model *m, ngx_uint_t kind,
    uint64_t ns);
void ngx_http_llm_metrics_publish(llm_served_model *m);

/* llm_responses_store zone=NAME:SIZE [ttl=TIME] (ngx_http_llm_responses.c). */
char *ngx_http_llm_responses_store(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* Configuration-time model loading (ngx_http_llm_load.c). */
char *ngx_http_llm_model_load(ngx_conf_t *cf, llm_served_model *m);

/* Content handler (ngx_http_llm_handler.c). */
ngx_int_t ngx_http_llm_handler(ngx_http_request_t *r);
/* The whole request body in one NUL-terminated buffer of r->pool (read from
 * its temp file if needed); "" when there is none, NULL on failure. */
u_char *ngx_http_llm_collect_body(ngx_http_request_t *r, size_t *len);

/* Variables (ngx_http_llm_variables.c). */
ngx_int_t ngx_http_llm_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_llm_register_variables(ngx_conf_t *cf,
    ngx_http_variable_t *vars);
/* n as the variable's value, not found when n < 0 (not known yet). */
ngx_int_t ngx_http_llm_var_number(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, long n);

/* Per-worker schedulers (ngx_http_llm_sched.c). */
ngx_int_t ngx_http_llm_workers_init(ngx_cycle_t *cycle);
void ngx_http_llm_workers_exit(ngx_cycle_t *cycle);

#endif
