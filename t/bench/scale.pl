#!/usr/bin/env perl
# make bench (scale part; alone: make bench-scale): the multi-node layout of
# docs/deployment.md on loopback ports (t/lib/Test/LLM/Topology.pm), with
# models/ngxllm-tiny on every node.  Not a test: nothing here asserts.
#
# 1. Cached-token share: the same replay of concurrent agent sessions
#    (shared system prompt and tools, a first message of their own, a
#    tool-result-like user message per turn) through the front with one node,
#    with three nodes and `hash $llm_prefix_key consistent`, and with three
#    nodes round-robin.  Share = sum of usage cached tokens / sum of prompt
#    tokens over every turn, as the nodes' schedulers count them (/health);
#    and from usage.prompt_tokens_details.cached_tokens of the OpenAI
#    sessions' later turns.  Nodes start with empty caches for each layout.
# 2. The front hop per chunk: the same streams (every token its own chunk)
#    read from a node directly and through the front (TLS): time to first
#    token, gaps between chunks, and the front worker's CPU time per chunk
#    (from /proc/PID/schedstat).
#
# BENCH_SESSIONS (8), BENCH_TURNS (6), BENCH_PARALLEL (8 slots per node),
# BENCH_STREAMS (12), BENCH_STREAM_TOKENS (256); BENCH_SCALE_PARTS="replay hop"
# (the default) or one of them.
use strict;
use warnings;

use File::Spec ();
use POSIX ();
use Time::HiRes qw(time);

use Test::LLM::Topology qw(make_cert start_node start_front open_stream node_health
                           session_body read_turn);

my $sessions = $ENV{BENCH_SESSIONS} || 8;
my $turns = $ENV{BENCH_TURNS} || 6;
my $parallel = $ENV{BENCH_PARALLEL} || 8;
my $streams = $ENV{BENCH_STREAMS} || 12;
my $stream_tokens = $ENV{BENCH_STREAM_TOKENS} || 256;
my $model = File::Spec->rel2abs($ENV{BENCH_MODEL} || 'models/ngxllm-tiny');
my $base = File::Spec->rel2abs(($ENV{BUILD} || 'build') . '/bench/scale');
$ENV{TEST_NGINX_BINARY} ||= '/usr/sbin/nginx';
$ENV{TEST_NGINX_LOAD_MODULES} ||= File::Spec->rel2abs(($ENV{BUILD} || 'build')
                                                      . '/ngx_http_llm_module.so');
$| = 1;

my ($crt, $key) = make_cert("$base/tls");
my @nodes;

sub start_nodes {
    my ($n) = @_;
    $_->stop for @nodes;
    @nodes = map {
        start_node(root => "$base/n$_", name => "n$_", log_level => 'warn', models => [
            [tiny => $model, "ctx=4096 parallel=$parallel threads=1 kv=f16"]])
    } 1 .. $n;
}

# ---- the replay ----

my $system = join ' ', map {
    "Rule $_: when you change a file in the repository, keep its style, run the tests that "
    . "cover it, and explain in one sentence why the change is needed."
} 1 .. 12;
my @tools = map {
    { type => 'function', function => {
        name => $_, description => "Run the $_ tool on the repository.",
        parameters => { type => 'object', properties => {
            path => { type => 'string', description => 'A path in the repository.' },
            args => { type => 'string', description => 'Arguments, space separated.' } },
            required => ['path'] } } }
} qw(read_file write_file run_tests grep);

sub tool_result {
    my ($s, $t) = @_;
    return "Tool output for session $s, step $t: "
        . join(' ', map { "line $_ of src/module_$s.c: int value_$t$_ = compute($s, $t, $_);" } 1 .. 6);
}

# One session's turns, in a child; prints "prompt cached" per turn.
sub run_session {
    my ($front, $i) = @_;
    my $s = { id => $i, api => $i % 2 ? 'anthropic' : 'openai', model => 'tiny',
              system => $system, first => "Session $i: the build of module_$i fails; fix it.",
              turns => [], max_tokens => 16, nonce => 0 };
    my $out = '';
    for my $t (1 .. $turns) {
        my %extra = $s->{api} eq 'openai' ? (tools => \@tools) : (tools => [
            map { { name => $_->{function}{name}, description => $_->{function}{description},
                    input_schema => $_->{function}{parameters} } } @tools ]);
        my $r = open_stream(port => $front->port, ca => $crt, method => 'POST',
                            path => $s->{api} eq 'anthropic' ? '/v1/messages' : '/v1/chat/completions',
                            headers => { 'Content-Type' => 'application/json',
                                         Authorization => 'Bearer sk-team-key' },
                            body => session_body($s, extra => \%extra), timeout => 600);
        my $res = read_turn($r, $s->{api});
        die "session $i turn $t: status $res->{status} $res->{body}\n" unless $res->{status} == 200;
        $out .= "$s->{api} $res->{prompt_tokens} $res->{cached_tokens} $res->{node}\n";
        print STDERR "session $i turn $t: $res->{prompt_tokens} $res->{cached_tokens}\n" if $ENV{BENCH_VERBOSE};
        push @{ $s->{turns} }, [$res->{text}, tool_result($i, $t)];
    }
    return $out;
}

