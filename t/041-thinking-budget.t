# Thinking budgets are enforced (issue 21, Reasoning): once a response's
# reasoning block holds its budget the engine appends the model's close
# marker (</think> for the shipped model) without sampling, and the answer
# follows.  The model is made to think on by banning </think> and its end
# of turn (logit_bias), so without a budget it never answers; with reasoning_effort low / medium
# (a quarter / half of max_tokens, docs/api.md) its reasoning is the
# unbudgeted reasoning cut short, and content follows.  Anthropic's
# budget_tokens spans every thinking block of a turn: a turn whose earlier
# thinking (sent back in a tool loop) used all but a few tokens of it gets
# a block closed after those few.  Greedy decoding throughout, so each
# budgeted run is the unbudgeted run up to the budget.
#
# Thinking blocks are signed (HMAC-SHA256 of the text with the key of
# llm_thinking_key, base64): the signature is checked against one computed
# here, streamed (signature_delta before content_block_stop) and not, and a
# block sent back verifies; a changed text or signature, or none, is a 400 in
# Anthropic's shape.  A server without llm_thinking_key signs with a random
# key that its own round trip verifies, before and after a reload.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client ();
use Digest::SHA qw(hmac_sha256_base64);
use MIME::Base64 ();

my $KEY = 'k' x 32;
sub sign { my $s = hmac_sha256_base64($_[0], $_[1] // $KEY); "$s=" }

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => "llm_model tiny $ENV{TEST_NGINX_MODELS}/ngxllm-tiny ctx=4096;\n"
                   . "llm_thread_pool llm;\n"
                   . 'llm_thinking_key $TEST_NGINX_SERVER_ROOT/html/thinking.key;',
    config => 'location = /v1/chat/completions { llm_api chat; }
               location = /v1/responses { llm_api responses; }
               location = /v1/messages { llm_api messages; }
               location = /tokenize { llm_api tokenize; }',
    files => { 'thinking.key' => $KEY },
);
my $port = $srv->port;
my $json = JSON::PP->new->canonical;

sub post {
    my ($uri, $body, $headers, $p) = @_;
    my $c = Test::LLM::Client->post($p // $port, $uri, $json->encode($body),
                                    headers => $headers // '');
    my ($status, undef, $raw) = $c->finish(120);
    return ($status, eval { JSON::PP::decode_json($raw) } // { raw => $raw });
}

# ---- OpenAI chat: reasoning_effort -> a share of max_tokens ----
# </think> and <|im_end|> in models/ngxllm-tiny's tokenizer
my %chat = (messages => [{ role => 'user', content => 'What is 2+2?' }],
            max_tokens => 40, temperature => 0,
            logit_bias => { 8187 => -100, 8185 => -100 });

my ($st, $free) = post('/v1/chat/completions', { %chat, return_token_ids => JSON::PP::true });
is($st, 200, 'chat without a budget: 200');
my $m = $free->{choices}[0]{message} // {};
my $all = $m->{reasoning_content} // '';
ok(length($all) > 0 && ($m->{content} // '') eq '',
   'without a budget the reasoning never closes: no answer')
    or diag explain $m;

# usage.completion_tokens_details.reasoning_tokens: the tokens inside the
# block, every one after <think> (8186; the open marker does not count, as
# a thinking budget counts), from the response's own token ids
my @ids = @{ $free->{choices}[0]{token_ids} // [] };
my ($open) = grep { $ids[$_] == 8186 } 0 .. $#ids;
is($free->{usage}{completion_tokens_details}{reasoning_tokens},
   @ids - (defined $open ? $open + 1 : 0),
   'reasoning_tokens: every token after the open marker (' . scalar(@ids) . ' generated)');

my %got;
for my $effort (qw(low medium)) {
    my ($s, $r) = post('/v1/chat/completions', { %chat, reasoning_effort => $effort });
    my $msg = $r->{choices}[0]{message} // {};
    my $reasoning = $msg->{reasoning_content} // '';
    $got{$effort} = $reasoning;
    is($s, 200, "reasoning_effort $effort: 200");
    ok(length($reasoning) > 0 && length($reasoning) < length($all)
       && index($all, $reasoning) == 0,
       "reasoning_effort $effort: the reasoning is the unbudgeted one cut short")
        or diag explain { budgeted => $reasoning, free => $all };
    ok(length($msg->{content} // '') > 0,
       "reasoning_effort $effort: and an answer follows")
        or diag explain $msg;
    is($r->{usage}{completion_tokens_details}{reasoning_tokens},
       { low => 10, medium => 20 }->{$effort},
       "reasoning_effort $effort: reasoning_tokens is the budget, close included");
}
ok(length($got{low}) < length($got{medium}),
   'low (10 of 40 tokens) thinks less than medium (20)');

# the Responses API: output_tokens_details.reasoning_tokens, the same count
my ($rs, $resp) = post('/v1/responses', { input => 'What is 2+2?', max_output_tokens => 40,
                                          temperature => 0, reasoning => { effort => 'low' } });
is($rs, 200, 'responses, reasoning.effort low: 200');
is($resp->{usage}{output_tokens_details}{reasoning_tokens}, 10,
   'responses: reasoning_tokens is the budget (10 of 40), close included')
    or diag explain $resp->{usage};

# ---- Responses include reasoning.encrypted_content (docs/api.md, Encrypted
# reasoning): the reasoning item's text sealed with keys derived from
# llm_thinking_key; opened here from the documented format, and sent back ----
sub seal_open {
    my ($b64) = @_;
    my $raw = MIME::Base64::decode_base64($b64 // '');
    return undef if length($raw) < 1 + 16 + 32 || ord($raw) != 1;
    my $enc = Digest::SHA::hmac_sha256('ngx_llm responses reasoning: encryption', $KEY);
    my $mac = Digest::SHA::hmac_sha256('ngx_llm responses reasoning: tag', $KEY);
    my ($head, $ct, $tag) = (substr($raw, 0, 17), substr($raw, 17, -32), substr($raw, -32));
    return undef unless Digest::SHA::hmac_sha256($head . $ct, $mac) eq $tag;
    my $ks = join '', map { Digest::SHA::hmac_sha256(substr($head, 1) . pack('N', $_), $enc) }
                      0 .. int(length($ct) / 32);
    return $ct ^ substr($ks, 0, length $ct);
}
my %sealed_req = (input => 'What is 2+2?', max_output_tokens => 40, temperature => 0,
                  reasoning => { effort => 'low' }, include => ['reasoning.encrypted_content']);
($rs, $resp) = post('/v1/responses', \%sealed_req);
my ($ritem) = grep { $_->{type} eq 'reasoning' } @{ $resp->{output} // [] };
my $rtext = $ritem ? join('', map { $_->{text} } @{ $ritem->{content} // [] }) : '';
ok($rs == 200 && length $rtext, 'responses with include: a reasoning item');
is(seal_open($ritem->{encrypted_content}), $rtext,
   'its encrypted_content opens, with the documented format and derived keys, to its text');
($rs, my $plain) = post('/v1/responses', { %sealed_req, include => [] });
my ($pitem) = grep { $_->{type} eq 'reasoning' } @{ $plain->{output} // [] };
ok($pitem && !exists $pitem->{encrypted_content}, 'without include: no encrypted_content');

# sent back before a call's output (the turn the template renders reasoning in)
sub turn {
    my ($item) = @_;
    return { input => [ { role => 'user', content => 'What is 2+2?' }, $item,
                        { type => 'function_call', call_id => 'call_1', name => 'add', arguments => '{"a":2,"b":2}' },
                        { type => 'function_call_output', call_id => 'call_1', output => '4' } ],
             tools => [ { type => 'function', name => 'add', parameters => { type => 'object' } } ],
             max_output_tokens => 1, temperature => 0 };
}
my %r_item = (type => 'reasoning', summary => []);
my ($es1, $et1) = post('/v1/responses', turn({ %r_item, content => [{ type => 'reasoning_text', text => $rtext }] }));
my ($es2, $et2) = post('/v1/responses', turn({ %r_item, encrypted_content => $ritem->{encrypted_content},
    content => [{ type => 'reasoning_text', text => 'Something else entirely, and much longer than that.' }] }));
my (undef, $et0) = post('/v1/responses', turn({ %r_item,
    content => [{ type => 'reasoning_text', text => 'Something else entirely, and much longer than that.' }] }));
is("$es1 $es2", '200 200', 'a sealed reasoning item sent back: 200');
ok($et0->{usage}{input_tokens} && $et0->{usage}{input_tokens} != $et1->{usage}{input_tokens},
   'the template renders that turn\'s reasoning (another text, another prompt length)');
ok($et1->{usage}{input_tokens} && $et2->{usage}{input_tokens} == $et1->{usage}{input_tokens},
   "the sealed text is what is rendered, not the item's changed content ($et2->{usage}{input_tokens} tokens)");
(my $bad_seal = $ritem->{encrypted_content} // '') =~ s/^(.{10})(.)/$1 . ($2 eq 'A' ? 'B' : 'A')/e;
my ($es3, $et3) = post('/v1/responses', turn({ %r_item, encrypted_content => $bad_seal }));
is($es3, 400, 'a changed encrypted_content: 400');
is($et3->{error}{code} // '', 'invalid_encrypted_content', 'coded invalid_encrypted_content');
is($et3->{error}{param} // '', 'input[1].encrypted_content', 'naming the item');

# ---- Anthropic: budget_tokens spans the turn's thinking blocks ----
my $earlier = join ' ', map { "Step $_: the weather tool answered, so check the city again." } 1 .. 70;
my ($ts, $tk) = post('/tokenize', { model => 'tiny', prompt => $earlier,
                                    add_special_tokens => JSON::PP::false });
my $spent = $tk->{count} // 0;
ok($ts == 200 && $spent >= 1024, "the turn's earlier thinking is $spent tokens");

my %msgs = (
    model => 'tiny', max_tokens => 60, temperature => 0,
    messages => [
        { role => 'user', content => 'What is the weather in Paris?' },
        { role => 'assistant', content => [
            { type => 'thinking', thinking => $earlier, signature => sign($earlier) },
            { type => 'tool_use', id => 'toolu_1', name => 'get_weather',
              input => { city => 'Paris' } } ] },
        { role => 'user', content => [
            { type => 'tool_result', tool_use_id => 'toolu_1', content => '18 C, sunny' } ] },
    ],
    tools => [{ name => 'get_weather', description => 'Weather now',
                input_schema => { type => 'object',
                                  properties => { city => { type => 'string' } } } }],
);
my $beta = "anthropic-beta: interleaved-thinking-2025-05-14\r\n";
sub blocks {
    my ($r) = @_;
    my %b;
    for (@{ $r->{content} // [] }) {
        $b{thinking} .= $_->{thinking} if $_->{type} eq 'thinking';
        $b{text} .= $_->{text} if $_->{type} eq 'text';
        $b{tool_use}++ if $_->{type} eq 'tool_use';
    }
    return \%b;
}

my ($s1, $big) = post('/v1/messages', { %msgs, thinking => { type => 'enabled',
                                        budget_tokens => $spent + 1000 } }, $beta);
my $b1 = blocks($big);
is($s1, 200, 'a budget with room left: 200');
ok(length($b1->{thinking} // '') > 0, 'it thinks')
    or diag explain $big;

my ($s2, $small) = post('/v1/messages', { %msgs, thinking => { type => 'enabled',
                                          budget_tokens => $spent + 4 } }, $beta);
my $b2 = blocks($small);
is($s2, 200, 'a budget the earlier thinking nearly used up: 200');
ok(length($b2->{thinking} // '') < length($b1->{thinking} // '')
   && index($b1->{thinking} // '', $b2->{thinking} // '') == 0,
   'its thinking block is closed after the few tokens left')
    or diag explain { small => $b2, big => $b1 };
ok(length($b2->{text} // '') > 0 || $b2->{tool_use},
   'and the answer follows') or diag explain $small;

# ---- signatures ----
my %hi = (model => 'tiny', max_tokens => 60, temperature => 0,
          thinking => { type => 'enabled', budget_tokens => 1024 },
          messages => [{ role => 'user', content => 'Hello there!' }]);
my ($s3, $one) = post('/v1/messages', { %hi, max_tokens => 2000 });
my ($think) = grep { $_->{type} eq 'thinking' } @{ $one->{content} // [] };
is($s3, 200, 'a message that thinks: 200');
ok($think && length $think->{thinking}
   && $think->{signature} eq sign($think->{thinking}),
   'its thinking block is signed: base64 HMAC-SHA256 with the key file')
    or diag explain $one;

my $c = Test::LLM::Client->post($port, '/v1/messages',
                                $json->encode({ %hi, max_tokens => 2000, stream => JSON::PP::true }));
my (undef, undef, $sse) = $c->finish(120);
my $streamed = join '', $sse =~ /"thinking_delta","thinking":"((?:[^"\\]|\\.)*)"/g;
$streamed = JSON::PP->new->allow_nonref->decode(qq("$streamed"));
my ($sig_delta) = $sse =~ /"delta":\{"type":"signature_delta","signature":"([^"]*)"\}/;
is($streamed, $think->{thinking} // '', 'streamed: the same thinking');
is($sig_delta, sign($streamed), 'streamed: its signature in a signature_delta');
like($sse, qr/"signature_delta".*?\n\nevent: content_block_stop\ndata: \{"type":"content_block_stop","index":0\}/s,
     'before the thinking block\'s content_block_stop');

sub back {
    my ($blk, $p) = @_;
    return post('/v1/messages', { model => 'tiny', max_tokens => 5, temperature => 0,
        messages => [{ role => 'user', content => 'Hello there!' },
                     { role => 'assistant', content => [$blk, { type => 'text', text => 'Hi.' }] },
                     { role => 'user', content => 'And?' }] }, undef, $p);
}
my ($b1s) = back({ %$think });
is($b1s, 200, 'the block sent back verifies');
my ($bads, $bad) = back({ %$think, thinking => $think->{thinking} . ' ' });
is($bads, 400, 'its text changed: 400');
is($bad->{type}, 'error', 'in Anthropic\'s shape');
is($bad->{error}{type}, 'invalid_request_error', 'invalid_request_error');
like($bad->{error}{message} // '', qr/Invalid 'signature' in 'thinking' block at 'messages\[1\]\.content\[0\]\.signature'/,
     'naming the block');
my ($b3s) = back({ %$think, signature => sign($think->{thinking}, 'x' x 32) });
is($b3s, 400, 'another key\'s signature: 400');
my %nosig = %$think;
delete $nosig{signature};
my ($b4s, $b4) = back(\%nosig);
is($b4s, 400, 'no signature: 400, as Anthropic requires one');
like($b4->{error}{message} // '', qr/signature/, 'naming it');
$srv->stop;

# ---- without llm_thinking_key: a random key, made once ----
my $rnd = start_nginx(
    root => 't/servroot-041-thinking-random',
    main_config => 'thread_pool llm threads=1;',
    http_config => "llm_model tiny $ENV{TEST_NGINX_MODELS}/ngxllm-tiny ctx=4096;\n"
                   . 'llm_thread_pool llm;',
    config => 'location = /v1/messages { llm_api messages; }',
    workers => 2,
);
my (undef, $r1) = post('/v1/messages', { %hi, max_tokens => 2000 }, undef, $rnd->port);
my ($rt) = grep { $_->{type} eq 'thinking' } @{ $r1->{content} // [] };
ok($rt && length($rt->{signature}) == 44 && $rt->{signature} ne sign($rt->{thinking}),
   'a random key signs (not the test\'s key)');
my $verified = 0;
for (1 .. 4) {    # either worker may answer: they share the key
    my ($st4) = back({ %$rt }, $rnd->port);
    $verified++ if $st4 == 200;
}
is($verified, 4, 'and every worker verifies what it signed');

# A reload keeps the random key (the master made it and keeps it): once the
# old workers are gone, the new ones verify what the old ones signed.
my ($before) = $rnd->error_log_lines(0);
my @old = map { /start worker process (\d+)/ ? $1 : () } @$before;
my $pos = $rnd->error_log_size;
kill 'HUP', $rnd->pid;
ok(Test::LLM::Client::wait_until(sub {
       my ($l) = $rnd->error_log_lines($pos);
       2 == grep { /start worker process \d+/ } @$l }, 60)
   && Test::LLM::Client::wait_until(sub { !grep { kill 0, $_ } @old }, 60),
   'reload: new workers started, the old ones (' . "@old" . ') exited');
$verified = 0;
for (1 .. 4) {
    my ($st5) = back({ %$rt }, $rnd->port);
    $verified++ if $st5 == 200;
}
is($verified, 4, 'after the reload the new workers verify a block signed before it');
my (undef, $r2) = post('/v1/messages', { %hi, max_tokens => 2000 }, undef, $rnd->port);
my ($rt2) = grep { $_->{type} eq 'thinking' } @{ $r2->{content} // [] };
ok($rt2 && $rt2->{thinking} eq $rt->{thinking} && $rt2->{signature} eq $rt->{signature},
   'and sign the same text with the same signature');
$rnd->stop;
done_testing();
