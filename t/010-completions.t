# POST /v1/completions on a fixture model with a byte-level tokenizer
# (token id N is byte N): greedy output equals transformers' golden tokens.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);
use JSON::PP;

our $ref = do {
    local $/;
    open my $fh, '<', "$ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32/reference.json"
        or die "reference.json: $!";
    decode_json(<$fh>);
};

# golden(i): [prompt ids, greedy continuation ids] of the i-th greedy record
sub golden {
    my $g = $ref->{greedy}[shift];
    return ($ref->{prompts}[$g->{prompt}], $g->{tokens});
}

sub body {
    my (%h) = @_;
    return JSON::PP->new->canonical->encode(\%h);
}

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 parallel=4;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config",
        "location = /v1/completions { llm_api completions; }\n"
        . "location = /health { llm_api health; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: greedy tokens from a 5-token prompt equal transformers'
--- request eval
my ($p) = ::golden(0);
"POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 32,
                                   temperature => 0, return_token_ids => JSON::PP::true)
--- error_code: 200
--- response_body_like eval
my (undef, $t) = ::golden(0);
qr/"token_ids":\[\Q@{[CORE::join ',', @$t]}\E\]/



=== TEST 2: greedy tokens from a 29-token prompt equal transformers'
--- request eval
my ($p) = ::golden(1);
"POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 32,
                                   temperature => 0, return_token_ids => JSON::PP::true)
--- error_code: 200
--- response_body_like eval
my (undef, $t) = ::golden(1);
qr/"token_ids":\[\Q@{[CORE::join ',', @$t]}\E\]/



=== TEST 3: the response has OpenAI's text_completion shape and usage
--- request eval
my ($p) = ::golden(0);
"POST /v1/completions\n" . ::body(model => "tiny", prompt => $p, max_tokens => 7, temperature => 0)
--- error_code: 200
--- response_headers
Content-Type: application/json
--- response_body_like eval
qr/^\{"id":"cmpl-[A-Za-z0-9]{24}","object":"text_completion","created":\d+,"model":"tiny","system_fingerprint":"fp_ngx_llm","choices":\[\{"text":".*","index":0,"logprobs":null,"finish_reason":"length"\}\],"usage":\{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":\{"cached_tokens":\d+\},"completion_tokens_details":\{"reasoning_tokens":0\}\}\}$/s



=== TEST 4: a text prompt goes through the tokenizer
--- request
POST /v1/completions
{"prompt": "Hello", "max_tokens": 3, "temperature": 0}
--- error_code: 200
--- response_body_like: "usage":\{"prompt_tokens":5,"completion_tokens":3,



=== TEST 5: streaming sends text_completion chunks and [DONE]
--- request eval
my ($p) = ::golden(0);
"POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 5, temperature => 0, stream => JSON::PP::true)
--- error_code: 200
--- response_headers
Content-Type: text/event-stream
Cache-Control: no-cache
X-Accel-Buffering: no
--- response_body_like eval
qr/^(data: \{"id":"cmpl-\w+","object":"text_completion",[^\n]*\}\n\n)+data: \[DONE\]\n\n$/s



=== TEST 6: stream_options.include_usage adds a usage chunk
--- request eval
my ($p) = ::golden(0);
"POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 4, temperature => 0,
    stream => JSON::PP::true, stream_options => { include_usage => JSON::PP::true })
--- error_code: 200
--- response_body_like: "choices":\[\],"usage":\{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9



=== TEST 7: echo puts the prompt in front of the completion
--- request
POST /v1/completions
{"prompt": "abc", "max_tokens": 2, "temperature": 0, "echo": true}
--- error_code: 200
--- response_body_like: "text":"abc



=== TEST 8: a prompt token outside the vocabulary is a 400
--- request
POST /v1/completions
{"prompt": [1, 2, 256], "max_tokens": 2}
--- error_code: 400
--- response_body_like: "message":"prompt token 256 is outside the vocabulary \(0..255\).","type":"invalid_request_error","param":"prompt"



=== TEST 9: a prompt longer than the context is a 400 with the counts
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=16;
llm_thread_pool llm;
--- request
POST /v1/completions
{"prompt": "this prompt is longer than sixteen bytes", "max_tokens": 2}
--- error_code: 400
--- response_body_like: "message":"This model's maximum context length is 16 tokens. However, your prompt has 40 tokens.".*"code":"context_length_exceeded"



=== TEST 10: generation stops at the end of the context with finish_reason length
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=16;
llm_thread_pool llm;
--- request
POST /v1/completions
{"prompt": "0123456789", "max_tokens": 100, "temperature": 0}
--- error_code: 200
--- response_body_like: "finish_reason":"length".*"completion_tokens":6,



=== TEST 11: llm_max_tokens lowers the protocol's default (16), and max_tokens above it is a 400 naming it
--- config
llm_max_tokens 3;
location = /v1/completions { llm_api completions; }
--- request eval
["POST /v1/completions\n{\"prompt\": \"abc\", \"temperature\": 0, \"logit_bias\": {\"2\": -100}}",
 "POST /v1/completions\n{\"prompt\": \"abc\", \"max_tokens\": 50, \"temperature\": 0}"]
--- error_code eval
[200, 400]
--- response_body_like eval
['"completion_tokens":3,',
 '"message":"max_tokens is 50, more than this server allows for model \'tiny\' \\(llm_max_tokens 3\\)\.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"']



=== TEST 12: negative max_tokens is a 400
--- request
POST /v1/completions
{"prompt": "abc", "max_tokens": -1}
--- error_code: 400
--- response_body_like: "param":"max_tokens"



=== TEST 13: logprobs in the legacy shape
--- request
POST /v1/completions
{"prompt": "abc", "max_tokens": 2, "temperature": 0, "logprobs": 2}
--- error_code: 200
--- response_body_like: "logprobs":\{"tokens":\[.*\],"token_logprobs":\[-?[\d.e-]+,-?[\d.e-]+\],"top_logprobs":\[\{.*\}\],"text_offset":\[0,\d+\]\}



=== TEST 14: a stop string ends generation and is not returned
--- request eval
my ($p, $t) = ::golden(0);
# tokens 11..12 of the golden continuation are ASCII bytes: a stop string
my $stop = CORE::join '', map { chr } @$t[11..12];
"POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 32, temperature => 0,
    stop => [$stop], return_token_ids => JSON::PP::true)
--- error_code: 200
--- response_body_like eval
my (undef, $t) = ::golden(0);
qr/"finish_reason":"stop".*"token_ids":\[\Q@{[CORE::join ',', @$t[0..12]]}\E\]/



=== TEST 15: no sequence outlives its request
--- request eval
my ($p) = ::golden(0);
["POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 8, temperature => 0),
 "GET /health"]
--- error_code eval
[200, 200]
--- response_body_like eval
["\"finish_reason\":\"length\"", "\"running\":0,\"waiting\":0,\"live_sequences\":0,"]
