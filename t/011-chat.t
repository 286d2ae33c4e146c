# POST /v1/chat/completions on a fixture model (byte-level tokenizer, a tiny
# "role: content" template): shapes, streaming, limits and bad input.
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
        . "location = /health { llm_api health; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: a chat completion has OpenAI's shape
--- request
POST /v1/chat/completions
{"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "temperature": 0}
--- error_code: 200
--- response_headers
Content-Type: application/json
--- response_body_like: ^\{"id":"chatcmpl-[A-Za-z0-9]{24}","object":"chat.completion","created":\d+,"model":"tiny","system_fingerprint":"fp_ngx_llm","choices":\[\{"index":0,"message":\{"role":"assistant","content":".*","refusal":null\},"logprobs":null,"finish_reason":"length"\}\],"usage":\{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24,"prompt_tokens_details":\{"cached_tokens":\d+\},"completion_tokens_details":\{"reasoning_tokens":0\}\}\}$



=== TEST 2: the prompt is the model's own template ("system: be brief\nuser: hi\nassistant: ")
--- request
POST /v1/chat/completions
{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], "max_tokens": 1, "temperature": 0}
--- error_code: 200
--- response_body_like: "prompt_tokens":37,



=== TEST 3: content given as text parts is joined by newlines ("h\ni")
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": [{"type": "text", "text": "h"}, {"type": "text", "text": "i"}]}], "max_tokens": 1, "temperature": 0}
--- error_code: 200
--- response_body_like: "prompt_tokens":21,



=== TEST 4: streaming: role chunk, content chunks, finish chunk, [DONE]
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "temperature": 0, "stream": true}
--- error_code: 200
--- response_headers
Content-Type: text/event-stream
Cache-Control: no-cache
X-Accel-Buffering: no
--- response_body_like: ^data: \{"id":"chatcmpl-\w+","object":"chat.completion.chunk","created":\d+,"model":"tiny","system_fingerprint":"fp_ngx_llm","choices":\[\{"index":0,"delta":\{"role":"assistant","content":""\},"logprobs":null,"finish_reason":null\}\]\}\n\n.*"choices":\[\{"index":0,"delta":\{\},"logprobs":null,"finish_reason":"length"\}\]\}\n\ndata: \[DONE\]\n\n$



=== TEST 5: include_usage adds a usage chunk before [DONE]
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "temperature": 0, "stream": true, "stream_options": {"include_usage": true}}
--- error_code: 200
--- response_body_like: "choices":\[\],"usage":\{"prompt_tokens":20,"completion_tokens":2,"total_tokens":22,"prompt_tokens_details":\{"cached_tokens":\d+\},"completion_tokens_details":\{"reasoning_tokens":0\}\}\}\n\ndata: \[DONE\]\n\n$



=== TEST 6: streaming works over HTTP/2
--- http2
--- skip_nginx: 5: < 1.25.1
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "temperature": 0, "stream": true}
--- error_code: 200
--- response_body_like: "finish_reason":"length"\}\]\}\n\ndata: \[DONE\]\n\n$



=== TEST 7: n=3 returns three choices
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "n": 3, "seed": 1}
--- error_code: 200
--- response_body_like: "choices":\[\{"index":0,.*\{"index":1,.*\{"index":2,.*"completion_tokens":6,



=== TEST 8: logprobs with top_logprobs
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "temperature": 0, "logprobs": true, "top_logprobs": 2}
--- error_code: 200
--- response_body_like: "logprobs":\{"content":\[\{"token":".*","logprob":-?[\d.e-]+,"bytes":\[\d+\],"top_logprobs":\[\{"token":.*,"logprob":-?[\d.e-]+,"bytes":\[\d+\]\},\{



=== TEST 9: a repeated prompt reuses the cached prefix
--- request eval
["POST /v1/chat/completions\n{\"messages\": [{\"role\": \"user\", \"content\": \"the same question\"}], \"max_tokens\": 1, \"temperature\": 0}",
 "POST /v1/chat/completions\n{\"messages\": [{\"role\": \"user\", \"content\": \"the same question\"}], \"max_tokens\": 1, \"temperature\": 0}"]
--- error_code eval
[200, 200]
--- response_body_like eval
["\"prompt_tokens\":35,", "\"prompt_tokens\":35,\"completion_tokens\":1,\"total_tokens\":36,\"prompt_tokens_details\":\\{\"cached_tokens\":34\\}"]



=== TEST 10: empty messages are a 400
--- request
POST /v1/chat/completions
{"messages": []}
--- error_code: 400
--- response_body_like: "param":"messages"



=== TEST 11: an unknown role is a 400 naming the message
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}]}
--- error_code: 400
--- response_body_like: "param":"messages\[1\].role"



=== TEST 12: a wrongly typed temperature is a 400
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "a"}], "temperature": "hot"}
--- error_code: 400
--- response_body_like: "param":"temperature"



=== TEST 13: n above the limit is a 400
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "a"}], "n": 100}
--- error_code: 400
--- response_body_like: "param":"n"



=== TEST 14: negative max_tokens is a 400
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "a"}], "max_tokens": -5}
--- error_code: 400
--- response_body_like: "param":"max_tokens"



=== TEST 15: max_completion_tokens is honoured
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "a"}], "max_completion_tokens": 2, "temperature": 0}
--- error_code: 200
--- response_body_like: "completion_tokens":2,



=== TEST 16: the request's model selects among several
--- http_config
llm_model one $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_model two $TEST_NGINX_FIXTURES/models/llama_f32;
llm_thread_pool llm;
--- request eval
["POST /v1/chat/completions\n{\"model\": \"two\", \"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"max_tokens\": 1}",
 "POST /v1/chat/completions\n{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"max_tokens\": 1}"]
--- error_code eval
[200, 404]
--- response_body_like eval
["\"model\":\"two\"", "\"code\":\"model_not_found\""]



=== TEST 17: n beyond parallel + queue is a 400 naming the limit, not a 429 (a busy server's 429 with Retry-After: t/072-backpressure.t)
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=1 queue=0 ctx=256;
llm_thread_pool llm;
--- request
POST /v1/chat/completions
{"messages": [{"role": "user", "content": "a"}], "max_tokens": 1, "n": 2}
--- error_code: 400
--- response_headers
!Retry-After
--- response_body_like: "n=2 is more than model 'tiny' can hold at once \(parallel 1 \+ queue 0 = 1 sequences\)\.","type":"invalid_request_error","param":"n","code":"invalid_value"



=== TEST 18: log variables
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_thread_pool llm;
log_format llm 'model=$llm_model prompt=$llm_prompt_tokens completion=$llm_completion_tokens ttft=$llm_ttft_ms';
--- config
location = /v1/chat/completions { access_log logs/llm.log llm; llm_api chat; }
location = /log { alias logs/llm.log; }
--- request eval
["POST /v1/chat/completions\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 3, \"temperature\": 0}",
 "GET /log"]
--- error_code eval
[200, 200]
--- response_body_like eval
["\"completion_tokens\":3", "^model=tiny prompt=20 completion=3 ttft=\\d+\$"]



=== TEST 19: no sequence is left behind
--- request eval
["POST /v1/chat/completions\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 2, \"n\": 2}",
 "GET /health"]
--- error_code eval
[200, 200]
--- response_body_like eval
["\"index\":1", "\"running\":0,\"waiting\":0,\"live_sequences\":0,"]
