/*
 * pythonic (Llama 3.2 / 4, ToolACE and others):
 *   [get_weather(city="San Francisco", days=3), get_time()]
 *   <|python_start|>[...]<|python_end|>
 * Keyword values are Python literals (strings in either quote, numbers,
 * True/False/None, lists, dicts) and become JSON through llm_jv.  An output
 * that does not open with this shape is content.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>

enum { P_CONTENT = 0, P_START, P_LIST, P_NAME, P_KW, P_KWNAME, P_VAL,
       P_AFTERVAL, P_AFTERCALL };

typedef struct {
    llm_parser base;
    int        st;
    int        bare_ok;
    int        any_ok;      /* a call of this list was accepted */
    int        nkw;         /* keywords written in the current call */
    int        named;       /* the current call's name was decided */
    int        wrapped;     /* list opened by <|python_start|> */
    int        end_due;     /* its <|python_end|> may follow: drop it */
    llm_mscan  ms;
    llm_pbuf   rel, name, pre, fname;
    llm_jv     v;
} pythonic_t;

static const char *const P_M_CONTENT[] = { "<|python_start|>",
                                           "<|python_end|>", NULL };
static const char *const P_M_START[] = { "<|python_start|>", NULL };

static int
p_ident(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
           || (!first && ((c >= '0' && c <= '9') || c == '.'));
}

static void
p_raw(pythonic_t *p, char c)
{
    llm_pb_raw(&p->base.pb, &c, 1);
}

/* argument bytes: the held key prefix goes out with the first value byte */
static void
p_args(pythonic_t *p)
{
    llm_pbase *pb = &p->base.pb;

    if (p->v.out.len == 0) {
        return;
    }
    if (p->pre.len) {
        llm_pb_call_args(pb, p->pre.p, p->pre.len);
        llm_pbuf_reset(&p->pre);
        p->nkw++;
    }
    llm_pb_call_args(pb, p->v.out.p, p->v.out.len);
    llm_pbuf_reset(&p->v.out);
}

static void
p_named(pythonic_t *p)
{
    llm_pb_mode m;

    if (p->named) {
        return;
    }
    p->named = 1;
    m = llm_pb_call_name(&p->base.pb, llm_pbuf_str(&p->fname), p->fname.len,
                         0);
    if (m == LLM_PB_ACTIVE || m == LLM_PB_DROPPED) {
        p->any_ok = 1;
    } else if (!p->any_ok) {
        p->bare_ok = 0;      /* first call unknown: the list is text */
    }
}

static void
p_end_call(pythonic_t *p)
{
    llm_pbase *pb = &p->base.pb;

    if (p->st == P_VAL) {
        llm_jv_close(&p->v);
        p_args(p);
    }
    llm_pbuf_reset(&p->pre);
    if (p->nkw) {
        llm_pb_call_args(pb, "}", 1);
    }
    if (pb->mode == LLM_PB_IDLE) {
        llm_pb_release(pb);
    }
    llm_pb_call_end(pb);
}

static void
p_list_end(pythonic_t *p)
{
    p->end_due = p->wrapped && p->any_ok;
    p->wrapped = 0;
    if (p->any_ok) {
        llm_pb_discard(&p->base.pb);
    } else {
        llm_pb_release(&p->base.pb);
    }
    llm_pb_call_end(&p->base.pb);
}

/* not the expected shape: close what was accepted, the rest is text */
static void
p_fail(pythonic_t *p)
{
    if (p->st >= P_KW && p->st <= P_AFTERVAL) {
        p_end_call(p);
    }
    p_list_end(p);
    p->bare_ok = 0;
    p->st = P_CONTENT;
}

