# Error statuses and shapes on inference endpoints.
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
});

run_tests();

__DATA__

=== TEST 1: GET on chat completions is a 405 with Allow: POST
--- config
location = /v1/chat/completions { llm_api chat; }
--- request
GET /v1/chat/completions
--- error_code: 405
--- response_headers
Allow: POST
Content-Type: application/json
--- response_body_like: ^\{"error":\{"message":"Method GET is not allowed here; use POST.","type":"invalid_request_error","param":null,"code":"method_not_allowed","request_id":"[0-9a-f]{32}"\}\}$



=== TEST 2: malformed JSON is a 400 that says where
--- config
location = /v1/chat/completions { llm_api chat; }
--- request
POST /v1/chat/completions
{"model": "tiny", "messages": [
--- error_code: 400
--- response_body_like: "message":"We could not parse the JSON body of your request: .*line 1.*","type":"invalid_request_error"



=== TEST 3: a JSON body that is not an object is a 400
--- config
location = /v1/chat/completions { llm_api chat; }
--- request
POST /v1/chat/completions
[1, 2, 3]
--- error_code: 400
--- response_body_like: "type":"invalid_request_error"



=== TEST 4: a body over client_max_body_size is a 413 in JSON
--- config
location = /v1/chat/completions { client_max_body_size 64; llm_api chat; }
--- request eval
"POST /v1/chat/completions\n" . ('{"model":"tiny","messages":[]}' x 10)
--- error_code: 413
--- response_headers
Content-Type: application/json
--- response_body_like: ^\{"error":\{"message":"Request body too large: it exceeds client_max_body_size.","type":"invalid_request_error"



=== TEST 5: an unknown model is a 404 model_not_found
--- config
location = /v1/chat/completions { llm_api chat; }
--- request
POST /v1/chat/completions
{"model": "gpt-17", "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 404
--- response_body_like: "message":"The model 'gpt-17' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"



=== TEST 6: Anthropic locations answer errors in Anthropic's shape
--- config
location /v1/messages { llm_api messages; }
--- request
POST /v1/messages
{"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 404
--- response_body_like: ^\{"type":"error","error":\{"type":"not_found_error","message":"The model 'claude-x' does not exist."\},"request_id":"[0-9a-f]{32}"\}$



=== TEST 7: a 401 from auth_basic is rewritten to the protocol shape
--- config
location = /v1/chat/completions {
    auth_basic "llm";
    auth_basic_user_file $TEST_NGINX_FIXTURES/htpasswd-none;
    llm_api chat;
}
--- request
POST /v1/chat/completions
{}
--- error_code: 401
--- response_headers
Content-Type: application/json
--- response_body_like: "type":"authentication_error"



=== TEST 8: a 403 from allow/deny is rewritten to Anthropic's shape
--- config
location /v1/messages {
    deny all;
    llm_api messages;
}
--- request
POST /v1/messages
{}
--- error_code: 403
--- response_body_like: ^\{"type":"error","error":\{"type":"permission_error","message":"Forbidden."\},"request_id":"[0-9a-f]{32}"\}$



=== TEST 9: model must be a string
--- config
location = /v1/chat/completions { llm_api chat; }
--- request
POST /v1/chat/completions
{"model": 42, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 400
--- response_body_like: "param":"model"



=== TEST 10: limit_req rejections are JSON 429s
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_thread_pool llm;
limit_req_zone $binary_remote_addr zone=llm:1m rate=1r/m;
--- config
location = /v1/chat/completions {
    limit_req zone=llm nodelay;
    limit_req_status 429;
    llm_api chat;
}
--- request eval
["POST /v1/chat/completions\n{\"max_tokens\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}",
 "POST /v1/chat/completions\n{\"max_tokens\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}"]
--- error_code eval
[200, 429]
--- response_body_like eval
["\"object\":\"chat.completion\"", "^\\{\"error\":\\{\"message\":\"Too many requests: rate limit exceeded.\",\"type\":\"rate_limit_error\""]
