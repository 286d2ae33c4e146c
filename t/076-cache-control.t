# Anthropic cache_control breakpoints: usage as Anthropic defines it
# (cache_read_input_tokens read from the prefix cache, cache_creation_input_tokens
# written to it up to the last breakpoint, input_tokens the rest; the three
# add up to the prompt), a later turn reads what an earlier one wrote, bad
# cache_control values are refused with the protocol's error, and OpenAI's
# prompt_tokens_details.cached_tokens is exact.  Retention (TTL pinning) is
# proven in t/unit/test_kv.c and t/unit/test_sched.c.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::Nginx::Lite::Server ();
use Test::LLM::Client ();

my $json = JSON::PP->new->canonical;
my $rules = join ' ', ('Always answer in one short sentence about the tools we sell.') x 4;
my $hdr = "anthropic-version: 2023-06-01\r\n";

sub post {
    my ($port, $uri, $body) = @_;
    my $c = Test::LLM::Client->post($port, $uri, $json->encode($body), headers => $hdr);
    my ($status, undef, $resp) = $c->finish(60);
    return ($status, eval { JSON::PP::decode_json($resp) } // {});
}

sub body {
    my (%o) = @_;
    my $sys = { type => 'text', text => $rules };
    $sys->{cache_control} = $o{system_cc} if $o{system_cc};
    my @msgs = ({ role => 'user', content => 'Do you sell rivets?' });
    if ($o{turn2}) {
        push @msgs, { role => 'assistant', content => 'Yes, in steel and copper.' },
                    { role => 'user', content => [{ type => 'text', text => 'And hammers?',
                      ($o{last_cc} ? (cache_control => $o{last_cc}) : ()) }] };
    }
    return { model => 'tiny', max_tokens => 2, system => [$sys], messages => \@msgs };
}

my $srv = start_nginx(
    root => 't/servroot-076-cache-control',
    port => Test::Nginx::Lite::Server::pick_free_port(),
    main_config => 'thread_pool llm threads=1;',
    http_config => "llm_model tiny \$TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=1 ctx=1024;\n"
                   . "llm_thread_pool llm;",
    config => "location /v1/messages { llm_api messages; }\n"
              . "location /v1/chat/completions { llm_api chat; }",
);
my $port = $srv->port;
my $eph = { type => 'ephemeral' };

my (undef, $ct) = post($port, '/v1/messages/count_tokens', body(system_cc => $eph));
my $total = $ct->{input_tokens};
ok($total && $total > 40, "count_tokens: $total");

my ($st, $r) = post($port, '/v1/messages', body(system_cc => $eph));
is($st, 200, 'a breakpoint on the system prompt: 200');
my $u = $r->{usage};
is($u->{cache_read_input_tokens}, 0, 'the first request reads nothing');
ok($u->{cache_creation_input_tokens} > 0 && $u->{cache_creation_input_tokens} < $total,
   "it writes the prefix up to the breakpoint ($u->{cache_creation_input_tokens} of $total)");
is($u->{input_tokens} + $u->{cache_creation_input_tokens} + $u->{cache_read_input_tokens},
   $total, 'input + creation + read = the prompt');
my $written = $u->{cache_creation_input_tokens};

($st, $r) = post($port, '/v1/messages', body(system_cc => $eph));
$u = $r->{usage};
is($u->{cache_read_input_tokens}, $total - 1, 'the same request again reads all but the last token');
is($u->{cache_creation_input_tokens}, 0, 'and writes nothing at the breakpoint');
is($u->{input_tokens}, 1, 'input_tokens: the token computed again');

my $b2 = body(system_cc => $eph, turn2 => 1, last_cc => { type => 'ephemeral', ttl => '1h' });
(undef, $ct) = post($port, '/v1/messages/count_tokens', $b2);
my $total2 = $ct->{input_tokens};
($st, $r) = post($port, '/v1/messages', $b2);
is($st, 200, 'the next turn with a 1h breakpoint on its last message: 200');
$u = $r->{usage};
cmp_ok($u->{cache_read_input_tokens}, '>=', $written,
       "it reads at least what the first turn wrote ($u->{cache_read_input_tokens})");
ok($u->{cache_creation_input_tokens} > 0, "and writes its new turn ($u->{cache_creation_input_tokens})");
is($u->{input_tokens} + $u->{cache_creation_input_tokens} + $u->{cache_read_input_tokens},
   $total2, "the three add up to its prompt ($total2)");
cmp_ok($u->{input_tokens}, '<', 16, "only the generation prompt is plain input ($u->{input_tokens})");

($st, $r) = post($port, '/v1/messages', body(system_cc => { type => 'ephemeral', ttl => '10m' }));
is($st, 400, 'ttl 10m: 400');
is($r->{type}, 'error', 'an Anthropic error');
like($r->{error}{message}, qr/system\[0\]\.cache_control\.ttl.*'5m' or '1h'/, 'naming the field and the values');
($st, $r) = post($port, '/v1/messages', body(system_cc => { type => 'persistent' }));
is($st, 400, 'type persistent: 400');
like($r->{error}{message}, qr/cache_control\.type/, 'naming the type');

# OpenAI: cached_tokens exact
my $oa = { model => 'tiny', max_tokens => 2, messages => [
    { role => 'system', content => "You are a parts clerk. $rules" },
    { role => 'user', content => 'Do you sell rivets?' } ] };
($st, $r) = post($port, '/v1/chat/completions', $oa);
cmp_ok($r->{usage}{prompt_tokens_details}{cached_tokens}, '<', 16,
       'OpenAI: a new system prompt, at most the template head cached');
($st, $r) = post($port, '/v1/chat/completions', $oa);
is($r->{usage}{prompt_tokens_details}{cached_tokens}, $r->{usage}{prompt_tokens} - 1,
   'the same prompt again: all but the last token cached');

$srv->stop;
done_testing();
