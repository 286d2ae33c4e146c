# A front nginx and three nodes, as separate nginx instances on loopback
# ports, laid out as docs/deployment.md "Several nodes" shows (the front
# loads the module with no model; TLS with a self-signed certificate, API
# keys, limit_req, `hash $llm_prefix_key consistent`, keepalive,
# proxy_buffering off, retries on connection errors only).
#
# Eight agent sessions (four OpenAI, four Anthropic with Claude Code's
# per-request billing nonce) are replayed turn by turn, streamed:
#   - every turn of a session lands on the node of its first turn;
#   - the node with the most sessions is stopped, every session sends its
#     next turn, and once the stopped node's sockets hold those requests
#     unread, it is killed: no request is lost (each is answered in full by
#     another node), its sessions move and stay on one surviving node, the
#     other sessions do not move;
#   - a turn sent over HTTP/2 (curl) lands on its session's node and streams;
#   - a stream reaches the client through the front while the node is still
#     generating, and closing it cancels the generation on the node;
#   - errors keep their protocol's shape: a node's 400s pass unchanged, the
#     front's own 401, 429 and 502 are JSON in the location's shape.
# Nothing here depends on timing: waits poll for a state, with a deadline
# only against hangs.  A plain Test::More script (t/lib on the include
# path), so it runs the same under the real Test::Nginx.
use strict;
use warnings;

use File::Spec ();
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use Test::LLM::Topology qw(make_cert start_node start_front open_stream http_request
                           node_health unread_requests session_body read_turn);

for my $var (qw(TEST_NGINX_LOAD_MODULES TEST_NGINX_FIXTURES TEST_NGINX_MODELS)) {
    plan skip_all => "$var is not set (see t/README.md)" unless $ENV{$var};
}
plan skip_all => 'openssl is not installed' if system('openssl version >/dev/null 2>&1') != 0;

my $base = File::Spec->rel2abs($ENV{TEST_NGINX_SERVROOT} || 't/servroot-061-topology');
my ($crt, $key) = make_cert("$base/tls");

# "fixture" (2 layers) keeps the replay cheap; "agent" is slow enough that a
# long stream is still being generated when its first chunk has arrived.
my @nodes = map {
    start_node(root => "$base/n$_", name => "n$_", models => [
        [fixture => "$ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32", 'ctx=256 parallel=4 threads=1'],
        [agent => "$ENV{TEST_NGINX_MODELS}/ngxllm-tiny", 'ctx=2048 parallel=1 threads=1'],
    ])
} 1 .. 3;
my %node_by_name = map { $_->{name} => $_ } @nodes;

my $front = start_front(root => "$base/front", nodes => \@nodes, cert => $crt, key => $key,
                        keys => ['sk-team-key'], trial_key => 'sk-trial-key');

my %auth = (
    openai    => { Authorization => 'Bearer sk-team-key' },
    anthropic => { 'x-api-key' => 'sk-team-key', 'anthropic-version' => '2023-06-01' },
);
my %path = (openai => '/v1/chat/completions', anthropic => '/v1/messages');

