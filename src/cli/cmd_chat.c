/*
 * llm chat: one request body through the server's own path without nginx.
 *
 *   body -> src/api (the protocol's IR, its 400s) -> llm_session (prompt
 *   ids) -> llm_generation (new-token limit, structured output, one
 *   llm_sched sequence per choice, the reply: detokenizer, parsers, the
 *   protocol's formatter; the same object the server's glue drives) ->
 *   steps run here in turn -> stdout
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
#include "chat/llm_generation.h"
#include "chat/llm_served.h"
#include "core/llm_file.h"
#include "engine/llm_sched.h"
#include "parsers/llm_parser.h"

/* The server's defaults: llm_max_response_size, ctx (no llm_max_tokens). */
#define CHAT_MAX_RESPONSE_SIZE  (16 * 1024 * 1024)
#define CHAT_DEFAULT_CTX        4096

typedef struct {
    llm_generation  *gen;
    int              stream;
    int              ended;
    llm_api_error    failure;    /* FAILED: the error body to print */
    int              status;     /* the exit status once ended */
} chat_run;

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

/* Streaming: the bytes as each step makes them. */
static void
on_flush(void *data)
{
    chat_run  *run = data;
    llm_buf   *out = llm_generation_out(run->gen);

    if (out->len) {
        fwrite(out->data, 1, out->len, stdout);
        fflush(stdout);
        llm_buf_reset(out);
    }
}

static void
on_done(void *data, llm_generation_end end, const llm_api_error *err)
{
    chat_run  *run = data;

    run->ended = 1;
    if (end != LLM_GENERATION_OK) {
        run->status = 1;
    }
    if (end == LLM_GENERATION_FAILED) {
        run->failure = *err;
    }
}

/* A choice that failed makes the exit status 1 (a stream still ends). */
static void
on_choice_done(void *data, size_t choice, llm_finish reason, const char *error)
{
    if (error) {
        ((chat_run *) data)->status = 1;
    }
}

static void
on_note(void *data, llm_generation_note note, const char *text)
{
    if (note != LLM_GENERATION_FULL) {
        ((chat_run *) data)->status = 1;
    }
}

static const llm_generation_events  chat_events = {
    NULL, on_choice_done, on_flush, on_note, on_done
};

/* The error body in the request's protocol; exit status 1. */
static int
fail(llm_api_kind api, const llm_api_error *err)
{
    llm_buf  b;

    llm_buf_init(&b);
    if (llm_api_error_body(api, &b, err, NULL, 0) == 0) {
        printf("%.*s\n", (int) b.len, b.data);
    }
    llm_buf_free(&b);
    return 1;
}

int
llm_cmd_chat(int argc, char **argv)
{
    int                    rc, ctx, threads;
    char                   err[1024], *body;
    size_t                 len;
    const char            *dir, *file, *api_name;
    llm_api_kind           api;
    llm_api_error          e;
    llm_api_limits         lim;
    llm_request            req;
    llm_admit              admit;
    llm_served             sv;
    llm_served_opts        so;
    llm_sched             *sched = NULL;
    llm_structured        *st = NULL;
    llm_sched_config       sc;
    llm_session_model      sm;
    llm_session_prompt     prompt;
    llm_generation_config  gc;
    chat_run               run;
    const llm_model_info  *info;
    llm_buf               *out;

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
    memset(&sv, 0, sizeof(sv));
    rc = llm_api_parse_request(api, body, len, &lim, &req, &e);
    free(body);
    if (rc != 0) {
        llm_request_free(&req);
        return fail(api, &e);
    }
    if (flag(argc, argv, "--stream")) {
        req.stream = 1;
    }

    /* the model as llm_model loads it (chat/llm_served.h) */
    memset(&so, 0, sizeof(so));
    so.path = dir;
    so.ctx = ctx;
    so.parallel = 1;
    so.threads = threads;
    if (llm_served_load(&so, &sv, err, sizeof(err)) != 0) {
        fprintf(stderr, "llm chat: %s\n", err);
        rc = 2;
        goto done;
    }
    info = llm_model_get_info(sv.model);

    if (llm_api_check_token_ids(&req, info->n_vocab, &e) != 0) {
        rc = fail(api, &e);
        goto done;
    }

    sm.alias = req.model ? req.model : dir;
    sm.chat = sv.chat;
    sm.tok = sv.tok;
    sm.reasoning_parser = sv.reasoning_parser;
    sm.split_special_tokens = 1;
    sm.snapshot_system = llm_model_has_state(sv.model);
    if (llm_session_build_prompt(&sm, &req, &prompt, &e) != 0) {
        rc = fail(api, &e);
        goto done;
    }

    memset(&sc, 0, sizeof(sc));
    sc.parallel = req.n > 0 ? req.n : 1;
    sc.n_ctx = ctx > 0 ? ctx : info->max_position_embeddings < CHAT_DEFAULT_CTX
                               ? info->max_position_embeddings : CHAT_DEFAULT_CTX;
    sc.threads = threads;
    sched = llm_sched_create(sv.model, &sc, err, sizeof(err));
    st = sched ? llm_served_structured(&sv, err, sizeof(err)) : NULL;
    if (st == NULL) {
        fprintf(stderr, "llm chat: %s\n", err);
        rc = 2;
        goto done;
    }

    /* the server's generation, with the server's defaults */
    memset(&gc, 0, sizeof(gc));
    gc.sched = sched;
    gc.tok = sv.tok;
    gc.info = info;
    gc.structured = st;
    gc.tool = sv.tool_def;
    gc.reasoning = sv.reasoning_def;
    gc.model = req.model ? req.model : dir;
    gc.fingerprint = "fp_ngx_llm";
    gc.created = (long long) time(NULL);
    gc.max_response_size = CHAT_MAX_RESPONSE_SIZE;
    gc.speculation = LLM_SPEC_OFF;
    run.stream = req.stream;

    if (llm_generation_create(&gc, &req, &prompt, &chat_events, &run, &run.gen,
                              &e) != 0)
    {
        if (e.status == 0) {
            fprintf(stderr, "llm chat: out of memory\n");
            rc = 2;
        } else {
            rc = fail(api, &e);
        }
        goto done;
    }

    admit = llm_generation_submit(run.gen);
    if (admit != LLM_ADMIT_OK) {
        fprintf(stderr, "llm chat: no admission place for %zu choices\n",
                llm_generation_n_choices(run.gen));
        rc = 2;
        goto done;
    }

    if (req.stream && llm_reply_start(llm_generation_reply(run.gen)) == 0) {
        on_flush(&run);
    }

    /* the server's step loop, without threads to post to */
    while (!run.ended && llm_sched_step_prepare(sched) > 0) {
        llm_sched_step_run(sched);
        llm_sched_step_complete(sched);
    }

    if (run.failure.status) {
        rc = fail(api, &run.failure);
        goto done;
    }

    out = llm_generation_out(run.gen);
    fwrite(out->data, 1, out->len, stdout);
    if (!req.stream) {
        putchar('\n');
    }
    rc = run.ended ? run.status : 1;

done:
    llm_generation_free(run.gen);
    llm_structured_free(st);
    llm_sched_free(sched);
    llm_session_prompt_free(&prompt);
    llm_served_free(&sv);
    llm_request_free(&req);
    return rc;
}
