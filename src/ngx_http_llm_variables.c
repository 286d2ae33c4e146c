/*
 * $llm_model, $llm_prompt_tokens, $llm_completion_tokens, $llm_ttft_ms
 * for log_format; $llm_request_id, the id this module answers with.
 */
#include "ngx_http_llm_module.h"


typedef enum {
    NGX_HTTP_LLM_VAR_MODEL = 0,
    NGX_HTTP_LLM_VAR_PROMPT_TOKENS,
    NGX_HTTP_LLM_VAR_COMPLETION_TOKENS,
    NGX_HTTP_LLM_VAR_TTFT_MS
} ngx_http_llm_var_e;


static ngx_int_t
ngx_http_llm_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_http_llm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_llm_module);

    if (ctx == NULL || ctx->model == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    if (data != NGX_HTTP_LLM_VAR_MODEL) {
        return ngx_http_llm_var_number(r, v,
                   data == NGX_HTTP_LLM_VAR_PROMPT_TOKENS ? ctx->prompt_tokens
                   : data == NGX_HTTP_LLM_VAR_COMPLETION_TOKENS
                     ? ctx->completion_tokens
                   : ctx->ttft_ms);
    }

    v->data = (u_char *) ctx->model->alias;
    v->len = ctx->model->alias_len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/* A number for a variable; not found when n < 0 (none known yet). */
ngx_int_t
ngx_http_llm_var_number(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    long n)
{
    u_char  *p;

    if (n < 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->data = p;
    v->len = ngx_sprintf(p, "%l", n) - p;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * The client's X-Request-ID when valid, else $request_id: what responses of
 * llm_api and llm_errors locations carry, and what a front passes on to the
 * nodes (proxy_set_header X-Request-ID $llm_request_id) so both log one id.
 */
static ngx_int_t
ngx_http_llm_request_id_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_llm_ctx_t  *ctx;

    ctx = ngx_http_llm_get_ctx(r->main);
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    v->data = ctx->request_id.data;
    v->len = ctx->request_id.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_http_variable_t  ngx_http_llm_vars[] = {

    { ngx_string("llm_model"), NULL, ngx_http_llm_variable,
      NGX_HTTP_LLM_VAR_MODEL, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("llm_prompt_tokens"), NULL, ngx_http_llm_variable,
      NGX_HTTP_LLM_VAR_PROMPT_TOKENS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("llm_completion_tokens"), NULL, ngx_http_llm_variable,
      NGX_HTTP_LLM_VAR_COMPLETION_TOKENS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("llm_ttft_ms"), NULL, ngx_http_llm_variable,
      NGX_HTTP_LLM_VAR_TTFT_MS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("llm_request_id"), NULL, ngx_http_llm_request_id_variable,
      0, 0, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_llm_add_variables(ngx_conf_t *cf)
{
    return ngx_http_llm_register_variables(cf, ngx_http_llm_vars);
}


/* Adds a table of variables ended by ngx_http_null_variable. */
ngx_int_t
ngx_http_llm_register_variables(ngx_conf_t *cf, ngx_http_variable_t *vars)
{
    ngx_http_variable_t  *var, *v;

    for (v = vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}
