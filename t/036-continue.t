# Assistant prefill (issue 21, agent-client compatibility item 6): a final
# partial assistant turn is continued, not closed (no end of turn, no new
# generation prompt), as Anthropic does and as vLLM's continue_final_message
# does for OpenAI chat.  The prompt sizes tell the two renderings apart: the
# continued prompt is the closed one without its end-of-turn and new
# generation prompt, so it is shorter, and every endpoint renders it alike.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client ();

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
                    llm_thread_pool llm;',
    config => 'location = /v1/chat/completions { llm_api chat; }
               location /v1/messages { llm_api messages; }',
);
my $port = $srv->port;
my $J = JSON::PP->new->canonical;

sub post {
    my ($uri, $body) = @_;
    my ($st, undef, $b) = Test::LLM::Client->post($port, $uri, $J->encode($body),
        headers => "anthropic-version: 2023-06-01\r\n")->finish(60);
    return ($st, eval { $J->decode($b) } // $b);
}

my @msgs = ({ role => 'user', content => 'Name a colour.' },
            { role => 'assistant', content => 'The colour I pick is' });

my ($st, $closed) = post('/v1/chat/completions',
    { messages => \@msgs, max_tokens => 3, temperature => 0 });
is($st, 200, 'chat without continue_final_message: 200');
my ($st2, $cont) = post('/v1/chat/completions',
    { messages => \@msgs, max_tokens => 3, temperature => 0, continue_final_message => JSON::PP::true,
      add_generation_prompt => JSON::PP::false });
is($st2, 200, 'chat with continue_final_message: 200');
my ($a, $b) = ($cont->{usage}{prompt_tokens}, $closed->{usage}{prompt_tokens});
cmp_ok($a, '<', $b, "the continued prompt ($a tokens) lacks the closed turn's end and new prompt ($b)");
unlike($cont->{choices}[0]{message}{content} // '', qr/^The colour I pick is/, 'the answer does not repeat the prefill');

my ($st3, $msg) = post('/v1/messages',
    { model => 'tiny', max_tokens => 3, temperature => 0, messages => \@msgs });
is($st3, 200, 'messages with a final assistant turn: 200');
is($msg->{usage}{input_tokens} + $msg->{usage}{cache_read_input_tokens}, $a,
   'Anthropic prefill renders the continued prompt');
my ($st4, $count) = post('/v1/messages/count_tokens', { model => 'tiny', messages => \@msgs });
is($st4, 200, 'count_tokens: 200');
is($count->{input_tokens}, $a, 'count_tokens counts the continued prompt');

my ($st6, $err) = post('/v1/chat/completions',
    { messages => [$msgs[0]], continue_final_message => JSON::PP::true });
is($st6, 400, 'continue_final_message after a user message: 400');
is($err->{error}{param}, 'continue_final_message', 'naming the parameter');
my ($st7, $err2) = post('/v1/chat/completions',
    { messages => \@msgs, continue_final_message => JSON::PP::true, add_generation_prompt => JSON::PP::true });
is($st7, 400, 'with add_generation_prompt true: 400');

# streamed prefill: the stream holds only the continuation
my ($st8, undef, $sse) = Test::LLM::Client->post($port, '/v1/messages',
    $J->encode({ model => 'tiny', max_tokens => 3, stream => JSON::PP::true, messages => \@msgs }),
    headers => "anthropic-version: 2023-06-01\r\n")->finish(60);
is($st8, 200, 'streamed prefill: 200');
like($sse, qr/event: message_stop/, 'the stream ends');
unlike($sse, qr/The colour I pick is/, 'and does not repeat the prefill');

my ($lines) = $srv->error_log_lines(0);
ok(!grep({ /\[(?:alert|crit|emerg)\]/ } @$lines), 'no [alert], [crit] or [emerg]');
$srv->stop;
done_testing();
