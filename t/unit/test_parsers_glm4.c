/* glm4 tool-call parser: <arg_key>/<arg_value> pairs. */
#include "test_parsers_harness.h"

static const tp_case cases[] = {
    { .name = "one call", .tool = "glm4", .tools = TP_TOOLS,
      .text = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
              "<arg_key>days</arg_key>\n<arg_value>5</arg_value>\n</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Beijing\",\"days\":5}" },
      .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "reasoning, content and two calls", .tool = "glm4", .reasoning = "think", .tools = TP_TOOLS,
      .text = "<think>two cities</think>\nChecking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
              "<arg_value>\xe5\x8c\x97\xe4\xba\xac</arg_value>\n</tool_call>\n<tool_call>get_weather\n"
              "<arg_key>city</arg_key>\n<arg_value>Shanghai \"SH\"</arg_value>\n</tool_call>",
      .reasoning_text = "two cities", .content = "Checking.", .n_calls = 2,
      .call_name = { "get_weather", "get_weather" },
      .call_args = { "{\"city\":\"\xe5\x8c\x97\xe4\xba\xac\"}", "{\"city\":\"Shanghai \\\"SH\\\"\"}" } },
    { .name = "GLM-4.7 layout without newlines", .tool = "glm4", .tools = TP_TOOLS,
      .text = "<tool_call>set_config<arg_key>enabled</arg_key><arg_value>false</arg_value>"
              "<arg_key>meta</arg_key><arg_value>{\"a\": [1, 2]}</arg_value></tool_call>",
      .n_calls = 1, .call_name = { "set_config" }, .call_args = { "{\"enabled\":false,\"meta\":{\"a\":[1,2]}}" } },
    { .name = "untyped values parsed as JSON when they are", .tool = "glm4",
      .text = "<tool_call>anything\n<arg_key>n</arg_key>\n<arg_value>12</arg_value>\n"
              "<arg_key>s</arg_key>\n<arg_value>hello world</arg_value>\n</tool_call>",
      .n_calls = 1, .call_name = { "anything" }, .call_args = { "{\"n\":12,\"s\":\"hello world\"}" } },
    { .name = "markers inside a value", .tool = "glm4", .tools = TP_TOOLS,
      .text = "<tool_call>run_code\n<arg_key>code</arg_key>\n<arg_value>s = '<arg_key></tool_call'\n"
              "print(s)</arg_value>\n</tool_call>",
      .n_calls = 1, .call_name = { "run_code" },
      .call_args = { "{\"code\":\"s = '<arg_key></tool_call'\\nprint(s)\"}" } },
    { .name = "unknown name is content", .tool = "glm4", .tools = TP_TOOLS,
      .text = "<tool_call>nope\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
      .content = "<tool_call>nope\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>" },
    { .name = "JSON body (older GLM-4)", .tool = "glm4", .tools = TP_TOOLS,
      .text = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Xi'an\"}}</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Xi'an\"}" } },
    { .name = "no arguments then EOS", .tool = "glm4", .tools = TP_TOOLS,
      .text = "<tool_call>get_weather", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{}" } },
    { .name = "cut off inside a value", .tool = "glm4", .tools = TP_TOOLS,
      .text = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Ham", .reason = LLM_FINISH_LENGTH,
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Ham\"}" },
      .finish = LLM_FINISH_LENGTH },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
