# The shared prefix cache through nginx: two different conversations that
# share a system prompt, the second served partly from KV blocks the first
# computed, give token for token the output of the same request on a model
# whose cache is cold (a second alias of the same weights, with its own
# blocks); cached_tokens and Anthropic's cache_read_input_tokens say exactly
# how many prompt tokens were reused; /health shows the blocks.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client qw(get_json);

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => <<'EOC',
llm_model warm $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 ctx=1024;
llm_model cold $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 ctx=1024;
llm_thread_pool llm;
EOC
    config => 'location = /v1/chat/completions { llm_api chat; }
               location = /v1/messages { llm_api messages; }
               location = /health { llm_api health; }',
);
my $port = $srv->port;
my $json = JSON::PP->new->canonical;

my $system = join ' ', ('You are a careful assistant for a shop that sells tools and parts.') x 6;

sub chat {
    my ($model, $user) = @_;
    my $c = Test::LLM::Client->post($port, '/v1/chat/completions', $json->encode({
        model => $model, max_tokens => 12, temperature => 0, logit_bias => { 2 => -100 },
        messages => [{ role => 'system', content => $system }, { role => 'user', content => $user }],
    }));
    my ($status, undef, $body) = $c->finish(60);
    my $r = eval { JSON::PP::decode_json($body) } // {};
    is($status, 200, "$model: $user: 200") or diag($body);
    return {
        text   => $r->{choices}[0]{message}{content},
        prompt => $r->{usage}{prompt_tokens},
        cached => $r->{usage}{prompt_tokens_details}{cached_tokens},
        finish => $r->{choices}[0]{finish_reason},
    };
}

sub health {
    my ($id) = @_;
    my $h = get_json($port, '/health') // { models => [] };
    my ($m) = grep { $_->{id} eq $id } @{ $h->{models} };
    return $m // {};
}

my $a = chat('warm', 'Which hammer should I buy?');
is($a->{cached}, 0, 'the first conversation finds nothing cached');
is($a->{finish}, 'length', 'it generated all 12 tokens');

my $b_hit = chat('warm', 'Do you sell brass hinges?');
my $b_miss = chat('cold', 'Do you sell brass hinges?');
is($b_miss->{cached}, 0, 'the cold model computes the whole prompt');
cmp_ok($b_hit->{cached}, '>=', 32, "a different conversation reuses the shared system prompt ($b_hit->{cached} of $b_hit->{prompt} tokens)");
cmp_ok($b_hit->{cached}, '<', $b_hit->{prompt} - 4, 'but not its own question');
is($b_hit->{prompt}, $b_miss->{prompt}, 'same prompt on both models');
is($b_hit->{text}, $b_miss->{text}, 'cache hit output equals cache miss output token for token');
is($b_hit->{finish}, 'length', 'all 12 tokens');

# the same conversation again: everything but the last prompt token is cached
my $b_again = chat('warm', 'Do you sell brass hinges?');
is($b_again->{cached}, $b_again->{prompt} - 1, 'a repeated prompt reuses all but its last token');
is($b_again->{text}, $b_miss->{text}, 'and still gives the same tokens');

# Anthropic's usage fields count the same reuse
{
    my $c = Test::LLM::Client->post($port, '/v1/messages', $json->encode({
        model => 'warm', max_tokens => 4, system => $system,
        messages => [{ role => 'user', content => 'Any saws on sale?' }],
    }), headers => "anthropic-version: 2023-06-01\r\n");
    my ($status, undef, $body) = $c->finish(60);
    my $r = eval { JSON::PP::decode_json($body) } // {};
    is($status, 200, 'messages: 200') or diag($body);
    cmp_ok($r->{usage}{cache_read_input_tokens} // 0, '>=', 32,
           'messages: cache_read_input_tokens counts the reused system prompt');
    is($r->{usage}{cache_creation_input_tokens}, 0, 'messages: cache_creation_input_tokens is 0');
}

my $h = health('warm');
is($h->{kv_block_tokens}, 16, '/health: blocks of 16 positions');
is($h->{kv_blocks_used}, 0, '/health: no block used while idle');
cmp_ok($h->{kv_blocks_cached}, '>', 0, "/health: $h->{kv_blocks_cached} blocks cached");
is($h->{kv_blocks_cached} + $h->{kv_blocks_free}, $h->{kv_blocks}, '/health: cached + free = all');
cmp_ok($h->{prefix_hit_ratio}, '>', 0, "/health: hit ratio $h->{prefix_hit_ratio}");
is(health('cold')->{cached_tokens}, 0, '/health: the cold model reused nothing');

$srv->stop;
done_testing();
