/* tool_call_list parser (Phi-4-mini, Granite 3.x): table of real-format outputs. */
#include "test_parsers_harness.h"

#define TOOLS "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"," \
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}," \
    "\"days\":{\"type\":\"integer\"}}}}},{\"type\":\"function\",\"function\":{\"name\":" \
    "\"run_code\",\"parameters\":{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\"}}}}}]"
#define P "tool_call_list"

static const tp_case cases[] = {
    { .name = "plain text", .tool = P, .tools = TOOLS,
      .text = "Hello! How can I help you today?",
      .content = "Hello! How can I help you today?", .finish = LLM_FINISH_STOP },
    { .name = "phi-4-mini: list with closer", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}]<|/tool_call|>",
      .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Paris\",\"days\":3}" }, .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "granite: list to EOS, two calls", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"arguments\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}, "
              "{\"name\": \"run_code\", \"arguments\": {\"code\": \"print(1)\"}}]",
      .n_calls = 2, .call_name = { "get_weather", "run_code" },
      .call_args = { "{\"city\":\"Paris\"}", "{\"code\":\"print(1)\"}" }, .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "content before the marker", .tool = P, .tools = TOOLS,
      .text = "Let me check.\n<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
      .content = "Let me check.", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Oslo\"}" } },
    { .name = "bare objects separated by commas", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}, "
              "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"B\"}}<|/tool_call|>",
      .n_calls = 2, .call_name = { "get_weather", "get_weather" },
      .call_args = { "{\"city\":\"A\"}", "{\"city\":\"B\"}" } },
    { .name = "OpenAI-shaped objects in the list", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
              "\"arguments\": {\"city\": \"Kyiv\"}}}]<|/tool_call|>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Kyiv\"}" } },
    { .name = "text after the closer", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {}}]<|/tool_call|> Done.",
      .content = "Done.", .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{}" } },
    { .name = "markers inside string values", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"name\": \"run_code\", \"arguments\": {\"code\": \"s = '<|/tool_call|><|tool_call|>[]'\"}}]",
      .n_calls = 1, .call_name = { "run_code" },
      .call_args = { "{\"code\":\"s = '<|/tool_call|><|tool_call|>[]'\"}" } },
    { .name = "unknown tool name is content", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"name\": \"delete_all\", \"arguments\": {}}]",
      .content = "<|tool_call|>[{\"name\": \"delete_all\", \"arguments\": {}}]", .finish = LLM_FINISH_STOP },
    { .name = "not JSON after the marker", .tool = P, .tools = TOOLS,
      .text = "a <|tool_call|>get_weather(city=1) b",
      .content = "a <|tool_call|>get_weather(city=1) b" },
    { .name = "cut off inside the arguments", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"name\": \"run_code\", \"arguments\": {\"code\": \"print(1)\\n pri",
      .reason = LLM_FINISH_LENGTH,
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print(1)\\n pri\"}" },
      .finish = LLM_FINISH_LENGTH },
    { .name = "escapes and unicode", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"name\": \"run_code\", \"arguments\": {\"code\": \"print(\\\"h\\u00e9llo\\\")\", "
              "\"s\": \"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}]",
      .n_calls = 1, .call_name = { "run_code" },
      .call_args = { "{\"code\":\"print(\\\"h\\u00e9llo\\\")\",\"s\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}" } },
    { .name = "two groups", .tool = P, .tools = TOOLS,
      .text = "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}]<|/tool_call|>"
              "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"B\"}}]<|/tool_call|>",
      .n_calls = 2, .call_name = { "get_weather", "get_weather" },
      .call_args = { "{\"city\":\"A\"}", "{\"city\":\"B\"}" } },
    { .name = "parallel off keeps the first", .tool = P, .tools = TOOLS, .no_parallel = 1,
      .text = "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}, "
              "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"B\"}}]",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"A\"}" } },
    { .name = "no tools given: any name", .tool = P,
      .text = "<|tool_call|>[{\"name\": \"anything\", \"arguments\": {\"x\": 1}}]",
      .n_calls = 1, .call_name = { "anything" }, .call_args = { "{\"x\":1}" } },
    { .name = "a lone <| in text", .tool = P, .tools = TOOLS,
      .text = "if a <|b and c<|tool then <|tool_cal",
      .content = "if a <|b and c<|tool then <|tool_cal" },
    { .name = "think then a call", .tool = P, .reasoning = "think", .tools = TOOLS,
      .text = "<think>Paris, then.</think><|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
      .reasoning_text = "Paris, then.", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Paris\"}" } },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
