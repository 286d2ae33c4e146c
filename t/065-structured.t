# Structured output enforced by grammars (src/grammar): response_format
# json_object / json_schema, the grammar and regex extensions, tool_choice
# required / named (OpenAI) and any / tool (Anthropic) in the model's own
# call format, with the shipped model (models/ngxllm-tiny) and a
# random-weight one (t/fixtures/models/qwen3_f32: any output is possible,
# only the grammar makes it valid).
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

our $W = '{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"], "additionalProperties": false}}}';
our $T = '{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "PST"]}}, "required": ["zone"]}}}';
our $ASK = '{"role": "user", "content": "What is the weather in Paris?"}';
our $SCHEMA = '{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}, "pets": {"type": "array", "items": {"type": "string", "enum": ["cat", "dog"]}, "maxItems": 2}}, "required": ["name", "age", "pets"], "additionalProperties": false}';

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
        . "location = /v1/completions { llm_api completions; }\n"
        . "location = /v1/messages { llm_api messages; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
    # the model's generation_config.json top_k/top_p apply to requests that
    # set only a temperature: some answers run to a few hundred tokens, which
    # takes seconds on a loaded 2-core machine (and under ASan)
    $block->set_value("timeout", "30") unless defined $block->timeout;
});

run_tests();

__DATA__

=== TEST 1: response_format json_schema: the content is an object of that schema
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [{"role": "user", "content": "Tell me about a person."}], "temperature": 1.5, "seed": 3, "max_tokens": 200, "response_format": {"type": "json_schema", "json_schema": {"name": "person", "strict": true, "schema": $::SCHEMA}}})
--- error_code: 200
--- response_body_like: "content":"\{\\"name\\": ?\\"[^"\\]{0,12}\\", ?\\"age\\": ?(\d|[1-9]\d|1[01]\d|120), ?\\"pets\\": ?\[((\\"(cat|dog)\\")(, ?\\"(cat|dog)\\")?)?\]\}".*"finish_reason":"stop"



=== TEST 2: response_format json_object: a JSON object
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Give me JSON."}], "temperature": 0.8, "seed": 5, "max_tokens": 300, "response_format": {"type": "json_object"}}
--- error_code: 200
--- response_body_like: "content":"\{.*\}","reasoning_content".*"finish_reason":"stop"



=== TEST 3: a schema keyword that cannot be enforced is a 400 naming it
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "string", "not": {"const": "b"}}}}}}}
--- error_code: 400
--- response_body_like: ^\{"error":\{"message":"Invalid 'response_format.json_schema.schema': JSON Schema keyword 'not' is not supported\.","type":"invalid_request_error","param":"response_format.json_schema.schema","code":"invalid_value"



=== TEST 4: the regex extension
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "yes or no?"}], "temperature": 1.5, "seed": 1, "max_tokens": 120, "regex": "(yes|no), [0-9]{3}", "chat_template_kwargs": {"enable_thinking": false}}
--- error_code: 200
--- response_body_like: "content":"(yes|no), [0-9]{3}".*"finish_reason":"stop"



=== TEST 5: the grammar extension (GBNF)
--- request
POST /v1/completions
{"prompt": "Code:", "temperature": 1.5, "seed": 2, "max_tokens": 20, "grammar": "root ::= \"A\" digit digit (\"!\" | \"?\")\ndigit ::= [0-9]"}
--- error_code: 200
--- response_body_like: "text":"A[0-9]{2}[!?]".*"finish_reason":"stop"



=== TEST 6: a grammar that cannot be used is a 400
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hi"}], "grammar": "root ::= root \"a\" | \"b\""}
--- error_code: 400
--- response_body_like: "message":"Invalid 'grammar': grammar: rule 'root' is left-recursive\.".*"param":"grammar"



=== TEST 7: grammar and regex together are refused
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hi"}], "grammar": "root ::= \"a\"", "regex": "a"}
--- error_code: 400
--- response_body_like: Only one of



=== TEST 8: tool_choice required: a call in the model's format with valid arguments, even at temperature 1.5
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [{"role": "user", "content": "Tell me a joke."}], "tools": [$::W, $::T], "tool_choice": "required", "temperature": 1.5, "seed": 11, "max_tokens": 300})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w{24}","type":"function","function":\{"name":"(get_weather","arguments":"\{\\"city\\":\\"[^"\\]{0,20}\\",\\"days\\":[1-7]\}|get_time","arguments":"\{\\"zone\\":\\"(UTC|CET|PST)\\"\})"\}\}.*"finish_reason":"tool_calls"



=== TEST 9: a named tool is the one called
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W, $::T], "tool_choice": {"type": "function", "function": {"name": "get_time"}}, "temperature": 1.2, "seed": 4, "max_tokens": 300})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w{24}","type":"function","function":\{"name":"get_time","arguments":"\{\\"zone\\":\\"(UTC|CET|PST)\\"\}"\}\}\]\},"logprobs":null,"finish_reason":"tool_calls"



=== TEST 10: parallel_tool_calls false: one call
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W, $::T], "tool_choice": "required", "parallel_tool_calls": false, "temperature": 1.5, "seed": 8, "max_tokens": 300})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w{24}","type":"function","function":\{"name":"get_\w+","arguments":"[^"]*(\\"[^"]*)*"\}\}\]\}



