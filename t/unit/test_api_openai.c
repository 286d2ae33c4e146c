/* OpenAI chat request parsing: accepted shapes and every validation rule. */
#include <string.h>

#include "tap.h"
#include "api/llm_openai.h"

static llm_api_limits lim;

static int
parse(const char *body, llm_request *req, llm_api_error *err)
{
    memset(err, 0, sizeof(*err));
    return llm_openai_parse_chat(body, strlen(body), &lim, req, err);
}

#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

/* body, expected param ("" = none), substring of the message */
static const struct {
    const char *body, *param, *msg;
} bad[] = {
    { "{", "", "We could not parse the JSON body of your request" },
    { "[1]", "", "must be an object" },
    { "", "", "We could not parse the JSON body" },
    { "{\"model\":\"m\"}", "messages", "Missing required parameter" },
    { "{\"messages\":[]}", "messages", "non-empty array" },
    { "{\"messages\":{}}", "messages", "expected an array" },
    { "{\"messages\":[1]}", "messages[0]", "expected an object" },
    { "{\"messages\":[{\"content\":\"x\"}]}", "messages[0].role", "Missing required" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"b\"},{\"role\":\"bot\",\"content\":\"x\"}]}",
      "messages[2].role", "but got 'bot'" },
    { "{\"messages\":[{\"role\":3,\"content\":\"x\"}]}", "messages[0].role", "expected a string, but got an integer" },
    { "{\"messages\":[{\"role\":\"user\"}]}", "messages[0].content", "Missing required" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content", "a string or an array of content parts, but got an integer" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]}]}",
      "messages[0].content[0].type", "unsupported content part type" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]}",
      "messages[0].content[0].type", "unsupported content part type" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}",
      "messages[0].content[0].text", "expected a string" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":[\"x\"]}]}",
      "messages[0].content[0]", "content part object" },
    { "{\"messages\":[{\"role\":\"tool\",\"content\":\"r\"}]}", "messages[0].tool_call_id", "Missing required" },
    { "{\"messages\":[{\"role\":\"tool\",\"content\":\"r\",\"tool_call_id\":1}]}", "messages[0].tool_call_id", "expected a string" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"name\":1}]}", "messages[0].name", "expected a string" },
    { "{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{bad\"}}]}]}",
      "messages[0].tool_calls[0].function.arguments", "could not be parsed" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"[1]\"}}]}]}",
      "messages[1].tool_calls[0].function.arguments", "encodes an array" },
    { "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}]}",
      "messages[0].tool_calls[0].id", "expected a string" },
    { "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":{\"arguments\":\"{}\"}}]}]}",
      "messages[0].tool_calls[0].function.name", "expected a string" },
    { "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"x\",\"function\":{\"name\":\"f\"}}]}]}",
      "messages[0].tool_calls[0].type", "expected 'function'" },
    { "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":{}}]}", "messages[0].tool_calls", "expected an array" },
    { "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":7}]}", "messages[0].reasoning_content", "expected a string" },
    { "{" MSG ",\"model\":5}", "model", "expected a string" },
    { "{" MSG ",\"max_tokens\":0}", "max_tokens", "at least 1, but got 0" },
    { "{" MSG ",\"max_tokens\":-5}", "max_tokens", "but got -5" },
    { "{" MSG ",\"max_tokens\":\"5\"}", "max_tokens", "expected an integer, but got a string" },
    { "{" MSG ",\"max_tokens\":2.5}", "max_tokens", "expected an integer" },
    { "{" MSG ",\"max_completion_tokens\":0}", "max_completion_tokens", "at least 1" },
    { "{" MSG ",\"temperature\":2.5}", "temperature", "but got 2.5" },
    { "{" MSG ",\"temperature\":-0.1}", "temperature", "from 0" },
    { "{" MSG ",\"temperature\":\"hot\"}", "temperature", "expected a number, but got a string" },
    { "{" MSG ",\"top_p\":0}", "top_p", "greater than 0" },
    { "{" MSG ",\"top_p\":1.5}", "top_p", "at most 1" },
    { "{" MSG ",\"n\":0}", "n", "from 1 to 8" },
    { "{" MSG ",\"n\":9}", "n", "but got 9" },
    { "{" MSG ",\"stop\":\"\"}", "stop", "must not be empty" },
    { "{" MSG ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop", "at most 4" },
    { "{" MSG ",\"stop\":[\"a\",2]}", "stop[1]", "expected a string" },
    { "{" MSG ",\"stop\":[\"a\",\"\"]}", "stop[1]", "must not be empty" },
    { "{" MSG ",\"stop\":5}", "stop", "a string or an array of strings" },
    { "{" MSG ",\"seed\":1.5}", "seed", "expected an integer" },
    { "{" MSG ",\"presence_penalty\":3}", "presence_penalty", "but got 3" },
    { "{" MSG ",\"frequency_penalty\":-2.1}", "frequency_penalty", "from -2" },
    { "{" MSG ",\"logit_bias\":[]}", "logit_bias", "expected an object" },
    { "{" MSG ",\"logit_bias\":{\"abc\":1}}", "logit_bias", "token id" },
    { "{" MSG ",\"logit_bias\":{\"-1\":1}}", "logit_bias", "token id" },
    { "{" MSG ",\"logit_bias\":{\"50\":101}}", "logit_bias.50", "from -100 to 100" },
    /* ids that would wrap around in 32 bits onto a real token */
    { "{" MSG ",\"logit_bias\":{\"4294967296\":1}}", "logit_bias", "from 0 to 2147483647, but got '4294967296'" },
    { "{" MSG ",\"logit_bias\":{\"2147483648\":1}}", "logit_bias", "from 0 to 2147483647" },
    { "{" MSG ",\"logit_bias\":{\"12345678901\":1}}", "logit_bias", "from 0 to 2147483647" },
    { "{" MSG ",\"logit_bias\":{\"+5\":1}}", "logit_bias", "token id" },
    { "{" MSG ",\"logit_bias\":{\"5 \":1}}", "logit_bias", "token id" },
    { "{" MSG ",\"logit_bias\":{\"50\":\"x\"}}", "logit_bias.50", "expected a number" },
    { "{" MSG ",\"logprobs\":1}", "logprobs", "expected a boolean" },
    { "{" MSG ",\"top_logprobs\":3}", "top_logprobs", "requires 'logprobs'" },
    { "{" MSG ",\"logprobs\":true,\"top_logprobs\":21}", "top_logprobs", "from 0 to 20" },
    { "{" MSG ",\"user\":1}", "user", "expected a string" },
    { "{" MSG ",\"stream\":\"yes\"}", "stream", "expected a boolean" },
    { "{" MSG ",\"stream_options\":{\"include_usage\":true}}", "stream_options", "only allowed when 'stream' is true" },
    { "{" MSG ",\"stream\":true,\"stream_options\":{\"include_usage\":1}}", "stream_options.include_usage", "expected a boolean" },
    { "{" MSG ",\"stream\":true,\"stream_options\":1}", "stream_options", "expected an object" },
    { "{" MSG ",\"response_format\":{\"type\":\"xml\"}}", "response_format.type", "but got 'xml'" },
    { "{" MSG ",\"response_format\":{\"type\":\"json_schema\"}}", "response_format.json_schema", "expected an object" },
    { "{" MSG ",\"response_format\":\"json\"}", "response_format", "expected an object" },
    { "{" MSG ",\"top_k\":-2}", "top_k", "but got -2" },
    { "{" MSG ",\"min_p\":1.5}", "min_p", "from 0 to 1" },
    { "{" MSG ",\"repetition_penalty\":0}", "repetition_penalty", "expected a number greater than 0, but got 0" },
    { "{" MSG ",\"chat_template_kwargs\":[]}", "chat_template_kwargs", "expected an object" },
    { "{" MSG ",\"chat_template_kwargs\":{\"enable_thinking\":\"no\"}}", "chat_template_kwargs.enable_thinking", "expected a boolean" },
    { "{" MSG ",\"reasoning_effort\":\"max\"}", "reasoning_effort", "but got 'max'" },
    { "{" MSG ",\"continue_final_message\":true}", "continue_final_message", "must be an assistant message" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}],\"continue_final_message\":true,\"add_generation_prompt\":true}",
      "continue_final_message", "cannot be true together with 'add_generation_prompt'" },
    { "{" MSG ",\"continue_final_message\":1}", "continue_final_message", "expected a boolean" },
    { "{" MSG ",\"add_generation_prompt\":\"yes\"}", "add_generation_prompt", "expected a boolean" },
    { "{" MSG ",\"parallel_tool_calls\":\"no\"}", "parallel_tool_calls", "expected a boolean" },
    { "{" MSG ",\"tools\":{}}", "tools", "expected an array" },
    { "{" MSG ",\"tools\":[{\"type\":\"retrieval\"}]}", "tools[0].type", "expected 'function'" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\"}]}", "tools[0].function", "expected an object" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{}}]}", "tools[0].function.name", "expected a string" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"has space\"}}]}", "tools[0].function.name", "1 to 64 characters" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"\"}}]}", "tools[0].function.name", "1 to 64 characters" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a123456789012345678901234567890123456789012345678901234567890123x\"}}]}", "tools[0].function.name", "1 to 64 characters" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":[]}}]}", "tools[0].function.parameters", "JSON Schema object" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":5}}]}", "tools[0].function.description", "expected a string" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}", "tools[1].function.name", "already used" },
    { "{" MSG ",\"tool_choice\":\"always\"}", "tool_choice", "but got 'always'" },
    { "{" MSG ",\"tool_choice\":\"required\"}", "tool_choice", "needs 'tools'" },
    { "{" MSG ",\"tool_choice\":5}", "tool_choice", "a string or an object" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}",
      "tool_choice.function.name", "no tool named 'g'" },
    { "{" MSG ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", "tool_choice.function.name", "no tool named" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":\"fn\"}}", "tool_choice.type", "expected 'function'" },
    { "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":\"function\"}}", "tool_choice.function", "expected an object" },
};

