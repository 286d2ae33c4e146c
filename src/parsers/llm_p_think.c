/*
 * Reasoning blocks: <think>...</think> (Qwen3, DeepSeek-R1, GLM, many) and
 * [THINK]...[/THINK] (Magistral).  A response has at most one block and it
 * comes first: once other text starts, or the block closes, everything is
 * content, so a "<think>" inside an answer or a tool call's arguments stays
 * text.  When the prompt already opened the block (env->starts_in_reasoning)
 * the output starts inside it.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>
#include <string.h>

enum { T_START = 0, T_IN, T_OUT };

typedef struct {
    llm_parser          base;
    int                 st;
    const char *const  *out_marks;   /* { open, close } */
    const char *const  *in_marks;    /* { close } */
    llm_mscan           ms;
    llm_pbuf            rel;
} think_t;

static const char *const TM_OUT[] = { "<think>", "</think>", NULL };
static const char *const TM_IN[] = { "</think>", NULL };
static const char *const M_OUT[] = { "[THINK]", "[/THINK]", NULL };
static const char *const M_IN[] = { "[/THINK]", NULL };

static void
t_put(think_t *t, char c)
{
    llm_pbase *pb = &t->base.pb;
    size_t     i;
    int        k;

    llm_pbuf_reset(&t->rel);
    switch (t->st) {
    case T_START:                /* only whitespace so far */
        k = llm_mscan_push(&t->ms, t->out_marks, c, &t->rel);
        for (i = 0; i < t->rel.len; i++) {
            if (!llm_is_space(t->rel.p[i])) {
                t->st = T_OUT;
            }
        }
        llm_pb_content(pb, t->rel.p, t->rel.len);
        if (k >= 0 && t->st == T_OUT) {
            llm_pb_content(pb, t->out_marks[k], strlen(t->out_marks[k]));
        } else if (k >= 0) {     /* "<think>" opens; a lone "</think>" is dropped */
            t->st = (k == 0) ? T_IN : T_OUT;
        }
        return;

    case T_IN:
        k = llm_mscan_push(&t->ms, t->in_marks, c, &t->rel);
        llm_pb_reasoning(pb, t->rel.p, t->rel.len);
        if (k == 0) {
            t->st = T_OUT;
        }
        return;

    default:
        if (t->ms.hlen) {
            llm_mscan_drain(&t->ms, &t->rel);
        }
        llm_pbuf_addc(&t->rel, c);
        llm_pb_content(pb, t->rel.p, t->rel.len);
        return;
    }
}

static void
t_feed(llm_parser *p, const char *text, size_t len)
{
    LLM_FEED_LOOP((think_t *) p, text, len, t_put);
}

static void
t_finish(llm_parser *p)
{
    think_t *t = (think_t *) p;

    llm_pbuf_reset(&t->rel);
    llm_mscan_drain(&t->ms, &t->rel);
    if (t->st == T_IN) {
        llm_pb_reasoning(&p->pb, t->rel.p, t->rel.len);
    } else {
        llm_pb_content(&p->pb, t->rel.p, t->rel.len);
    }
}

static llm_parser *
t_create_with(const llm_parser_env *env, const llm_parser_def *def,
              const char *const *out_marks, const char *const *in_marks)
{
    think_t *t = calloc(1, sizeof(*t));

    if (t == NULL) {
        return NULL;
    }
    t->base.def = def;
    llm_pb_init(&t->base.pb, env);
    t->st = env->starts_in_reasoning ? T_IN : T_START;
    t->out_marks = out_marks;
    t->in_marks = in_marks;
    return &t->base;
}

static llm_parser *
t_create(const llm_parser_env *env)
{
    return t_create_with(env, &llm_parser_think, TM_OUT, TM_IN);
}

static llm_parser *
t_create_mistral(const llm_parser_env *env)
{
    return t_create_with(env, &llm_parser_think_mistral, M_OUT, M_IN);
}

static void
t_destroy(llm_parser *p)
{
    think_t *t = (think_t *) p;

    if (t == NULL) {
        return;
    }
    llm_pbuf_free(&t->rel);
    llm_pb_free(&p->pb);
    free(t);
}

const llm_parser_def llm_parser_think = {
    "think", LLM_PARSER_REASONING, TM_OUT,
    t_create, t_feed, t_finish, t_destroy
};

const llm_parser_def llm_parser_think_mistral = {
    "mistral", LLM_PARSER_REASONING, M_OUT,
    t_create_mistral, t_feed, t_finish, t_destroy
};
