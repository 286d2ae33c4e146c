# Prompt normalisation for agents: Claude Code's per-request first system
# line (x-anthropic-billing-header: ...; cch=...;) is removed before the
# template renders, so two turns that differ only in it have the same prompt
# and the second reuses all of the first's KV blocks; llm_prompt_strip off
# keeps the line (the prompts then differ from its position on), and a
# configured list removes its own prefixes.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::Nginx::Lite::Server ();
use Test::LLM::Client ();

my $json = JSON::PP->new->canonical;
my $rules = join ' ', ('Always answer in one short sentence about the tools we sell.') x 4;

sub messages {
    my ($port, $uri, $header) = @_;
    my $c = Test::LLM::Client->post($port, $uri, $json->encode({
        model => 'tiny', max_tokens => 2,
        system => [($header ne '' ? { type => 'text', text => $header } : ()),
                   { type => 'text', text => $rules }],
        messages => [{ role => 'user', content => 'Do you sell rivets?' }],
    }), headers => "anthropic-version: 2023-06-01\r\n");
    my ($status, undef, $body) = $c->finish(60);
    is($status, 200, "$uri: 200") or diag($body);
    return eval { JSON::PP::decode_json($body) } // {};
}

my $n_servers = 0;

sub server {
    my ($strip) = @_;
    $n_servers++;
    return start_nginx(
        root => "t/servroot-075-prompt-strip-$n_servers",
        port => Test::Nginx::Lite::Server::pick_free_port(),
        main_config => 'thread_pool llm threads=1;',
        http_config => "llm_model tiny \$TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=1 ctx=1024;\n"
                       . "llm_thread_pool llm;\n$strip",
        config => 'location /v1/messages { llm_api messages; }',
    );
}

my $h1 = 'x-anthropic-billing-header: cc_version=2.1.177.01c; cc_entrypoint=cli; cch=36ee5;';
my $h2 = 'x-anthropic-billing-header: cc_version=2.1.178.9f2; cc_entrypoint=cli; cch=0a1b2c3d4e;';

{
    my $srv = server('');
    my $port = $srv->port;
    my $c1 = messages($port, '/v1/messages/count_tokens', $h1)->{input_tokens};
    my $c2 = messages($port, '/v1/messages/count_tokens', $h2)->{input_tokens};
    my $c0 = messages($port, '/v1/messages/count_tokens', '')->{input_tokens};
    ok($c1 && $c1 == $c2, "default: billing lines of different lengths count the same ($c1, $c2)");
    is($c1, $c0, 'as if the line were not there');

    my $t1 = messages($port, '/v1/messages', $h1)->{usage};
    my $t2 = messages($port, '/v1/messages', $h2)->{usage};
    is($t1->{cache_read_input_tokens}, 0, 'the first turn reads nothing from the cache');
    is($t2->{cache_read_input_tokens}, $t1->{input_tokens} - 1,
       'the next turn with a new billing nonce reuses all but the last prompt token');
    is($t2->{input_tokens}, 1, 'input_tokens counts only the token computed again');
    $srv->stop;
}

{
    my $srv = server('llm_prompt_strip off;');
    my $port = $srv->port;
    my $c1 = messages($port, '/v1/messages/count_tokens', $h1)->{input_tokens};
    my $c2 = messages($port, '/v1/messages/count_tokens', $h2)->{input_tokens};
    ok($c1 != $c2, "off: the line stays in the prompt ($c1 vs $c2 tokens)");
    my $t1 = messages($port, '/v1/messages', $h1)->{usage};
    my $t2 = messages($port, '/v1/messages', $h2)->{usage};
    cmp_ok($t2->{cache_read_input_tokens}, '<', 100,
           "off: the prompts part at the nonce ($t2->{cache_read_input_tokens} cached)");
    $srv->stop;
}

{
    my $srv = server('llm_prompt_strip "Always answer";');
    my $port = $srv->port;
    my $with = messages($port, '/v1/messages/count_tokens', $h1)->{input_tokens};
    my $without = messages($port, '/v1/messages/count_tokens', '')->{input_tokens};
    ok($with > $without, 'a configured list replaces the default: the billing line stays');
    $srv->stop;
}

done_testing();
