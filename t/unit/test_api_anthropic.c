/* Anthropic Messages API: request mapping, validation, message and event shapes. */
#include <string.h>

#include "tap.h"
#include "api/llm_anthropic.h"

static llm_api_limits lim;

/* As the glue does for a request without an anthropic-beta header. */
static int
parse(const char *body, llm_request *req, llm_api_error *err)
{
    memset(err, 0, sizeof(*err));
    if (llm_anthropic_parse_messages(body, strlen(body), &lim, req, err) != 0) {
        return -1;
    }
    if (llm_anthropic_check_thinking_budget(req, NULL, 0, err) != 0) {
        llm_request_free(req);           /* the glue's pool cleanup does this */
        llm_request_init(req);
        return -1;
    }
    return 0;
}

#define MT "\"max_tokens\":100,"
#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
#define TOOL "\"tools\":[{\"name\":\"get\",\"input_schema\":{\"type\":\"object\"}}]"

static const struct {
    const char *body, *param, *msg;
} bad[] = {
    { "{" MSG "}", "max_tokens", "Missing required parameter: 'max_tokens'" },
    { "{\"max_tokens\":0," MSG "}", "max_tokens", "at least 1" },
    { "{\"max_tokens\":\"5\"," MSG "}", "max_tokens", "expected an integer" },
    { "{" MT "\"model\":1," MSG "}", "model", "expected a string" },
    { "{" MT "\"x\":1}", "messages", "Missing required parameter: 'messages'" },
    { "{" MT "\"messages\":[]}", "messages", "non-empty array of messages" },
    { "{" MT "\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", "messages[0].role", "expected 'user', 'assistant' or 'system'" },
    { "{" MT "\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":\"image\"}]}]}", "messages[0].content[0].type", "unsupported content block type" },
    { "{" MT "\"messages\":[{\"content\":\"x\"}]}", "messages[0].role", "Missing required" },
    { "{" MT "\"messages\":[{\"role\":\"user\"}]}", "messages[0].content", "Missing required" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":7}]}", "messages[0].content", "a string or an array of content blocks" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{}}]}]}", "messages[0].content[0].type", "unsupported content block type 'image'" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}", "messages[0].content[0].text", "Missing required" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"x\"}]}]}", "messages[0].content[0].type", "expected a string" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"b\",\"input\":{}}]}]}", "messages[0].content[0].type", "not allowed in a user message" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"content\":\"x\"}]}]}", "messages[0].content[0].tool_use_id", "Missing required" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":[{\"type\":\"image\"}]}]}]}", "messages[0].content[0].content[0].type", "unsupported content block type" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"is_error\":\"yes\"}]}]}", "messages[0].content[0].is_error", "expected a boolean" },
    { "{" MT "\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"name\":\"b\",\"input\":{}}]}]}", "messages[1].content[0].id", "Missing required" },
    { "{" MT "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"b\",\"input\":[]}]}]}", "messages[0].content[0].input", "expected an object" },
    { "{" MT "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"signature\":\"s\"}]}]}", "messages[0].content[0].thinking", "Missing required" },
    { "{" MT "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\"}]}]}", "messages[0].content[0].type", "not allowed in an assistant message" },
    { "{" MT "\"system\":5," MSG "}", "system", "a string or an array of text blocks" },
    { "{" MT "\"system\":[{\"type\":\"image\"}]," MSG "}", "system[0].type", "unsupported content block type" },
    { "{" MT MSG ",\"tools\":{}}", "tools", "expected an array" },
    { "{" MT MSG ",\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}]}", "tools[0].type", "server tools" },
    { "{" MT MSG ",\"tools\":[{\"name\":\"bad name\",\"input_schema\":{}}]}", "tools[0].name", "1 to 64 characters" },
    { "{" MT MSG ",\"tools\":[{\"name\":\"get\"}]}", "tools[0].input_schema", "Missing required" },
    { "{" MT MSG ",\"tools\":[{\"name\":\"get\",\"input_schema\":\"x\"}]}", "tools[0].input_schema", "JSON Schema object" },
    { "{" MT MSG ",\"tools\":[{\"name\":\"get\",\"description\":1,\"input_schema\":{}}]}", "tools[0].description", "expected a string" },
    { "{" MT MSG "," TOOL ",\"tool_choice\":\"auto\"}", "tool_choice", "expected an object" },
    { "{" MT MSG "," TOOL ",\"tool_choice\":{\"type\":\"maybe\"}}", "tool_choice.type", "but got 'maybe'" },
    { "{" MT MSG ",\"tool_choice\":{\"type\":\"any\"}}", "tool_choice.type", "needs 'tools'" },
    { "{" MT MSG "," TOOL ",\"tool_choice\":{\"type\":\"tool\",\"name\":\"put\"}}", "tool_choice.name", "no tool named 'put'" },
    { "{" MT MSG "," TOOL ",\"tool_choice\":{\"type\":\"tool\"}}", "tool_choice.name", "expected a string" },
    { "{" MT MSG "," TOOL ",\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":1}}", "tool_choice.disable_parallel_tool_use", "expected a boolean" },
    { "{" MT MSG ",\"stop_sequences\":\"x\"}", "stop_sequences", "an array of strings" },
    { "{" MT MSG ",\"stop_sequences\":[\"\"]}", "stop_sequences[0]", "must not be empty" },
    { "{" MT MSG ",\"temperature\":1.5}", "temperature", "from 0 to 1" },
    { "{" MT MSG ",\"top_p\":0}", "top_p", "greater than 0" },
    { "{" MT MSG ",\"top_k\":-1}", "top_k", "at least 0" },
    { "{" MT MSG ",\"metadata\":\"u\"}", "metadata", "expected an object" },
    { "{" MT MSG ",\"stream\":1}", "stream", "expected a boolean" },
    { "{" MT MSG ",\"thinking\":true}", "thinking", "expected an object" },
    { "{" MT MSG ",\"thinking\":{\"type\":\"on\"}}", "thinking.type", "but got 'on'" },
    { "{" MT MSG ",\"thinking\":{\"type\":\"enabled\"}}", "thinking.budget_tokens", "Missing required" },
    { "{" MT MSG ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":512}}", "thinking.budget_tokens", "at least 1024" },
    { "{\"max_tokens\":2000," MSG ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2000}}", "thinking.budget_tokens", "less than 'max_tokens' (2000)" },
    { "{" MT MSG ",", "", "could not parse the JSON body" },
};

