/* OpenAI /v1/completions: prompt shapes, validation, text_completion output. */
#include <string.h>

#include "tap.h"
#include "api/llm_openai.h"

static llm_api_limits lim;

static int
parse(const char *body, llm_request *req, llm_api_error *err)
{
    memset(err, 0, sizeof(*err));
    return llm_openai_parse_completions(body, strlen(body), &lim, req, err);
}

static const struct {
    const char *body, *param, *msg;
} bad[] = {
    { "{\"model\":\"m\"}", "prompt", "Missing required parameter: 'prompt'" },
    { "{\"prompt\":5}", "prompt", "a string, an array of strings" },
    { "{\"prompt\":[]}", "prompt", "array is empty" },
    { "{\"prompt\":[\"a\",\"b\"]}", "prompt", "one prompt per request, but got 2" },
    { "{\"prompt\":[[1,2],[3]]}", "prompt", "one prompt per request" },
    { "{\"prompt\":[1,\"a\"]}", "prompt[1]", "token id" },
    { "{\"prompt\":[1,-2]}", "prompt[1]", "at least 0, but got -2" },
    { "{\"prompt\":[[]]}", "prompt[0]", "token id array is empty" },
    { "{\"prompt\":[[1,2.5]]}", "prompt[0][1]", "token id" },
    { "{\"prompt\":[true]}", "prompt[0]", "a string, a token id" },
    { "{\"prompt\":\"x\",\"suffix\":\"tail\"}", "suffix", "not supported" },
    { "{\"prompt\":\"x\",\"suffix\":3}", "suffix", "expected a string" },
    { "{\"prompt\":\"x\",\"echo\":\"yes\"}", "echo", "expected a boolean" },
    { "{\"prompt\":\"x\",\"logprobs\":true}", "logprobs", "expected an integer" },
    { "{\"prompt\":\"x\",\"logprobs\":21}", "logprobs", "from 0 to 20" },
    { "{\"prompt\":\"x\",\"best_of\":3,\"n\":2}", "best_of", "from 1 to 2" },
    { "{\"prompt\":\"x\",\"best_of\":2,\"n\":3}", "best_of", "only 1 or the value of 'n'" },
    { "{\"prompt\":\"x\",\"max_tokens\":0}", "max_tokens", "at least 1" },
    { "{\"prompt\":\"x\",\"temperature\":3}", "temperature", "from 0 to 2, but got 3" },
    { "{\"prompt\":\"x\",\"stop\":[\"\"]}", "stop[0]", "must not be empty" },
    { "{\"prompt\":\"x\",\"stream_options\":{}}", "stream_options", "only allowed when 'stream' is true" },
    { "{\"prompt\":\"x\"", "", "could not parse the JSON body" },
};

static void
test_parse(void)
{
    llm_request   req;
    llm_api_error err;
    size_t        i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse(bad[i].body, &req, &err);
        ok(rc == -1 && err.status == 400, "bad[%zu] is a 400", i);
        is_str(err.param, bad[i].param, "bad[%zu] param", i);
        if (!ok(strstr(err.message, bad[i].msg) != NULL, "bad[%zu] message mentions '%s'", i, bad[i].msg)) {
            printf("#   message: %s\n", err.message);
        }
        ok(req.prompt == NULL && req.prompt_ids == NULL, "bad[%zu] leaves nothing behind", i);
    }

    ok(parse("{\"model\":\"m\",\"prompt\":\"Once upon\",\"echo\":true,\"logprobs\":2,\"suffix\":\"\",\"best_of\":1,"
             "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"temperature\":0,\"stop\":\".\"}", &req, &err) == 0,
       "string prompt: %s", err.message);
    is_int(req.api, LLM_API_COMPLETIONS, "api kind");
    ok(req.prompt && strcmp(req.prompt, "Once upon") == 0 && req.prompt_len == 9, "prompt text");
    ok(req.echo == 1 && req.sampling.logprobs == 1 && req.sampling.top_logprobs == 2, "echo and logprobs");
    is_int(req.max_tokens, -1, "max_tokens not given");
    is_int(req.default_max_tokens, 16, "the protocol's default is 16");
    ok(req.stream && req.include_usage && req.n_stop == 1 && req.sampling.temperature == 0, "stream, stop, temperature");
    ok(req.messages == NULL, "no messages for completions");
    llm_request_free(&req);

    ok(parse("{\"prompt\":[\"solo\"],\"max_tokens\":100}", &req, &err) == 0, "list of one string");
    ok(req.prompt && strcmp(req.prompt, "solo") == 0 && req.max_tokens == 100, "prompt and max_tokens");
    llm_request_free(&req);

    ok(parse("{\"prompt\":[1,2,3],\"logprobs\":0}", &req, &err) == 0, "token ids");
    ok(req.n_prompt_ids == 3 && req.prompt_ids[2] == 3 && req.prompt == NULL, "ids kept");
    ok(req.sampling.logprobs == 1 && req.sampling.top_logprobs == 0, "logprobs 0: chosen token only");
    llm_request_free(&req);

    ok(parse("{\"prompt\":[[7,8]]}", &req, &err) == 0, "list of one id array");
    ok(req.n_prompt_ids == 2 && req.prompt_ids[0] == 7, "nested ids kept");
    llm_request_free(&req);

    ok(parse("{\"prompt\":\"\"}", &req, &err) == 0 && req.prompt && req.prompt_len == 0, "empty prompt string accepted");
    llm_request_free(&req);
}