=== TEST 11: Anthropic tool_choice any: a tool_use block with valid input
--- request eval
"POST /v1/messages\n" . qq({"model": "tiny", "max_tokens": 300, "temperature": 1, "messages": [{"role": "user", "content": "Hello"}], "tools": [{"name": "get_time", "input_schema": {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}}, "required": ["zone"]}}], "tool_choice": {"type": "any"}})
--- error_code: 200
--- response_body_like: "type":"tool_use","id":"toolu_\w+","name":"get_time","input":\{"zone":"(UTC|CET)"\}\}\].*"stop_reason":"tool_use"



=== TEST 12: streamed json_schema: content deltas that join to the object
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [{"role": "user", "content": "A person?"}], "temperature": 1.0, "seed": 9, "max_tokens": 200, "stream": true, "chat_template_kwargs": {"enable_thinking": false}, "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": $::SCHEMA}}})
--- error_code: 200
--- response_body_like: "delta":\{"content":"\{"\}.*"delta":\{"content":"name"\}.*"finish_reason":"stop"\}\]\}\n\ndata: \[DONE\]\n\n$



=== TEST 13: a random-weight model: only the grammar makes the output valid
--- http_config eval
"llm_model rnd $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 ctx=512;\nllm_thread_pool llm;"
--- request eval
"POST /v1/completions\n" . qq({"prompt": "x", "temperature": 1.5, "seed": 21, "max_tokens": 400, "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": $::SCHEMA}}})
--- error_code: 200
--- response_body_like: "text":"\{\\"name\\": ?\\"[^"\\]*(\\\\.[^"\\]*)*\\", ?\\"age\\": ?(\d|[1-9]\d|1[01]\d|120), ?\\"pets\\": ?\[((\\"(cat|dog)\\")(, ?\\"(cat|dog)\\")?)?\]\}".*"finish_reason":"stop"



=== TEST 14: qwen3_coder (XML parameters): tool_choice required on a random-weight model gives a valid call
--- http_config eval
"llm_model rnd $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 ctx=2048;\nllm_thread_pool llm;"
--- config
location = /v1/chat/completions { llm_api chat; llm_tool_parser qwen3_coder; }
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W, $::T], "tool_choice": "required", "parallel_tool_calls": false, "temperature": 1.5, "seed": 14, "max_tokens": 400})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w{24}","type":"function","function":\{"name":"(get_weather","arguments":"\{\\"city\\":\\".*\\",\\"days\\":[1-7]\}|get_time","arguments":"\{\\"zone\\":\\"(UTC|CET|PST)\\"\})"\}\}.*"finish_reason":"tool_calls"



=== TEST 15: glm4 (arg_key / arg_value): a named tool on a random-weight model
--- http_config eval
"llm_model rnd $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 ctx=2048;\nllm_thread_pool llm;"
--- config
location = /v1/chat/completions { llm_api chat; llm_tool_parser glm4; }
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W, $::T], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "parallel_tool_calls": false, "temperature": 1.2, "seed": 15, "max_tokens": 400})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w{24}","type":"function","function":\{"name":"get_weather","arguments":"\{\\"city\\":\\".*\\",\\"days\\":[1-7]\}"\}\}.*"finish_reason":"tool_calls"



=== TEST 16: pythonic: tool_choice required, one call, on a random-weight model
--- http_config eval
"llm_model rnd $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 ctx=2048;\nllm_thread_pool llm;"
--- config
location = /v1/chat/completions { llm_api chat; llm_tool_parser pythonic; }
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W, $::T], "tool_choice": "required", "parallel_tool_calls": false, "temperature": 1.5, "seed": 16, "max_tokens": 400})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w{24}","type":"function","function":\{"name":"(get_weather","arguments":"\{\\"city\\":\\".*\\",\\"days\\":[1-7]\}|get_time","arguments":"\{\\"zone\\":\\"(UTC|CET|PST)\\"\})"\}\}\]\},"logprobs":null,"finish_reason":"tool_calls"



=== TEST 17: glm4_0414 (name line, then JSON arguments): tool_choice required, one call, on a random-weight model
--- http_config eval
"llm_model rnd $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 ctx=2048;\nllm_thread_pool llm;"
--- config
location = /v1/chat/completions { llm_api chat; llm_tool_parser glm4_0414; }
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W, $::T], "tool_choice": "required", "parallel_tool_calls": false, "temperature": 1.5, "seed": 17, "max_tokens": 400})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_\w{24}","type":"function","function":\{"name":"(get_weather","arguments":"\{\\"city\\": ?\\".*\\", ?\\"days\\": ?[1-7]\}|get_time","arguments":"\{\\"zone\\": ?\\"(UTC|CET|PST)\\"\})"\}\}.*"finish_reason":"tool_calls"



=== TEST 18: a parameter the XML format can only write as text, with a schema text cannot meet, is a 400 naming it
--- config
location = /v1/chat/completions { llm_api chat; llm_tool_parser qwen3_coder; }
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}}}}}], "tool_choice": "required"}
--- error_code: 400
--- response_body_like: "message":"tool 'f' parameters: parameter 'x': 'anyOf' cannot be enforced on a text value in this tool-call format\.".*"param":"tool_choice"



=== TEST 19: tool_choice auto: a tool whose parameters cannot be enforced is a 400 naming the keyword (a call the model starts must complete validly)
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string", "not": {"const": "b"}}}}}}], "tool_choice": "auto"}
--- error_code: 400
--- response_body_like: "message":"tool 'f' parameters: JSON Schema keyword 'not' is not supported\.".*"param":"tools"



=== TEST 20: oneOf whose branches may both match one value is a 400 naming oneOf (never enforced as anyOf)
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "Hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"id": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}}}}}
--- error_code: 400
--- response_body_like: "message":"Invalid 'response_format.json_schema.schema': JSON Schema: 'oneOf' branches 0 and 1 may match the same value
