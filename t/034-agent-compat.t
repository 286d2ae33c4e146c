# What agent clients send that the protocols allow (issue 21, agent-client
# compatibility): documented paths only, error types, system messages inside
# messages, adaptive thinking, interleaved-thinking budgets, the Anthropic
# model list, cache reads in streamed usage.
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
        "location = /v1/chat/completions { llm_api chat; }\n"
        . "location /v1/messages { llm_api messages; }\n"
        . "location /v1/models { llm_api models; }\n"
        . "location /v1/ { llm_errors openai; return 404; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: /v1/messages/batches is a 404 in Anthropic's shape, not a generation
--- request
POST /v1/messages/batches
{"model": "tiny", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 404
--- response_headers
Content-Type: application/json
--- response_body_like: ^\{"type":"error","error":\{"type":"not_found_error","message":"Invalid URL \(POST /v1/messages/batches\)



=== TEST 2: /v1/messagesXYZ is a 404
--- request
POST /v1/messagesXYZ
{"model": "tiny", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 404
--- response_body_like: "type":"not_found_error"



=== TEST 3: GET /v1/messages/foo is a 404 (not a 405)
--- request
GET /v1/messages/foo
--- error_code: 404
--- response_body_like: "type":"not_found_error"



=== TEST 4: /v1/messages/count_tokens still counts
--- request
POST /v1/messages/count_tokens
{"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 200
--- response_body_like: ^\{"input_tokens":\d+\}$



=== TEST 5: /v1/modelsfoo is a 404 in OpenAI's shape, not the list
--- request
GET /v1/modelsfoo
--- error_code: 404
--- response_body_like: ^\{"error":\{"message":"Invalid URL \(GET /v1/modelsfoo\)[^"]*","type":"invalid_request_error","param":null,"code":"unknown_url"



=== TEST 6: /v1/models/tiny/extra is a 404, not the model or the list
--- request
GET /v1/models/tiny/extra
--- error_code: 404
--- response_body_like: "code":"model_not_found"



=== TEST 7: an unknown /v1/ path gets JSON, not nginx's HTML page
--- request
POST /v1/files
{}
--- error_code: 404
--- response_headers
Content-Type: application/json
--- response_body_like: ^\{"error":\{"message":"[^"]*","type":"invalid_request_error"



=== TEST 8: an unknown model on an OpenAI endpoint is an invalid_request_error
--- request
POST /v1/chat/completions
{"model": "gpt-17", "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 404
--- response_body_like: "type":"invalid_request_error","param":"model","code":"model_not_found"



=== TEST 9: a system message inside messages is a system turn in place
--- request
POST /v1/messages
{"model": "tiny", "max_tokens": 2, "system": "You are terse.", "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": [{"type": "text", "text": "Answer in French."}]}, {"role": "user", "content": "again"}]}
--- error_code: 200
--- response_body_like: ^\{"id":"msg_[^"]+","type":"message","role":"assistant"



=== TEST 10: count_tokens counts the mid-conversation system message
--- request eval
["POST /v1/messages/count_tokens\n" . '{"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}',
 "POST /v1/messages/count_tokens\n" . '{"model": "tiny", "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "Answer in French."}]}']
--- error_code eval
[200, 200]
--- response_body_like eval
['^\{"input_tokens":20\}$', '^\{"input_tokens":(2[1-9]|[3-9]\d)\}$']



=== TEST 11: thinking adaptive with output_config.effort and display is accepted
--- request
POST /v1/messages
{"model": "tiny", "max_tokens": 2, "thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "medium"}, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 200
--- response_body_like: ^\{"id":"msg_[^"]+","type":"message"



=== TEST 12: an unknown output_config.effort is a 400 naming the field
--- request
POST /v1/messages
{"model": "tiny", "max_tokens": 2, "thinking": {"type": "adaptive"}, "output_config": {"effort": "extreme"}, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 400
--- response_body_like: "type":"invalid_request_error","message":"Invalid value for 'output_config.effort'



=== TEST 13: thinking.budget_tokens >= max_tokens is a 400 without the interleaved-thinking beta
--- request
POST /v1/messages
{"model": "tiny", "max_tokens": 2, "thinking": {"type": "enabled", "budget_tokens": 2048}, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 400
--- response_body_like: "message":"Invalid value for 'thinking.budget_tokens': it must be less than 'max_tokens' \(2\), but got 2048



=== TEST 14: and accepted with anthropic-beta: interleaved-thinking-*
--- more_headers
anthropic-beta: fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14
--- request
POST /v1/messages
{"model": "tiny", "max_tokens": 2, "thinking": {"type": "enabled", "budget_tokens": 2048}, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 200
--- response_body_like: ^\{"id":"msg_[^"]+","type":"message"



=== TEST 15: GET /v1/models with anthropic-version answers in Anthropic's shape
--- more_headers
anthropic-version: 2023-06-01
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: ^\{"data":\[\{"type":"model","id":"tiny","display_name":"tiny","created_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ","context_length":\d+,"max_output_tokens":\d+\}\],"has_more":false,"first_id":"tiny","last_id":"tiny"\}$



=== TEST 16: one model, and an unknown one, in Anthropic's shape
--- more_headers
anthropic-version: 2023-06-01
--- request eval
["GET /v1/models/tiny", "GET /v1/models/nope"]
--- error_code eval
[200, 404]
--- response_body_like eval
['^\{"type":"model","id":"tiny","display_name":"tiny","created_at":"[^"]+Z"',
 '^\{"type":"error","error":\{"type":"not_found_error","message":"The model \'nope\' does not exist."\}']



=== TEST 17: without anthropic-version the list keeps OpenAI's shape
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: ^\{"object":"list","data":\[\{"id":"tiny","object":"model","created":\d+,"owned_by":"ngx_llm","context_length":\d+,"max_output_tokens":\d+\}\]\}$



=== TEST 18: streamed usage reports cache reads in message_delta, as the message does
--- request eval
my $b = '{"model": "tiny", "max_tokens": 2, "temperature": 0, "stream": true, "system": "You are a careful assistant for a long agent session.", "messages": [{"role": "user", "content": "the same prompt twice"}]}';
["POST /v1/messages\n$b", "POST /v1/messages\n$b"]
--- error_code eval
[200, 200]
--- response_body_like eval
['event: message_delta\ndata: \{"type":"message_delta","delta":\{[^}]*\},"usage":\{"input_tokens":\d+,"cache_creation_input_tokens":0,"cache_read_input_tokens":\d+,"output_tokens":2\}\}',
 'event: message_delta\ndata: \{"type":"message_delta","delta":\{[^}]*\},"usage":\{"input_tokens":\d+,"cache_creation_input_tokens":0,"cache_read_input_tokens":[1-9]\d*,"output_tokens":2\}\}']



=== TEST 19: without llm_max_tokens, max_tokens may ask for all the context left (200, not a 400)
--- request
POST /v1/messages
{"model": "tiny", "max_tokens": 32000, "temperature": 0, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 200
--- response_body_like: "type":"message"



=== TEST 20: above an explicit llm_max_tokens: a 400 naming it, in Anthropic's shape; /v1/models advertises the cap
--- config
llm_max_tokens 64;
location /v1/messages { llm_api messages; }
location /v1/models { llm_api models; }
--- request eval
["POST /v1/messages\n{\"model\": \"tiny\", \"max_tokens\": 32000, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}",
 "GET /v1/models"]
--- error_code eval
[400, 200]
--- response_body_like eval
['^\{"type":"error","error":\{"type":"invalid_request_error","message":"max_tokens is 32000, more than this server allows for model \'tiny\' \(llm_max_tokens 64\)\."\}',
 '"context_length":\d+,"max_output_tokens":64\}']



=== TEST 21: llm_any_model on: the only model answers a model name it does not have
--- config
llm_any_model on;
location = /v1/chat/completions { llm_api chat; }
location /v1/messages { llm_api messages; }
--- request eval
["POST /v1/messages\n{\"model\": \"claude-sonnet-4-5\", \"max_tokens\": 2, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}",
 "POST /v1/chat/completions\n{\"model\": \"default\", \"max_tokens\": 2, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}"]
--- error_code eval
[200, 200]
--- response_body_like eval
['"model":"claude-sonnet-4-5"', '"model":"default"']



=== TEST 22: without it, an unknown model name is a 404
--- request
POST /v1/messages
{"model": "claude-sonnet-4-5", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 404
--- response_body_like: "type":"not_found_error"



=== TEST 23: with two models llm_any_model changes nothing: unknown names are a 404
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_model other $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_thread_pool llm;
--- config
llm_any_model on;
location = /v1/chat/completions { llm_api chat; }
--- request
POST /v1/chat/completions
{"model": "gpt-4o", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 404
--- response_body_like: "code":"model_not_found"
