/*
 * A generation request: the reply and its choices' sequences (see the
 * header).  The scheduler calls back per sequence; a choice turns those
 * calls into the reply's work and the driver's events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/llm_generation.h"

typedef struct {
    llm_generation  *gen;
    llm_seq         *seq;
    size_t           index;
} llm_generation_choice;

struct llm_generation {
    const llm_request            *req;
    llm_sched                    *sched;
    llm_reply                    *reply;
    const llm_generation_events  *ev;
    void                         *data;

    llm_generation_choice        *choices;
    size_t                        n_choices;
    size_t                        max_new;
    size_t                        max_response_size;  /* for the FULL note */

    int                           finished;
    int                           paused;       /* backpressure */
    /* the driver may free the generation from an event: the memory goes
       when the outermost callback returns */
    int                           depth;
    int                           freed;
};

static void llm_generation_on_token(void *owner, llm_seq *seq, int32_t token,
    const llm_token_logprobs *lp);
static void llm_generation_on_done(void *owner, llm_seq *seq,
    llm_finish reason, const char *error);
static void llm_generation_on_flush(void *owner);

static const llm_seq_events  llm_generation_seq_events = {
    llm_generation_on_token, llm_generation_on_done, llm_generation_on_flush
};

int
llm_generation_create(const llm_generation_config *cfg, llm_request *req,
    llm_session_prompt *prompt, const llm_generation_events *ev, void *data,
    llm_generation **out, llm_api_error *err)
{
    char                    why[320];
    size_t                  i;
    const char             *param;
    llm_generation         *g;
    llm_constraint         *c;
    llm_reasoning_budget   *budget;
    llm_reply_config        rc;
    llm_structured_plan     plan;
    llm_sampler_params      sp;
    llm_session_limits      lim;
    llm_generation_choice  *ch;
    const llm_parser_def   *tool, *reasoning;

    *out = NULL;
    memset(err, 0, sizeof(*err));

    g = calloc(1, sizeof(llm_generation));
    if (g == NULL) {
        return -1;
    }
    g->req = req;
    g->sched = cfg->sched;
    g->max_response_size = cfg->max_response_size;
    g->ev = ev;
    g->data = data;

    lim.n_ctx = llm_sched_n_ctx(cfg->sched);
    lim.max_tokens = cfg->max_tokens;
    lim.max_response_size = cfg->max_response_size;
    lim.model = cfg->model;

    if (llm_session_max_new_tokens(req, prompt->n_ids, &lim, &g->max_new, err)
        != 0)
    {
        goto failed;
    }

    tool = cfg->tool;
    reasoning = cfg->reasoning;
    llm_reply_parsers(req, &tool, &reasoning);

    /*
     * Structured output: a request whose constraint cannot be enforced is
     * refused before anything is made; the grammar is compiled once (then
     * cached) and each choice's sequence gets a constraint over it.
     */
    if (llm_structured_prepare(cfg->structured, req, tool ? tool->id : NULL,
                               reasoning ? reasoning->id : NULL,
                               prompt->starts_in_reasoning, &plan, why,
                               sizeof(why), &param)
        != 0)
    {
        llm_api_bad_request(err, "invalid_value", param, "%s.", why);
        goto failed;
    }

    /* the response: its choices' pipelines and the protocol's formatter */
    memset(&rc, 0, sizeof(rc));
    rc.req = req;
    rc.tok = cfg->tok;
    rc.tool = tool;
    rc.reasoning = reasoning;
    rc.starts_in_reasoning = prompt->starts_in_reasoning;
    rc.model = req->model ? req->model : cfg->model;
    rc.fingerprint = cfg->fingerprint;
    rc.thinking_key = cfg->thinking_key;
    rc.created = cfg->created;
    rc.echo = prompt->echo;
    rc.echo_len = prompt->echo_len;
    rc.n_prompt = prompt->n_ids;
    rc.max_held = cfg->max_response_size;
    prompt->echo = NULL;

    g->reply = llm_reply_create(&rc);
    if (g->reply == NULL) {
        goto failed_plan;
    }

    g->n_choices = llm_reply_n_choices(g->reply);
    g->choices = calloc(g->n_choices, sizeof(llm_generation_choice));
    if (g->choices == NULL) {
        goto failed_plan;
    }

    for (i = 0; i < g->n_choices; i++) {
        ch = &g->choices[i];
        ch->gen = g;
        ch->index = i;

        llm_session_sampler_params(req, cfg->info, i, &sp);

        ch->seq = llm_seq_create(cfg->sched, prompt->ids, prompt->n_ids,
                                 g->max_new, &sp,
                                 req->sampling.logprobs
                                 ? req->sampling.top_logprobs : -1,
                                 &llm_generation_seq_events, ch, i);
        if (ch->seq == NULL) {
            goto failed_plan;
        }

        if (prompt->cache_upto > 0) {
            /* cache_control: the prefix to the breakpoint is retained */
            llm_seq_set_retention(ch->seq, prompt->cache_upto, req->cache_ttl);
        }
        if (prompt->system_upto > 0) {
            /* recurrent state: snapshotted after the system prompt */
            llm_seq_set_snapshot_at(ch->seq, prompt->system_upto);
        }

        llm_seq_set_speculation(ch->seq, req->speculation >= 0
                                         ? (llm_spec_mode) req->speculation
                                         : cfg->speculation);

        if (plan.index) {
            /* the constraint holds its own reference to the grammar */
            c = llm_constraint_create(plan.index, cfg->tok, plan.triggers,
                                      plan.n_triggers);
            if (c == NULL) {
                goto failed_plan;
            }
            llm_seq_set_constraint(ch->seq, c);
        }

        /* a thinking budget closes the reasoning block where it is spent */
        if (llm_session_reasoning_budget(req, cfg->tok, reasoning
                                         ? reasoning->id : NULL,
                                         prompt->starts_in_reasoning,
                                         g->max_new, &budget) != 0)
        {
            goto failed_plan;
        }
        if (budget) {
            llm_seq_set_reasoning_budget(ch->seq, budget);
        }
    }

    llm_structured_release(cfg->structured, &plan);

    *out = g;
    return 0;

failed_plan:

    llm_structured_release(cfg->structured, &plan);

failed:

    llm_generation_free(g);
    return -1;
}

