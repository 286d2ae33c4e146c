/*
 * Generation requests (chat, completions, messages) the nginx way: the
 * prepared prompt becomes one scheduler sequence per choice; their tokens
 * go through the session's reply (src/chat/llm_reply.h: detokenizer ->
 * stream processor -> the protocol's formatter) and its bytes through
 * ngx_http_output_filter, with backpressure on the connection.  What a
 * request may generate and how it samples are the session's
 * (src/chat/llm_session.h); nothing here depends on the protocol.
 */
#include "ngx_http_llm_generate.h"

#include "core/llm_metrics.h"

#include "chat/llm_reply.h"
#include "chat/llm_structured.h"
#include "engine/llm_constrain.h"


typedef struct ngx_http_llm_gen_s  ngx_http_llm_gen_t;

/* A choice: the scheduler's sequence that generates it. */
typedef struct {
    ngx_http_llm_gen_t             *gen;
    llm_seq                        *seq;
    ngx_uint_t                      index;
    uint64_t                        last_token_ns;  /* /metrics: 0 = none yet */
} ngx_http_llm_choice_t;


struct ngx_http_llm_gen_s {
    ngx_http_request_t             *r;
    ngx_http_llm_ctx_t             *ctx;
    ngx_http_llm_model_t           *model;
    llm_request                    *req;
    llm_reply                      *reply;          /* the response's bytes */

    ngx_uint_t                      n_choices;
    ngx_http_llm_choice_t          *choices;
    size_t                          n_cached;
    size_t                          n_cache_written;  /* at breakpoints */

    ngx_chain_t                    *free;           /* recycled output bufs */
    ngx_chain_t                    *busy;           /* not yet sent */
    ngx_event_t                     keepalive;      /* until the first token */
    ngx_uint_t                      finished:1;
    ngx_uint_t                      paused:1;       /* backpressure */
};


/*
 * Backpressure.  Output the client has not taken yet stays in g->busy.  Past
 * NGX_HTTP_LLM_BACKLOG unsent bytes the request's sequences pause (they keep
 * their slots and KV cache but generate nothing) until the client has taken
 * half of it.  send_timeout runs while anything is unsent and restarts at
 * each write the client lets through, so a client that stops reading is
 * cancelled after send_timeout and its slots are freed.
 */
#define NGX_HTTP_LLM_BACKLOG  (64 * 1024)

/* The smallest output buffer allocated (a stream's chunks are small). */
#define NGX_HTTP_LLM_OUT_BUF  4096


static void ngx_http_llm_gen_cleanup(void *data);
static void ngx_http_llm_on_token(void *owner, llm_seq *seq, int32_t token,
    const llm_token_logprobs *lp);
static void ngx_http_llm_on_done(void *owner, llm_seq *seq, llm_finish reason,
    const char *error);
static void ngx_http_llm_on_flush(void *owner);

static const llm_seq_events  ngx_http_llm_gen_events = {
    ngx_http_llm_on_token, ngx_http_llm_on_done, ngx_http_llm_on_flush
};
static void ngx_http_llm_writer(ngx_http_request_t *r);
static void ngx_http_llm_end_choices(ngx_http_llm_gen_t *g, llm_finish reason,
    const char *error);
static ngx_int_t ngx_http_llm_pace(ngx_http_llm_gen_t *g, ngx_uint_t wrote);
static void ngx_http_llm_keepalive(ngx_event_t *ev);


/*
 * Sends what the formatters produced; last = the response is complete.
 * Buffers are recycled once the output chain has sent them, so a long
 * stream does not grow the request pool with every step.
 */
static ngx_int_t
ngx_http_llm_send_pending(ngx_http_llm_gen_t *g, ngx_uint_t last)
{
    size_t               size;
    ngx_int_t            rc;
    ngx_buf_t           *b;
    ngx_chain_t         *cl;
    llm_buf             *out = llm_reply_out(g->reply);
    ngx_http_request_t  *r = g->r;

    if (out->len == 0 && !last) {
        return NGX_OK;
    }

    cl = ngx_chain_get_free_buf(r->pool, &g->free);
    if (cl == NULL) {
        return NGX_ERROR;
    }
    b = cl->buf;

    if ((size_t) (b->end - b->start) < out->len) {
        size = ngx_max(out->len, NGX_HTTP_LLM_OUT_BUF);
        b->start = ngx_palloc(r->pool, size);
        if (b->start == NULL) {
            return NGX_ERROR;
        }
        b->end = b->start + size;
    }

    b->pos = b->start;
    b->last = b->start;
    if (out->len) {
        b->last = ngx_cpymem(b->start, out->data, out->len);
        b->temporary = 1;
    }
    b->tag = (ngx_buf_tag_t) &ngx_http_llm_module;
    b->flush = 1;
    b->last_buf = last;
    b->last_in_chain = 1;
    llm_buf_reset(out);

    rc = ngx_http_output_filter(r, cl);

    ngx_chain_update_chains(r->pool, &g->free, &g->busy, &cl,
                            (ngx_buf_tag_t) &ngx_http_llm_module);

    if (!last && rc != NGX_ERROR) {
        return ngx_http_llm_pace(g, 0);
    }

    return rc;
}


