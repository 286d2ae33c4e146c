# make clients: real agent clients from npm (t/clients/package.json,
# installed at test time into t/clients/node_modules) end to end against a
# server configured like `make run`'s (conf/nginx.conf), with a context that
# holds their prompts and generations kept short.  Each script fails on any
# 4xx/5xx in the access log for the requests it made (t/clients/lib/log.js).
# Not part of `make test` (the agent CLIs are large downloads and slow on the
# tiny model); docs/clients.md says what each client sends.
use strict;
use warnings;
use Test::Nginx::Lite::Node qw(run_node_tests);

system('bash', 't/node/install.sh', 't/clients') == 0
    or die "t/clients: npm install failed\n";

my @scripts = $ENV{LLM_CLIENTS}
    ? map { "t/clients/$_.test.js" } split /[\s,]+/, $ENV{LLM_CLIENTS}
    : map { "t/clients/$_.test.js" } qw(sdk codex claude opencode);

run_node_tests(
    scripts     => \@scripts,
    main_config => 'thread_pool llm threads=1;',
    http_config => 'llm_model ngxllm-tiny $TEST_NGINX_MODELS/ngxllm-tiny ctx=32768 parallel=4;
                    llm_thread_pool llm;
                    llm_tool_parser auto;
                    llm_reasoning_parser auto;
                    llm_any_model on;
                    llm_responses_store zone=llm_responses:16m;
                    client_body_buffer_size 1m;
                    log_format clients escape=json \'$status $request_method $request_uri $request_length $request_body\';',
    config      => 'access_log logs/clients.log clients;
                    location = /v1/chat/completions { llm_api chat; }
                    location = /v1/completions      { llm_api completions; }
                    location /v1/responses          { llm_api responses; }
                    location /v1/messages           { llm_api messages; }
                    location = /v1/embeddings       { llm_api embeddings; }
                    location /v1/models             { llm_api models; }
                    location = /health              { llm_api health; }
                    location = /                    { llm_api page; }
                    location /v1/                   { llm_errors openai; return 404; }',
    env         => { LLM_MODEL => 'ngxllm-tiny' },
    timeout     => 600,
);
