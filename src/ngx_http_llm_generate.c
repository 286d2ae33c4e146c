/*
 * Generation requests (chat, completions, messages) the nginx way: the
 * prepared prompt becomes a generation (src/chat/llm_generation.h: one
 * scheduler sequence per choice, their tokens through the reply's
 * detokenizer, stream processor and the protocol's formatter) whose bytes go
 * through ngx_http_output_filter, with backpressure on the connection.
 * What a request may generate, how it samples and what it must follow are
 * decided below the glue; nothing here depends on the protocol.
 */
#include "ngx_http_llm_generate.h"

#include "core/llm_metrics.h"

#include "chat/llm_generation.h"


typedef struct {
    ngx_http_request_t             *r;
    ngx_http_llm_ctx_t             *ctx;
    llm_served_model               *model;
    llm_generation                 *gen;
    llm_reply                      *reply;          /* the response's bytes */
    ngx_uint_t                      stream;
    uint64_t                       *last_token_ns;  /* per choice, /metrics:
                                                       0 = none yet */

    ngx_chain_t                    *free;           /* recycled output bufs */
    ngx_chain_t                    *busy;           /* not yet sent */
    ngx_event_t                     keepalive;      /* until the first token */
    ngx_uint_t                      finished:1;
} ngx_http_llm_gen_t;


/*
 * Backpressure.  Output the client has not taken yet stays in g->busy; the
 * generation pauses its sequences while too much of it waits
 * (llm_generation_backlog).  send_timeout runs while anything is unsent and
 * restarts at each write the client lets through, so a client that stops
 * reading is cancelled after send_timeout and its slots are freed.
 */

/* The smallest output buffer allocated (a stream's chunks are small). */
#define NGX_HTTP_LLM_OUT_BUF  4096


static void ngx_http_llm_gen_cleanup(void *data);
static void ngx_http_llm_on_token(void *data, size_t choice);
static void ngx_http_llm_on_choice_done(void *data, size_t choice,
    llm_finish reason, const char *error);
static void ngx_http_llm_on_flush(void *data);
static void ngx_http_llm_on_note(void *data, llm_generation_note note,
    const char *text);
static void ngx_http_llm_on_done(void *data, llm_generation_end end,
    const llm_api_error *err);

static const llm_generation_events  ngx_http_llm_gen_events = {
    ngx_http_llm_on_token, ngx_http_llm_on_choice_done, ngx_http_llm_on_flush,
    ngx_http_llm_on_note, ngx_http_llm_on_done
};
static void ngx_http_llm_writer(ngx_http_request_t *r);
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
    int                        paused;
    size_t                     backlog;
    ngx_event_t               *wev;
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

    if (llm_generation_backlog(g->gen, backlog, &paused)) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, g->r->connection->log, 0,
                       "llm: %s, %uz bytes unsent",
                       paused ? "paused" : "resumed", backlog);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_llm_send_stream_header(ngx_http_llm_gen_t *g)
{
    ngx_int_t            rc;
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

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    /* the headers go out now: the first event may wait for the queue */
    return ngx_http_send_special(r, NGX_HTTP_FLUSH);
}


