/*
 * Table-driven harness for parser tests: runs one model output through a
 * stream processor whole, split at every byte boundary and split at random
 * places, and checks that events and the final result agree, that event
 * sequences are well formed and that each call's TOOL_ARGS concatenate to
 * its final (valid, object) arguments.
 */
#ifndef TEST_PARSERS_HARNESS_H
#define TEST_PARSERS_HARNESS_H

#include "tap.h"
#include "parsers/llm_parser.h"
#include "parsers/llm_stream.h"

#include <jansson.h>

#define TP_MAXCALLS 8

/* tools used by most cases */
#define TP_TOOLS "[" \
  "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":" \
  "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}," \
  "\"days\":{\"type\":\"integer\"}}}}}," \
  "{\"type\":\"function\",\"function\":{\"name\":\"run_code\",\"parameters\":" \
  "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\"}}}}}," \
  "{\"type\":\"function\",\"function\":{\"name\":\"set_config\",\"parameters\":" \
  "{\"type\":\"object\",\"properties\":{\"enabled\":{\"type\":\"boolean\"}," \
  "\"ratio\":{\"type\":\"number\"},\"tags\":{\"type\":\"array\"}," \
  "\"meta\":{\"type\":\"object\"},\"note\":{\"type\":[\"string\",\"null\"]}}}}}]"

typedef struct {
    const char *name;
    const char *tool;          /* tool parser id or NULL */
    const char *reasoning;     /* reasoning parser id or NULL */
    int         starts_in_reasoning;
    const char *tools;         /* tools JSON text or NULL */
    int         no_parallel;
    const char *stop[3];
    const char *text;
    llm_finish  reason;        /* 0 means STOP */
    /* expectations (NULL content/reasoning: must be NULL) */
    const char *content;
    const char *reasoning_text;
    int         n_calls;
    const char *call_name[TP_MAXCALLS];
    const char *call_args[TP_MAXCALLS];
    llm_finish  finish;        /* 0: not checked */
    const char *stop_seq;
} tp_case;

/* what the events said */
typedef struct {
    char    *content, *reasoning;
    size_t   clen, rlen;
    int      n_begin, n_end;
    char    *names[TP_MAXCALLS];
    char    *args[TP_MAXCALLS];
    size_t   alen[TP_MAXCALLS];
    int      open;             /* index of the open call, -1 */
    char     err[256];         /* first protocol violation */
    int      n_events;
} tp_rec;

static void
tp_append(char **p, size_t *len, const char *s, size_t n)
{
    *p = realloc(*p, *len + n + 1);
    memcpy(*p + *len, s, n);
    *len += n;
    (*p)[*len] = '\0';
}

static int
tp_utf8_ok(const char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char c = (unsigned char) s[i];
        size_t        k, need = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3
                                : c >= 0xc0 ? 2 : 0;
        if (need == 0 || i + need > n) {
            return 0;
        }
        for (k = 1; k < need; k++) {
            if (((unsigned char) s[i + k] & 0xc0) != 0x80) {
                return 0;
            }
        }
        i += need;
    }
    return 1;
}

static void
tp_err(tp_rec *r, const char *msg)
{
    if (r->err[0] == '\0') {
        snprintf(r->err, sizeof(r->err), "event %d: %s", r->n_events, msg);
    }
}

