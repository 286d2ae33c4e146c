# nginx -s reload and nginx -s quit keep every accepted request: streaming
# (OpenAI and Anthropic), non-streaming, n > 1, and requests still waiting for
# a slot all complete with their normal ending after the signal; the old
# worker exits when they are done.  worker_shutdown_timeout still bounds it.
#
# The streams are held mid-generation deterministically: their clients shrink
# their receive buffers and do not read, so backpressure pauses them (see
# t/072-backpressure.t) with every slot taken, and the other requests wait in
# the queue.  Only then is the signal sent; then the clients read.  Nothing
# here measures time: the waits are for states the server reports (/health,
# the error log) with generous deadlines.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::Nginx::Lite::Server ();
use Test::LLM::Client qw(get_json wait_until);

sub config {
    my ($extra_main) = @_;
    $ENV{TEST_NGINX_STALL_PORT} = Test::Nginx::Lite::Server::pick_free_port();
    return (
        main_config => "thread_pool llm threads=1;\n" . ($extra_main // ''),
        http_config => <<'EOC',
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=4 queue=8 ctx=2048;
llm_thread_pool llm;
llm_max_tokens 2000;

server {
    listen 127.0.0.1:$TEST_NGINX_STALL_PORT sndbuf=16k;
    location = /v1/chat/completions { llm_api chat; }
}
EOC
        config => 'location = /v1/chat/completions { llm_api chat; }
                   location = /v1/completions { llm_api completions; }
                   location /v1/messages { llm_api messages; }
                   location = /health { llm_api health; }',
    );
}

my $json = JSON::PP->new->canonical;

# A stream that never sees an end-of-sequence token, about 2 KB per token.
sub stream_body {
    my (%o) = @_;
    return $json->encode({
        messages => [{ role => 'user', content => $o{content} }],
        stream => JSON::PP::true, max_tokens => $o{max_tokens},
        logprobs => JSON::PP::true, top_logprobs => 20, temperature => 0.8,
        logit_bias => { 2 => -100 },
        stream_options => { include_usage => JSON::PP::true },
        ($o{n} ? (n => $o{n}) : ()),
    });
}

sub health {
    my ($port) = @_;
    return (get_json($port, '/health') // { models => [{}] });
}

# Every slot held by a paused stream (k0, h1, h2 with n=2), then four more
# requests waiting for a slot.  After the signal h1 and h2 hang up: the
# waiting requests then start generating in a worker that is shutting down,
# with no timer of their own (no output is blocked), which is exactly what a
# worker used to drop.
sub load_up {
    my ($srv) = @_;
    my $port = $srv->port;
    my $stall = $ENV{TEST_NGINX_STALL_PORT};
    my %c;
    $c{k0} = Test::LLM::Client->post($stall, '/v1/chat/completions',
        stream_body(content => 'kept', max_tokens => 200), rcvbuf => 4096);
    $c{h1} = Test::LLM::Client->post($stall, '/v1/chat/completions',
        stream_body(content => 'one', max_tokens => 2000), rcvbuf => 4096);
    $c{h2} = Test::LLM::Client->post($stall, '/v1/chat/completions',
        stream_body(content => 'two', max_tokens => 2000, n => 2), rcvbuf => 4096);
    $c{$_}->read_until(qr/data: /, 30) for qw(k0 h1 h2);
    ok(wait_until(sub { (health($port)->{models}[0]{paused} // 0) == 4 }, 60),
       'four paused sequences hold every slot');

    $c{q1} = Test::LLM::Client->post($port, '/v1/completions',
        '{"prompt": "queued", "max_tokens": 300, "logit_bias": {"2": -100}}');
    $c{q2} = Test::LLM::Client->post($port, '/v1/chat/completions',
        '{"messages": [{"role": "user", "content": "queued"}], "max_tokens": 300, "n": 2, "logit_bias": {"2": -100}}');
    $c{q3} = Test::LLM::Client->post($port, '/v1/messages',
        '{"messages": [{"role": "user", "content": "queued"}], "max_tokens": 300, "stream": true}');
    $c{q4} = Test::LLM::Client->post($port, '/v1/chat/completions',
        stream_body(content => 'queued', max_tokens => 300, n => 2));
    ok(wait_until(sub { health($port)->{models}[0]{waiting} == 6 }, 60),
       'four requests (six sequences) wait for a slot');
    return \%c;
}

# After the signal: h1 and h2 hang up, the rest is read to its end.
sub check_complete {
    my ($c, $what) = @_;
    $c->{$_}->hangup for qw(h1 h2);
    my ($st, undef, $body) = $c->{q1}->finish(120);
    is($st, 200, "$what: queued completion status 200");
    my $r = eval { $json->decode($body) };
    is($r && $r->{choices}[0]{finish_reason}, 'length', "$what: queued completion is whole JSON");
    ($st, undef, $body) = $c->{q2}->finish(120);
    $r = eval { $json->decode($body) };
    is($r && scalar @{ $r->{choices} }, 2, "$what: queued n=2 chat is whole JSON with both choices");
    ($st, undef, $body) = $c->{q3}->finish(120);
    is($st, 200, "$what: queued Anthropic stream status 200");
    like($body, qr/event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/,
         "$what: queued Anthropic stream ends with message_stop");
    for my $k (qw(q4 k0)) {
        my $n = $k eq 'q4' ? 600 : 200;
        ($st, undef, $body) = $c->{$k}->finish(120);
        is($st, 200, "$what: stream $k status 200");
        like($body, qr/"completion_tokens":$n,/, "$what: stream $k generated all $n tokens");
        like($body, qr/data: \[DONE\]\n\n$/, "$what: stream $k ends with [DONE]");
    }
}

sub log_lines {
    my ($srv, $pos) = @_;
    my ($lines) = $srv->error_log_lines($pos);
    return @$lines;
}

# ---- reload ----
{
    my $srv = start_nginx(config());
    my $port = $srv->port;
    my $c = load_up($srv);
    my $old = health($port)->{pid};
    my $pos = $srv->error_log_size;

    kill 'HUP', $srv->pid;
    ok(wait_until(sub { grep { /\[notice\] $old#\d+: gracefully shutting down/ } log_lines($srv, $pos) }, 60),
       'reload: the old worker is told to shut down');
    ok(wait_until(sub { my $p = health($port)->{pid}; $p && $p != $old }, 60),
       'reload: a new worker answers new requests');

    check_complete($c, 'reload');

    ok(wait_until(sub { !kill 0, $old }, 60), 'reload: the old worker exits once its requests are done');
    my @lines = log_lines($srv, $pos);
    ok(!grep({ /open socket .* left in connection|aborting/ } @lines),
       'reload: no connection was left open or aborted');
    my ($st) = Test::LLM::Client->post($port, '/v1/chat/completions',
        '{"messages": [{"role": "user", "content": "after"}], "max_tokens": 3}')->finish(30);
    is($st, 200, 'reload: the new worker serves');
    my @bad = grep { /\[(?:alert|crit|emerg)\]|exited on signal/ } log_lines($srv, 0);
    ok(!@bad, 'reload: no [alert], [crit], [emerg] or crash') or diag(join '', @bad[0 .. ($#bad < 5 ? $#bad : 5)]);
    $srv->stop;
}

# ---- quit ----
{
    my $srv = start_nginx(config());
    my $c = load_up($srv);
    my $old = health($srv->port)->{pid};
    my $pos = $srv->error_log_size;

    kill 'QUIT', $srv->pid;
    ok(wait_until(sub { grep { /\[notice\] $old#\d+: gracefully shutting down/ } log_lines($srv, $pos) }, 60),
       'quit: the worker is told to shut down');

    check_complete($c, 'quit');

    ok(wait_until(sub { !$srv->is_running }, 60), 'quit: nginx exits once the requests are done');
    my @lines = log_lines($srv, $pos);
    ok(!grep({ /open socket .* left in connection|aborting/ } @lines),
       'quit: no connection was left open or aborted');
    $srv->stop;
}

# ---- worker_shutdown_timeout still bounds a shutdown ----
{
    my $srv = start_nginx(config('worker_shutdown_timeout 1s;'));
    my $port = $srv->port;
    my $c = Test::LLM::Client->post($ENV{TEST_NGINX_STALL_PORT}, '/v1/chat/completions',
        stream_body(content => 'never read', max_tokens => 2000), rcvbuf => 4096);
    $c->read_until(qr/data: /, 30);
    ok(wait_until(sub { (health($port)->{models}[0]{paused} // 0) == 1 }, 60),
       'shutdown timeout: a stream is paused, its client never reads');

    kill 'QUIT', $srv->pid;
    ok(wait_until(sub { !$srv->is_running }, 60),
       'shutdown timeout: nginx exits although the client never reads');
    my ($st, undef, $body) = $c->finish(10);
    unlike($body, qr/\[DONE\]/, 'shutdown timeout: the unread stream was cut');
    $srv->stop;
}

done_testing();