llm_admit
llm_generation_submit(llm_generation *g)
{
    size_t     i, granted;
    llm_admit  admit;

    admit = llm_sched_reserve(g->sched, g->n_choices, g->n_choices, &granted);
    if (admit != LLM_ADMIT_OK) {
        return admit;
    }

    for (i = 0; i < g->n_choices; i++) {
        llm_sched_submit(g->sched, g->choices[i].seq);
    }

    return LLM_ADMIT_OK;
}

static void
llm_generation_release(llm_generation *g)
{
    size_t  i;

    for (i = 0; g->choices && i < g->n_choices; i++) {
        if (g->choices[i].seq) {
            llm_seq_release(g->choices[i].seq);
            g->choices[i].seq = NULL;
        }
    }
}

static void
llm_generation_destroy(llm_generation *g)
{
    free(g->choices);
    llm_reply_free(g->reply);
    free(g);
}

void
llm_generation_free(llm_generation *g)
{
    if (g == NULL) {
        return;
    }

    llm_generation_release(g);

    if (g->depth > 0) {
        g->freed = 1;
        return;
    }

    llm_generation_destroy(g);
}

/* Around the scheduler's callbacks: 1 when the driver freed g meanwhile. */
static void
llm_generation_enter(llm_generation *g)
{
    g->depth++;
}

static int
llm_generation_leave(llm_generation *g)
{
    if (--g->depth == 0 && g->freed) {
        llm_generation_destroy(g);
        return 1;
    }

    return g->freed;
}

/* What the driver may log (its note event is optional). */
static void
llm_generation_note_to(llm_generation *g, llm_generation_note note)
{
    char  text[160];

    static const char *const  no_memory[] = {
        NULL, "formatting the response", "ending a choice", "ending the response"
    };

    if (g->ev->note == NULL) {
        return;
    }

    if (note == LLM_GENERATION_FULL) {
        snprintf(text, sizeof(text), "the response reached llm_max_response_size (%zu bytes): it "
                 "ends with finish_reason length", g->max_response_size);
    } else {
        snprintf(text, sizeof(text), "out of memory %s", no_memory[note]);
    }
    g->ev->note(g->data, note, text);
}

static void
llm_generation_finish(llm_generation *g, const char *error)
{
    llm_api_error  err;

    g->finished = 1;

    if (error && !g->req->stream) {
        llm_reply_failure(g->reply, error, &err);
        g->ev->done(g->data, LLM_GENERATION_FAILED, &err);
        return;
    }

    if (llm_reply_finish(g->reply, error) != 0) {
        llm_generation_note_to(g, LLM_GENERATION_NO_MEMORY_END);
        g->ev->done(g->data, LLM_GENERATION_BROKEN, NULL);
        return;
    }

    g->ev->done(g->data, LLM_GENERATION_OK, NULL);
}

/*
 * Choice 0's sequence took its first step: what its prompt read from the
 * prefix cache is final (memory at admission, the disk tier in that step;
 * a readmission after preemption does not change it), so the reply learns
 * it now, before any token, and a stream can say it at its start.  The
 * sequence may have waited in the queue until then, and a cache lookup at
 * submit could be outdated by the time it runs.
 */
static int
llm_generation_prompt_read(llm_generation_choice *ch)
{
    if (ch->index != 0) {
        return 0;
    }
    return llm_reply_prompt_read(ch->gen->reply, llm_seq_n_cached(ch->seq),
                                 llm_seq_n_cache_written(ch->seq));
}

