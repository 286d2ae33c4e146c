# POST /v1/responses (llm_api responses) with the shipped default model
# (models/ngxllm-tiny: thinks in <think>, calls tools in Hermes blocks):
# the response object, the streamed semantic events in order, a function
# call round trip, and bad input in OpenAI's error shape.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

our $W = '{"type": "function", "name": "get_weather", "description": "Get the current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}';
# Codex CLI's default tool shapes: a namespace of functions, a hosted web_search
our $NS = '{"type": "namespace", "name": "weather", "description": "Weather tools", "tools": [{"type": "function", "name": "get_weather", "description": "Get the current weather for a city", "strict": false, "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}]}, {"type": "web_search", "external_web_access": false}';
our $ASK = '"What is the weather in Paris?"';

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
        "location /v1/responses { llm_api responses; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: a response object: id, status, reasoning and message items, usage
--- request
POST /v1/responses
{"model": "tiny", "input": "Hello there!", "instructions": "You are a helpful assistant.", "temperature": 0, "metadata": {"run": "t037"}}
--- error_code: 200
--- response_headers
Content-Type: application/json
--- response_body_like: ^\{"id":"resp_[A-Za-z0-9]{24}","object":"response","created_at":\d+,"status":"completed","background":false,"error":null,"incomplete_details":null,"instructions":"You are a helpful assistant.","max_output_tokens":null,"model":"tiny","output":\[\{"id":"rs_\w{24}","type":"reasoning","summary":\[\],"content":\[\{"type":"reasoning_text","text":"[^"]+"\}\]\},\{"id":"msg_\w{24}","type":"message","status":"completed","role":"assistant","content":\[\{"type":"output_text","text":"[^"]+","annotations":\[\],"logprobs":\[\]\}\]\}\],"parallel_tool_calls":true,"reasoning":\{"effort":null,"summary":null\},"temperature":0,"text":\{"format":\{"type":"text"\}\},"tool_choice":"auto","tools":\[\],"top_p":null,"truncation":"disabled","previous_response_id":null,"store":false,"usage":\{"input_tokens":\d+,"input_tokens_details":\{"cached_tokens":\d+\},"output_tokens":(\d+),"output_tokens_details":\{"reasoning_tokens":[1-9]\d*\},"total_tokens":\d+\},"user":null,"metadata":\{"run":"t037"\}\}$



=== TEST 2: max_output_tokens reached: status incomplete with its reason
--- request
POST /v1/responses
{"input": [{"role": "user", "content": [{"type": "input_text", "text": "Hello there!"}]}], "max_output_tokens": 3, "temperature": 0}
--- error_code: 200
--- response_body_like: "status":"incomplete","background":false,"error":null,"incomplete_details":\{"reason":"max_output_tokens"\}.*"output_tokens":3,



