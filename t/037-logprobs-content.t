# Chat logprobs describe message.content (issue 21, agent-client
# compatibility item 12): the tokens behind reasoning_content (and tool
# calls) are not listed in logprobs.content, streamed or not.  The shipped
# model thinks in <think> before it answers, so both parts are there.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client ();

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model tiny $TEST_NGINX_MODELS/ngxllm-tiny ctx=1024;
                    llm_thread_pool llm;',
    config => 'location = /v1/chat/completions { llm_api chat; }',
);
my $port = $srv->port;
my $J = JSON::PP->new->canonical;
my $ask = { messages => [{ role => 'user', content => 'Hello there!' }], temperature => 0,
            logprobs => JSON::PP::true, max_tokens => 120 };

my ($st, undef, $body) = Test::LLM::Client->post($port, '/v1/chat/completions',
                                                 $J->encode($ask))->finish(120);
is($st, 200, 'non-streamed: 200');
my $r = eval { $J->decode($body) } // {};
my $msg = $r->{choices}[0]{message} // {};
my $tokens = join '', map { $_->{token} } @{ $r->{choices}[0]{logprobs}{content} // [] };
ok(length($msg->{reasoning_content} // '') > 0 && length($msg->{content} // '') > 0,
   'the answer has reasoning and content');
like($tokens, qr/\Q$msg->{content}\E$/, 'the logprob tokens spell the content');
cmp_ok(length($tokens), '<', length($msg->{content}) + 16,
       'and little more: the reasoning tokens are not listed');

my ($st2, undef, $sse) = Test::LLM::Client->post($port, '/v1/chat/completions',
    $J->encode({ %$ask, stream => JSON::PP::true }))->finish(120);
is($st2, 200, 'streamed: 200');
my ($content, $reasoning, $stokens) = ('', '', '');
for my $ev (split /\n\n/, $sse) {
    next unless $ev =~ /^data: (\{.*\})$/s;
    my $c = eval { $J->decode($1) } or next;
    my $ch = $c->{choices}[0] or next;
    $content .= $ch->{delta}{content} // '';
    $reasoning .= $ch->{delta}{reasoning_content} // '';
    $stokens .= join '', map { $_->{token} } @{ ($ch->{logprobs} // {})->{content} // [] };
}
is($content, $msg->{content}, 'the stream has the same content');
ok(length $reasoning, 'and reasoning');
like($stokens, qr/\Q$content\E$/, 'streamed logprob tokens spell the content');
cmp_ok(length($stokens), '<', length($content) + 16, 'without the reasoning tokens');

$srv->stop;
done_testing();
