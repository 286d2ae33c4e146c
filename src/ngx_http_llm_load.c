/*
 * Configuration-time model loading, in the master before fork, so that
 * `nginx -t` reports a bad model and workers share the mmap'd weights.
 */
#include "ngx_http_llm_module.h"

#include "chat/llm_chat.h"
#include "core/llm_file.h"
#include "engine/llm_engine.h"
#include "engine/llm_memory.h"
#include "engine/llm_spec.h"
#include "engine/llm_tokenizer.h"
#include "parsers/llm_parser.h"
#include "ngx_http_llm_sched.h"


static void ngx_http_llm_model_cleanup(void *data);
static char *ngx_http_llm_model_load_engine(ngx_conf_t *cf,
    ngx_http_llm_model_t *m);
static int ngx_http_llm_has_token(void *ctx, const char *tok);


char *
ngx_http_llm_model_load(ngx_conf_t *cf, ngx_http_llm_model_t *m)
{
    char                *path;
    size_t               len;
    ngx_file_info_t      fi;
    ngx_pool_cleanup_t  *cln;

    path = (char *) m->path.data;   /* NUL-terminated by the conf parser */

    if (ngx_file_info(path, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "llm_model \"%V\": cannot access \"%s\"",
                           &m->alias, path);
        return NGX_CONF_ERROR;
    }

    /* a Hugging Face / MLX folder, or a GGUF file (the first of its splits) */
    len = ngx_strlen(path);
    if (!ngx_is_dir(&fi)
        && !(ngx_is_file(&fi) && len > 5
             && ngx_strcmp(path + len - 5, ".gguf") == 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "llm_model \"%V\": \"%s\" is neither a model "
                           "folder nor a .gguf file", &m->alias, path);
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }
    cln->handler = ngx_http_llm_model_cleanup;
    cln->data = m;

    return ngx_http_llm_model_load_engine(cf, m);
}


/* Weights, tokenizer, chat template and parser choice. */
static char *
ngx_http_llm_model_load_engine(ngx_conf_t *cf, ngx_http_llm_model_t *m)
{
    int                    absent;
    char                  *path, err[512], why[256];
    int32_t                top;
    const char            *tool, *reasoning, *piece;
    const llm_model_info  *info;
    llm_runtime_opts       ro;

    path = (char *) m->path.data;

    {
        llm_model_opts  opts = { m->quant.len ? (char *) m->quant.data : NULL };

        m->model = llm_model_load_opts(path, &opts, err, sizeof(err));
    }
    if (m->model == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "llm_model \"%V\": %s",
                           &m->alias, err);
        return NGX_CONF_ERROR;
    }

    info = llm_model_get_info(m->model);

    /*
     * KV memory is a budget of blocks the sequences share, not parallel x
     * ctx: the default budget has room for parallel sequences of ctx (the
     * model's whole context when ctx is not given), capped at an eighth of
     * the machine's memory, and the context defaults to the model's, capped
     * by the budget.
     */
    if (m->kv_memory == 0) {
        m->kv_memory = llm_runtime_kv_default(m->model,
                                              m->kv_f16 ? LLM_KV_F16
                                                        : LLM_KV_F32,
                                              (int) m->parallel, (int) m->ctx,
                                              llm_memory_available());
    }

    ngx_http_llm_runtime_opts(m, &ro);

    if (llm_runtime_resolve(m->model, &ro, err, sizeof(err)) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "llm_model \"%V\": %s",
                           &m->alias, err);
        return NGX_CONF_ERROR;
    }

    m->context_length = (ngx_uint_t) ro.n_ctx;

    /* text in and out needs the tokenizer: a model folder must have one */
    m->tokenizer = llm_tokenizer_load(path, err, sizeof(err));
    if (m->tokenizer == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "llm_model \"%V\": tokenizer: %s", &m->alias, err);
        return NGX_CONF_ERROR;
    }

    /* a token the model has no embedding for would fail every batch it is in */
    top = (int32_t) llm_tokenizer_n_vocab(m->tokenizer) - 1;
    if (top >= info->n_vocab) {
        piece = llm_tokenizer_piece(m->tokenizer, top);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "llm_model \"%V\": tokenizer.json has token id "
                           "%D (\"%s\") but the model's vocabulary has %d "
                           "ids (vocab_size in config.json)", &m->alias, top,
                           piece ? piece : "", info->n_vocab);
        return NGX_CONF_ERROR;
    }

    if (m->draft_path.len) {
        llm_tokenizer  *dt;

        /* a draft proposes tokens by id: it must have the same vocabulary */
        m->draft = llm_model_load((char *) m->draft_path.data, err, sizeof(err));
        dt = m->draft ? llm_tokenizer_load((char *) m->draft_path.data, err,
                                           sizeof(err))
                      : NULL;
        if (dt == NULL
            || llm_spec_draft_check(m->model, m->tokenizer, m->draft, dt, err,
                                    sizeof(err)) != 0)
        {
            llm_tokenizer_free(dt);
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "llm_model \"%V\": draft \"%V\": %s",
                               &m->alias, &m->draft_path, err);
            return NGX_CONF_ERROR;
        }
        llm_tokenizer_free(dt);
    }

    if (m->chat_off) {
        ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                           "llm_model \"%V\": chat=off: chat and messages "
                           "requests are refused", &m->alias);

    } else {
        m->chat = llm_chat_open(path, m->tokenizer, &absent, err,
                                sizeof(err));

        if (m->chat == NULL && !absent) {
            /* every chat request would fail: refuse the configuration */
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "llm_model \"%V\": %s (add chat=off to serve "
                               "only completions and embeddings)",
                               &m->alias, err);
            return NGX_CONF_ERROR;
        }

        if (m->chat == NULL) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "llm_model \"%V\": %s: chat and messages "
                               "requests are refused", &m->alias, err);
        }
    }

    llm_parsers_auto(m->chat ? llm_chat_source(m->chat) : NULL,
                     info->model_type, ngx_http_llm_has_token, m->tokenizer,
                     &tool, &reasoning, why, sizeof(why));
    m->tool_parser = tool;
    m->reasoning_parser = reasoning;
    m->tool_def = tool ? llm_tool_parser_find(tool) : NULL;
    m->reasoning_def = reasoning ? llm_reasoning_parser_find(reasoning) : NULL;

    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                       "llm_model \"%V\": %s %s, %uL parameters, %s, "
                       "%uL MiB of weights, context %ui (trained %d), "
                       "parallel %ui, threads %ui, kv_memory %uz MiB; %s",
                       &m->alias, info->architecture, path,
                       (uint64_t) info->n_params, info->dtype,
                       (uint64_t) (info->weight_bytes >> 20),
                       m->context_length, info->max_position_embeddings,
                       m->parallel, m->threads, m->kv_memory >> 20, why);

    return NGX_CONF_OK;
}


