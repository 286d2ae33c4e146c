# DeepSeek-V3's multi-head latent attention served end to end:
# t/fixtures/models/deepseekv3_bf16 (the random-weight DeepseekV3ForCausalLM that
# t/unit/test_engine.c holds to transformers: query and KV LoRA, decoupled rope
# dims, YaRN, grouped sigmoid routing with a shared expert, a dense first layer)
# with a byte tokenizer and a tiny template.  Its KV blocks hold one latent row
# per position and layer (kv_lora_rank 16 + qk_rope_head_dim 8 values), not
# keys and values per head: /health's kv_cache_bytes says so for f32 and f16.
# The prefix cache reuses latent blocks: a second turn reads its first turn's
# blocks as cached tokens and answers as a model that computed everything.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client;

my $json = JSON::PP->new->canonical;

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => <<'EOC',
llm_model warm $TEST_NGINX_FIXTURES/models/deepseekv3_bf16 parallel=2 ctx=512;
llm_model cold $TEST_NGINX_FIXTURES/models/deepseekv3_bf16 parallel=2 ctx=512;
llm_model half $TEST_NGINX_FIXTURES/models/deepseekv3_bf16 parallel=2 ctx=512 kv=f16;
llm_thread_pool llm;
EOC
    config => 'location = /v1/chat/completions { llm_api chat; }
               location = /health { llm_api health; }',
);
my $port = $srv->port;

sub post {
    my ($req) = @_;
    my $c = Test::LLM::Client->post($port, '/v1/chat/completions', $json->encode($req));
    my ($status, undef, $body) = $c->finish(60);
    my $r = eval { JSON::PP::decode_json($body) } // {};
    is($status, 200, "$req->{model}: 200") or diag($body);
    return $r;
}

# 2 slots x 512 positions = 64 blocks of 16 positions; a block holds 3 layers x 16 positions x
# one row of 16 + 8 values: 4608 bytes in f32 (keys and values of 4 heads of 24 + 16 would be
# 3 x 16 x 4 x 40 x 4 = 30720)
my $h = Test::LLM::Client::get_json($port, '/health') // {};
my %m = map { $_->{id} => $_ } @{ $h->{models} // [] };
is($m{warm}{kv_cache_bytes}, 64 * 4608, 'f32: one latent row per position and layer (294912 bytes)');
is($m{half}{kv_cache_bytes}, 64 * 2304, 'f16: half of it');

# ASCII letters and spaces only, so the answer reads back as the same tokens in the next turn
my %bias = map { $_ => -100 } grep { !(($_ >= 97 && $_ <= 122) || $_ == 32) } 0 .. 255;
my %gen = (max_tokens => 12, temperature => 0, logit_bias => \%bias);
my $system = { role => 'system', content => 'You are a terse assistant that answers in one line. ' x 3 };
my $ask = { role => 'user', content => 'Name a colour.' };

my $first = post({ %gen, model => 'warm', messages => [$system, $ask] });
my $p1 = $first->{usage}{prompt_tokens} // 0;
my $answer = $first->{choices}[0]{message}{content} // '';
ok($p1 > 100, "first turn: $p1 prompt tokens");
is($first->{usage}{completion_tokens}, 12, 'first turn: 12 tokens');

my @turn2 = ($system, $ask, { role => 'assistant', content => $answer }, { role => 'user', content => 'Another.' });
my $hit = post({ %gen, model => 'warm', messages => \@turn2 });
my $miss = post({ %gen, model => 'cold', messages => \@turn2 });
my $cached = $hit->{usage}{prompt_tokens_details}{cached_tokens} // 0;
cmp_ok($cached, '>=', int($p1 / 16) * 16, "the second turn reads the first turn's latent blocks ($cached of "
       . ($hit->{usage}{prompt_tokens} // 0) . " tokens cached)");
is($miss->{usage}{prompt_tokens_details}{cached_tokens}, 0, 'the cold model computes it all');
is($hit->{choices}[0]{message}{content}, $miss->{choices}[0]{message}{content},
   'cache hit output equals cache miss output')
    or diag("hit: $hit->{choices}[0]{message}{content}\nmiss: $miss->{choices}[0]{message}{content}");
is($hit->{usage}{completion_tokens}, 12, 'all 12 tokens');

# the f16 latent cache answers the first turn as the f32 one does (the rounding of 24 values a row
# stays far below these logits' top-1 margins)
my $f16 = post({ %gen, model => 'half', messages => [$system, $ask] });
is($f16->{choices}[0]{message}{content}, $answer, 'kv=f16: the same answer as f32');

$srv->stop;
done_testing();
