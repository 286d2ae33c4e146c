/*
 * mistral:
 *   [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]     (v3 - v7)
 *   [TOOL_CALLS]f[ARGS]{...}[TOOL_CALLS]g[ARGS]{...}        (v11+)
 *   [TOOL_CALLS]f[CALL_ID]abc123def[ARGS]{...}
 * The model's call id is not used: ids are ours.  Also recovers a bare JSON
 * call list without [TOOL_CALLS] that names known tools.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

enum { M_CONTENT = 0, M_PRE, M_JSON, M_BARE, M_NAME, M_CALLID, M_ARGSPRE,
       M_ARGS };

typedef struct {
    llm_parser base;
    int        st;
    int        bare_ok;
    llm_mscan  ms;
    llm_pbuf   rel, name;
    llm_jcall  jc;
    llm_jv     v;
} mistral_t;

static const char *const M_M_CONTENT[] = { "[TOOL_CALLS]", NULL };

static int
m_ends_with(const llm_pbuf *b, const char *s)
{
    size_t n = strlen(s);

    return b->len >= n && memcmp(b->p + b->len - n, s, n) == 0;
}

static void
m_named(mistral_t *m)
{
    const char *p = llm_pbuf_str(&m->name);
    size_t      n = m->name.len;

    while (n && llm_is_space(*p)) {
        p++;
        n--;
    }
    while (n && llm_is_space(p[n - 1])) {
        n--;
    }
    llm_pb_call_name(&m->base.pb, p, n, 0);
}

static void
m_end_call(mistral_t *m)
{
    llm_pbase *pb = &m->base.pb;

    if (m->st == M_ARGS) {
        llm_jv_close(&m->v);
        llm_pb_call_args(pb, m->v.out.p, m->v.out.len);
        llm_pbuf_reset(&m->v.out);
    }
    if (pb->mode == LLM_PB_IDLE) {
        llm_pb_release(pb);
    }
    llm_pb_call_end(pb);
}

static void
m_put(mistral_t *m, char c)
{
    llm_pbase *pb = &m->base.pb;
    int        k, r;
    size_t     i;

again:
    switch (m->st) {
    case M_CONTENT:
        if (m->bare_ok && m->ms.hlen == 0 && c == '{') {
            llm_jcall_init(&m->jc, pb, 1);
            m->st = M_BARE;
            goto again;
        }
        llm_pbuf_reset(&m->rel);
        k = llm_mscan_push(&m->ms, M_M_CONTENT, c, &m->rel);
        for (i = 0; i < m->rel.len; i++) {
            if (m->bare_ok && (m->rel.p[i] == '[' || m->rel.p[i] == '{')) {
                /* '[' was held as a possible [TOOL_CALLS]: a bare list */
                char   rest[2 * LLM_MSCAN_HOLD + 2];
                size_t n = m->rel.len - i, j;

                /* the rest of what was released, then what is still held */
                memcpy(rest, m->rel.p + i, n);
                memcpy(rest + n, m->ms.hold, m->ms.hlen);
                n += m->ms.hlen;
                m->ms.hlen = 0;
                llm_pb_content(pb, m->rel.p, i);
                llm_jcall_init(&m->jc, pb, 1);
                m->st = M_BARE;
                for (j = 0; j < n; j++) {
                    m_put(m, rest[j]);
                }
                for (j = 0; k == 0 && M_M_CONTENT[0][j]; j++) {
                    m_put(m, M_M_CONTENT[0][j]);
                }
                return;
            }
            if (!llm_is_space(m->rel.p[i])) {
                m->bare_ok = 0;
            }
        }
        llm_pb_content(pb, m->rel.p, m->rel.len);
        if (k == 0) {
            llm_pb_raw(pb, M_M_CONTENT[0], 12);
            m->bare_ok = 0;
            m->st = M_PRE;
        }
        return;

    case M_PRE:
        if (llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        if (c == '[' || c == '{') {
            llm_jcall_init(&m->jc, pb, 0);
            m->st = M_JSON;
            goto again;
        }
        llm_pbuf_reset(&m->name);
        m->st = M_NAME;
        goto again;

    case M_JSON:
    case M_BARE:
        r = llm_jcall_put(&m->jc, c);
        if (r == LLM_JC_MORE) {
            return;
        }
        if (m->st == M_BARE && !m->jc.any_ok) {
            m->bare_ok = 0;
        }
        m->st = M_CONTENT;
        if (r == LLM_JC_DONE) {
            return;
        }
        llm_jcall_finish(&m->jc);
        goto again;

    case M_NAME:
        if (c == '{') {                  /* name{...} without [ARGS] */
            m_named(m);
            llm_jv_reset(&m->v);
            m->st = M_ARGS;
            goto again;
        }
        llm_pb_raw(pb, &c, 1);
        llm_pbuf_addc(&m->name, c);
        if (m_ends_with(&m->name, "[ARGS]")) {
            m->name.len -= 6;
            m_named(m);
            m->st = M_ARGSPRE;
        } else if (m_ends_with(&m->name, "[CALL_ID]")) {
            m->name.len -= 9;
            m_named(m);
            llm_pbuf_reset(&m->name);
            m->st = M_CALLID;
        } else if (c == '\n' || m->name.len > 300) {
            m_end_call(m);               /* not a call: text */
            m->st = M_CONTENT;
        }
        return;

    case M_CALLID:
        llm_pb_raw(pb, &c, 1);
        llm_pbuf_addc(&m->name, c);
        if (m_ends_with(&m->name, "[ARGS]")) {
            m->st = M_ARGSPRE;
        } else if (m->name.len > 100) {
            m_end_call(m);
            m->st = M_CONTENT;
        }
        return;

    case M_ARGSPRE:
        if (llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        if (c == '{') {
            llm_jv_reset(&m->v);
            m->st = M_ARGS;
            goto again;
        }
        m_end_call(m);
        m->st = M_CONTENT;
        goto again;

    case M_ARGS:
        r = llm_jv_put(&m->v, c);
        if (r == LLM_JV_MORE || r == LLM_JV_DONE) {
            llm_pb_raw(pb, &c, 1);
            llm_pb_call_args(pb, m->v.out.p, m->v.out.len);
            llm_pbuf_reset(&m->v.out);
            if (r == LLM_JV_DONE) {
                m->st = M_CONTENT;
                m_end_call(m);
            }
            return;
        }
        m_end_call(m);
        m->st = M_CONTENT;
        goto again;
    }
}

