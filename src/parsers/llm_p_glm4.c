/*
 * glm4 (GLM-4.5 / 4.6 / 4.7):
 *   <tool_call>get_weather
 *   <arg_key>city</arg_key>
 *   <arg_value>Beijing</arg_value>
 *   </tool_call>
 * Values are typed by the tool's schema; without a schema a value that
 * parses as JSON is taken as JSON (llm_xargs).  A JSON object right after <tool_call>
 * (older GLM-4 releases) is read like hermes.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

enum { G_CONTENT = 0, G_NAME, G_JSON, G_ARGS, G_KEY, G_AFTERKEY, G_VAL,
       G_POST };

typedef struct {
    llm_parser base;
    int        st;
    llm_mscan  ms;
    llm_pbuf   rel, name;
    llm_xargs  xa;
    llm_jcall  jc;
} glm4_t;

static const char *const G_M_CONTENT[] = { "<tool_call>", NULL };
static const char *const G_M_ARGS[] = { "<arg_key>", "</tool_call>", NULL };
static const char *const G_M_KEY[] = { "</arg_key>", NULL };
static const char *const G_M_AFTERKEY[] = { "<arg_value>", "</tool_call>",
                                             NULL };
static const char *const G_M_VAL[] = { "</arg_value>", "</tool_call>", NULL };
static const char *const G_M_POST[] = { "</tool_call>", "<tool_call>", NULL };

static void
g_end_call(glm4_t *g)
{
    llm_pbase *pb = &g->base.pb;

    if (pb->mode == LLM_PB_IDLE) {
        llm_pb_release(pb);
    }
    llm_xargs_close(&g->xa);
    llm_pb_call_end(pb);
}

static void
g_named(glm4_t *g)
{
    const char *p = llm_pbuf_str(&g->name);
    size_t      n = g->name.len;

    while (n && llm_is_space(p[n - 1])) {
        n--;
    }
    if (n) {
        llm_pb_call_name(&g->base.pb, p, n, 0);
    }
}

static void
g_put(glm4_t *g, char c)
{
    llm_pbase *pb = &g->base.pb;
    int        k, r;

again:
    llm_pbuf_reset(&g->rel);
    switch (g->st) {
    case G_CONTENT:
        k = llm_mscan_push(&g->ms, G_M_CONTENT, c, &g->rel);
        llm_pb_content(pb, g->rel.p, g->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, G_M_CONTENT[0], 11);
            llm_xargs_init(&g->xa, pb, 0, 1);
            llm_pbuf_reset(&g->name);
            g->st = G_NAME;
        }
        return;

    case G_NAME:
        if (g->name.len == 0 && llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        if (g->name.len == 0 && c == '{') {
            llm_jcall_init(&g->jc, pb, 0);
            g->st = G_JSON;
            goto again;
        }
        if (c == '<') {                  /* <arg_key> or </tool_call> */
            g_named(g);
            g->st = G_ARGS;
            goto again;
        }
        llm_pb_raw(pb, &c, 1);
        if (c == '\n') {
            g_named(g);
            g->st = G_ARGS;
        } else if (g->name.len > 256) {
            g_end_call(g);
            g->st = G_POST;
        } else {
            llm_pbuf_addc(&g->name, c);
        }
        return;

    case G_JSON:
        r = llm_jcall_put(&g->jc, c);
        if (r == LLM_JC_MORE) {
            return;
        }
        g->st = G_POST;
        if (r == LLM_JC_DONE) {
            return;
        }
        llm_jcall_finish(&g->jc);
        goto again;

    case G_ARGS:
        k = llm_mscan_push(&g->ms, G_M_ARGS, c, &g->rel);
        llm_pb_raw(pb, g->rel.p, g->rel.len);
        if (k >= 0) {
            llm_pb_raw(pb, G_M_ARGS[k], strlen(G_M_ARGS[k]));
        }
        if (k == 0) {
            llm_pbuf_reset(&g->name);    /* reused for the key */
            g->st = G_KEY;
        } else if (k == 1) {
            g_end_call(g);
            g->st = G_CONTENT;
        }
        return;

    case G_KEY:
        k = llm_mscan_push(&g->ms, G_M_KEY, c, &g->rel);
        llm_pb_raw(pb, g->rel.p, g->rel.len);
        llm_pbuf_add(&g->name, g->rel.p, g->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, G_M_KEY[0], 10);
            g->st = G_AFTERKEY;
        }
        return;

    case G_AFTERKEY:
        k = llm_mscan_push(&g->ms, G_M_AFTERKEY, c, &g->rel);
        llm_pb_raw(pb, g->rel.p, g->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, G_M_AFTERKEY[0], 11);
            llm_xargs_begin(&g->xa, llm_pbuf_str(&g->name), g->name.len);
            g->st = G_VAL;
        } else if (k == 1) {
            llm_pb_raw(pb, G_M_AFTERKEY[1], 12);
            g_end_call(g);
            g->st = G_CONTENT;
        }
        return;

    case G_VAL:
        k = llm_mscan_push(&g->ms, G_M_VAL, c, &g->rel);
        llm_pb_raw(pb, g->rel.p, g->rel.len);
        llm_xargs_bytes(&g->xa, g->rel.p, g->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, G_M_VAL[0], 12);
            llm_xargs_end(&g->xa);
            g->st = G_ARGS;
        } else if (k == 1) {
            llm_pb_raw(pb, G_M_VAL[1], 12);
            g_end_call(g);
            g->st = G_CONTENT;
        }
        return;

    case G_POST:
        k = llm_mscan_push(&g->ms, G_M_POST, c, &g->rel);
        llm_pb_tail(pb, g->rel.p, g->rel.len);
        if (k == 0) {
            llm_pb_tail(pb, G_M_POST[0], 12);
            if (pb->mode != LLM_PB_IDLE) {
                g_end_call(g);
            }
            g->st = G_CONTENT;
        } else if (k == 1) {
            if (pb->mode != LLM_PB_IDLE) {
                g_end_call(g);
            }
            llm_pb_raw(pb, G_M_POST[1], 11);
            llm_xargs_init(&g->xa, pb, 0, 1);
            llm_pbuf_reset(&g->name);
            g->st = G_NAME;
        }
        return;
    }
}

