# Anthropic messages with the shipped default model: every stop_reason, tool
# use round trip, thinking on and off, streaming tool input.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

our $W = '{"name": "get_weather", "description": "Get the current weather for a city", "input_schema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}';
our $ASK = '{"role": "user", "content": "What is the weather in Paris?"}';

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_MODELS}/ngxllm-tiny ctx=1024;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
    $block->set_value("config", "location /v1/messages { llm_api messages; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: stop_reason end_turn
--- request
POST /v1/messages
{"max_tokens": 100, "temperature": 0, "messages": [{"role": "user", "content": "Hello there!"}]}
--- error_code: 200
--- response_body_like: "content":\[\{"type":"text","text":"[^"]+"\}\],"stop_reason":"end_turn","stop_sequence":null



=== TEST 2: stop_reason max_tokens
--- request
POST /v1/messages
{"max_tokens": 2, "temperature": 0, "messages": [{"role": "user", "content": "Hello there!"}]}
--- error_code: 200
--- response_body_like: "stop_reason":"max_tokens","stop_sequence":null,"usage":\{"input_tokens":\d+,"cache_creation_input_tokens":0,"cache_read_input_tokens":\d+,"output_tokens":2\}



=== TEST 3: stop_reason stop_sequence names the sequence and leaves it out
--- request
POST /v1/messages
{"max_tokens": 100, "temperature": 0, "stop_sequences": [" "], "messages": [{"role": "user", "content": "Hello there!"}]}
--- error_code: 200
--- response_body_like: "content":\[\{"type":"text","text":"[^" ]+"\}\],"stop_reason":"stop_sequence","stop_sequence":" "



=== TEST 4: stop_reason tool_use with a toolu_ block and an input object
--- request eval
"POST /v1/messages\n" . qq({"max_tokens": 200, "temperature": 0, "tools": [$::W], "messages": [$::ASK]})
--- error_code: 200
--- response_body_like: "content":\[\{"type":"tool_use","id":"toolu_[A-Za-z0-9]{24}","name":"get_weather","input":\{"city":"[^"]+"\}\}\],"stop_reason":"tool_use"



=== TEST 5: thinking enabled puts a thinking block first
--- request eval
"POST /v1/messages\n" . qq({"max_tokens": 2000, "temperature": 0, "thinking": {"type": "enabled", "budget_tokens": 1024}, "tools": [$::W], "messages": [$::ASK]})
--- error_code: 200
--- response_body_like: "content":\[\{"type":"thinking","thinking":"[^"]+","signature":"[A-Za-z0-9+/]{43}="\},\{"type":"tool_use","id":"toolu_\w+","name":"get_weather"



=== TEST 6: thinking disabled: no thinking block
--- request eval
"POST /v1/messages\n" . qq({"max_tokens": 200, "temperature": 0, "thinking": {"type": "disabled"}, "messages": [{"role": "user", "content": "Hello there!"}]})
--- error_code: 200
--- response_body_like: "content":\[\{"type":"text"
--- response_body_unlike: "thinking"



=== TEST 7: the tool result round trip ends the turn with an answer
--- request eval
"POST /v1/messages\n" . qq({"max_tokens": 200, "temperature": 0, "tools": [$::W], "messages": [$::ASK,
  {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\\"temperature_c\\": 18, \\"condition\\": \\"cloudy\\"}"}]}]})
--- error_code: 200
--- response_body_like: "content":\[\{"type":"text","text":"[^"]*18[^"]*"\}\],"stop_reason":"end_turn"



=== TEST 8: streaming tool use: input_json_delta fragments, then stop_reason tool_use
--- request eval
"POST /v1/messages\n" . qq({"max_tokens": 200, "temperature": 0, "stream": true, "tools": [$::W], "messages": [$::ASK]})
--- error_code: 200
--- response_body_like: event: content_block_start\ndata: \{"type":"content_block_start","index":0,"content_block":\{"type":"tool_use","id":"toolu_\w+","name":"get_weather","input":\{\}\}\}\n\n.*"delta":\{"type":"input_json_delta","partial_json":"\{".*"delta":\{"type":"input_json_delta","partial_json":"\\"city\\":\\"".*event: message_delta\ndata: \{"type":"message_delta","delta":\{"stop_reason":"tool_use","stop_sequence":null\}.*event: message_stop



=== TEST 9: streaming thinking: thinking_delta then a signature_delta
--- request
POST /v1/messages
{"max_tokens": 2000, "temperature": 0, "stream": true, "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": [{"role": "user", "content": "Hello there!"}]}
--- error_code: 200
--- response_body_like: "content_block":\{"type":"thinking","thinking":"","signature":""\}.*"delta":\{"type":"thinking_delta","thinking":"[^"]+"\}.*"delta":\{"type":"signature_delta","signature":"[A-Za-z0-9+/]{43}="\}.*"content_block":\{"type":"text","text":""\}.*"stop_reason":"end_turn"



=== TEST 10: tool_choice any requires a tool; none offers none
--- request eval
["POST /v1/messages\n" . qq({"max_tokens": 200, "temperature": 0, "tools": [$::W], "tool_choice": {"type": "any"}, "messages": [$::ASK]}),
 "POST /v1/messages\n" . qq({"max_tokens": 200, "temperature": 0, "tools": [$::W], "tool_choice": {"type": "none"}, "messages": [$::ASK]})]
--- error_code eval
[200, 200]
--- response_body_like eval
["\"stop_reason\":\"tool_use\"", "\"stop_reason\":\"end_turn\""]
