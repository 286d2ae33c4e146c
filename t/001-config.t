# Directive parsing and validation at configuration time.
use Test::Nginx::Socket 'no_plan';

no_shuffle();
run_tests();

__DATA__

=== TEST 1: a model directory loads and the server starts
--- main_config
thread_pool llm threads=1;
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_thread_pool llm;
--- config
location = /health { llm_api health; }
--- request
GET /health
--- error_code: 200
--- response_body_like: "status":"ok"
--- no_error_log
[emerg]
[alert]



=== TEST 2: a model path that does not exist fails with the path and the line
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/no-such-model;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/llm_model "tiny": cannot access ".*no-such-model".* in .*nginx\.conf:\d+/



=== TEST 3: a model path that is a file but not a .gguf file is rejected
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32/config.json;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/llm_model "tiny": ".*config\.json" is neither a model folder nor a \.gguf file in .*nginx\.conf:\d+/



=== TEST 4: a directory without config.json is rejected
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/llm_model "tiny": .*config\.json/



=== TEST 5: duplicate aliases are rejected
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_model tiny $TEST_NGINX_FIXTURES/models/llama_f32;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/duplicate llm_model alias "tiny" in .*nginx\.conf:\d+/



=== TEST 6: unknown llm_model options are rejected with the known ones
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 batch=4;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/unknown llm_model option "batch=4" \(known: ctx=, parallel=, threads=, queue=, kv=, kv_memory=, quant=, chat=, draft=, draft_quant=\)/



=== TEST 6b: draft_quant= without draft= is rejected, saying why
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 draft_quant=q8_0;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/llm_model option "draft_quant=q8_0" needs draft=/



=== TEST 7: malformed option values are rejected
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=lots;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/invalid llm_model option "ctx=lots"/



=== TEST 8: parallel=0 is rejected
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=0;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/invalid llm_model option "parallel=0"/



=== TEST 9: unknown tool parser ids are rejected with the list of known ones
--- http_config
llm_tool_parser magic;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/unknown llm_tool_parser "magic", expected auto, none or one of: .*hermes.*qwen3_coder/



=== TEST 10: unknown reasoning parser ids are rejected
--- http_config
llm_reasoning_parser deepthink;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/unknown llm_reasoning_parser "deepthink", expected auto, none or one of: .*think/



=== TEST 11: explicit parser ids are accepted at every level
--- main_config
thread_pool llm threads=1;
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_thread_pool llm;
llm_tool_parser hermes;
llm_reasoning_parser none;
--- config
llm_tool_parser qwen3_coder;
location = /health { llm_tool_parser none; llm_reasoning_parser think; llm_api health; }
--- request
GET /health
--- error_code: 200



=== TEST 12: an undefined thread pool fails and names the llm_thread_pool line
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_thread_pool nosuchpool;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/unknown thread pool "nosuchpool" in .*nginx\.conf:\d+/



=== TEST 13: unknown llm_api values are rejected
--- config
location = /x { llm_api chatty; }
--- must_die
--- error_log eval
qr/unknown llm_api "chatty", expected chat, completions, messages, responses, embeddings, models, health, tokenize, detokenize, metrics or page/



=== TEST 14: llm_model is an http-level directive
--- config
location = /x { llm_model tiny /tmp; llm_api health; }
--- must_die
--- error_log eval
qr/"llm_model" directive is not allowed here/



=== TEST 15: llm_max_tokens must be positive
--- http_config
llm_max_tokens 0;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/value must be between 1 and 1048576 in .*nginx\.conf:\d+/



=== TEST 16: the load summary is logged at notice level
--- main_config
thread_pool llm threads=1;
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=3;
llm_thread_pool llm;
--- config
location = /health { llm_api health; }
--- request
GET /health
--- error_code: 200
--- response_body_like: "parallel":3



=== TEST 17: a model folder without tokenizer.json is rejected
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/mistral_sw_bf16;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/llm_model "tiny": tokenizer: .*tokenizer\.json.* in .*nginx\.conf:\d+/



=== TEST 18: kv=f16 halves the KV cache, kv=q8_0 takes 34 bytes per 32 values
--- main_config
thread_pool llm threads=1;
--- http_config
llm_model a $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=128 parallel=2;
llm_model b $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=128 parallel=2 kv=f16;
llm_model c $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=128 parallel=2 kv=q8_0;
llm_thread_pool llm;
--- config
location = /health { llm_api health; }
--- request
GET /health
--- error_code: 200
--- response_body_like: "id":"a",.*"kv_cache_bytes":262144,"kv_type":"f32",.*"id":"b",.*"kv_cache_bytes":131072,"kv_type":"f16",.*"id":"c",.*"kv_cache_bytes":69632,"kv_type":"q8_0",



=== TEST 19: kv accepts only f32, f16 and q8_0
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 kv=q4;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/invalid llm_model option "kv=q4"/



=== TEST 20: llm_kv_cache_path takes max_size= only, with a size
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_kv_cache_path kv_cache max_size=lots;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/invalid max_size value "max_size=lots" in .*nginx\.conf:\d+/



=== TEST 21: llm_kv_cache_path rejects other parameters
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_kv_cache_path kv_cache levels=1:2;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/invalid parameter "levels=1:2" in .*nginx\.conf:\d+/



=== TEST 22: a llm_kv_cache_path that cannot be made fails at configuration time
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
llm_kv_cache_path /proc/no/such/kvcache;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/mkdir\(\) "\/proc\/no\/such\/kvcache" failed/



=== TEST 23: the disk tier shows in /health
--- main_config
thread_pool llm threads=1;
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=128;
llm_kv_cache_path kv_cache max_size=16m;
llm_thread_pool llm;
--- config
location = /health { llm_api health; }
--- request
GET /health
--- error_code: 200
--- response_body_like: "kv_disk":\{"blocks_read":0,"blocks_written":0,"files_rejected":0,"files_removed":0,"bytes":\d+,"tokens_read":0\}
--- no_error_log
[warn]



=== TEST 24: kv=q8_0 is refused, with the reason, for heads that are not a multiple of 32
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/llama_f32 kv=q8_0;
--- config
location = /health { llm_api health; }
--- must_die
--- error_log eval
qr/kv=q8_0 needs a head size that is a multiple of 32 \(this model's is 16\)/
