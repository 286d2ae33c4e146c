# MLX affine-quantized folders end to end: the shipped default model
# (models/ngxllm-tiny) as an MLX 4-bit folder (groups of 64, embedding
# quantized too, as mlx-lm's convert does; written by t/make-gguf-models.sh
# with t/fixtures/gen/make_mlx.py) serving chat with tool calls through
# nginx; configuration errors of MLX folders.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);

our $W = '{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}';
our $ASK = '{"role": "user", "content": "What is the weather in Paris?"}';
our $MLX = "$ENV{TEST_NGINX_FIXTURES}/../.cache/mlx";

# the folder is made from the shipped model at test time (numpy), not committed
my $make = "$ENV{TEST_NGINX_FIXTURES}/../make-gguf-models.sh";
system("bash", $make) == 0 or die "$make failed\n";

# a copy of the folder that says 7 bits
use File::Temp qw(tempdir);
our $BAD = tempdir(CLEANUP => 1);
system("cp $MLX/ngxllm-tiny-4bit/* $BAD/ && sed -i 's/\"bits\": 4/\"bits\": 7/' $BAD/config.json") == 0
    or die "copy of the MLX folder failed\n";

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

=== TEST 1: an MLX 4-bit folder serves a tool call
--- http_config eval
"llm_model tiny $::MLX/ngxllm-tiny-4bit ctx=1024;\nllm_thread_pool llm;"
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0})
--- error_code: 200
--- response_body_like: "tool_calls":\[\{"id":"call_[A-Za-z0-9]{24}","type":"function","function":\{"name":"get_weather","arguments":"\{\\"city\\":\\"Paris\\"\}"\}\}\]\},"logprobs":null,"finish_reason":"tool_calls"
--- error_log eval
qr/llm_model "tiny": Qwen3ForCausalLM .*ngxllm-tiny-4bit, \d+ parameters, Q4_1,/



=== TEST 2: the MLX folder streams a tool call
--- http_config eval
"llm_model tiny $::MLX/ngxllm-tiny-4bit ctx=1024;\nllm_thread_pool llm;"
--- request eval
"POST /v1/chat/completions\n" . qq({"messages": [$::ASK], "tools": [$::W], "temperature": 0, "stream": true})
--- error_code: 200
--- response_body_like: "delta":\{"tool_calls":\[\{"index":0,"id":"call_\w{24}","type":"function","function":\{"name":"get_weather","arguments":""\}\}\]\}.*"finish_reason":"tool_calls"\}\]\}\n\ndata: \[DONE\]\n\n$



=== TEST 3: an MLX folder with an unsupported width fails nginx -t naming it
--- http_config eval
"llm_model tiny $::BAD;"
--- config
location = /v1/models { llm_api models; }
--- must_die
--- error_log eval
qr/llm_model "tiny": .*MLX quantization with 7 bits is not supported \(2, 3, 4, 5, 6, 8\)/
