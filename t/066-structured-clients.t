# Structured output checked by an independent JSON Schema validator (ajv from
# npm): 22 real tool APIs called by name and answered as response_format
# json_schema, with the shipped model at temperature 1.0 and 1.5.
use Test::Nginx::Lite::Node qw(run_node_tests);

run_node_tests(
    scripts     => ['t/node/structured.test.js'],
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model tiny $TEST_NGINX_MODELS/ngxllm-tiny ctx=2048;
                    llm_thread_pool llm;',
    config      => 'location = /v1/chat/completions { llm_api chat; }',
    env         => { LLM_MODEL => 'tiny' },
    timeout     => 300,
);
