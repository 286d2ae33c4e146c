# Backpressure and admission under load, with several requests in flight on
# one nginx (raw sockets, t/lib/Test/LLM/Client.pm).  A client that stops
# reading pauses its sequences once 64 KiB are unsent (they keep their KV
# cache and generate nothing) and is cancelled after send_timeout, which frees
# its slot; a slow reader is resumed and gets its whole stream.  The clients
# shrink their receive buffers and the stall server its send buffer, so the
# backlog builds after a few dozen tokens instead of megabytes.
#
# Nothing here measures time: the waits are for states the server reports in
# /health (paused, live_sequences) with generous deadlines.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::Nginx::Lite::Server ();
use Test::LLM::Client qw(get_json wait_until);

$ENV{TEST_NGINX_STALL_PORT} = Test::Nginx::Lite::Server::pick_free_port();

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => <<'EOC',
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 queue=2 ctx=2048;
llm_thread_pool llm;
llm_max_tokens 2000;

server {
    listen 127.0.0.1:$TEST_NGINX_STALL_PORT sndbuf=16k;
    send_timeout 2s;
    location = /v1/chat/completions { llm_api chat; }
    location = /v1/embeddings { llm_api embeddings; }
}
EOC
    config => 'location = /v1/chat/completions { llm_api chat; }
               location = /v1/embeddings { llm_api embeddings; }
               location = /health { llm_api health; }',
);
my $port  = $srv->port;
my $stall = $ENV{TEST_NGINX_STALL_PORT};

