/* deepseek_v3 tool-call parser (V3 / R1 and the V3.1 form). */
#include "test_parsers_harness.h"

#define CB "<｜tool▁calls▁begin｜>"
#define CE "<｜tool▁calls▁end｜>"
#define B  "<｜tool▁call▁begin｜>"
#define E  "<｜tool▁call▁end｜>"
#define S  "<｜tool▁sep｜>"

static const tp_case cases[] = {
    { .name = "V3 one call", .tool = "deepseek_v3", .tools = TP_TOOLS,
      .text = CB B "function" S "get_weather\n```json\n{\"city\": \"Tokyo\"}\n```" E CE,
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Tokyo\"}" },
      .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "R1: reasoning, content, two calls", .tool = "deepseek_v3", .reasoning = "think",
      .starts_in_reasoning = 1, .tools = TP_TOOLS,
      .text = "I should call both.\n</think>\n\nCalling.\n" CB B "function" S "get_weather\n```json\n"
              "{\"city\": \"Tokyo\", \"days\": 2}\n```" E "\n" B "function" S "run_code\n```json\n"
              "{\"code\": \"print('\xe6\x97\xa5\xe6\x9c\xac')\"}\n```" E CE,
      .reasoning_text = "I should call both.", .content = "Calling.", .n_calls = 2,
      .call_name = { "get_weather", "run_code" },
      .call_args = { "{\"city\":\"Tokyo\",\"days\":2}", "{\"code\":\"print('\xe6\x97\xa5\xe6\x9c\xac')\"}" } },
    { .name = "V3.1 form", .tool = "deepseek_v3", .tools = TP_TOOLS,
      .text = CB B "get_weather" S "{\"city\": \"Paris\"}" E B "run_code" S "{\"code\": \"x = '" E "'\"}" E CE,
      .n_calls = 2, .call_name = { "get_weather", "run_code" },
      .call_args = { "{\"city\":\"Paris\"}", "{\"code\":\"x = '" E "'\"}" } },
    { .name = "nested JSON, escapes, unicode", .tool = "deepseek_v3", .tools = TP_TOOLS,
      .text = CB B "function" S "run_code\n```json\n{\"code\": \"print(\\\"h\\u00e9\\\\n\\\")\", \"opts\": {\"a\": [1, {\"b\": null}], \"s\": \"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}\n```" E CE,
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print(\\\"h\\u00e9\\\\n\\\")\",\"opts\":{\"a\":[1,{\"b\":null}],\"s\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}" } },
    { .name = "parallel off", .tool = "deepseek_v3", .tools = TP_TOOLS, .no_parallel = 1,
      .text = CB B "get_weather" S "{\"city\": \"A\"}" E B "get_weather" S "{\"city\": \"B\"}" E CE,
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"A\"}" } },
    { .name = "unknown name is content", .tool = "deepseek_v3", .tools = TP_TOOLS,
      .text = CB B "function" S "nope\n```json\n{}\n```" E CE,
      .content = CB B "function" S "nope\n```json\n{}\n```" E CE },
    { .name = "text after calls without the end marker", .tool = "deepseek_v3", .tools = TP_TOOLS,
      .text = B "get_weather" S "{\"city\": \"A\"}" E " Done.",
      .content = "Done.", .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"A\"}" } },
    { .name = "cut off in arguments", .tool = "deepseek_v3", .tools = TP_TOOLS,
      .text = CB B "function" S "get_weather\n```json\n{\"city\": \"Tok", .reason = LLM_FINISH_LENGTH,
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Tok\"}" },
      .finish = LLM_FINISH_LENGTH },
    { .name = "partial marker in text", .tool = "deepseek_v3", .tools = TP_TOOLS,
      .text = "a <｜tool▁call b", .content = "a <｜tool▁call b" },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
