/*
 * A generation request without nginx (chat/llm_generation.h): the shipped
 * model's request body -> prompt -> one sequence per choice -> steps run
 * here in turn (as the glue does across the event loop and a thread) ->
 * the protocol's bytes, and the refusals that come before anything runs.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"

#include "chat/llm_generation.h"
#include "parsers/llm_parser.h"

#define MODEL "models/ngxllm-tiny"

static llm_model      *model;
static llm_tokenizer  *tok;
static llm_chat       *chat;
static llm_structured *structured;

typedef struct {
    llm_generation  *gen;
    llm_buf          bytes;        /* everything sent, in order */
    int              tokens[2];    /* per choice */
    int              choices_done;
    int              flushes;
    int              done;
    int              free_in_done; /* the driver lets go from inside done */
    llm_generation_end end;
    llm_api_error    failure;
    char             note[160];    /* the last note's words */
} driver;

static void
take(driver *d)
{
    llm_buf  *out = llm_generation_out(d->gen);

    llm_buf_append(&d->bytes, out->data, out->len);
    llm_buf_reset(out);
}

static void
on_token(void *data, size_t choice)
{
    ((driver *) data)->tokens[choice < 2 ? choice : 1]++;
}

static void
on_choice_done(void *data, size_t choice, llm_finish reason, const char *error)
{
    ((driver *) data)->choices_done++;
}

static void
on_flush(void *data)
{
    driver  *d = data;

    d->flushes++;
    take(d);
}

static void
on_done(void *data, llm_generation_end end, const llm_api_error *err)
{
    driver  *d = data;

    d->done++;
    d->end = end;
    if (err) {
        d->failure = *err;
    }
    take(d);
    if (d->free_in_done) {
        llm_generation_free(d->gen);
        d->gen = NULL;
    }
}

static void
on_note(void *data, llm_generation_note note, const char *text)
{
    driver  *d = data;

    snprintf(d->note, sizeof(d->note), "%d %s", (int) note, text);
}

static const llm_generation_events  events = {
    on_token, on_choice_done, on_flush, on_note, on_done
};

static llm_sched *
sched_new(int parallel, int queue)
{
    char              err[256];
    llm_sched_config  sc;

    memset(&sc, 0, sizeof(sc));
    sc.parallel = parallel;
    sc.queue = queue;
    sc.n_ctx = 512;
    sc.threads = 1;
    return llm_sched_create(model, &sc, err, sizeof(err));
}

static int
has_token(void *ctx, const char *text)
{
    return llm_tokenizer_token_id(ctx, text) >= 0;
}

static void
config(llm_generation_config *gc, llm_sched *s)
{
    const char  *tool_id, *reasoning_id;
    char         why[256];

    llm_parsers_auto(llm_chat_source(chat), llm_model_get_info(model)->model_type,
                     has_token, tok, &tool_id, &reasoning_id, why, sizeof(why));
    memset(gc, 0, sizeof(*gc));
    gc->sched = s;
    gc->tok = tok;
    gc->info = llm_model_get_info(model);
    gc->structured = structured;
    gc->tool = tool_id ? llm_tool_parser_find(tool_id) : NULL;
    gc->reasoning = reasoning_id ? llm_reasoning_parser_find(reasoning_id) : NULL;
    gc->model = "tiny";
    gc->fingerprint = "fp_test";
    gc->created = 1700000000;
    gc->max_response_size = 1 << 20;
    gc->speculation = LLM_SPEC_OFF;
}

/* Parses body for api and builds its prompt; 0 or -1. */
static int
prepare(llm_api_kind api, const char *body, llm_request *req,
    llm_session_prompt *prompt)
{
    llm_api_error      e;
    llm_api_limits     lim;
    llm_session_model  sm;

    llm_api_limits_default(&lim);
    memset(prompt, 0, sizeof(*prompt));
    if (llm_api_parse_request(api, body, strlen(body), &lim, req, &e) != 0) {
        printf("# parse: %s\n", e.message);
        return -1;
    }
    sm.alias = "tiny";
    sm.chat = chat;
    sm.tok = tok;
    sm.reasoning_parser = NULL;
    sm.split_special_tokens = 1;
    sm.snapshot_system = 0;
    if (llm_session_build_prompt(&sm, req, prompt, &e) != 0) {
        printf("# prompt: %s\n", e.message);
        return -1;
    }
    return 0;
}

