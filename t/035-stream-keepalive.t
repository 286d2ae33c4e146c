# Streams that wait for their first token are kept alive (issue 21, agent-
# client compatibility item 4): while a streamed request waits in the queue
# or is prefilled, llm_stream_keepalive sends Anthropic's "event: ping" or an
# SSE comment for OpenAI, so that clients with idle timers do not abort.
#
# The queue is held deterministically: one slot (parallel=1), taken by a
# stream whose client stops reading (backpressure pauses it, t/072), until
# this test hangs that client up.  Nothing here measures time: the waits are
# for states the server reports in /health, with generous deadlines.
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
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=1 queue=4 ctx=2048;
llm_thread_pool llm;
llm_max_tokens 2000;

server {
    listen 127.0.0.1:$TEST_NGINX_STALL_PORT sndbuf=16k;
    send_timeout 5s;
    location = /v1/chat/completions { llm_api chat; }
}
EOC
    config => 'llm_stream_keepalive 50ms;
               location = /v1/chat/completions { llm_api chat; }
               location = /v1/completions { llm_api completions; }
               location = /v1/messages { llm_api messages; }
               location = /quiet/v1/chat/completions {
                   llm_stream_keepalive 0;
                   llm_api chat;
               }
               location = /health { llm_api health; }',
);
my $port  = $srv->port;
my $stall = $ENV{TEST_NGINX_STALL_PORT};

