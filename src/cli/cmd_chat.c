/*
 * llm chat: one request body through the server's own path without nginx.
 *
 *   body -> src/api (the protocol's IR, its 400s) -> llm_session (prompt
 *   ids, new-token limit, sampler parameters) -> structured output ->
 *   llm_sched (one sequence per choice, steps run here in turn) ->
 *   llm_reply (detokenizer, parsers, the protocol's formatter) -> stdout
 *
 * A streaming request prints its SSE bytes as the steps make them; any other
 * prints one JSON body.  An error prints the protocol's error body (exit 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm_cli.h"

#include "api/llm_api.h"
#include "chat/llm_reply.h"
#include "chat/llm_session.h"
#include "chat/llm_structured.h"
#include "core/llm_file.h"
#include "engine/llm_sched.h"
#include "parsers/llm_parser.h"

/* The server's defaults: llm_max_response_size, ctx (no llm_max_tokens). */
#define CHAT_MAX_RESPONSE_SIZE  (16 * 1024 * 1024)
#define CHAT_DEFAULT_CTX        4096

typedef struct chat_choice  chat_choice;

typedef struct {
    llm_reply    *reply;
    llm_seq     **seqs;
    chat_choice  *choices;
    size_t        n;
    int           all_done;
    int           stream;
    char          error[256];   /* a failed generation */
} chat_run;

struct chat_choice {
    chat_run     *run;
    size_t        index;
};

static const char *
opt(int argc, char **argv, const char *name)
{
    int  i;

    for (i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return argv[i + 1];
        }
    }
    return NULL;
}

