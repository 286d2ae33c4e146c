# `llm chat --request FILE` runs a request body through the server's own path
# without nginx (src/api -> llm_session -> llm_sched -> llm_reply): at
# temperature 0 its message, finish and usage equal the server's for the same
# body, streamed or not, OpenAI or Anthropic, and a bad body gets the same
# error body.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);
use File::Temp qw(tempfile);

our $ASK = '{"role": "user", "content": "What is the weather in Paris?"}';
our $W = '{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}';
our $CHAT = qq({"model": "tiny", "messages": [$ASK], "tools": [$W], "temperature": 0, "max_tokens": 80});
our $MSG = qq({"model": "tiny", "max_tokens": 40, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]});
our $BAD = qq({"model": "tiny", "max_tokens": 0, "messages": [$ASK]});

# The CLI's output for body under api (extra: more flags); what follows the
# response's id and created, which differ by run.
sub main::cli {
    my ($api, $body, @extra) = @_;
    my ($fh, $file) = tempfile(UNLINK => 1);
    print $fh $body;
    close $fh;
    my $out = `$ENV{LLM_CLI} chat --model $ENV{TEST_NGINX_MODELS}/ngxllm-tiny --ctx 1024 --api $api --request $file @extra`;
    return $out;
}

# From $from (the first choice or content block) to the end, or to $to, as
# a pattern (tool call ids are random).
sub main::after {
    my ($out, $from, $to) = @_;
    my $i = index($out, $from);
    return "CLI output has no $from: $out" if $i < 0;
    my $tail = substr($out, $i);
    $tail =~ s/\n$//;
    $tail = substr($tail, 0, index($tail, $to)) if defined $to && index($tail, $to) > 0;
    return (quotemeta($tail) =~ s/call_[A-Za-z0-9]{24}/call_[A-Za-z0-9]{24}/gr)
           . (defined $to ? '' : '$');
}

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_MODELS}/ngxllm-tiny ctx=1024;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config",
        "location = /v1/chat/completions { llm_api chat; }\n"
        . "location = /v1/messages { llm_api messages; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
    $block->set_value("timeout", "30") unless defined $block->timeout;
});

run_tests();

__DATA__

=== TEST 1: a tool call: the CLI's choices and usage are the server's
--- request eval
"POST /v1/chat/completions\n" . $::CHAT
--- error_code: 200
--- response_body_like eval
main::after(main::cli("chat", $::CHAT), '"choices":')



=== TEST 2: an Anthropic message: the same content and stop_reason (input_tokens leave out what the server's prefix cache read)
--- request eval
"POST /v1/messages\n" . $::MSG
--- error_code: 200
--- response_body_like eval
main::after(main::cli("messages", $::MSG), '"content":', '"usage":')



=== TEST 3: streamed: the same last delta with finish_reason, then [DONE]
--- request eval
"POST /v1/chat/completions\n" . ($::CHAT =~ s/\}$/, "stream": true}/r)
--- error_code: 200
--- response_body_like eval
my $out = main::cli("chat", $::CHAT, "--stream");
$out =~ /(\{"index":0,"delta":\{\},"logprobs":null,"finish_reason":"tool_calls"\}\]\}\n\ndata: \[DONE\]\n\n)$/
    ? quotemeta($1) . '$' : "no last chunk in the CLI's stream: $out"



=== TEST 4: a bad body: the same error body (the server adds its request id)
--- request eval
"POST /v1/messages\n" . $::BAD
--- error_code: 400
--- response_body_like eval
my $out = main::cli("messages", $::BAD);
$out =~ s/\}\n$//;
'^' . quotemeta($out) . ',"request_id":"[0-9a-f]{32}"\}$'
