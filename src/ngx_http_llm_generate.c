/*
 * Generation requests: IR -> prompt tokens -> scheduler sequences, and the
 * output pipeline of every choice:
 *
 *   token -> detokenizer (complete UTF-8 only) -> stream processor
 *         (reasoning + tool-call parsers, stop strings) -> events
 *         -> protocol formatter -> SSE bytes -> ngx_http_output_filter
 *
 * Non-streaming requests run the same pipeline and send one JSON body built
 * from the stream processor's result.  OpenAI chat, OpenAI completions and
 * Anthropic messages differ only in their formatter.
 */
#include "ngx_http_llm_generate.h"

#include "api/llm_formatter.h"
#include "api/llm_response_budget.h"
#include "chat/llm_structured.h"
#include "engine/llm_constrain.h"
#include "engine/llm_detok.h"
#include "parsers/llm_stream.h"


typedef struct ngx_http_llm_gen_s  ngx_http_llm_gen_t;

typedef struct {
    ngx_http_llm_gen_t             *gen;
    llm_seq                        *seq;
    ngx_uint_t                      index;
    llm_detok                       detok;
    llm_stream                     *stream;
    llm_result                      result;
    llm_token_logprobs             *lps;        /* not yet streamed, or all */
    size_t                          n_lps;
    size_t                          lps_cap;
    ngx_uint_t                      done;
} ngx_http_llm_choice_t;


struct ngx_http_llm_gen_s {
    ngx_http_request_t             *r;
    ngx_http_llm_ctx_t             *ctx;
    ngx_http_llm_model_t           *model;
    llm_request                    *req;
    const llm_tokenizer            *tok;

    ngx_uint_t                      n_choices;
    ngx_uint_t                      n_done;
    ngx_http_llm_choice_t          *choices;

    char                           *prompt_text;    /* completions echo */
    size_t                          prompt_len;
    size_t                          n_prompt;
    size_t                          n_cached;

    char                            id[64];
    llm_formatter                  *fmt;            /* the protocol's bytes */

    llm_buf                         out;            /* pending stream bytes */
    ngx_int_t                       sent;           /* an early error's rc */
    ngx_chain_t                    *free;           /* recycled output bufs */
    ngx_chain_t                    *busy;           /* not yet sent */
    size_t                          held;           /* response bytes kept */
    size_t                          held_max;       /* llm_max_response_size */
    ngx_event_t                     keepalive;      /* until the first token */
    ngx_uint_t                      finished:1;
    ngx_uint_t                      paused:1;       /* backpressure */
    ngx_uint_t                      over:1;         /* held_max reached */
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
static ngx_int_t ngx_http_llm_hold(ngx_http_llm_gen_t *g, size_t text_len,
    const llm_token_logprobs *lp);
static void ngx_http_llm_end_choices(ngx_http_llm_gen_t *g, llm_finish reason,
    const char *error);
static ngx_int_t ngx_http_llm_pace(ngx_http_llm_gen_t *g, ngx_uint_t wrote);
static void ngx_http_llm_keepalive(ngx_event_t *ev);


static int
ngx_http_llm_token_bytes(void *ctx, int32_t id, char *out, size_t cap)
{
    return llm_tokenizer_token_bytes(ctx, id, out, cap);
}


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
    ngx_http_request_t  *r = g->r;

    if (g->out.len == 0 && !last) {
        return NGX_OK;
    }

    cl = ngx_chain_get_free_buf(r->pool, &g->free);
    if (cl == NULL) {
        return NGX_ERROR;
    }
    b = cl->buf;

    if ((size_t) (b->end - b->start) < g->out.len) {
        size = ngx_max(g->out.len, 4096);
        b->start = ngx_palloc(r->pool, size);
        if (b->start == NULL) {
            return NGX_ERROR;
        }
        b->end = b->start + size;
    }

