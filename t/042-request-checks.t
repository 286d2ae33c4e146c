# Requests refused before any work, in the protocol's error shape
# (issue 13): logit_bias keys that would wrap or lie past the vocabulary,
# bodies that are not declared as JSON, errors nginx answers before a
# location is chosen, tool calls per message, embeddings token totals.
use Test::Nginx::Socket 'no_plan';

sub chat_body { '{"model": "tiny", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], ' . $_[0] . '}' }
sub bias_entries { '{' . join(',', map { qq("$_": 1) } 0 .. $_[0] - 1) . '}' }

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config",
        "location = /v1/chat/completions { llm_api chat; }\n"
        . "location = /v1/completions { llm_api completions; }\n"
        . "location = /v1/embeddings { llm_api embeddings; }\n"
        . "location /v1/messages { llm_api messages; }")
        unless defined $block->config;
    $block->set_value("more_headers", "Content-Type: application/json")
        unless defined $block->more_headers;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: a logit_bias key past 32 bits is a 400, not a bias on token 0
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"logit_bias": {"4294967296": 100}')
--- error_code: 400
--- response_body_like: "message":"Invalid key in 'logit_bias': expected a token id written as a decimal string from 0 to 2147483647, but got '4294967296'.","type":"invalid_request_error","param":"logit_bias","code":"invalid_value"



=== TEST 2: a logit_bias id past the model's vocabulary is a 400
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"logit_bias": {"5": 1, "256": -100}')
--- error_code: 400
--- response_body_like: "message":"logit_bias token 256 is outside the vocabulary \(0..255\).","type":"invalid_request_error","param":"logit_bias.256","code":"invalid_value"



=== TEST 3: the same on /v1/completions
--- request
POST /v1/completions
{"model": "tiny", "prompt": "ab", "max_tokens": 1, "logit_bias": {"1000": 1}}
--- error_code: 400
--- response_body_like: "param":"logit_bias.1000","code":"invalid_value"



=== TEST 4: more logit_bias entries than supported is a 400
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"logit_bias": ' . main::bias_entries(301))
--- error_code: 400
--- response_body_like: "message":"Invalid 'logit_bias': at most 300 entries are supported, but got 301.","type":"invalid_request_error","param":"logit_bias"



=== TEST 5: a full logit_bias inside the vocabulary is served
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"logit_bias": ' . main::bias_entries(255))
--- error_code: 200
--- response_body_like: "object":"chat.completion"
