/*
 * Stream processor: stop strings, then the reasoning parser, then the tool
 * parser, then an output stage that merges text into whole-UTF-8 events,
 * trims whitespace around content and reasoning and records the result.
 */
#include "parsers/llm_stream.h"
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char     *id;
    char     *name;
    llm_pbuf  pend;      /* argument bytes not yet emitted */
    llm_pbuf  args;      /* emitted (valid UTF-8), the final arguments */
} stream_call;

/* one kind of text on its way out */
typedef struct {
    llm_pbuf  buf;       /* not yet emitted (may end in a partial character) */
    llm_pbuf  ws;        /* trailing whitespace held until more text comes */
    int       started;   /* non-space text was emitted */
    llm_pbuf  all;       /* everything emitted, for the result */
} stream_text;

struct llm_stream {
    llm_stream_config  cfg;
    char             **stop;
    size_t             n_stop;
    size_t             stop_max;
    llm_pbuf           stop_hold;
    int                stopped;
    char              *stop_hit;

    llm_parser        *rp;        /* reasoning parser or NULL */
    llm_parser        *tp;        /* tool parser or NULL */

    llm_event_fn       emit;      /* of the current feed/finish call */
    void              *ctx;

    stream_text        text[2];   /* [0] content, [1] reasoning */
    int                active;    /* which text buffer got bytes last, -1 */
    stream_call       *calls;
    size_t             n_calls, cap_calls;
    int                in_call;
    json_t            *own_tools;  /* empty tools array we made, or NULL */
    int                trim;       /* trim whitespace of content/reasoning */
    int                oom;
};

/* ---- output stage ---- */

static void
out_event(llm_stream *s, const llm_event *ev)
{
    if (s->emit) {
        s->emit(s->ctx, ev);
    }
}

static void
text_emit(llm_stream *s, int which, int final)
{
    stream_text *t = &s->text[which];
    size_t       start = t->all.len, used;
    llm_event    ev;

    if (t->buf.len == 0) {
        return;
    }
    used = llm_utf8_clean(t->buf.p, t->buf.len, final, &t->all);
    memmove(t->buf.p, t->buf.p + used, t->buf.len - used);
    t->buf.len -= used;
    t->buf.p[t->buf.len] = '\0';
    if (t->all.len == start) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = which ? LLM_EV_REASONING : LLM_EV_CONTENT;
    ev.text = t->all.p + start;
    ev.len = t->all.len - start;
    out_event(s, &ev);
}

static void
args_emit(llm_stream *s, int final)
{
    stream_call *c;
    llm_event    ev;
    size_t       start, used;

    if (!s->in_call) {
        return;
    }
    c = &s->calls[s->n_calls - 1];
    if (c->pend.len == 0) {
        return;
    }
    start = c->args.len;
    used = llm_utf8_clean(c->pend.p, c->pend.len, final, &c->args);
    memmove(c->pend.p, c->pend.p + used, c->pend.len - used);
    c->pend.len -= used;
    c->pend.p[c->pend.len] = '\0';
    if (c->args.len == start) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = LLM_EV_TOOL_ARGS;
    ev.index = (int) s->n_calls - 1;
    ev.text = c->args.p + start;
    ev.len = c->args.len - start;
    out_event(s, &ev);
}

static void
flush_all(llm_stream *s, int final)
{
    text_emit(s, 0, final);
    text_emit(s, 1, final);
    args_emit(s, final);
}

static void
text_in(llm_stream *s, int which, const char *p, size_t n)
{
    stream_text *t = &s->text[which];
    size_t       i, run;

    if (s->active != which) {
        if (s->active >= 0) {
            text_emit(s, s->active, 0);
        }
        args_emit(s, 0);
        s->active = which;
    }
    if (!s->trim) {
        llm_pbuf_add(&t->buf, p, n);
        return;
    }
    for (i = 0; i < n; i = run) {
        if (llm_is_space(p[i])) {
            for (run = i; run < n && llm_is_space(p[run]); run++) {
            }
            if (t->started) {
                llm_pbuf_add(&t->ws, p + i, run - i);
            }
            continue;
        }
        for (run = i; run < n && !llm_is_space(p[run]); run++) {
        }
        if (t->ws.len) {
            llm_pbuf_add(&t->buf, t->ws.p, t->ws.len);
            llm_pbuf_reset(&t->ws);
        }
        llm_pbuf_add(&t->buf, p + i, run - i);
        t->started = 1;
    }
}