sub replay {
    my ($label, $n, $balance) = @_;
    start_nodes($n);
    my $front = start_front(root => "$base/front", nodes => \@nodes, cert => $crt, key => $key,
                            balance => $balance, log_level => 'warn');
    my $t0 = time;
    my %kids;
    for my $i (0 .. $sessions - 1) {
        pipe(my $from, my $to) or die "pipe: $!";
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            close $from;
            print {$to} eval { run_session($front, $i) } // "error $@";
            close $to;
            POSIX::_exit(0);
        }
        close $to;
        $kids{$pid} = $from;
    }
    my ($later_prompt, $later_cached, %per_node) = (0, 0);
    for my $pid (keys %kids) {
        my $fh = $kids{$pid};
        my @lines = <$fh>;
        waitpid($pid, 0);
        for my $k (0 .. $#lines) {
            die "replay $label: $lines[$k]" if $lines[$k] =~ /^error/;
            my ($api, $p, $c, $node) = split ' ', $lines[$k];
            $per_node{$node}++;
            next if $k == 0 || $api ne 'openai';
            $later_prompt += $p;
            $later_cached += $c;
        }
    }
    my $secs = time - $t0;
    # what the schedulers counted (streamed Anthropic responses report their
    # cache_read_input_tokens in message_start, before the cache is looked up)
    my ($prompt, $cached) = (0, 0);
    for my $n (@nodes) {
        my $m = node_health($n)->{models}[0];
        $prompt += $m->{prompt_tokens};
        $cached += $m->{cached_tokens};
    }
    $front->stop;
    printf "%-24s %8d %8d %7.1f%% %18.1f%% %7.1f s   %s\n", $label, $prompt, $cached,
        100 * $cached / ($prompt || 1), 100 * $later_cached / ($later_prompt || 1), $secs,
        join(' ', map { "$_:$per_node{$_}" } sort keys %per_node);
}

my %part = map { $_ => 1 } split ' ', ($ENV{BENCH_SCALE_PARTS} || 'replay hop');
if ($part{replay}) {
print "== scale: $sessions concurrent agent sessions x $turns turns (half OpenAI, half Anthropic), "
    . "ngxllm-tiny, parallel=$parallel per node\n";
printf "%-24s %8s %8s %8s %19s %9s   %s\n", 'layout', 'prompt', 'cached', 'share',
    'OpenAI turns 2+', 'wall', 'turns per node';
replay('1 node', 1, 'hash');
replay('3 nodes, hash affinity', 3, 'hash');
replay('3 nodes, round-robin', 3, 'round-robin');
}

# ---- the front hop per chunk ----

sub worker_pid {
    my ($master) = @_;
    for (1 .. 500) {               # the master listens before it forks its worker
        opendir my $d, '/proc' or die "/proc: $!";
        for my $p (grep { /^\d+$/ } readdir $d) {
            open my $st, '<', "/proc/$p/stat" or next;
            my $line = <$st>;
            return $p if $line && $line =~ /^\d+ \(.*?\) \S (\d+)/ && $1 == $master;
        }
        Time::HiRes::sleep(0.01);
    }
    die "no worker of nginx $master";
}

sub cpu_ns {
    open my $in, '<', "/proc/$_[0]/schedstat" or die "schedstat: $!";
    my ($ns) = split ' ', scalar <$in>;
    return $ns;
}

sub pct {
    my ($p, @v) = @_;
    @v = sort { $a <=> $b } @v;
    return $v[ int($p * $#v + 0.5) ];
}

# One stream; appends its time to first token and its gaps to $acc.
sub stream_one {
    my ($acc, %o) = @_;
    my $body = '{"model":"tiny","max_tokens":' . $stream_tokens . ',"stream":true,'
             . '"temperature":0,"logprobs":true,"logit_bias":{"8183":-100,"8185":-100},'
             . '"messages":[{"role":"user","content":"Tell me a long story."}]}';
    my $t0 = time;
    my $r = open_stream(%o, method => 'POST', path => '/v1/chat/completions',
                        headers => { 'Content-Type' => 'application/json',
                                     Authorization => 'Bearer sk-team-key' },
                        body => $body, timeout => 600);
    my $last;
    while (my $ev = $r->next_event) {
        next unless $ev->{data} =~ /"logprobs":\{"content"/;
        my $now = time;
        push @{ $acc->{ttft} }, ($now - $t0) * 1000 unless defined $last;
        push @{ $acc->{gaps} }, ($now - $last) * 1000 if defined $last;
        $last = $now;
        $acc->{chunks}++;
    }
    $r->close;
}

sub report {
    my ($label, $acc, $cpu) = @_;
    my @g = @{ $acc->{gaps} };
    my $mean = 0;
    $mean += $_ for @g;
    printf "%-22s %12.2f %12.3f %12.3f %13.4f %22s\n", $label, pct(0.5, @{ $acc->{ttft} }),
        pct(0.5, @g), pct(0.99, @g), $mean / (@g || 1),
        defined $cpu ? sprintf('%.1f us', $cpu / 1000 / $acc->{chunks}) : '-';
}

exit 0 unless $part{hop};
start_nodes(1);
my $front = start_front(root => "$base/front", nodes => \@nodes, cert => $crt, key => $key,
                        log_level => 'warn');
my $worker = worker_pid($front->pid);
stream_one({}, port => $nodes[0]->port);                              # warm up
print "== front hop: $streams streams of $stream_tokens tokens each way, every token a chunk "
    . "(logprobs), one node; direct and front streams alternate\n";
printf "%-22s %12s %12s %12s %13s %22s\n", 'path', 'TTFT p50 ms', 'gap p50 ms', 'gap p99 ms',
    'gap mean ms', 'front CPU per chunk';
my (%direct, %front, $cpu);
for (1 .. $streams) {
    stream_one(\%direct, port => $nodes[0]->port);
    my $cpu0 = cpu_ns($worker);
    stream_one(\%front, port => $front->port, ca => $crt);
    $cpu += cpu_ns($worker) - $cpu0;
}
report('node directly', \%direct);
report('front (TLS, HTTP/1.1)', \%front, $cpu);
$front->stop;
$_->stop for @nodes;