static void
test_bad(void)
{
    llm_request   req;
    llm_api_error err;
    size_t        i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse(bad[i].body, &req, &err);

        ok(rc == -1 && err.status == 400
           && strcmp(err.type, "invalid_request_error") == 0,
           "bad[%zu] is a 400 invalid_request_error", i);
        is_str(err.param, bad[i].param, "bad[%zu] param", i);
        if (!ok(strstr(err.message, bad[i].msg) != NULL,
                "bad[%zu] message mentions '%s'", i, bad[i].msg))
        {
            printf("#   message: %s\n", err.message);
        }
        ok(req.messages == NULL && req.model == NULL,
           "bad[%zu] leaves the request empty", i);
    }
}

static void
test_limits(void)
{
    llm_request    req;
    llm_api_error  err;
    llm_api_limits small = lim;
    char           body[4096];
    int            i, n = 0;

    /* depth: 70 nested arrays inside a field that is otherwise ignored */
    n += sprintf(body + n, "{" MSG ",\"extra\":");
    for (i = 0; i < 70; i++) body[n++] = '[';
    for (i = 0; i < 70; i++) body[n++] = ']';
    body[n++] = '}';
    body[n] = '\0';
    ok(parse(body, &req, &err) == -1 && strstr(err.message, "64 levels"),
       "nesting deeper than 64 is refused: %s", err.message);
    /* brackets inside strings do not count */
    n = sprintf(body, "{" MSG ",\"extra\":\"");
    for (i = 0; i < 100; i++) body[n++] = '[';
    n += sprintf(body + n, "\\\"\"}");
    ok(parse(body, &req, &err) == 0, "brackets inside strings are not nesting: %s", err.message);
    llm_request_free(&req);

    /* tool-call arguments have their own depth bound */
    n = sprintf(body, "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":");
    for (i = 0; i < 70; i++) body[n++] = '[';
    for (i = 0; i < 70; i++) body[n++] = ']';
    n += sprintf(body + n, "}\"}}]}]}");
    ok(parse(body, &req, &err) == -1
       && strcmp(err.param, "messages[0].tool_calls[0].function.arguments") == 0
       && strstr(err.message, "levels"), "deep arguments refused: %s", err.message);

    small.max_messages = 2;
    small.max_tools = 1;
    small.max_n = 2;
    small.max_depth = 5;
    n = sprintf(body, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"a\"}]}");
    ok(llm_openai_parse_chat(body, n, &small, &req, &err) == -1
       && strcmp(err.param, "messages") == 0 && strstr(err.message, "at most 2 messages"),
       "message count limit: %s", err.message);
    n = sprintf(body, "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},{\"type\":\"function\",\"function\":{\"name\":\"b\"}}]}");
    ok(llm_openai_parse_chat(body, n, &small, &req, &err) == -1
       && strcmp(err.param, "tools") == 0 && strstr(err.message, "at most 1 tools"),
       "tool count limit: %s", err.message);
    n = sprintf(body, "{" MSG ",\"n\":3}");
    ok(llm_openai_parse_chat(body, n, &small, &req, &err) == -1
       && strstr(err.message, "from 1 to 2"), "max_n from limits: %s", err.message);
    n = sprintf(body, "{" MSG ",\"x\":[[[[[1]]]]]}");
    ok(llm_openai_parse_chat(body, n, &small, &req, &err) == -1
       && strstr(err.message, "5 levels"), "max_depth from limits: %s", err.message);
    n = sprintf(body, "{" MSG ",\"x\":[[[1]]]}");
    ok(llm_openai_parse_chat(body, n, &small, &req, &err) == 0, "depth within limit is fine");
    llm_request_free(&req);
}

static const char *
mstr(const llm_request *req, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(req->messages, i), key));
}