static void
on_event(void *ctx, const llm_event *ev)
{
    llm_stream  *s = ctx;
    stream_call *c;
    llm_event    out;

    switch (ev->type) {
    case LLM_EV_CONTENT:
        text_in(s, 0, ev->text, ev->len);
        return;
    case LLM_EV_REASONING:
        text_in(s, 1, ev->text, ev->len);
        return;
    case LLM_EV_TOOL_BEGIN:
        text_emit(s, 0, 0);
        text_emit(s, 1, 0);
        llm_pbuf_reset(&s->text[0].ws);   /* no whitespace before a call */
        s->active = -1;
        if (s->n_calls == s->cap_calls) {
            size_t       cap = s->cap_calls ? s->cap_calls * 2 : 4;
            stream_call *nc = realloc(s->calls, cap * sizeof(*nc));

            if (nc == NULL) {
                s->oom = 1;
                return;
            }
            s->calls = nc;
            s->cap_calls = cap;
        }
        c = &s->calls[s->n_calls++];
        memset(c, 0, sizeof(*c));
        c->id = strdup(ev->id ? ev->id : "");
        c->name = strdup(ev->name ? ev->name : "");
        if (c->id == NULL || c->name == NULL) {
            s->oom = 1;
        }
        s->in_call = 1;
        out = *ev;
        out.index = (int) s->n_calls - 1;
        out.id = c->id ? c->id : "";
        out.name = c->name ? c->name : "";
        out_event(s, &out);
        return;
    case LLM_EV_TOOL_ARGS:
        if (!s->in_call) {
            return;
        }
        if (s->active >= 0) {
            text_emit(s, s->active, 0);
            s->active = -1;
        }
        if (llm_pbuf_add(&s->calls[s->n_calls - 1].pend, ev->text,
                         ev->len) < 0)
        {
            s->oom = 1;
        }
        return;
    case LLM_EV_TOOL_END:
        if (!s->in_call) {
            return;
        }
        args_emit(s, 1);
        s->in_call = 0;
        memset(&out, 0, sizeof(out));
        out.type = LLM_EV_TOOL_END;
        out.index = (int) s->n_calls - 1;
        out_event(s, &out);
        return;
    }
}

/* ---- parser chain ---- */

static void
to_tool(llm_stream *s, const char *p, size_t n)
{
    if (s->tp) {
        s->tp->def->feed(s->tp, p, n);
    } else {
        llm_event ev;

        memset(&ev, 0, sizeof(ev));
        ev.type = LLM_EV_CONTENT;
        ev.text = p;
        ev.len = n;
        on_event(s, &ev);
    }
}

/* events of the reasoning parser: its content goes on to the tool parser */
static void
from_reasoning(void *ctx, const llm_event *ev)
{
    llm_stream *s = ctx;

    if (ev->type == LLM_EV_CONTENT) {
        to_tool(s, ev->text, ev->len);
    } else {
        on_event(s, ev);
    }
}

static void
to_parsers(llm_stream *s, const char *p, size_t n)
{
    if (n == 0) {
        return;
    }
    if (s->rp) {
        s->rp->def->feed(s->rp, p, n);
    } else {
        to_tool(s, p, n);
    }
}

/* ---- stop strings ---- */

static const char *
find_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
    size_t i;

    for (i = 0; i + nn <= hn; i++) {
        if (h[i] == n[0] && memcmp(h + i, n, nn) == 0) {
            return h + i;
        }
    }
    return NULL;
}

