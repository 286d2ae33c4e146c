/*
 * qwen3_coder (Qwen3-Coder, Qwen3-Next and others):
 *   <tool_call>
 *   <function=get_weather>
 *   <parameter=city>
 *   Paris
 *   </parameter>
 *   </function>
 *   </tool_call>
 * Values are typed by the tool's JSON schema (llm_typed_value); one leading
 * and one trailing newline of a value are part of the layout, not the value.
 * A missing <tool_call>, </parameter> or </function> is tolerated.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

enum { Q_CONTENT = 0, Q_CALL, Q_FNAME, Q_PARAMS, Q_PNAME, Q_PVAL, Q_AFTER };

typedef struct {
    llm_parser base;
    int        st;
    llm_mscan  ms;
    llm_pbuf   rel, name;
    llm_xargs  xa;
} qwen3c_t;

static const char *const Q_M_CONTENT[] = { "<tool_call>", "<function=", NULL };
static const char *const Q_M_CALL[] = { "<function=", "</tool_call>", NULL };
static const char *const Q_M_PARAMS[] = {
    "<parameter=", "</function>", "</tool_call>", NULL };
static const char *const Q_M_PVAL[] = {
    "</parameter>", "<parameter=", "</function>", "</tool_call>", NULL };
static const char *const Q_M_AFTER[] = {
    "</tool_call>", "<tool_call>", "<function=", NULL };

static void
q_end_call(qwen3c_t *q)
{
    llm_pbase *pb = &q->base.pb;

    if (pb->mode == LLM_PB_IDLE) {        /* never named */
        llm_pb_release(pb);
    }
    llm_xargs_close(&q->xa);
    llm_pb_call_end(pb);
}

/* an identifier ended by '>' (function or parameter name) */
static int
q_ident(qwen3c_t *q, char c)
{
    llm_pb_raw(&q->base.pb, &c, 1);
    if (c == '>') {
        return 1;
    }
    if (c == '\n' || c == '<' || q->name.len > 256) {
        return -1;
    }
    llm_pbuf_addc(&q->name, c);
    return 0;
}