static int
flag(int argc, char **argv, const char *name)
{
    int  i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

static void on_done(void *owner, llm_seq *seq, llm_finish reason,
    const char *error);

static void
end_all(chat_run *run, llm_finish reason, const char *error)
{
    size_t  i;

    for (i = 0; i < run->n; i++) {
        if (!llm_reply_choice_is_done(run->reply, i)) {
            llm_seq_finish(run->seqs[i]);
            on_done(&run->choices[i], run->seqs[i], reason, error);
        }
    }
}

static void
on_token(void *owner, llm_seq *seq, int32_t token, const llm_token_logprobs *lp)
{
    chat_choice  *ch = owner;

    switch (llm_reply_token(ch->run->reply, ch->index, token, lp)) {
    case LLM_REPLY_MORE:
        break;
    case LLM_REPLY_STOP:
        llm_seq_finish(seq);
        on_done(ch, seq, LLM_FINISH_STOP_SEQ, NULL);
        break;
    case LLM_REPLY_FULL:
        end_all(ch->run, LLM_FINISH_LENGTH, NULL);
        break;
    case LLM_REPLY_NO_MEMORY:
        end_all(ch->run, LLM_FINISH_ERROR, "out of memory");
        break;
    }
}

static void
on_done(void *owner, llm_seq *seq, llm_finish reason, const char *error)
{
    chat_choice    *ch = owner;
    size_t          n_gen;
    const int32_t  *gen;

    if (ch->run->all_done || llm_reply_choice_is_done(ch->run->reply, ch->index)) {
        return;
    }
    gen = llm_seq_generated(seq, &n_gen);
    if (llm_reply_choice_done(ch->run->reply, ch->index, reason, gen, n_gen) != 0
        || error)
    {
        ch->run->all_done = 1;
        if (error) {
            snprintf(ch->run->error, sizeof(ch->run->error), "%s", error);
        }
        llm_reply_cache_written(ch->run->reply,
                                llm_seq_n_cache_written(ch->run->seqs[0]));
        llm_reply_finish(ch->run->reply, llm_seq_n_cached(ch->run->seqs[0]),
                         error);
    }
}

static void
on_flush(void *owner)
{
    chat_choice  *ch = owner;
    llm_buf      *out = llm_reply_out(ch->run->reply);

    if (ch->run->stream && out->len) {
        fwrite(out->data, 1, out->len, stdout);
        fflush(stdout);
        llm_buf_reset(out);
    }
}

static const llm_seq_events  chat_events = { on_token, on_done, on_flush };

static int
has_token(void *tok, const char *text)
{
    return tok && llm_tokenizer_token_id(tok, text) >= 0;
}

/* The error body in the request's protocol; exit status 1. */
static int
fail(llm_api_kind api, const llm_api_error *err)
{
    llm_buf  b;

    llm_buf_init(&b);
    if (llm_api_error_body(api, &b, err, NULL) == 0) {
        printf("%.*s\n", (int) b.len, b.data);
    }
    llm_buf_free(&b);
    return 1;
}

int
llm_cmd_chat(int argc, char **argv)
{
    int                    rc, absent, ctx, threads;
    char                   err[1024], why[256], *body;
    size_t                 len, i, max_new, granted;
    const char            *dir, *file, *api_name, *tool_id, *reasoning_id, *param;
    llm_api_kind           api;
    llm_api_error          e;
    llm_api_limits         lim;
    llm_request            req;
    llm_model             *model = NULL;
    llm_tokenizer         *tok = NULL;
    llm_chat              *chat = NULL;
    llm_sched             *sched = NULL;
    llm_structured        *st = NULL;
    llm_structured_plan    plan;
    llm_sched_config       sc;
    llm_session_model      sm;
    llm_session_prompt     prompt;
    llm_session_limits     sl;
    llm_sampler_params     sp;
    llm_reply_config       rcfg;
    chat_run               run;
    const llm_model_info  *info;
    llm_buf               *out;
    llm_constraint        *c;

    dir = opt(argc, argv, "--model");
    file = opt(argc, argv, "--request");
    api_name = opt(argc, argv, "--api");
    ctx = opt(argc, argv, "--ctx") ? atoi(opt(argc, argv, "--ctx")) : 0;
    threads = opt(argc, argv, "--threads") ? atoi(opt(argc, argv, "--threads")) : 1;

    api = api_name == NULL || strcmp(api_name, "chat") == 0 ? LLM_API_CHAT
          : strcmp(api_name, "completions") == 0 ? LLM_API_COMPLETIONS
          : strcmp(api_name, "messages") == 0 ? LLM_API_MESSAGES
          : strcmp(api_name, "responses") == 0 ? LLM_API_RESPONSES
          : (llm_api_kind) -1;
    if (dir == NULL || file == NULL || (int) api < 0) {
        fprintf(stderr, "llm chat: --model DIR --request FILE.json [--api chat|"
                "completions|messages|responses] [--stream] [--ctx N] [--threads N]\n");
        return 2;
    }

    body = llm_file_read(file, &len, err, sizeof(err));
    if (body == NULL) {
        fprintf(stderr, "llm chat: %s\n", err);
        return 2;
    }

    llm_api_limits_default(&lim);
    memset(&e, 0, sizeof(e));
    memset(&prompt, 0, sizeof(prompt));
    memset(&run, 0, sizeof(run));
    rc = llm_api_parse_request(api, body, len, &lim, &req, &e);
    free(body);
    if (rc != 0) {
        llm_request_free(&req);
        return fail(api, &e);
    }
    if (flag(argc, argv, "--stream")) {
        req.stream = 1;
    }

    /* the model as llm_model loads it */
    model = llm_model_load(dir, err, sizeof(err));
    tok = model ? llm_tokenizer_load(dir, err, sizeof(err)) : NULL;
    if (tok == NULL) {
        fprintf(stderr, "llm chat: %s\n", err);
        rc = 2;
        goto done;
    }
    info = llm_model_get_info(model);
    chat = llm_chat_open(dir, tok, &absent, err, sizeof(err));
    llm_parsers_auto(chat ? llm_chat_source(chat) : NULL, info->model_type,
                     has_token, tok, &tool_id, &reasoning_id, why, sizeof(why));

    if (llm_api_check_token_ids(&req, info->n_vocab, &e) != 0) {
        rc = fail(api, &e);
        goto done;
    }

    sm.alias = req.model ? req.model : dir;
    sm.chat = chat;
    sm.tok = tok;
    sm.reasoning_parser = reasoning_id;
    sm.split_special_tokens = 1;
    if (llm_session_build_prompt(&sm, &req, &prompt, &e) != 0) {
        rc = fail(api, &e);
        goto done;
    }

    memset(&sc, 0, sizeof(sc));
    sc.parallel = req.n > 0 ? req.n : 1;
    sc.n_ctx = ctx > 0 ? ctx : info->max_position_embeddings < CHAT_DEFAULT_CTX
                               ? info->max_position_embeddings : CHAT_DEFAULT_CTX;
    sc.threads = threads;
    sched = llm_sched_create(model, &sc, err, sizeof(err));
    if (sched == NULL) {
        fprintf(stderr, "llm chat: %s\n", err);
        rc = 2;
        goto done;
    }

    sl.n_ctx = llm_sched_n_ctx(sched);
    sl.max_tokens = 0;
    sl.max_response_size = CHAT_MAX_RESPONSE_SIZE;
    sl.model = req.model;
    if (llm_session_max_new_tokens(&req, prompt.n_ids, &sl, &max_new, &e) != 0) {
        rc = fail(api, &e);
        goto done;
    }

    memset(&rcfg, 0, sizeof(rcfg));
    rcfg.req = &req;
    rcfg.tok = tok;
    rcfg.tool = tool_id ? llm_tool_parser_find(tool_id) : NULL;
    rcfg.reasoning = reasoning_id ? llm_reasoning_parser_find(reasoning_id) : NULL;
    llm_reply_parsers(&req, &rcfg.tool, &rcfg.reasoning);
    rcfg.starts_in_reasoning = prompt.starts_in_reasoning;
    rcfg.model = req.model ? req.model : dir;
    rcfg.fingerprint = "fp_ngx_llm";
    rcfg.created = (long long) time(NULL);
    rcfg.echo = prompt.echo;
    rcfg.echo_len = prompt.echo_len;
    rcfg.n_prompt = prompt.n_ids;
    rcfg.max_held = CHAT_MAX_RESPONSE_SIZE;
    prompt.echo = NULL;

    /* structured output: refused with a 400 before anything runs */
    st = llm_structured_create(tok, info->eos_ids, (size_t) info->n_eos, err,
                               sizeof(err));
    if (st == NULL) {
        fprintf(stderr, "llm chat: %s\n", err);
        rc = 2;
        goto done;
    }

    run.reply = llm_reply_create(&rcfg);
    run.n = run.reply ? llm_reply_n_choices(run.reply) : 0;
    run.seqs = calloc(run.n ? run.n : 1, sizeof(llm_seq *));
    run.choices = calloc(run.n ? run.n : 1, sizeof(chat_choice));
    run.stream = req.stream;
    if (run.reply == NULL || run.seqs == NULL || run.choices == NULL
        || llm_sched_reserve(sched, run.n, run.n, &granted) != LLM_ADMIT_OK)
    {
        fprintf(stderr, "llm chat: out of memory or places\n");
        rc = 2;
        goto done;
    }

    for (i = 0; i < run.n; i++) {
        run.choices[i].run = &run;
        run.choices[i].index = i;
        llm_session_sampler_params(&req, info, i, &sp);
        run.seqs[i] = llm_seq_create(sched, prompt.ids, prompt.n_ids, max_new,
                                     &sp, req.sampling.logprobs
                                          ? req.sampling.top_logprobs : -1,
                                     &chat_events, &run.choices[i], i);
        if (run.seqs[i] == NULL) {
            fprintf(stderr, "llm chat: out of memory\n");
            rc = 2;
            goto done;
        }
        if (prompt.cache_upto > 0) {
            llm_seq_set_retention(run.seqs[i], prompt.cache_upto, req.cache_ttl);
        }
        if (llm_structured_prepare(st, &req, rcfg.tool ? rcfg.tool->id : NULL,
                                   rcfg.reasoning ? rcfg.reasoning->id : NULL,
                                   rcfg.starts_in_reasoning, &plan, err,
                                   sizeof(err), &param) != 0)
        {
            llm_api_bad_request(&e, "invalid_value", param, "%s.", err);
            rc = fail(api, &e);
            goto done;
        }
        if (plan.index) {
            c = llm_constraint_create(plan.index, tok, plan.triggers,
                                      plan.n_triggers);
            if (c) {
                llm_seq_set_constraint(run.seqs[i], c);
            }
        }
        llm_structured_release(st, &plan);
    }

    if (req.stream && llm_reply_start(run.reply) == 0) {
        on_flush(&run.choices[0]);
    }
    for (i = 0; i < run.n; i++) {
        llm_sched_submit(sched, run.seqs[i]);
    }

    /* the server's step loop, without threads to post to */
    while (!run.all_done && llm_sched_step_prepare(sched) > 0) {
        llm_sched_step_run(sched);
        llm_sched_step_complete(sched);
    }

    if (run.error[0] && !req.stream) {
        llm_reply_failure(run.reply, run.error, &e);
        rc = fail(api, &e);
        goto done;
    }

    out = llm_reply_out(run.reply);
    fwrite(out->data, 1, out->len, stdout);
    if (!req.stream) {
        putchar('\n');
    }
    rc = run.all_done && !run.error[0] ? 0 : 1;

done:
    for (i = 0; run.seqs && i < run.n; i++) {
        if (run.seqs[i]) {
            llm_seq_release(run.seqs[i]);
        }
    }
    free(run.seqs);
    free(run.choices);
    llm_reply_free(run.reply);
    llm_structured_free(st);
    llm_sched_free(sched);
    llm_session_prompt_free(&prompt);
    llm_chat_free(chat);
    llm_tokenizer_free(tok);
    llm_model_free(model);
    llm_request_free(&req);
    return rc;
}
