/*
 * The formatter tables: the same parser events and results become OpenAI
 * chat, OpenAI completions and Anthropic bytes through one interface.
 */
#include "tap.h"

#include "api/llm_formatter.h"

static llm_formatter *
make(llm_api_kind api, int stream, size_t n, const char *echo)
{
    llm_formatter_config  c;

    memset(&c, 0, sizeof(c));
    c.id = api == LLM_API_MESSAGES ? "msg_x" : "chatcmpl-x";
    c.created = 1700000000;
    c.model = "tiny";
    c.n_choices = n;
    c.stream = stream;
    c.include_usage = 1;
    c.echo = echo;
    c.echo_len = echo ? strlen(echo) : 0;
    return llm_formatter_create(llm_formatter_find(api), &c);
}

static const llm_event *
ev(llm_event_type t, int index, const char *id, const char *name,
    const char *text)
{
    static llm_event  e;

    memset(&e, 0, sizeof(e));
    e.type = t;
    e.index = index;
    e.id = id;
    e.name = name;
    e.text = text;
    e.len = text ? strlen(text) : 0;
    return &e;
}

#define has(b, s) (strstr((b)->data ? (b)->data : "", (s)) != NULL)

static void
test_tables(void)
{
    ok(llm_formatter_find(LLM_API_CHAT) != NULL, "chat has a table");
    ok(llm_formatter_find(LLM_API_COMPLETIONS) != NULL, "completions too");
    ok(llm_formatter_find(LLM_API_MESSAGES) != NULL, "messages too");
    ok(llm_formatter_find(LLM_API_EMBEDDINGS) == NULL, "embeddings have none");
    is_str(llm_formatter_find(LLM_API_CHAT)->id_prefix, "chatcmpl-", "chat ids");
    is_str(llm_formatter_find(LLM_API_MESSAGES)->id_prefix, "msg_", "message ids");
}

static void
test_chat_stream(void)
{
    llm_buf         b;
    llm_formatter  *f = make(LLM_API_CHAT, 1, 2, NULL);
    llm_result      r[2];
    llm_usage       u = { 7, 3, 0, 0, 0 };
    llm_api_error   err;

    llm_buf_init(&b);
    memset(r, 0, sizeof(r));
    ok(llm_formatter_start(f, &b) == 0, "chat start");
    ok(has(&b, "\"index\":0") && has(&b, "\"index\":1"),
       "a role chunk for each of the two choices");
    llm_buf_reset(&b);

    llm_formatter_event(f, &b, 1, ev(LLM_EV_CONTENT, 0, 0, 0, "Hi"), NULL);
    ok(has(&b, "\"content\":\"Hi\"") && has(&b, "\"index\":1"),
       "content delta of choice 1");
    llm_buf_reset(&b);

    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_BEGIN, 0, "call_1", "get", 0),
                        NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_ARGS, 0, 0, 0, "{\"a\":1}"),
                        NULL);
    ok(has(&b, "\"tool_calls\"") && has(&b, "\"name\":\"get\""),
       "tool call deltas");
    llm_buf_reset(&b);

    r[0].finish = LLM_FINISH_TOOL_CALLS;
    r[1].finish = LLM_FINISH_STOP;
    llm_formatter_finish_choice(f, &b, 0, &r[0]);
    ok(has(&b, "\"finish_reason\":\"tool_calls\""), "finish_reason per choice");
    llm_buf_reset(&b);

    llm_formatter_finish(f, &b, r, &u);
    ok(has(&b, "\"usage\"") && has(&b, "\"completion_tokens\":3"),
       "the usage chunk (include_usage)");
    ok(has(&b, "data: [DONE]"), "then [DONE]");
    llm_buf_reset(&b);

    llm_formatter_generation_error(f, &err, "boom");
    is_str(err.type, "server_error", "OpenAI's 500 type");
    llm_formatter_error(f, &b, &err);
    ok(has(&b, "Generation failed: boom") && has(&b, "[DONE]"),
       "an error event ends an OpenAI stream with [DONE]");

    llm_buf_free(&b);
    llm_formatter_free(f);
}

