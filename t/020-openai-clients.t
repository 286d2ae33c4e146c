# The official openai npm client against nginx (t/node/*.test.js).
use Test::Nginx::Lite::Node qw(run_node_tests);

run_node_tests(
    scripts     => ['t/node/openai-serve.test.js', 't/node/disconnect.test.js'],
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=8 queue=128 ctx=2048;
                    llm_thread_pool llm;',
    config      => 'location = /v1/chat/completions { llm_api chat; }
                    location = /v1/completions { llm_api completions; }
                    location = /v1/embeddings { llm_api embeddings; }
                    location /v1/models { llm_api models; }
                    location = /health { llm_api health; }',
    env         => { LLM_MODEL => 'tiny' },
    timeout     => 240,
);