static int
fake_token(void *ctx, int32_t id, char *out, size_t cap)
{
    (void) ctx;
    return snprintf(out, cap, "w%d ", id);
}

static llm_openai_meta meta = { "cmpl-1", 42, "m", NULL, fake_token, NULL, 1 };

#define GETS(o, k) json_string_value(json_object_get((o), (k)))
#define GETI(o, k) json_integer_value(json_object_get((o), (k)))

static void
test_format(void)
{
    llm_buf                       b;
    llm_result                    r;
    llm_token_logprobs            tl[2];
    llm_logprobs_list             lp = { tl, 2 };
    llm_openai_completion_stream  s;
    json_t                       *root, *ch, *l;
    json_error_t                  je;
    char                         *p;
    int                           chunks = 0;

    memset(&r, 0, sizeof(r));
    memset(tl, 0, sizeof(tl));
    r.content = " there";
    r.finish = LLM_FINISH_LENGTH;
    r.usage.prompt_tokens = 2;
    r.usage.completion_tokens = 2;
    tl[0].chosen.id = 1; tl[0].chosen.logprob = -0.25f; tl[0].n_top = 2;
    tl[0].top[0].id = 1; tl[0].top[0].logprob = -0.25f;
    tl[0].top[1].id = 9; tl[0].top[1].logprob = -2.0f;
    tl[1].chosen.id = 2; tl[1].chosen.logprob = -1.5f;

    llm_buf_init(&b);
    ok(llm_openai_completion_response(&b, &meta, &r, 1, &lp, "Hi", 2) == 0, "completion response");
    root = json_loads(b.data, 0, &je);
    ok(root != NULL, "valid JSON");
    is_str(GETS(root, "object"), "text_completion", "object");
    is_str(GETS(root, "id"), "cmpl-1", "id");
    ok(json_is_null(json_object_get(root, "system_fingerprint")), "fingerprint null when not given");
    ch = json_array_get(json_object_get(root, "choices"), 0);
    is_str(GETS(ch, "text"), "Hi there", "echo put before the text");
    is_str(GETS(ch, "finish_reason"), "length", "finish_reason");
    l = json_object_get(ch, "logprobs");
    is_str(json_string_value(json_array_get(json_object_get(l, "tokens"), 1)), "w2 ", "legacy tokens");
    is_near(json_real_value(json_array_get(json_object_get(l, "token_logprobs"), 0)), -0.25, 1e-9, "token_logprobs");
    is_int(json_integer_value(json_array_get(json_object_get(l, "text_offset"), 0)), 2, "offset after echo");
    is_int(json_integer_value(json_array_get(json_object_get(l, "text_offset"), 1)), 5, "offset advances by token bytes");
    is_int(json_object_size(json_array_get(json_object_get(l, "top_logprobs"), 0)), 1, "top_logprobs capped to meta");
    is_near(json_real_value(json_object_get(json_array_get(json_object_get(l, "top_logprobs"), 0), "w1 ")), -0.25, 1e-9,
            "top_logprobs maps token to logprob");
    is_int(GETI(json_object_get(root, "usage"), "total_tokens"), 4, "usage");
    json_decref(root);

    llm_buf_reset(&b);
    llm_openai_completion_stream_init(&s, &meta, 0, 1, 1);
    llm_openai_completion_stream_text(&s, &b, "Hi", 2, NULL);
    llm_openai_completion_stream_text(&s, &b, "", 0, NULL);
    llm_openai_completion_stream_text(&s, &b, " there", 6, &lp);
    llm_openai_completion_stream_finish(&s, &b, LLM_FINISH_STOP_SEQ);
    llm_openai_completion_stream_finish(&s, &b, LLM_FINISH_STOP);
    llm_openai_stream_usage(&b, &meta, "text_completion", &r.usage);
    llm_openai_stream_done(&b);
    for (p = b.data; (p = strstr(p, "data: {")) != NULL; p++) chunks++;
    is_int(chunks, 4, "two text chunks, one finish, one usage");
    p = strstr(b.data, "data: {");
    p = strstr(p + 1, "data: {") + 6;
    *strstr(p, "\n\n") = '\0';
    root = json_loads(p, 0, &je);
    ch = json_array_get(json_object_get(root, "choices"), 0);
    is_str(GETS(root, "object"), "text_completion", "chunk object");
    ok(json_object_get(root, "usage") && json_is_null(json_object_get(root, "usage")), "usage null in chunks");
    is_str(GETS(ch, "text"), " there", "chunk text");
    ok(json_is_null(json_object_get(ch, "finish_reason")), "finish_reason null mid-stream");
    is_int(json_integer_value(json_array_get(json_object_get(json_object_get(ch, "logprobs"), "text_offset"), 0)), 2,
           "stream text_offset continues after earlier text");
    json_decref(root);
    p += strlen(p) + 2;
    ok(strstr(p, "\"finish_reason\":\"stop\"") != NULL, "finish chunk");
    ok(strstr(p, "\"choices\":[]") != NULL && strstr(p, "\"total_tokens\":4") != NULL, "usage chunk");
    ok(strcmp(b.data + b.len - 14, "data: [DONE]\n\n") == 0, "[DONE]");
    llm_buf_free(&b);
}

int
main(void)
{
    llm_api_limits_default(&lim);
    test_parse();
    test_format();
    return done_testing();
}
