# What nginx -t refuses because it could never run (docs/operations.md,
# "Memory sizing"): KV caches and scratch beyond the machine's memory or
# llm_memory_limit, counted for every worker (two here); a tokenizer with ids
# the model has no embedding for.  And a worker that still cannot start a
# model answers 503 for it instead of leaving a master with no worker.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);
use File::Temp qw(tempdir);
use JSON::PP ();

# the fixture model with one added token past its 256-token vocabulary
my $fixture = "$ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32";
my $bad_tok = tempdir('llm-memory-XXXXXX', TMPDIR => 1, CLEANUP => 1);
for my $f (qw(config.json generation_config.json model.safetensors tokenizer_config.json)) {
    symlink("$fixture/$f", "$bad_tok/$f") or die "symlink $f: $!";
}
{
    open my $in, '<', "$fixture/tokenizer.json" or die $!;
    my $t = JSON::PP->new->decode(do { local $/; <$in> });
    push @{ $t->{added_tokens} }, { id => 300, content => '<|evil|>', special => JSON::PP::true,
        single_word => JSON::PP::false, lstrip => JSON::PP::false, rstrip => JSON::PP::false,
        normalized => JSON::PP::false };
    open my $out, '>', "$bad_tok/tokenizer.json" or die $!;
    print $out JSON::PP->new->encode($t);
    close $out;
}
$ENV{TEST_NGINX_BAD_TOKENIZER_MODEL} = $bad_tok;

# A runtime that cannot be allocated: only where the kernel refuses an
# allocation larger than the machine (heuristic overcommit), never touching it.
our $overcommit = do { open my $f, '<', '/proc/sys/vm/overcommit_memory'; <$f> // '' };
chomp $overcommit;

workers(2);
no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("config",
        "location = /v1/chat/completions { llm_api chat; }\n"
        . "location = /health { llm_api health; }")
        unless defined $block->config;
});

run_tests();

__DATA__

=== TEST 1: KV memory larger than the machine is refused with the file and line
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=1048576 parallel=256 kv_memory=262144m;
llm_thread_pool llm;
--- must_die
--- error_log eval
qr/\[emerg\] .*llm_model "tiny": each worker needs \d+ MiB for it \(KV memory of 262144 MiB, kv_memory=, for parallel=256 sequences of up to ctx=1048576, and scratch\), so the models need \d+ MiB \(weights \d+ MiB, shared, plus 2 workers x \d+ MiB\), more than the \d+ MiB of this machine's memory; lower kv_memory= or ctx=, use kv=f16 or kv=q8_0, or fewer worker_processes in .*nginx\.conf:\d+/



=== TEST 2: llm_memory_limit counts every worker: 2 x 21 MiB do not fit 24 MiB (16 of KV, 3.7 of the suffix store of recent requests)
--- http_config
llm_memory_limit 24m;
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=2048 parallel=8;
llm_thread_pool llm;
--- must_die
--- error_log eval
qr/llm_model "tiny": each worker needs 21 MiB for it \(KV memory of 16 MiB, kv_memory=, for parallel=8 sequences of up to ctx=2048, and scratch\), so the models need 42 MiB \(weights 0 MiB, shared, plus 2 workers x 21 MiB\), more than the 24 MiB of llm_memory_limit; .* in .*nginx\.conf:\d+/



=== TEST 3: the same in 48 MiB starts, and says what it needs
--- http_config
llm_memory_limit 48m;
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=2048 parallel=8;
llm_thread_pool llm;
--- request
GET /health
--- error_code: 200
--- response_body_like: "status":"ok"
--- error_log
llm: the models need 42 MiB (weights 0 MiB, shared, plus 2 workers x 21 MiB) of 48 MiB
--- no_error_log
[emerg]
[alert]



=== TEST 4: the second model is the one named when it tips the total over
--- http_config
llm_memory_limit 46m;
llm_model small $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=256 parallel=2;
llm_model big $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=2048 parallel=8;
llm_thread_pool llm;
--- must_die
--- error_log eval
qr/llm_model "big": each worker needs 21 MiB .* more than the 46 MiB of llm_memory_limit; .* in .*nginx\.conf:\d+/



=== TEST 5: a tokenizer id past the model's vocabulary is refused at nginx -t
--- http_config
llm_model tiny $TEST_NGINX_BAD_TOKENIZER_MODEL;
llm_thread_pool llm;
--- must_die
--- error_log eval
qr/llm_model "tiny": tokenizer\.json has token id 300 \("<\|evil\|>"\) but the model's vocabulary has 256 ids \(vocab_size in config\.json\) in .*nginx\.conf:\d+/



=== TEST 6: a worker that cannot allocate a model answers 503 for it instead of exiting (its [emerg] "cannot run in this worker" is written at worker start)
--- skip_eval: 3: $::overcommit ne '0'
--- http_config
llm_memory_limit 1024g;
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=1048576 parallel=256 kv_memory=262144m;
llm_thread_pool llm;
--- request eval
["GET /health",
 "POST /v1/chat/completions\n" . '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}']
--- error_code eval
[503, 503]
--- response_body_like eval
['^\{"status":"unavailable","models":\[\{"id":"tiny","context_length":1048576,"parallel":256,"status":"unavailable"\}\]',
 '"message":"Model \'tiny\' is not loaded in this worker\."']



=== TEST 7: a ctx that kv_memory cannot hold is refused
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=4096 kv_memory=1m;
llm_thread_pool llm;
--- must_die
--- error_log eval
qr/\[emerg\] .*llm_model "tiny": a context of 4096 tokens needs more than the kv_memory of 1 MiB \(1024 tokens\) in .*nginx\.conf:\d+/
