/* llama3_json tool-call parser. */
#include "test_parsers_harness.h"

static const tp_case cases[] = {
    { .name = "bare JSON call", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco\", \"days\": 2}}",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"San Francisco\",\"days\":2}" },
      .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "python_tag call", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "<|python_tag|>{\"name\": \"run_code\", \"parameters\": {\"code\": \"print({'a': \\\"}\\\"})\"}}",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print({'a': \\\"}\\\"})\"}" } },
    { .name = "two calls separated by ;", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"A\"}}; {\"name\": \"get_weather\", \"parameters\": {\"city\": \"B\"}}",
      .n_calls = 2, .call_name = { "get_weather", "get_weather" },
      .call_args = { "{\"city\":\"A\"}", "{\"city\":\"B\"}" } },
    { .name = "type key first, arguments as string", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "{\"type\": \"function\", \"name\": \"get_weather\", \"parameters\": \"{\\\"city\\\": \\\"Quito\\\"}\"}",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Quito\"}" } },
    { .name = "nested JSON, escapes, unicode", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "{\"name\": \"run_code\", \"parameters\": {\"code\": \"print(\\\"h\\u00e9\\\\n\\\")\", \"opts\": {\"a\": [1, {\"b\": null}], \"s\": \"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}}",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print(\\\"h\\u00e9\\\\n\\\")\",\"opts\":{\"a\":[1,{\"b\":null}],\"s\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}" } },
    { .name = "marker inside a string", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "<|python_tag|>{\"name\": \"run_code\", \"parameters\": {\"code\": \"s='<|python_tag|>{'\"}}",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"s='<|python_tag|>{'\"}" } },
    { .name = "parallel off", .tool = "llama3_json", .tools = TP_TOOLS, .no_parallel = 1,
      .text = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"A\"}}; {\"name\": \"get_weather\", \"parameters\": {\"city\": \"B\"}}",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"A\"}" } },
    { .name = "plain answer", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "The weather is {usually} fine.", .content = "The weather is {usually} fine." },
    { .name = "JSON answer is content", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "{\"answer\": 42}", .content = "{\"answer\": 42}" },
    { .name = "code after python_tag is content", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "<|python_tag|>brave_search.call(query=\"x\")",
      .content = "<|python_tag|>brave_search.call(query=\"x\")" },
    { .name = "unknown tool is content", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "{\"name\": \"send_mail\", \"parameters\": {\"to\": \"a@b\"}}",
      .content = "{\"name\": \"send_mail\", \"parameters\": {\"to\": \"a@b\"}}" },
    { .name = "cut off call", .tool = "llama3_json", .tools = TP_TOOLS,
      .text = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Li", .reason = LLM_FINISH_LENGTH,
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Li\"}" } },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
