/*
 * harmony (gpt-oss).  The output is a series of messages:
 *   <|channel|>analysis<|message|>...<|end|>                  reasoning
 *   <|start|>assistant<|channel|>commentary to=functions.f
 *       <|constrain|>json<|message|>{...}<|call|>             tool call
 *   <|start|>assistant<|channel|>final<|message|>...<|return|> content
 * The recipient may also stand before the channel ("assistant to=functions.f
 * <|channel|>commentary json").  Commentary without a recipient (a preamble)
 * is content.  This parser is both the tool and the reasoning parser.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

enum { X_FIRST = 0, X_HEADER, X_TEXT, X_CALLPRE, X_ARGS, X_CALLPOST,
       X_BETWEEN };

typedef struct {
    llm_parser base;
    int        st;
    int        reasoning;   /* X_TEXT: analysis channel */
    llm_mscan  ms;
    llm_pbuf   rel, hdr;
    llm_jv     v;
} harmony_t;

#define HM_CHANNEL "<|channel|>"

static const char *const X_M_HEADER[] = { "<|message|>", NULL };
static const char *const X_M_BODY[] = {
    "<|end|>", "<|call|>", "<|return|>", "<|start|>", HM_CHANNEL, NULL };
static const char *const X_M_BETWEEN[] = { "<|start|>", HM_CHANNEL, NULL };

