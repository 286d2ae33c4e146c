# /metrics (issue 21): Prometheus text exposition aggregated over the
# workers through the shared zone.  Two workers serve the requests; every
# scrape (whichever worker answers it) shows all of them.  Each scrape is
# checked by a parser of the text format (0.0.4): HELP/TYPE lines, names and
# labels, escaping, one TYPE per family before its samples, counters named
# *_total, histograms with cumulative buckets ending at le="+Inf" equal to
# _count, and _sum.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client qw(wait_until);

my $srv = start_nginx(
    workers => 2,
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=256;
                    llm_thread_pool llm;
                    log_format bypid "$pid $request_method $uri";',
    config => 'access_log logs/bypid.log bypid;
               location = /v1/chat/completions { llm_api chat; }
               location = /tokenize { llm_api tokenize; }
               location = /metrics { llm_api metrics; }',
);
my $port = $srv->port;
my $J = JSON::PP->new->canonical;

sub req {
    my ($method, $uri, $body) = @_;
    return Test::LLM::Client->request($port, $method, $uri, $body)->finish(60);
}

# The exposition text -> { family => { type, samples => [[name, {labels}, value]] } };
# dies naming the first line that breaks the format.
sub parse_exposition {
    my ($text) = @_;
    die "does not end with a newline\n" unless $text =~ /\n\z/;
    my (%fam, %type_seen, %done, $current);
    my $name_re = qr/[a-zA-Z_:][a-zA-Z0-9_:]*/;
    my $n = 0;
    for my $line (split /\n/, $text) {
        $n++;
        if ($line =~ /^# HELP ($name_re) (.*)$/) {
            next;
        }
        if ($line =~ /^# TYPE ($name_re) (counter|gauge|histogram|summary|untyped)$/) {
            die "line $n: second TYPE for $1\n" if $type_seen{$1}++;
            die "line $n: TYPE for $1 after its samples\n" if $fam{$1};
            $done{$current} = 1 if defined $current;
            $current = $1;
            $fam{$1} = { type => $2, samples => [] };
            next;
        }
        die "line $n: a comment that is neither HELP nor TYPE: $line\n" if $line =~ /^#/;
        die "line $n: empty line\n" if $line eq '';
        $line =~ /^($name_re)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/
            or die "line $n: not a sample: $line\n";
        my ($name, $lab, $value) = ($1, $2 // '', $3);
        die "line $n: bad value $value\n"
            unless $value =~ /^(?:[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|[-+]?Inf|NaN)$/;
        my %labels;
        while (length $lab) {
            $lab =~ s/^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)//
                or die "line $n: bad labels {$lab}\n";
            die "line $n: label $1 twice\n" if exists $labels{$1};
            $labels{$1} = $2;
        }
        my ($family) = grep { defined } map { $fam{$_} ? $_ : undef }
                           ($name, $name =~ /^(.*)_(?:bucket|sum|count)$/);
        die "line $n: $name has no TYPE\n" unless $family;
        die "line $n: $name is not in the family being listed ($current)\n"
            unless $family eq $current;
        push @{ $fam{$family}{samples} }, [$name, \%labels, $value];
    }
    for my $f (keys %fam) {
        my $t = $fam{$f}{type};
        die "counter $f does not end in _total\n" if $t eq 'counter' && $f !~ /_total$/;
        next unless $t eq 'histogram';
        my %series;
        for my $s (@{ $fam{$f}{samples} }) {
            my ($name, $l, $v) = @$s;
            my %key = %$l;
            delete $key{le};
            my $k = join ',', map { "$_=$key{$_}" } sort keys %key;
            if ($name eq "${f}_bucket") {
                die "$f bucket without le\n" unless defined $l->{le};
                push @{ $series{$k}{buckets} }, [$l->{le}, $v];
            } elsif ($name eq "${f}_sum") {
                $series{$k}{sum} = $v;
            } elsif ($name eq "${f}_count") {
                $series{$k}{count} = $v;
            } else {
                die "histogram $f has a sample $name\n";
            }
        }
        for my $k (keys %series) {
            my $b = $series{$k}{buckets} || [];
            die "$f\{$k\}: no buckets\n" unless @$b;
            die "$f\{$k\}: the last bucket is not +Inf\n" unless $b->[-1][0] eq '+Inf';
            for my $i (1 .. $#$b) {
                die "$f\{$k\}: le not ascending\n"
                    unless $b->[$i][0] eq '+Inf' || $b->[$i][0] > $b->[$i - 1][0];
                die "$f\{$k\}: buckets not cumulative\n" if $b->[$i][1] < $b->[$i - 1][1];
            }
            die "$f\{$k\}: no _sum or _count\n"
                unless defined $series{$k}{sum} && defined $series{$k}{count};
            die "$f\{$k\}: _count $series{$k}{count} != +Inf bucket $b->[-1][1]\n"
                unless $series{$k}{count} == $b->[-1][1];
        }
    }
    return \%fam;
}

sub value {
    my ($fam, $family, $name, %want) = @_;
    my $f = $fam->{$family} or return undef;
    for my $s (@{ $f->{samples} }) {
        next unless $s->[0] eq $name;
        next if grep { ($s->[1]{$_} // '') ne $want{$_} } keys %want;
        return $s->[2];
    }
    return undef;
}

my ($st, $hdr, $body) = req('GET', '/metrics');
is($st, 200, 'scrape before any request: 200');
is($hdr->{'content-type'}, 'text/plain; version=0.0.4; charset=utf-8',
   'Content-Type of the text format');
my $fam = eval { parse_exposition($body) };
ok($fam, 'it parses') or diag($@);

# the work: three chat completions, one tokenize, one bad tokenize
my $gen = 0;
for my $i (1 .. 3) {
    my ($s, undef, $b) = req('POST', '/v1/chat/completions',
        $J->encode({ messages => [{ role => 'user', content => "hello $i" }],
                     max_tokens => 3, temperature => 0 }));
    is($s, 200, "chat $i: 200");
    $gen += eval { $J->decode($b)->{usage}{completion_tokens} } // 0;
}
is((req('POST', '/tokenize', '{"prompt": "abc"}'))[0], 200, 'tokenize: 200');
is((req('POST', '/tokenize', '{"prompt": 1}'))[0], 400, 'bad tokenize: 400');

my $last = '';
ok(wait_until(sub {
    my (undef, undef, $b) = req('GET', '/metrics');
    $last = $b;
    my $f = eval { parse_exposition($b) } or return 0;
    return (value($f, 'llm_requests_total', 'llm_requests_total',
                  endpoint => 'chat', code => 200) // 0) == 3
        && (value($f, 'llm_generation_tokens_total', 'llm_generation_tokens_total',
                  model => 'tiny') // 0) == $gen
        && (value($f, 'llm_time_to_first_token_seconds',
                  'llm_time_to_first_token_seconds_count', model => 'tiny') // 0) == 3
        # a request is counted in its log phase, after the client has its answer: wait
        # for the two tokenize requests too, or the scrapes below can race them
        && (value($f, 'llm_requests_total', 'llm_requests_total',
                  endpoint => 'tokenize', code => 400) // 0) == 1
        && (value($f, 'llm_requests_total', 'llm_requests_total',
                  endpoint => 'tokenize', code => 200) // 0) == 1;
}, 20), 'the scrape counts the three chat requests, their tokens and first tokens, and the tokenize requests')
    or diag($last);

# every scrape, whichever worker answers it, shows the same totals
my $same = 0;
for (1 .. 8) {
    my (undef, undef, $b) = req('GET', '/metrics');
    my $f = eval { parse_exposition($b) };
    if (!$f) {
        diag($@);
        next;
    }
    $same++ if (value($f, 'llm_requests_total', 'llm_requests_total',
                      endpoint => 'chat', code => 200) // 0) == 3
            && (value($f, 'llm_requests_total', 'llm_requests_total',
                      endpoint => 'tokenize', code => 400) // 0) == 1
            && (value($f, 'llm_requests_total', 'llm_requests_total',
                      endpoint => 'tokenize', code => 200) // 0) == 1;
}
is($same, 8, 'eight scrapes parse and agree on the requests by endpoint and code');

# which workers answered: the agreement above shows the zone at work when a
# scrape after the work came from a worker that did not serve all of it
SKIP: {
    open(my $log, '<', $srv->root . '/logs/bypid.log') or skip('no access log', 1);
    my (%work, %late);
    while (<$log>) {
        my ($pid, undef, $uri) = split;
        if ($uri eq '/metrics') {
            $late{$pid} = 1 if %work;
        } else {
            $work{$pid} = 1;
            %late = ();
        }
    }
    my @cross = grep { my $p = $_; grep { $_ ne $p } keys %work } keys %late;
    skip('one worker took all the work and the scrapes this time', 1) unless @cross;
    pass('a worker counted requests another worker served (pid ' . $cross[0] . ')');
}

$fam = parse_exposition($last);
cmp_ok(value($fam, 'llm_prompt_tokens_total', 'llm_prompt_tokens_total', model => 'tiny'),
       '>', 0, 'prompt tokens counted');
cmp_ok(value($fam, 'llm_steps_total', 'llm_steps_total', model => 'tiny'), '>', 0,
       'steps counted');
cmp_ok(value($fam, 'llm_step_duration_seconds', 'llm_step_duration_seconds_count',
             model => 'tiny'), '>', 0, 'step durations observed');
is(value($fam, 'llm_inter_token_latency_seconds', 'llm_inter_token_latency_seconds_count',
         model => 'tiny'), $gen - 3, 'one inter-token latency per token after the first');
is(value($fam, 'llm_sequences_running', 'llm_sequences_running', model => 'tiny'), 0,
   'no sequence runs once the requests are done');
for my $f (qw(llm_kv_blocks_used llm_kv_blocks_free llm_sequences_waiting
              llm_prompt_tokens_cached_total llm_spec_draft_tokens_total
              llm_spec_accepted_tokens_total llm_spec_draft_model_tokens_total
              llm_spec_draft_model_accepted_tokens_total llm_sequence_steps_total
              llm_kv_blocks_pinned llm_kv_blocks_evicted_total llm_preemptions_total)) {
    ok(defined value($fam, $f, $f, model => 'tiny'), "$f is there");
}

my ($pst, $phdr) = req('POST', '/metrics', '{}');
is($pst, 405, 'POST /metrics: 405');
is($phdr->{allow}, 'GET, HEAD', 'Allow: GET, HEAD');

# the parser itself refuses what the format forbids
ok(!eval { parse_exposition("# TYPE a_total counter\na_total{x=\"1\"} 1\n# TYPE a_total counter\n") },
   'parser: a second TYPE is refused');
ok(!eval { parse_exposition("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n") },
   'parser: buckets that are not cumulative are refused');
ok(!eval { parse_exposition("# TYPE g gauge\ng{x=\"a\nb\"} 1\n") },
   'parser: a raw newline in a label is refused');

$srv->stop;
done_testing();
