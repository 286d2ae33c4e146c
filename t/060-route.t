# Routing by prompt on a front nginx (docs/deployment.md): $llm_prefix_key,
# $llm_prompt_tokens_estimate, llm_route and llm_errors.  The front here is
# the same nginx proxying to llm_api locations of its own, as separate nodes
# would be; t/061-topology.t runs real separate nodes.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

# One Claude Code session (turn 2 has a new billing nonce and more history),
# another session, and an OpenAI agent's first and second turn.
our $cc_system = '"system":[{"type":"text","text":"x-anthropic-billing-header: '
    . 'cc_version=2.1.177.%s; cc_entrypoint=cli; cch=%s;"},{"type":"text",'
    . '"text":"You are an agent.","cache_control":{"type":"ephemeral"}}]';
our $cc_turn1 = '{"model":"tiny","max_tokens":2,' . sprintf($cc_system, '01c', '36ee5')
    . ',"messages":[{"role":"user","content":"fix the build"}]}';
our $cc_turn2 = '{"model":"tiny","max_tokens":2,' . sprintf($cc_system, 'a7f', '0aaa9')
    . ',"messages":[{"role":"user","content":"fix the build"},'
    . '{"role":"assistant","content":"Running make."},'
    . '{"role":"user","content":"it failed"}]}';
our $cc_other = '{"model":"tiny","max_tokens":2,' . sprintf($cc_system, '01c', '36ee5')
    . ',"messages":[{"role":"user","content":"write the docs"}]}';
our $oa_turn1 = '{"model":"tiny","messages":[{"role":"system","content":"You are an agent."},'
    . '{"role":"user","content":"list files"}]}';
our $oa_turn2 = '{"model":"tiny","temperature":0,"messages":[{"role":"system",'
    . '"content":"You are an agent."},{"role":"user","content":"list files"},'
    . '{"role":"assistant","content":"a.c"},{"role":"user","content":"and b?"}]}';
# long enough for the spill threshold below (estimate > 40)
our $long_text = 'Please read this paragraph carefully. ' x 5;

no_shuffle();

# The spill topology: /v1/... on the front go to the "small" node, or to the
# "big" one through @big when the estimate is above 40 tokens.
our $spill_http_config = <<'EOC';
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
EOC
our $spill_config = <<'EOC';
location = /v1/chat/completions {
    llm_errors openai;
    llm_route @big-chat if_prompt_tokens>40;
    if ($http_authorization = "Bearer wrong") { return 401; }
    proxy_set_header X-Request-ID $llm_request_id;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/small/v1/chat/completions;
}
location = /v1/messages {
    llm_errors anthropic;
    llm_route @big-messages if_prompt_tokens>40;
    client_max_body_size 2k;
    proxy_set_header X-Request-ID $llm_request_id;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/small/v1/messages;
}
location @big-chat {
    add_header X-Estimate $llm_prompt_tokens_estimate always;
    rewrite ^ /big/v1/chat/completions break;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
}
location @big-messages {
    rewrite ^ /big/v1/messages break;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
}
location /small/ { add_header X-Node small always; llm_api chat; }
location /small/v1/messages { add_header X-Node small always; llm_api messages; }
location /big/ { add_header X-Node big always; llm_api chat; }
location /big/v1/messages { add_header X-Node big always; llm_api messages; }
EOC

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    if (!defined $block->config) {
        $block->set_value("http_config", $spill_http_config);
        $block->set_value("config", $spill_config);
    }
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]\n[error]")
        unless defined $block->no_error_log or defined $block->error_log
            or defined $block->must_die;
});

run_tests();

__DATA__

