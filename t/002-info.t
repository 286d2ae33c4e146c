# /v1/models, /health and request ids.
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

=== TEST 1: the model list has OpenAI's shape and the context from config.json
--- config
location /v1/models { llm_api models; }
--- request
GET /v1/models
--- error_code: 200
--- response_headers
Content-Type: application/json
--- response_body_like: ^\{"object":"list","data":\[\{"id":"tiny","object":"model","created":\d+,"owned_by":"ngx_llm","context_length":256,"max_output_tokens":256\}\]\}$



=== TEST 2: ctx= overrides the context length
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=128;
llm_thread_pool llm;
--- config
location /v1/models { llm_api models; }
--- request
GET /v1/models
--- response_body_like: "context_length":128



=== TEST 3: several models are listed in configuration order
--- http_config
llm_model first $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_model second $TEST_NGINX_FIXTURES/models/llama_f32;
llm_thread_pool llm;
--- config
location /v1/models { llm_api models; }
--- request
GET /v1/models
--- response_body_like: "data":\[\{"id":"first",.*\},\{"id":"second",.*\}\]



=== TEST 4: one model by id
--- config
location /v1/models { llm_api models; }
--- request
GET /v1/models/tiny
--- error_code: 200
--- response_body_like: ^\{"id":"tiny","object":"model",



=== TEST 5: an unknown model id is a 404 in OpenAI's error shape
--- config
location /v1/models { llm_api models; }
--- request
GET /v1/models/nope
--- error_code: 404
--- response_body_like: ^\{"error":\{"message":"The model 'nope' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found","request_id":"[0-9a-f]{32}"\}\}$



=== TEST 6: health reports ok and the models
--- config
location = /health { llm_api health; }
--- request
GET /health
--- error_code: 200
--- response_body_like: ^\{"status":"ok","models":\[\{"id":"tiny","context_length":256,



=== TEST 7: POST on the model list is a 405 with Allow
--- config
location /v1/models { llm_api models; }
--- request
POST /v1/models
{}
--- error_code: 405
--- response_headers
Allow: GET, HEAD
--- response_body_like: "code":"method_not_allowed"



=== TEST 8: HEAD gets headers only
--- config
location = /health { llm_api health; }
--- request
HEAD /health
--- error_code: 200
--- response_headers
Content-Type: application/json
--- response_body eval
""



=== TEST 9: a request id is generated when the client sends none
--- config
location = /health { llm_api health; }
--- request
GET /health
--- response_headers_like
X-Request-ID: ^[0-9a-f]{32}$



=== TEST 10: a valid client request id is echoed
--- config
location = /health { llm_api health; }
--- request
GET /health
--- more_headers
X-Request-ID: trace-42.abc_DEF
--- response_headers
X-Request-ID: trace-42.abc_DEF



=== TEST 11: an invalid client request id is replaced
--- config
location = /health { llm_api health; }
--- request
GET /health
--- more_headers
X-Request-ID: bad id with spaces
--- response_headers_like
X-Request-ID: ^[0-9a-f]{32}$



=== TEST 12: the request id in an error body matches the header
--- config
location /v1/models { llm_api models; }
--- request
GET /v1/models/missing
--- more_headers
X-Request-ID: req-123
--- error_code: 404
--- response_headers
X-Request-ID: req-123
--- response_body_like: "request_id":"req-123"



=== TEST 13: locations without llm_api are untouched
--- config
location = /plain { return 404; }
--- request
GET /plain
--- error_code: 404
--- response_headers
!X-Request-ID
--- response_body_like: <html>
