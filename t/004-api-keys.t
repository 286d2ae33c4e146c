# The API-key recipe of docs/directives.md, run exactly as documented (the
# nginx block is read from the page): keys match case-sensitively, a key
# split across Authorization and x-api-key matches nothing, the same key in
# both is accepted, a wrong key in either is refused; on every endpoint,
# over HTTP/1.1 and HTTP/2.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);
use FindBin ();

# The ```nginx block that follows "API keys" in docs/directives.md: its
# http-level part (the maps) and its server-level part (the locations).
my ($recipe_http, $recipe_server) = do {
    my $doc = "$FindBin::Bin/../docs/directives.md";
    open my $fh, '<', $doc or die "$doc: $!";
    local $/;
    my $text = <$fh>;
    $text =~ /^API keys .*?^```nginx\n(.*?)^```/ms or die "no API-key recipe in $doc";
    my $block = $1;
    $block =~ /\A(.*?)^(# server level.*)\z/ms or die "the recipe has no '# server level' part";
    ($1, $2);
};

our $KEY = 'sk-team-key';

# [headers, expected status]: one request each
our @CASES = (
    ["Authorization: Bearer $KEY", 200],
    ["x-api-key: $KEY", 200],
    ["Authorization: Bearer $KEY\nx-api-key: $KEY", 200],          # the same key in both
    ["Authorization: bearer $KEY", 200],                          # the scheme is case-insensitive
    ["Authorization: Bearer SK-TEAM-KEY", 401],                   # the key is not
    ["Authorization: Bearer sk-Team-key", 401],
    ["x-api-key: SK-team-key", 401],
    ["x-api-key: ${KEY}x", 401],
    ["Authorization: Bearer sk-team\nx-api-key: -key", 401],      # split across the headers
    ["Authorization: Bearer $KEY\nx-api-key: wrong", 401],         # a wrong key in either
    ["Authorization: Bearer wrong\nx-api-key: $KEY", 401],
    ["# no key", 401],
);

# Over HTTP/2 the refused requests go without a body: nginx answers the 401
# before reading it and resets the stream (NO_ERROR), which curl 7.88 may
# report as a framing error when its DATA frame was still on the way.  The
# key check never looks at the body.
sub requests {
    my ($r, $h2) = @_;
    my ($line) = $r =~ /^([^\n]*)/;
    [ map { $h2 && $_->[1] == 401 ? $line : $r } @CASES ];
}
sub headers  { [ map { $_->[0] } @CASES ] }
sub codes    { [ map { $_->[1] } @CASES ] }
sub bodies {
    my ($ok, $anthropic) = @_;
    my $denied = $anthropic
        ? '^\{"type":"error","error":\{"type":"authentication_error","message":"Authentication required."\}'
        : '^\{"error":\{"message":"Authentication required.","type":"authentication_error"';
    [ map { $_->[1] == 200 ? $ok : $denied } @CASES ];
}

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;");
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32;\n"
        . "llm_thread_pool llm;\n" . $recipe_http);
    $block->set_value("config", $recipe_server);
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]");
});

run_tests();

__DATA__

=== TEST 1: chat completions
--- request eval
main::requests("POST /v1/chat/completions\n" . '{"max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}')
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"object":"chat.completion"')



=== TEST 2: completions
--- request eval
main::requests("POST /v1/completions\n" . '{"prompt": "ab", "max_tokens": 1}')
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"object":"text_completion"')



=== TEST 3: Anthropic messages
--- request eval
main::requests("POST /v1/messages\n" . '{"max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}')
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"type":"message"', 1)



=== TEST 4: Anthropic count_tokens
--- request eval
main::requests("POST /v1/messages/count_tokens\n" . '{"messages": [{"role": "user", "content": "hi"}]}')
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"input_tokens":\d+', 1)



=== TEST 5: embeddings
--- request eval
main::requests("POST /v1/embeddings\n" . '{"input": "ab"}')
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"object":"embedding"')



=== TEST 6: models
--- request eval
main::requests("GET /v1/models")
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"id":"tiny"')



=== TEST 7: chat completions over HTTP/2
--- http2
--- skip_nginx: 60: < 1.25.1
--- request eval
main::requests("POST /v1/chat/completions\n" . '{"max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}', 1)
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"object":"chat.completion"')



=== TEST 8: completions over HTTP/2
--- http2
--- skip_nginx: 60: < 1.25.1
--- request eval
main::requests("POST /v1/completions\n" . '{"prompt": "ab", "max_tokens": 1}', 1)
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"object":"text_completion"')



=== TEST 9: Anthropic messages over HTTP/2
--- http2
--- skip_nginx: 60: < 1.25.1
--- request eval
main::requests("POST /v1/messages\n" . '{"max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}', 1)
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"type":"message"', 1)



=== TEST 10: Anthropic count_tokens over HTTP/2
--- http2
--- skip_nginx: 60: < 1.25.1
--- request eval
main::requests("POST /v1/messages/count_tokens\n" . '{"messages": [{"role": "user", "content": "hi"}]}', 1)
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"input_tokens":\d+', 1)



=== TEST 11: embeddings over HTTP/2
--- http2
--- skip_nginx: 60: < 1.25.1
--- request eval
main::requests("POST /v1/embeddings\n" . '{"input": "ab"}', 1)
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"object":"embedding"')



=== TEST 12: models over HTTP/2
--- http2
--- skip_nginx: 60: < 1.25.1
--- request eval
main::requests("GET /v1/models", 1)
--- more_headers eval
main::headers()
--- error_code eval
main::codes()
--- response_body_like eval
main::bodies('"id":"tiny"')