static int
ngx_http_llm_has_token(void *ctx, const char *tok)
{
    return ctx && llm_tokenizer_token_id(ctx, tok) >= 0;
}


static void
ngx_http_llm_model_cleanup(void *data)
{
    ngx_http_llm_model_t  *m = data;

    if (m->chat) {
        llm_chat_free(m->chat);
    }
    if (m->tokenizer) {
        llm_tokenizer_free(m->tokenizer);
    }
    if (m->model) {
        llm_model_free(m->model);
    }
    if (m->draft) {
        llm_model_free(m->draft);
    }
}


/* Parser ids accepted by llm_tool_parser / llm_reasoning_parser. */

ngx_uint_t
ngx_http_llm_parser_known(ngx_uint_t kind, const char *id)
{
    return kind == NGX_HTTP_LLM_PARSER_TOOL
           ? llm_tool_parser_find(id) != NULL
           : llm_reasoning_parser_find(id) != NULL;
}


void
ngx_http_llm_parser_resolve(ngx_uint_t kind, ngx_str_t *id,
    ngx_http_llm_parser_choice_t *choice)
{
    choice->model = 0;
    choice->def = NULL;

    if (id->len == 4 && ngx_strncmp(id->data, "auto", 4) == 0) {
        choice->model = 1;

    } else if (!(id->len == 4 && ngx_strncmp(id->data, "none", 4) == 0)) {
        /* NUL-terminated: a directive's argument */
        choice->def = kind == NGX_HTTP_LLM_PARSER_TOOL
                      ? llm_tool_parser_find((char *) id->data)
                      : llm_reasoning_parser_find((char *) id->data);
    }
}


const char *
ngx_http_llm_parser_ids(ngx_uint_t kind)
{
    return kind == NGX_HTTP_LLM_PARSER_TOOL ? llm_tool_parser_ids()
                                            : llm_reasoning_parser_ids();
}
