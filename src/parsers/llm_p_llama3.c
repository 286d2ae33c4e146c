/*
 * llama3_json (Llama 3.1 / 3.2 / 3.3 JSON tool calling):
 *   {"name": "f", "parameters": {...}}
 *   <|python_tag|>{"name": "f", "parameters": {...}}
 *   {"name": "f", "parameters": {...}}; {"name": "g", "parameters": {...}}
 * A bare object must name one of the request's tools; after <|python_tag|>
 * any name is accepted when the request gave no tools.  Text after
 * <|python_tag|> that is not JSON (code for the built-in interpreter) stays
 * content.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>

enum { L_CONTENT = 0, L_TAG, L_JSON, L_SEP };

typedef struct {
    llm_parser base;
    int        st;
    int        bare_ok;     /* only whitespace so far, or after a call */
    int        strict;      /* strictness of the current call sequence */
    llm_mscan  ms;
    llm_pbuf   rel;
    llm_jcall  jc;
} llama3_t;

static const char *const L_M_CONTENT[] = { "<|python_tag|>", NULL };

static void
l_put(llama3_t *l, char c)
{
    llm_pbase *pb = &l->base.pb;
    int        k, r;
    size_t     i;

again:
    switch (l->st) {
    case L_CONTENT:
        if (l->bare_ok && l->ms.hlen == 0 && c == '{') {
            l->strict = 1;
            llm_jcall_init(&l->jc, pb, 1);
            l->st = L_JSON;
            goto again;
        }
        llm_pbuf_reset(&l->rel);
        k = llm_mscan_push(&l->ms, L_M_CONTENT, c, &l->rel);
        for (i = 0; i < l->rel.len; i++) {
            if (!llm_is_space(l->rel.p[i])) {
                l->bare_ok = 0;
            }
        }
        llm_pb_content(pb, l->rel.p, l->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, L_M_CONTENT[0], 14);
            l->st = L_TAG;
        }
        return;

    case L_TAG:
        if (llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        if (c == '{' || c == '[') {
            l->strict = 0;
            llm_jcall_init(&l->jc, pb, 0);
            l->st = L_JSON;
            goto again;
        }
        llm_pb_release(pb);              /* code, not a JSON call */
        llm_pb_call_end(pb);
        l->bare_ok = 0;
        l->st = L_CONTENT;
        goto again;

    case L_JSON:
        r = llm_jcall_put(&l->jc, c);
        if (r == LLM_JC_MORE) {
            return;
        }
        if (r == LLM_JC_DONE) {
            l->st = l->jc.any_ok ? L_SEP : L_CONTENT;
            l->bare_ok = l->jc.any_ok;
            return;
        }
        llm_jcall_finish(&l->jc);
        l->bare_ok = 0;
        l->st = L_CONTENT;
        goto again;

    case L_SEP:                          /* between calls: ';' or space */
        if (llm_is_space(c) || c == ';') {
            return;
        }
        if (c == '{') {
            llm_jcall_init(&l->jc, pb, l->strict);
            l->st = L_JSON;
            goto again;
        }
        l->st = L_CONTENT;
        goto again;
    }
}

static void
l_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((llama3_t *) p, text, len, l_put);
}

static void
l_finish(llm_parser *p)
{
    llama3_t  *l = (llama3_t *) p;
    llm_pbase *pb = &p->pb;

    llm_pbuf_reset(&l->rel);
    llm_mscan_drain(&l->ms, &l->rel);
    switch (l->st) {
    case L_CONTENT:
        llm_pb_content(pb, l->rel.p, l->rel.len);
        break;
    case L_TAG:
        llm_pb_release(pb);
        llm_pb_call_end(pb);
        break;
    case L_JSON:
        llm_jcall_finish(&l->jc);
        break;
    default:
        break;
    }
    l->st = L_CONTENT;
}

static llm_parser *
l_create(const llm_parser_env *env)
{
    llama3_t *l = calloc(1, sizeof(*l));

    if (l == NULL) {
        return NULL;
    }
    l->base.def = &llm_parser_llama3_json;
    llm_pb_init(&l->base.pb, env);
    l->bare_ok = 1;
    return &l->base;
}

static void
l_destroy(llm_parser *p)
{
    llama3_t *l = (llama3_t *) p;

    if (l == NULL) {
        return;
    }
    llm_pbuf_free(&l->rel);
    llm_jcall_free(&l->jc);
    llm_pb_free(&p->pb);
    free(l);
}

static const char *const l_markers[] = { "<|python_tag|>", NULL };

const llm_parser_def llm_parser_llama3_json = {
    "llama3_json", LLM_PARSER_TOOL, l_markers,
    l_create, l_feed, l_finish, l_destroy
};
