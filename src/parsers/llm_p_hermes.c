/*
 * hermes: <tool_call>{"name": "f", "arguments": {...}}</tool_call>
 * (Hermes, Qwen2.5, Qwen3 and the prompt injected for templates without
 * tools).  Also recovers an output that is only a bare JSON call (or a list
 * of them) naming a known tool, a missing </tool_call>, and a call cut off
 * at EOS.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>

enum { H_CONTENT = 0, H_PRE, H_JSON, H_POST, H_BARE };

typedef struct {
    llm_parser base;
    int        st;
    int        bare_ok;    /* only whitespace so far: a bare JSON call may come */
    llm_mscan  ms;
    llm_pbuf   rel;
    llm_jcall  jc;
} hermes_t;

static const char *const H_OPEN[] = { "<tool_call>", NULL };
static const char *const H_CLOSE[] = { "</tool_call>", "<tool_call>", NULL };

static void
h_content(hermes_t *h)
{
    size_t i;

    for (i = 0; i < h->rel.len; i++) {
        if (!llm_is_space(h->rel.p[i])) {
            h->bare_ok = 0;
        }
    }
    llm_pb_content(&h->base.pb, h->rel.p, h->rel.len);
}

static void
h_put(hermes_t *h, char c)
{
    llm_pbase *pb = &h->base.pb;
    int        k, r;

again:
    switch (h->st) {
    case H_CONTENT:
        if (h->bare_ok && h->ms.hlen == 0 && (c == '{' || c == '[')) {
            llm_jcall_init(&h->jc, pb, 1);
            h->st = H_BARE;
            goto again;
        }
        llm_pbuf_reset(&h->rel);
        k = llm_mscan_push(&h->ms, H_OPEN, c, &h->rel);
        h_content(h);
        if (k == 0) {
            llm_pb_raw(pb, H_OPEN[0], 11);
            h->bare_ok = 0;
            h->st = H_PRE;
        }
        return;

    case H_PRE:
        if (llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        if (c == '{' || c == '[') {
            llm_jcall_init(&h->jc, pb, 0);
            h->st = H_JSON;
            goto again;
        }
        llm_pb_release(pb);              /* not JSON: the whole thing is text */
        h->st = H_POST;
        goto again;

    case H_JSON:
    case H_BARE:
        r = llm_jcall_put(&h->jc, c);
        if (r == LLM_JC_MORE) {
            return;
        }
        if (h->st == H_BARE && !h->jc.any_ok) {
            h->bare_ok = 0;
        }
        if (r == LLM_JC_DONE) {
            h->st = (h->st == H_JSON) ? H_POST : H_CONTENT;
            return;
        }
        llm_jcall_finish(&h->jc);
        h->st = (h->st == H_JSON) ? H_POST : H_CONTENT;
        goto again;

    case H_POST:
        llm_pbuf_reset(&h->rel);
        k = llm_mscan_push(&h->ms, H_CLOSE, c, &h->rel);
        llm_pb_tail(pb, h->rel.p, h->rel.len);
        if (k == 0) {
            llm_pb_tail(pb, H_CLOSE[0], 12);
            if (pb->mode != LLM_PB_IDLE) {
                llm_pb_call_end(pb);
            }
            h->st = H_CONTENT;
        } else if (k == 1) {             /* next call without a closing tag */
            if (pb->mode != LLM_PB_IDLE) {
                llm_pb_call_end(pb);
            }
            llm_pb_raw(pb, H_OPEN[0], 11);
            h->st = H_PRE;
        }
        return;
    }
}

static void
h_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((hermes_t *) p, text, len, h_put);
}

static void
h_finish(llm_parser *p)
{
    hermes_t  *h = (hermes_t *) p;
    llm_pbase *pb = &p->pb;

    llm_pbuf_reset(&h->rel);
    llm_mscan_drain(&h->ms, &h->rel);
    switch (h->st) {
    case H_CONTENT:
        h_content(h);
        break;
    case H_PRE:
        llm_pb_release(pb);
        llm_pb_call_end(pb);
        break;
    case H_JSON:
    case H_BARE:
        llm_jcall_finish(&h->jc);
        break;
    case H_POST:
        llm_pb_tail(pb, h->rel.p, h->rel.len);
        if (pb->mode != LLM_PB_IDLE) {
            llm_pb_call_end(pb);
        }
        break;
    }
    h->st = H_CONTENT;
}

static llm_parser *
h_create(const llm_parser_env *env)
{
    hermes_t *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        return NULL;
    }
    h->base.def = &llm_parser_hermes;
    llm_pb_init(&h->base.pb, env);
    h->bare_ok = 1;
    return &h->base;
}

static void
h_destroy(llm_parser *p)
{
    hermes_t *h = (hermes_t *) p;

    if (h == NULL) {
        return;
    }
    llm_pbuf_free(&h->rel);
    llm_jcall_free(&h->jc);
    llm_pb_free(&p->pb);
    free(h);
}

static const char *const h_markers[] = { "<tool_call>", "</tool_call>", NULL };

const llm_parser_def llm_parser_hermes = {
    "hermes", LLM_PARSER_TOOL, h_markers,
    h_create, h_feed, h_finish, h_destroy
};
