/*
 * The choices of one response (llm_reply.h).
 */
#include <stdlib.h>
#include <string.h>

#include "api/llm_response_budget.h"
#include "chat/llm_reply.h"
#include "engine/llm_detok.h"
#include "engine/llm_reasoning_budget.h"
#include "parsers/llm_stream.h"

/* Response ids: the protocol's prefix and this many random characters. */
#define LLM_REPLY_ID_RANDOM  24

/* The longest token text measured for the response budget. */
#define LLM_REPLY_TOKEN_TEXT_MAX  256

/* The first logprobs buffer of a choice; it doubles from there. */
#define LLM_REPLY_LOGPROBS_FIRST  16

typedef struct {
    llm_reply           *reply;
    size_t               index;
    llm_detok            detok;
    llm_stream          *stream;
    llm_result           result;
    llm_token_logprobs  *lps;          /* streaming: not yet sent; else all */
    size_t               n_lps;
    size_t               lps_cap;
    size_t               n_lps_content;  /* of lps: those of the content */
    const int32_t       *generated;    /* borrowed at choice_done */
    size_t               n_generated;
    int                  done;
    /* usage's reasoning_tokens, counted as a thinking budget counts
     * (a budget that never closes): the tokens written inside reasoning
     * blocks, the close marker's included, the open marker's not; NULL
     * without a reasoning format */
    llm_reasoning_budget *reasoning;
} llm_reply_choice;

struct llm_reply {
    const llm_request    *req;
    const llm_tokenizer  *tok;
    char                  id[64];
    char                 *echo;
    size_t                n_prompt;
    size_t                n_cached;       /* llm_reply_prompt_read */
    size_t                cache_written;
    int                   prompt_read;
    size_t                held;        /* bytes the response keeps */
    size_t                max_held;
    llm_formatter        *fmt;
    llm_buf               out;
    int                   no_memory;   /* a formatter could not grow out */
    size_t                n_choices;
    size_t                n_done;
    llm_reply_choice     *choices;
};


static int
llm_reply_token_bytes(void *tok, int32_t id, char *out, size_t cap)
{
    return llm_tokenizer_token_bytes(tok, id, out, cap);
}


void
llm_reply_parsers(const llm_request *req, const llm_parser_def **tool,
    const llm_parser_def **reasoning)
{
    if (req->api == LLM_API_COMPLETIONS) {
        *tool = NULL;
        *reasoning = NULL;
        return;
    }

    /* OpenAI returns no tool calls unless tools were offered */
    if (req->tools == NULL || json_array_size(req->tools) == 0
        || req->tool_choice == LLM_TOOL_CHOICE_NONE)
    {
        *tool = NULL;
    }
}


