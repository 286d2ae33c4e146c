/*
 * Loading a model as the server serves it (see the header).  The order is
 * the one whose failures are cheapest first and whose messages name the
 * file at fault: weights, the runtime they need, the tokenizer against the
 * weights' vocabulary, a draft against both, the template, the parsers.
 */
#include <stdio.h>
#include <string.h>

#include "chat/llm_served.h"
#include "engine/llm_memory.h"
#include "engine/llm_spec.h"

static int
llm_served_has_token(void *tok, const char *text)
{
    return tok && llm_tokenizer_token_id(tok, text) >= 0;
}

/* Draft models propose tokens by id: the vocabulary must be the same. */
static int
llm_served_load_draft(const llm_served_opts *o, llm_served *s, char *err,
    size_t errlen)
{
    char            why[512];
    llm_tokenizer  *dt;

    s->draft = llm_model_load(o->draft_path, why, sizeof(why));
    dt = s->draft ? llm_tokenizer_load(o->draft_path, why, sizeof(why))
                  : NULL;

    if (dt == NULL
        || llm_spec_draft_check(s->model, s->tok, s->draft, dt, why,
                                sizeof(why)) != 0)
    {
        llm_tokenizer_free(dt);
        snprintf(err, errlen, "draft \"%s\": %s", o->draft_path, why);
        return -1;
    }

    llm_tokenizer_free(dt);
    return 0;
}

int
llm_served_load(const llm_served_opts *o, llm_served *s, char *err,
    size_t errlen)
{
    int                    absent;
    char                   why[512];
    int32_t                top;
    const char            *piece;
    llm_model_opts         mo;
    llm_runtime_opts       ro;
    const llm_model_info  *info;

    memset(s, 0, sizeof(*s));
    memset(&mo, 0, sizeof(mo));
    mo.quant = o->quant;

    s->model = llm_model_load_opts(o->path, &mo, err, errlen);
    if (s->model == NULL) {
        return -1;
    }

    info = llm_model_get_info(s->model);

    /*
     * KV memory is a budget of blocks the sequences share, not parallel x
     * ctx: the default budget has room for parallel sequences of ctx (the
     * model's whole context when ctx is not given), capped at an eighth of
     * the machine's memory, and the context defaults to the model's, capped
     * by the budget.
     */
    s->kv_memory = o->kv_memory;
    if (s->kv_memory == 0) {
        s->kv_memory = llm_runtime_kv_default(s->model,
                                              o->kv_f16 ? LLM_KV_F16
                                                        : LLM_KV_F32,
                                              o->parallel, o->ctx,
                                              llm_memory_available());
    }

    memset(&ro, 0, sizeof(ro));
    ro.n_threads = o->threads;
    ro.n_ctx = o->ctx;
    ro.n_seq_max = o->parallel;
    ro.kv = o->kv_f16 ? LLM_KV_F16 : LLM_KV_F32;
    ro.kv_memory = s->kv_memory;

    if (llm_runtime_resolve(s->model, &ro, err, errlen) != 0) {
        goto failed;
    }
    s->n_ctx = ro.n_ctx;

    /* text in and out needs the tokenizer: a model folder must have one */
    s->tok = llm_tokenizer_load(o->path, why, sizeof(why));
    if (s->tok == NULL) {
        snprintf(err, errlen, "tokenizer: %s", why);
        goto failed;
    }

    /* a token the model has no embedding for would fail every batch it is in */
    top = (int32_t) llm_tokenizer_n_vocab(s->tok) - 1;
    if (top >= info->n_vocab) {
        piece = llm_tokenizer_piece(s->tok, top);
        snprintf(err, errlen, "tokenizer.json has token id %d (\"%s\") but "
                 "the model's vocabulary has %d ids (vocab_size in "
                 "config.json)", (int) top, piece ? piece : "", info->n_vocab);
        goto failed;
    }

    if (o->draft_path && llm_served_load_draft(o, s, err, errlen) != 0) {
        goto failed;
    }

    if (!o->chat_off) {
        s->chat = llm_chat_open(o->path, s->tok, &absent, why, sizeof(why));

        if (s->chat == NULL && !absent) {
            /* every chat request would fail: refuse the model */
            snprintf(err, errlen, "%s (add chat=off to serve only "
                     "completions and embeddings)", why);
            goto failed;
        }

        if (s->chat == NULL) {
            snprintf(s->chat_missing, sizeof(s->chat_missing), "%s", why);
        }
    }

    llm_parsers_auto(s->chat ? llm_chat_source(s->chat) : NULL,
                     info->model_type, llm_served_has_token, s->tok,
                     &s->tool_parser, &s->reasoning_parser, s->why,
                     sizeof(s->why));
    s->tool_def = s->tool_parser ? llm_tool_parser_find(s->tool_parser)
                                 : NULL;
    s->reasoning_def = s->reasoning_parser
                       ? llm_reasoning_parser_find(s->reasoning_parser)
                       : NULL;

    return 0;

failed:

    llm_served_free(s);
    return -1;
}

void
llm_served_free(llm_served *s)
{
    llm_chat_free(s->chat);
    llm_tokenizer_free(s->tok);
    llm_model_free(s->model);
    llm_model_free(s->draft);
    memset(s, 0, sizeof(*s));
}
