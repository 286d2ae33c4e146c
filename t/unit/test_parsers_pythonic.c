/* pythonic tool-call parser: [f(a=1), g(b="x")]. */
#include "test_parsers_harness.h"

static const tp_case cases[] = {
    { .name = "two calls", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "[get_weather(city=\"San Francisco\", days=3), run_code(code='print(\"hi\")')]",
      .n_calls = 2, .call_name = { "get_weather", "run_code" },
      .call_args = { "{\"city\":\"San Francisco\",\"days\":3}", "{\"code\":\"print(\\\"hi\\\")\"}" },
      .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "literals, lists, dicts, no args", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "[set_config(enabled=True, ratio=-0.5, tags=['a', \"b\"], meta={'k': None}), get_weather()]",
      .n_calls = 2, .call_name = { "set_config", "get_weather" },
      .call_args = { "{\"enabled\":true,\"ratio\":-0.5,\"tags\":[\"a\",\"b\"],\"meta\":{\"k\":null}}", "{}" } },
    { .name = "llama4 python_start wrapper", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "<|python_start|>[get_weather(city=\"\xe6\x9d\xb1\xe4\xba\xac\")]<|python_end|>",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"\xe6\x9d\xb1\xe4\xba\xac\"}" } },
    { .name = "escapes, unicode, markers in strings", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "[run_code(code=\"print('h\\u00e9') # ), [x(\\n\", days=1)]",
      .n_calls = 1, .call_name = { "run_code" }, .call_args = { "{\"code\":\"print('h\\u00e9') # ), [x(\\n\",\"days\":1}" } },
    { .name = "unicode value and parallel off", .tool = "pythonic", .tools = TP_TOOLS, .no_parallel = 1,
      .text = "[get_weather(city='Z\xc3\xbcrich \xf0\x9f\x8f\x94'), get_weather(city='Bern')]",
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Z\xc3\xbcrich \xf0\x9f\x8f\x94\"}" } },
    { .name = "markdown link is content", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "[docs](http://x) say hi", .content = "[docs](http://x) say hi" },
    { .name = "unknown function is content", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "[launch(missiles=True)]", .content = "[launch(missiles=True)]" },
    { .name = "positional argument is content", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "[get_weather(\"Paris\")]", .content = "[get_weather(\"Paris\")]" },
    { .name = "cut off in a value", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "[get_weather(city=\"Par", .reason = LLM_FINISH_LENGTH,
      .n_calls = 1, .call_name = { "get_weather" }, .call_args = { "{\"city\":\"Par\"}" } },
    { .name = "cut off after =", .tool = "pythonic", .tools = TP_TOOLS,
      .text = "[get_weather(city=\"Rome\", days=", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Rome\"}" } },
};

int
main(void)
{
    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));
    return done_testing();
}
