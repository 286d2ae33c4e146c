/*
 * Reasoning blocks: <think>...</think> (Qwen3, DeepSeek-R1, many) and
 * [THINK]...[/THINK] (Magistral).  When the prompt already opened the block
 * (env->starts_in_reasoning) the output starts as reasoning.  A close marker
 * with no open one is dropped.
 */
#include "parsers/llm_parser_impl.h"

#include <stdlib.h>

typedef struct {
    llm_parser          base;
    int                 in;          /* inside the reasoning block */
    const char *const  *out_marks;   /* { open, close } */
    const char *const  *in_marks;    /* { close } */
    llm_mscan           ms;
    llm_pbuf            rel;
} think_t;

static const char *const T_OUT[] = { "<think>", "</think>", NULL };
static const char *const T_IN[] = { "</think>", NULL };
static const char *const M_OUT[] = { "[THINK]", "[/THINK]", NULL };
static const char *const M_IN[] = { "[/THINK]", NULL };

static void
t_emit(think_t *t)
{
    if (t->in) {
        llm_pb_reasoning(&t->base.pb, t->rel.p, t->rel.len);
    } else {
        llm_pb_content(&t->base.pb, t->rel.p, t->rel.len);
    }
}

static void
t_put(think_t *t, char c)
{
    int k;

    llm_pbuf_reset(&t->rel);
    k = llm_mscan_push(&t->ms, t->in ? t->in_marks : t->out_marks, c,
                       &t->rel);
    t_emit(t);
    if (t->in && k == 0) {
        t->in = 0;
    } else if (!t->in && k == 0) {
        t->in = 1;
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
    t_emit(t);
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
    t->in = env->starts_in_reasoning ? 1 : 0;
    t->out_marks = out_marks;
    t->in_marks = in_marks;
    return &t->base;
}

static llm_parser *
t_create(const llm_parser_env *env)
{
    return t_create_with(env, &llm_parser_think, T_OUT, T_IN);
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
    "think", LLM_PARSER_REASONING, T_OUT,
    t_create, t_feed, t_finish, t_destroy
};

const llm_parser_def llm_parser_think_mistral = {
    "mistral", LLM_PARSER_REASONING, M_OUT,
    t_create_mistral, t_feed, t_finish, t_destroy
};