llm_reply *
llm_reply_create(const llm_reply_config *cfg)
{
    size_t                    i;
    llm_reply                *r;
    llm_reply_choice         *ch;
    llm_stream_config         sc;
    llm_reasoning_marks       marks;
    llm_formatter_config      fc;
    const llm_request        *req = cfg->req;
    const llm_formatter_def  *def;

    def = llm_formatter_find(req->api);
    r = calloc(1, sizeof(*r));
    if (def == NULL || r == NULL) {
        free(cfg->echo);
        free(r);
        return NULL;
    }

    r->req = req;
    r->tok = cfg->tok;
    r->echo = cfg->echo;
    r->n_prompt = cfg->n_prompt;
    r->max_held = cfg->max_held;
    r->n_choices = req->n > 0 ? (size_t) req->n : 1;
    llm_buf_init(&r->out);
    llm_random_id(r->id, sizeof(r->id), def->id_prefix, LLM_REPLY_ID_RANDOM);

    memset(&fc, 0, sizeof(fc));
    fc.id = r->id;
    fc.created = cfg->created;
    fc.model = cfg->model;
    fc.fingerprint = cfg->fingerprint;
    fc.thinking_key = cfg->thinking_key;
    fc.n_choices = r->n_choices;
    fc.stream = req->stream;
    fc.include_usage = req->include_usage;
    fc.logprobs = req->sampling.logprobs;
    fc.top_logprobs = req->sampling.top_logprobs;
    fc.token_bytes = llm_reply_token_bytes;
    fc.token_ctx = (void *) cfg->tok;
    fc.echo = req->echo ? r->echo : NULL;
    fc.echo_len = cfg->echo_len;
    fc.fields = req->response_fields;
    fc.seal_reasoning = req->seal_reasoning;
    fc.response_input = req->response_input;

    r->fmt = llm_formatter_create(def, &fc);
    r->choices = calloc(r->n_choices, sizeof(llm_reply_choice));
    if (r->fmt == NULL || r->choices == NULL) {
        llm_reply_free(r);
        return NULL;
    }

    memset(&sc, 0, sizeof(sc));
    sc.tool = cfg->tool;
    sc.reasoning = cfg->reasoning;
    sc.starts_in_reasoning = cfg->reasoning ? cfg->starts_in_reasoning : 0;
    sc.tools = req->tools;
    sc.parallel_tool_calls = req->parallel_tool_calls;
    sc.stop = (const char *const *) req->stop;
    sc.n_stop = req->n_stop;

    for (i = 0; i < r->n_choices; i++) {
        ch = &r->choices[i];
        ch->reply = r;
        ch->index = i;
        if (cfg->reasoning
            && llm_reasoning_markers(cfg->reasoning->id, &marks) == 0)
        {
            ch->reasoning = llm_reasoning_budget_create(cfg->tok, marks.open,
                                marks.close, marks.forced_close, SIZE_MAX,
                                sc.starts_in_reasoning);
            if (ch->reasoning == NULL) {
                llm_reply_free(r);
                return NULL;
            }
        }

        /* chat keeps special tokens: parsers need markers like <tool_call> */
        llm_detok_init(&ch->detok, cfg->tok,
                       req->api == LLM_API_COMPLETIONS
                       ? LLM_DETOK_SKIP_SPECIAL | LLM_DETOK_CONTINUATION : 0);

        ch->stream = llm_stream_create(&sc);
        if (ch->stream == NULL) {
            llm_reply_free(r);
            return NULL;
        }
    }

    return r;
}


void
llm_reply_free(llm_reply *r)
{
    size_t             i;
    llm_reply_choice  *ch;

    if (r == NULL) {
        return;
    }

    for (i = 0; r->choices && i < r->n_choices; i++) {
        ch = &r->choices[i];
        if (ch->stream) {
            llm_stream_destroy(ch->stream);
        }
        llm_detok_free(&ch->detok);
        llm_reasoning_budget_free(ch->reasoning);
        llm_result_free(&ch->result);
        free(ch->lps);
    }

    free(r->choices);
    llm_formatter_free(r->fmt);
    llm_buf_free(&r->out);
    free(r->echo);
    free(r);
}


size_t
llm_reply_n_choices(const llm_reply *r)
{
    return r->n_choices;
}


const char *
llm_reply_id(const llm_reply *r)
{
    return r->id;
}


llm_buf *
llm_reply_out(llm_reply *r)
{
    return &r->out;
}


int
llm_reply_start(llm_reply *r)
{
    return llm_formatter_start(r->fmt, &r->out);
}


int
llm_reply_keepalive(llm_reply *r)
{
    return llm_formatter_keepalive(r->fmt, &r->out);
}


/* Events of one choice's stream processor, to the formatter (streaming). */
static void
llm_reply_emit(void *data, const llm_event *ev)
{
    llm_reply_choice *ch = data;

    llm_reply          *r = ch->reply;
    llm_logprobs_list   lpl, *lp;

    /*
     * logprobs describe the content: the tokens behind reasoning and tool
     * calls, which the content excludes, are dropped (those of tokens that
     * produced no text yet stay with the next event)
     */
    if (ev->type == LLM_EV_CONTENT) {
        ch->n_lps_content = ch->n_lps;
    } else {
        ch->n_lps = ch->n_lps_content;
    }

    if (!r->req->stream) {
        return;    /* the result is built by the stream processor */
    }

    /* the logprobs of the tokens behind this text go out with it */
    lp = NULL;
    if (r->req->sampling.logprobs && ev->type == LLM_EV_CONTENT) {
        lpl.tokens = ch->lps;
        lpl.n = ch->n_lps;
        lp = &lpl;
    }

    if (llm_formatter_event(r->fmt, &r->out, ch->index, ev, lp) != 0) {
        r->no_memory = 1;
    }

    if (lp) {
        ch->n_lps = 0;    /* formatted: a stream keeps none of them */
        ch->n_lps_content = 0;
    }
}


