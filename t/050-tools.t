# Tool calls and reasoning end to end with the shipped default model
# (models/ngxllm-tiny: trained to think in <think> and call tools in Hermes
# <tool_call> blocks).  Parsers are auto-selected from its template.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

our $W = '{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}';
our $ASK = '{"role": "user", "content": "What is the weather in Paris?"}';

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_MODELS}/ngxllm-tiny ctx=1024;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config",
        "location = /v1/chat/completions { llm_api chat; }\n"
        . "location = /health { llm_api health; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: a non-streamed tool call
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0})
--- error_code: 200
--- response_body_like: "message":\{"role":"assistant","content":null,"reasoning_content":"[^"]+","refusal":null,"tool_calls":\[\{"id":"call_[A-Za-z0-9]{24}","type":"function","function":\{"name":"get_weather","arguments":"\{\\"city\\":\\"[^"\\]+\\"\}"\}\}\]\},"logprobs":null,"finish_reason":"tool_calls"



=== TEST 2: a streamed tool call: first delta has id, type, name and empty arguments, then fragments
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0, "stream": true})
--- error_code: 200
--- response_body_like: "delta":\{"reasoning_content":"[^"]+"\}.*"delta":\{"tool_calls":\[\{"index":0,"id":"call_\w{24}","type":"function","function":\{"name":"get_weather","arguments":""\}\}\]\}.*"delta":\{"tool_calls":\[\{"index":0,"function":\{"arguments":"\{"\}\}\]\}.*"delta":\{"tool_calls":\[\{"index":0,"function":\{"arguments":"\\"city\\":\\""\}\}\]\}.*"finish_reason":"tool_calls"\}\]\}\n\ndata: \[DONE\]\n\n$



=== TEST 3: reasoning on (the template's default) gives reasoning_content
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hello there!"}], "temperature": 0}
--- error_code: 200
--- response_body_like: "message":\{"role":"assistant","content":"[^"]+","reasoning_content":"[^"]+","refusal":null\},"logprobs":null,"finish_reason":"stop"



=== TEST 4: reasoning off through chat_template_kwargs
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hello there!"}], "temperature": 0, "chat_template_kwargs": {"enable_thinking": false}}
--- error_code: 200
--- response_body_like: "message":\{"role":"assistant","content":"[^"]+","refusal":null\},"logprobs":null,"finish_reason":"stop"



=== TEST 5: reasoning off through reasoning_effort, with a tool call
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0, "reasoning_effort": "none"})
--- error_code: 200
--- response_body_like: "message":\{"role":"assistant","content":null,"refusal":null,"tool_calls":\[\{"id":"call_\w+","type":"function","function":\{"name":"get_weather",.*"finish_reason":"tool_calls"



=== TEST 6: tool_choice none: no tools are offered and none are returned
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0, "tool_choice": "none", "chat_template_kwargs": {"enable_thinking": false}})
--- error_code: 200
--- response_body_like: "finish_reason":"stop"
--- response_body_unlike: tool_calls



=== TEST 7: tool_choice required
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0, "tool_choice": "required"})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w+","type":"function","function":\{"name":"get_weather".*"finish_reason":"tool_calls"



=== TEST 8: tool_choice naming a function offers only that one
--- request eval
my $calc = '{"type": "function", "function": {"name": "calculate", "description": "Evaluate an arithmetic expression", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}';
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$calc, $::W], "temperature": 0, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w+","type":"function","function":\{"name":"get_weather".*"finish_reason":"tool_calls"



=== TEST 9: a named function that was not offered is a 400
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "tool_choice": {"type": "function", "function": {"name": "launch"}}})
--- error_code: 400
--- response_body_like: "param":"tool_choice



=== TEST 10: a multi-turn round trip: the tool result becomes the answer
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK,
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\\"temperature_c\\": 18, \\"condition\\": \\"cloudy\\"}"}],
  "tools": [$::W], "temperature": 0, "chat_template_kwargs": {"enable_thinking": false}})
--- error_code: 200
--- response_body_like: "message":\{"role":"assistant","content":"[^"]*18[^"]*","refusal":null\},"logprobs":null,"finish_reason":"stop"



=== TEST 11: parallel_tool_calls false keeps at most one call
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [{"role": "user", "content": "What is the weather in Paris and in Rome?"}], "tools": [$::W], "temperature": 0, "parallel_tool_calls": false})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w+","type":"function","function":\{"name":"get_weather","arguments":"[^"\\]*(\\"[^"\\]*)*"\}\}\]\}
--- response_body_unlike: "tool_calls":\[\{[^\]]*\},\{



=== TEST 12: without tools in the request, no tool calls are returned
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "What is the weather in Paris?"}], "temperature": 0, "max_tokens": 60}
--- error_code: 200
--- response_body_unlike: "tool_calls"



=== TEST 13: llm_tool_parser none returns tool-call text as content
--- config
llm_tool_parser none;
location = /v1/chat/completions { llm_api chat; }
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0, "chat_template_kwargs": {"enable_thinking": false}})
--- error_code: 200
--- response_body_like: "content":"<tool_call>\\n\{\\"name\\": \\"get_weather\\"
--- response_body_unlike: "tool_calls"



=== TEST 14: llm_reasoning_parser none leaves the think block in the content
--- config
llm_reasoning_parser none;
location = /v1/chat/completions { llm_api chat; }
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hello there!"}], "temperature": 0}
--- error_code: 200
--- response_body_like: "content":"<think>\\n
--- response_body_unlike: reasoning_content
