/*
 * hermes: <tool_call>{"name": "f", "arguments": {...}}</tool_call>
 * (Hermes, Qwen2.5, Qwen3 and the prompt injected for templates without
 * tools).  Also recovers an output that is only a bare JSON call (or a list
 * of them, or one in a ```json fence) naming a known tool, a fence inside
 * the tags, a missing </tool_call>, and a call cut off at EOS.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

enum { H_CONTENT = 0, H_PRE, H_JSON, H_POST, H_BARE, H_FENCE, H_FENCE_BODY,
       H_FENCE_END };

typedef struct {
    llm_parser base;
    int        st;
    int        bare_ok;    /* only whitespace so far: a bare JSON call may come */
    int        fenced;     /* the bare call is inside a ``` fence */
    int        in_tags;    /* the fence is inside <tool_call> */
    llm_mscan  ms;
    llm_pbuf   rel, fence;
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

static void h_put(hermes_t *h, char c);

/* the fence opening held so far was not one: give it back as text */
static void
h_unfence(hermes_t *h)
{
    char   buf[32];
    size_t i, n = h->fence.len;

    memcpy(buf, h->fence.p, n);
    llm_pbuf_reset(&h->fence);
    h->bare_ok = 0;
    h->st = H_CONTENT;
    for (i = 0; i < n; i++) {
        h_put(h, buf[i]);
    }
}

/* "```" or "```json" line */
static int
h_fence_line(const llm_pbuf *f)
{
    const char *p = llm_pbuf_str(f);

    if (strncmp(p, "```", 3) != 0) {
        return 0;
    }
    p += 3;
    if (strncmp(p, "json", 4) == 0) {
        p += 4;
    }
    while (*p == ' ' || *p == '\r') {
        p++;
    }
    return strcmp(p, "\n") == 0;
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
            h->fenced = 0;
            h->st = H_BARE;
            goto again;
        }
        if (h->bare_ok && h->ms.hlen == 0 && c == '`') {
            llm_pbuf_reset(&h->fence);
            h->in_tags = 0;
            h->st = H_FENCE;
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
        if (c == '`' && !h->in_tags) {   /* <tool_call>```json ... */
            llm_pbuf_reset(&h->fence);
            h->in_tags = 1;
            h->st = H_FENCE;
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
            h->st = (h->st == H_JSON) ? H_POST
                    : h->fenced ? H_FENCE_END : H_CONTENT;
            return;
        }
        llm_jcall_finish(&h->jc);
        h->st = (h->st == H_JSON) ? H_POST
                : h->fenced ? H_FENCE_END : H_CONTENT;
        goto again;

    case H_FENCE:                        /* "```json\n" before a call? */
        llm_pbuf_addc(&h->fence, c);
        if ((c == '\n' && !h_fence_line(&h->fence)) || h->fence.len > 12
            || (h->fence.len <= 3 && c != '`'))
        {
            if (h->in_tags) {
                h->in_tags = 0;
                h->st = H_PRE;           /* H_PRE releases it as text */
                goto again;
            }
            h_unfence(h);
            return;
        }
        if (h->in_tags) {
            llm_pb_raw(pb, &c, 1);
        }
        if (c == '\n') {
            h->st = H_FENCE_BODY;
        }
        return;

    case H_FENCE_BODY:
        if (llm_is_space(c)) {
            llm_pbuf_addc(&h->fence, c);
            if (h->in_tags) {
                llm_pb_raw(pb, &c, 1);
            }
            return;
        }
        if (h->in_tags) {
            h->st = H_PRE;
            goto again;
        }
        if (c == '{' || c == '[') {
            llm_pb_raw(pb, h->fence.p, h->fence.len);
            llm_pbuf_reset(&h->fence);
            llm_jcall_init(&h->jc, pb, 1);
            h->fenced = 1;
            h->st = H_BARE;
            goto again;
        }
        h_unfence(h);
        goto again;

    case H_FENCE_END:                    /* closing ``` of a fenced call */
        if (c == '`' || llm_is_space(c)) {
            llm_pb_tail(pb, &c, 1);
            return;
        }
        h->st = H_CONTENT;
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
    case H_FENCE:
    case H_FENCE_BODY:
        if (h->in_tags) {
            llm_pb_release(pb);
            llm_pb_call_end(pb);
        } else {
            llm_pb_content(pb, h->fence.p, h->fence.len);
        }
        break;
    case H_FENCE_END:
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
    llm_pbuf_free(&h->fence);
    llm_jcall_free(&h->jc);
    llm_pb_free(&p->pb);
    free(h);
}

static const char *const h_markers[] = { "<tool_call>", "</tool_call>", NULL };

const llm_parser_def llm_parser_hermes = {
    "hermes", LLM_PARSER_TOOL, h_markers,
    h_create, h_feed, h_finish, h_destroy
};
