/* harmony (gpt-oss) parser: channels, tool calls, reasoning. */
#include "test_parsers_harness.h"

static const tp_case cases[] = {
    { .name = "analysis then final", .tool = "harmony",
      .text = "<|channel|>analysis<|message|>User says hi. Reply.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>",
      .reasoning_text = "User says hi. Reply.", .content = "Hello!", .finish = LLM_FINISH_STOP },
    { .name = "analysis then tool call", .tool = "harmony", .tools = TP_TOOLS,
      .text = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
              "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"San Francisco\",\"days\":1}<|call|>",
      .reasoning_text = "Need weather.", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"San Francisco\",\"days\":1}" }, .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "recipient before channel", .tool = "harmony", .tools = TP_TOOLS,
      .text = "<|start|>assistant to=functions.run_code<|channel|>commentary json<|message|>{\"code\": \"print('<|call|>')\"}<|call|>",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print('<|call|>')\"}" } },
    { .name = "preamble then call", .tool = "harmony", .tools = TP_TOOLS,
      .text = "<|channel|>commentary<|message|>Checking the weather.<|end|><|start|>assistant<|channel|>commentary "
              "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>",
      .content = "Checking the weather.", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Oslo\"}" } },
    { .name = "nested JSON, escapes, unicode", .tool = "harmony", .tools = TP_TOOLS,
      .text = "<|channel|>commentary to=functions.run_code <|constrain|>json<|message|>{\"code\": \"print(\\\"h\\u00e9\\\\n\\\")\", \"opts\": {\"a\": [1, {\"b\": null}], \"s\": \"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}<|call|>",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print(\\\"h\\u00e9\\\\n\\\")\",\"opts\":{\"a\":[1,{\"b\":null}],\"s\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}" } },
    { .name = "two calls in one output", .tool = "harmony", .tools = TP_TOOLS,
      .text = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"A\"}<|call|>"
              "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"B\"}<|call|>",
      .n_calls = 2, .call_name = { "get_weather", "get_weather" }, .call_args = { "{\"city\":\"A\"}", "{\"city\":\"B\"}" } },
    { .name = "unknown recipient is content", .tool = "harmony", .tools = TP_TOOLS,
      .text = "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>commentary to=python<|message|>print(1)<|call|>",
      .reasoning_text = "x", .content = "print(1)" },
    { .name = "harmony as reasoning parser only", .reasoning = "harmony",
      .text = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>done",
      .reasoning_text = "think", .content = "done" },
    { .name = "plain text without headers", .tool = "harmony", .text = "Just text.", .content = "Just text." },
    { .name = "cut off in analysis", .tool = "harmony", .reason = LLM_FINISH_LENGTH,
      .text = "<|channel|>analysis<|message|>Long thought <|en", .reasoning_text = "Long thought <|en",
      .finish = LLM_FINISH_LENGTH },
    { .name = "cut off in call", .tool = "harmony", .tools = TP_TOOLS,
      .text = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Ber",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Ber\"}" } },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
