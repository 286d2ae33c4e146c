# The official @anthropic-ai/sdk npm client against nginx.
use Test::Nginx::Lite::Node qw(run_node_tests);

run_node_tests(
    scripts     => ['t/node/anthropic-serve.test.js'],
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32;
                    llm_model busy $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=1 queue=0;
                    llm_thread_pool llm;',
    config      => 'location /v1/messages { llm_api messages; }',
    env         => { LLM_MODEL => 'tiny', LLM_BUSY_MODEL => 'busy' },
    timeout     => 120,
);