sub health { (get_json($port, '/health') // { models => [{}] })->{models}[0] }

# A streaming chat request that never sees an end-of-sequence token; with
# top_logprobs each token is a chunk of about 2 KB.
sub stream_body {
    my (%o) = @_;
    return JSON::PP->new->canonical->encode({
        messages => [{ role => 'user', content => $o{content} // 'hello' }],
        stream => JSON::PP::true, max_tokens => $o{max_tokens},
        logprobs => JSON::PP::true, top_logprobs => 20, temperature => 0.8,
        logit_bias => { 2 => -100 },
        stream_options => { include_usage => JSON::PP::true },
        ($o{n} ? (n => $o{n}) : ()),
    });
}

my $log_pos = $srv->error_log_size;

# ---- a client that stops reading ----
{
    my $before = health();
    my $c = Test::LLM::Client->post($stall, '/v1/chat/completions',
                                    stream_body(max_tokens => 2000), rcvbuf => 4096);
    ok($c->read_until(qr/data: /, 30), 'the stalled stream started');

    ok(wait_until(sub { my $h = health(); ($h->{paused} // 0) == 1 || $h->{live_sequences} == 0 }, 60),
       'its sequence pauses (or, without backpressure, ends)');
    is(health()->{paused}, 1, 'paused: the client has not taken 64 KiB of output');

    # the other slot still serves
    my $r = Test::LLM::Client->post($port, '/v1/chat/completions',
        '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}');
    my ($status) = $r->finish(30);
    is($status, 200, 'another request is served meanwhile');

    ok(wait_until(sub { health()->{live_sequences} == 0 }, 60),
       'send_timeout cancels the stalled client and frees its slot');
    my $h = health();
    is($h->{running}, 0, 'no sequence runs');
    is($h->{paused}, 0, 'none is paused');
    is($h->{cancelled} - $before->{cancelled}, 1, 'the stalled request was cancelled');
    my $generated = $h->{generated_tokens} - $before->{generated_tokens} - 3;
    cmp_ok($generated, '<', 1000,
           "the stalled stream generated $generated of its 2000 tokens: its backlog is bounded");
    my ($lines) = $srv->error_log_lines($log_pos);
    ok((grep { /llm: client timed out/ } @$lines), 'the error log says the client timed out');
    $c->hangup;
}

# ---- a slow reader is resumed and gets everything ----
{
    my $c = Test::LLM::Client->post($stall, '/v1/chat/completions',
                                    stream_body(max_tokens => 300, n => 2), rcvbuf => 4096);
    ok($c->read_until(qr/data: /, 30), 'the slow stream started');
    ok(wait_until(sub { (health()->{paused} // 0) == 2 || health()->{live_sequences} == 0 }, 60),
       'both choices pause while the client does not read');
    my ($status, undef, $body) = $c->finish(120);
    is($status, 200, 'status 200');
    like($body, qr/"usage":\{"prompt_tokens":\d+,"completion_tokens":600,/,
         'all 2 x 300 tokens were generated after the client read on');
    is(scalar(() = $body =~ /"finish_reason":"length"/g), 2, 'both choices end with finish_reason length');
    like($body, qr/data: \[DONE\]\n\n$/, 'the stream ends with [DONE]');
    ok(wait_until(sub { health()->{live_sequences} == 0 }, 30), 'nothing is left behind');
}

# ---- admission while every place is held ----
{
    # two paused streams hold both slots; the queue (2) is free
    my @p = map {
        Test::LLM::Client->post($stall, '/v1/chat/completions',
                                stream_body(max_tokens => 2000, content => "p$_"), rcvbuf => 4096)
    } 1 .. 2;
    $_->read_until(qr/data: /, 30) for @p;
    ok(wait_until(sub { (health()->{paused} // 0) == 2 }, 60), 'two paused streams hold both slots');

    # an embeddings request takes the two free places and waits in them
    my $e = Test::LLM::Client->post($port, '/v1/embeddings',
        '{"input": ["one", "two", "three", "four", "five"]}');
    ok(wait_until(sub { health()->{waiting} == 2 }, 30), 'embeddings: two inputs wait in the queue');

    # nothing is free now: refused up front, with Retry-After
    my ($st, $hd, $bd) = Test::LLM::Client->post($port, '/v1/chat/completions',
        '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}')->finish(30);
    is($st, 429, 'a generation request meanwhile is a 429');
    is($hd->{'retry-after'}, '1', 'with Retry-After');
    ($st, $hd, $bd) = Test::LLM::Client->post($port, '/v1/embeddings',
        '{"input": "six"}')->finish(30);
    is($st, 429, 'another embeddings request is a 429 before any work');
    is($hd->{'retry-after'}, '1', 'with Retry-After');

    # the stalls end (send_timeout); the embeddings go through their places
    my ($es, undef, $eb) = $e->finish(120);
    is($es, 200, 'the admitted embeddings request completes');
    is(scalar(() = $eb =~ /"object":"embedding"/g), 5, 'with all five embeddings');
    $_->hangup for @p;
    ok(wait_until(sub { health()->{live_sequences} == 0 }, 60), 'nothing is left behind');
}

# ---- embeddings and generations racing for places never fail half-way ----
{
    my @reqs;
    for my $i (1 .. 12) {
        push @reqs, $i % 2
            ? Test::LLM::Client->post($port, '/v1/embeddings',
                  '{"input": ["' . join('", "', map { "input $i.$_ " x 20 } 1 .. 6) . '"]}')
            : Test::LLM::Client->post($port, '/v1/chat/completions',
                  '{"messages": [{"role": "user", "content": "race ' . $i . '"}], "max_tokens": 30, "n": 2}');
    }
    my %seen;
    for my $r (@reqs) {
        my ($st, $hd, $bd) = $r->finish(120);
        $seen{$st}++;
        if ($st == 429) {
            $seen{'429 without Retry-After'}++ unless ($hd->{'retry-after'} // '') eq '1';
        }
    }
    my $seen = join ', ', map { "$_: $seen{$_}" } sort keys %seen;
    ok(!grep({ $_ ne '200' && $_ ne '429' } keys %seen), "every request is a 200 or a 429 up front ($seen)");
    ok(wait_until(sub { health()->{live_sequences} == 0 }, 60), 'nothing is left behind');
}

my ($lines) = $srv->error_log_lines(0);
my @bad = grep { /\[(?:alert|crit|emerg)\]|exited on signal/ } @$lines;
ok(!@bad, 'no [alert], [crit], [emerg] or crashed worker') or diag(join '', @bad[0 .. ($#bad < 5 ? $#bad : 5)]);
ok($srv->is_running, 'nginx is still running');
$srv->stop;

done_testing();
