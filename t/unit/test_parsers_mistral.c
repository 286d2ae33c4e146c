/* mistral tool-call parser: [TOOL_CALLS] list and v11 forms. */
#include "test_parsers_harness.h"

static const tp_case cases[] = {
    { .name = "list form", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123def\"}, "
              "{\"name\": \"run_code\", \"arguments\": {\"code\": \"[TOOL_CALLS]\"}}]",
      .n_calls = 2, .call_name = { "get_weather", "run_code" },
      .call_args = { "{\"city\":\"Paris\"}", "{\"code\":\"[TOOL_CALLS]\"}" }, .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "v11 form, two calls", .tool = "mistral", .tools = TP_TOOLS,
      .text = "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Lyon\", \"days\": 1}[TOOL_CALLS]run_code[ARGS]{\"code\": \"1\"}",
      .content = "Sure.", .n_calls = 2, .call_name = { "get_weather", "run_code" },
      .call_args = { "{\"city\":\"Lyon\",\"days\":1}", "{\"code\":\"1\"}" } },
    { .name = "v13 form with call id", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Nice\"}",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Nice\"}" } },
    { .name = "nested JSON, escapes, unicode (v11)", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[TOOL_CALLS]run_code[ARGS]{\"code\": \"print(\\\"h\\u00e9\\\\n\\\")\", \"opts\": {\"a\": [1, {\"b\": null}], \"s\": \"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print(\\\"h\\u00e9\\\\n\\\")\",\"opts\":{\"a\":[1,{\"b\":null}],\"s\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}}" } },
    { .name = "v11 markers inside a string", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[TOOL_CALLS]run_code[ARGS]{\"code\": \"[ARGS]{}[TOOL_CALLS]x\"}",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"[ARGS]{}[TOOL_CALLS]x\"}" } },
    { .name = "unknown name (v11) is content", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[TOOL_CALLS]format_disk[ARGS]{\"y\": 1}",
      .content = "[TOOL_CALLS]format_disk[ARGS]{\"y\": 1}" },
    { .name = "bare list without [TOOL_CALLS]", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Metz\"}}]",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Metz\"}" } },
    { .name = "bracket text is content", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[1, 2, 3] are numbers", .content = "[1, 2, 3] are numbers" },
    { .name = "cut off in v11 args", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Br", .reason = LLM_FINISH_LENGTH,
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Br\"}" } },
    { .name = "cut off in the name", .tool = "mistral", .tools = TP_TOOLS,
      .text = "[TOOL_CALLS]get_wea", .content = "[TOOL_CALLS]get_wea" },
    { .name = "magistral reasoning + call", .tool = "mistral", .reasoning = "mistral", .tools = TP_TOOLS,
      .text = "[THINK]weather needed[/THINK][TOOL_CALLS]get_weather[ARGS]{'city': 'Pau',}",
      .reasoning_text = "weather needed", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Pau\"}" } },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
