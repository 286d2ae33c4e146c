# The official openai npm client's Responses API against nginx
# (t/node/responses.test.js): create, stream, a function-call round trip,
# and the same continued by previous_response_id from kept responses.
use Test::Nginx::Lite::Node qw(run_node_tests);

run_node_tests(
    scripts     => ['t/node/responses.test.js'],
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model tiny $TEST_NGINX_MODELS/ngxllm-tiny ctx=2048;
                    llm_thread_pool llm;
                    llm_responses_store zone=responses:1m;',
    config      => 'location /v1/responses { llm_api responses; }',
    env         => { LLM_MODEL => 'tiny' },
    timeout     => 240,
);
