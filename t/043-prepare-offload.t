# Preparing a request (body JSON, chat template, tokenizer) runs in a thread
# (llm_prepare_thread_pool), not on the event loop (issue 13 item 6): while
# one request's template renders up to its step bound (about a second), a
# stream that is already running keeps going and /health answers.
#
# No clock is read: the test checks the order of events.  On the event loop
# the render blocks every other request until it ends, so its 400 arrives
# before the stream's next token; in a thread the stream (64 tokens of the
# tiny model, a few hundredths of the render's work) ends first.
use strict;
use warnings;
use Test::More;
use File::Temp qw(tempdir);
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client qw(get_json);

my $fixture = "$ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32";
my $loopy = tempdir('llm-prepare-XXXXXX', TMPDIR => 1, CLEANUP => 1);
for my $f (qw(config.json generation_config.json model.safetensors tokenizer.json)) {
    symlink("$fixture/$f", "$loopy/$f") or die "symlink $f: $!";
}
{
    # a million template steps: the render fails at its bound after about a second
    my $tmpl = "{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}";
    open my $fh, '>', "$loopy/tokenizer_config.json" or die $!;
    print $fh JSON::PP->new->encode({ tokenizer_class => 'PreTrainedTokenizerFast',
                                      model_max_length => 256, chat_template => $tmpl });
    close $fh;
}

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => "llm_model tiny $fixture;\nllm_model loopy $loopy;\nllm_thread_pool llm;",
    config      => "location = /v1/chat/completions { llm_api chat; }\n"
                 . "location = /health { llm_api health; }",
);
my $port = $srv->port;

my $stream_body = JSON::PP->new->canonical->encode({
    model => 'tiny', stream => JSON::PP::true, max_tokens => 64, temperature => 0,
    stream_options => { include_usage => JSON::PP::true },
    logit_bias => { 2 => -100 },                  # no end-of-sequence: all 64 tokens
    messages => [{ role => 'user', content => 'hello' }],
});
my $slow_body = '{"model": "loopy", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}';

# 1. a stream is running
my $stream = Test::LLM::Client->post($port, '/v1/chat/completions', $stream_body);
ok($stream->read_until(qr/data: \{/, 30), 'the stream has started');

# 2. a request whose template renders for about a second arrives
my $slow = Test::LLM::Client->post($port, '/v1/chat/completions', $slow_body);

# 3. the stream runs to its end, and /health answers, while the render goes on
ok($stream->read_until(qr/data: \[DONE\]/, 60), 'the stream ends');
my $health = get_json($port, '/health');
is(ref $health, 'HASH', '/health answers');
$slow->read_some(0);
is($slow->raw, '', 'meanwhile the slow request has not been answered: its render did not hold the event loop');

my ($status, undef, $body) = $stream->finish(10);
is($status, 200, 'the stream is a 200');
like($body, qr/"completion_tokens":64,/, 'with all its 64 tokens');

# 4. the slow request gets its answer: the template's step bound
($status, undef, $body) = $slow->finish(60);
is($status, 400, 'the slow request is a 400');
like($body, qr/template render exceeds 1000000 steps/, '... for the step bound');

my ($lines) = $srv->error_log_lines(0);
ok(!grep(/\[alert\]|\[crit\]|\[emerg\]|exited on signal/, @$lines), 'no alert, crit, emerg or crash in the error log');

$srv->stop;
done_testing();