ngx_int_t
ngx_http_llm_send_busy(ngx_http_request_t *r, llm_served_model *m)
{
    ngx_str_t                 retry;
    llm_api_error             err;
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    ngx_str_set(&retry, "1");
    if (ngx_http_llm_add_header(r, "Retry-After", &retry) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    llm_api_error_overloaded(&err, lcf->api, m->alias,
                             (size_t) m->opts.parallel);
    return ngx_http_llm_send_api_error(r, &err);
}


ngx_int_t
ngx_http_llm_generate(ngx_http_request_t *r, ngx_http_llm_prep_t *p)
{
    char                      err_text[320];
    size_t                    n_prompt;
    llm_admit                 admit;
    llm_api_error             err;
    llm_request              *req = &p->pr.req;
    llm_served_model         *m = p->model;
    llm_generation_config     cfg;
    ngx_pool_cleanup_t       *cln;
    ngx_http_llm_gen_t       *g;
    ngx_http_llm_ctx_t       *ctx;
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);
    ctx = ngx_http_llm_get_ctx(r);

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
    g->stream = req->stream;

    /* prepared in a thread (ngx_http_llm_prepare.c): owned by p */
    n_prompt = p->pr.prompt.n_ids;
    ctx->prompt_tokens = n_prompt;

    /* the structured-output state is built at worker start
     * (ngx_http_llm_workers_init), else here */
    if (llm_served_generation(m, &lcf->tool, &lcf->reasoning, &cfg, err_text,
                              sizeof(err_text))
        != 0)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "llm: structured output unavailable: %s", err_text);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cfg.fingerprint = NGX_HTTP_LLM_FINGERPRINT;
    cfg.created = ngx_time();
    cfg.max_tokens = lcf->max_tokens == NGX_CONF_UNSET
                     ? 0 : (size_t) lcf->max_tokens;
    cfg.max_response_size = lcf->max_response_size;
    cfg.speculation = (llm_spec_mode) lcf->speculation;
    cfg.thinking_key = &p->mcf->thinking_key;

    if (llm_generation_create(&cfg, req, &p->pr.prompt, &ngx_http_llm_gen_events,
                              g, &g->gen, &err)
        != 0)
    {
        return err.status ? ngx_http_llm_send_api_error(r, &err)
                          : NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    g->reply = llm_generation_reply(g->gen);
    g->last_token_ns = ngx_pcalloc(r->pool, llm_generation_n_choices(g->gen)
                                            * sizeof(uint64_t));
    if (g->last_token_ns == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* every choice is admitted, or none; nothing is refused half-way */
    admit = llm_generation_submit(g->gen);

    if (admit == LLM_ADMIT_NEVER) {
        llm_api_error_choices(&err, llm_generation_n_choices(g->gen),
                              m->alias, (size_t) m->opts.parallel,
                              (size_t) m->opts.queue,
                              llm_sched_capacity(m->sched));
        return ngx_http_llm_send_api_error(r, &err);
    }

    if (admit == LLM_ADMIT_BUSY) {
        return ngx_http_llm_send_busy(r, m);
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "llm submit: model \"%s\", %uz sequences of %uz prompt "
                   "tokens, max %uz new", m->alias,
                   llm_generation_n_choices(g->gen), n_prompt,
                   llm_generation_max_new(g->gen));

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


/* ---- the generation's events ---- */

static void
ngx_http_llm_on_token(void *data, size_t choice)
{
    ngx_http_llm_gen_t *g = data;

    uint64_t  now;

    now = llm_metrics_now_ns();
    if (g->last_token_ns[choice]) {
        ngx_http_llm_metrics_observe(g->model, LLM_METRICS_ITL,
                                     now - g->last_token_ns[choice]);
    }
    g->last_token_ns[choice] = now;

    if (g->ctx->ttft_ms < 0) {
        g->ctx->ttft_ms = (ngx_msec_int_t) (ngx_current_msec
                                            - g->ctx->start_ms);
        if (g->keepalive.timer_set) {
            ngx_del_timer(&g->keepalive);
        }
    }
}


static void
ngx_http_llm_on_choice_done(void *data, size_t choice, llm_finish reason,
    const char *error)
{
    ngx_http_llm_gen_t *g = data;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, g->r->connection->log, 0,
                   "llm done: choice %uz, finish %d%s", choice, (int) reason,
                   error ? ", failed" : "");
}


static void
ngx_http_llm_on_note(void *data, llm_generation_note note, const char *text)
{
    ngx_http_llm_gen_t *g = data;

    ngx_uint_t  level;

    /* a response cut at its size limit is the configuration's doing */
    level = note == LLM_GENERATION_FULL ? NGX_LOG_INFO : NGX_LOG_ALERT;
    ngx_log_error(level, g->r->connection->log, 0, "llm: %s", text);
}


static void
ngx_http_llm_on_done(void *data, llm_generation_end end,
    const llm_api_error *err)
{
    ngx_http_llm_gen_t *g = data;

    ngx_int_t            rc;
    llm_buf             *out;
    ngx_http_request_t  *r = g->r;

    g->finished = 1;
    g->ctx->completion_tokens = llm_reply_completion_tokens(g->reply);

    switch (end) {

    case LLM_GENERATION_FAILED:
        rc = ngx_http_llm_send_api_error(r, err);
        break;

    case LLM_GENERATION_BROKEN:
        rc = g->stream ? NGX_ERROR : NGX_HTTP_INTERNAL_SERVER_ERROR;
        break;

    default:
        /* kept before the answer leaves: a client's next request may
         * name it at once */
        ngx_http_llm_responses_keep(r, g->reply);

        if (g->stream) {
            rc = ngx_http_llm_send_pending(g, 1);

        } else {
            out = llm_reply_out(g->reply);
            rc = ngx_http_llm_send_json(r, NGX_HTTP_OK, out->data, out->len);
        }
    }

    ngx_http_finalize_request(r, rc);
}


static void
ngx_http_llm_on_flush(void *data)
{
    ngx_http_llm_gen_t *g = data;

    ngx_connection_t  *c;

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

    if (g->keepalive.timer_set) {
        ngx_del_timer(&g->keepalive);
    }

    if (g->gen) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, g->r->connection->log, 0,
                       "llm release: the request's sequences");
        llm_generation_free(g->gen);
        g->gen = NULL;
    }

    /* the released sequences leave /metrics' gauges of this worker */
    ngx_http_llm_metrics_publish(g->model);
}