/* Bytes handed to the output chain that the client has not taken yet. */
static size_t
ngx_http_llm_backlog(ngx_http_llm_gen_t *g)
{
    size_t        n;
    ngx_chain_t  *cl;

    n = 0;
    for (cl = g->busy; cl; cl = cl->next) {
        n += ngx_buf_size(cl->buf);
    }

    return n;
}


/*
 * After a write (wrote = the connection was writable, so the client took
 * something): waits for the connection to be writable while output is
 * unsent, with send_timeout running, and pauses or resumes the sequences on
 * the backlog.
 */
static ngx_int_t
ngx_http_llm_pace(ngx_http_llm_gen_t *g, ngx_uint_t wrote)
{
    size_t                     backlog;
    ngx_uint_t                 i, pause;
    ngx_event_t               *wev;
    ngx_http_llm_choice_t     *ch;
    ngx_http_core_loc_conf_t  *clcf;

    wev = g->r->connection->write;
    clcf = ngx_http_get_module_loc_conf(g->r, ngx_http_core_module);
    backlog = ngx_http_llm_backlog(g);

    if (backlog == 0) {
        if (wev->timer_set && !wev->delayed) {
            ngx_del_timer(wev);
        }

    } else {
        if (!wev->delayed && (wrote || !wev->timer_set)) {
            ngx_add_timer(wev, clcf->send_timeout);
        }

        if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    pause = g->paused ? backlog > NGX_HTTP_LLM_BACKLOG / 2
                      : backlog >= NGX_HTTP_LLM_BACKLOG;

    if (pause == g->paused) {
        return NGX_OK;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, g->r->connection->log, 0,
                   "llm: %s, %uz bytes unsent",
                   pause ? "paused" : "resumed", backlog);

    g->paused = pause;

    for (i = 0; i < g->n_choices; i++) {
        ch = &g->choices[i];
        if (ch->seq) {
            llm_seq_pause(ch->seq, (int) pause);
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_llm_send_stream_header(ngx_http_llm_gen_t *g)
{
    ngx_str_t            no_cache, no;
    ngx_http_request_t  *r = g->r;

    g->ctx->own_response = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = -1;
    ngx_str_set(&r->headers_out.content_type, "text/event-stream");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    ngx_str_set(&no_cache, "no-cache");
    ngx_str_set(&no, "no");

    if (ngx_http_llm_add_header(r, "Cache-Control", &no_cache) != NGX_OK
        || ngx_http_llm_add_header(r, "X-Accel-Buffering", &no) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_send_header(r);
}


/* The model's structured-output state in this worker, built on first use. */
static llm_structured *
ngx_http_llm_structured_state(ngx_http_llm_model_t *m, char *err, size_t errlen)
{
    const llm_model_info  *info;

    if (m->structured == NULL) {
        info = llm_model_get_info(m->model);
        m->structured = llm_structured_create(m->tokenizer, info->eos_ids,
                                              (size_t) info->n_eos,
                                              err, errlen);
    }

    return m->structured;
}


/*
 * Structured output (response_format, grammar, regex, tool_choice): a
 * request whose constraint cannot be enforced is refused with a 400 before
 * anything is queued; the grammar is compiled here once (then cached).
 */
static ngx_int_t
ngx_http_llm_structured_check(ngx_http_llm_gen_t *g,
    const llm_parser_def *tool_def, const llm_parser_def *reasoning_def,
    int starts_in_reasoning)
{
    char                  err[320];
    const char           *param;
    ngx_int_t             rc;
    llm_structured       *st;
    llm_structured_plan   plan;

    st = ngx_http_llm_structured_state(g->model, err, sizeof(err));
    if (st == NULL) {
        ngx_log_error(NGX_LOG_ERR, g->r->connection->log, 0,
                      "llm: structured output unavailable: %s", err);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (llm_structured_prepare(st, g->req, tool_def ? tool_def->id : NULL,
                               reasoning_def ? reasoning_def->id : NULL,
                               starts_in_reasoning, &plan, err, sizeof(err),
                               &param)
        != 0)
    {
        /* the 400 is the response: NGX_DONE tells the caller it was sent */
        rc = ngx_http_llm_send_error(g->r, NGX_HTTP_BAD_REQUEST, NULL,
                                     param, "invalid_value", "%s.", err);
        return rc == NGX_OK ? NGX_DONE : rc;
    }

    llm_structured_release(st, &plan);
    return NGX_OK;
}


/* The same for one choice: its sequence gets the grammar's constraint. */
static ngx_int_t
ngx_http_llm_structured_seq(ngx_http_llm_gen_t *g, llm_seq *seq,
    const llm_parser_def *tool_def, const llm_parser_def *reasoning_def,
    int starts_in_reasoning)
{
    char                  err[320];
    const char           *param;
    llm_constraint       *c;
    llm_structured       *st;
    llm_structured_plan   plan;

    st = ngx_http_llm_structured_state(g->model, err, sizeof(err));
    if (st == NULL
        || llm_structured_prepare(st, g->req, tool_def ? tool_def->id : NULL,
                                  reasoning_def ? reasoning_def->id : NULL,
                                  starts_in_reasoning, &plan, err,
                                  sizeof(err), &param) != 0)
    {
        return NGX_ERROR;
    }

    if (plan.index == NULL) {
        return NGX_OK;
    }

    /* the constraint holds its own reference to the compiled grammar */
    c = llm_constraint_create(plan.index, g->model->tokenizer, plan.triggers,
                              plan.n_triggers);
    llm_structured_release(st, &plan);
    if (c == NULL) {
        return NGX_ERROR;
    }

    llm_seq_set_constraint(seq, c);
    return NGX_OK;
}


ngx_int_t
ngx_http_llm_send_busy(ngx_http_request_t *r, ngx_http_llm_model_t *m)
{
    ngx_str_t                 retry;
    llm_api_error             err;
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    ngx_str_set(&retry, "1");
    if (ngx_http_llm_add_header(r, "Retry-After", &retry) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    llm_api_error_overloaded(&err, lcf->api, (char *) m->alias.data,
                             m->parallel);
    return ngx_http_llm_send_api_error(r, &err);
}


/* The location's parsers for model m: "auto" is the model's choice. */
static void
ngx_http_llm_parsers(ngx_http_request_t *r, ngx_http_llm_model_t *m,
    const llm_request *req, const llm_parser_def **tool,
    const llm_parser_def **reasoning)
{
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    *tool = lcf->tool.model ? m->tool_def : lcf->tool.def;
    *reasoning = lcf->reasoning.model ? m->reasoning_def : lcf->reasoning.def;

    llm_reply_parsers(req, tool, reasoning);
}


ngx_int_t
ngx_http_llm_generate(ngx_http_request_t *r, ngx_http_llm_prep_t *p)
{
    int                       starts_in_reasoning;
    size_t                    n_prompt, max_gen, granted;
    ngx_int_t                 rc;
    ngx_uint_t                i;
    llm_admit                 admit;
    llm_api_error             err;
    llm_request              *req = &p->req;
    ngx_http_llm_model_t     *m = p->model;
    llm_reply_config          rc_cfg;
    llm_sampler_params        sp;
    llm_session_limits        lim;
    const llm_parser_def     *tool_def, *reasoning_def;
    ngx_pool_cleanup_t       *cln;
    ngx_http_llm_gen_t       *g;
    ngx_http_llm_choice_t    *ch;
    ngx_http_llm_ctx_t       *ctx;
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);
    ctx = ngx_http_llm_get_ctx(r);
    ctx->model = m;

    if (m->sched == NULL) {
        return ngx_http_llm_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE, NULL,
                                       NULL, NULL, "Model '%V' is not loaded "
                                       "in this worker.", &m->alias);
    }

    g = ngx_pcalloc(r->pool, sizeof(ngx_http_llm_gen_t));
    if (g == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    cln->handler = ngx_http_llm_gen_cleanup;
    cln->data = g;

    g->r = r;
    g->ctx = ctx;
    ctx->gen = g;
    g->model = m;
    g->req = req;

    /* prepared in a thread (ngx_http_llm_prepare.c): owned by p */
    n_prompt = p->prompt.n_ids;
    starts_in_reasoning = p->prompt.starts_in_reasoning;
    ctx->prompt_tokens = n_prompt;

    lim.n_ctx = llm_sched_n_ctx(m->sched);
    lim.max_tokens = lcf->max_tokens == NGX_CONF_UNSET
                     ? 0 : (size_t) lcf->max_tokens;
    lim.max_response_size = lcf->max_response_size;
    lim.model = (char *) m->alias.data;

    if (llm_session_max_new_tokens(req, n_prompt, &lim, &max_gen, &err) != 0) {
        return ngx_http_llm_send_api_error(r, &err);
    }

    ngx_http_llm_parsers(r, m, req, &tool_def, &reasoning_def);

    rc = ngx_http_llm_structured_check(g, tool_def, reasoning_def,
                                       starts_in_reasoning);
    if (rc != NGX_OK) {
        return rc == NGX_DONE ? NGX_OK : rc;
    }

    /* the response: its choices' pipelines and the protocol's formatter */
    ngx_memzero(&rc_cfg, sizeof(rc_cfg));
    rc_cfg.req = req;
    rc_cfg.tok = m->tokenizer;
    rc_cfg.tool = tool_def;
    rc_cfg.reasoning = reasoning_def;
    rc_cfg.starts_in_reasoning = starts_in_reasoning;
    rc_cfg.model = req->model ? req->model : (char *) m->alias.data;
    rc_cfg.fingerprint = NGX_HTTP_LLM_FINGERPRINT;
    rc_cfg.created = ngx_time();
    rc_cfg.echo = p->prompt.echo;
    rc_cfg.echo_len = p->prompt.echo_len;
    rc_cfg.n_prompt = n_prompt;
    rc_cfg.max_held = lcf->max_response_size;
    p->prompt.echo = NULL;

    g->reply = llm_reply_create(&rc_cfg);
    if (g->reply == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    g->n_choices = llm_reply_n_choices(g->reply);
    g->choices = ngx_pcalloc(r->pool,
                             g->n_choices * sizeof(ngx_http_llm_choice_t));
    if (g->choices == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < g->n_choices; i++) {
        ch = &g->choices[i];
        ch->gen = g;
        ch->index = i;

        llm_session_sampler_params(req, llm_model_get_info(m->model), i, &sp);

        ch->seq = llm_seq_create(m->sched, p->prompt.ids, n_prompt, max_gen,
                                 &sp, req->sampling.logprobs
                                      ? req->sampling.top_logprobs : -1,
                                 &ngx_http_llm_gen_events, ch, i);
        if (ch->seq == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (p->prompt.cache_upto > 0) {
            /* cache_control: the prefix to the breakpoint is retained */
            llm_seq_set_retention(ch->seq, p->prompt.cache_upto,
                                  req->cache_ttl);
        }

        llm_seq_set_speculation(ch->seq, (llm_spec_mode)
                                (req->speculation >= 0 ? (ngx_uint_t) req->speculation
                                                       : lcf->speculation));

        if (ngx_http_llm_structured_seq(g, ch->seq, tool_def, reasoning_def,
                                        starts_in_reasoning) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    /* every choice is admitted, or none; nothing is refused half-way */
    admit = llm_sched_reserve(m->sched, g->n_choices, g->n_choices, &granted);

    if (admit == LLM_ADMIT_NEVER) {
        return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL, "n",
                                       "invalid_value",
                                       "n=%ui is more than model '%V' can "
                                       "hold at once (parallel %ui + queue "
                                       "%ui = %uz sequences).",
                                       g->n_choices, &m->alias, m->parallel,
                                       m->queue,
                                       llm_sched_capacity(m->sched));
    }

    if (admit == LLM_ADMIT_BUSY) {
        return ngx_http_llm_send_busy(r, m);
    }

    for (i = 0; i < g->n_choices; i++) {
        llm_sched_submit(m->sched, g->choices[i].seq);
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "llm submit: model \"%V\", %ui sequences of %uz prompt "
                   "tokens, max %uz new", &m->alias, g->n_choices, n_prompt,
                   max_gen);

    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_llm_writer;

    if (req->stream) {
        if (ngx_http_llm_send_stream_header(g) == NGX_ERROR
            || llm_reply_start(g->reply) != 0
            || ngx_http_llm_send_pending(g, 0) == NGX_ERROR)
        {
            return NGX_ERROR;
        }

        /* a queued or long-prefilling stream is not silent for minutes */
        if (lcf->stream_keepalive) {
            g->keepalive.handler = ngx_http_llm_keepalive;
            g->keepalive.data = g;
            g->keepalive.log = r->connection->log;
            g->keepalive.cancelable = 1;
            ngx_add_timer(&g->keepalive, lcf->stream_keepalive);
        }
    }

    return NGX_DONE;
}


/*
 * llm_stream_keepalive: while no token has come (the sequences wait in the
 * queue or their prompt is being prefilled) the stream gets bytes every
 * client skips, so that idle timers of clients and proxies do not fire.
 */
static void
ngx_http_llm_keepalive(ngx_event_t *ev)
{
    ngx_http_llm_gen_t *g = ev->data;

    ngx_connection_t         *c;
    ngx_http_llm_loc_conf_t  *lcf;

    if (g->finished || g->ctx->ttft_ms >= 0) {
        return;
    }

    c = g->r->connection;

    if (llm_reply_keepalive(g->reply) != 0
        || ngx_http_llm_send_pending(g, 0) == NGX_ERROR)
    {
        ngx_http_finalize_request(g->r, NGX_ERROR);
        ngx_http_run_posted_requests(c);
        return;
    }

    lcf = ngx_http_get_module_loc_conf(g->r, ngx_http_llm_module);
    ngx_add_timer(&g->keepalive, lcf->stream_keepalive);

    ngx_http_run_posted_requests(c);
}


/* ---- per-token output ---- */

static void
ngx_http_llm_on_token(void *owner, llm_seq *seq, int32_t token,
    const llm_token_logprobs *lp)
{
    ngx_http_llm_choice_t *ch = owner;

    ngx_http_llm_gen_t       *g = ch->gen;
    uint64_t                  now;
    ngx_http_llm_loc_conf_t  *lcf;

    now = llm_metrics_now_ns();
    if (ch->last_token_ns) {
        ngx_http_llm_metrics_observe(g->model, LLM_METRICS_ITL,
                                     now - ch->last_token_ns);
    }
    ch->last_token_ns = now;

    if (g->ctx->ttft_ms < 0) {
        g->ctx->ttft_ms = (ngx_msec_int_t) (ngx_current_msec
                                            - g->ctx->start_ms);
        if (g->keepalive.timer_set) {
            ngx_del_timer(&g->keepalive);
        }
    }

    switch (llm_reply_token(g->reply, ch->index, token, lp)) {

    case LLM_REPLY_MORE:
        return;

    case LLM_REPLY_STOP:
        llm_seq_finish(seq);
        ngx_http_llm_on_done(ch, seq, LLM_FINISH_STOP_SEQ, NULL);
        return;

    case LLM_REPLY_FULL:
        lcf = ngx_http_get_module_loc_conf(g->r, ngx_http_llm_module);
        ngx_log_error(NGX_LOG_INFO, g->r->connection->log, 0,
                      "llm: the response reached llm_max_response_size "
                      "(%uz bytes): it ends with finish_reason length",
                      lcf->max_response_size);
        ngx_http_llm_end_choices(g, LLM_FINISH_LENGTH, NULL);
        return;

    case LLM_REPLY_NO_MEMORY:
        ngx_log_error(NGX_LOG_ALERT, g->r->connection->log, 0,
                      "llm: out of memory formatting the response");
        ngx_http_llm_end_choices(g, LLM_FINISH_ERROR,
                                 "out of memory formatting the response");
        return;
    }
}


/* Ends every choice still generating, as a limit or an error does. */
static void
ngx_http_llm_end_choices(ngx_http_llm_gen_t *g, llm_finish reason,
    const char *error)
{
    ngx_uint_t              i;
    ngx_http_llm_choice_t  *ch;

    for (i = 0; i < g->n_choices && !g->finished; i++) {
        ch = &g->choices[i];
        if (ch->seq == NULL || llm_reply_choice_is_done(g->reply, i)) {
            continue;
        }
        llm_seq_finish(ch->seq);
        ngx_http_llm_on_done(ch, ch->seq, reason, error);
    }
}


static void
ngx_http_llm_finish_request(ngx_http_llm_gen_t *g, const char *error)
{
    ngx_int_t            rc;
    llm_buf             *out;
    llm_api_error        err;
    ngx_http_request_t  *r = g->r;

    g->finished = 1;
    g->ctx->completion_tokens = llm_reply_completion_tokens(g->reply);

    if (error && !g->req->stream) {
        llm_reply_failure(g->reply, error, &err);
        ngx_http_finalize_request(r, ngx_http_llm_send_api_error(r, &err));
        return;
    }

    llm_reply_cache_written(g->reply, g->n_cache_written);
    if (llm_reply_finish(g->reply, g->n_cached, error) != 0) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "llm: out of memory ending the response");
        ngx_http_finalize_request(r, g->req->stream
                                     ? NGX_ERROR
                                     : NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (g->req->stream) {
        rc = ngx_http_llm_send_pending(g, 1);
        ngx_http_finalize_request(r, rc);
        return;
    }

    out = llm_reply_out(g->reply);
    ngx_http_finalize_request(r, ngx_http_llm_send_json(r, NGX_HTTP_OK,
                                                        out->data, out->len));
}


static void
ngx_http_llm_on_done(void *owner, llm_seq *seq, llm_finish reason,
    const char *error)
{
    ngx_http_llm_choice_t *ch = owner;

    int                  all;
    size_t               n_gen;
    const int32_t       *generated;
    ngx_http_llm_gen_t  *g = ch->gen;

    if (g->finished || llm_reply_choice_is_done(g->reply, ch->index)) {
        return;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, g->r->connection->log, 0,
                   "llm done: choice %ui, finish %d%s", ch->index,
                   (int) reason, error ? ", failed" : "");

    if (llm_seq_index(seq) == 0) {
        g->n_cached = llm_seq_n_cached(seq);
        g->n_cache_written = llm_seq_n_cache_written(seq);
    }

    generated = llm_seq_generated(seq, &n_gen);
    all = llm_reply_choice_done(g->reply, ch->index, reason, generated, n_gen);

    if (all < 0) {
        ngx_log_error(NGX_LOG_ALERT, g->r->connection->log, 0,
                      "llm: out of memory ending a choice");
        error = error ? error : "out of memory ending a choice";
    }

    if (all != 0 || error) {
        ngx_http_llm_finish_request(g, error);
    }
}


static void
ngx_http_llm_on_flush(void *owner)
{
    ngx_http_llm_choice_t *ch = owner;

    ngx_connection_t    *c;
    ngx_http_llm_gen_t  *g = ch->gen;

    if (g->finished || !g->req->stream) {
        return;
    }

    c = g->r->connection;

    if (ngx_http_llm_send_pending(g, 0) == NGX_ERROR) {
        ngx_http_finalize_request(g->r, NGX_ERROR);
    }

    /* as after any event handler that wrote for a request */
    ngx_http_run_posted_requests(c);
}


/*
 * The connection became writable (or send_timeout expired) while the
 * response is still being generated: as nginx's own writer, plus pacing.
 */
static void
ngx_http_llm_writer(ngx_http_request_t *r)
{
    ngx_event_t               *wev;
    ngx_chain_t               *none;
    ngx_http_llm_gen_t        *g;
    ngx_http_core_loc_conf_t  *clcf;

    wev = r->connection->write;
    g = ngx_http_llm_get_ctx(r)->gen;

    if (wev->timedout) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, NGX_ETIMEDOUT,
                      "llm: client timed out");
        r->connection->timedout = 1;
        ngx_http_finalize_request(r, NGX_HTTP_REQUEST_TIME_OUT);
        return;
    }

    if (wev->delayed) {
        /* limit_rate: the write filter's own timer wakes us */
        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
        if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_ERROR);
        }
        return;
    }

    if (ngx_http_output_filter(r, NULL) == NGX_ERROR) {
        ngx_http_finalize_request(r, NGX_ERROR);
        return;
    }

    none = NULL;
    ngx_chain_update_chains(r->pool, &g->free, &g->busy, &none,
                            (ngx_buf_tag_t) &ngx_http_llm_module);

    if (ngx_http_llm_pace(g, 1) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_ERROR);
    }
}


static void
ngx_http_llm_gen_cleanup(void *data)
{
    ngx_http_llm_gen_t *g = data;

    ngx_uint_t              i;
    ngx_http_llm_choice_t  *ch;

    if (g->keepalive.timer_set) {
        ngx_del_timer(&g->keepalive);
    }

    for (i = 0; g->choices && i < g->n_choices; i++) {
        ch = &g->choices[i];

        if (ch->seq) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, g->r->connection->log, 0,
                           "llm release: choice %ui", i);
            llm_seq_release(ch->seq);
            ch->seq = NULL;
        }
    }

    /* the released sequences leave /metrics' gauges of this worker */
    ngx_http_llm_metrics_publish(g->model);

    llm_reply_free(g->reply);
}