static void
tp_on_event(void *ctx, const llm_event *ev)
{
    tp_rec *r = ctx;

    r->n_events++;
    if ((ev->type == LLM_EV_CONTENT || ev->type == LLM_EV_REASONING
         || ev->type == LLM_EV_TOOL_ARGS) && ev->len == 0)
    {
        tp_err(r, "empty text event");
    }
    if ((ev->type == LLM_EV_CONTENT || ev->type == LLM_EV_REASONING
         || ev->type == LLM_EV_TOOL_ARGS) && !tp_utf8_ok(ev->text, ev->len))
    {
        tp_err(r, "event text is not whole UTF-8");
    }
    switch (ev->type) {
    case LLM_EV_CONTENT:
        if (r->open >= 0) tp_err(r, "content inside a call");
        tp_append(&r->content, &r->clen, ev->text, ev->len);
        break;
    case LLM_EV_REASONING:
        if (r->open >= 0) tp_err(r, "reasoning inside a call");
        tp_append(&r->reasoning, &r->rlen, ev->text, ev->len);
        break;
    case LLM_EV_TOOL_BEGIN:
        if (r->open >= 0) tp_err(r, "TOOL_BEGIN inside a call");
        if (ev->index != r->n_begin) tp_err(r, "TOOL_BEGIN index");
        if (!ev->id || strncmp(ev->id, "call_", 5) || strlen(ev->id) != 29)
            tp_err(r, "bad call id");
        if (r->n_begin < TP_MAXCALLS) {
            r->names[r->n_begin] = strdup(ev->name ? ev->name : "");
            r->args[r->n_begin] = NULL;
            r->alen[r->n_begin] = 0;
        }
        r->open = r->n_begin++;
        break;
    case LLM_EV_TOOL_ARGS:
        if (r->open < 0 || ev->index != r->open) tp_err(r, "TOOL_ARGS index");
        else if (r->open < TP_MAXCALLS)
            tp_append(&r->args[r->open], &r->alen[r->open], ev->text, ev->len);
        break;
    case LLM_EV_TOOL_END:
        if (r->open < 0 || ev->index != r->open) tp_err(r, "TOOL_END index");
        r->open = -1;
        r->n_end++;
        break;
    }
}

static void
tp_rec_free(tp_rec *r)
{
    int i;

    free(r->content);
    free(r->reasoning);
    for (i = 0; i < r->n_begin && i < TP_MAXCALLS; i++) {
        free(r->names[i]);
        free(r->args[i]);
    }
}

static json_t *
tp_tools(const tp_case *c)
{
    json_error_t e;

    return c->tools ? json_loads(c->tools, 0, &e) : NULL;
}

/* Run text cut at the given offsets (sorted, within (0, len)). */
static int
tp_run(const tp_case *c, json_t *tools, const size_t *cuts, size_t ncuts,
       tp_rec *rec, llm_result *res)
{
    llm_stream_config cfg;
    llm_stream       *s;
    size_t            len = strlen(c->text), pos = 0, i, n_stop = 0;
    int               stopped = 0;

    memset(&cfg, 0, sizeof(cfg));
    cfg.tool = c->tool ? llm_tool_parser_find(c->tool) : NULL;
    cfg.reasoning = c->reasoning ? llm_reasoning_parser_find(c->reasoning)
                                 : NULL;
    if ((c->tool && !cfg.tool) || (c->reasoning && !cfg.reasoning)) {
        return -1;
    }
    cfg.starts_in_reasoning = c->starts_in_reasoning;
    cfg.tools = tools;
    cfg.parallel_tool_calls = !c->no_parallel;
    while (n_stop < 3 && c->stop[n_stop]) {
        n_stop++;
    }
    cfg.stop = c->stop;
    cfg.n_stop = n_stop;

    memset(rec, 0, sizeof(*rec));
    rec->open = -1;
    memset(res, 0, sizeof(*res));
    s = llm_stream_create(&cfg);
    if (s == NULL) {
        return -1;
    }
    for (i = 0; i <= ncuts && !stopped; i++) {
        size_t end = i < ncuts ? cuts[i] : len;

        stopped = llm_stream_feed(s, c->text + pos, end - pos, tp_on_event,
                                  rec);
        pos = end;
    }
    llm_stream_finish(s, c->reason ? c->reason : LLM_FINISH_STOP,
                      tp_on_event, rec, res);
    llm_stream_destroy(s);
    if (rec->open >= 0) {
        tp_err(rec, "call left open");
    }
    return 0;
}