static void
test_good(void)
{
    llm_request   req;
    llm_api_error err;
    json_t       *m, *tc, *args;
    const char   *body =
        "{\"model\":\"qwen\",\"messages\":["
        "{\"role\":\"developer\",\"content\":\"be brief\"},"
        "{\"role\":\"user\",\"name\":\"bob\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"hmm\",\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sunny\"},"
        "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_2\",\"function\":{\"name\":\"get\",\"arguments\":\"\"}}]}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get\",\"description\":\"weather\",\"parameters\":{\"type\":\"object\"},\"strict\":true}}],"
        "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get\"}},\"parallel_tool_calls\":false,"
        "\"max_tokens\":10,\"max_completion_tokens\":20,\"temperature\":0.5,\"top_p\":0.9,\"n\":2,"
        "\"stop\":[\"END\",\"##\"],\"seed\":-1,\"presence_penalty\":0.5,\"frequency_penalty\":-0.5,"
        "\"logit_bias\":{\"42\":-100},\"logprobs\":true,\"top_logprobs\":5,\"user\":\"u\",\"stream\":true,"
        "\"stream_options\":{\"include_usage\":true},\"response_format\":{\"type\":\"json_object\"},"
        "\"top_k\":40,\"min_p\":0.05,\"repetition_penalty\":1.1,"
        "\"chat_template_kwargs\":{\"enable_thinking\":false},\"reasoning_effort\":\"high\",\"unknown_field\":{\"a\":1}}";

    ok(parse(body, &req, &err) == 0, "full request parses: %s", err.message);
    is_int(req.api, LLM_API_CHAT, "api kind");
    is_str(req.model, "qwen", "model");
    is_int(json_array_size(req.messages), 5, "5 messages");
    is_str(mstr(&req, 0, "role"), "system", "developer becomes system");
    is_str(mstr(&req, 0, "content"), "be brief", "system content");
    is_str(mstr(&req, 1, "content"), "a\nb", "text parts joined with newline");
    is_str(mstr(&req, 1, "name"), "bob", "name kept");
    is_str(mstr(&req, 2, "content"), "", "null assistant content becomes empty");
    is_str(mstr(&req, 2, "reasoning_content"), "hmm", "reasoning_content kept");
    m = json_array_get(req.messages, 2);
    tc = json_array_get(json_object_get(m, "tool_calls"), 0);
    is_str(json_string_value(json_object_get(tc, "id")), "call_1", "tool call id");
    is_str(json_string_value(json_object_get(tc, "type")), "function", "tool call type");
    args = json_object_get(json_object_get(tc, "function"), "arguments");
    ok(json_is_object(args), "arguments parsed into an object");
    is_str(json_string_value(json_object_get(args, "city")), "Paris", "argument value");
    is_str(mstr(&req, 3, "role"), "tool", "tool role");
    is_str(mstr(&req, 3, "tool_call_id"), "call_1", "tool_call_id kept");
    m = json_array_get(req.messages, 4);
    tc = json_array_get(json_object_get(m, "tool_calls"), 0);
    args = json_object_get(json_object_get(tc, "function"), "arguments");
    ok(json_is_object(args) && json_object_size(args) == 0, "empty arguments string gives {}");
    is_str(json_string_value(json_object_get(tc, "type")), "function", "missing type filled in");

    is_int(json_array_size(req.tools), 1, "one tool");
    tc = json_object_get(json_array_get(req.tools, 0), "function");
    is_str(json_string_value(json_object_get(tc, "name")), "get", "tool name");
    is_str(json_string_value(json_object_get(tc, "description")), "weather", "tool description");
    ok(json_is_object(json_object_get(tc, "parameters")), "tool parameters");
    ok(json_object_get(tc, "strict") == NULL, "strict not passed on");
    is_int(req.tool_choice, LLM_TOOL_CHOICE_NAMED, "named tool choice");
    is_str(req.tool_choice_name, "get", "tool choice name");
    is_int(req.parallel_tool_calls, 0, "parallel_tool_calls false");
    is_int(req.max_tokens, 20, "max_completion_tokens wins");
    is_near(req.sampling.temperature, 0.5, 1e-9, "temperature");
    is_near(req.sampling.top_p, 0.9, 1e-9, "top_p");
    is_int(req.n, 2, "n");
    is_int(req.n_stop, 2, "two stops");
    is_str(req.stop[1], "##", "stop[1]");
    ok(req.sampling.has_seed && req.sampling.seed == (uint64_t) -1, "seed");
    is_near(req.sampling.presence_penalty, 0.5, 1e-9, "presence_penalty");
    is_near(req.sampling.frequency_penalty, -0.5, 1e-9, "frequency_penalty");
    ok(req.sampling.n_logit_bias == 1 && req.sampling.logit_bias[0].id == 42
       && req.sampling.logit_bias[0].bias == -100, "logit_bias parsed into token id and bias");
    ok(req.sampling.logprobs == 1 && req.sampling.top_logprobs == 5, "logprobs");
    ok(req.stream == 1 && req.include_usage == 1, "stream with usage");
    is_str(json_string_value(json_object_get(req.response_format, "type")), "json_object", "response_format");
    is_int(req.sampling.top_k, 40, "top_k");
    is_near(req.sampling.min_p, 0.05, 1e-9, "min_p");
    is_near(req.sampling.repetition_penalty, 1.1, 1e-9, "repetition_penalty");
    is_int(req.sampling.set, LLM_SAMPLING_SET_TEMPERATURE | LLM_SAMPLING_SET_TOP_P | LLM_SAMPLING_SET_TOP_K
           | LLM_SAMPLING_SET_REPETITION_PENALTY, "the sampling fields the request set are recorded");
    is_int(req.reasoning, 0, "enable_thinking false beats reasoning_effort");
    ok(json_is_false(json_object_get(req.template_kwargs, "enable_thinking")), "template kwargs kept");
    llm_request_free(&req);

    ok(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}],\"continue_final_message\":true}", &req, &err) == 0
       && req.continue_final_message == 1 && req.add_generation_prompt == 0, "continue_final_message: %s", err.message);
    llm_request_free(&req);
    ok(parse("{" MSG ",\"add_generation_prompt\":false}", &req, &err) == 0
       && req.continue_final_message == 0 && req.add_generation_prompt == 0, "add_generation_prompt false");
    llm_request_free(&req);

    ok(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &req, &err) == 0, "minimal request");
    ok(req.model == NULL && req.max_tokens == -1 && req.n == 1 && req.stream == 0
       && req.reasoning == -1 && req.tools == NULL && req.n_stop == 0
       && req.sampling.temperature == 1.0 && req.sampling.set == 0, "defaults, no sampling field set");
    llm_request_free(&req);

    ok(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":\"\\n\",\"reasoning_effort\":\"minimal\","
             "\"tools\":[],\"tool_choice\":\"none\",\"temperature\":null,\"max_tokens\":null,\"top_k\":-1}", &req, &err) == 0,
       "string stop, nulls, empty tools: %s", err.message);
    ok(req.n_stop == 1 && strcmp(req.stop[0], "\n") == 0, "single stop string");
    is_int(req.reasoning, 0, "reasoning_effort minimal turns reasoning off");
    ok(req.tools == NULL && req.tool_choice == LLM_TOOL_CHOICE_NONE, "empty tools is no tools");
    ok(req.sampling.temperature == 1.0 && req.max_tokens == -1, "null means absent");
    is_int(req.sampling.top_k, 0, "top_k -1 means off");
    is_int(req.sampling.set, LLM_SAMPLING_SET_TOP_K, "a null temperature is not set; top_k -1 is (off, not the model's)");
    llm_request_free(&req);

    ok(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template_kwargs\":{\"enable_thinking\":true},"
             "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a-b_c\"}}],\"tool_choice\":\"required\",\"max_tokens\":7}", &req, &err) == 0,
       "required tool choice: %s", err.message);
    ok(req.reasoning == 1 && req.tool_choice == LLM_TOOL_CHOICE_REQUIRED && req.max_tokens == 7, "reasoning on, required");
    llm_request_free(&req);

    ok(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":0}", &req, &err) == 0
       && req.sampling.logprobs == 0, "top_logprobs 0 without logprobs is accepted");
    llm_request_free(&req);

    ok(parse("{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":{\"k\":1}}}]}]}", &req, &err) == 0,
       "arguments given as an object are accepted");
    llm_request_free(&req);
}

