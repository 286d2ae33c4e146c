/*
 * ngx_http_llm_module: directives, configuration and per-worker start-up.
 */
#include "ngx_http_llm_module.h"

#include "api/llm_api_route.h"
#include "api/llm_volatile.h"
#include "chat/llm_served.h"
#include "engine/llm_kv_disk.h"


static void *ngx_http_llm_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_llm_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_llm_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_llm_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_llm_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_llm_init_process(ngx_cycle_t *cycle);
static void ngx_http_llm_exit_process(ngx_cycle_t *cycle);

static char *ngx_http_llm_model(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_llm_kv_cache_path(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_llm_prompt_strip(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_llm_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_llm_parser(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_llm_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_llm_errors(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_conf_num_bounds_t  ngx_http_llm_max_tokens_bounds = {
    ngx_conf_check_num_bounds, 1, 1048576
};


static ngx_conf_num_bounds_t  ngx_http_llm_embeddings_max_tokens_bounds = {
    ngx_conf_check_num_bounds, 1, 16777216
};


/*
 * The random key that signs thinking blocks when no llm_thinking_key is
 * set: made once, in the master, and kept across the configuration cycles
 * of that master, so blocks signed before `nginx -s reload` still verify
 * after it.  A restart (or binary upgrade) makes a new one.
 */
static llm_thinking_key  ngx_http_llm_random_thinking_key;

static ngx_conf_enum_t  ngx_http_llm_speculation[] = {
    { ngx_string("off"), LLM_SPECULATION_OFF },
    { ngx_string("auto"), LLM_SPECULATION_AUTO },
    { ngx_string("on"), LLM_SPECULATION_ON },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_llm_commands[] = {

    { ngx_string("llm_model"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_llm_model,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("llm_memory_limit"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_off_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_llm_main_conf_t, memory_limit),
      NULL },

    { ngx_string("llm_kv_cache_path"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE12,
      ngx_http_llm_kv_cache_path,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("llm_prompt_strip"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_llm_prompt_strip,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("llm_thread_pool"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_llm_thread_pool,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_llm_main_conf_t, thread_pool_name),
      NULL },

    { ngx_string("llm_prepare_thread_pool"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_llm_thread_pool,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_llm_main_conf_t, prepare_pool_name),
      NULL },

    { ngx_string("llm_tool_parser"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_llm_parser,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, tool_parser),
      (void *) LLM_PARSER_TOOL },

    { ngx_string("llm_reasoning_parser"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_llm_parser,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, reasoning_parser),
      (void *) LLM_PARSER_REASONING },

    { ngx_string("llm_api"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_llm_api,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("llm_errors"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_llm_errors,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("llm_max_tokens"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, max_tokens),
      &ngx_http_llm_max_tokens_bounds },

    { ngx_string("llm_split_special_tokens"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, split_special_tokens),
      NULL },

    { ngx_string("llm_max_response_size"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, max_response_size),
      NULL },

    { ngx_string("llm_embeddings_max_tokens"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, embeddings_max_tokens),
      &ngx_http_llm_embeddings_max_tokens_bounds },

    { ngx_string("llm_any_model"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, any_model),
      NULL },

    { ngx_string("llm_stream_keepalive"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, stream_keepalive),
      NULL },

    { ngx_string("llm_responses_store"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE12,
      ngx_http_llm_responses_store,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("llm_thinking_key"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_llm_main_conf_t, thinking_key_file),
      NULL },

    { ngx_string("llm_speculation"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_llm_loc_conf_t, speculation),
      &ngx_http_llm_speculation },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_llm_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_llm_postconfiguration,        /* postconfiguration */

    ngx_http_llm_create_main_conf,         /* create main configuration */
    ngx_http_llm_init_main_conf,           /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_llm_create_loc_conf,          /* create location configuration */
    ngx_http_llm_merge_loc_conf            /* merge location configuration */
};


ngx_module_t  ngx_http_llm_module = {
    NGX_MODULE_V1,
    &ngx_http_llm_module_ctx,              /* module context */
    ngx_http_llm_commands,                 /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_llm_init_process,             /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_llm_exit_process,             /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_http_llm_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_llm_main_conf_t));
    if (mcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&mcf->models, cf->pool, 2,
                       sizeof(llm_served_model))
        != NGX_OK)
    {
        return NULL;
    }

    mcf->request_id_index = NGX_ERROR;
    mcf->memory_limit = NGX_CONF_UNSET;

    return mcf;
}


static char *
ngx_http_llm_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_llm_main_conf_t *mcf = conf;

    char         err[512];
    int          rc;
    ngx_str_t   *pool[2] = { &mcf->thread_pool_name, &mcf->prepare_pool_name };
    ngx_uint_t   i;

    if (mcf->models.nelts == 0) {
        return NGX_CONF_OK;
    }

    /* the key that signs Anthropic thinking blocks */
    if (mcf->thinking_key_file.len) {
        if (ngx_conf_full_name(cf->cycle, &mcf->thinking_key_file, 1)
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }
        rc = llm_thinking_key_load(&mcf->thinking_key,
                                   (char *) mcf->thinking_key_file.data, err,
                                   sizeof(err));
    } else {
        rc = ngx_http_llm_random_thinking_key.len
             ? 0
             : llm_thinking_key_random(&ngx_http_llm_random_thinking_key,
                                       err, sizeof(err));
        mcf->thinking_key = ngx_http_llm_random_thinking_key;
    }
    if (rc != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "llm_thinking_key: %s", err);
        return NGX_CONF_ERROR;
    }

    /*
     * Steps run in llm_thread_pool, requests are prepared (parsed, rendered,
     * tokenized) in llm_prepare_thread_pool: both nginx's "default" pool
     * unless named, so that a long preparation never waits behind, or
     * delays, a step in a single-thread llm_thread_pool.
     */
    for (i = 0; i < 2; i++) {
        if (pool[i]->len == 0) {
            ngx_str_set(pool[i], "default");

            if (ngx_thread_pool_add(cf, pool[i]) == NULL) {
                return NGX_CONF_ERROR;
            }
        }
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_llm_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_llm_loc_conf_t));
    if (lcf == NULL) {
        return NULL;
    }

    /* tool_parser, reasoning_parser: zero length = unset */
    lcf->api = NGX_CONF_UNSET;
    lcf->server_api = NGX_CONF_UNSET;
    lcf->errors = NGX_CONF_UNSET;
    lcf->max_tokens = NGX_CONF_UNSET;
    lcf->max_response_size = NGX_CONF_UNSET_SIZE;
    lcf->embeddings_max_tokens = NGX_CONF_UNSET;
    lcf->split_special_tokens = NGX_CONF_UNSET;
    lcf->stream_keepalive = NGX_CONF_UNSET_MSEC;
    lcf->any_model = NGX_CONF_UNSET;
    lcf->speculation = NGX_CONF_UNSET_UINT;

    return lcf;
}


static char *
ngx_http_llm_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_llm_loc_conf_t *prev = parent;
    ngx_http_llm_loc_conf_t *conf = child;

    ngx_conf_merge_str_value(conf->tool_parser, prev->tool_parser, "auto");
    ngx_conf_merge_str_value(conf->reasoning_parser, prev->reasoning_parser,
                             "auto");
    /* checked by the directive (the default, auto, is known) */
    (void) llm_parser_choose(LLM_PARSER_TOOL, (char *) conf->tool_parser.data,
                             conf->tool_parser.len, &conf->tool);
    (void) llm_parser_choose(LLM_PARSER_REASONING,
                             (char *) conf->reasoning_parser.data,
                             conf->reasoning_parser.len, &conf->reasoning);
    /* unset: up to the room left in the context */
    ngx_conf_merge_value(conf->max_tokens, prev->max_tokens, NGX_CONF_UNSET);
    ngx_conf_merge_size_value(conf->max_response_size,
                              prev->max_response_size, 16 * 1024 * 1024);
    ngx_conf_merge_value(conf->embeddings_max_tokens,
                         prev->embeddings_max_tokens, 65536);
    ngx_conf_merge_value(conf->split_special_tokens,
                         prev->split_special_tokens, 1);
    ngx_conf_merge_msec_value(conf->stream_keepalive, prev->stream_keepalive,
                              10000);
    ngx_conf_merge_value(conf->any_model, prev->any_model, 0);
    ngx_conf_merge_uint_value(conf->speculation, prev->speculation,
                              LLM_SPECULATION_AUTO);

    /*
     * The content handler is set only where llm_api is written; nested
     * locations and "if" blocks inherit the kind so that their errors (a
     * "return 401" for a bad API key) get the protocol's shape too.
     */
    if (conf->api == NGX_CONF_UNSET) {
        conf->api = prev->api;
    }

    ngx_conf_merge_value(conf->errors, prev->errors, NGX_CONF_UNSET);

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_llm_postconfiguration(ngx_conf_t *cf)
{
    ngx_str_t                  name = ngx_string("request_id");
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_llm_module);

    mcf->request_id_index = ngx_http_get_variable_index(cf, &name);
    if (mcf->request_id_index == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (ngx_http_llm_add_variables(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_llm_metrics_postconfiguration(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_llm_filter_init(cf);
}


/*
 * llm_model <alias> <path> [ctx=N] [parallel=N] [threads=N] [queue=N]
 *           [kv=f32|f16] [kv_memory=SIZE] [quant=q8_0|q4_0|q4_k|q6_k]
 *           [chat=on|off] [draft=<path>] [draft_quant=<scheme>]
 */
static char *
ngx_http_llm_model(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_llm_main_conf_t *mcf = conf;

    char               err[512], **args;
    ngx_str_t         *value, path, draft;
    ngx_uint_t         i;
    llm_served_opts   *o;
    llm_served_model  *m;

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].len > 256) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid llm_model alias \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    if (llm_served_find(mcf->models.elts, mcf->models.nelts,
                        (char *) value[1].data, 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate llm_model alias \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    m = ngx_array_push(&mcf->models);
    if (m == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(m, sizeof(llm_served_model));

    m->alias = (char *) value[1].data;      /* NUL-terminated */
    m->alias_len = value[1].len;
    m->created = ngx_time();
    m->conf_file = (char *) cf->conf_file->file.name.data;
    m->conf_line = cf->conf_file->line;

    path = value[2];
    if (ngx_conf_full_name(cf->cycle, &path, 0) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* the options after the path (NUL-terminated by the conf parser) */
    args = ngx_palloc(cf->pool, cf->args->nelts * sizeof(char *));
    if (args == NULL) {
        return NGX_CONF_ERROR;
    }
    for (i = 3; i < cf->args->nelts; i++) {
        args[i - 3] = (char *) value[i].data;
    }

    o = &m->opts;
    if (llm_served_line(o, (char *) path.data, (int) ngx_ncpu, args,
                        cf->args->nelts - 3, err, sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", err);
        return NGX_CONF_ERROR;
    }

    if (o->draft_path) {
        draft.data = (u_char *) o->draft_path;
        draft.len = ngx_strlen(o->draft_path);
        if (ngx_conf_full_name(cf->cycle, &draft, 0) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
        o->draft_path = (char *) draft.data;
    }

    return ngx_http_llm_model_load(cf, m);
}


/*
 * llm_prompt_strip off | <line prefix> ...: the lines removed from system
 * prompts before they are rendered (api/llm_volatile.h), instead of the
 * default list.
 */
/*
 * llm_kv_cache_path PATH [max_size=SIZE]: the prefix caches' disk tier.
 * The directory is one of nginx's paths, as proxy_cache_path's: made (and
 * given to the worker user) at every configuration load, nginx -t included.
 */
static char *
ngx_http_llm_kv_cache_path(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_llm_main_conf_t *mcf = conf;

    char         err[256];
    u_char      *dir;
    ngx_str_t   *value;
    ngx_path_t  *path;

    if (mcf->kv_cache_path) {
        return "is duplicate";
    }

    value = cf->args->elts;
    mcf->kv_cache.max = LLM_KV_DISK_DEFAULT_MAX;

    if (cf->args->nelts == 3
        && llm_kv_disk_option((char *) value[2].data, &mcf->kv_cache.max, err,
                              sizeof(err))
           != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", err);
        return NGX_CONF_ERROR;
    }

    path = ngx_pcalloc(cf->pool, sizeof(ngx_path_t));
    if (path == NULL) {
        return NGX_CONF_ERROR;
    }
    path->name = value[1];
    if (path->name.len > 1 && path->name.data[path->name.len - 1] == '/') {
        path->name.len--;
    }
    if (ngx_conf_full_name(cf->cycle, &path->name, 0) != NGX_OK) {
        return NGX_CONF_ERROR;
    }
    path->conf_file = cf->conf_file->file.name.data;
    path->line = cf->conf_file->line;

    dir = ngx_pnalloc(cf->pool, path->name.len + 1);
    if (dir == NULL || ngx_add_path(cf, &path) != NGX_OK) {
        return NGX_CONF_ERROR;
    }
    ngx_cpystrn(dir, path->name.data, path->name.len + 1);
    mcf->kv_cache.dir = (char *) dir;
    mcf->kv_cache_path = path;

    return NGX_CONF_OK;
}


static char *
ngx_http_llm_prompt_strip(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_llm_main_conf_t *mcf = conf;

    char              **list;
    ngx_str_t          *value;
    ngx_uint_t          i;
    llm_volatile_set   *set;

    if (mcf->prompt_strip) {
        return "is duplicate";
    }

    value = cf->args->elts;

    set = ngx_pcalloc(cf->pool, sizeof(llm_volatile_set));
    if (set == NULL) {
        return NGX_CONF_ERROR;
    }

    if (cf->args->nelts == 2 && value[1].len == 3
        && ngx_strncmp(value[1].data, "off", 3) == 0)
    {
        mcf->prompt_strip = set;      /* no prefixes: nothing is removed */
        return NGX_CONF_OK;
    }

    list = ngx_pcalloc(cf->pool, (cf->args->nelts - 1) * sizeof(char *));
    if (list == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 1; i < cf->args->nelts; i++) {
        if (value[i].len == 0) {
            return "takes no empty prefix";
        }
        list[i - 1] = (char *) value[i].data;   /* NUL-terminated */
    }

    set->prefixes = (const char *const *) list;
    set->n = cf->args->nelts - 1;
    mcf->prompt_strip = set;

    return NGX_CONF_OK;
}


/* llm_thread_pool, llm_prepare_thread_pool: a pool the module posts to */
static char *
ngx_http_llm_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char  *p = conf;

    ngx_str_t  *value, *name;

    name = (ngx_str_t *) (p + cmd->offset);
    if (name->len) {
        return "is duplicate";
    }

    value = cf->args->elts;
    *name = value[1];

    /* an undefined pool fails in the thread_pool module naming this line */
    if (ngx_thread_pool_add(cf, name) == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_llm_parser(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char  *p = conf;

    int                 kind;
    ngx_str_t          *field, *value;
    llm_parser_choice   choice;

    field = (ngx_str_t *) (p + cmd->offset);
    if (field->data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    kind = (int) (uintptr_t) cmd->post;

    if (llm_parser_choose(kind, (char *) value[1].data, value[1].len, &choice)
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "unknown %V \"%V\", expected auto, none or one "
                           "of: %s", &cmd->name, &value[1],
                           llm_parser_ids(kind));
        return NGX_CONF_ERROR;
    }

    *field = value[1];
    return NGX_CONF_OK;
}


static char *
ngx_http_llm_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_llm_loc_conf_t *lcf = conf;

    ngx_str_t                 *value;
    ngx_http_llm_loc_conf_t   *slcf;
    ngx_http_core_srv_conf_t  *cscf;
    ngx_http_core_loc_conf_t  *clcf;

    if (lcf->api != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    lcf->api = llm_api_location_kind((char *) value[1].data, value[1].len);

    if (lcf->api < 0) {
        lcf->api = NGX_CONF_UNSET;
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "unknown llm_api \"%V\", expected chat, "
                           "completions, messages, responses, embeddings, "
                           "models, health, tokenize, detokenize, metrics "
                           "or page",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_llm_handler;

    /* the server's own level answers errors that precede location matching */
    cscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);
    slcf = cscf->ctx->loc_conf[ngx_http_llm_module.ctx_index];
    slcf->server_api = lcf->api == LLM_API_MESSAGES
                       && (slcf->server_api == NGX_CONF_UNSET
                           || slcf->server_api == LLM_API_MESSAGES)
                       ? LLM_API_MESSAGES : LLM_API_CHAT;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_llm_init_process(ngx_cycle_t *cycle)
{
    return ngx_http_llm_workers_init(cycle);
}


static void
ngx_http_llm_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_llm_workers_exit(cycle);
}


/* llm_errors openai | anthropic: the shape of nginx's own error pages in a
 * location that is not an llm_api endpoint (a front proxying to nodes). */
static char *
ngx_http_llm_errors(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_llm_loc_conf_t *lcf = conf;

    ngx_str_t  *value;

    if (lcf->errors != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    lcf->errors = llm_api_error_shape((char *) value[1].data, value[1].len);

    if (lcf->errors < 0) {
        lcf->errors = NGX_CONF_UNSET;
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "unknown llm_errors \"%V\", expected openai or "
                           "anthropic", &value[1]);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}