/* Runs the steps until the generation is done (or nothing runs). */
static void
run_steps(llm_sched *s, driver *d)
{
    int  guard = 0;

    while (!d->done && llm_sched_step_prepare(s) > 0 && guard++ < 1000) {
        llm_sched_step_run(s);
        llm_sched_step_complete(s);
    }
}

/* What a test made, freed in one place. */
static void
release(driver *d, llm_session_prompt *prompt, llm_request *req, llm_sched *s)
{
    llm_generation_free(d->gen);
    llm_buf_free(&d->bytes);
    llm_session_prompt_free(prompt);
    llm_request_free(req);
    llm_sched_free(s);
}

static json_t *
body_json(driver *d)
{
    return json_loadb(d->bytes.data, d->bytes.len, 0, NULL);
}

static void
test_chat(void)
{
    int                    rc;
    json_t                *o, *ch;
    driver                 d;
    llm_sched             *s;
    llm_request            req;
    llm_api_error          e;
    llm_session_prompt     prompt;
    llm_generation_config  gc;

    memset(&d, 0, sizeof(d));
    s = sched_new(2, 2);
    config(&gc, s);
    rc = prepare(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":"
                 "\"Hi\"}],\"max_tokens\":5,\"temperature\":0,\"n\":2}",
                 &req, &prompt);
    ok(rc == 0, "chat: the request and its prompt");

    rc = llm_generation_create(&gc, &req, &prompt, &events, &d, &d.gen, &e);
    ok(rc == 0, "chat: a generation is made");
    is_int(llm_generation_n_choices(d.gen), 2, "chat: n=2 gives two choices");
    is_int(llm_generation_max_new(d.gen), 5, "chat: max_tokens is the limit");
    is_int(llm_generation_submit(d.gen), LLM_ADMIT_OK, "chat: both admitted");

    /* backpressure: paused from LLM_GENERATION_BACKLOG unsent bytes until
       half is taken; a paused generation's sequences make no step */
    {
        int  paused = -1;

        ok(llm_generation_backlog(d.gen, LLM_GENERATION_BACKLOG - 1, &paused) == 0 && paused == 0,
           "backlog: below the limit, running");
        ok(llm_generation_backlog(d.gen, LLM_GENERATION_BACKLOG, &paused) == 1 && paused == 1,
           "backlog: at the limit, paused now");
        is_int(llm_sched_step_prepare(s), 0, "backlog: no step for paused sequences");
        ok(llm_generation_backlog(d.gen, LLM_GENERATION_BACKLOG, &paused) == 0 && paused == 1,
           "backlog: still at the limit, no change");
        ok(llm_generation_backlog(d.gen, LLM_GENERATION_BACKLOG / 2 + 1, &paused) == 0 && paused == 1,
           "backlog: more than half unsent, still paused");
        ok(llm_generation_backlog(d.gen, LLM_GENERATION_BACKLOG / 2, &paused) == 1 && paused == 0,
           "backlog: half taken, resumed now");
    }

    run_steps(s, &d);
    is_int(d.done, 1, "chat: done once");
    is_int(d.end, LLM_GENERATION_OK, "chat: ended well");
    is_int(d.flushes, 0, "chat: a non-streaming response is not flushed");
    is_int(d.choices_done, 2, "chat: each choice ended");
    ok(d.tokens[0] >= 1 && d.tokens[0] <= 5 && d.tokens[1] >= 1,
       "chat: each choice's tokens came (%d, %d)", d.tokens[0], d.tokens[1]);

    o = body_json(&d);
    ok(o != NULL, "chat: one JSON body");
    is_str(json_string_value(json_object_get(o, "object")), "chat.completion",
           "chat: a chat.completion");
    is_str(json_string_value(json_object_get(o, "model")), "tiny",
           "chat: named by the configured model");
    is_str(json_string_value(json_object_get(o, "system_fingerprint")),
           "fp_test", "chat: the configured fingerprint");
    is_int(json_array_size(json_object_get(o, "choices")), 2,
           "chat: two choices in the body");
    ch = json_array_get(json_object_get(o, "choices"), 1);
    is_int(json_integer_value(json_object_get(ch, "index")), 1,
           "chat: the second choice is index 1");
    is_int(json_integer_value(json_object_get(json_object_get(o, "usage"),
                                              "prompt_tokens")),
           (long long) prompt.n_ids, "chat: usage counts the prompt");
    is_int(json_integer_value(json_object_get(json_object_get(o, "usage"),
                                              "completion_tokens")),
           d.tokens[0] + d.tokens[1],
           "chat: usage counts every token the choices made");
    json_decref(o);

    is_str(d.note, "", "chat: nothing to note");

    release(&d, &prompt, &req, s);
}

