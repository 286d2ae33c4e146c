/* OpenAI chat response and chunk shapes, parsed back with jansson. */
#include <string.h>

#include "tap.h"
#include "api/llm_openai.h"

static int
fake_token(void *ctx, int32_t id, char *out, size_t cap)
{
    (void) ctx;
    if (id < 0) {
        return -1;
    }
    if (id == 7) {                         /* half of a UTF-8 character */
        out[0] = (char) 0xe4;
        return 1;
    }
    return snprintf(out, cap, "t%d", id);
}

static json_t *
load(const char *s)
{
    json_error_t e;
    json_t      *v = json_loads(s, 0, &e);

    if (v == NULL) {
        printf("# json error: %s in %s\n", e.text, s);
    }
    return v;
}

#define GETS(o, k) json_string_value(json_object_get((o), (k)))
#define GETI(o, k) json_integer_value(json_object_get((o), (k)))

static llm_openai_meta meta = {
    "chatcmpl-abc", 1700000000, "qwen", "fp_1", fake_token, NULL, 2
};

static void
test_response(void)
{
    llm_buf            b;
    llm_result         r[2];
    llm_tool_call      calls[2] = {
        { "call_1", "get", "{\"city\":\"Paris\"}" },
        { "call_2", "put", "{}" },
    };
    llm_token_logprobs tl[2];
    llm_logprobs_list  lps[2];
    json_t            *root, *ch, *msg, *tc, *u, *lp, *c0;

    memset(r, 0, sizeof(r));
    memset(tl, 0, sizeof(tl));
    r[0].content = "Hello \xe2\x82\xac";
    r[0].reasoning = "think";
    r[0].finish = LLM_FINISH_STOP_SEQ;
    r[0].usage.prompt_tokens = 10;
    r[0].usage.completion_tokens = 3;
    r[0].usage.cached_tokens = 4;
    r[1].tool_calls = calls;
    r[1].n_tool_calls = 2;
    r[1].finish = LLM_FINISH_TOOL_CALLS;
    r[1].usage.prompt_tokens = 10;
    r[1].usage.completion_tokens = 5;

    tl[0].chosen.id = 5; tl[0].chosen.logprob = -0.5f; tl[0].n_top = 3;
    tl[0].top[0].id = 5; tl[0].top[0].logprob = -0.5f;
    tl[0].top[1].id = 6; tl[0].top[1].logprob = -1.25f;
    tl[0].top[2].id = 8; tl[0].top[2].logprob = -3.0f;
    tl[1].chosen.id = 7; tl[1].chosen.logprob = -1.0f / 0.0f;
    lps[0].tokens = tl; lps[0].n = 2;
    lps[1].tokens = NULL; lps[1].n = 0;

    llm_buf_init(&b);
    ok(llm_openai_chat_response(&b, &meta, r, 2, lps) == 0, "chat response formats");
    root = load(b.data);
    ok(root != NULL, "valid JSON");
    is_str(GETS(root, "id"), "chatcmpl-abc", "id");
    is_str(GETS(root, "object"), "chat.completion", "object");
    is_int(GETI(root, "created"), 1700000000, "created");
    is_str(GETS(root, "model"), "qwen", "model");
    is_str(GETS(root, "system_fingerprint"), "fp_1", "system_fingerprint");
    is_int(json_array_size(json_object_get(root, "choices")), 2, "two choices");

    ch = json_array_get(json_object_get(root, "choices"), 0);
    is_int(GETI(ch, "index"), 0, "index 0");
    is_str(GETS(ch, "finish_reason"), "stop", "stop sequence is finish_reason stop");
    msg = json_object_get(ch, "message");
    is_str(GETS(msg, "role"), "assistant", "role");
    is_str(GETS(msg, "content"), "Hello \xe2\x82\xac", "content (UTF-8 kept)");
    is_str(GETS(msg, "reasoning_content"), "think", "reasoning_content");
    ok(json_object_get(msg, "tool_calls") == NULL, "no tool_calls key without calls");
    lp = json_object_get(json_object_get(ch, "logprobs"), "content");
    is_int(json_array_size(lp), 2, "two logprob entries");
    c0 = json_array_get(lp, 0);
    is_str(GETS(c0, "token"), "t5", "logprob token text");
    is_near(json_real_value(json_object_get(c0, "logprob")), -0.5, 1e-9, "logprob value");
    is_int(json_array_size(json_object_get(c0, "bytes")), 2, "bytes array");
    is_int(json_integer_value(json_array_get(json_object_get(c0, "bytes"), 0)), 't', "bytes values");
    is_int(json_array_size(json_object_get(c0, "top_logprobs")), 2, "top_logprobs capped by meta");
    is_str(GETS(json_array_get(json_object_get(c0, "top_logprobs"), 1), "token"), "t6", "second alternative");
    c0 = json_array_get(lp, 1);
    is_str(GETS(c0, "token"), "\xef\xbf\xbd", "a partial character prints as U+FFFD");
    is_int(json_integer_value(json_array_get(json_object_get(c0, "bytes"), 0)), 0xe4, "but bytes are raw");
    is_near(json_real_value(json_object_get(c0, "logprob")), -9999.0, 1e-9, "-inf logprob clamped");

    ch = json_array_get(json_object_get(root, "choices"), 1);
    is_int(GETI(ch, "index"), 1, "index 1");
    is_str(GETS(ch, "finish_reason"), "tool_calls", "finish tool_calls");
    msg = json_object_get(ch, "message");
    ok(json_is_null(json_object_get(msg, "content")), "content null with tool calls");
    ok(json_object_get(msg, "reasoning_content") == NULL, "no reasoning_content when absent");
    tc = json_object_get(msg, "tool_calls");
    is_int(json_array_size(tc), 2, "two tool calls");
    is_str(GETS(json_array_get(tc, 0), "id"), "call_1", "call id");
    is_str(GETS(json_array_get(tc, 0), "type"), "function", "call type");
    is_str(GETS(json_object_get(json_array_get(tc, 0), "function"), "name"), "get", "call name");
    is_str(GETS(json_object_get(json_array_get(tc, 0), "function"), "arguments"),
           "{\"city\":\"Paris\"}", "arguments as a JSON string");
    ok(json_is_object(json_object_get(ch, "logprobs"))
       && json_array_size(json_object_get(json_object_get(ch, "logprobs"), "content")) == 0,
       "empty logprobs list");

    u = json_object_get(root, "usage");
    is_int(GETI(u, "prompt_tokens"), 10, "prompt_tokens");
    is_int(GETI(u, "completion_tokens"), 8, "completion_tokens summed");
    is_int(GETI(u, "total_tokens"), 18, "total_tokens");
    is_int(GETI(json_object_get(u, "prompt_tokens_details"), "cached_tokens"), 4, "cached_tokens");
    json_decref(root);

    llm_buf_reset(&b);
    r[0].content = NULL;
    r[0].reasoning = NULL;
    ok(llm_openai_chat_response(&b, &meta, r, 1, NULL) == 0, "response without logprobs");
    root = load(b.data);
    ch = json_array_get(json_object_get(root, "choices"), 0);
    ok(json_is_null(json_object_get(ch, "logprobs")), "logprobs null");
    is_str(GETS(json_object_get(ch, "message"), "content"), "", "empty content without calls is \"\"");
    json_decref(root);
    llm_buf_free(&b);
}

