/* hermes tool-call parser: table of real-format outputs. */
#include "test_parsers_harness.h"

#define TOOLS "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"," \
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}," \
    "\"days\":{\"type\":\"integer\"}}}}},{\"type\":\"function\",\"function\":{\"name\":" \
    "\"run_code\",\"parameters\":{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\"}}}}}]"

static const tp_case cases[] = {
    { .name = "plain text", .tool = "hermes", .tools = TOOLS,
      .text = "Hello! How can I help you today?",
      .content = "Hello! How can I help you today?", .finish = LLM_FINISH_STOP },
    { .name = "one call", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Paris\",\"days\":3}" }, .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "content then two calls", .tool = "hermes", .tools = TOOLS,
      .text = "Let me check both.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\", \"days\": -1.5e2}}\n</tool_call>",
      .content = "Let me check both.", .n_calls = 2, .call_name = { "get_weather", "get_weather" },
      .call_args = { "{\"city\":\"Paris\"}", "{\"city\":\"Tokyo\",\"days\":-1.5e2}" },
      .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "nested JSON, escapes, unicode", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>\n{\"name\": \"run_code\", \"arguments\": {\"code\": \"print(\\\"h\\u00e9llo\\\\n\\\")\", "
              "\"opts\": {\"a\": [1, 2, {\"b\": null}], \"t\": true}, \"s\": \"caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80\"}}\n</tool_call>",
      .n_calls = 1, .call_name = { "run_code" },
      .call_args = { "{\"code\":\"print(\\\"h\\u00e9llo\\\\n\\\")\",\"opts\":{\"a\":[1,2,{\"b\":null}],\"t\":true},"
                     "\"s\":\"caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80\"}" } },
    { .name = "markers inside string values", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"name\": \"run_code\", \"arguments\": {\"code\": \"s = '</tool_call><tool_call>{}'\"}}</tool_call>",
      .n_calls = 1, .call_name = { "run_code" },
      .call_args = { "{\"code\":\"s = '</tool_call><tool_call>{}'\"}" } },
    { .name = "unknown tool name is content", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>",
      .content = "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>", .finish = LLM_FINISH_STOP },
    { .name = "no tools given: any name", .tool = "hermes",
      .text = "<tool_call>{\"name\": \"anything\", \"arguments\": {\"x\": 1}}</tool_call>",
      .n_calls = 1, .call_name = { "anything" }, .call_args = { "{\"x\":1}" } },
    { .name = "single quotes, Python literals, trailing comma", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>\n{'name': 'get_weather', 'arguments': {'city': 'Rome \"centre\"', 'ok': True, 'x': None, 'l': [1, 2,],},}\n</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Rome \\\"centre\\\"\",\"ok\":true,\"x\":null,\"l\":[1,2]}" } },
    { .name = "arguments as a JSON string", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo \\\\u00f8\\\", \\\"days\\\": 2}\"}\n</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Oslo \\u00f8\",\"days\":2}" } },
    { .name = "string arguments with surrogate pairs", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"name\": \"run_code\", \"arguments\": \"{\\\"code\\\": \\\"\\\\ud83d\\\\ude00 \\ud83d\\ude00\\\"}\"}</tool_call>",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"\\ud83d\\ude00 \xf0\x9f\x98\x80\"}" } },
    { .name = "parameters key and name after arguments", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"parameters\": {\"city\": \"Lima\"}, \"name\": \"get_weather\"}</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Lima\"}" } },
    { .name = "OpenAI-shaped call object", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Kyiv\"}}}</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Kyiv\"}" } },
    { .name = "bare JSON call without tags", .tool = "hermes", .tools = TOOLS,
      .text = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Paris\"}" },
      .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "bare JSON list of calls", .tool = "hermes", .tools = TOOLS,
      .text = "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}, {\"name\": \"run_code\", \"parameters\": {\"code\": \"1+1\"}}]",
      .n_calls = 2, .call_name = { "get_weather", "run_code" },
      .call_args = { "{\"city\":\"A\"}", "{\"code\":\"1+1\"}" } },
    { .name = "bare JSON that is not a call", .tool = "hermes", .tools = TOOLS,
      .text = "{\"city\": \"Paris\", \"temp\": 21}",
      .content = "{\"city\": \"Paris\", \"temp\": 21}" },
    { .name = "bare JSON with unknown name", .tool = "hermes", .tools = TOOLS,
      .text = "{\"name\": \"Bob\", \"age\": 3}",
      .content = "{\"name\": \"Bob\", \"age\": 3}" },
    { .name = "bare JSON needs tools", .tool = "hermes",
      .text = "{\"name\": \"get_weather\", \"arguments\": {}}",
      .content = "{\"name\": \"get_weather\", \"arguments\": {}}" },
    { .name = "cut off inside a string value", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>\n{\"name\": \"run_code\", \"arguments\": {\"code\": \"print(1)\\n pri",
      .reason = LLM_FINISH_LENGTH,
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print(1)\\n pri\"}" },
      .finish = LLM_FINISH_LENGTH },
    { .name = "cut off after a key", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"X\", \"days\": 1",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"X\",\"days\":1}" },
      .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "cut off before arguments", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"name\": \"get_weather\", \"argu",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{}" } },
    { .name = "cut off inside the name", .tool = "hermes", .tools = TOOLS,
      .text = "Sure.<tool_call>{\"name\": \"get_wea",
      .content = "Sure.<tool_call>{\"name\": \"get_wea" },
    { .name = "missing closing brace and tag", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bern\"}\n</tool_call>\n"
              "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Graz\"}}\n",
      .n_calls = 2, .call_name = { "get_weather", "get_weather" },
      .call_args = { "{\"city\":\"Bern\"}", "{\"city\":\"Graz\"}" } },
    { .name = "not JSON inside tags", .tool = "hermes", .tools = TOOLS,
      .text = "a <tool_call>get_weather(city=1)</tool_call> b",
      .content = "a <tool_call>get_weather(city=1)</tool_call> b" },
    { .name = "raw newline in a string", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"name\": \"run_code\", \"arguments\": {\"code\": \"a\nb\tc\"}}</tool_call>",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"a\\nb\\tc\"}" } },
    { .name = "parallel off keeps the first", .tool = "hermes", .tools = TOOLS, .no_parallel = 1,
      .text = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}</tool_call>"
              "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"B\"}}</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"A\"}" } },
    { .name = "a lone < in text", .tool = "hermes", .tools = TOOLS,
      .text = "if a <b and c<tool then <tool_cal",
      .content = "if a <b and c<tool then <tool_cal" },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