static void
g_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((glm4_t *) p, text, len, g_put);
}

static void
g_finish(llm_parser *p)
{
    glm4_t    *g = (glm4_t *) p;
    llm_pbase *pb = &p->pb;

    llm_pbuf_reset(&g->rel);
    llm_mscan_drain(&g->ms, &g->rel);
    switch (g->st) {
    case G_CONTENT:
        llm_pb_content(pb, g->rel.p, g->rel.len);
        break;
    case G_JSON:
        llm_jcall_finish(&g->jc);
        break;
    case G_POST:
        llm_pb_tail(pb, g->rel.p, g->rel.len);
        if (pb->mode != LLM_PB_IDLE) {
            g_end_call(g);
        }
        break;
    case G_NAME:
        if (g->name.len && pb->mode == LLM_PB_IDLE) {
            /* "<tool_call>get_weather" then EOS: a call without arguments */
            g_named(g);
        }
        g_end_call(g);
        break;
    case G_VAL:
        llm_pb_raw(pb, g->rel.p, g->rel.len);
        llm_xargs_bytes(&g->xa, g->rel.p, g->rel.len);
        g_end_call(g);
        break;
    default:
        llm_pb_raw(pb, g->rel.p, g->rel.len);
        g->xa.in_val = 0;
        g_end_call(g);
        break;
    }
    g->st = G_CONTENT;
}

static llm_parser *
g_create(const llm_parser_env *env)
{
    glm4_t *g = calloc(1, sizeof(*g));

    if (g == NULL) {
        return NULL;
    }
    g->base.def = &llm_parser_glm4;
    llm_pb_init(&g->base.pb, env);
    llm_xargs_init(&g->xa, &g->base.pb, 0, 1);
    return &g->base;
}

static void
g_destroy(llm_parser *p)
{
    glm4_t *g = (glm4_t *) p;

    if (g == NULL) {
        return;
    }
    llm_pbuf_free(&g->rel);
    llm_pbuf_free(&g->name);
    llm_xargs_free(&g->xa);
    llm_jcall_free(&g->jc);
    llm_pb_free(&p->pb);
    free(g);
}

static const char *const g_markers[] = {
    "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
    "</arg_value>", NULL };

const llm_parser_def llm_parser_glm4 = {
    "glm4", LLM_PARSER_TOOL, g_markers,
    g_create, g_feed, g_finish, g_destroy
};
