/*
 * ngx_http_llm_route_module: routing by prompt on a front nginx, which may
 * load this library with no llm_model at all.
 *
 *   $llm_prefix_key              the request's prefix key (api/llm_prefix_key.h)
 *                                for `hash $llm_prefix_key consistent`
 *   $llm_prompt_tokens_estimate  its prompt size, estimated without a tokenizer
 *   llm_route @name if_prompt_tokens>N;
 *                                reads the body before the content phase and
 *                                hands a request whose estimate is above N to
 *                                a named location, body kept
 *   llm_prefix_key_bytes size;   completions prompt bytes in the key
 *
 * A module of its own (built into the same library as ngx_http_llm_module)
 * so that its configuration and request context stay apart from serving.
 */
#include "ngx_http_llm_module.h"

#include "api/llm_prefix_key.h"


typedef struct {
    ngx_str_t                  name;         /* "@name" */
    long                       min_tokens;   /* routed when estimate > this */
} ngx_http_llm_route_t;


typedef struct {
    ngx_array_t               *routes;       /* ngx_http_llm_route_t */
    size_t                     prompt_bytes;
} ngx_http_llm_route_loc_conf_t;


typedef struct {
    ngx_int_t                  status;       /* of the precontent handler */
    ngx_uint_t                 scanned;      /* info below is computed */
    llm_prefix_info            info;
} ngx_http_llm_route_ctx_t;


static ngx_int_t ngx_http_llm_route_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_llm_route_init(ngx_conf_t *cf);
static void *ngx_http_llm_route_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_llm_route_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_llm_route(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_conf_num_bounds_t  ngx_http_llm_prompt_bytes_bounds = {
    ngx_conf_check_num_bounds, 1, 1048576
};


static ngx_command_t  ngx_http_llm_route_commands[] = {

    { ngx_string("llm_route"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE2,
      ngx_http_llm_route,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("llm_prefix_key_bytes"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_route_loc_conf_t, prompt_bytes),
      &ngx_http_llm_prompt_bytes_bounds },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_llm_route_module_ctx = {
    ngx_http_llm_route_add_variables,      /* preconfiguration */
    ngx_http_llm_route_init,               /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_llm_route_create_loc_conf,    /* create location configuration */
    ngx_http_llm_route_merge_loc_conf      /* merge location configuration */
};


ngx_module_t  ngx_http_llm_route_module = {
    NGX_MODULE_V1,
    &ngx_http_llm_route_module_ctx,        /* module context */
    ngx_http_llm_route_commands,           /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/*
 * The key and estimate of this request, computed once from its body; NULL
 * while the body is not (completely) in memory or a temp file: not read yet,
 * or being streamed upstream as it arrives (proxy_request_buffering off).
 */
static llm_prefix_info *
ngx_http_llm_route_info(ngx_http_request_t *r)
{
    u_char                         *body;
    size_t                          len;
    llm_prefix_opts                 opts;
    ngx_http_llm_route_ctx_t       *ctx;
    ngx_http_llm_route_loc_conf_t  *lcf;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_llm_route_module);
    if (ctx && ctx->scanned) {
        return &ctx->info;
    }

    if (r->main->request_body == NULL || r->main->request_body_no_buffering) {
        return NULL;
    }

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_llm_route_ctx_t));
        if (ctx == NULL) {
            return NULL;
        }
        ngx_http_set_ctx(r->main, ctx, ngx_http_llm_route_module);
    }

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_route_module);

    ngx_memzero(&opts, sizeof(opts));
    opts.prompt_bytes = lcf->prompt_bytes;

    ctx->scanned = 1;

    body = ngx_http_llm_collect_body(r->main, &len);
    if (body == NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "llm: the request body could not be read for "
                      "$llm_prefix_key");
        ctx->info.key[0] = '\0';
        ctx->info.prompt_tokens_estimate = -1;
        return &ctx->info;
    }

    (void) llm_prefix_key((char *) body, len, &opts, &ctx->info);

    return &ctx->info;
}


static ngx_int_t
ngx_http_llm_prefix_key_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    llm_prefix_info  *info;

    info = ngx_http_llm_route_info(r);

    /* empty: nginx's hash balancers fall back to round-robin */
    if (info == NULL || info->key[0] == '\0') {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = (u_char *) info->key;
    v->len = ngx_strlen(info->key);
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_int_t
ngx_http_llm_estimate_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    llm_prefix_info  *info;

    info = ngx_http_llm_route_info(r);

    return ngx_http_llm_var_number(r, v,
                                   info ? info->prompt_tokens_estimate : -1);
}