static int
tp_streq(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

/* Same result and same event texts (ids aside)?  Writes why into msg. */
static int
tp_same(const tp_rec *ra, const llm_result *a, const tp_rec *rb,
        const llm_result *b, char *msg, size_t msglen)
{
    size_t i;

    if (!tp_streq(a->content, b->content)) {
        snprintf(msg, msglen, "content '%s' vs '%s'", a->content ? a->content
                 : "(null)", b->content ? b->content : "(null)");
        return 0;
    }
    if (!tp_streq(a->reasoning, b->reasoning)) {
        snprintf(msg, msglen, "reasoning '%s' vs '%s'", a->reasoning
                 ? a->reasoning : "(null)", b->reasoning ? b->reasoning
                 : "(null)");
        return 0;
    }
    if (a->n_tool_calls != b->n_tool_calls || a->finish != b->finish
        || !tp_streq(a->stop_sequence, b->stop_sequence))
    {
        snprintf(msg, msglen, "calls %zu vs %zu, finish %d vs %d",
                 a->n_tool_calls, b->n_tool_calls, a->finish, b->finish);
        return 0;
    }
    for (i = 0; i < a->n_tool_calls; i++) {
        if (!tp_streq(a->tool_calls[i].name, b->tool_calls[i].name)
            || !tp_streq(a->tool_calls[i].arguments,
                         b->tool_calls[i].arguments))
        {
            snprintf(msg, msglen, "call %zu: %s %s vs %s %s", i,
                     a->tool_calls[i].name, a->tool_calls[i].arguments,
                     b->tool_calls[i].name, b->tool_calls[i].arguments);
            return 0;
        }
    }
    if (!tp_streq(ra->content, rb->content)
        || !tp_streq(ra->reasoning, rb->reasoning)
        || ra->n_begin != rb->n_begin)
    {
        snprintf(msg, msglen, "event texts differ");
        return 0;
    }
    if (rb->err[0]) {
        snprintf(msg, msglen, "%s", rb->err);
        return 0;
    }
    return 1;
}

/* Event stream consistent with the result? */
static int
tp_consistent(const tp_rec *r, const llm_result *res, char *msg,
              size_t msglen)
{
    size_t i;

    if (r->err[0]) {
        snprintf(msg, msglen, "%s", r->err);
        return 0;
    }
    if (!tp_streq(r->content, res->content)
        || !tp_streq(r->reasoning, res->reasoning))
    {
        snprintf(msg, msglen, "event text differs from result");
        return 0;
    }
    if ((size_t) r->n_begin != res->n_tool_calls || r->n_end != r->n_begin) {
        snprintf(msg, msglen, "%d TOOL_BEGIN, %d TOOL_END, %zu calls",
                 r->n_begin, r->n_end, res->n_tool_calls);
        return 0;
    }
    for (i = 0; i < res->n_tool_calls && i < TP_MAXCALLS; i++) {
        json_error_t e;
        json_t      *j;

        if (!tp_streq(r->names[i], res->tool_calls[i].name)
            || !tp_streq(r->args[i], res->tool_calls[i].arguments))
        {
            snprintf(msg, msglen, "call %zu: args events '%s' vs result '%s'",
                     i, r->args[i] ? r->args[i] : "(null)",
                     res->tool_calls[i].arguments);
            return 0;
        }
        j = json_loads(res->tool_calls[i].arguments, 0, &e);
        if (!json_is_object(j)) {
            snprintf(msg, msglen, "call %zu: arguments not a JSON object: %s",
                     i, res->tool_calls[i].arguments);
            json_decref(j);
            return 0;
        }
        json_decref(j);
    }
    return 1;
}

static unsigned long tp_seed = 12345;

static size_t
tp_rand(size_t n)
{
    tp_seed = tp_seed * 6364136223846793005UL + 1442695040888963407UL;
    return (size_t) ((tp_seed >> 33) % n);
}

static int
tp_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *) a, y = *(const size_t *) b;

    return x < y ? -1 : x > y;
}