/* logit_bias: how many entries, and ids against the vocabulary */
static void
test_logit_bias(void)
{
    llm_request   req;
    llm_api_error err;
    char          body[16384], *p;
    int           i;

    p = body + sprintf(body, "{" MSG ",\"logit_bias\":{");
    for (i = 0; i < 301; i++) p += sprintf(p, "%s\"%d\":1", i ? "," : "", i);
    strcpy(p, "}}");
    ok(parse(body, &req, &err) == -1 && err.status == 400 && strcmp(err.param, "logit_bias") == 0
       && strstr(err.message, "at most 300 entries") != NULL, "301 logit_bias entries are a 400: %s", err.message);
    llm_request_free(&req);

    p = strrchr(body, ',');
    strcpy(p, "}}");    /* 300 entries */
    ok(parse(body, &req, &err) == 0 && req.sampling.n_logit_bias == 300
       && req.sampling.logit_bias[299].id == 299, "300 entries are accepted");
    llm_request_free(&req);

    ok(parse("{" MSG ",\"logit_bias\":{\"2147483647\":1,\"255\":-1}}", &req, &err) == 0, "2147483647 parses");
    memset(&err, 0, sizeof(err));
    ok(llm_api_check_token_ids(&req, 256, &err) == -1 && err.status == 400
       && strcmp(err.param, "logit_bias.2147483647") == 0 && strstr(err.message, "outside the vocabulary (0..255)") != NULL,
       "an id beyond the vocabulary is a 400 once the model is known: %s", err.message);
    llm_request_free(&req);

    ok(parse("{" MSG ",\"logit_bias\":{\"255\":-1,\"0\":3}}", &req, &err) == 0
       && llm_api_check_token_ids(&req, 256, &err) == 0, "ids inside the vocabulary pass");
    ok(llm_api_check_token_ids(&req, 255, &err) == -1 && strcmp(err.param, "logit_bias.255") == 0, "255 is outside a 255-token vocabulary");
    llm_request_free(&req);
}

