/*
 * deepseek_v3 (DeepSeek V3, R1, V3.1):
 *   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
 *   ```json
 *   {...}
 *   ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
 * and the V3.1 form <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

#define DS_CALLS_BEGIN "<｜tool▁calls▁begin｜>"
#define DS_CALLS_END   "<｜tool▁calls▁end｜>"
#define DS_CALL_BEGIN  "<｜tool▁call▁begin｜>"
#define DS_CALL_END    "<｜tool▁call▁end｜>"
#define DS_SEP         "<｜tool▁sep｜>"

enum { D_CONTENT = 0, D_GROUP, D_TYPE, D_NAME, D_ARGSPRE, D_FENCE, D_ARGS,
       D_POST };

typedef struct {
    llm_parser base;
    int        st;
    int        any_ok;      /* a call of this group was accepted */
    llm_mscan  ms;
    llm_pbuf   rel, name;
    llm_jv     v;
} deepseek_t;

static const char *const D_M_CONTENT[] = { DS_CALLS_BEGIN, DS_CALL_BEGIN,
                                           NULL };
static const char *const D_M_GROUP[] = { DS_CALL_BEGIN, DS_CALLS_END, NULL };
static const char *const D_M_TYPE[] = { DS_SEP, DS_CALL_END, NULL };
static const char *const D_M_POST[] = { DS_CALL_END, DS_CALLS_END,
                                        DS_CALL_BEGIN, NULL };

static void
d_raw(deepseek_t *d, const char *s)
{
    llm_pb_raw(&d->base.pb, s, strlen(s));
}

static void
d_named(deepseek_t *d)
{
    llm_pbase  *pb = &d->base.pb;
    const char *p = llm_pbuf_str(&d->name);
    size_t      n = d->name.len;
    llm_pb_mode m;

    while (n && llm_is_space(*p)) {
        p++;
        n--;
    }
    while (n && llm_is_space(p[n - 1])) {
        n--;
    }
    m = llm_pb_call_name(pb, p, n, 0);
    if (m == LLM_PB_ACTIVE || m == LLM_PB_DROPPED) {
        d->any_ok = 1;
    }
    llm_jv_reset(&d->v);
}

static void
d_end_call(deepseek_t *d)
{
    llm_pbase *pb = &d->base.pb;

    if (d->st == D_ARGS) {
        llm_jv_close(&d->v);
    }
    if (pb->mode == LLM_PB_ACTIVE && d->v.out.len) {
        llm_pb_call_args(pb, d->v.out.p, d->v.out.len);
    }
    llm_pbuf_reset(&d->v.out);
    if (pb->mode == LLM_PB_IDLE) {
        llm_pb_release(pb);
    }
    llm_pb_call_end(pb);
}

/* leaving the group: its markup goes with accepted calls or is text */
static void
d_group_end(deepseek_t *d)
{
    if (d->any_ok) {
        llm_pb_discard(&d->base.pb);
    } else {
        llm_pb_release(&d->base.pb);
    }
    llm_pb_call_end(&d->base.pb);
}

static int
d_has_text(const llm_pbuf *b)
{
    size_t i;

    for (i = 0; i < b->len; i++) {
        if (!llm_is_space(b->p[i])) {
            return 1;
        }
    }
    return 0;
}

