# /tokenize and /detokenize (issue 21): vLLM's shapes (prompt or chat
# messages in, count / max_model_len / tokens / token_strs out) and
# llama-server's (content in, tokens or {id, piece} out), detokenize
# answering both servers' field, and errors in the OpenAI shape.  The ids
# are the fixture tokenizer's (t/fixtures/models/qwen3_f32, Qwen3's).
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 ctx=256;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config",
        "location = /tokenize { llm_api tokenize; }\n"
        . "location = /detokenize { llm_api detokenize; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: vLLM: prompt text in, ids out
--- request
POST /tokenize
{"model": "tiny", "prompt": "Hello world"}
--- error_code: 200
--- response_body chomp
{"count":11,"max_model_len":256,"tokens":[72,101,108,108,111,32,119,111,114,108,100],"token_strs":null}



=== TEST 2: return_token_strs: each token's text
--- request
POST /tokenize
{"prompt": "Hi!", "return_token_strs": true}
--- error_code: 200
--- response_body chomp
{"count":3,"max_model_len":256,"tokens":[72,105,33],"token_strs":["H","i","!"]}



=== TEST 3: vLLM chat messages: exactly the prompt a chat completion runs (its prompt_tokens)
--- config
location = /tokenize { llm_api tokenize; }
location = /v1/chat/completions { llm_api chat; }
--- request eval
["POST /tokenize\n{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"return_token_strs\": true}",
 "POST /v1/chat/completions\n{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 1}"]
--- error_code eval
[200, 200]
--- response_body_like eval
['^\{"count":20,"max_model_len":256,"tokens":\[117,115,101,114,58,32,72,105,10,97,[\d,]+\],"token_strs":\["u","s","e","r",":"," ","H","i","\\\\n","a","s","s","i","s","t","a","n","t",":"," "\]\}$',
 '"prompt_tokens":20,']



=== TEST 4: llama-server: content in, tokens out; with_pieces gives {id, piece}
--- request eval
["POST /tokenize\n{\"content\": \"Hi\"}",
 "POST /tokenize\n{\"content\": \"Hi\", \"with_pieces\": true}"]
--- error_code eval
[200, 200]
--- response_body eval
["{\"tokens\":[72,105]}",
 "{\"tokens\":[{\"id\":72,\"piece\":\"H\"},{\"id\":105,\"piece\":\"i\"}]}"]



=== TEST 5: parse_special (the shipped model): special-token text is one control token, plain text when false
--- http_config
llm_model tiny $TEST_NGINX_MODELS/ngxllm-tiny ctx=256;
llm_thread_pool llm;
--- request eval
["POST /tokenize\n{\"content\": \"<|im_end|>\"}",
 "POST /tokenize\n{\"content\": \"<|im_end|>\", \"parse_special\": false}"]
--- error_code eval
[200, 200]
--- response_body_like eval
['^\{"tokens":\[\d+\]\}$', '^\{"tokens":\[\d+(,\d+){3,}\]\}$']



=== TEST 6: detokenize: ids back to text, in both servers' field
--- request
POST /detokenize
{"model": "tiny", "tokens": [72,101,108,108,111,32,119,111,114,108,100]}
--- error_code: 200
--- response_body chomp
{"prompt":"Hello world","content":"Hello world"}



=== TEST 7: errors in the OpenAI shape
--- request eval
["POST /tokenize\n{\"model\": \"tiny\"}",
 "POST /tokenize\n{\"prompt\": 5}",
 "POST /tokenize\n{\"model\": \"nope\", \"prompt\": \"x\"}",
 "POST /detokenize\n{\"tokens\": [1, 999999]}",
 "POST /detokenize\n{\"tokens\": \"abc\"}",
 "POST /tokenize\n{\"prompt\": \"x\""]
--- error_code eval
[400, 400, 404, 400, 400, 400]
--- response_body_like eval
['^\{"error":\{"message":"Give the text to tokenize as \'prompt\' \(or \'content\'\), or chat \'messages\'\.","type":"invalid_request_error","param":"prompt","code":"missing_required_parameter"',
 '"type":"invalid_request_error","param":"prompt",',
 '"type":"invalid_request_error","param":"model","code":"model_not_found"',
 '"message":"tokens\[1\]: token 999999 is outside the vocabulary \(0\.\.\d+\)\.","type":"invalid_request_error","param":"tokens","code":"invalid_value"',
 '"param":"tokens","code":',
 '^\{"error":\{"message":"[^"]*","type":"invalid_request_error"']



=== TEST 8: only POST
--- request
GET /tokenize
--- error_code: 405
--- response_headers
Allow: POST
