# Anthropic /v1/messages and /v1/messages/count_tokens on a fixture model:
# shapes, the streaming event sequence, errors in Anthropic's shape.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config",
        "location /v1/messages { llm_api messages; }\n"
        . "location = /health { llm_api health; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: a message has Anthropic's shape
--- request
POST /v1/messages
{"model": "tiny", "max_tokens": 4, "temperature": 0, "messages": [{"role": "user", "content": "hi"}]}
--- more_headers
x-api-key: unused
anthropic-version: 2023-06-01
--- error_code: 200
--- response_headers
Content-Type: application/json
--- response_body_like: ^\{"id":"msg_[A-Za-z0-9]{24}","type":"message","role":"assistant","model":"tiny","content":\[\{"type":"text","text":".*"\}\],"stop_reason":"max_tokens","stop_sequence":null,"usage":\{"input_tokens":\d+,"cache_creation_input_tokens":0,"cache_read_input_tokens":\d+,"output_tokens":4\}\}$



=== TEST 2: system text and block content go through the template
--- request
POST /v1/messages
{"max_tokens": 1, "temperature": 0, "system": [{"type": "text", "text": "be brief"}], "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
--- error_code: 200
--- response_body_like: "input_tokens":37,



=== TEST 3: streaming sends the event sequence
--- request
POST /v1/messages
{"max_tokens": 3, "temperature": 0, "stream": true, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 200
--- response_headers
Content-Type: text/event-stream
--- response_body_like: ^event: message_start\ndata: \{"type":"message_start","message":\{"id":"msg_\w+","type":"message","role":"assistant","model":"tiny","content":\[\],"stop_reason":null,"stop_sequence":null,"usage":\{"input_tokens":\d+,.*"output_tokens":\d+\}\}\}\n\n.*event: content_block_start\ndata: \{"type":"content_block_start","index":0,"content_block":\{"type":"text","text":""\}\}\n\n.*event: ping\ndata: \{"type":"ping"\}\n\n.*event: content_block_delta\ndata: \{"type":"content_block_delta","index":0,"delta":\{"type":"text_delta","text":.*event: content_block_stop\ndata: \{"type":"content_block_stop","index":0\}\n\nevent: message_delta\ndata: \{"type":"message_delta","delta":\{"stop_reason":"max_tokens","stop_sequence":null\},"usage":\{"input_tokens":\d+,"cache_creation_input_tokens":0,"cache_read_input_tokens":\d+,"output_tokens":3\}\}\n\nevent: message_stop\ndata: \{"type":"message_stop"\}\n\n$



=== TEST 4: count_tokens renders and tokenizes the prompt
--- request
POST /v1/messages/count_tokens
{"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 200
--- response_body: {"input_tokens":20}



=== TEST 5: max_tokens is required
--- request
POST /v1/messages
{"messages": [{"role": "user", "content": "hi"}]}
--- error_code: 400
--- response_body_like: ^\{"type":"error","error":\{"type":"invalid_request_error","message":".*max_tokens.*"\},"request_id":"[0-9a-f]{32}"\}$



=== TEST 6: a role other than user, assistant, system inside messages is rejected
--- request
POST /v1/messages
{"max_tokens": 5, "messages": [{"role": "tool", "content": "hi"}]}
--- error_code: 400
--- response_body_like: "type":"invalid_request_error","message":".*messages\.0\.role|messages\[0\]\.role



=== TEST 7: image blocks are refused clearly
--- request
POST /v1/messages
{"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}]}
--- error_code: 400
--- response_body_like: "type":"invalid_request_error".*image



=== TEST 8: an unknown model is a not_found_error
--- request
POST /v1/messages
{"model": "claude-9", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 404
--- response_body_like: "type":"not_found_error"



=== TEST 9: a history with tool_use and tool_result renders
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=1024;
llm_thread_pool llm;
--- request
POST /v1/messages
{"max_tokens": 1, "temperature": 0, "tools": [{"name": "get_time", "description": "time", "input_schema": {"type": "object", "properties": {}}}], "messages": [{"role": "user", "content": "time?"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "12:00"}]}]}
--- error_code: 200
--- response_body_like: "stop_reason":"max_tokens"



=== TEST 10: no sequence is left behind
--- request eval
["POST /v1/messages\n{\"max_tokens\": 2, \"stream\": true, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}",
 "GET /health"]
--- error_code eval
[200, 200]
--- response_body_like eval
["message_stop", "\"running\":0,\"waiting\":0,\"live_sequences\":0,"]
