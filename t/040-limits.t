# Resource bounds (docs/api.md "Limits"): JSON nesting depth, message and tool
# counts, template render steps and output size, prompt tokens against the
# context.  Each is a 400 in the protocol's error shape with a message that
# names the limit.  The template bounds use a copy of the fixture model with
# a template whose loops follow request data (chat_template_kwargs "mode").
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);
use File::Temp qw(tempdir);
use JSON::PP ();

my $fixture = "$ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32";
my $loopy = tempdir('llm-limits-XXXXXX', TMPDIR => 1, CLEANUP => 1);
for my $f (qw(config.json generation_config.json model.safetensors tokenizer.json)) {
    symlink("$fixture/$f", "$loopy/$f") or die "symlink $f: $!";
}
{
    my $tmpl = join '',
        "{%- if mode == 'loop' %}{% for m in messages %}{% for i in range(2000) %}",
        "{% for j in range(2000) %}{% endfor %}{% endfor %}{% endfor %}",
        "{%- elif mode == 'grow' %}{% for i in range(100000) %}{{ messages[0].content }}{% endfor %}",
        "{%- elif mode == 'repeat' %}{{ messages[0].content * n }}",
        "{%- elif mode == 'pad' %}{%- set pad = ''|center(300000000) %}{{ pad }}",
        "{%- else %}{% for message in messages %}{{ message.role + ': ' + message.content + '\\n' }}",
        "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}{% endif %}";
    open my $fh, '>', "$loopy/tokenizer_config.json" or die $!;
    print $fh JSON::PP->new->encode({ tokenizer_class => 'PreTrainedTokenizerFast',
        model_max_length => 256, chat_template => $tmpl });
    close $fh;
}
$ENV{TEST_NGINX_LOOPY_MODEL} = $loopy;

sub chat_body { '{"model": "tiny", "max_tokens": 1, ' . $_[0] . '}' }
sub messages_json { '[' . join(',', ('{"role": "user", "content": "x"}') x $_[0]) . ']' }
sub tools_json {
    '[' . join(',', map { qq({"type": "function", "function": {"name": "f$_", "parameters": {"type": "object"}}}) } 1 .. $_[0]) . ']'
}
sub anthropic_tools_json {
    '[' . join(',', map { qq({"name": "f$_", "input_schema": {"type": "object"}}) } 1 .. $_[0]) . ']'
}

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32;\n"
        . "llm_model loopy $ENV{TEST_NGINX_LOOPY_MODEL};\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config",
        "location = /v1/chat/completions { llm_api chat; }\n"
        . "location /v1/messages { llm_api messages; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
    $block->set_value("timeout", "30") unless defined $block->timeout;
});

run_tests();

__DATA__

=== TEST 1: JSON nested deeper than 64 levels is a 400 json_too_deep
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"messages": [{"role": "user", "content": "hi"}], "metadata": ' . ('[' x 100) . (']' x 100))
--- error_code: 400
--- response_body_like: "message":"The JSON body of your request nests arrays and objects more than 64 levels deep, which is the limit.".*"code":"json_too_deep"



=== TEST 2: nesting within the limit is not refused for its depth
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"x": ' . ('[' x 60) . (']' x 60) . '}')
--- error_code: 200
--- response_body_like: "object":"chat.completion"



=== TEST 3: Anthropic: deep JSON is a 400 in Anthropic's shape
--- request eval
"POST /v1/messages\n" . '{"model": "tiny", "max_tokens": 1, "messages": ' . ('[' x 100) . (']' x 100) . '}'
--- error_code: 400
--- response_body_like: ^\{"type":"error","error":\{"type":"invalid_request_error","message":"The JSON body of your request nests arrays and objects more than 64 levels deep



=== TEST 4: tool-call arguments nested too deep are a 400 on their path
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "' . ('[' x 100) . (']' x 100) . '"}}]}]')
--- error_code: 400
--- response_body_like: "code":"json_too_deep"



=== TEST 5: 2049 messages are a 400 too_many_messages
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"messages": ' . main::messages_json(2049))
--- error_code: 400
--- response_body_like: "message":"Invalid value for 'messages': at most 2048 messages are allowed, but got 2049.","type":"invalid_request_error","param":"messages","code":"too_many_messages"



