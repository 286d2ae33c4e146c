/* qwen3_coder tool-call parser: XML-style calls typed by the schema. */
#include "test_parsers_harness.h"

static const tp_case cases[] = {
    { .name = "one call", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
              "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Paris\",\"days\":3}" },
      .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "content, two calls, multi-line string", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "I'll run it.\n<tool_call>\n<function=run_code>\n<parameter=code>\nfor i in range(3):\n"
              "    print(\"<b>\", i)\n\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n"
              "<parameter=city>\nS\xc3\xa3o Paulo \xf0\x9f\x8c\x9e\n</parameter>\n</function>\n</tool_call>",
      .content = "I'll run it.", .n_calls = 2, .call_name = { "run_code", "get_weather" },
      .call_args = { "{\"code\":\"for i in range(3):\\n    print(\\\"<b>\\\", i)\\n\"}",
                     "{\"city\":\"S\xc3\xa3o Paulo \xf0\x9f\x8c\x9e\"}" } },
    { .name = "typed values", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "<tool_call>\n<function=set_config>\n<parameter=enabled>\nTrue\n</parameter>\n"
              "<parameter=ratio>\n0.25\n</parameter>\n<parameter=tags>\n[\"a\", 'b']\n</parameter>\n"
              "<parameter=meta>\n{\"k\": {\"n\": 1}}\n</parameter>\n<parameter=note>\nnull\n</parameter>\n"
              "<parameter=extra>\n42\n</parameter>\n</function>\n</tool_call>",
      .n_calls = 1, .call_name = { "set_config" },
      .call_args = { "{\"enabled\":true,\"ratio\":0.25,\"tags\":[\"a\",\"b\"],\"meta\":{\"k\":{\"n\":1}},\"note\":null,\"extra\":\"42\"}" } },
    { .name = "bad typed value stays a string", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "<tool_call>\n<function=get_weather>\n<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"days\":\"three\"}" } },
    { .name = "markers inside a value", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "<tool_call>\n<function=run_code>\n<parameter=code>\nx = \"<parameter\" + '</param' + \"<function=\"\n</parameter>\n</function>\n</tool_call>",
      .n_calls = 1, .call_name = { "run_code" },
      .call_args = { "{\"code\":\"x = \\\"<parameter\\\" + '</param' + \\\"<function=\\\"\"}" } },
    { .name = "unknown function is content", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "<tool_call>\n<function=rm_rf>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>",
      .content = "<tool_call>\n<function=rm_rf>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>" },
    { .name = "no arguments", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{}" } },
    { .name = "missing closing tags", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "<function=get_weather>\n<parameter=city>\nOslo\n<parameter=days>\n2\n</tool_call>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Oslo\",\"days\":2}" } },
    { .name = "cut off in a string value", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "<tool_call>\n<function=run_code>\n<parameter=code>\nprint(1)\npri",
      .reason = LLM_FINISH_LENGTH, .n_calls = 1, .call_name = { "run_code" },
      .call_args = { "{\"code\":\"print(1)\\npri\"}" }, .finish = LLM_FINISH_LENGTH },
    { .name = "cut off in the function name", .tool = "qwen3_coder", .tools = TP_TOOLS,
      .text = "ok <tool_call>\n<function=get_w", .content = "ok <tool_call>\n<function=get_w" },
    { .name = "think + qwen3_coder", .tool = "qwen3_coder", .reasoning = "think", .tools = TP_TOOLS,
      .text = "<think>\nuse the tool\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>",
      .reasoning_text = "use the tool", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Rome\"}" } },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