static void
q_put(qwen3c_t *q, char c)
{
    llm_pbase *pb = &q->base.pb;
    int        k;

    llm_pbuf_reset(&q->rel);
    switch (q->st) {
    case Q_CONTENT:
        k = llm_mscan_push(&q->ms, Q_M_CONTENT, c, &q->rel);
        llm_pb_content(pb, q->rel.p, q->rel.len);
        if (k >= 0) {
            llm_pb_raw(pb, Q_M_CONTENT[k], strlen(Q_M_CONTENT[k]));
            llm_xargs_init(&q->xa, pb, 1, 0);
            llm_pbuf_reset(&q->name);
            q->st = (k == 0) ? Q_CALL : Q_FNAME;
        }
        return;

    case Q_CALL:
        k = llm_mscan_push(&q->ms, Q_M_CALL, c, &q->rel);
        llm_pb_raw(pb, q->rel.p, q->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, Q_M_CALL[0], 10);
            q->st = Q_FNAME;
        } else if (k == 1) {
            llm_pb_raw(pb, Q_M_CALL[1], 12);
            q_end_call(q);
            q->st = Q_CONTENT;
        }
        return;

    case Q_FNAME:
        k = q_ident(q, c);
        if (k == 1) {
            llm_pb_call_name(pb, llm_pbuf_str(&q->name), q->name.len, 0);
            q->st = Q_PARAMS;
        } else if (k < 0) {
            q_end_call(q);               /* not a call: text */
            q->st = Q_CONTENT;
        }
        return;

    case Q_PARAMS:
        k = llm_mscan_push(&q->ms, Q_M_PARAMS, c, &q->rel);
        llm_pb_raw(pb, q->rel.p, q->rel.len);
        if (k >= 0) {
            llm_pb_raw(pb, Q_M_PARAMS[k], strlen(Q_M_PARAMS[k]));
        }
        if (k == 0) {
            llm_pbuf_reset(&q->name);
            q->st = Q_PNAME;
        } else if (k == 1) {
            q_end_call(q);
            q->st = Q_AFTER;
        } else if (k == 2) {
            q_end_call(q);
            q->st = Q_CONTENT;
        }
        return;

    case Q_PNAME:
        k = q_ident(q, c);
        if (k == 1) {
            llm_xargs_begin(&q->xa, llm_pbuf_str(&q->name), q->name.len);
            q->st = Q_PVAL;
        } else if (k < 0) {
            q->st = Q_PARAMS;            /* broken parameter tag: skip it */
        }
        return;

    case Q_PVAL:
        k = llm_mscan_push(&q->ms, Q_M_PVAL, c, &q->rel);
        llm_pb_raw(pb, q->rel.p, q->rel.len);
        llm_xargs_bytes(&q->xa, q->rel.p, q->rel.len);
        if (k < 0) {
            return;
        }
        llm_pb_raw(pb, Q_M_PVAL[k], strlen(Q_M_PVAL[k]));
        llm_xargs_end(&q->xa);
        if (k == 0) {
            q->st = Q_PARAMS;
        } else if (k == 1) {
            llm_pbuf_reset(&q->name);
            q->st = Q_PNAME;
        } else if (k == 2) {
            q_end_call(q);
            q->st = Q_AFTER;
        } else {
            q_end_call(q);
            q->st = Q_CONTENT;
        }
        return;

    case Q_AFTER:
        k = llm_mscan_push(&q->ms, Q_M_AFTER, c, &q->rel);
        llm_pb_tail(pb, q->rel.p, q->rel.len);
        if (k == 0) {
            llm_pb_tail(pb, Q_M_AFTER[0], 12);
            q->st = Q_CONTENT;
        } else if (k > 0) {
            llm_pb_raw(pb, Q_M_AFTER[k], strlen(Q_M_AFTER[k]));
            llm_xargs_init(&q->xa, pb, 1, 0);
            llm_pbuf_reset(&q->name);
            q->st = (k == 1) ? Q_CALL : Q_FNAME;
        }
        return;
    }
}

static void
q_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((qwen3c_t *) p, text, len, q_put);
}

static void
q_finish(llm_parser *p)
{
    qwen3c_t  *q = (qwen3c_t *) p;
    llm_pbase *pb = &p->pb;

    llm_pbuf_reset(&q->rel);
    llm_mscan_drain(&q->ms, &q->rel);
    switch (q->st) {
    case Q_CONTENT:
        llm_pb_content(pb, q->rel.p, q->rel.len);
        break;
    case Q_AFTER:
        llm_pb_tail(pb, q->rel.p, q->rel.len);
        break;
    case Q_PVAL:
        llm_pb_raw(pb, q->rel.p, q->rel.len);
        llm_xargs_bytes(&q->xa, q->rel.p, q->rel.len);
        q_end_call(q);
        break;
    default:
        llm_pb_raw(pb, q->rel.p, q->rel.len);
        q_end_call(q);
        break;
    }
    q->st = Q_CONTENT;
}

static llm_parser *
q_create(const llm_parser_env *env)
{
    qwen3c_t *q = calloc(1, sizeof(*q));

    if (q == NULL) {
        return NULL;
    }
    q->base.def = &llm_parser_qwen3_coder;
    llm_pb_init(&q->base.pb, env);
    llm_xargs_init(&q->xa, &q->base.pb, 1, 0);
    return &q->base;
}

static void
q_destroy(llm_parser *p)
{
    qwen3c_t *q = (qwen3c_t *) p;

    if (q == NULL) {
        return;
    }
    llm_pbuf_free(&q->rel);
    llm_pbuf_free(&q->name);
    llm_xargs_free(&q->xa);
    llm_pb_free(&p->pb);
    free(q);
}

static const char *const q_markers[] = {
    "<tool_call>", "</tool_call>", "<function=", "</function>",
    "<parameter=", "</parameter>", NULL };

const llm_parser_def llm_parser_qwen3_coder = {
    "qwen3_coder", LLM_PARSER_TOOL, q_markers,
    q_create, q_feed, q_finish, q_destroy
};