/* Pass on what can no longer be part of a stop string; 1 when one matched. */
static int
stop_scan(llm_stream *s, const char *p, size_t n)
{
    llm_pbuf *h = &s->stop_hold;
    size_t    i, best = (size_t) -1, keep, k;
    int       hit = -1;

    if (s->n_stop == 0) {
        to_parsers(s, p, n);
        return 0;
    }
    llm_pbuf_add(h, p, n);
    for (i = 0; i < s->n_stop; i++) {
        size_t      sl = strlen(s->stop[i]);
        const char *m;

        if (sl == 0 || sl > h->len) {
            continue;
        }
        m = find_bytes(h->p, h->len, s->stop[i], sl);
        if (m && (size_t) (m - h->p) < best) {
            best = (size_t) (m - h->p);
            hit = (int) i;
        }
    }
    if (hit >= 0) {
        to_parsers(s, h->p, best);
        s->stopped = 1;
        s->stop_hit = strdup(s->stop[hit]);
        if (s->stop_hit == NULL) {
            s->oom = 1;
        }
        llm_pbuf_reset(h);
        return 1;
    }
    /* longest suffix that is a prefix of some stop string */
    keep = 0;
    for (k = (h->len < s->stop_max ? h->len : s->stop_max - 1); k > 0; k--) {
        for (i = 0; i < s->n_stop; i++) {
            if (strlen(s->stop[i]) > k
                && memcmp(h->p + h->len - k, s->stop[i], k) == 0)
            {
                keep = k;
                break;
            }
        }
        if (keep) {
            break;
        }
    }
    to_parsers(s, h->p, h->len - keep);
    memmove(h->p, h->p + h->len - keep, keep);
    h->len = keep;
    h->p[keep] = '\0';
    return 0;
}

/* ---- public ---- */

llm_stream *
llm_stream_create(const llm_stream_config *cfg)
{
    llm_stream     *s = calloc(1, sizeof(*s));
    llm_parser_env  env;
    size_t          i;
    const llm_parser_def *tdef = cfg->tool, *rdef = cfg->reasoning;
    json_t         *none = NULL;

    if (s == NULL) {
        return NULL;
    }
    s->cfg = *cfg;
    s->active = -1;
    s->trim = (cfg->tool || cfg->reasoning) && !cfg->raw_text;
    if (cfg->n_stop) {
        s->stop = calloc(cfg->n_stop, sizeof(char *));
        if (s->stop == NULL) {
            goto fail;
        }
        for (i = 0; i < cfg->n_stop; i++) {
            if (cfg->stop[i] == NULL || cfg->stop[i][0] == '\0') {
                continue;
            }
            s->stop[s->n_stop] = strdup(cfg->stop[i]);
            if (s->stop[s->n_stop] == NULL) {
                goto fail;
            }
            if (strlen(cfg->stop[i]) > s->stop_max) {
                s->stop_max = strlen(cfg->stop[i]);
            }
            s->n_stop++;
        }
    }

    memset(&env, 0, sizeof(env));
    env.tools = cfg->tools;
    env.parallel_tool_calls = cfg->parallel_tool_calls;
    env.starts_in_reasoning = cfg->starts_in_reasoning;

    /* a format that carries both (harmony) runs alone */
    if (rdef && (rdef->kinds & LLM_PARSER_TOOL) && tdef != rdef) {
        if (tdef == NULL) {
            none = json_array();        /* its calls come out as content */
            env.tools = none;
        }
        tdef = rdef;
        rdef = NULL;
    } else if (tdef && (tdef->kinds & LLM_PARSER_REASONING)) {
        rdef = NULL;
    }

    if (rdef) {
        env.emit = from_reasoning;
        env.ctx = s;
        s->rp = rdef->create(&env);
        if (s->rp == NULL) {
            goto fail;
        }
    }
    if (tdef) {
        env.emit = on_event;
        env.ctx = s;
        s->tp = tdef->create(&env);
        if (s->tp == NULL) {
            goto fail;
        }
    }
    s->own_tools = none;
    return s;

fail:
    s->own_tools = none;
    llm_stream_destroy(s);
    return NULL;
}