=== TEST 1: a front with no llm_model: $llm_prefix_key is the same for two turns of a session
--- config
location = /key {
    add_header X-Prefix-Key $llm_prefix_key always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location = /ok { return 200 "ok\n"; }
--- request eval
["POST /key\n$::cc_turn1", "POST /key\n$::cc_turn2", "POST /key\n$::cc_other",
 "POST /key\n$::oa_turn1", "POST /key\n$::oa_turn2"]
--- response_headers eval
["X-Prefix-Key: 0dc46a554be7937f", "X-Prefix-Key: 0dc46a554be7937f", "X-Prefix-Key: 1bf3b7fade16ada3",
 "X-Prefix-Key: 94f5edbe261ed4e5", "X-Prefix-Key: 94f5edbe261ed4e5"]
--- response_body eval
["ok\n", "ok\n", "ok\n", "ok\n", "ok\n"]



=== TEST 2: $llm_prompt_tokens_estimate: ASCII bytes of messages / 4, rounded up
--- config
location = /key {
    add_header X-Estimate $llm_prompt_tokens_estimate always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location = /ok { return 200 "ok\n"; }
--- request eval
"POST /key\n$::oa_turn1"
--- response_headers
X-Estimate: 15



=== TEST 2a: Responses bodies: an input string keys as the items of its next turn; instructions and input are estimated
--- config
location = /key {
    add_header X-Prefix-Key $llm_prefix_key always;
    add_header X-Estimate $llm_prompt_tokens_estimate always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location = /ok { return 200 "ok\n"; }
--- request eval
["POST /key\n" . '{"model":"tiny","instructions":"You are an agent.","input":"list files"}',
 "POST /key\n" . '{"model":"tiny","instructions":"You are an agent.","input":[{"role":"user","content":[{"type":"input_text","text":"list files"}]},{"type":"function_call","call_id":"c1","name":"ls","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"a.c"}]}',
 "POST /key\n" . '{"model":"tiny","instructions":"You are an agent.","input":"write docs"}']
--- response_headers eval
["X-Prefix-Key: c7bc04683767b5cd\nX-Estimate: 7", "X-Prefix-Key: c7bc04683767b5cd", "X-Prefix-Key: 0c59cc8519bb3f5c"]
--- response_body eval
["ok\n", "ok\n", "ok\n"]

=== TEST 3: a body in a temp file has the key it has in memory
--- config
client_body_buffer_size 1k;
location = /key {
    add_header X-Prefix-Key $llm_prefix_key always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location = /file-only {
    client_body_in_file_only clean;
    add_header X-Prefix-Key $llm_prefix_key always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location = /ok { return 200 "ok\n"; }
--- request eval
my $turn3 = $::cc_turn2;
$turn3 =~ s/\]\}$/,{"role":"assistant","content":"@{['x' x 4000]}"},{"role":"user","content":"again"}]}/;
["POST /key\n$turn3", "POST /file-only\n$::cc_turn1"]
--- response_headers eval
["X-Prefix-Key: 0dc46a554be7937f", "X-Prefix-Key: 0dc46a554be7937f"]



=== TEST 4: no key (empty, so hash falls back to round-robin) without a readable JSON body
--- config
location = /key {
    add_header X-Prefix-Key $llm_prefix_key always;
    add_header X-Estimate $llm_prompt_tokens_estimate always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location = /ok { return 200 "ok\n"; }
--- request eval
["POST /key\nnot json", "POST /key\n{\"model\":\"tiny\"}", "GET /key"]
--- response_headers eval
["!X-Prefix-Key\n!X-Estimate", "!X-Prefix-Key\n!X-Estimate", "!X-Prefix-Key\n!X-Estimate"]
--- error_code eval
[200, 200, 200]



=== TEST 5: proxy_request_buffering off: no key at peer selection, unless llm_route read the body
--- config
proxy_request_buffering off;
client_body_buffer_size 1k;
location = /streamed {
    add_header X-Prefix-Key $llm_prefix_key always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location = /routed {
    llm_route @never if_prompt_tokens>1000000;
    add_header X-Prefix-Key $llm_prefix_key always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location @never { return 500; }
location = /ok { return 200 "ok\n"; }
--- request eval
my $turn3 = $::cc_turn2;
$turn3 =~ s/\]\}$/,{"role":"assistant","content":"@{['x' x 8000]}"},{"role":"user","content":"again"}]}/;
["POST /streamed\n$turn3", "POST /routed\n$turn3"]
--- response_headers eval
["!X-Prefix-Key", "X-Prefix-Key: 0dc46a554be7937f"]