    b->pos = b->start;
    b->last = b->start;
    if (g->out.len) {
        b->last = ngx_cpymem(b->start, g->out.data, g->out.len);
        b->temporary = 1;
    }
    b->tag = (ngx_buf_tag_t) &ngx_http_llm_module;
    b->flush = 1;
    b->last_buf = last;
    b->last_in_chain = 1;
    llm_buf_reset(&g->out);

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


/* ---- events from the stream processor to the formatter ---- */

static void
ngx_http_llm_emit(void *data, const llm_event *ev)
{
    ngx_http_llm_choice_t *ch = data;

    ngx_http_llm_gen_t  *g = ch->gen;
    llm_logprobs_list    lpl, *lp;

    if (!g->req->stream) {
        return;    /* the result is built by the stream processor */
    }

    /* the logprobs of the tokens behind this text go out with it */
    lp = NULL;
    if (g->req->sampling.logprobs && ev->type == LLM_EV_CONTENT) {
        lpl.tokens = ch->lps;
        lpl.n = ch->n_lps;
        lp = &lpl;
    }

    if (llm_formatter_event(g->fmt, &g->out, ch->index, ev, lp) != 0) {
        ngx_log_error(NGX_LOG_ALERT, g->r->connection->log, 0,
                      "llm: out of memory formatting a stream event");
    }

    if (lp) {
        ch->n_lps = 0;    /* formatted: a stream keeps none of them */
    }
}



static void
ngx_http_llm_sampler_params(llm_request *req, ngx_uint_t index,
    llm_sampler_params *sp, llm_logit_bias *bias, int *n_bias)
{
    const char  *key;
    json_t      *v;

    llm_sampler_params_default(sp);

    sp->temperature = (float) req->sampling.temperature;
    sp->top_p = (float) req->sampling.top_p;
    sp->top_k = req->sampling.top_k;
    sp->min_p = (float) req->sampling.min_p;
    sp->presence_penalty = (float) req->sampling.presence_penalty;
    sp->frequency_penalty = (float) req->sampling.frequency_penalty;
    sp->repetition_penalty = (float) req->sampling.repetition_penalty;
    sp->has_seed = req->sampling.has_seed;
    sp->seed = req->sampling.seed + index;   /* n > 1: distinct choices */

    *n_bias = 0;
    if (req->sampling.logit_bias) {
        json_object_foreach(req->sampling.logit_bias, key, v) {
            if (*n_bias >= NGX_HTTP_LLM_MAX_BIAS) {
                break;    /* the protocol layer refused more */
            }
            bias[*n_bias].id = (int32_t) strtol(key, NULL, 10);
            bias[*n_bias].bias = (float) json_number_value(v);
            (*n_bias)++;
        }
    }

    sp->logit_bias = bias;
    sp->n_logit_bias = *n_bias;
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
    c = llm_constraint_create(plan.index, g->tok, plan.triggers,
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
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    ngx_str_set(&retry, "1");
    if (ngx_http_llm_add_header(r, "Retry-After", &retry) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_llm_send_error(r, lcf->api == LLM_API_MESSAGES
                                      ? 529 : NGX_HTTP_TOO_MANY_REQUESTS,
                                   NULL, NULL, "server_busy",
                                   "Model '%V' is busy: %ui sequences run "
                                   "and the wait queue is full; retry "
                                   "later.", &m->alias, m->parallel);
}


ngx_int_t
ngx_http_llm_generate(ngx_http_request_t *r, ngx_http_llm_prep_t *p)
{
    int                       starts_in_reasoning, n_bias;
    size_t                    n_prompt, max_gen, room, granted, n, fit,
                              per_token;
    int32_t                  *ids;
    ngx_int_t                 rc;
    ngx_uint_t                i;
    llm_admit                 admit;
    llm_formatter_config      fc;
    const llm_formatter_def  *def;
    llm_logit_bias            bias[NGX_HTTP_LLM_MAX_BIAS];
    llm_request              *req = &p->req;
    ngx_http_llm_model_t     *m = p->model;
    llm_stream_config         sc;
    llm_sampler_params        sp;
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
    g->tok = m->tokenizer;
    llm_buf_init(&g->out);

    /* prepared in a thread (ngx_http_llm_prepare.c): owned by p */
    ids = p->prompt.ids;
    n_prompt = p->prompt.n_ids;
    starts_in_reasoning = p->prompt.starts_in_reasoning;
    g->prompt_text = p->prompt.echo;
    g->prompt_len = p->prompt.echo_len;
    p->prompt.echo = NULL;

    g->n_prompt = n_prompt;
    ctx->prompt_tokens = n_prompt;

    if (n_prompt == 0) {
        return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                       "prompt", "invalid_value",
                                       "The prompt is empty.");
    }

    if (n_prompt >= llm_sched_n_ctx(m->sched)) {
        return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                       req->api == LLM_API_COMPLETIONS
                                       ? "prompt" : "messages",
                                       "context_length_exceeded",
                                       "This model's maximum context length "
                                       "is %ui tokens. However, your prompt "
                                       "has %uz tokens.",
                                       llm_sched_n_ctx(m->sched),
                                       n_prompt);
    }

    room = llm_sched_n_ctx(m->sched) - n_prompt;
    max_gen = (size_t) lcf->max_tokens;
    if (req->max_tokens > 0 && (size_t) req->max_tokens < max_gen) {
        max_gen = (size_t) req->max_tokens;
    }
    if (max_gen > room) {
        max_gen = room;
    }

    /*
     * What the response may keep in memory (llm_max_response_size): a
     * max_tokens the client asked for that cannot fit is a 400; the
     * server's own default is lowered to what fits.
     */
    n = req->n > 0 ? (size_t) req->n : 1;
    per_token = llm_response_bytes_per_token(req->stream,
                                             req->sampling.logprobs,
                                             req->sampling.top_logprobs);
    fit = llm_response_tokens_fit(lcf->max_response_size, n, per_token);

    if (max_gen > fit) {
        if (fit == 0
            || (req->max_tokens > 0 && (size_t) req->max_tokens == max_gen))
        {
            return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                  "max_tokens", "invalid_value",
                                  "n=%uz x max_tokens=%uz%s would keep "
                                  "about %uz KiB for the response, more "
                                  "than llm_max_response_size (%uz KiB) "
                                  "allows: at most %uz tokens per choice "
                                  "fit; ask for fewer tokens, choices or "
                                  "top_logprobs, or stream the response.",
                                  n, max_gen,
                                  req->sampling.logprobs && !req->stream
                                  ? " with logprobs" : "",
                                  n * max_gen * per_token / 1024,
                                  lcf->max_response_size / 1024, fit);
        }

        max_gen = fit;
    }