static void
p_put(pythonic_t *p, char c)
{
    llm_pbase *pb = &p->base.pb;
    int        k, r;
    size_t     i;

again:
    switch (p->st) {
    case P_CONTENT:
        if (p->bare_ok && p->ms.hlen == 0 && c == '[') {
            p_raw(p, c);
            p->any_ok = 0;
            p->st = P_LIST;
            return;
        }
        llm_pbuf_reset(&p->rel);
        k = llm_mscan_push(&p->ms, p->end_due ? P_M_CONTENT : P_M_START, c,
                           &p->rel);
        for (i = 0; i < p->rel.len; i++) {
            if (!llm_is_space(p->rel.p[i])) {
                p->bare_ok = 0;
                p->end_due = 0;
            }
        }
        llm_pb_content(pb, p->rel.p, p->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, P_M_CONTENT[0], 16);
            p->wrapped = 1;
            p->st = P_START;
        } else if (k == 1) {
            p->end_due = 0;              /* closes the wrapped list */
        }
        return;

    case P_START:
        if (llm_is_space(c)) {
            p_raw(p, c);
            return;
        }
        if (c == '[') {
            p_raw(p, c);
            p->any_ok = 0;
            p->st = P_LIST;
            return;
        }
        p_fail(p);
        goto again;

    case P_LIST:
        if (llm_is_space(c) || (c == ',' && p->any_ok)) {
            p_raw(p, c);
            return;
        }
        if (p_ident(c, 1)) {
            llm_pbuf_reset(&p->name);
            p->st = P_NAME;
            goto again;
        }
        if (c == ']' && p->any_ok) {
            p_raw(p, c);
            p_list_end(p);
            p->st = P_CONTENT;
            return;
        }
        p_fail(p);
        goto again;

    case P_NAME:
        if (p_ident(c, 0) && p->name.len < 256) {
            p_raw(p, c);
            llm_pbuf_addc(&p->name, c);
            return;
        }
        if (c == '(') {
            /* named once its first keyword or ')' shows the shape */
            p_raw(p, c);
            llm_pbuf_reset(&p->fname);
            llm_pbuf_add(&p->fname, p->name.p, p->name.len);
            p->named = 0;
            p->nkw = 0;
            p->st = P_KW;
            return;
        }
        p_fail(p);
        goto again;

    case P_KW:
        if (llm_is_space(c) || (c == ',' && p->nkw)) {
            p_raw(p, c);
            return;
        }
        if (c == ')') {
            p_raw(p, c);
            p_named(p);
            p_end_call(p);
            p->st = P_AFTERCALL;
            return;
        }
        if (p_ident(c, 1)) {
            llm_pbuf_reset(&p->name);
            p->st = P_KWNAME;
            goto again;
        }
        p_fail(p);
        goto again;

    case P_KWNAME:
        if ((p_ident(c, 0) && c != '.') && p->name.len < 256) {
            p_raw(p, c);
            llm_pbuf_addc(&p->name, c);
            return;
        }
        if (c == '=') {
            p_raw(p, c);
            p_named(p);
            llm_pbuf_reset(&p->pre);
            llm_pbuf_addc(&p->pre, p->nkw ? ',' : '{');
            llm_pbuf_addc(&p->pre, '"');
            llm_pbuf_add(&p->pre, p->name.p, p->name.len);
            llm_pbuf_add(&p->pre, "\":", 2);
            llm_jv_reset(&p->v);
            p->st = P_VAL;
            return;
        }
        p_fail(p);
        goto again;

    case P_VAL:
        r = llm_jv_put(&p->v, c);
        if (r == LLM_JV_MORE || r == LLM_JV_DONE) {
            p_raw(p, c);
            p_args(p);
            if (r == LLM_JV_DONE) {
                p->st = P_AFTERVAL;
            }
            return;
        }
        if (r == LLM_JV_END) {
            p_args(p);
            p->st = P_AFTERVAL;
            goto again;
        }
        p_fail(p);
        goto again;

    case P_AFTERVAL:
        if (llm_is_space(c)) {
            p_raw(p, c);
            return;
        }
        if (c == ',') {
            p_raw(p, c);
            p->st = P_KW;
            return;
        }
        if (c == ')') {
            p_raw(p, c);
            p_end_call(p);
            p->st = P_AFTERCALL;
            return;
        }
        p_fail(p);
        goto again;

    case P_AFTERCALL:
        if (llm_is_space(c)) {
            p_raw(p, c);
            return;
        }
        if (c == ',') {
            p_raw(p, c);
            p->st = P_LIST;
            return;
        }
        if (c == ']') {
            p_raw(p, c);
            p_list_end(p);
            p->st = P_CONTENT;
            return;
        }
        p_fail(p);
        goto again;
    }
}

static void
p_feed(llm_parser *pp, const char *text, size_t len)
{
    LLM_FEED_LOOP((pythonic_t *) pp, text, len, p_put);
}

static void
p_finish(llm_parser *pp)
{
    pythonic_t *p = (pythonic_t *) pp;

    llm_pbuf_reset(&p->rel);
    llm_mscan_drain(&p->ms, &p->rel);
    if (p->st == P_CONTENT) {
        llm_pb_content(&pp->pb, p->rel.p, p->rel.len);
        return;
    }
    if (p->st == P_VAL) {
        /* a cut-off value: keep it when it can be completed */
        if (llm_jv_close(&p->v) == 0) {
            p_args(p);
        }
        p->st = P_AFTERVAL;
    }
    if (p->st == P_KW || p->st == P_KWNAME) {
        p_named(p);                      /* "[f(" cut off: f() */
    }
    if (p->st >= P_KW && p->st <= P_AFTERVAL) {
        p_end_call(p);
    }
    p_list_end(p);
    p->st = P_CONTENT;
}

static llm_parser *
p_create(const llm_parser_env *env)
{
    pythonic_t *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    p->base.def = &llm_parser_pythonic;
    llm_pb_init(&p->base.pb, env);
    llm_jv_init(&p->v);
    p->bare_ok = 1;
    return &p->base;
}

static void
p_destroy(llm_parser *pp)
{
    pythonic_t *p = (pythonic_t *) pp;

    if (p == NULL) {
        return;
    }
    llm_pbuf_free(&p->rel);
    llm_pbuf_free(&p->name);
    llm_pbuf_free(&p->pre);
    llm_pbuf_free(&p->fname);
    llm_jv_free(&p->v);
    llm_pb_free(&pp->pb);
    free(p);
}

static const char *const p_markers[] = { "<|python_start|>",
                                         "<|python_end|>", NULL };

const llm_parser_def llm_parser_pythonic = {
    "pythonic", LLM_PARSER_TOOL, p_markers,
    p_create, p_feed, p_finish, p_destroy
};