=== TEST 6: completions: llm_prefix_key_bytes sets how much of the prompt makes the key
--- config
llm_prefix_key_bytes 8;
location = /key {
    add_header X-Prefix-Key $llm_prefix_key always;
    proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/ok;
}
location = /ok { return 200 "ok\n"; }
--- request eval
["POST /key\n{\"prompt\":\"def main(): pass\"}", "POST /key\n{\"prompt\":\"def main(argv): return 1\"}",
 "POST /key\n{\"prompt\":\"class X: pass\"}"]
--- response_headers_like eval
["X-Prefix-Key: 7c6d1bdfb7371cc7", "X-Prefix-Key: 7c6d1bdfb7371cc7", "X-Prefix-Key: 2c5db36076a9f903"]



=== TEST 7: a short chat request stays on the default upstream
--- request eval
"POST /v1/chat/completions\n" . '{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}'
--- error_code: 200
--- response_headers
X-Node: small
--- response_body_like: "object":"chat.completion"



=== TEST 8: a long chat request goes to the named location, body and streaming intact
--- request eval
"POST /v1/chat/completions\n" . '{"model":"tiny","max_tokens":3,"stream":true,"messages":[{"role":"user","content":"' . $::long_text . '"}]}'
--- error_code: 200
--- response_headers
X-Node: big
Content-Type: text/event-stream
X-Estimate: 52
--- response_body_like: ^data: \{"id":"chatcmpl-.*"object":"chat\.completion\.chunk".*data: \[DONE\]\n\n$
--- error_log
llm: request goes to "@big-chat": prompt tokens estimate 52 > 40
--- no_error_log
[alert]
[crit]



=== TEST 9: Anthropic: short stays, long goes, each answered in Anthropic's shape
--- request eval
["POST /v1/messages\n" . '{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}',
 "POST /v1/messages\n" . '{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"' . $::long_text . '"}]}']
--- error_code eval
[200, 200]
--- response_headers eval
["X-Node: small", "X-Node: big"]
--- response_body_like eval
['^\{"id":"msg_.*"type":"message"', '^\{"id":"msg_.*"type":"message"']



=== TEST 10: a node's own error passes through the front unchanged, with one X-Request-ID
--- request eval
"POST /v1/chat/completions\n" . '{"model":"tiny","messages":[]}'
--- more_headers
X-Request-ID: front-test-1
--- error_code: 400
--- response_headers
X-Node: small
X-Request-ID: front-test-1
--- response_body_like: ^\{"error":\{"message":"[^"]*messages[^"]*","type":"invalid_request_error","param":"messages".*"request_id":"front-test-1"\}\}$
--- raw_response_headers_unlike: X-Request-ID:.*\n(?s:.*)X-Request-ID:



=== TEST 11: the front's own errors take the location's protocol shape (llm_errors)
--- request eval
["POST /v1/chat/completions\n" . '{"model":"tiny","messages":[{"role":"user","content":"hi"}]}',
 "POST /v1/messages\n" . '{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"' . ('x' x 3000) . '"}]}']
--- more_headers eval
["Authorization: Bearer wrong\nX-Request-ID: front-401", "X-Request-ID: front-413"]
--- error_code eval
[401, 413]
--- response_headers eval
["Content-Type: application/json\nX-Request-ID: front-401\n!X-Node",
 "Content-Type: application/json\nX-Request-ID: front-413\n!X-Node"]
--- no_error_log
[alert]
[crit]
--- response_body eval
['{"error":{"message":"Authentication required.","type":"authentication_error","param":null,"code":null,"request_id":"front-401"}}',
 '{"type":"error","error":{"type":"request_too_large","message":"Request body too large: it exceeds client_max_body_size."},"request_id":"front-413"}']
--- no_error_log
[alert]
[crit]



=== TEST 12: llm_route needs a named location
--- config
location = /x { llm_route big if_prompt_tokens>5; }
--- must_die
--- error_log
llm_route needs a named location such as "@big", not "big"



=== TEST 13: llm_route needs its condition
--- config
location = /x { llm_route @big if_tokens>5; }
--- must_die
--- error_log
invalid llm_route condition "if_tokens>5", expected if_prompt_tokens>N



=== TEST 14: llm_errors knows two shapes
--- config
location = /x { llm_errors xml; }
--- must_die
--- error_log
unknown llm_errors "xml", expected openai or anthropic