/*
 * What a token adds to the response kept in memory: its text and, not
 * streaming, its logprobs entries.
 */
static size_t
llm_reply_token_cost(llm_reply *r, size_t text_len,
    const llm_token_logprobs *lp)
{
    int     i, n;
    char    tb[LLM_REPLY_TOKEN_TEXT_MAX];
    size_t  len[1 + LLM_MAX_TOP_LOGPROBS], n_entries;

    n_entries = 0;
    if (lp) {
        n = llm_tokenizer_token_bytes(r->tok, lp->chosen.id, tb, sizeof(tb));
        len[n_entries++] = n > 0 ? (size_t) n : 0;
        for (i = 0; i < lp->n_top && i < r->req->sampling.top_logprobs
                    && i < LLM_MAX_TOP_LOGPROBS; i++)
        {
            n = llm_tokenizer_token_bytes(r->tok, lp->top[i].id, tb,
                                          sizeof(tb));
            len[n_entries++] = n > 0 ? (size_t) n : 0;
        }
    }

    return llm_response_token_bytes(text_len, lp != NULL, len, n_entries);
}


static int
llm_reply_keep_logprobs(llm_reply_choice *ch, const llm_token_logprobs *lp)
{
    size_t               cap;
    llm_token_logprobs  *n;

    if (ch->n_lps == ch->lps_cap) {
        cap = ch->lps_cap ? 2 * ch->lps_cap : LLM_REPLY_LOGPROBS_FIRST;
        n = realloc(ch->lps, cap * sizeof(llm_token_logprobs));
        if (n == NULL) {
            return -1;
        }
        ch->lps = n;
        ch->lps_cap = cap;
    }

    ch->lps[ch->n_lps++] = *lp;
    return 0;
}


llm_reply_status
llm_reply_token(llm_reply *r, size_t choice, int32_t token,
    const llm_token_logprobs *lp)
{
    size_t             len;
    const char        *text;
    llm_reply_choice  *ch = &r->choices[choice];

    if (ch->done) {
        return LLM_REPLY_MORE;
    }

    if (ch->reasoning) {
        llm_reasoning_budget_accept(ch->reasoning, token);
    }

    if (lp && llm_reply_keep_logprobs(ch, lp) != 0) {
        return LLM_REPLY_NO_MEMORY;
    }

    if (llm_detok_push(&ch->detok, token, &text, &len) != 0) {
        len = 0;
    }

    r->held += llm_reply_token_cost(r, len, r->req->stream ? NULL : lp);
    if (r->held > r->max_held) {
        return LLM_REPLY_FULL;
    }

    if (len && llm_stream_feed(ch->stream, text, len, llm_reply_emit, ch)) {
        /* a stop sequence matched: it is never emitted */
        return r->no_memory ? LLM_REPLY_NO_MEMORY : LLM_REPLY_STOP;
    }
    return r->no_memory ? LLM_REPLY_NO_MEMORY : LLM_REPLY_MORE;
}


int
llm_reply_choice_done(llm_reply *r, size_t choice, llm_finish reason,
    const int32_t *generated, size_t n_generated)
{
    size_t             len;
    const char        *text;
    llm_reply_choice  *ch = &r->choices[choice];

    if (ch->done) {
        return r->n_done == r->n_choices;
    }
    ch->done = 1;
    r->n_done++;

    if (llm_detok_flush(&ch->detok, &text, &len) == 0 && len) {
        llm_stream_feed(ch->stream, text, len, llm_reply_emit, ch);
    }

    if (llm_stream_finish(ch->stream, reason, llm_reply_emit, ch,
                          &ch->result) != 0)
    {
        r->no_memory = 1;
    }

    ch->generated = generated;
    ch->n_generated = n_generated;
    ch->result.usage.completion_tokens = (long) n_generated;
    ch->result.usage.reasoning_tokens = ch->reasoning
        ? (long) llm_reasoning_budget_used(ch->reasoning) : 0;

    if (r->req->stream && reason != LLM_FINISH_ERROR
        && llm_formatter_finish_choice(r->fmt, &r->out, ch->index,
                                       &ch->result) != 0)
    {
        r->no_memory = 1;
    }

    if (r->no_memory) {
        return -1;
    }

    return r->n_done == r->n_choices;
}