/* A choice ended; the response ends with its last choice or an error. */
static void
llm_generation_choice_end(llm_generation_choice *ch, llm_finish reason,
    const char *error)
{
    int              all;
    size_t           n_gen;
    const int32_t   *generated;
    llm_generation  *g = ch->gen;

    if (g->finished || g->freed
        || llm_reply_choice_is_done(g->reply, ch->index))
    {
        return;
    }

    if (g->ev->choice_done) {
        g->ev->choice_done(g->data, ch->index, reason, error);
    }

    /* a choice that ends before its first token (an error) */
    llm_generation_prompt_read(ch);

    generated = llm_seq_generated(ch->seq, &n_gen);
    all = llm_reply_choice_done(g->reply, ch->index, reason, generated, n_gen);

    if (all < 0) {
        llm_generation_note_to(g, LLM_GENERATION_NO_MEMORY_CHOICE);
        error = error ? error : "out of memory ending a choice";
    }

    if (all != 0 || error) {
        llm_generation_finish(g, error);
    }
}

/* Ends every choice still generating, as a limit or an error does. */
static void
llm_generation_end_all(llm_generation *g, llm_finish reason,
    const char *error)
{
    size_t                  i;
    llm_generation_choice  *ch;

    for (i = 0; i < g->n_choices && !g->finished && !g->freed; i++) {
        ch = &g->choices[i];
        if (ch->seq == NULL || llm_reply_choice_is_done(g->reply, i)) {
            continue;
        }
        llm_seq_finish(ch->seq);
        llm_generation_choice_end(ch, reason, error);
    }
}

static void
llm_generation_on_token(void *owner, llm_seq *seq, int32_t token,
    const llm_token_logprobs *lp)
{
    llm_generation_choice  *ch = owner;
    llm_generation         *g = ch->gen;

    llm_generation_enter(g);

    if (g->ev->token) {
        g->ev->token(g->data, ch->index);
    }

    switch (g->freed ? LLM_REPLY_MORE
            : llm_generation_prompt_read(ch) != 0 ? LLM_REPLY_NO_MEMORY
            : llm_reply_token(g->reply, ch->index, token, lp))
    {
    case LLM_REPLY_MORE:
        break;

    case LLM_REPLY_STOP:
        llm_seq_finish(seq);
        llm_generation_choice_end(ch, LLM_FINISH_STOP_SEQ, NULL);
        break;

    case LLM_REPLY_FULL:
        llm_generation_note_to(g, LLM_GENERATION_FULL);
        llm_generation_end_all(g, LLM_FINISH_LENGTH, NULL);
        break;

    case LLM_REPLY_NO_MEMORY:
        llm_generation_note_to(g, LLM_GENERATION_NO_MEMORY_TOKEN);
        llm_generation_end_all(g, LLM_FINISH_ERROR,
                               "out of memory formatting the response");
        break;
    }

    llm_generation_leave(g);
}

static void
llm_generation_on_done(void *owner, llm_seq *seq, llm_finish reason,
    const char *error)
{
    llm_generation_choice  *ch = owner;
    llm_generation         *g = ch->gen;

    llm_generation_enter(g);
    llm_generation_choice_end(ch, reason, error);
    llm_generation_leave(g);
}

static void
llm_generation_on_flush(void *owner)
{
    llm_generation_choice  *ch = owner;
    llm_generation         *g = ch->gen;

    if (g->finished || !g->req->stream) {
        return;
    }

    llm_generation_enter(g);
    if (llm_generation_prompt_read(ch) != 0) {
        llm_generation_note_to(g, LLM_GENERATION_NO_MEMORY_TOKEN);
        llm_generation_end_all(g, LLM_FINISH_ERROR,
                               "out of memory formatting the response");
    }
    if (!g->finished && !g->freed) {
        g->ev->flush(g->data);
    }
    llm_generation_leave(g);
}

llm_reply *
llm_generation_reply(llm_generation *g)
{
    return g->reply;
}

llm_buf *
llm_generation_out(llm_generation *g)
{
    return llm_reply_out(g->reply);
}

size_t
llm_generation_n_choices(const llm_generation *g)
{
    return g->n_choices;
}

size_t
llm_generation_max_new(const llm_generation *g)
{
    return g->max_new;
}

int
llm_generation_finished(const llm_generation *g)
{
    return g->finished;
}

int
llm_generation_backlog(llm_generation *g, size_t unsent, int *paused)
{
    int     pause;
    size_t  i;

    /* resumed only once half is taken: a slow reader does not flip the
       sequences at every write */
    pause = g->paused ? unsent > LLM_GENERATION_BACKLOG / 2
                      : unsent >= LLM_GENERATION_BACKLOG;
    *paused = pause;

    if (pause == g->paused) {
        return 0;
    }

    g->paused = pause;
    for (i = 0; i < g->n_choices; i++) {
        if (g->choices[i].seq) {
            llm_seq_pause(g->choices[i].seq, pause);
        }
    }

    return 1;
}
