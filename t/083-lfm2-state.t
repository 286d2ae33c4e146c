# Recurrent models served end to end: t/fixtures/models/lfm2_f32 (the
# random-weight Lfm2ForCausalLM: short-convolution layers) and qwen3next_f32
# (Qwen3NextForCausalLM: Gated DeltaNet layers), which t/unit/test_engine.c
# holds to transformers, each with a byte tokenizer and a tiny template.  Their
# recurrent state makes the prefix cache reuse a prompt head only through a
# snapshot of that state.  A conversation's second turn restores the state its
# first turn left (at least the first turn's whole prompt), reports it as
# cached tokens, and answers with the same tokens as a model that never saw
# the first turn (cache hit = cache miss).  A new conversation with the same
# system prompt restores the state snapshotted after it; a prompt that shares
# KV blocks with an earlier one but no snapshotted prefix computes everything.
# /health and /metrics count the snapshots held, made and restored.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client qw(wait_until);

my $json = JSON::PP->new->canonical;
my $port;

sub post {
    my ($req) = @_;
    my $c = Test::LLM::Client->post($port, '/v1/chat/completions', $json->encode($req));
    my ($status, undef, $body) = $c->finish(60);
    my $r = eval { JSON::PP::decode_json($body) } // {};
    is($status, 200, "$req->{model}: 200") or diag($body);
    return $r;
}

sub served {
    my ($fixture) = @_;
    my $srv = start_nginx(
        main_config => 'thread_pool llm threads=1;',
        http_config => <<"EOC",
llm_model warm \$TEST_NGINX_FIXTURES/models/$fixture parallel=2 ctx=512;
llm_model cold \$TEST_NGINX_FIXTURES/models/$fixture parallel=2 ctx=512;
llm_model fresh \$TEST_NGINX_FIXTURES/models/$fixture parallel=2 ctx=512;
llm_thread_pool llm;
EOC
        config => 'location = /v1/chat/completions { llm_api chat; }
                   location = /health { llm_api health; }
                   location = /metrics { llm_api metrics; }',
    );
    $port = $srv->port;
    note("model $fixture");
    # ASCII letters and spaces only, so the answer reads back as the same tokens in the next turn
    my %bias = map { $_ => -100 } grep { !(($_ >= 97 && $_ <= 122) || $_ == 32) } 0 .. 255;
    my %gen = (max_tokens => 12, temperature => 0, logit_bias => \%bias);
    my $system = { role => 'system', content => 'You are a terse assistant that answers in one line. ' x 3 };
    my $ask = { role => 'user', content => 'Name a colour.' };

    my $first = post({ %gen, model => 'warm', messages => [$system, $ask] });
    my $p1 = $first->{usage}{prompt_tokens} // 0;
    my $answer = $first->{choices}[0]{message}{content} // '';
    ok($p1 > 100, "first turn: $p1 prompt tokens");
    is($first->{usage}{prompt_tokens_details}{cached_tokens}, 0, 'nothing cached yet');

    my @turn2 = ($system, $ask, { role => 'assistant', content => $answer }, { role => 'user', content => 'Another.' });
    my $hit = post({ %gen, model => 'warm', messages => \@turn2 });
    my $miss = post({ %gen, model => 'cold', messages => \@turn2 });
    my $cached = $hit->{usage}{prompt_tokens_details}{cached_tokens} // 0;
    cmp_ok($cached, '>=', $p1, "the second turn restores a snapshot of the first ($cached of "
           . ($hit->{usage}{prompt_tokens} // 0) . " tokens cached)");
    cmp_ok($cached, '<', $hit->{usage}{prompt_tokens} // 0, 'and computes the rest');
    is($miss->{usage}{prompt_tokens_details}{cached_tokens}, 0, 'the cold model computes it all');
    is($hit->{choices}[0]{message}{content}, $miss->{choices}[0]{message}{content},
       'cache hit output equals cache miss output')
        or diag("hit: $hit->{choices}[0]{message}{content}\nmiss: $miss->{choices}[0]{message}{content}");
    is($hit->{usage}{completion_tokens}, 12, 'all 12 tokens');

    # a new conversation with the same system prompt: the state after the system prompt (the
    # template renders it as "system: ...\n", one token per byte) was snapshotted
    my @fruit = ($system, { role => 'user', content => 'Name a fruit.' });
    my $other = post({ %gen, model => 'warm', messages => \@fruit });
    my $fresh = post({ %gen, model => 'fresh', messages => \@fruit });
    is($other->{usage}{prompt_tokens_details}{cached_tokens}, length("system: $system->{content}\n"),
       'a new question after the same system prompt skips the system prompt');
    is($fresh->{usage}{prompt_tokens_details}{cached_tokens}, 0, 'a fresh model computes it all');
    is($other->{choices}[0]{message}{content}, $fresh->{choices}[0]{message}{content},
       'with the same output');

    # without a system prompt: the blocks of "user: Name a " are shared, but no snapshot ends in
    # the shared head, so nothing can be skipped
    post({ %gen, model => 'warm', messages => [$ask] });
    my $none = post({ %gen, model => 'warm', messages => [{ role => 'user', content => 'Name a fruit.' }] });
    is($none->{usage}{prompt_tokens_details}{cached_tokens}, 0,
       'shared blocks without a snapshot of their prefix are recomputed');

    # the warm model restored two snapshots (the second turn, the new question after the
    # system prompt) and made more; the cold one restored none
    my $h = Test::LLM::Client::get_json($port, '/health') // {};
    my %m = map { $_->{id} => $_ } @{ $h->{models} // [] };
    my $ss = $m{warm}{state_snapshots} // {};
    is($ss->{restored}, 2, "$fixture /health: 2 state snapshots restored");
    cmp_ok($ss->{made} // 0, '>=', 3, "$fixture /health: snapshots made ($ss->{made})");
    ok(($ss->{capacity} // 0) == 8 && ($ss->{held} // 99) <= 8 && ($ss->{bytes} // 0) > 0,
       "$fixture /health: 8 entries (4 per slot), held $ss->{held}, $ss->{bytes} bytes");
    is($m{cold}{state_snapshots}{restored}, 0, "$fixture /health: the cold model restored none");
    my $restored;
    ok(wait_until(sub {
        my $c = Test::LLM::Client->request($port, 'GET', '/metrics');
        my (undef, undef, $text) = $c->finish(10);
        ($restored) = ($text // '') =~ /^llm_state_snapshots_restored_total\{model="warm"\} (\d+)$/m;
        return defined $restored && $restored == 2;
    }, 10), "$fixture /metrics: llm_state_snapshots_restored_total 2") or diag($restored // 'absent');
    $srv->stop;
}

for my $fixture (qw(lfm2_f32 qwen3next_f32)) { served($fixture) }
done_testing();