static void
d_put(deepseek_t *d, char c)
{
    llm_pbase *pb = &d->base.pb;
    int        k, r;

again:
    llm_pbuf_reset(&d->rel);
    switch (d->st) {
    case D_CONTENT:
        k = llm_mscan_push(&d->ms, D_M_CONTENT, c, &d->rel);
        llm_pb_content(pb, d->rel.p, d->rel.len);
        if (k >= 0) {
            d_raw(d, D_M_CONTENT[k]);
            d->any_ok = 0;
            llm_pbuf_reset(&d->name);
            d->st = (k == 0) ? D_GROUP : D_TYPE;
        }
        return;

    case D_GROUP:
        k = llm_mscan_push(&d->ms, D_M_GROUP, c, &d->rel);
        if (d_has_text(&d->rel)) {
            /* text after the calls without <｜tool▁calls▁end｜> */
            d_group_end(d);
            llm_pb_content(pb, d->rel.p, d->rel.len);
            d->st = D_CONTENT;
            if (k == 0) {
                d_raw(d, DS_CALL_BEGIN);
                d->any_ok = 0;
                llm_pbuf_reset(&d->name);
                d->st = D_TYPE;
            }
            return;
        }
        llm_pb_raw(pb, d->rel.p, d->rel.len);
        if (k == 0) {
            d_raw(d, DS_CALL_BEGIN);
            llm_pbuf_reset(&d->name);
            d->st = D_TYPE;
        } else if (k == 1) {
            d_raw(d, DS_CALLS_END);
            d_group_end(d);
            d->st = D_CONTENT;
        }
        return;

    case D_TYPE:
        k = llm_mscan_push(&d->ms, D_M_TYPE, c, &d->rel);
        llm_pb_raw(pb, d->rel.p, d->rel.len);
        if (d->name.len < 300) {
            llm_pbuf_add(&d->name, d->rel.p, d->rel.len);
        }
        if (k == 0) {
            d_raw(d, DS_SEP);
            if (strcmp(llm_pbuf_str(&d->name), "function") == 0) {
                llm_pbuf_reset(&d->name);
                d->st = D_NAME;
            } else {
                d_named(d);
                d->st = D_ARGSPRE;
            }
        } else if (k == 1) {
            d_raw(d, DS_CALL_END);
            d_end_call(d);
            d->st = D_GROUP;
        }
        return;

    case D_NAME:
        if (c == '\n' || c == '`' || c == '{') {
            d_named(d);
            d->st = D_ARGSPRE;
            goto again;
        }
        llm_pb_raw(pb, &c, 1);
        if (d->name.len < 300) {
            llm_pbuf_addc(&d->name, c);
        }
        return;

    case D_ARGSPRE:
        if (llm_is_space(c)) {
            llm_pb_raw(pb, &c, 1);
            return;
        }
        if (c == '`') {
            llm_pb_raw(pb, &c, 1);
            d->st = D_FENCE;
            return;
        }
        if (c == '{') {
            d->st = D_ARGS;
            goto again;
        }
        d->st = D_POST;                  /* no JSON arguments */
        goto again;

    case D_FENCE:                        /* ```json line */
        llm_pb_raw(pb, &c, 1);
        if (c == '\n') {
            d->st = D_ARGSPRE;
        }
        return;

    case D_ARGS:
        r = llm_jv_put(&d->v, c);
        if (r == LLM_JV_MORE || r == LLM_JV_DONE) {
            llm_pb_raw(pb, &c, 1);
            if (pb->mode == LLM_PB_ACTIVE && d->v.out.len) {
                llm_pb_call_args(pb, d->v.out.p, d->v.out.len);
            }
            llm_pbuf_reset(&d->v.out);
            if (r == LLM_JV_DONE) {
                d->st = D_POST;
            }
            return;
        }
        llm_jv_close(&d->v);
        d->st = D_POST;
        goto again;

    case D_POST:
        k = llm_mscan_push(&d->ms, D_M_POST, c, &d->rel);
        llm_pb_raw(pb, d->rel.p, d->rel.len);
        if (k < 0) {
            return;
        }
        d_raw(d, D_M_POST[k]);
        d_end_call(d);
        if (k == 0) {
            d->st = D_GROUP;
        } else if (k == 1) {
            d_group_end(d);
            d->st = D_CONTENT;
        } else {
            llm_pbuf_reset(&d->name);
            d->st = D_TYPE;
        }
        return;
    }
}

static void
d_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((deepseek_t *) p, text, len, d_put);
}

static void
d_finish(llm_parser *p)
{
    deepseek_t *d = (deepseek_t *) p;
    llm_pbase  *pb = &p->pb;

    llm_pbuf_reset(&d->rel);
    llm_mscan_drain(&d->ms, &d->rel);
    if (d->st == D_CONTENT) {
        llm_pb_content(pb, d->rel.p, d->rel.len);
        return;
    }
    llm_pb_raw(pb, d->rel.p, d->rel.len);
    if (d->st == D_NAME && d->name.len) {
        d_named(d);
    }
    if (d->st != D_GROUP) {
        d_end_call(d);
    }
    d_group_end(d);
    d->st = D_CONTENT;
}

static llm_parser *
d_create(const llm_parser_env *env)
{
    deepseek_t *d = calloc(1, sizeof(*d));

    if (d == NULL) {
        return NULL;
    }
    d->base.def = &llm_parser_deepseek_v3;
    llm_pb_init(&d->base.pb, env);
    llm_jv_init(&d->v);
    llm_jv_reset(&d->v);
    return &d->base;
}

static void
d_destroy(llm_parser *p)
{
    deepseek_t *d = (deepseek_t *) p;

    if (d == NULL) {
        return;
    }
    llm_pbuf_free(&d->rel);
    llm_pbuf_free(&d->name);
    llm_jv_free(&d->v);
    llm_pb_free(&p->pb);
    free(d);
}

static const char *const d_markers[] = {
    DS_CALLS_BEGIN, DS_CALLS_END, DS_CALL_BEGIN, DS_CALL_END, DS_SEP, NULL };

const llm_parser_def llm_parser_deepseek_v3 = {
    "deepseek_v3", LLM_PARSER_TOOL, d_markers,
    d_create, d_feed, d_finish, d_destroy
};
