# The chat page in headless Chromium (t/node/page.test.js, playwright-core
# from t/node/package.json, Debian's chromium-headless-shell): it loads,
# lists the models, streams an answer from the shipped default model, and
# its layout matches t/node/page-layout.json.
use Test::Nginx::Lite::Node qw(run_node_tests);

run_node_tests(
    scripts     => ['t/node/page.test.js'],
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model ngxllm-tiny $TEST_NGINX_MODELS/ngxllm-tiny ctx=2048;
                    llm_thread_pool llm;',
    config      => 'location = /                   { llm_api page; }
                    location = /v1/chat/completions { llm_api chat; }
                    location /v1/models             { llm_api models; }',
    env         => { LLM_MODEL => 'ngxllm-tiny' },
    timeout     => 240,
);