=== TEST 6: 2048 messages pass the count and meet the context limit instead
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"messages": ' . main::messages_json(2048))
--- error_code: 400
--- response_body_like: "message":"This model's maximum context length is 256 tokens\. However, your prompt has \d+ tokens\.".*"code":"context_length_exceeded"



=== TEST 7: 129 tools are a 400 too_many_tools
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"messages": [{"role": "user", "content": "hi"}], "tools": ' . main::tools_json(129))
--- error_code: 400
--- response_body_like: "message":"Invalid value for 'tools': at most 128 tools are allowed, but got 129.","type":"invalid_request_error","param":"tools","code":"too_many_tools"



=== TEST 8: 128 tools pass the count (the tool prompt then exceeds the context)
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"messages": [{"role": "user", "content": "hi"}], "tools": ' . main::tools_json(128))
--- error_code: 400
--- response_body_like: "code":"context_length_exceeded"



=== TEST 9: Anthropic: 2049 messages and 129 tools are 400s
--- request eval
["POST /v1/messages\n" . '{"model": "tiny", "max_tokens": 1, "messages": ' . main::messages_json(2049) . '}',
 "POST /v1/messages\n" . '{"model": "tiny", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "tools": ' . main::anthropic_tools_json(129) . '}']
--- error_code eval
[400, 400]
--- response_body_like eval
["at most 2048 messages are allowed, but got 2049",
 "at most 128 tools are allowed, but got 129"]



=== TEST 10: a prompt longer than the context is a 400 with the counts
--- request eval
"POST /v1/chat/completions\n" . main::chat_body('"messages": [{"role": "user", "content": "' . ('y' x 300) . '"}]')
--- error_code: 400
--- response_body_like: "message":"This model's maximum context length is 256 tokens\. However, your prompt has 3\d\d tokens\.".*"code":"context_length_exceeded"



=== TEST 11: Anthropic: a prompt longer than the context is a 400
--- request eval
"POST /v1/messages\n" . '{"model": "tiny", "max_tokens": 1, "messages": [{"role": "user", "content": "' . ('y' x 300) . '"}]}'
--- error_code: 400
--- response_body_like: ^\{"type":"error","error":\{"type":"invalid_request_error","message":"[^"]*context length



=== TEST 12: the loopy template renders normally without a mode
--- request
POST /v1/chat/completions
{"model": "loopy", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
--- error_code: 200
--- response_body_like: "prompt_tokens":20,



=== TEST 13: a template loop driven by the request stops at the step budget: 400
--- request
POST /v1/chat/completions
{"model": "loopy", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"mode": "loop"}}
--- error_code: 400
--- response_body_like: "message":"line 1: template render exceeds 1000000 steps","type":"invalid_request_error","param":"messages"
--- timeout: 120



=== TEST 14: template output past 16 MiB is a 400
--- request eval
"POST /v1/chat/completions\n" . '{"model": "loopy", "max_tokens": 1, "messages": [{"role": "user", "content": "' . ('z' x 200) . '"}], "chat_template_kwargs": {"mode": "grow"}}'
--- error_code: 400
--- response_body_like: "message":"line 1: template output exceeds 16777216 bytes"



=== TEST 15: a string repeated by a request-supplied count is a 400, not a stall
--- request
POST /v1/chat/completions
{"model": "loopy", "max_tokens": 1, "messages": [{"role": "user", "content": "ab"}], "chat_template_kwargs": {"mode": "repeat", "n": 1000000000000}}
--- error_code: 400
--- response_body_like: "message":"line 1: string repetition exceeds 16777216 bytes"



=== TEST 16: chat_template_kwargs cannot replace the validated messages
--- request
POST /v1/chat/completions
{"model": "tiny", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"messages": [{"role": "user", "content": "a much longer conversation that would count more tokens"}]}}
--- error_code: 200
--- response_body_like: "prompt_tokens":20,



=== TEST 17: a template line that pads to 300 MB is a 400 before any work (issue 13)
--- request
POST /v1/chat/completions
{"model": "loopy", "max_tokens": 1, "messages": [{"role": "user", "content": "ab"}], "chat_template_kwargs": {"mode": "pad"}}
--- error_code: 400
--- response_body_like: "message":"line 1: string exceeds 16777216 bytes"
