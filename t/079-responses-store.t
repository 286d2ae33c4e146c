# Kept responses (llm_responses_store) read by every worker: a chained
# conversation over previous_response_id on two worker processes, GET and
# DELETE /v1/responses/{id}, store: false, unknown ids as 404s in OpenAI's
# shape, and after nginx -s reload new worker processes (none of which made
# the responses) continue the chain from the zone.  What proves a chained
# request saw the kept conversation: its prompt has exactly as many tokens
# as the same conversation sent whole in `input`.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client qw(wait_until);

my $srv = start_nginx(
    workers     => 2,
    main_config => 'thread_pool llm threads=1;',
    http_config => <<'EOC',
llm_model m $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 ctx=1024;
llm_thread_pool llm;
llm_responses_store zone=responses:1m ttl=10m;
log_format pids '$pid $status $request_method $request_uri';
EOC
    config => 'access_log logs/pids.log pids;
               location /v1/responses { llm_api responses; }',
);
my $port = $srv->port;
my $json = JSON::PP->new->canonical->utf8;

sub call {
    my ($method, $uri, $body) = @_;
    my $c = Test::LLM::Client->request($port, $method, $uri,
                                       defined $body ? $json->encode($body) : undef);
    my ($status, undef, $b) = $c->finish(60);
    return ($status, eval { JSON::PP::decode_json($b) } // { raw => $b });
}

sub create {
    my ($what, %body) = @_;
    my ($status, $r) = call('POST', '/v1/responses',
                            { model => 'm', max_output_tokens => 8, temperature => 0,
                              reasoning => { effort => 'none' }, %body });
    is($status, 200, "$what: 200") or diag($json->encode($r));
    return $r;
}

sub workers { my $m = $srv->pid; return grep { /\d/ } map { s/\s+//gr } `ps -o pid= --ppid $m` }
my @first = workers();
is(scalar @first, 2, 'two workers run');

# ---- a chain of three turns ----
my $r1 = create('turn 1', input => 'My name is Ada.');
like($r1->{id}, qr/^resp_\w{24}$/, 'turn 1: a resp_ id');
ok($r1->{store}, 'turn 1: store true (the default)');
is($r1->{previous_response_id}, undef, 'turn 1: no previous_response_id');

my $r2 = create('turn 2', input => 'What is my name?', previous_response_id => $r1->{id});
is($r2->{previous_response_id}, $r1->{id}, 'turn 2: repeats previous_response_id');
my $whole2 = create('turn 2 sent whole',
    input => [{ role => 'user', content => 'My name is Ada.' }, @{ $r1->{output} },
              { role => 'user', content => 'What is my name?' }], store => JSON::PP::false);
is($r2->{usage}{input_tokens}, $whole2->{usage}{input_tokens},
   "turn 2: its prompt is turn 1's conversation and the new input ($r2->{usage}{input_tokens} tokens)");
ok(!$whole2->{store}, 'store false: the response says so');
cmp_ok($r2->{usage}{input_tokens}, '>', $r1->{usage}{input_tokens} + $r1->{usage}{output_tokens},
       'turn 2: longer than turn 1 with its output');

my $r3 = create('turn 3', input => [{ role => 'user', content => 'Thanks.' }],
                previous_response_id => $r2->{id}, instructions => 'Be brief.');
my $whole3 = create('turn 3 sent whole', instructions => 'Be brief.', store => JSON::PP::false,
    input => [{ role => 'user', content => 'My name is Ada.' }, @{ $r1->{output} },
              { role => 'user', content => 'What is my name?' }, @{ $r2->{output} },
              { role => 'user', content => 'Thanks.' }]);
is($r3->{usage}{input_tokens}, $whole3->{usage}{input_tokens},
   "turn 3: the whole chain (two kept turns) and the new input ($r3->{usage}{input_tokens} tokens)");

# ---- streamed turns are kept too ----
my $c = Test::LLM::Client->request($port, 'POST', '/v1/responses', $json->encode(
    { model => 'm', max_output_tokens => 8, temperature => 0, stream => JSON::PP::true,
      reasoning => { effort => 'none' }, input => 'Again.', previous_response_id => $r3->{id} }));
my ($sst, undef, $sbody) = $c->finish(60);
is($sst, 200, 'a streamed turn: 200');
my ($sid) = $sbody =~ /"type":"response\.(?:completed|incomplete)".*?"id":"(resp_\w+)"/s;
ok($sid, 'it ended (completed or incomplete) with an id');
my ($gst, $got) = call('GET', "/v1/responses/$sid");
is($gst, 200, 'GET of the streamed response: 200');
is($got->{previous_response_id}, $r3->{id}, 'it was chained to turn 3');

# ---- GET and DELETE ----
my ($st, $g) = call('GET', "/v1/responses/$r1->{id}");
is($st, 200, 'GET /v1/responses/{id}: 200');
is($json->encode($g), $json->encode($r1), 'the response object as it was answered');
($st, $g) = call('DELETE', "/v1/responses/$r1->{id}");
is($st, 200, 'DELETE: 200');
is_deeply($g, { id => $r1->{id}, object => 'response', deleted => JSON::PP::true }, 'DELETE: deleted');
($st, $g) = call('GET', "/v1/responses/$r1->{id}");
is($st, 404, 'GET after DELETE: 404');
is($g->{error}{type}, 'invalid_request_error', 'in OpenAI shape');
($st, $g) = call('DELETE', "/v1/responses/$r1->{id}");
is($st, 404, 'DELETE again: 404');
($st, $g) = call('POST', '/v1/responses', { model => 'm', input => 'x',
                                           previous_response_id => $r1->{id} });
is($st, 404, 'previous_response_id of a deleted response: 404');
is($g->{error}{code}, 'previous_response_not_found', 'code previous_response_not_found');
is($g->{error}{param}, 'previous_response_id', 'param previous_response_id');
is($g->{error}{message}, "Previous response with id '$r1->{id}' not found.", 'the message names the id');
($st, $g) = call('POST', '/v1/responses', { model => 'm', input => 'x',
                                           previous_response_id => $whole2->{id} });
is($st, 404, 'previous_response_id of a store: false response: 404');
($st, $g) = call('PUT', "/v1/responses/$r2->{id}", {});
is($st, 405, 'PUT of a response: 405');
($st, $g) = call('GET', "/v1/responses/$r2->{id}/input_items");
is($st, 404, 'input_items: 404 (not served)');

# ---- which workers answered ----
my %pids;
open(my $fh, '<', $srv->root . '/logs/pids.log') or die "pids.log: $!";
while (<$fh>) { $pids{$1}++ if /^(\d+) / }
close $fh;
note('requests per worker: ' . join(', ', map { "$_: $pids{$_}" } sort keys %pids));

# ---- reload: new workers read the chain they did not make ----
kill 'HUP', $srv->pid;
ok(wait_until(sub { my %old = map { $_ => 1 } @first; my @w = workers();
                    @w == 2 && !grep { $old{$_} } @w }, 60),
   'two new workers replace the old ones');
my $r4 = create('after reload', input => [{ role => 'user', content => 'Thanks.' }],
                previous_response_id => $r2->{id}, instructions => 'Be brief.');
is($r4->{usage}{input_tokens}, $r3->{usage}{input_tokens},
   'after reload: turn 2 continued by a new worker, the same prompt as turn 3');
($st, $g) = call('GET', "/v1/responses/$r3->{id}");
is($st, 200, 'after reload: GET of turn 3');
is($g->{id}, $r3->{id}, 'the kept turn 3');

my @bad = grep { /\[(?:alert|crit|emerg)\]|exited on signal/ } @{ ($srv->error_log_lines(0))[0] };
ok(!@bad, 'no [alert], [crit], [emerg] or crash') or diag(join '', @bad[0 .. ($#bad < 5 ? $#bad : 5)]);
$srv->stop;
done_testing();