static void
test_completions(void)
{
    llm_buf         b;
    llm_formatter  *f = make(LLM_API_COMPLETIONS, 1, 1, "Once");
    llm_result      r;

    llm_buf_init(&b);
    llm_formatter_start(f, &b);
    ok(has(&b, "\"text\":\"Once\""), "echo goes out first");
    llm_buf_reset(&b);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_REASONING, 0, 0, 0, "hmm"), NULL);
    is_int(b.len, 0, "completions carry no reasoning");
    llm_formatter_event(f, &b, 0, ev(LLM_EV_CONTENT, 0, 0, 0, " upon"), NULL);
    ok(has(&b, "\"text\":\" upon\""), "text chunk");
    llm_buf_reset(&b);
    llm_buf_free(&b);
    llm_formatter_free(f);

    /* non-streaming: one body */
    f = make(LLM_API_COMPLETIONS, 0, 1, NULL);
    llm_buf_init(&b);
    memset(&r, 0, sizeof(r));
    r.content = "a time";
    r.finish = LLM_FINISH_LENGTH;
    ok(llm_formatter_response(f, &b, &r, NULL) == 0, "completion body");
    ok(has(&b, "\"object\":\"text_completion\"")
       && has(&b, "\"finish_reason\":\"length\""), "text_completion, length");
    llm_buf_free(&b);
    llm_formatter_free(f);
}

static void
test_messages(void)
{
    llm_buf         b;
    llm_formatter  *f = make(LLM_API_MESSAGES, 1, 1, NULL);
    llm_result      r;
    llm_usage       u = { 7, 2, 0, 0, 0 };
    llm_api_error   err;

    llm_buf_init(&b);
    llm_formatter_start(f, &b);
    is_int(b.len, 0, "messages: nothing at start");
    llm_formatter_prompt_read(f, &b, &u);
    ok(has(&b, "event: message_start") && has(&b, "\"input_tokens\":7"),
       "message_start once the prompt was read, with its tokens");
    llm_buf_reset(&b);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_REASONING, 0, 0, 0, "hmm"), NULL);
    ok(has(&b, "\"thinking\""), "reasoning is a thinking block");
    llm_buf_reset(&b);
    memset(&r, 0, sizeof(r));
    r.finish = LLM_FINISH_STOP;
    llm_formatter_finish_choice(f, &b, 0, &r);
    is_int(b.len, 0, "no per-choice ending: message_delta carries it");
    llm_formatter_finish(f, &b, &r, &u);
    ok(has(&b, "\"stop_reason\":\"end_turn\"") && has(&b, "event: message_stop"),
       "message_delta and message_stop");
    llm_buf_reset(&b);

    llm_formatter_generation_error(f, &err, "boom");
    is_str(err.type, "api_error", "Anthropic's 500 type");
    llm_formatter_error(f, &b, &err);
    ok(has(&b, "event: error") && !has(&b, "[DONE]"),
       "an Anthropic error event, no [DONE]");
    llm_buf_free(&b);
    llm_formatter_free(f);
}

/* llm_stream_keepalive: bytes each protocol's clients skip. */
static void
test_keepalive(void)
{
    llm_buf         b;
    llm_formatter  *f;

    llm_buf_init(&b);
    f = make(LLM_API_CHAT, 1, 1, NULL);
    ok(llm_formatter_keepalive(f, &b) == 0, "chat keep-alive");
    is_str(b.data, ": keep-alive\n\n", "chat: an SSE comment line");
    llm_formatter_free(f);
    llm_buf_reset(&b);

    f = make(LLM_API_COMPLETIONS, 1, 1, NULL);
    llm_formatter_keepalive(f, &b);
    is_str(b.data, ": keep-alive\n\n", "completions: an SSE comment line");
    llm_formatter_free(f);
    llm_buf_reset(&b);

    f = make(LLM_API_MESSAGES, 1, 1, NULL);
    llm_formatter_keepalive(f, &b);
    is_str(b.data, "event: ping\ndata: {\"type\":\"ping\"}\n\n",
           "messages: Anthropic's ping event");
    llm_formatter_free(f);
    llm_buf_free(&b);
}

int
main(void)
{
    test_tables();
    test_keepalive();
    test_chat_stream();
    test_completions();
    test_messages();
    return done_testing();
}
