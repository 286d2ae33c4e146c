# Speculative decoding through nginx: greedy output with speculation forced
# on is transformers' golden output token for token while proposals are
# verified, kept and rolled back; the "speculation" request extension and the
# llm_speculation directive; acceptance in /health.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);
use JSON::PP;

our $ref = do {
    local $/;
    open my $fh, '<', "$ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32/reference.json"
        or die "reference.json: $!";
    decode_json(<$fh>);
};

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
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32 parallel=2;\n"
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

=== TEST 1: speculation on: greedy tokens equal transformers', proposals were verified
--- request eval
my ($p) = ::golden(0);
["POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 32, temperature => 0,
                                    speculation => "on", return_token_ids => JSON::PP::true),
 "GET /health"]
--- error_code eval
[200, 200]
--- response_body_like eval
my (undef, $t) = ::golden(0);
[qr/"token_ids":\[\Q@{[CORE::join ',', @$t]}\E\]/,
 qr/"speculation":\{"steps":[1-9]\d*,"proposed_tokens":[1-9]\d*,"accepted_tokens":[1-9]\d*,"acceptance_rate":[0-9.]+,"tokens_per_step":1\.\d+,"draft_proposed_tokens":0,"draft_accepted_tokens":0\}/]



=== TEST 2: the other golden prompt, two choices batched, speculation on
--- request eval
my ($p) = ::golden(1);
"POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 32, temperature => 0, n => 2,
                                   speculation => JSON::PP::true, return_token_ids => JSON::PP::true)
--- error_code: 200
--- response_body_like eval
my (undef, $t) = ::golden(1);
my $ids = CORE::join ',', @$t;
qr/"token_ids":\[\Q$ids\E\].*"token_ids":\[\Q$ids\E\]/s



=== TEST 3: llm_speculation off: nothing proposed; the request can still ask for it
--- config
location = /off { llm_speculation off; llm_api completions; }
location = /health { llm_api health; }
--- request eval
my ($p) = ::golden(0);
["POST /off\n" . ::body(prompt => $p, max_tokens => 32, temperature => 0,
                        return_token_ids => JSON::PP::true),
 "GET /health",
 "POST /off\n" . ::body(prompt => $p, max_tokens => 32, temperature => 0, speculation => "on",
                        return_token_ids => JSON::PP::true),
 "GET /health"]
--- error_code eval
[200, 200, 200, 200]
--- response_body_like eval
my (undef, $t) = ::golden(0);
[qr/"token_ids":\[\Q@{[CORE::join ',', @$t]}\E\]/,
 qr/"speculation":\{"steps":0,"proposed_tokens":0,/,
 qr/"token_ids":\[\Q@{[CORE::join ',', @$t]}\E\]/,
 qr/"speculation":\{"steps":[1-9]/]



=== TEST 4: "speculation": false turns it off where the location has it on
--- config
location = /v1/completions { llm_speculation on; llm_api completions; }
location = /health { llm_api health; }
--- request eval
my ($p) = ::golden(0);
["POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 32, temperature => 0,
                                    speculation => JSON::PP::false),
 "GET /health"]
--- error_code eval
[200, 200]
--- response_body_like eval
[qr/"finish_reason":"length"/, qr/"speculation":\{"steps":0,"proposed_tokens":0,/]



=== TEST 5: a bad value is a 400 naming the parameter
--- request eval
"POST /v1/completions\n" . ::body(prompt => "hi", max_tokens => 2, speculation => "sometimes")
--- error_code: 400
--- response_body_like: "param":"speculation"



=== TEST 6: a bad directive value fails the configuration
--- config
location = /v1/completions { llm_speculation always; llm_api completions; }
--- must_die
--- error_log
invalid value "always"



=== TEST 7: Anthropic messages take the extension too; a bad value is a 400 in Anthropic's shape
--- config
location /v1/messages { llm_api messages; }
location = /health { llm_api health; }
--- request eval
["POST /v1/messages\n" . ::body(model => "tiny", max_tokens => 16, temperature => 0,
                                 speculation => "on",
                                 messages => [{role => "user", content => "ab ab ab ab ab ab"}]),
 "POST /v1/messages\n" . ::body(model => "tiny", max_tokens => 4, speculation => 3,
                                 messages => [{role => "user", content => "hi"}])]
--- error_code eval
[200, 400]
--- response_body_like eval
[qr/"type":"message"/, qr/^\{"type":"error","error":\{"type":"invalid_request_error","message":"[^"]*'speculation'/]



=== TEST 8: a draft model (another model of the same vocabulary): greedy tokens still transformers'
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 draft=$TEST_NGINX_FIXTURES/models/llama_f32;
llm_thread_pool llm;
--- config
location = /v1/completions { llm_api completions; }
location = /health { llm_api health; }
--- request eval
my ($p) = ::golden(1);
["POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 32, temperature => 0,
                                    speculation => "on", return_token_ids => JSON::PP::true),
 "GET /health"]
--- error_code eval
[200, 200]
--- response_body_like eval
my (undef, $t) = ::golden(1);
[qr/"token_ids":\[\Q@{[CORE::join ',', @$t]}\E\]/,
 qr/"draft_proposed_tokens":[1-9]\d*,"draft_accepted_tokens":\d+\}/]



=== TEST 8b: the draft quantized on load (draft_quant=q8_0): greedy tokens still transformers'
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 draft=$TEST_NGINX_FIXTURES/models/llama_f32 draft_quant=q8_0;
llm_thread_pool llm;
--- config
location = /v1/completions { llm_api completions; }
location = /health { llm_api health; }
--- request eval
my ($p) = ::golden(1);
["POST /v1/completions\n" . ::body(prompt => $p, max_tokens => 32, temperature => 0,
                                    speculation => "on", return_token_ids => JSON::PP::true),
 "GET /health"]
--- error_code eval
[200, 200]
--- response_body_like eval
my (undef, $t) = ::golden(1);
[qr/"token_ids":\[\Q@{[CORE::join ',', @$t]}\E\]/,
 qr/"draft_proposed_tokens":[1-9]\d*,"draft_accepted_tokens":\d+\}/]



=== TEST 9: a draft of another vocabulary fails the configuration
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 draft=$TEST_NGINX_MODELS/ngxllm-tiny;
llm_thread_pool llm;
--- config
location = /v1/completions { llm_api completions; }
--- must_die
--- error_log eval
qr/llm_model "tiny": draft "[^"]*ngxllm-tiny": the draft's vocabulary has 8192 ids/