    g->held_max = lcf->max_response_size;

    g->n_choices = req->n > 0 ? req->n : 1;

    /* response identity and the protocol's formatter */
    def = llm_formatter_find(req->api);
    llm_random_id(g->id, sizeof(g->id), def->id_prefix, 24);

    ngx_memzero(&fc, sizeof(fc));
    fc.id = g->id;
    fc.created = ngx_time();
    fc.model = req->model ? req->model : (char *) m->alias.data;
    fc.fingerprint = NGX_HTTP_LLM_FINGERPRINT;
    fc.n_choices = g->n_choices;
    fc.stream = req->stream;
    fc.include_usage = req->include_usage;
    fc.logprobs = req->sampling.logprobs;
    fc.top_logprobs = req->sampling.top_logprobs;
    fc.token_bytes = ngx_http_llm_token_bytes;
    fc.token_ctx = (void *) g->tok;
    fc.echo = req->echo ? g->prompt_text : NULL;
    fc.echo_len = g->prompt_len;
    fc.prompt_tokens = (long) n_prompt;

    g->fmt = llm_formatter_create(def, &fc);
    if (g->fmt == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    g->choices = ngx_pcalloc(r->pool,
                             g->n_choices * sizeof(ngx_http_llm_choice_t));
    if (g->choices == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    tool_def = req->api != LLM_API_COMPLETIONS
               ? ngx_http_llm_tool_parser(r, m, req) : NULL;
    reasoning_def = req->api != LLM_API_COMPLETIONS
                    ? ngx_http_llm_reasoning_parser(r, m) : NULL;

    rc = ngx_http_llm_structured_check(g, tool_def, reasoning_def,
                                       starts_in_reasoning);
    if (rc != NGX_OK) {
        return rc == NGX_DONE ? NGX_OK : rc;
    }

    for (i = 0; i < g->n_choices; i++) {
        ch = &g->choices[i];
        ch->gen = g;
        ch->index = i;

        ngx_memzero(&sc, sizeof(sc));
        if (req->api != LLM_API_COMPLETIONS) {
            sc.tool = ngx_http_llm_tool_parser(r, m, req);
            sc.reasoning = ngx_http_llm_reasoning_parser(r, m);
            sc.starts_in_reasoning = starts_in_reasoning;
        }
        sc.tools = req->tools;
        sc.parallel_tool_calls = req->parallel_tool_calls;
        sc.stop = (const char *const *) req->stop;
        sc.n_stop = req->n_stop;

        ch->stream = llm_stream_create(&sc);
        if (ch->stream == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        /* chat keeps special tokens: parsers need markers like <tool_call> */
        llm_detok_init(&ch->detok, g->tok,
                       req->api == LLM_API_COMPLETIONS
                       ? LLM_DETOK_SKIP_SPECIAL | LLM_DETOK_CONTINUATION : 0);

        ngx_http_llm_sampler_params(req, i, &sp, bias, &n_bias);

        ch->seq = llm_seq_create(m->sched, ids, n_prompt, max_gen, &sp,
                                 req->sampling.logprobs
                                 ? req->sampling.top_logprobs : -1,
                                 &ngx_http_llm_gen_events, ch, i);
        if (ch->seq == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
        if (ngx_http_llm_send_stream_header(g) == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (llm_formatter_start(g->fmt, &g->out) != 0) {
            return NGX_ERROR;
        }

        if (ngx_http_llm_send_pending(g, 0) == NGX_ERROR) {
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

    if (llm_formatter_keepalive(g->fmt, &g->out) != 0
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

    size_t               len;
    const char          *text;
    ngx_http_llm_gen_t  *g = ch->gen;

    if (g->ctx->ttft_ms < 0) {
        g->ctx->ttft_ms = (ngx_msec_int_t) (ngx_current_msec
                                            - g->ctx->start_ms);
        if (g->keepalive.timer_set) {
            ngx_del_timer(&g->keepalive);
        }
    }

    if (lp) {
        if (ch->n_lps == ch->lps_cap) {
            llm_token_logprobs *n;
            size_t cap = ch->lps_cap ? 2 * ch->lps_cap : 16;

            n = realloc(ch->lps, cap * sizeof(llm_token_logprobs));
            if (n == NULL) {
                ngx_http_llm_end_choices(g, LLM_FINISH_ERROR,
                                         "out of memory for logprobs");
                return;
            }
            ch->lps = n;
            ch->lps_cap = cap;
        }
        ch->lps[ch->n_lps++] = *lp;
    }

    if (llm_detok_push(&ch->detok, token, &text, &len) != 0) {
        len = 0;
    }

    if (ngx_http_llm_hold(g, len, g->req->stream ? NULL : lp) != NGX_OK) {
        return;    /* the response reached llm_max_response_size */
    }

    if (len == 0) {
        return;
    }

    if (llm_stream_feed(ch->stream, text, len, ngx_http_llm_emit, ch)) {
        /* a stop sequence matched: it is never emitted */
        llm_seq_finish(seq);
        ngx_http_llm_on_done(ch, seq, LLM_FINISH_STOP_SEQ, NULL);
    }
}


/*
 * Counts what a token adds to the response kept in memory (its text and,
 * not streaming, its logprobs); past llm_max_response_size every choice ends
 * as if it had reached max_tokens.  NGX_DECLINED when it did.
 */
static ngx_int_t
ngx_http_llm_hold(ngx_http_llm_gen_t *g, size_t text_len,
    const llm_token_logprobs *lp)
{
    int     i, n;
    char    tb[256];
    size_t  len[1 + LLM_MAX_TOP_LOGPROBS], n_entries;

    n_entries = 0;
    if (lp) {
        n = llm_tokenizer_token_bytes(g->tok, lp->chosen.id, tb, sizeof(tb));
        len[n_entries++] = n > 0 ? (size_t) n : 0;
        for (i = 0; i < lp->n_top && i < g->req->sampling.top_logprobs
                    && i < LLM_MAX_TOP_LOGPROBS; i++)
        {
            n = llm_tokenizer_token_bytes(g->tok, lp->top[i].id, tb,
                                          sizeof(tb));
            len[n_entries++] = n > 0 ? (size_t) n : 0;
        }
    }

    g->held += llm_response_token_bytes(text_len, lp != NULL, len, n_entries);

    if (g->held <= g->held_max) {
        return NGX_OK;
    }

    if (!g->over) {
        g->over = 1;
        ngx_log_error(NGX_LOG_INFO, g->r->connection->log, 0,
                      "llm: the response reached llm_max_response_size "
                      "(%uz bytes): it ends with finish_reason length",
                      g->held_max);
        ngx_http_llm_end_choices(g, LLM_FINISH_LENGTH, NULL);
    }

    return NGX_DECLINED;
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
        if (ch->done || ch->seq == NULL) {
            continue;
        }
        llm_seq_finish(ch->seq);
        ngx_http_llm_on_done(ch, ch->seq, reason, error);
    }
}


/* A failure after the stream started: an error event, then the end. */
static void
ngx_http_llm_stream_error(ngx_http_llm_gen_t *g, const char *error)
{
    llm_api_error  err;

    llm_formatter_generation_error(g->fmt, &err, error);
    llm_formatter_error(g->fmt, &g->out, &err);
}


static void
ngx_http_llm_finish_request(ngx_http_llm_gen_t *g, const char *error)
{
    ngx_int_t              rc;
    ngx_uint_t             i;
    llm_usage              usage;
    llm_result            *results;
    llm_logprobs_list     *lpl;
    ngx_http_request_t    *r = g->r;
    ngx_http_llm_choice_t *ch;

    g->finished = 1;

    ngx_memzero(&usage, sizeof(usage));
    usage.prompt_tokens = (long) g->n_prompt;
    usage.cached_tokens = (long) g->n_cached;
    for (i = 0; i < g->n_choices; i++) {
        usage.completion_tokens += g->choices[i].result.usage.completion_tokens;
    }
    g->ctx->completion_tokens = usage.completion_tokens;

    if (error && !g->req->stream) {
        ngx_http_finalize_request(r, ngx_http_llm_send_error(r,
                                  NGX_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
                                  NULL, "Generation failed: %s", error));
        return;
    }

    results = ngx_pcalloc(r->pool, g->n_choices * sizeof(llm_result));
    lpl = ngx_pcalloc(r->pool, g->n_choices * sizeof(llm_logprobs_list));
    if (results == NULL || lpl == NULL) {
        ngx_http_finalize_request(r, g->req->stream
                                     ? NGX_ERROR
                                     : NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    for (i = 0; i < g->n_choices; i++) {
        ch = &g->choices[i];
        results[i] = ch->result;
        results[i].usage.prompt_tokens = usage.prompt_tokens;
        results[i].usage.cached_tokens = usage.cached_tokens;
        if (g->req->return_token_ids && ch->seq) {
            results[i].token_ids = llm_seq_generated(ch->seq,
                                                     &results[i].n_token_ids);
        }
        lpl[i].tokens = ch->lps;
        lpl[i].n = ch->n_lps;
    }

    if (g->req->stream) {
        if (error) {
            ngx_http_llm_stream_error(g, error);

        } else if (llm_formatter_finish(g->fmt, &g->out, results, &usage)
                   != 0)
        {
            ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                          "llm: out of memory ending a stream");
        }

        rc = ngx_http_llm_send_pending(g, 1);
        ngx_http_finalize_request(r, rc == NGX_ERROR ? NGX_ERROR : rc);
        return;
    }

    llm_buf_reset(&g->out);

    if (llm_formatter_response(g->fmt, &g->out, results,
                               g->req->sampling.logprobs ? lpl : NULL)
        != 0)
    {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ngx_http_finalize_request(r, ngx_http_llm_send_json(r, NGX_HTTP_OK,
                                  g->out.data, g->out.len));
}


static void
ngx_http_llm_on_done(void *owner, llm_seq *seq, llm_finish reason,
    const char *error)
{
    ngx_http_llm_choice_t *ch = owner;

    size_t               len, n_gen;
    const char          *text;
    ngx_http_llm_gen_t  *g = ch->gen;

    if (ch->done) {
        return;
    }
    ch->done = 1;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, g->r->connection->log, 0,
                   "llm done: choice %ui, finish %d%s", ch->index,
                   (int) reason, error ? ", failed" : "");

    if (llm_seq_index(seq) == 0) {
        g->n_cached = llm_seq_n_cached(seq);
    }

    if (llm_detok_flush(&ch->detok, &text, &len) == 0 && len) {
        llm_stream_feed(ch->stream, text, len, ngx_http_llm_emit, ch);
    }

    llm_stream_finish(ch->stream, reason, ngx_http_llm_emit, ch, &ch->result);
    llm_seq_generated(seq, &n_gen);
    ch->result.usage.completion_tokens = (long) n_gen;

    if (g->req->stream && !error) {
        if (llm_formatter_finish_choice(g->fmt, &g->out, ch->index, &ch->result)
            != 0)
        {
            ngx_log_error(NGX_LOG_ALERT, g->r->connection->log, 0,
                          "llm: out of memory ending a choice");
        }
    }

    if (++g->n_done == g->n_choices || error) {
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
        if (ch->stream) {
            llm_stream_destroy(ch->stream);
        }
        llm_detok_free(&ch->detok);
        llm_result_free(&ch->result);
        free(ch->lps);
    }

    llm_formatter_free(g->fmt);
    free(g->prompt_text);
    llm_buf_free(&g->out);
}


/* ---- parser choice ---- */

const llm_parser_def *
ngx_http_llm_tool_parser(ngx_http_request_t *r, ngx_http_llm_model_t *m,
    const llm_request *req)
{
    ngx_http_llm_loc_conf_t  *lcf;

    /* OpenAI returns no tool calls unless tools were offered */
    if (req->tools == NULL || json_array_size(req->tools) == 0
        || req->tool_choice == LLM_TOOL_CHOICE_NONE)
    {
        return NULL;
    }

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    if (ngx_strcmp(lcf->tool_parser.data, "none") == 0) {
        return NULL;
    }

    if (ngx_strcmp(lcf->tool_parser.data, "auto") == 0) {
        return m->tool_parser ? llm_tool_parser_find(m->tool_parser) : NULL;
    }

    return llm_tool_parser_find((char *) lcf->tool_parser.data);
}


const llm_parser_def *
ngx_http_llm_reasoning_parser(ngx_http_request_t *r, ngx_http_llm_model_t *m)
{
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    if (ngx_strcmp(lcf->reasoning_parser.data, "none") == 0) {
        return NULL;
    }

    if (ngx_strcmp(lcf->reasoning_parser.data, "auto") == 0) {
        return m->reasoning_parser
               ? llm_reasoning_parser_find(m->reasoning_parser) : NULL;
    }

    return llm_reasoning_parser_find((char *) lcf->reasoning_parser.data);
}