/* The whole check for one case. */
static void __attribute__((unused))
tp_check(const tp_case *c)
{
    json_t      *tools = tp_tools(c);
    tp_rec       r0, r;
    llm_result   res0, res;
    char         msg[512];
    size_t       len = strlen(c->text), i, cuts[16];
    int          good = 1, k;

    if (c->tools && !tools) {
        ok(0, "%s: tools JSON parses", c->name);
        return;
    }
    if (tp_run(c, tools, NULL, 0, &r0, &res0) < 0) {
        ok(0, "%s: parsers exist", c->name);
        json_decref(tools);
        return;
    }

    /* expectations on the one-piece run */
    if (c->content) {
        is_str(res0.content, c->content, "%s: content", c->name);
    } else {
        ok(res0.content == NULL, "%s: no content", c->name);
        if (res0.content) printf("#   got '%s'\n", res0.content);
    }
    if (c->reasoning_text) {
        is_str(res0.reasoning, c->reasoning_text, "%s: reasoning", c->name);
    } else {
        ok(res0.reasoning == NULL, "%s: no reasoning", c->name);
        if (res0.reasoning) printf("#   got '%s'\n", res0.reasoning);
    }
    is_int(res0.n_tool_calls, c->n_calls, "%s: %d tool calls", c->name,
           c->n_calls);
    for (i = 0; i < res0.n_tool_calls && (int) i < c->n_calls; i++) {
        is_str(res0.tool_calls[i].name, c->call_name[i], "%s: call %zu name",
               c->name, i);
        is_str(res0.tool_calls[i].arguments, c->call_args[i],
               "%s: call %zu arguments", c->name, i);
    }
    if (c->finish) {
        is_int(res0.finish, c->finish, "%s: finish reason", c->name);
    }
    if (c->stop_seq) {
        is_str(res0.stop_sequence, c->stop_seq, "%s: stop sequence", c->name);
    }
    good = tp_consistent(&r0, &res0, msg, sizeof(msg));
    ok(good, "%s: events agree with the result", c->name);
    if (!good) printf("#   %s\n", msg);

    /* every two-piece split */
    good = 1;
    for (i = 1; i < len && good; i++) {
        tp_run(c, tools, &i, 1, &r, &res);
        good = tp_same(&r0, &res0, &r, &res, msg, sizeof(msg))
               && tp_consistent(&r, &res, msg, sizeof(msg));
        if (!good) {
            printf("#   split at %zu: %s\n", i, msg);
        }
        tp_rec_free(&r);
        llm_result_free(&res);
    }
    ok(good, "%s: same at every split point", c->name);

    /* byte by byte, then random multi-splits */
    good = 1;
    for (k = 0; k < 21 && good && len > 2; k++) {
        size_t n;

        if (k == 0) {
            size_t *all = malloc(len * sizeof(size_t));

            for (i = 1; i < len; i++) all[i - 1] = i;
            tp_run(c, tools, all, len - 1, &r, &res);
            free(all);
        } else {
            n = 1 + tp_rand(len - 1 < 16 ? len - 1 : 16);
            for (i = 0; i < n; i++) cuts[i] = 1 + tp_rand(len - 1);
            qsort(cuts, n, sizeof(size_t), tp_cmp_size);
            tp_run(c, tools, cuts, n, &r, &res);
        }
        good = tp_same(&r0, &res0, &r, &res, msg, sizeof(msg))
               && tp_consistent(&r, &res, msg, sizeof(msg));
        if (!good) {
            printf("#   multi-split %d: %s\n", k, msg);
        }
        tp_rec_free(&r);
        llm_result_free(&res);
    }
    ok(good, "%s: same byte by byte and at random splits", c->name);

    tp_rec_free(&r0);
    llm_result_free(&res0);
    json_decref(tools);
}

static void __attribute__((unused))
tp_check_all(const tp_case *cases, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        tp_check(&cases[i]);
    }
}

#endif