static void
test_bad(void)
{
    llm_request   req;
    llm_api_error err;
    llm_buf       b;
    size_t        i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse(bad[i].body, &req, &err);
        ok(rc == -1 && err.status == 400, "bad[%zu] is a 400", i);
        is_str(err.param, bad[i].param, "bad[%zu] param", i);
        if (!ok(strstr(err.message, bad[i].msg) != NULL, "bad[%zu] message mentions '%s'", i, bad[i].msg)) {
            printf("#   message: %s\n", err.message);
        }
        ok(req.messages == NULL && req.tools == NULL, "bad[%zu] leaves the request empty", i);
    }

    /* error body in Anthropic's shape */
    parse("{" MSG "}", &req, &err);
    llm_buf_init(&b);
    llm_anthropic_error_json(&b, &err, "req_9");
    {
        json_t *root = json_loads(b.data, 0, NULL);
        json_t *e = json_object_get(root, "error");
        is_str(json_string_value(json_object_get(root, "type")), "error", "type error");
        is_str(json_string_value(json_object_get(e, "type")), "invalid_request_error", "error.type");
        ok(strstr(json_string_value(json_object_get(e, "message")), "max_tokens") != NULL, "error.message");
        is_str(json_string_value(json_object_get(root, "request_id")), "req_9", "request_id beside error");
        json_decref(root);
    }
    llm_buf_free(&b);
    is_str(llm_anthropic_error_type(401), "authentication_error", "401");
    is_str(llm_anthropic_error_type(403), "permission_error", "403");
    is_str(llm_anthropic_error_type(404), "not_found_error", "404");
    is_str(llm_anthropic_error_type(413), "request_too_large", "413");
    is_str(llm_anthropic_error_type(429), "rate_limit_error", "429");
    is_str(llm_anthropic_error_type(500), "api_error", "500");
    is_str(llm_anthropic_error_type(529), "overloaded_error", "529");

    /* limits */
    {
        llm_api_limits small = lim;
        const char *body = "{" MT "\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]," TOOL "}";
        small.max_messages = 1;
        ok(llm_anthropic_parse_messages(body, strlen(body), &small, &req, &err) == -1
           && strstr(err.message, "at most 1 messages"), "message limit: %s", err.message);
        small = lim;
        small.max_tools = 0;
        small.max_depth = 3;
        ok(llm_anthropic_parse_messages(body, strlen(body), &small, &req, &err) == -1
           && strstr(err.message, "3 levels"), "depth limit: %s", err.message);
    }
}