/* copy the word after `key` in the header into out (empty if absent) */
static void
x_word_after(const char *hdr, const char *key, char *out, size_t outlen)
{
    const char *p = strstr(hdr, key);
    size_t      n = 0;

    out[0] = '\0';
    if (p == NULL) {
        return;
    }
    p += strlen(key);
    while (*p == ' ') {
        p++;
    }
    while (p[n] && !llm_is_space(p[n]) && p[n] != '<' && n + 1 < outlen) {
        n++;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

static void
x_header_done(harmony_t *x)
{
    char        channel[64], to[300];
    const char *name;
    const char *hdr = llm_pbuf_str(&x->hdr);

    x_word_after(hdr, HM_CHANNEL, channel, sizeof(channel));
    x_word_after(hdr, "to=", to, sizeof(to));
    llm_pbuf_reset(&x->hdr);
    if (to[0]) {
        name = strncmp(to, "functions.", 10) == 0 ? to + 10 : to;
        llm_pb_call_name(&x->base.pb, name, strlen(name), 0);
        if (x->base.pb.mode == LLM_PB_IDLE) {
            llm_pb_release(&x->base.pb);
        }
        llm_jv_reset(&x->v);
        x->st = X_CALLPRE;
        return;
    }
    x->reasoning = strcmp(channel, "analysis") == 0;
    x->st = X_TEXT;
}

static void
x_text(harmony_t *x, const char *s, size_t n)
{
    if (x->reasoning) {
        llm_pb_reasoning(&x->base.pb, s, n);
    } else {
        llm_pb_content(&x->base.pb, s, n);
    }
}

static void
x_end_call(harmony_t *x)
{
    llm_pbase *pb = &x->base.pb;

    if (x->st == X_ARGS) {
        llm_jv_close(&x->v);
    }
    llm_pb_call_args(pb, x->v.out.p, x->v.out.len);
    llm_pbuf_reset(&x->v.out);
    llm_pb_call_end(pb);
}

/* a body marker k of X_M_BODY ends the current message */
static void
x_body_marker(harmony_t *x, int k)
{
    llm_pbuf_reset(&x->hdr);
    if (k <= 2) {
        x->st = X_BETWEEN;
    } else {
        if (k == 4) {
            llm_pbuf_adds(&x->hdr, HM_CHANNEL);
        }
        x->st = X_HEADER;
    }
}

static void
x_put(harmony_t *x, char c)
{
    llm_pbase *pb = &x->base.pb;
    int        k, r;

again:
    llm_pbuf_reset(&x->rel);
    switch (x->st) {
    case X_FIRST:
        /* output normally opens with a header; plain text is content */
        x->reasoning = 0;
        x->st = (c == '<') ? X_HEADER : X_TEXT;
        goto again;

    case X_HEADER:
        k = llm_mscan_push(&x->ms, X_M_HEADER, c, &x->rel);
        llm_pbuf_add(&x->hdr, x->rel.p, x->rel.len);
        if (k == 0) {
            x_header_done(x);
        } else if (memchr(x->rel.p ? x->rel.p : "", '\n', x->rel.len)
                   || x->hdr.len > 512)
        {
            /* not a header after all */
            x->reasoning = 0;
            llm_pb_content(pb, x->hdr.p, x->hdr.len);
            llm_pbuf_reset(&x->hdr);
            x->st = X_TEXT;
        }
        return;

    case X_TEXT:
        k = llm_mscan_push(&x->ms, X_M_BODY, c, &x->rel);
        x_text(x, x->rel.p, x->rel.len);
        if (k >= 0) {
            x_body_marker(x, k);
        }
        return;

    case X_CALLPRE:
        if (llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        x->st = (c == '{') ? X_ARGS : X_CALLPOST;
        goto again;

    case X_ARGS:
        r = llm_jv_put(&x->v, c);
        if (r == LLM_JV_MORE || r == LLM_JV_DONE) {
            llm_pb_raw(pb, &c, 1);
            llm_pb_call_args(pb, x->v.out.p, x->v.out.len);
            llm_pbuf_reset(&x->v.out);
            if (r == LLM_JV_DONE) {
                x->st = X_CALLPOST;
            }
            return;
        }
        llm_jv_close(&x->v);
        llm_pb_call_args(pb, x->v.out.p, x->v.out.len);
        llm_pbuf_reset(&x->v.out);
        x->st = X_CALLPOST;
        goto again;

    case X_CALLPOST:
        k = llm_mscan_push(&x->ms, X_M_BODY, c, &x->rel);
        llm_pb_raw(pb, x->rel.p, x->rel.len);
        if (k >= 0) {
            x_end_call(x);
            x_body_marker(x, k);
        }
        return;

    case X_BETWEEN:
        k = llm_mscan_push(&x->ms, X_M_BETWEEN, c, &x->rel);
        x->reasoning = 0;
        x_text(x, x->rel.p, x->rel.len);
        if (k >= 0) {
            x_body_marker(x, k + 3);
        }
        return;
    }
}

static void
x_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((harmony_t *) p, text, len, x_put);
}

static void
x_finish(llm_parser *p)
{
    harmony_t *x = (harmony_t *) p;

    llm_pbuf_reset(&x->rel);
    llm_mscan_drain(&x->ms, &x->rel);
    switch (x->st) {
    case X_TEXT:
    case X_BETWEEN:
        x_text(x, x->rel.p, x->rel.len);
        break;
    case X_CALLPRE:
    case X_ARGS:
    case X_CALLPOST:
        llm_pb_raw(&p->pb, x->rel.p, x->rel.len);
        x_end_call(x);
        break;
    default:                             /* a cut-off header: markup */
        break;
    }
    llm_pbuf_reset(&x->hdr);
    x->st = X_BETWEEN;
}

static llm_parser *
x_create(const llm_parser_env *env)
{
    harmony_t *x = calloc(1, sizeof(*x));

    if (x == NULL) {
        return NULL;
    }
    x->base.def = &llm_parser_harmony;
    llm_pb_init(&x->base.pb, env);
    llm_jv_init(&x->v);
    return &x->base;
}

static void
x_destroy(llm_parser *p)
{
    harmony_t *x = (harmony_t *) p;

    if (x == NULL) {
        return;
    }
    llm_pbuf_free(&x->rel);
    llm_pbuf_free(&x->hdr);
    llm_jv_free(&x->v);
    llm_pb_free(&p->pb);
    free(x);
}

static const char *const x_markers[] = {
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>",
    "<|call|>", "<|return|>", NULL };

const llm_parser_def llm_parser_harmony = {
    "harmony", LLM_PARSER_TOOL | LLM_PARSER_REASONING, x_markers,
    x_create, x_feed, x_finish, x_destroy
};