=== TEST 3: reasoning.effort none: no reasoning item
--- request
POST /v1/responses
{"input": "Hello there!", "reasoning": {"effort": "none"}, "temperature": 0}
--- error_code: 200
--- response_body_like: "output":\[\{"id":"msg_\w+","type":"message","status":"completed","role":"assistant","content":\[\{"type":"output_text","text":"[^"]+".*"reasoning_tokens":0\}



=== TEST 4: streamed: the semantic events in order, numbered from 0, ending with response.completed
--- request
POST /v1/responses
{"input": "Hello there!", "temperature": 0, "stream": true}
--- error_code: 200
--- response_headers
Content-Type: text/event-stream
--- response_body_like: ^event: response.created\ndata: \{"type":"response.created","sequence_number":0,"response":\{"id":"resp_\w{24}","object":"response","created_at":\d+,"status":"in_progress".*"output":\[\].*"usage":null.*\n\nevent: response.in_progress\ndata: \{"type":"response.in_progress","sequence_number":1,.*\n\nevent: response.output_item.added\ndata: \{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":\{"id":"rs_\w+","type":"reasoning","summary":\[\]\}\}\n\nevent: response.content_part.added\ndata: \{"type":"response.content_part.added","sequence_number":3,"item_id":"rs_\w+","output_index":0,"content_index":0,"part":\{"type":"reasoning_text","text":""\}\}\n\nevent: response.reasoning_text.delta\n.*event: response.reasoning_text.done\n.*event: response.content_part.done\n.*event: response.output_item.done\n.*event: response.output_item.added\ndata: \{"type":"response.output_item.added","sequence_number":\d+,"output_index":1,"item":\{"id":"msg_\w+","type":"message","status":"in_progress","role":"assistant","content":\[\]\}\}\n\nevent: response.content_part.added\n.*"part":\{"type":"output_text","text":"","annotations":\[\],"logprobs":\[\]\}\}\n\nevent: response.output_text.delta\ndata: \{"type":"response.output_text.delta","sequence_number":\d+,"item_id":"msg_\w+","output_index":1,"content_index":0,"delta":"[^"]+","logprobs":\[\]\}\n\n.*event: response.output_text.done\n.*event: response.content_part.done\n.*event: response.output_item.done\n.*"status":"completed".*\n\nevent: response.completed\ndata: \{"type":"response.completed","sequence_number":\d+,"response":\{"id":"resp_\w+","object":"response","created_at":\d+,"status":"completed".*"output":\[\{"id":"rs_\w+","type":"reasoning".*\{"id":"msg_\w+","type":"message".*"usage":\{"input_tokens":\d+.*\}\}\n\n$



=== TEST 5: a function call, not streamed: a function_call item with call_id, name and arguments
--- request eval
"POST /v1/responses\n" . qq({"input": $::ASK, "tools": [$::W], "temperature": 0})
--- error_code: 200
--- response_body_like: "output":\[\{"id":"rs_\w+","type":"reasoning".*\},\{"id":"fc_\w{24}","type":"function_call","status":"completed","call_id":"call_\w{24}","name":"get_weather","arguments":"\{\\"city\\":\\"Paris\\"\}"\}\],"parallel_tool_calls":true.*"tools":\[\{"type":"function","name":"get_weather",



=== TEST 6: a function call, streamed: arguments deltas, then .done with the whole arguments
--- request eval
"POST /v1/responses\n" . qq({"input": $::ASK, "tools": [$::W], "temperature": 0, "stream": true})
--- error_code: 200
--- response_body_like: event: response.output_item.added\ndata: \{"type":"response.output_item.added","sequence_number":\d+,"output_index":1,"item":\{"id":"fc_\w+","type":"function_call","status":"in_progress","call_id":"call_\w+","name":"get_weather","arguments":""\}\}\n\n(event: response.function_call_arguments.delta\ndata: [^\n]+\n\n)+event: response.function_call_arguments.done\ndata: \{"type":"response.function_call_arguments.done","sequence_number":\d+,"item_id":"fc_\w+","output_index":1,"name":"get_weather","arguments":"\{\\"city\\":\\"Paris\\"\}"\}\n\nevent: response.output_item.done\n.*event: response.completed\n



=== TEST 7: the round trip: function_call and function_call_output items give the answer
--- request eval
"POST /v1/responses\n" . qq({"input": [{"role": "user", "content": $::ASK}, {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}, {"type": "function_call_output", "call_id": "call_1", "output": "{\\"temperature_c\\": 18, \\"condition\\": \\"cloudy\\"}"}], "tools": [$::W], "temperature": 0})
--- error_code: 200
--- response_body_like: "status":"completed".*"type":"message","status":"completed","role":"assistant","content":\[\{"type":"output_text","text":"[^"]*18[^"]*"



=== TEST 8: text.format json_schema: the output follows the schema
--- request
POST /v1/responses
{"input": "Give me a number.", "reasoning": {"effort": "none"}, "temperature": 0, "max_output_tokens": 40, "text": {"format": {"type": "json_schema", "name": "n", "strict": true, "schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}}}}
--- error_code: 200
--- response_body_like: "type":"output_text","text":"\{\\"n\\": ?-?\d+\}"



=== TEST 9: previous_response_id is refused: this server keeps no responses
--- request
POST /v1/responses
{"input": "hi", "previous_response_id": "resp_123"}
--- error_code: 400
--- response_body_like: ^\{"error":\{"message":"Unsupported parameter: 'previous_response_id'. [^"]+","type":"invalid_request_error","param":"previous_response_id","code":"unsupported_parameter","request_id":"\w+"\}\}$



=== TEST 10: client tools other than functions and namespaces are refused, naming the type
--- request
POST /v1/responses
{"input": "hi", "tools": [{"type": "web_search_preview"}, {"type": "custom", "name": "apply_patch"}]}
--- error_code: 400
--- response_body_like: "message":"Invalid value for 'tools\[1\].type': tools of type 'custom' are not supported by this server; 'function' and 'namespace' tools are \(and hosted tools such as 'web_search' are left out\).","type":"invalid_request_error","param":"tools\[1\].type","code":"unsupported_value"



=== TEST 11: missing input; a bad item; an answer to no call
--- request eval
["POST /v1/responses\n{\"model\": \"tiny\"}",
 "POST /v1/responses\n{\"input\": [{\"type\": \"item_reference\", \"id\": \"msg_1\"}]}",
 "POST /v1/responses\n{\"input\": [{\"type\": \"function_call_output\", \"call_id\": \"nope\", \"output\": \"x\"}]}",
 "POST /v1/responses\n{\"input\": \"hi\", \"model\": \"gpt-5\"}"]
--- error_code eval
[400, 400, 400, 404]
--- response_body_like eval
["\"param\":\"input\",\"code\":\"missing_required_parameter\"",
 "\"param\":\"input\\[0\\].type\",\"code\":\"unsupported_value\"",
 "\"param\":\"input\\[0\\].call_id\",\"code\":\"invalid_value\"",
 "\"type\":\"invalid_request_error\",\"param\":\"model\",\"code\":\"model_not_found\""]



=== TEST 12: only POST /v1/responses answers: GET of a response id is a 404, GET of the endpoint a 405
--- request eval
["GET /v1/responses/resp_123", "GET /v1/responses"]
--- error_code eval
[404, 405]
--- response_body_like eval
["^\\{\"error\":\\{\"message\":\"[^\"]+\",\"type\":\"invalid_request_error\"", "^\\{\"error\":\\{\"message\":\"[^\"]+\""]



=== TEST 13: max_output_tokens above an explicit llm_max_tokens is a 400 naming it
--- config
location /v1/responses { llm_api responses; llm_max_tokens 10; }
--- request
POST /v1/responses
{"input": "hi", "max_output_tokens": 50}
--- error_code: 400
--- response_body_like: "message":"max_output_tokens is 50, more than this server allows for model 'tiny' \(llm_max_tokens 10\).","type":"invalid_request_error","param":"max_output_tokens","code":"invalid_value"



=== TEST 14: a namespace's function is called and answered as {namespace, name}; web_search is left out
--- request eval
"POST /v1/responses\n" . qq({"input": $::ASK, "tools": [$::NS], "tool_choice": "required", "temperature": 0})
--- error_code: 200
--- response_body_like: \{"id":"fc_\w{24}","type":"function_call","status":"completed","call_id":"call_\w{24}","namespace":"weather","name":"get_weather","arguments":"\{\\"city\\":\\"Paris\\"\}"\}\],.*"tools":\[\{"type":"namespace","name":"weather",.*\{"type":"web_search","external_web_access":false\}\]



=== TEST 15: the same streamed: every event of the call carries namespace and name
--- request eval
"POST /v1/responses\n" . qq({"input": $::ASK, "tools": [$::NS], "tool_choice": "required", "temperature": 0, "stream": true})
--- error_code: 200
--- response_body_like: "item":\{"id":"fc_\w+","type":"function_call","status":"in_progress","call_id":"call_\w+","namespace":"weather","name":"get_weather","arguments":""\}\}\n\n.*"type":"response.function_call_arguments.done","sequence_number":\d+,"item_id":"fc_\w+","output_index":\d+,"namespace":"weather","name":"get_weather","arguments":"\{\\"city\\":\\"Paris\\"\}"\}\n\nevent: response.output_item.done\ndata: [^\n]*"namespace":"weather","name":"get_weather".*event: response.completed\n



=== TEST 16: the round trip with the namespaced call sent back as it came
--- request eval
"POST /v1/responses\n" . qq({"input": [{"role": "user", "content": $::ASK}, {"type": "function_call", "call_id": "call_1", "namespace": "weather", "name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}, {"type": "function_call_output", "call_id": "call_1", "output": "{\\"temperature_c\\": 18, \\"condition\\": \\"cloudy\\"}"}], "tools": [$::NS], "temperature": 0})
--- error_code: 200
--- response_body_like: "status":"completed".*"type":"message","status":"completed","role":"assistant","content":\[\{"type":"output_text","text":"[^"]*18[^"]*"
