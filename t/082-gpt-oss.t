# gpt-oss served end to end (t/fixtures/models/gptoss_bf16: the random-weight
# GptOssForCausalLM that t/unit/test_engine.c holds to transformers, with a
# byte tokenizer and a harmony-format template, harmony_fixture.jinja): the
# prompt of a conversation with tools, an earlier call and its result is the
# harmony rendering (as jinja2 renders the template); tool_choice required
# gives a call in harmony's own form, which the harmony parser (chosen by
# model_type gpt_oss) turns into an OpenAI tool call; a repeated prompt is
# served from the prefix cache with the same tokens as a cold model.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client ();

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => <<'EOC',
llm_model warm $TEST_NGINX_FIXTURES/models/gptoss_bf16 parallel=2 ctx=1024;
llm_model cold $TEST_NGINX_FIXTURES/models/gptoss_bf16 parallel=2 ctx=1024;
llm_thread_pool llm;
EOC
    config => 'location = /v1/chat/completions { llm_api chat; }
               location = /tokenize { llm_api tokenize; }',
);
my $port = $srv->port;
my $json = JSON::PP->new->canonical;

sub post {
    my ($uri, $req) = @_;
    my $c = Test::LLM::Client->post($port, $uri, $json->encode($req));
    my ($status, undef, $body) = $c->finish(60);
    my $r = eval { JSON::PP::decode_json($body) } // {};
    is($status, 200, "$uri: 200") or diag($body);
    return $r;
}

my $tools = [{ type => 'function', function => {
    name => 'get_weather', description => 'Get the weather',
    parameters => { type => 'object', properties => { city => { type => 'string', maxLength => 12 } },
                    required => ['city'], additionalProperties => JSON::PP::false } } }];
my $ask = { role => 'user', content => 'Weather in Paris?' };

# 1. the prompt: the template rendered with the request's tools and turns
{
    my $tools_plain = [{ type => 'function', function => {
        name => 'get_weather', description => 'Get the weather',
        parameters => { type => 'object', properties => { city => { type => 'string' } }, required => ['city'] } } }];
    my $r = post('/tokenize', { model => 'warm', tools => $tools_plain, messages => [
        { role => 'system', content => 'Answer briefly.' }, $ask,
        { role => 'assistant', content => undef, tool_calls => [{ id => 'call_1', type => 'function',
          function => { name => 'get_weather', arguments => '{"city": "Paris"}' } }] },
        { role => 'tool', tool_call_id => 'call_1', content => 'sunny' }] });
    # jinja2 3.1 in transformers' environment renders the template to this (the request's
    # keys in the order sent: this client sends them sorted)
    my $want = "<|start|>system<|message|>You are a helpful assistant.\nReasoning: medium\n\n"
        . "# Valid channels: analysis, commentary, final. Channel must be included for every message.\n"
        . "Calls to these tools must go to the commentary channel: 'functions'.<|end|>"
        . "<|start|>developer<|message|># Instructions\n\nAnswer briefly.\n\n# Tools\n\n## functions\n\n"
        . "namespace functions {\n\n// Get the weather\ntype get_weather = (_: {\"properties\": {\"city\": "
        . "{\"type\": \"string\"}}, \"required\": [\"city\"], \"type\": \"object\"}) => any;\n\n"
        . "} // namespace functions<|end|><|start|>user<|message|>Weather in Paris?<|end|>"
        . "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        . "{\"city\": \"Paris\"}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary"
        . "<|message|>sunny<|end|><|start|>assistant";
    my $got = join '', map { chr } @{ $r->{tokens} // [] };
    is($got, $want, 'the harmony prompt: system, developer with the tools, the call and its result');
}

# 2. tool_choice required: a call in harmony's form, parsed into an OpenAI tool call
{
    my $r = post('/v1/chat/completions', { model => 'warm', messages => [$ask], tools => $tools,
        tool_choice => 'required', parallel_tool_calls => JSON::PP::false, temperature => 1.2, seed => 7,
        max_tokens => 200 });
    my $m = $r->{choices}[0]{message} // {};
    my $call = ($m->{tool_calls} // [])->[0] // {};
    is($call->{function}{name}, 'get_weather', 'required: one call of get_weather');
    my $args = eval { JSON::PP->new->decode($call->{function}{arguments} // '') };
    ok(ref $args eq 'HASH' && defined $args->{city} && length($args->{city}) <= 12,
       'its arguments are the schema\'s object') or diag($call->{function}{arguments});
    is($r->{choices}[0]{finish_reason}, 'tool_calls', 'finish_reason tool_calls');
    unlike($m->{content} // '', qr/<\|/, 'no harmony markup left in the content');
}

# 3. the same prompt again hits the prefix cache and gives the tokens a cold model gives
{
    my %req = (max_tokens => 10, temperature => 0, logit_bias => { 2 => -100, 3 => -100 },
               messages => [{ role => 'system', content => 'You are terse. ' x 8 }, $ask]);
    my $first = post('/v1/chat/completions', { %req, model => 'warm' });
    my $again = post('/v1/chat/completions', { %req, model => 'warm' });
    my $cold = post('/v1/chat/completions', { %req, model => 'cold' });
    my $p = $again->{usage}{prompt_tokens} // 0;
    is($again->{usage}{prompt_tokens_details}{cached_tokens}, $p - 1,
       "a repeated prompt reuses all but its last token ($p tokens)");
    is($cold->{usage}{prompt_tokens_details}{cached_tokens}, 0, 'the cold model computes it all');
    is($again->{choices}[0]{message}{content}, $cold->{choices}[0]{message}{content},
       'cache hit output equals cache miss output');
    is($first->{choices}[0]{message}{content}, $cold->{choices}[0]{message}{content}, 'and the first run\'s');
    is($again->{usage}{completion_tokens}, 10, 'all 10 tokens');
}

$srv->stop;
done_testing();