/* tool_calls per assistant message are bounded */
static void
test_tool_call_bounds(void)
{
    static char   body[65536];
    llm_request   req;
    llm_api_error err;
    int           i, n, count;

    for (count = 128; count <= 129; count++) {
        n = sprintf(body, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[");
        for (i = 0; i < count; i++) {
            n += sprintf(body + n, "%s{\"id\":\"c%d\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}", i ? "," : "", i);
        }
        sprintf(body + n, "]}]}");
        if (count == 128) {
            ok(parse(body, &req, &err) == 0, "128 tool calls in a message are accepted: %s", err.message);
        } else {
            ok(parse(body, &req, &err) == -1 && err.status == 400 && strcmp(err.param, "messages[1].tool_calls") == 0
               && strstr(err.message, "at most 128 tool calls are supported in one message, but got 129") != NULL,
               "129 tool calls are a 400: %s", err.message);
        }
        llm_request_free(&req);
    }
}

/* the OpenAI error type of statuses that carry none of their own */
static void
test_error_types(void)
{
    is_str(llm_openai_error_type(404), "invalid_request_error", "404 (unknown model or URL) is invalid_request_error");
    is_str(llm_openai_error_type(400), "invalid_request_error", "400");
    is_str(llm_openai_error_type(401), "authentication_error", "401");
    is_str(llm_openai_error_type(403), "permission_error", "403");
    is_str(llm_openai_error_type(429), "rate_limit_error", "429");
    is_str(llm_openai_error_type(503), "server_error", "503");
}

int
main(void)
{
    test_error_types();
    llm_api_limits_default(&lim);
    test_bad();
    test_tool_call_bounds();
    test_logit_bias();
    test_limits();
    test_good();
    return done_testing();
}