sub health { (get_json($port, '/health') // { models => [{}] })->{models}[0] }

# Holds the only slot: a stream that never ends by itself and whose client
# does not read, so its sequence pauses and keeps the slot.
sub hold_slot {
    my $body = JSON::PP->new->canonical->encode({
        messages => [{ role => 'user', content => 'hold' }],
        stream => JSON::PP::true, max_tokens => 2000,
        logprobs => JSON::PP::true, top_logprobs => 20, temperature => 0.8,
        logit_bias => { 2 => -100 },
    });
    my $c = Test::LLM::Client->post($stall, '/v1/chat/completions', $body,
                                    rcvbuf => 4096);
    $c->read_until(qr/data: /, 30);
    wait_until(sub { (health()->{paused} // 0) == 1 }, 60);
    return $c;
}

sub queued { wait_until(sub { (health()->{waiting} // 0) >= 1 }, 30) }

# ---- OpenAI chat: SSE comments while queued, none once tokens flow ----
{
    my $h = hold_slot();
    is(health()->{paused}, 1, 'chat: the only slot is held by a paused stream');
    my $c = Test::LLM::Client->post($port, '/v1/chat/completions',
        '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 40, "stream": true, "temperature": 0}');
    ok(queued(), 'chat: the streamed request waits in the queue');
    ok($c->read_until(qr/\r\n\r\n.*: keep-alive\n\n.*: keep-alive\n\n/s, 30),
       'chat: SSE comments arrive while it waits');
    unlike($c->raw, qr/"content":"[^"]/, 'chat: no token came before them');
    $h->hangup;
    my ($status, $headers, $body) = $c->finish(60);
    is($status, 200, 'chat: status 200 once the slot is free');
    like($body, qr/data: \[DONE\]\n\n$/, 'chat: the stream ends with [DONE]');
    # the first token's text: an answer, or reasoning when the model thinks first
    my ($after) = $body =~ /("(?:content|reasoning_content)":"[^"].*)$/s;
    ok(defined $after && $after !~ /keep-alive/,
       'chat: no comment after the first token');
    my @events = grep { length } split /\n\n/, $body;
    ok(!grep({ !/^(?:: keep-alive|data: .+)$/s } @events),
       'chat: every event is a data line or a comment');
    ok(wait_until(sub { health()->{live_sequences} == 0 }, 60), 'chat: nothing left behind');
}

# ---- Anthropic messages: event: ping while queued, then message_start with
# the cache reads (item 8): the prompt is looked up in the prefix cache only
# when the request leaves the queue, so message_start waits for that ----
{
    my $ask = JSON::PP->new->canonical->encode({
        model => 'tiny', max_tokens => 8,
        messages => [{ role => 'user', content => join(' ', ('Tell me which rivets you sell.') x 6) }] });
    my $warm;
    my $w = Test::LLM::Client->post($port, '/v1/messages', $ask,
                                    headers => "anthropic-version: 2023-06-01\r\n");
    (my $wst, undef, my $wbody) = $w->finish(60);
    $warm = eval { JSON::PP::decode_json($wbody) } // {};
    my $n = ($warm->{usage}{input_tokens} // 0) + ($warm->{usage}{cache_read_input_tokens} // 0)
            + ($warm->{usage}{cache_creation_input_tokens} // 0);
    ok($wst == 200 && $n > 48, "messages: the prompt read once, unstreamed ($n tokens)");

    my $h = hold_slot();
    (my $streamed = $ask) =~ s/^\{/{"stream":true,/;
    my $c = Test::LLM::Client->post($port, '/v1/messages', $streamed,
        headers => "anthropic-version: 2023-06-01\r\n");
    ok(queued(), 'messages: the streamed request waits in the queue');
    ok($c->read_until(qr/event: ping\ndata: \{"type":"ping"\}\n\n.*event: ping\n/s, 30),
       'messages: event: ping while it waits');
    unlike($c->raw, qr/message_start|content_block_start/,
           'messages: no message_start before the prompt is read: its cache reads are not known');
    $h->hangup;
    my ($status, undef, $body) = $c->finish(60);
    is($status, 200, 'messages: status 200');
    like($body, qr/event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/, 'messages: the stream ends');
    my @events = grep { length } split /\n\n/, $body;
    my @names = map { /^event: (\w+)/ ? $1 : '?' } @events;
    my $i = 0;
    $i++ while $i < @names && $names[$i] eq 'ping';
    ok($i >= 1 && $i < @names && $names[$i] eq 'message_start',
       "messages: pings, then message_start ($i pings)");
    my ($start) = map { /^data: (.*)$/m ? JSON::PP::decode_json($1) : () } grep { /^event: message_start\n/ } @events;
    my ($delta) = map { /^data: (.*)$/m ? JSON::PP::decode_json($1) : () } grep { /^event: message_delta\n/ } @events;
    my $su = $start->{message}{usage} // {};
    is($su->{cache_read_input_tokens}, $n - 1,
       'messages: message_start reports the cache reads: all but the last prompt token');
    is($su->{input_tokens}, 1, 'messages: and input_tokens the one computed');
    is(join(',', map { $su->{$_} // '' } qw(input_tokens cache_creation_input_tokens cache_read_input_tokens)),
       join(',', map { $delta->{usage}{$_} // '' } qw(input_tokens cache_creation_input_tokens cache_read_input_tokens)),
       'messages: message_start and message_delta say the same prompt usage');
    ok(wait_until(sub { health()->{live_sequences} == 0 }, 60), 'messages: nothing left behind');
}

# ---- completions, and a location with llm_stream_keepalive 0 ----
{
    my $h = hold_slot();
    my $quiet = Test::LLM::Client->post($port, '/quiet/v1/chat/completions',
        '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}');
    my $c = Test::LLM::Client->post($port, '/v1/completions',
        '{"prompt": "hello", "max_tokens": 4, "stream": true}');
    ok(wait_until(sub { (health()->{waiting} // 0) >= 2 }, 30), 'both wait in the queue');
    ok($c->read_until(qr/: keep-alive\n\n/, 30), 'completions: SSE comments while it waits');
    # the completions stream has had its comment: the quiet one had as long
    $quiet->read_some(0.2);
    unlike($quiet->raw, qr/keep-alive/, 'llm_stream_keepalive 0: nothing while it waits');
    $h->hangup;
    my ($s1, undef, $b1) = $c->finish(60);
    my ($s2, undef, $b2) = $quiet->finish(60);
    is("$s1 $s2", '200 200', 'both are served once the slot is free');
    like($b2, qr/data: \[DONE\]\n\n$/, 'the quiet stream is whole');
    ok(wait_until(sub { health()->{live_sequences} == 0 }, 60), 'nothing left behind');
}

my ($lines) = $srv->error_log_lines(0);
my @bad = grep { /\[(?:alert|crit|emerg)\]|exited on signal/ } @$lines;
ok(!@bad, 'no [alert], [crit], [emerg] or crashed worker') or diag(join '', @bad[0 .. ($#bad < 5 ? $#bad : 5)]);
$srv->stop;

done_testing();