/* A response that reaches max_response_size is noted, in the words logged. */
static void
test_full(void)
{
    char                   want[160];
    driver                 d;
    llm_sched             *s;
    llm_request            req;
    llm_api_error          e;
    llm_session_prompt     prompt;
    llm_generation_config  gc;

    memset(&d, 0, sizeof(d));
    s = sched_new(1, 0);
    config(&gc, s);
    /* as t/070-capacity.t: a long token forced, each kept with its logprobs */
    gc.max_response_size = 65536;
    ok(prepare(LLM_API_COMPLETIONS, "{\"prompt\":\"Say it\",\"max_tokens\":162,\"logprobs\":1,"
               "\"logit_bias\":{\"3572\":100}}", &req, &prompt) == 0
       && llm_generation_create(&gc, &req, &prompt, &events, &d, &d.gen, &e) == 0
       && llm_generation_submit(d.gen) == LLM_ADMIT_OK, "full: made and admitted");
    run_steps(s, &d);
    snprintf(want, sizeof(want), "%d the response reached llm_max_response_size (65536 bytes): it ends "
             "with finish_reason length", (int) LLM_GENERATION_FULL);
    is_str(d.note, want, "full: noted with the limit");
    release(&d, &prompt, &req, s);
}

static void
test_stream(void)
{
    int                    rc;
    driver                 d;
    llm_sched             *s;
    llm_request            req;
    llm_api_error          e;
    llm_session_prompt     prompt;
    llm_generation_config  gc;

    memset(&d, 0, sizeof(d));
    d.free_in_done = 1;
    s = sched_new(1, 0);
    config(&gc, s);
    rc = prepare(LLM_API_MESSAGES, "{\"model\":\"tiny\",\"max_tokens\":4,"
                 "\"temperature\":0,\"stream\":true,\"messages\":[{\"role\":"
                 "\"user\",\"content\":\"Hi\"}]}", &req, &prompt);
    ok(rc == 0, "messages stream: the request and its prompt");

    rc = llm_generation_create(&gc, &req, &prompt, &events, &d, &d.gen, &e);
    ok(rc == 0 && llm_generation_submit(d.gen) == LLM_ADMIT_OK,
       "messages stream: made and admitted");
    ok(llm_reply_start(llm_generation_reply(d.gen)) == 0,
       "messages stream: its opening bytes");
    take(&d);

    run_steps(s, &d);
    is_int(d.done, 1, "messages stream: done once");
    ok(d.gen == NULL, "messages stream: the driver freed it from done");
    ok(d.flushes >= 1, "messages stream: bytes flushed as steps made them");
    ok(d.bytes.len > 0 && strncmp(d.bytes.data, "event: message_start\n", 21) == 0,
       "messages stream: opens with message_start");
    ok(d.bytes.len > 0 && memmem(d.bytes.data, d.bytes.len,
                                 "event: message_stop\n", 20) != NULL,
       "messages stream: ends with message_stop");
    ok(memmem(d.bytes.data, d.bytes.len, "\"stop_reason\":\"max_tokens\"", 26)
       != NULL || memmem(d.bytes.data, d.bytes.len,
                         "\"stop_reason\":\"end_turn\"", 24) != NULL,
       "messages stream: a stop_reason in Anthropic's words");

    llm_buf_free(&d.bytes);
    llm_session_prompt_free(&prompt);
    llm_request_free(&req);
    llm_sched_free(s);
}