static void
m_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((mistral_t *) p, text, len, m_put);
}

static void
m_finish(llm_parser *p)
{
    mistral_t *m = (mistral_t *) p;
    llm_pbase *pb = &p->pb;

    llm_pbuf_reset(&m->rel);
    llm_mscan_drain(&m->ms, &m->rel);
    switch (m->st) {
    case M_CONTENT:
        llm_pb_content(pb, m->rel.p, m->rel.len);
        break;
    case M_JSON:
    case M_BARE:
        llm_jcall_finish(&m->jc);
        break;
    default:
        m_end_call(m);
        break;
    }
    m->st = M_CONTENT;
}

static llm_parser *
m_create(const llm_parser_env *env)
{
    mistral_t *m = calloc(1, sizeof(*m));

    if (m == NULL) {
        return NULL;
    }
    m->base.def = &llm_parser_mistral;
    llm_pb_init(&m->base.pb, env);
    llm_jv_init(&m->v);
    m->bare_ok = 1;
    return &m->base;
}

static void
m_destroy(llm_parser *p)
{
    mistral_t *m = (mistral_t *) p;

    if (m == NULL) {
        return;
    }
    llm_pbuf_free(&m->rel);
    llm_pbuf_free(&m->name);
    llm_jcall_free(&m->jc);
    llm_jv_free(&m->v);
    llm_pb_free(&p->pb);
    free(m);
}

static const char *const m_markers[] = {
    "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", NULL };

const llm_parser_def llm_parser_mistral = {
    "mistral", LLM_PARSER_TOOL, m_markers,
    m_create, m_feed, m_finish, m_destroy
};