static ngx_http_variable_t  ngx_http_llm_route_vars[] = {

    /* not cacheable: a value read before the body arrived must not stick */

    { ngx_string("llm_prefix_key"), NULL, ngx_http_llm_prefix_key_variable,
      0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("llm_prompt_tokens_estimate"), NULL,
      ngx_http_llm_estimate_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_llm_route_add_variables(ngx_conf_t *cf)
{
    return ngx_http_llm_register_variables(cf, ngx_http_llm_route_vars);
}


/* ---- llm_route: the body is read in the precontent phase ---- */

static void
ngx_http_llm_route_body_handler(ngx_http_request_t *r)
{
    ngx_uint_t                      i;
    llm_prefix_info                *info;
    ngx_http_llm_route_t           *route;
    ngx_http_llm_route_ctx_t       *ctx;
    ngx_http_llm_route_loc_conf_t  *lcf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_llm_route_module);
    ctx->status = NGX_DECLINED;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_route_module);
    info = ngx_http_llm_route_info(r);

    if (info && info->prompt_tokens_estimate >= 0) {
        route = lcf->routes->elts;

        for (i = 0; i < lcf->routes->nelts; i++) {
            if (info->prompt_tokens_estimate <= route[i].min_tokens) {
                continue;
            }

            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "llm: request goes to \"%V\": prompt tokens "
                          "estimate %l > %l", &route[i].name,
                          info->prompt_tokens_estimate, route[i].min_tokens);

            /* the named location runs with the body already read */
            ngx_http_finalize_request(r,
                                      ngx_http_named_location(r,
                                                              &route[i].name));
            return;
        }
    }

    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);
}


static ngx_int_t
ngx_http_llm_route_handler(ngx_http_request_t *r)
{
    ngx_int_t                       rc;
    ngx_http_llm_route_ctx_t       *ctx;
    ngx_http_llm_route_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_route_module);

    if (lcf->routes == NULL || r != r->main) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_llm_route_module);

    if (ctx && ctx->status) {
        return ctx->status;
    }

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_llm_route_ctx_t));
        if (ctx == NULL) {
            return NGX_ERROR;
        }
        ngx_http_set_ctx(r, ctx, ngx_http_llm_route_module);
    }

    ctx->status = NGX_DONE;

    rc = ngx_http_read_client_request_body(r, ngx_http_llm_route_body_handler);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    ngx_http_finalize_request(r, NGX_DONE);
    return NGX_DONE;
}


static ngx_int_t
ngx_http_llm_route_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_llm_route_handler;

    return NGX_OK;
}


static void *
ngx_http_llm_route_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_llm_route_loc_conf_t  *lcf;

    lcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_llm_route_loc_conf_t));
    if (lcf == NULL) {
        return NULL;
    }

    lcf->routes = NGX_CONF_UNSET_PTR;
    lcf->prompt_bytes = NGX_CONF_UNSET_SIZE;

    return lcf;
}


static char *
ngx_http_llm_route_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_llm_route_loc_conf_t *prev = parent;
    ngx_http_llm_route_loc_conf_t *conf = child;

    ngx_conf_merge_ptr_value(conf->routes, prev->routes, NULL);
    ngx_conf_merge_size_value(conf->prompt_bytes, prev->prompt_bytes,
                              LLM_PREFIX_DEFAULT_PROMPT_BYTES);

    return NGX_CONF_OK;
}


/* llm_route @name if_prompt_tokens>N; */
static char *
ngx_http_llm_route(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_llm_route_loc_conf_t *lcf = conf;

    long                   min;
    ngx_str_t             *value;
    ngx_http_llm_route_t  *route;

    value = cf->args->elts;

    if (value[1].len < 2 || value[1].data[0] != '@') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "llm_route needs a named location such as "
                           "\"@big\", not \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    if (llm_route_condition((char *) value[2].data, value[2].len, &min) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid llm_route condition \"%V\", expected "
                           "if_prompt_tokens>N", &value[2]);
        return NGX_CONF_ERROR;
    }

    if (lcf->routes == NGX_CONF_UNSET_PTR) {
        lcf->routes = ngx_array_create(cf->pool, 2,
                                       sizeof(ngx_http_llm_route_t));
        if (lcf->routes == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    route = ngx_array_push(lcf->routes);
    if (route == NULL) {
        return NGX_CONF_ERROR;
    }

    route->name = value[1];
    route->min_tokens = min;

    return NGX_CONF_OK;
}