static void
test_refusals(void)
{
    int                    rc;
    driver                 d;
    llm_sched             *s;
    llm_request            req;
    llm_api_error          e;
    llm_sched_stats        st;
    llm_session_prompt     prompt;
    llm_generation_config  gc;

    memset(&d, 0, sizeof(d));
    s = sched_new(1, 0);
    config(&gc, s);

    /* above llm_max_tokens: a 400 naming the cap */
    gc.max_tokens = 3;
    prepare(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
            "\"max_tokens\":9}", &req, &prompt);
    rc = llm_generation_create(&gc, &req, &prompt, &events, &d, &d.gen, &e);
    ok(rc == -1 && d.gen == NULL, "cap: refused, nothing made");
    is_int(e.status, 400, "cap: a 400");
    is_str(e.param, "max_tokens", "cap: naming max_tokens");
    llm_session_prompt_free(&prompt);
    llm_request_free(&req);
    gc.max_tokens = 0;

    /* a tool-call grammar that cannot be enforced (a text parameter of
       the XML format with a schema text cannot meet): a 400 before
       anything is made */
    gc.tool = llm_tool_parser_find("qwen3_coder");
    prepare(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
            "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
            "\"parameters\":{\"type\":\"object\",\"properties\":{\"x\":"
            "{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"boolean\"}]}}}}}],"
            "\"tool_choice\":\"required\"}", &req, &prompt);
    rc = llm_generation_create(&gc, &req, &prompt, &events, &d, &d.gen, &e);
    ok(rc == -1 && d.gen == NULL, "tool grammar: refused, nothing made");
    is_int(e.status, 400, "tool grammar: a 400");
    is_str(e.code, "invalid_value", "tool grammar: invalid_value");
    is_str(e.param, "tool_choice", "tool grammar: naming tool_choice");
    ok(strstr(e.message, "cannot be enforced") != NULL,
       "tool grammar: saying why (%s)", e.message);
    llm_sched_get_stats(s, &st);
    is_int(st.cancelled, 0, "tool grammar: no sequence was made and cancelled");
    llm_session_prompt_free(&prompt);
    llm_request_free(&req);
    config(&gc, s);

    /* more choices than the scheduler holds: NEVER, nothing queued */
    prepare(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
            "\"max_tokens\":2,\"n\":2}", &req, &prompt);
    rc = llm_generation_create(&gc, &req, &prompt, &events, &d, &d.gen, &e);
    ok(rc == 0, "n=2 on one place: made");
    is_int(llm_generation_submit(d.gen), LLM_ADMIT_NEVER,
           "n=2 on one place: never admitted");
    llm_sched_get_stats(s, &st);
    is_int(st.waiting + st.running, 0, "n=2 on one place: nothing queued");
    release(&d, &prompt, &req, s);
}

int
main(void)
{
    char  err[512];
    int   absent;
    const llm_model_info  *info;

    model = llm_model_load(MODEL, err, sizeof(err));
    tok = model ? llm_tokenizer_load(MODEL, err, sizeof(err)) : NULL;
    chat = tok ? llm_chat_open(MODEL, tok, &absent, err, sizeof(err)) : NULL;
    if (!ok(chat != NULL, "the shipped model, tokenizer and template load")) {
        printf("# %s\n", err);
        return done_testing();
    }
    info = llm_model_get_info(model);
    structured = llm_structured_create(tok, info->eos_ids, (size_t) info->n_eos,
                                       err, sizeof(err));
    ok(structured != NULL, "the model's structured-output state");

    test_chat();
    test_full();
    test_stream();
    test_refusals();

    llm_structured_free(structured);
    llm_chat_free(chat);
    llm_tokenizer_free(tok);
    llm_model_free(model);
    return done_testing();
}
