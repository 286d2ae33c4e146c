# Admission and isolation (docs/api.md "Limits"): a request is admitted whole
# or refused before any work; what can never be admitted is a 400 that names
# the limit, not a 429 that retrying cannot cure; token ids are checked at the
# API so that no request can reach the engine with one the model lacks.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 parallel=2 queue=1;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config",
        "location = /v1/completions { llm_api completions; }\n"
        . "location = /v1/chat/completions { llm_api chat; }\n"
        . "location = /v1/embeddings { llm_api embeddings; }\n"
        . "location = /health { llm_api health; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[error]\n[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
    $block->set_value("timeout", "30") unless defined $block->timeout;
});

run_tests();

__DATA__

=== TEST 1: an embeddings token id outside the vocabulary is a 400 before any work
--- request
POST /v1/embeddings
{"input": [1, 2, 256]}
--- error_code: 400
--- response_body_like: "message":"input token 256 is outside the vocabulary \(0\.\.255\)\.","type":"invalid_request_error","param":"input","code":"invalid_value"



=== TEST 2: the same in a list of token lists; a negative id is the parser's 400
--- request eval
["POST /v1/embeddings\n" . '{"input": [[1, 2], [3, 8192]]}',
 "POST /v1/embeddings\n" . '{"input": [[-1]]}']
--- error_code eval
[400, 400]
--- response_body_like eval
['"message":"input token 8192 is outside the vocabulary \(0\.\.255\)\."',
 '"message":"input\[0\]\[0\] must be a non-negative token id\."']



=== TEST 3: the scheduler served nothing for them
--- request
GET /health
--- error_code: 200
--- response_body_like: "requests":0,



=== TEST 4: n = parallel + queue fits an idle server
--- request
POST /v1/completions
{"prompt": "hi", "max_tokens": 2, "n": 3, "temperature": 0}
--- error_code: 200
--- response_body_like: "index":2,



=== TEST 5: n > parallel + queue can never be admitted: 400 with the limit, not 429
--- request
POST /v1/completions
{"prompt": "hi", "max_tokens": 2, "n": 4}
--- error_code: 400
--- response_headers
!Retry-After
--- response_body_like: "message":"n=4 is more than model 'tiny' can hold at once \(parallel 2 \+ queue 1 = 3 sequences\)\.","type":"invalid_request_error","param":"n","code":"invalid_value"



=== TEST 6: chat too
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "n": 8}
--- error_code: 400
--- response_body_like: "param":"n","code":"invalid_value"



=== TEST 7: embeddings with more inputs than parallel + queue go through their places one after another
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=1 queue=1;
llm_thread_pool llm;
--- request
POST /v1/embeddings
{"input": ["one", "two", "three", "four", "five"]}
--- error_code: 200
--- response_body_like: "index":4,.*"usage":\{"prompt_tokens":\d+,"total_tokens":\d+\}



=== TEST 8: and leave nothing behind
--- request
GET /health
--- error_code: 200
--- response_body_like: "running":0,"waiting":0,"live_sequences":0,



=== TEST 9: a response that could never fit llm_max_response_size is a 400 before any work (n=8, max_tokens 4000, top_logprobs 20)
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=8 ctx=8192;
llm_thread_pool llm;
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "n": 8, "max_tokens": 4000, "logprobs": true, "top_logprobs": 20}
--- error_code: 400
--- response_body_like: "message":"n=8 x max_tokens=4000 with logprobs would keep about \d+ KiB for the response, more than llm_max_response_size \(16384 KiB\) allows: at most \d+ tokens per choice fit; ask for fewer tokens, choices or top_logprobs, or stream the response\.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"



=== TEST 10: without max_tokens the server's default is lowered to what fits
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=8 ctx=8192;
llm_thread_pool llm;
llm_max_response_size 64k;
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 5, "logit_bias": {"2": -100}}
--- error_code: 200
--- response_body_like: "finish_reason":"length"\}\],"usage":\{"prompt_tokens":\d+,"completion_tokens":76,



=== TEST 11: streamed logprobs are sent, not kept: the same budget streams 3000 tokens with top_logprobs 20
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=8 ctx=8192;
llm_thread_pool llm;
llm_max_response_size 64k;
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3000, "logprobs": true, "top_logprobs": 20, "stream": true, "stream_options": {"include_usage": true}, "logit_bias": {"2": -100}}
--- error_code: 200
--- response_body_like: "completion_tokens":3000,.*data: \[DONE\]



=== TEST 12: tokens longer than the estimate end the response at llm_max_response_size (measured, not estimated)
--- http_config
llm_model tiny $TEST_NGINX_MODELS/ngxllm-tiny ctx=2048;
llm_thread_pool llm;
llm_max_response_size 64k;
--- request
POST /v1/completions
{"prompt": "Say it", "max_tokens": 162, "logprobs": 1, "logit_bias": {"3572": 100}}
--- error_code: 200
--- response_body_like: "finish_reason":"length"\}\],"usage":\{"prompt_tokens":\d+,"completion_tokens":(?:[1-9]\d|1[0-5]\d),
--- error_log
llm: the response reached llm_max_response_size (65536 bytes): it ends with finish_reason length