/* Split an SSE buffer into its data payloads. */
static int
sse_split(const char *s, json_t **out, int max, int *done)
{
    int n = 0;

    *done = 0;
    while (*s) {
        const char *end = strstr(s, "\n\n");
        if (strncmp(s, "data: ", 6) != 0 || end == NULL) {
            return -1;
        }
        if (strncmp(s + 6, "[DONE]", 6) == 0) {
            *done = 1;
        } else if (n < max) {
            char tmp[4096];
            size_t len = (size_t) (end - s - 6);
            if (len >= sizeof(tmp)) return -1;
            memcpy(tmp, s + 6, len);
            tmp[len] = '\0';
            out[n++] = load(tmp);
        }
        s = end + 2;
    }
    return n;
}

static llm_event
ev(llm_event_type t, int index, const char *id, const char *name, const char *text)
{
    llm_event e;

    memset(&e, 0, sizeof(e));
    e.type = t;
    e.index = index;
    e.id = id;
    e.name = name;
    e.text = text;
    e.len = text ? strlen(text) : 0;
    return e;
}

static void
test_stream(void)
{
    llm_buf                 b;
    llm_openai_chat_stream  s;
    llm_event               e;
    json_t                 *c[32], *d, *ch, *tc;
    llm_usage               u = { 12, 7, 0, 0, 0 };
    llm_token_logprobs      tl[1];
    llm_logprobs_list       lpl = { tl, 1 };
    char                    args[256] = "";
    int                     n, i, done;

    memset(tl, 0, sizeof(tl));
    tl[0].chosen.id = 3;
    llm_buf_init(&b);
    llm_openai_chat_stream_init(&s, &meta, 0, 1, 1);
    e = ev(LLM_EV_REASONING, 0, NULL, NULL, "plan");
    llm_openai_chat_stream_event(&s, &b, &e, NULL);
    e = ev(LLM_EV_CONTENT, 0, NULL, NULL, "Hi");
    llm_openai_chat_stream_event(&s, &b, &e, &lpl);
    e = ev(LLM_EV_CONTENT, 0, NULL, NULL, "");
    llm_openai_chat_stream_event(&s, &b, &e, NULL);
    e = ev(LLM_EV_TOOL_BEGIN, 0, "call_9", "get", NULL);
    llm_openai_chat_stream_event(&s, &b, &e, NULL);
    e = ev(LLM_EV_TOOL_ARGS, 0, NULL, NULL, "{\"city\":");
    llm_openai_chat_stream_event(&s, &b, &e, NULL);
    e = ev(LLM_EV_TOOL_ARGS, 0, NULL, NULL, " \"Paris\"}");
    llm_openai_chat_stream_event(&s, &b, &e, NULL);
    e = ev(LLM_EV_TOOL_END, 0, NULL, NULL, NULL);
    llm_openai_chat_stream_event(&s, &b, &e, NULL);
    e = ev(LLM_EV_TOOL_BEGIN, 1, "call_10", "put", NULL);
    llm_openai_chat_stream_event(&s, &b, &e, NULL);
    e = ev(LLM_EV_TOOL_END, 1, NULL, NULL, NULL);
    llm_openai_chat_stream_event(&s, &b, &e, NULL);
    llm_openai_chat_stream_finish(&s, &b, LLM_FINISH_TOOL_CALLS);
    llm_openai_chat_stream_finish(&s, &b, LLM_FINISH_TOOL_CALLS);
    llm_openai_stream_usage(&b, &meta, NULL, &u);
    ok(llm_openai_stream_done(&b) == 0 && !b.failed, "stream formats");

    n = sse_split(b.data, c, 32, &done);
    is_int(n, 9, "9 JSON chunks (empty content, TOOL_END and a second finish send nothing)");
    ok(done && strcmp(b.data + b.len - 14, "data: [DONE]\n\n") == 0, "ends with [DONE]");
    for (i = 0; i < n; i++) {
        ok(c[i] && strcmp(GETS(c[i], "object"), "chat.completion.chunk") == 0
           && strcmp(GETS(c[i], "id"), "chatcmpl-abc") == 0
           && GETI(c[i], "created") == 1700000000
           && strcmp(GETS(c[i], "model"), "qwen") == 0,
           "chunk %d envelope", i);
        ok(json_object_get(c[i], "usage") != NULL, "chunk %d has a usage key", i);
    }
    ch = json_array_get(json_object_get(c[0], "choices"), 0);
    d = json_object_get(ch, "delta");
    ok(strcmp(GETS(d, "role"), "assistant") == 0 && strcmp(GETS(d, "content"), "") == 0,
       "first chunk: role assistant, content \"\"");
    ok(json_is_null(json_object_get(ch, "finish_reason")) && json_is_null(json_object_get(ch, "logprobs")),
       "first chunk: finish_reason and logprobs null");
    ok(json_is_null(json_object_get(c[0], "usage")), "usage null in ordinary chunks");
    d = json_object_get(json_array_get(json_object_get(c[1], "choices"), 0), "delta");
    is_str(GETS(d, "reasoning_content"), "plan", "reasoning delta");
    ch = json_array_get(json_object_get(c[2], "choices"), 0);
    is_str(GETS(json_object_get(ch, "delta"), "content"), "Hi", "content delta");
    is_str(GETS(json_array_get(json_object_get(json_object_get(ch, "logprobs"), "content"), 0), "token"),
           "t3", "content chunk carries logprobs");
    tc = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(c[3], "choices"), 0), "delta"), "tool_calls"), 0);
    ok(GETI(tc, "index") == 0 && strcmp(GETS(tc, "id"), "call_9") == 0
       && strcmp(GETS(tc, "type"), "function") == 0
       && strcmp(GETS(json_object_get(tc, "function"), "name"), "get") == 0
       && strcmp(GETS(json_object_get(tc, "function"), "arguments"), "") == 0,
       "first tool delta: index, id, type, name, empty arguments");
    for (i = 4; i <= 5; i++) {
        tc = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(c[i], "choices"), 0), "delta"), "tool_calls"), 0);
        ok(GETI(tc, "index") == 0 && json_object_get(tc, "id") == NULL
           && json_object_get(json_object_get(tc, "function"), "name") == NULL,
           "argument delta %d has index and arguments only", i);
        strcat(args, GETS(json_object_get(tc, "function"), "arguments"));
    }
    is_str(args, "{\"city\": \"Paris\"}", "argument fragments concatenate");
    tc = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(c[6], "choices"), 0), "delta"), "tool_calls"), 0);
    ok(GETI(tc, "index") == 1 && strcmp(GETS(tc, "id"), "call_10") == 0, "second call begins at index 1");
    ch = json_array_get(json_object_get(c[7], "choices"), 0);
    ok(json_object_size(json_object_get(ch, "delta")) == 0, "finish chunk has an empty delta");
    is_str(GETS(ch, "finish_reason"), "tool_calls", "finish_reason");
    ok(json_array_size(json_object_get(c[8], "choices")) == 0
       && GETI(json_object_get(c[8], "usage"), "completion_tokens") == 7,
       "last chunk before [DONE] carries usage and choices []");
    for (i = 0; i < n; i++) json_decref(c[i]);
    llm_buf_free(&b);

    /* usage chunk on its own */
    llm_buf_init(&b);
    llm_openai_stream_usage(&b, &meta, NULL, &u);
    n = sse_split(b.data, c, 1, &done);
    ok(n == 1 && json_array_size(json_object_get(c[0], "choices")) == 0, "usage chunk: choices []");
    is_str(GETS(c[0], "object"), "chat.completion.chunk", "usage chunk object");
    is_int(GETI(json_object_get(c[0], "usage"), "total_tokens"), 19, "usage total");
    json_decref(c[0]);
    llm_buf_free(&b);

    /* without include_usage there is no usage key; finish alone still
     * sends the role chunk first */
    llm_buf_init(&b);
    llm_openai_chat_stream_init(&s, &meta, 1, 0, 0);
    llm_openai_chat_stream_finish(&s, &b, LLM_FINISH_LENGTH);
    n = sse_split(b.data, c, 4, &done);
    is_int(n, 2, "role chunk + finish chunk");
    ok(json_object_get(c[0], "usage") == NULL, "no usage key without include_usage");
    ch = json_array_get(json_object_get(c[1], "choices"), 0);
    ok(GETI(ch, "index") == 1 && strcmp(GETS(ch, "finish_reason"), "length") == 0, "choice index 1, length");
    for (i = 0; i < n; i++) json_decref(c[i]);
    llm_buf_free(&b);
}

