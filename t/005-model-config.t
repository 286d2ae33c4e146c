# nginx -t refuses what cannot run (issue 13): a FIFO or other non-regular
# file in place of a model file fails at once (it used to block nginx -t
# forever), a chat template that does not compile is an error unless the
# model is declared chat=off, and llm_model options may not repeat.
use Test::Nginx::Socket 'no_plan';
use Test::LLM::Json qw(json_content_type);
use File::Temp qw(tempdir);
use JSON::PP ();
use POSIX qw(mkfifo);

my $fixture = "$ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32";
my @files = qw(config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json);

# A copy of the fixture model made of symlinks, with `replace` => sub {path}
# turning some files into something else.
sub model_dir {
    my (%replace) = @_;
    my $dir = tempdir('llm-model-config-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    for my $f (@files, keys %replace) {
        next if -e "$dir/$f";
        if ($replace{$f}) {
            $replace{$f}->("$dir/$f");
        } else {
            symlink("$fixture/$f", "$dir/$f") or die "symlink $f: $!";
        }
    }
    return $dir;
}

sub fifo { my $p = shift; mkfifo($p, 0644) or die "mkfifo $p: $!" }
sub write_file { my ($p, $text) = @_; open my $fh, '>', $p or die "$p: $!"; print $fh $text; close $fh }
sub config_with_template {
    my $tmpl = shift;
    return sub {
        write_file($_[0], JSON::PP->new->encode({ tokenizer_class => 'PreTrainedTokenizerFast',
            model_max_length => 256, chat_template => $tmpl }));
    };
}

$ENV{TEST_NGINX_FIFO_WEIGHTS} = model_dir('model.safetensors' => \&fifo);
$ENV{TEST_NGINX_FIFO_TOKENIZER} = model_dir('tokenizer.json' => \&fifo);
$ENV{TEST_NGINX_FIFO_CONFIG} = model_dir('config.json' => \&fifo);
$ENV{TEST_NGINX_FIFO_TOKENIZER_CONFIG} = model_dir('tokenizer_config.json' => \&fifo);
$ENV{TEST_NGINX_FIFO_TEMPLATE} = model_dir('tokenizer_config.json' => sub { write_file($_[0], '{}') },
                                           'chat_template.jinja' => \&fifo);
$ENV{TEST_NGINX_DIR_WEIGHTS} = model_dir('model.safetensors' => sub { mkdir $_[0] or die $! });
$ENV{TEST_NGINX_BAD_TEMPLATE} = model_dir('tokenizer_config.json'
    => config_with_template("{% for m in messages %}{{ m.content }}{% endfor"));

no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    json_content_type($block);
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("config",
        "location = /v1/chat/completions { llm_api chat; }\n"
        . "location = /v1/completions { llm_api completions; }")
        unless defined $block->config;
    $block->set_value("timeout", "20") unless defined $block->timeout;
});

run_tests();

__DATA__

=== TEST 1: a FIFO in place of the weights fails nginx -t at once, naming the file
--- http_config
llm_model tiny $TEST_NGINX_FIFO_WEIGHTS;
--- must_die
--- error_log eval
qr/llm_model "tiny": .*model\.safetensors is not a regular file \(a FIFO\) in .*nginx\.conf:\d+/



=== TEST 2: a FIFO in place of tokenizer.json
--- http_config
llm_model tiny $TEST_NGINX_FIFO_TOKENIZER;
--- must_die
--- error_log eval
qr/llm_model "tiny": tokenizer: .*tokenizer\.json is not a regular file \(a FIFO\)/



=== TEST 3: a FIFO in place of config.json
--- http_config
llm_model tiny $TEST_NGINX_FIFO_CONFIG;
--- must_die
--- error_log eval
qr/llm_model "tiny": .*config\.json is not a regular file \(a FIFO\)/



=== TEST 4: a FIFO in place of tokenizer_config.json
--- http_config
llm_model tiny $TEST_NGINX_FIFO_TOKENIZER_CONFIG;
--- must_die
--- error_log eval
qr/tokenizer_config\.json is not a regular file \(a FIFO\)/



=== TEST 5: a FIFO in place of chat_template.jinja
--- http_config
llm_model tiny $TEST_NGINX_FIFO_TEMPLATE;
--- must_die
--- error_log eval
qr/llm_model "tiny": .*chat_template\.jinja is not a regular file \(a FIFO\) \(add chat=off/



=== TEST 6: a directory in place of the weights
--- http_config
llm_model tiny $TEST_NGINX_DIR_WEIGHTS;
--- must_die
--- error_log eval
qr/model\.safetensors is not a regular file \(a directory\)/



=== TEST 7: a chat template that does not compile fails nginx -t and says how to opt out
--- http_config
llm_model tiny $TEST_NGINX_BAD_TEMPLATE;
--- must_die
--- error_log eval
qr/\[emerg\].*llm_model "tiny": chat template: line 1: .* \(add chat=off to serve only completions and embeddings\) in .*nginx\.conf:\d+/



=== TEST 8: with chat=off the same model serves completions and refuses chat
--- http_config
llm_model tiny $TEST_NGINX_BAD_TEMPLATE chat=off;
llm_thread_pool llm;
--- request eval
["POST /v1/completions\n{\"prompt\": \"ab\", \"max_tokens\": 1}",
 "POST /v1/chat/completions\n{\"max_tokens\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}"]
--- error_code eval
[200, 400]
--- response_body_like eval
["\"object\":\"text_completion\"", "has no chat template"]
--- no_error_log
[emerg]



=== TEST 9: a repeated llm_model option is an error, not a silent override
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 ctx=16 ctx=32;
--- must_die
--- error_log eval
qr/duplicate llm_model option "ctx=32" \("ctx=16" given before\) in .*nginx\.conf:\d+/



=== TEST 10: the same for any option
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 kv=f16 parallel=2 kv=f16;
--- must_die
--- error_log eval
qr/duplicate llm_model option "kv=f16"/



=== TEST 11: chat= takes on or off
--- http_config
llm_model tiny $TEST_NGINX_FIXTURES/models/qwen3_f32 chat=maybe;
--- must_die
--- error_log eval
qr/invalid llm_model option "chat=maybe"/
