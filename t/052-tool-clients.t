# Tool-calling loops with the official openai and @anthropic-ai/sdk clients
# against the shipped default model.
use Test::Nginx::Lite::Node qw(run_node_tests);

run_node_tests(
    scripts     => ['t/node/tools.test.js'],
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model tiny $TEST_NGINX_MODELS/ngxllm-tiny ctx=2048;
                    llm_thread_pool llm;',
    config      => 'location = /v1/chat/completions { llm_api chat; }
                    location /v1/messages { llm_api messages; }',
    env         => { LLM_MODEL => 'tiny' },
    timeout     => 240,
);
