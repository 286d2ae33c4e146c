# The structured-output guarantee in every native tool-call format, checked
# by an independent JSON Schema validator (ajv from npm): real tool APIs
# called by name on a random-weight model at temperature 1.0 and 1.5, one
# location per tool parser (t/node/structured-formats.test.js).
use Test::Nginx::Lite::Node qw(run_node_tests);

run_node_tests(
    scripts     => ['t/node/structured-formats.test.js'],
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model rnd $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=4096;
                    llm_thread_pool llm;',
    config      => '
                    location = /hermes/v1/chat/completions { llm_api chat; llm_tool_parser hermes; }
                    location = /llama3_json/v1/chat/completions { llm_api chat; llm_tool_parser llama3_json; }
                    location = /mistral/v1/chat/completions { llm_api chat; llm_tool_parser mistral; }
                    location = /deepseek_v3/v1/chat/completions { llm_api chat; llm_tool_parser deepseek_v3; }
                    location = /harmony/v1/chat/completions { llm_api chat; llm_tool_parser harmony; }
                    location = /qwen3_coder/v1/chat/completions { llm_api chat; llm_tool_parser qwen3_coder; }
                    location = /glm4/v1/chat/completions { llm_api chat; llm_tool_parser glm4; }
                    location = /pythonic/v1/chat/completions { llm_api chat; llm_tool_parser pythonic; }
                    location = /glm4_0414/v1/chat/completions { llm_api chat; llm_tool_parser glm4_0414; }',
    env         => { LLM_MODEL => 'rnd' },
    timeout     => 300,
);