static json_t *
msg(const llm_request *req, size_t i)
{
    return json_array_get(req->messages, i);
}

#define GETS(o, k) json_string_value(json_object_get((o), (k)))
#define GETI(o, k) json_integer_value(json_object_get((o), (k)))

static void
test_good(void)
{
    llm_request   req;
    llm_api_error err;
    json_t       *m, *tc;
    const char   *body =
        "{\"model\":\"claude-x\",\"max_tokens\":4096,"
        "\"system\":[{\"type\":\"text\",\"text\":\"You are terse.\",\"cache_control\":{\"type\":\"ephemeral\"}},{\"type\":\"text\",\"text\":\"Second.\"}],"
        "\"messages\":["
        " {\"role\":\"user\",\"content\":\"weather?\"},"
        " {\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"need tool\",\"signature\":\"sig\"},"
        "   {\"type\":\"redacted_thinking\",\"data\":\"xx\"},{\"type\":\"text\",\"text\":\"Checking.\"},"
        "   {\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get\",\"input\":{\"city\":\"Paris\"}},"
        "   {\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"get\",\"input\":{\"city\":\"Rome\"}}]},"
        " {\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"thanks\"},"
        "   {\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":\"sunny\"},"
        "   {\"type\":\"tool_result\",\"tool_use_id\":\"toolu_2\",\"content\":[{\"type\":\"text\",\"text\":\"rain\"},{\"type\":\"text\",\"text\":\"cold\"}],\"is_error\":false}]}],"
        "\"tools\":[{\"name\":\"get\",\"description\":\"weather\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}},"
        "  {\"type\":\"custom\",\"name\":\"put\",\"input_schema\":{}}],"
        "\"tool_choice\":{\"type\":\"tool\",\"name\":\"put\",\"disable_parallel_tool_use\":true},"
        "\"stop_sequences\":[\"END\"],\"temperature\":0.3,\"top_p\":0.8,\"top_k\":20,"
        "\"metadata\":{\"user_id\":\"u1\"},\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},\"stream\":true,\"service_tier\":\"auto\"}";

    ok(parse(body, &req, &err) == 0, "full request parses: %s", err.message);
    is_int(req.api, LLM_API_MESSAGES, "api kind");
    is_str(req.model, "claude-x", "model");
    is_int(req.max_tokens, 4096, "max_tokens");
    is_int(json_array_size(req.messages), 6, "system, user, assistant, tool, tool, user");
    ok(strcmp(GETS(msg(&req, 0), "role"), "system") == 0
       && strcmp(GETS(msg(&req, 0), "content"), "You are terse.\nSecond.") == 0, "system blocks joined");
    is_str(GETS(msg(&req, 1), "content"), "weather?", "user string content");
    m = msg(&req, 2);
    is_str(GETS(m, "role"), "assistant", "assistant");
    is_str(GETS(m, "content"), "Checking.", "assistant text");
    is_str(GETS(m, "reasoning_content"), "need tool", "thinking becomes reasoning_content");
    tc = json_object_get(m, "tool_calls");
    is_int(json_array_size(tc), 2, "two tool calls");
    is_str(GETS(json_array_get(tc, 1), "id"), "toolu_2", "tool call id");
    is_str(GETS(json_array_get(tc, 0), "type"), "function", "tool call type");
    is_str(GETS(json_object_get(json_array_get(tc, 0), "function"), "name"), "get", "tool call name");
    is_str(GETS(json_object_get(json_object_get(json_array_get(tc, 0), "function"), "arguments"), "city"), "Paris",
           "input becomes arguments object");
    ok(strcmp(GETS(msg(&req, 3), "role"), "tool") == 0 && strcmp(GETS(msg(&req, 3), "tool_call_id"), "toolu_1") == 0
       && strcmp(GETS(msg(&req, 3), "content"), "sunny") == 0, "first tool_result -> tool message");
    ok(strcmp(GETS(msg(&req, 4), "tool_call_id"), "toolu_2") == 0
       && strcmp(GETS(msg(&req, 4), "content"), "rain\ncold") == 0, "block content joined");
    ok(strcmp(GETS(msg(&req, 5), "role"), "user") == 0 && strcmp(GETS(msg(&req, 5), "content"), "thanks") == 0,
       "remaining user text after the tool messages");
    is_int(json_array_size(req.tools), 2, "two tools");
    tc = json_object_get(json_array_get(req.tools, 0), "function");
    ok(strcmp(GETS(tc, "name"), "get") == 0 && strcmp(GETS(tc, "description"), "weather") == 0
       && json_is_object(json_object_get(json_object_get(tc, "parameters"), "properties")),
       "input_schema becomes parameters");
    is_str(GETS(json_array_get(req.tools, 0), "type"), "function", "tool type function");
    ok(req.tool_choice == LLM_TOOL_CHOICE_NAMED && strcmp(req.tool_choice_name, "put") == 0, "tool choice tool -> named");
    is_int(req.parallel_tool_calls, 0, "disable_parallel_tool_use");
    ok(req.n_stop == 1 && strcmp(req.stop[0], "END") == 0, "stop_sequences");
    is_near(req.sampling.temperature, 0.3, 1e-9, "temperature");
    is_near(req.sampling.top_p, 0.8, 1e-9, "top_p");
    is_int(req.sampling.top_k, 20, "top_k");
    is_int(req.sampling.set, LLM_SAMPLING_SET_TEMPERATURE | LLM_SAMPLING_SET_TOP_P | LLM_SAMPLING_SET_TOP_K,
           "temperature, top_p and top_k recorded as set");
    is_str(GETS(req.metadata, "user_id"), "u1", "metadata");
    is_int(req.reasoning, 1, "thinking enabled");
    is_int(req.stream, 1, "stream");
    llm_request_free(&req);

    ok(parse("{" MT MSG "," TOOL ",\"tool_choice\":{\"type\":\"any\"},\"thinking\":{\"type\":\"disabled\"}}", &req, &err) == 0, "any");
    ok(req.tool_choice == LLM_TOOL_CHOICE_REQUIRED && req.reasoning == 0 && req.parallel_tool_calls == 1, "any -> required, thinking off");
    is_int(json_array_size(req.messages), 1, "no system message without system");
    llm_request_free(&req);
    ok(parse("{" MT MSG "," TOOL ",\"tool_choice\":{\"type\":\"none\"}}", &req, &err) == 0
       && req.tool_choice == LLM_TOOL_CHOICE_NONE, "none");
    llm_request_free(&req);
    ok(parse("{" MT "\"system\":\"sys\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\"}]}]}", &req, &err) == 0,
       "tool_result without content");
    ok(json_array_size(req.messages) == 2 && strcmp(GETS(msg(&req, 1), "role"), "tool") == 0
       && strcmp(GETS(msg(&req, 1), "content"), "") == 0, "only a tool message, empty content");
    ok(req.reasoning == 0 && req.sampling.temperature == 1.0 && req.sampling.set == 0, "defaults: no thinking unless enabled, temperature 1");
    llm_request_free(&req);

    /* adaptive thinking: reasoning on; output_config.effort checked */
    ok(parse("{" MT MSG ",\"thinking\":{\"type\":\"adaptive\"}}", &req, &err) == 0 && req.reasoning == 1,
       "thinking adaptive turns reasoning on: %s", err.message);
    llm_request_free(&req);
    ok(parse("{" MT MSG ",\"thinking\":{\"type\":\"adaptive\",\"display\":\"summarized\"},\"output_config\":{\"effort\":\"high\"}}", &req, &err) == 0
       && req.reasoning == 1, "adaptive with display and output_config.effort: %s", err.message);
    llm_request_free(&req);
    ok(parse("{" MT MSG ",\"thinking\":{\"type\":\"adaptive\"},\"output_config\":{\"effort\":\"extreme\"}}", &req, &err) == -1
       && strcmp(err.param, "output_config.effort") == 0 && strstr(err.message, "'low', 'medium', 'high', 'max'"), "an unknown effort is a 400");
    ok(parse("{" MT MSG ",\"thinking\":{\"type\":\"adaptive\",\"display\":3}}", &req, &err) == -1
       && strcmp(err.param, "thinking.display") == 0, "a non-string display is a 400");
    ok(parse("{" MT MSG ",\"thinking\":{\"type\":\"sometimes\"}}", &req, &err) == -1
       && strstr(err.message, "'enabled', 'adaptive' or 'disabled'"), "an unknown thinking type names the three");

    /* budget >= max_tokens: allowed with an interleaved-thinking beta */
    {
        static const char *beta_ok[] = { "interleaved-thinking-2025-05-14",
            "fine-grained-tool-streaming-2025-05-14, interleaved-thinking-2025-05-14",
            " interleaved-thinking-2025-05-14 ,x" };
        static const char *beta_no[] = { "", "fine-grained-tool-streaming-2025-05-14",
            "interleaved-thinking-", "x-interleaved-thinking-2025" };
        const char *b = "{\"max_tokens\":2000," MSG ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":16000}}";
        size_t      k;

        ok(llm_anthropic_parse_messages(b, strlen(b), &lim, &req, &err) == 0 && req.thinking_budget == 16000,
           "the parser keeps the budget in the IR");
        for (k = 0; k < sizeof(beta_ok) / sizeof(beta_ok[0]); k++) {
            ok(llm_anthropic_check_thinking_budget(&req, beta_ok[k], strlen(beta_ok[k]), &err) == 0,
               "budget >= max_tokens with anthropic-beta '%s'", beta_ok[k]);
        }
        for (k = 0; k < sizeof(beta_no) / sizeof(beta_no[0]); k++) {
            ok(llm_anthropic_check_thinking_budget(&req, beta_no[k], strlen(beta_no[k]), &err) == -1
               && strcmp(err.param, "thinking.budget_tokens") == 0,
               "budget >= max_tokens is a 400 with anthropic-beta '%s'", beta_no[k]);
        }
        ok(llm_anthropic_check_thinking_budget(&req, NULL, 0, &err) == -1, "and without the header");
        llm_request_free(&req);
    }

    /* a system message inside messages is a system turn in place */
    ok(parse("{" MT "\"system\":\"top\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"mid\"},{\"type\":\"text\",\"text\":\"two\"}]},{\"role\":\"user\",\"content\":\"b\"}]}", &req, &err) == 0,
       "role system inside messages is accepted: %s", err.message);
    ok(json_array_size(req.messages) == 4 && strcmp(GETS(msg(&req, 0), "content"), "top") == 0
       && strcmp(GETS(msg(&req, 2), "role"), "system") == 0 && strcmp(GETS(msg(&req, 2), "content"), "mid\ntwo") == 0
       && strcmp(GETS(msg(&req, 3), "role"), "user") == 0, "mapped to a system message in place");
    llm_request_free(&req);

    /* a final assistant message with text is a prefill to continue */
    ok(parse("{" MT "\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"{\\\"x\\\":\"}]}]}", &req, &err) == 0
       && req.continue_final_message == 1 && req.add_generation_prompt == 0, "assistant prefill is continued: %s", err.message);
    llm_request_free(&req);
    ok(parse("{" MT "\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\" \"}]}", &req, &err) == 0
       && req.continue_final_message == 0 && req.add_generation_prompt == 1, "a blank final assistant message is not a prefill");
    llm_request_free(&req);
    ok(parse("{" MT MSG "}", &req, &err) == 0 && req.continue_final_message == 0, "a final user message: a new turn");
    llm_request_free(&req);

    body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"count me\"}],\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":4096}}";
    ok(llm_anthropic_parse_count_tokens(body, strlen(body), &lim, &req, &err) == 0, "count_tokens needs no max_tokens");
    ok(req.api == LLM_API_COUNT_TOKENS && req.max_tokens == -1 && req.reasoning == 1, "count_tokens request");
    llm_request_free(&req);
}