void
llm_stream_destroy(llm_stream *s)
{
    size_t i;

    if (s == NULL) {
        return;
    }
    if (s->rp) {
        s->rp->def->destroy(s->rp);
    }
    if (s->tp) {
        s->tp->def->destroy(s->tp);
    }
    json_decref(s->own_tools);
    for (i = 0; i < s->n_stop; i++) {
        free(s->stop[i]);
    }
    free(s->stop);
    free(s->stop_hit);
    llm_pbuf_free(&s->stop_hold);
    for (i = 0; i < 2; i++) {
        llm_pbuf_free(&s->text[i].buf);
        llm_pbuf_free(&s->text[i].ws);
        llm_pbuf_free(&s->text[i].all);
    }
    for (i = 0; i < s->n_calls; i++) {
        free(s->calls[i].id);
        free(s->calls[i].name);
        llm_pbuf_free(&s->calls[i].args);
        llm_pbuf_free(&s->calls[i].pend);
    }
    free(s->calls);
    free(s);
}

int
llm_stream_feed(llm_stream *s, const char *text, size_t len,
                llm_event_fn emit, void *ctx)
{
    int stopped;

    if (s->stopped) {
        return 1;
    }
    s->emit = emit;
    s->ctx = ctx;
    stopped = stop_scan(s, text, len);
    flush_all(s, 0);
    s->emit = NULL;
    return stopped;
}

static char *
take_text(stream_text *t)
{
    char *p;

    if (t->all.len == 0) {
        return NULL;
    }
    p = t->all.p;
    t->all.p = NULL;
    t->all.len = t->all.cap = 0;
    return p;
}

int
llm_stream_finish(llm_stream *s, llm_finish reason, llm_event_fn emit,
                  void *ctx, llm_result *out)
{
    size_t i;

    s->emit = emit;
    s->ctx = ctx;
    if (!s->stopped && s->stop_hold.len) {
        to_parsers(s, s->stop_hold.p, s->stop_hold.len);
        llm_pbuf_reset(&s->stop_hold);
    }
    if (s->rp) {
        s->rp->def->finish(s->rp);
    }
    if (s->tp) {
        s->tp->def->finish(s->tp);
    }
    if (s->in_call) {                    /* a parser left a call open */
        llm_event ev;

        memset(&ev, 0, sizeof(ev));
        ev.type = LLM_EV_TOOL_END;
        on_event(s, &ev);
    }
    flush_all(s, 1);
    s->emit = NULL;

    out->content = take_text(&s->text[0]);
    out->reasoning = take_text(&s->text[1]);
    out->tool_calls = NULL;
    out->n_tool_calls = 0;
    if (s->n_calls) {
        out->tool_calls = calloc(s->n_calls, sizeof(llm_tool_call));
        if (out->tool_calls == NULL) {
            s->oom = 1;
        } else {
            for (i = 0; i < s->n_calls; i++) {
                stream_call *c = &s->calls[i];

                out->tool_calls[i].id = c->id;
                out->tool_calls[i].name = c->name;
                out->tool_calls[i].arguments = c->args.p ? c->args.p
                                                         : strdup("{}");
                c->id = c->name = NULL;
                c->args.p = NULL;
                c->args.len = c->args.cap = 0;
            }
            out->n_tool_calls = s->n_calls;
        }
    }
    out->stop_sequence = s->stop_hit;
    s->stop_hit = NULL;
    if (s->stopped) {
        out->finish = LLM_FINISH_STOP_SEQ;
    } else if (out->n_tool_calls && reason == LLM_FINISH_STOP) {
        out->finish = LLM_FINISH_TOOL_CALLS;
    } else {
        out->finish = reason;
    }
    return s->oom ? -1 : 0;
}