static void
test_stream_error(void)
{
    llm_buf       b;
    llm_api_error err;
    json_t       *c[2];
    int           n, done;

    llm_api_error_set(&err, 500, "api_error", "internal_error", NULL,
                      "The server failed while running the model.");
    llm_buf_init(&b);
    ok(llm_openai_stream_error(&b, &err) == 0 && llm_openai_stream_done(&b) == 0, "stream error formats");
    n = sse_split(b.data, c, 2, &done);
    ok(n == 1 && done, "one error payload then [DONE]");
    is_str(GETS(json_object_get(c[0], "error"), "type"), "api_error", "error type in stream");
    ok(strstr(GETS(json_object_get(c[0], "error"), "message"), "running the model") != NULL, "error message in stream");
    json_decref(c[0]);
    llm_buf_free(&b);
}

static void
test_errors_models(void)
{
    llm_buf        b;
    llm_api_error  err;
    json_t        *root, *e;

    llm_api_bad_request(&err, "invalid_value", "messages[2].role", "Invalid value for 'messages[2].role'.");
    llm_buf_init(&b);
    llm_openai_error_json(&b, &err, "req-1");
    root = load(b.data);
    e = json_object_get(root, "error");
    is_str(GETS(e, "message"), "Invalid value for 'messages[2].role'.", "error message");
    is_str(GETS(e, "type"), "invalid_request_error", "error type");
    is_str(GETS(e, "param"), "messages[2].role", "error param");
    is_str(GETS(e, "code"), "invalid_value", "error code");
    is_str(GETS(e, "request_id"), "req-1", "request_id inside error");
    json_decref(root);

    llm_buf_reset(&b);
    llm_api_error_set(&err, 404, "invalid_request_error", "model_not_found", NULL, "The model 'x' does not exist.");
    llm_openai_error_json(&b, &err, NULL);
    root = load(b.data);
    e = json_object_get(root, "error");
    ok(json_is_null(json_object_get(e, "param")), "param null when unset");
    ok(json_object_get(e, "request_id") == NULL, "no request_id when NULL");
    is_str(GETS(e, "code"), "model_not_found", "404 code");
    json_decref(root);

    llm_buf_free(&b);
}

static void
test_buf(void)
{
    llm_buf  b;
    char    *p;
    size_t   len;
    int      i;

    llm_buf_init(&b);
    for (i = 0; i < 1000; i++) {
        llm_buf_printf(&b, "%d,", i);
    }
    ok(!b.failed && b.len == strlen(b.data) && strncmp(b.data, "0,1,2,", 6) == 0, "buffer grows");
    p = llm_buf_detach(&b, &len);
    ok(p && len > 3000 && b.data == NULL && b.len == 0, "detach hands the bytes over");
    free(p);
    b.max = 8;
    ok(llm_buf_puts(&b, "12345678") == 0, "up to max is fine");
    ok(llm_buf_putc(&b, '9') == -1 && b.failed, "past max fails");
    ok(llm_buf_puts(&b, "x") == -1 && b.len == 8, "failed buffer stays failed");
    llm_buf_reset(&b);
    ok(!b.failed && b.len == 0 && llm_buf_puts(&b, "ok") == 0, "reset clears failure");
    llm_buf_free(&b);
}

int
main(void)
{
    test_buf();
    test_response();
    test_stream();
    test_stream_error();
    test_errors_models();
    return done_testing();
}