static void
test_response(void)
{
    llm_buf            b;
    llm_result         r;
    llm_tool_call      calls[1] = { { "call_abc", "get", "{\"city\":\"Paris\"}" } };
    llm_anthropic_meta meta = { "msg_1", "claude-x", NULL };
    json_t            *root, *c, *u;

    memset(&r, 0, sizeof(r));
    r.reasoning = "hmm";
    r.content = "Sure.";
    r.tool_calls = calls;
    r.n_tool_calls = 1;
    r.finish = LLM_FINISH_TOOL_CALLS;
    r.usage.prompt_tokens = 30;
    r.usage.cached_tokens = 10;
    r.usage.completion_tokens = 12;
    llm_buf_init(&b);
    ok(llm_anthropic_message_response(&b, &meta, &r) == 0, "message formats");
    root = json_loads(b.data, 0, NULL);
    ok(root != NULL, "valid JSON");
    is_str(GETS(root, "id"), "msg_1", "id");
    is_str(GETS(root, "type"), "message", "type");
    is_str(GETS(root, "role"), "assistant", "role");
    is_str(GETS(root, "model"), "claude-x", "model");
    is_str(GETS(root, "stop_reason"), "tool_use", "stop_reason tool_use");
    ok(json_is_null(json_object_get(root, "stop_sequence")), "stop_sequence null");
    c = json_object_get(root, "content");
    is_int(json_array_size(c), 3, "three blocks");
    ok(strcmp(GETS(json_array_get(c, 0), "type"), "thinking") == 0
       && strcmp(GETS(json_array_get(c, 0), "thinking"), "hmm") == 0
       && json_is_string(json_object_get(json_array_get(c, 0), "signature")), "thinking block first");
    ok(strcmp(GETS(json_array_get(c, 1), "type"), "text") == 0
       && strcmp(GETS(json_array_get(c, 1), "text"), "Sure.") == 0, "text block");
    ok(strcmp(GETS(json_array_get(c, 2), "type"), "tool_use") == 0
       && strcmp(GETS(json_array_get(c, 2), "id"), "toolu_abc") == 0
       && strcmp(GETS(json_array_get(c, 2), "name"), "get") == 0
       && strcmp(GETS(json_object_get(json_array_get(c, 2), "input"), "city"), "Paris") == 0,
       "tool_use block with toolu_ id and input object");
    u = json_object_get(root, "usage");
    ok(GETI(u, "input_tokens") == 20 && GETI(u, "cache_read_input_tokens") == 10
       && GETI(u, "cache_creation_input_tokens") == 0 && GETI(u, "output_tokens") == 12, "usage");
    json_decref(root);

    llm_buf_reset(&b);
    memset(&r, 0, sizeof(r));
    r.content = "x";
    r.finish = LLM_FINISH_STOP_SEQ;
    r.stop_sequence = "END";
    llm_anthropic_message_response(&b, &meta, &r);
    root = json_loads(b.data, 0, NULL);
    ok(strcmp(GETS(root, "stop_reason"), "stop_sequence") == 0 && strcmp(GETS(root, "stop_sequence"), "END") == 0,
       "stop_sequence reported");
    is_int(json_array_size(json_object_get(root, "content")), 1, "text only");
    json_decref(root);
    llm_buf_reset(&b);
    r.finish = LLM_FINISH_LENGTH;
    llm_anthropic_message_response(&b, &meta, &r);
    ok(strstr(b.data, "\"stop_reason\":\"max_tokens\"") && strstr(b.data, "\"stop_sequence\":null"), "max_tokens");
    llm_buf_reset(&b);
    r.finish = LLM_FINISH_STOP;
    llm_anthropic_message_response(&b, &meta, &r);
    ok(strstr(b.data, "\"stop_reason\":\"end_turn\"") != NULL, "end_turn");

    llm_buf_reset(&b);
    llm_anthropic_count_tokens_json(&b, 57);
    is_str(b.data, "{\"input_tokens\":57}", "count_tokens body");
    llm_buf_free(&b);
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
    llm_buf              b;
    llm_anthropic_stream s;
    llm_anthropic_meta   meta = { "msg_2", "claude-x", NULL };
    llm_usage            u = { 30, 9, 10, 0, 0 };
    llm_event            e;
    const char          *want[] = {
        "message_start", "content_block_start", "ping", "content_block_delta",
        "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_stop",
        "message_delta", "message_stop"
    };
    json_t              *data[32];
    char                 names[32][32], args[128] = "";
    const char          *p;
    size_t               n = 0, i;

    llm_buf_init(&b);
    llm_anthropic_stream_init(&s, &meta);
    llm_anthropic_stream_start(&s, &b, &u);
    e = ev(LLM_EV_REASONING, 0, NULL, NULL, "think ");
    llm_anthropic_stream_event(&s, &b, &e);
    e = ev(LLM_EV_REASONING, 0, NULL, NULL, "more");
    llm_anthropic_stream_event(&s, &b, &e);
    e = ev(LLM_EV_CONTENT, 0, NULL, NULL, "Hello");
    llm_anthropic_stream_event(&s, &b, &e);
    e = ev(LLM_EV_CONTENT, 0, NULL, NULL, "");
    llm_anthropic_stream_event(&s, &b, &e);
    e = ev(LLM_EV_TOOL_BEGIN, 0, "call_z", "get", NULL);
    llm_anthropic_stream_event(&s, &b, &e);
    e = ev(LLM_EV_TOOL_ARGS, 0, NULL, NULL, "{\"city\":");
    llm_anthropic_stream_event(&s, &b, &e);
    e = ev(LLM_EV_TOOL_ARGS, 0, NULL, NULL, "\"Paris\"}");
    llm_anthropic_stream_event(&s, &b, &e);
    e = ev(LLM_EV_TOOL_END, 0, NULL, NULL, NULL);
    llm_anthropic_stream_event(&s, &b, &e);
    e = ev(LLM_EV_TOOL_BEGIN, 1, "toolu_y", "get", NULL);
    llm_anthropic_stream_event(&s, &b, &e);
    ok(llm_anthropic_stream_finish(&s, &b, LLM_FINISH_TOOL_CALLS, NULL, &u) == 0, "stream formats");
    llm_anthropic_stream_finish(&s, &b, LLM_FINISH_TOOL_CALLS, NULL, &u);
    e = ev(LLM_EV_CONTENT, 0, NULL, NULL, "late");
    llm_anthropic_stream_event(&s, &b, &e);

    for (p = b.data; *p && n < 32; n++) {
        const char *nl = strchr(p, '\n'), *end;
        char        tmp[2048];
        if (strncmp(p, "event: ", 7) != 0 || nl == NULL || strncmp(nl + 1, "data: ", 6) != 0) {
            break;
        }
        snprintf(names[n], sizeof(names[n]), "%.*s", (int) (nl - p - 7), p + 7);
        end = strstr(nl, "\n\n");
        snprintf(tmp, sizeof(tmp), "%.*s", (int) (end - nl - 7), nl + 7);
        data[n] = json_loads(tmp, 0, NULL);
        p = end + 2;
    }
    is_int(n, sizeof(want) / sizeof(want[0]), "event count (late and duplicate calls add nothing)");
    for (i = 0; i < n && i < sizeof(want) / sizeof(want[0]); i++) {
        ok(strcmp(names[i], want[i]) == 0 && data[i]
           && strcmp(GETS(data[i], "type"), names[i]) == 0,
           "event %zu is %s with matching data type (got %s)", i, want[i], names[i]);
    }
    if (n == sizeof(want) / sizeof(want[0])) {
        json_t *m = json_object_get(data[0], "message");
        ok(strcmp(GETS(m, "id"), "msg_2") == 0 && json_array_size(json_object_get(m, "content")) == 0
           && json_is_null(json_object_get(m, "stop_reason"))
           && GETI(json_object_get(m, "usage"), "input_tokens") == 20
           && GETI(json_object_get(m, "usage"), "cache_read_input_tokens") == 10, "message_start body");
        ok(GETI(data[1], "index") == 0 && strcmp(GETS(json_object_get(data[1], "content_block"), "type"), "thinking") == 0,
           "block 0 thinking");
        ok(strcmp(GETS(json_object_get(data[3], "delta"), "type"), "thinking_delta") == 0
           && strcmp(GETS(json_object_get(data[4], "delta"), "thinking"), "more") == 0, "thinking deltas");
        ok(strcmp(GETS(json_object_get(data[5], "delta"), "type"), "signature_delta") == 0, "signature_delta closes thinking");
        ok(GETI(data[6], "index") == 0, "stop of block 0");
        ok(GETI(data[7], "index") == 1 && strcmp(GETS(json_object_get(data[7], "content_block"), "type"), "text") == 0,
           "block 1 text");
        ok(strcmp(GETS(json_object_get(data[8], "delta"), "type"), "text_delta") == 0
           && strcmp(GETS(json_object_get(data[8], "delta"), "text"), "Hello") == 0, "text_delta");
        ok(GETI(data[10], "index") == 2 && strcmp(GETS(json_object_get(data[10], "content_block"), "type"), "tool_use") == 0
           && strcmp(GETS(json_object_get(data[10], "content_block"), "id"), "toolu_z") == 0
           && strcmp(GETS(json_object_get(data[10], "content_block"), "name"), "get") == 0
           && json_object_size(json_object_get(json_object_get(data[10], "content_block"), "input")) == 0,
           "block 2 tool_use with empty input");
        for (i = 11; i <= 12; i++) {
            ok(strcmp(GETS(json_object_get(data[i], "delta"), "type"), "input_json_delta") == 0, "input_json_delta %zu", i);
            strcat(args, GETS(json_object_get(data[i], "delta"), "partial_json"));
        }
        is_str(args, "{\"city\":\"Paris\"}", "partial_json concatenates to the input");
        ok(GETI(data[14], "index") == 3 && strcmp(GETS(json_object_get(data[14], "content_block"), "id"), "toolu_y") == 0,
           "block 3, toolu_ id kept");
        ok(GETI(data[15], "index") == 3, "open block closed at finish");
        ok(strcmp(GETS(json_object_get(data[16], "delta"), "stop_reason"), "tool_use") == 0
           && json_is_null(json_object_get(json_object_get(data[16], "delta"), "stop_sequence"))
           && GETI(json_object_get(data[16], "usage"), "output_tokens") == 9, "message_delta");
        ok(GETI(json_object_get(data[16], "usage"), "cache_read_input_tokens") == 10
           && GETI(json_object_get(data[16], "usage"), "input_tokens") == 20
           && GETI(json_object_get(data[16], "usage"), "cache_creation_input_tokens") == 0,
           "message_delta usage reports the cache reads and the uncached input, as the message does");
    }
    for (i = 0; i < n; i++) json_decref(data[i]);

    /* an error event */
    llm_buf_reset(&b);
    {
        llm_api_error err;
        llm_api_error_set(&err, 529, "overloaded_error", NULL, NULL, "Overloaded");
        llm_anthropic_stream_error(&b, &err);
        ok(strncmp(b.data, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", b.len) == 0
           && b.len > 20, "error event");
    }
    /* finish without any event still sends a complete message */
    llm_buf_reset(&b);
    llm_anthropic_stream_init(&s, &meta);
    llm_anthropic_stream_finish(&s, &b, LLM_FINISH_STOP_SEQ, "END", &u);
    ok(strstr(b.data, "event: message_start") == b.data && strstr(b.data, "\"stop_sequence\":\"END\"")
       && strstr(b.data, "content_block") == NULL && strstr(b.data, "event: message_stop"),
       "empty stream: start, delta with stop_sequence, stop");
    llm_buf_free(&b);
}

/* tool_use and tool_result blocks per message are bounded (each becomes a call or a message) */
static void
test_tool_call_bounds(void)
{
    static char   body[65536];
    llm_request   req;
    llm_api_error err;
    int           i, k, n;

    for (k = 0; k < 2; k++) {
        int count = 129;
        n = sprintf(body, "{" MT "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":[");
        for (i = 0; i < count; i++) {
            n += sprintf(body + n, "%s{\"type\":\"tool_use\",\"id\":\"t%d\",\"name\":\"get\",\"input\":{}}", i ? "," : "", i);
        }
        n += sprintf(body + n, "]},{\"role\":\"user\",\"content\":[");
        for (i = 0; i < (k ? count : 1); i++) {
            n += sprintf(body + n, "%s{\"type\":\"tool_result\",\"tool_use_id\":\"t%d\",\"content\":\"r\"}", i ? "," : "", i);
        }
        sprintf(body + n, "]}]}");
        if (k == 0) {
            ok(parse(body, &req, &err) == -1 && err.status == 400 && strcmp(err.param, "messages[1].content") == 0
               && strstr(err.message, "at most 128 tool_use blocks") != NULL, "129 tool_use blocks in a message are a 400: %s", err.message);
        } else {
            /* 128 calls, 129 results */
            char *last = strstr(body, ",{\"type\":\"tool_use\",\"id\":\"t128\"");
            memmove(last, strchr(last + 1, '}') + 2, strlen(strchr(last + 1, '}') + 2) + 1);
            ok(parse(body, &req, &err) == -1 && strcmp(err.param, "messages[2].content") == 0
               && strstr(err.message, "at most 128 tool_result blocks") != NULL, "129 tool_result blocks are a 400: %s", err.message);
        }
        llm_request_free(&req);
    }
}

int
main(void)
{
    llm_api_limits_default(&lim);
    test_bad();
    test_tool_call_bounds();
    test_good();
    test_response();
    test_stream();
    return done_testing();
}