int
llm_reply_choice_is_done(const llm_reply *r, size_t choice)
{
    return r->choices[choice].done;
}


long
llm_reply_completion_tokens(const llm_reply *r)
{
    long    n;
    size_t  i;

    n = 0;
    for (i = 0; i < r->n_choices; i++) {
        n += r->choices[i].result.usage.completion_tokens;
    }

    return n;
}


int
llm_reply_record(llm_reply *r, llm_buf *b)
{
    return llm_formatter_record(r->fmt, b);
}


void
llm_reply_failure(const llm_reply *r, const char *error, llm_api_error *err)
{
    llm_formatter_generation_error(r->fmt, err, error);
}


/* The usage of the whole request, but for its completion tokens. */
static void
llm_reply_prompt_usage(const llm_reply *r, llm_usage *usage)
{
    memset(usage, 0, sizeof(*usage));
    usage->prompt_tokens = (long) r->n_prompt;
    usage->cached_tokens = (long) r->n_cached;
    usage->cache_creation_tokens = (long) r->cache_written;
}


int
llm_reply_prompt_read(llm_reply *r, size_t n_cached, size_t n_cache_written)
{
    llm_usage  usage;

    if (r->prompt_read) {
        return 0;
    }
    r->prompt_read = 1;
    r->n_cached = n_cached;
    r->cache_written = n_cache_written;

    if (!r->req->stream) {
        return 0;
    }
    llm_reply_prompt_usage(r, &usage);
    return llm_formatter_prompt_read(r->fmt, &r->out, &usage);
}


int
llm_reply_finish(llm_reply *r, const char *error)
{
    int                 rc;
    size_t              i;
    llm_usage           usage;
    llm_result         *results;
    llm_api_error       err;
    llm_logprobs_list  *lpl;
    llm_reply_choice   *ch;

    if (error) {
        if (!r->req->stream) {
            return 0;    /* llm_reply_failure answers */
        }
        llm_reply_failure(r, error, &err);
        return llm_formatter_error(r->fmt, &r->out, &err);
    }

    llm_reply_prompt_usage(r, &usage);
    usage.completion_tokens = llm_reply_completion_tokens(r);
    for (i = 0; i < r->n_choices; i++) {
        usage.reasoning_tokens += r->choices[i].result.usage.reasoning_tokens;
    }

    results = calloc(r->n_choices, sizeof(llm_result));
    lpl = calloc(r->n_choices, sizeof(llm_logprobs_list));
    if (results == NULL || lpl == NULL) {
        free(results);
        free(lpl);
        return -1;
    }

    /* shallow copies: the choices keep owning their results */
    for (i = 0; i < r->n_choices; i++) {
        ch = &r->choices[i];
        results[i] = ch->result;
        results[i].usage.prompt_tokens = usage.prompt_tokens;
        results[i].usage.cached_tokens = usage.cached_tokens;
        results[i].usage.cache_creation_tokens = usage.cache_creation_tokens;
        if (r->req->return_token_ids && ch->generated) {
            results[i].token_ids = ch->generated;
            results[i].n_token_ids = ch->n_generated;
        }
        lpl[i].tokens = ch->lps;
        lpl[i].n = ch->n_lps;
    }

    if (r->req->stream) {
        rc = llm_formatter_finish(r->fmt, &r->out, results, &usage);

    } else {
        llm_buf_reset(&r->out);
        rc = llm_formatter_response(r->fmt, &r->out, results,
                                    r->req->sampling.logprobs ? lpl : NULL);
    }

    free(results);
    free(lpl);
    return rc;
}
