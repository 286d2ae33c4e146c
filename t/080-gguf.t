# Quantized models end to end: the shipped default model (models/ngxllm-tiny)
# as GGUF files (Q8_0 and llama.cpp's Q4_K_M mix, written by
# t/make-gguf-models.sh) and quantized at load (quant=), serving chat with
# tool calls through nginx; configuration errors of quantized models.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

our $W = '{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}';
our $ASK = '{"role": "user", "content": "What is the weather in Paris?"}';
our $GGUF = ($ENV{TEST_NGINX_GGUF} || "$ENV{TEST_NGINX_FIXTURES}/../.cache/gguf");

# the GGUF files are made from the shipped model at test time (numpy), not committed
my $make = "$ENV{TEST_NGINX_FIXTURES}/../make-gguf-models.sh";
system("bash", $make) == 0 or die "$make failed\n";

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("config",
        "location = /v1/chat/completions { llm_api chat; }\n"
        . "location = /v1/models { llm_api models; }")
        unless defined $block->config;
    $block->set_value("no_error_log", "[alert]\n[crit]\n[emerg]")
        unless defined $block->no_error_log or defined $block->error_log;
});

run_tests();

__DATA__

=== TEST 1: a Q8_0 GGUF file serves a tool call (tokenizer, template and parsers from its metadata)
--- http_config eval
"llm_model tiny $::GGUF/ngxllm-tiny-Q8_0.gguf ctx=1024;\nllm_thread_pool llm;"
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_[A-Za-z0-9]{24}","type":"function","function":\{"name":"get_weather","arguments":"\{\\"city\\":\\"Paris\\"\}"\}\}\]\},"logprobs":null,"finish_reason":"tool_calls"
--- error_log eval
qr/llm_model "tiny": Qwen3ForCausalLM .*ngxllm-tiny-Q8_0\.gguf, \d+ parameters, Q8_0,/



=== TEST 2: a Q4_K_M GGUF file serves a streamed tool call
--- http_config eval
"llm_model tiny $::GGUF/ngxllm-tiny-Q4_K_M.gguf ctx=1024;\nllm_thread_pool llm;"
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0, "stream": true})
--- error_code: 200
--- response_body_like: "delta":\{"tool_calls":\[\{"index":0,"id":"call_\w{24}","type":"function","function":\{"name":"get_weather","arguments":""\}\}\]\}.*"finish_reason":"tool_calls"\}\]\}\n\ndata: \[DONE\]\n\n$
--- error_log eval
qr/llm_model "tiny": .*ngxllm-tiny-Q4_K_M\.gguf, \d+ parameters, Q\d_\w+ mix,/



=== TEST 3: a multi-turn round trip on the Q4_K_M file: the tool result becomes the answer
--- http_config eval
"llm_model tiny $::GGUF/ngxllm-tiny-Q4_K_M.gguf ctx=1024;\nllm_thread_pool llm;"
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK,
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\\"temperature_c\\": 18, \\"condition\\": \\"cloudy\\"}"}],
  "tools": [$::W], "temperature": 0, "chat_template_kwargs": {"enable_thinking": false}})
--- error_code: 200
--- response_body_like: "message":\{"role":"assistant","content":"[^"]*18[^"]*","refusal":null\},"logprobs":null,"finish_reason":"stop"



=== TEST 4: quantized at load (quant=q4_k) the folder serves a tool call
--- http_config eval
"llm_model tiny $ENV{TEST_NGINX_MODELS}/ngxllm-tiny ctx=1024 quant=q4_k;\nllm_thread_pool llm;"
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0})
--- error_code: 200
--- response_body_like: "function":\{"name":"get_weather","arguments":"\{\\"city\\":\\"Paris\\"\}"\}.*"finish_reason":"tool_calls"
--- error_log eval
qr/llm_model "tiny": Qwen3ForCausalLM .*, Q5_0 mix,/



=== TEST 5: quant=q8_0 also serves
--- http_config eval
"llm_model tiny $ENV{TEST_NGINX_MODELS}/ngxllm-tiny ctx=1024 quant=q8_0;\nllm_thread_pool llm;"
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0})
--- error_code: 200
--- response_body_like: "function":\{"name":"get_weather".*"finish_reason":"tool_calls"



=== TEST 6: an unknown quant= scheme fails nginx -t naming the known ones
--- http_config eval
"llm_model tiny $ENV{TEST_NGINX_MODELS}/ngxllm-tiny quant=q3_x;"
--- config
location = /v1/models { llm_api models; }
--- must_die
--- error_log eval
qr/llm_model "tiny": quant=q3_x is not supported \(q8_0, q4_0, q4_k, q6_k\) in .*nginx\.conf:\d+/



=== TEST 7: a .gguf path that is not a GGUF file fails nginx -t
--- http_config eval
"llm_model tiny $ENV{TEST_NGINX_FIXTURES}/gguf/not-gguf.gguf;"
--- config
location = /v1/models { llm_api models; }
--- must_die
--- error_log eval
qr/llm_model "tiny": .*not-gguf\.gguf: not a GGUF file/
