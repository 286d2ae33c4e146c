/*
 * glm4_0414 (GLM-4-0414, GLM-Z1, GLM-4-9B-chat): the assistant turn of a call
 * is the function name on a line, then its arguments as JSON, as the family's
 * template renders a turn with "metadata":
 *   get_weather\n{"city": "Paris"}
 *   <|assistant|>get_weather\n{"city": "Paris"}<|assistant|>run_code\n{...}
 * A bare name line (output start, or after a call) must name one of the
 * request's tools, so a plain answer is held only while its first word is a
 * prefix of a tool name; after <|assistant|> any name is accepted when the
 * request gave no tools.  Anything that turns out not to be a call is
 * content, markers included.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

enum { G_CONTENT = 0, G_NAME, G_NL, G_ARGS };

#define G_NAME_MAX 256

typedef struct {
    llm_parser base;
    int        st;
    int        bare_ok;     /* only whitespace so far, or after a call */
    int        strict;      /* current name line is untagged */
    llm_mscan  ms;
    llm_pbuf   rel, name;
    llm_jv     v;
} glm0414_t;

static const char *const G_M_CONTENT[] = { "<|assistant|>", NULL };

static int
g_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'
           || c == ':';
}

/* 1 if name[0..n) begins some tool's name (untagged lines only). */
static int
g_tool_prefix(const llm_pbase *pb, const char *name, size_t n)
{
    size_t i;

    if (!json_is_array(pb->tools)) {
        return 0;
    }
    for (i = 0; i < json_array_size(pb->tools); i++) {
        const json_t *t = json_array_get(pb->tools, i);
        const json_t *fn = json_object_get(t, "function");
        const char   *s;

        s = json_string_value(json_object_get(json_is_object(fn) ? fn : t, "name"));
        if (s && strlen(s) >= n && memcmp(s, name, n) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The candidate is not a call: its held text becomes content. */
static void
g_reject(glm0414_t *g)
{
    llm_pbase *pb = &g->base.pb;

    llm_pb_release(pb);
    llm_pb_call_end(pb);
    g->bare_ok = 0;
    g->st = G_CONTENT;
}

static void
g_end_call(glm0414_t *g)
{
    llm_pbase *pb = &g->base.pb;

    llm_jv_close(&g->v);
    llm_pb_call_args(pb, g->v.out.p, g->v.out.len);
    llm_pbuf_reset(&g->v.out);
    if (pb->mode == LLM_PB_IDLE) {
        llm_pb_release(pb);
    }
    g->bare_ok = pb->mode != LLM_PB_REJECTED;
    llm_pb_call_end(pb);
    g->st = G_CONTENT;
}

static void
g_put(glm0414_t *g, char c)
{
    llm_pbase *pb = &g->base.pb;
    int        k, r;
    size_t     i;

again:
    switch (g->st) {
    case G_CONTENT:
        if (g->bare_ok && g->ms.hlen == 0 && g_name_char(c)
            && g_tool_prefix(pb, &c, 1))
        {
            llm_pbuf_reset(&g->name);
            g->strict = 1;
            g->st = G_NAME;
            goto again;
        }
        llm_pbuf_reset(&g->rel);
        k = llm_mscan_push(&g->ms, G_M_CONTENT, c, &g->rel);
        for (i = 0; i < g->rel.len; i++) {
            if (!llm_is_space(g->rel.p[i])) {
                g->bare_ok = 0;
            }
        }
        llm_pb_content(pb, g->rel.p, g->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, G_M_CONTENT[0], strlen(G_M_CONTENT[0]));
            llm_pbuf_reset(&g->name);
            g->strict = 0;
            g->st = G_NAME;
        }
        return;

    case G_NAME:
        if (c == '\n' && g->name.len > 0) {
            llm_pb_raw(pb, &c, 1);
            g->st = G_NL;
            return;
        }
        if (!g_name_char(c) || g->name.len >= G_NAME_MAX) {
            g_reject(g);
            goto again;
        }
        llm_pbuf_addc(&g->name, c);
        if (g->strict && !g_tool_prefix(pb, g->name.p, g->name.len)) {
            llm_pb_raw(pb, &c, 1);
            g_reject(g);
            return;
        }
        llm_pb_raw(pb, &c, 1);
        return;

    case G_NL:
        if (llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        if (c != '{' || (g->strict && !llm_pb_known_tool(pb, g->name.p))) {
            g_reject(g);
            goto again;
        }
        llm_pb_call_name(pb, g->name.p, g->name.len, g->strict);
        llm_jv_reset(&g->v);
        g->st = G_ARGS;
        goto again;

    case G_ARGS:
        r = llm_jv_put(&g->v, c);
        if (r == LLM_JV_MORE || r == LLM_JV_DONE) {
            llm_pb_raw(pb, &c, 1);
            llm_pb_call_args(pb, g->v.out.p, g->v.out.len);
            llm_pbuf_reset(&g->v.out);
            if (r == LLM_JV_DONE) {
                g_end_call(g);
            }
            return;
        }
        g_end_call(g);
        g->bare_ok = 0;
        goto again;
    }
}

static void
g_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((glm0414_t *) p, text, len, g_put);
}

static void
g_finish(llm_parser *p)
{
    glm0414_t *g = (glm0414_t *) p;
    llm_pbase *pb = &p->pb;

    llm_pbuf_reset(&g->rel);
    llm_mscan_drain(&g->ms, &g->rel);
    switch (g->st) {
    case G_CONTENT:
        llm_pb_content(pb, g->rel.p, g->rel.len);
        break;
    case G_NAME:
    case G_NL:
        g_reject(g);
        break;
    case G_ARGS:
        g_end_call(g);
        break;
    }
    g->st = G_CONTENT;
}

static llm_parser *
g_create(const llm_parser_env *env)
{
    glm0414_t *g = calloc(1, sizeof(*g));

    if (g == NULL) {
        return NULL;
    }
    g->base.def = &llm_parser_glm4_0414;
    llm_pb_init(&g->base.pb, env);
    llm_jv_init(&g->v);
    g->bare_ok = 1;
    return &g->base;
}

static void
g_destroy(llm_parser *p)
{
    glm0414_t *g = (glm0414_t *) p;

    if (g == NULL) {
        return;
    }
    llm_pbuf_free(&g->rel);
    llm_pbuf_free(&g->name);
    llm_jv_free(&g->v);
    llm_pb_free(&p->pb);
    free(g);
}

static const char *const g_markers[] = { "<|assistant|>", NULL };

const llm_parser_def llm_parser_glm4_0414 = {
    "glm4_0414", LLM_PARSER_TOOL, g_markers,
    g_create, g_feed, g_finish, g_destroy
};