sub post {
    my ($api, $body, %o) = @_;
    return open_stream(port => $front->port, ca => $crt, method => 'POST', path => $path{$api},
                       headers => { 'Content-Type' => 'application/json',
                                    %{ $o{headers} // $auth{$api} } },
                       body => $body, timeout => 120);
}

sub turn {
    my ($s) = @_;
    return read_turn(post($s->{api}, session_body($s)), $s->{api});
}

my @sessions = map {
    { id => $_, api => $_ < 4 ? 'openai' : 'anthropic', model => 'fixture',
      system => 'You are agent A.', first => "Task $_: fix bug $_.", turns => [] }
} 0 .. 7;

# ---- turns 1 and 2: each session stays on one node ----

my (%home, %count);
for my $n (1 .. 2) {
    for my $s (@sessions) {
        my $t = turn($s);
        my $what = "session $s->{id} ($s->{api}) turn $n";
        is($t->{status}, 200, "$what: 200");
        like($t->{type}, qr{^text/event-stream}, "$what: streamed through the front");
        ok($t->{complete}, "$what: the stream ends with the protocol's last event");
        if ($n == 1) {
            $home{$s->{id}} = $t->{node};
            $count{$t->{node}}++;
        } else {
            is($t->{node}, $home{$s->{id}}, "$what: on the node of turn 1 ($home{$s->{id}})");
            diag("$what: $t->{cached_tokens} of $t->{prompt_tokens} prompt tokens cached");
        }
        push @{ $s->{turns} }, [$t->{text}, 'Go on.'];
    }
}
ok(exists $node_by_name{$_}, "node $_ answered") for sort keys %count;

# ---- a node dies with requests sent to it but not started ----

my ($victim_name) = sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count;
my $victim = $node_by_name{$victim_name};
my @moved = grep { $home{$_->{id}} eq $victim_name } @sessions;
note("stopping $victim_name, home of sessions @{[ map { $_->{id} } @moved ]}");

kill 'STOP', -$victim->pid;

my %kids;
for my $s (@sessions) {
    pipe(my $from, my $to) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $from;
        my $t = eval { turn($s) } || { status => 0, error => $@ };
        print {$to} $Test::LLM::Topology::Json->encode($t);
        close $to;
        POSIX::_exit(0);
    }
    close $to;
    $kids{$s->{id}} = [$pid, $from];
}

my $deadline = time + 60;
sleep 0.02 while unread_requests($victim->port) < @moved && time < $deadline;
is(unread_requests($victim->port), scalar @moved,
   "the stopped node holds its sessions' requests, unread");

kill 'KILL', -$victim->pid;
waitpid($victim->pid, 0);
delete $victim->{pid};

my %third;
for my $s (@sessions) {
    my ($pid, $from) = @{ $kids{$s->{id}} };
    my $out = do { local $/; <$from> };
    waitpid($pid, 0);
    my $t = eval { $Test::LLM::Topology::Json->decode($out) } || { status => 0 };
    $third{$s->{id}} = $t;
    my $what = "session $s->{id} turn 3";
    is($t->{status}, 200, "$what: answered (not lost)") or diag($t->{error} // $out);
    ok($t->{complete}, "$what: the whole stream arrived");
    if ($home{$s->{id}} eq $victim_name) {
        isnt($t->{node}, $victim_name, "$what: moved off the dead node, to $t->{node}");
    } else {
        is($t->{node}, $home{$s->{id}}, "$what: stays on $home{$s->{id}}");
    }
    push @{ $s->{turns} }, [$t->{text} // '', 'Go on.'];
}

my $victim_port = $victim->port;
my @retried = grep { /\[error\].*while reading response header from upstream.*:$victim_port\// }
              @{ ($front->error_log_lines(0))[0] };
is(scalar @retried, scalar @moved,
   "the front saw each of those requests fail on the dead node, and sent it on");

# ---- turn 4: moved sessions stay where they moved ----

for my $s (@sessions) {
    my $t = turn($s);
    my $want = $third{$s->{id}}{node} // '';
    is($t->{status}, 200, "session $s->{id} turn 4: 200");
    is($t->{node}, $want, "session $s->{id} turn 4: on the node of turn 3 ($want)");
}

# ---- HTTP/2 to the front: the same key, the same node, a whole stream ----

SKIP: {
    skip 'curl is not installed', 3 if system('curl --version >/dev/null 2>&1') != 0;
    my $s = $sessions[0];
    my $file = "$base/h2-body.json";
    open my $out, '>', $file or die "$file: $!";
    print $out session_body($s);
    close $out;
    my $port = $front->port;
    my $got = `curl -sS --http2 -N --cacert $crt --resolve localhost:$port:127.0.0.1 -D - \\
        -H 'Content-Type: application/json' -H 'Authorization: Bearer sk-team-key' \\
        --data-binary \@$file https://localhost:$port/v1/chat/completions 2>&1`;
    like($got, qr{^HTTP/2 200}, 'a turn over HTTP/2 through the front: 200 over h2');
    my $home = $third{0}{node};
    like($got, qr{^x-llm-node: \Q$home\E\r?$}mi,
         "... on the session's node ($home): the key reads the HTTP/2 body too");
    like($got, qr{data: \[DONE\]\n\n\z}, '... streamed to its end');
}

# ---- a stream is forwarded while it is generated; closing it cancels ----
#
# The moment the client has read the 24th token with text (reasoning or
# content), the node is stopped (SIGSTOP), the client hangs up and the node
# is let go: it notices and cancels.  The node generated those 24 tokens,
# the ones without text (<think>), the steps under way until it saw the
# hang-up, and whatever it made while the stop was on its way: 6 in all
# here.  A front that holds the stream back makes that number grow:
# proxy_buffering on with X-Accel-Buffering ignored gives 48.  Only the
# last part depends on scheduling (a test process descheduled between its
# read and its kill), so a measurement above the bound is repeated, up to
# three times: a buffering front fails all three.

my @ahead;
for my $try (1 .. 3) {
    my $text = qr/"delta":\{"(?:content|reasoning_content)":"[^"]/;
    my $body = '{"model":"agent","max_tokens":1500,"stream":true,"temperature":0,'
             . '"logit_bias":{"8183":-100,"8185":-100},'
             . '"messages":[{"role":"user","content":"Tell me a long story."}]}';
    my %before = map {
        my $n = $_;
        ($n->{name} => (grep { $_->{id} eq 'agent' } @{ node_health($n)->{models} })[0])
    } grep { $_->pid } @nodes;
    my $r = post('openai', $body,
                 headers => { %{ $auth{openai} }, 'X-Request-ID' => "topo-stream-$try" });
    my $node = $node_by_name{ $r->{headers}{'x-llm-node'} // '' } or last;
    my $received = 0;
    while (my $ev = $r->next_event) {
        next unless $ev->{data} =~ $text;
        if (++$received == 24) {
            kill 'STOP', -$node->pid;
            last;
        }
    }
    $r->close;
    kill 'CONT', -$node->pid;
    my $agent;
    my $deadline = time + 60;
    while (time < $deadline) {
        ($agent) = grep { $_->{id} eq 'agent' } @{ node_health($node)->{models} };
        last if $agent->{live_sequences} == 0;
        sleep 0.02;
    }
    my $was = $before{$node->{name}};
    if ($try == 1) {
        is($received, 24, 'a long stream reaches the client token by token');
        is($agent->{live_sequences}, 0,
           'the client hanging up at the front ends the sequence on the node');
        cmp_ok($agent->{cancelled}, '>', $was->{cancelled}, '... which counts it as cancelled');
    }
    push @ahead, $agent->{generated_tokens} - $was->{generated_tokens} - $received;
    last if $ahead[-1] <= 16;
}
ok(@ahead && $ahead[-1] <= 16,
   "the node was at most 16 tokens ahead of the client: the front held nothing back")
    or diag("tokens ahead, per try: @ahead");
note("tokens ahead, per try: @ahead");

# ---- errors keep the protocol's shape through the front ----

{
    my $r = http_request(port => $front->port, ca => $crt, method => 'POST',
                         path => '/v1/chat/completions',
                         headers => { 'Content-Type' => 'application/json', %{ $auth{openai} },
                                      'X-Request-ID' => 'topo-400' },
                         body => '{"model":"fixture","messages":[]}');
    is($r->{status}, 400, "a node's OpenAI 400 through the front");
    ok($r->{headers}{'x-llm-node'}, '... comes from the node');
    like($r->{body}, qr/^\{"error":\{"message":"[^"]*","type":"invalid_request_error","param":"messages",.*"request_id":"topo-400"\}\}$/,
         '... unchanged, in OpenAI shape, with the client\'s request id');
    is($r->{headers}{'x-request-id'}, 'topo-400', '... and one X-Request-ID');

    $r = http_request(port => $front->port, ca => $crt, method => 'POST', path => '/v1/messages',
                      headers => { 'Content-Type' => 'application/json', %{ $auth{anthropic} } },
                      body => '{"model":"fixture","messages":[{"role":"user","content":"hi"}]}');
    is($r->{status}, 400, "a node's Anthropic 400 through the front");
    like($r->{body}, qr/^\{"type":"error","error":\{"type":"invalid_request_error","message":"[^"]*max_tokens/,
         '... in Anthropic shape');

    $r = http_request(port => $front->port, ca => $crt, method => 'POST',
                      path => '/v1/chat/completions',
                      headers => { 'Content-Type' => 'application/json' },
                      body => '{"model":"fixture","messages":[{"role":"user","content":"hi"}]}');
    is($r->{status}, 401, 'no API key: 401 from the front');
    ok(!$r->{headers}{'x-llm-node'}, '... no node saw it');
    like($r->{body}, qr/^\{"error":\{"message":"Authentication required\.","type":"authentication_error"/,
         '... in OpenAI shape');

    $r = http_request(port => $front->port, ca => $crt, method => 'POST', path => '/v1/messages',
                      headers => { 'Content-Type' => 'application/json', 'x-api-key' => 'sk-wrong' },
                      body => '{"model":"fixture","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}');
    is($r->{status}, 401, 'a wrong key on /v1/messages: 401');
    like($r->{body}, qr/^\{"type":"error","error":\{"type":"authentication_error"/, '... in Anthropic shape');

    my @trial = map {
        http_request(port => $front->port, ca => $crt, method => 'POST',
                     path => '/v1/chat/completions',
                     headers => { 'Content-Type' => 'application/json',
                                  Authorization => 'Bearer sk-trial-key' },
                     body => '{"model":"fixture","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}')
    } 1 .. 2;
    is($trial[0]{status}, 200, 'a trial key: the first request of the minute passes');
    is($trial[1]{status}, 429, '... the second is limited by limit_req');
    like($trial[1]{body}, qr/^\{"error":\{"message":"Too many requests[^"]*","type":"rate_limit_error"/,
         '... as an OpenAI rate_limit_error');
}

# ---- every node down: the front answers 502 in the protocol's shape ----

$_->stop for grep { $_->pid } @nodes;
{
    my $r = http_request(port => $front->port, ca => $crt, method => 'POST',
                         path => '/v1/messages',
                         headers => { 'Content-Type' => 'application/json', %{ $auth{anthropic} } },
                         body => '{"model":"fixture","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}');
    is($r->{status}, 502, 'no node left: 502');
    like($r->{body}, qr/^\{"type":"error","error":\{"type":"api_error","message":"Bad gateway\."\}/,
         '... in Anthropic shape');
}

for my $srv ($front, @nodes) {
    my ($lines) = $srv->error_log_lines(0);
    my @bad = grep { /\[(?:alert|crit|emerg)\]/ || /exited on signal/ } @$lines;
    ok(!@bad, 'no [alert]/[crit]/[emerg] or crashed worker in ' . $srv->error_log)
        or diag(join '', @bad[0 .. ($#bad < 9 ? $#bad : 9)]);
}
ok($front->is_running, 'the front is still running');
$front->stop;

done_testing();
