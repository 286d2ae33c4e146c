/*
 * tool_call_list: <|tool_call|>[{"name": "f", "arguments": {...}}, ...]
 * (Phi-4-mini, Granite 3.x).  Phi-4-mini closes the list with
 * <|/tool_call|>, Granite ends it at EOS; both also write the calls as bare
 * objects separated by commas, or leave the closer out.  Content before the
 * marker is text; so is text after the calls.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

enum { T_CONTENT = 0, T_PRE, T_JSON, T_AFTER };

typedef struct {
    llm_parser base;
    int        st;
    llm_mscan  ms;
    llm_pbuf   rel;
    llm_jcall  jc;
} tcl_t;

#define T_OPEN_S  "<|tool_call|>"
#define T_CLOSE_S "<|/tool_call|>"

static const char *const T_OPEN[] = { T_OPEN_S, NULL };
static const char *const T_AFTER_MARKS[] = { T_CLOSE_S, T_OPEN_S, NULL };

static void
t_put(tcl_t *t, char c)
{
    llm_pbase *pb = &t->base.pb;
    int        k, r;

again:
    switch (t->st) {
    case T_CONTENT:
        llm_pbuf_reset(&t->rel);
        k = llm_mscan_push(&t->ms, T_OPEN, c, &t->rel);
        llm_pb_content(pb, t->rel.p, t->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, T_OPEN_S, strlen(T_OPEN_S));
            t->st = T_PRE;
        }
        return;

    case T_PRE:                          /* after the marker or a comma between calls */
        if (llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        if (c == '{' || c == '[') {
            llm_jcall_init(&t->jc, pb, 0);
            t->st = T_JSON;
            goto again;
        }
        llm_pb_release(pb);              /* not JSON: the marker was text */
        llm_pb_call_end(pb);
        t->st = T_CONTENT;
        goto again;

    case T_JSON:
        r = llm_jcall_put(&t->jc, c);
        if (r == LLM_JC_MORE) {
            return;
        }
        t->st = T_AFTER;
        if (r == LLM_JC_DONE) {
            return;
        }
        llm_jcall_finish(&t->jc);
        goto again;

    case T_AFTER:                        /* separators, the closer, or text again */
        if (t->ms.hlen == 0 && (llm_is_space(c) || c == ',')) {
            llm_pb_tail(pb, &c, 1);
            if (c == ',') {
                t->st = T_PRE;
            }
            return;
        }
        llm_pbuf_reset(&t->rel);
        k = llm_mscan_push(&t->ms, T_AFTER_MARKS, c, &t->rel);
        if (t->rel.len > 0) {
            /* text after the calls: back to content (a marker here is text or a new group) */
            llm_pb_content(pb, t->rel.p, t->rel.len);
            t->st = T_CONTENT;
            if (k == 0) {
                llm_pb_content(pb, T_CLOSE_S, strlen(T_CLOSE_S));
            } else if (k == 1) {
                llm_pb_raw(pb, T_OPEN_S, strlen(T_OPEN_S));
                t->st = T_PRE;
            }
            return;
        }
        if (k == 0) {
            llm_pb_tail(pb, T_CLOSE_S, strlen(T_CLOSE_S));
            t->st = T_CONTENT;
        } else if (k == 1) {
            llm_pb_raw(pb, T_OPEN_S, strlen(T_OPEN_S));
            t->st = T_PRE;
        }
        return;
    }
}

static void
t_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((tcl_t *) p, text, len, t_put);
}

static void
t_finish(llm_parser *p)
{
    tcl_t     *t = (tcl_t *) p;
    llm_pbase *pb = &p->pb;

    llm_pbuf_reset(&t->rel);
    llm_mscan_drain(&t->ms, &t->rel);
    switch (t->st) {
    case T_CONTENT:
        llm_pb_content(pb, t->rel.p, t->rel.len);
        break;
    case T_PRE:
        llm_pb_release(pb);
        llm_pb_call_end(pb);
        break;
    case T_JSON:
        llm_jcall_finish(&t->jc);
        break;
    case T_AFTER:
        llm_pb_content(pb, t->rel.p, t->rel.len);
        break;
    }
    t->st = T_CONTENT;
}

static llm_parser *
t_create(const llm_parser_env *env)
{
    tcl_t *t = calloc(1, sizeof(*t));

    if (t == NULL) {
        return NULL;
    }
    t->base.def = &llm_parser_tool_call_list;
    llm_pb_init(&t->base.pb, env);
    return &t->base;
}

static void
t_destroy(llm_parser *p)
{
    tcl_t *t = (tcl_t *) p;

    if (t == NULL) {
        return;
    }
    llm_pbuf_free(&t->rel);
    llm_jcall_free(&t->jc);
    llm_pb_free(&p->pb);
    free(t);
}

static const char *const t_markers[] = { T_OPEN_S, T_CLOSE_S, NULL };

const llm_parser_def llm_parser_tool_call_list = {
    "tool_call_list", LLM_PARSER_TOOL, t_markers,
    t_create, t_feed, t_finish, t_destroy
};
