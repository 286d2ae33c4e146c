# Weights rewritten in place under a running nginx (issue 13 item 14):
# the mapping of such a file may fault (SIGBUS) or hold other weights, so
# the module notices the change before using it: requests fail with a
# message naming the file and an [alert] says to reload; a worker started
# after such a crash serves 503 for the model instead of crashing again;
# a reload maps the files anew and serves again (docs/operations.md).
#
# Plain Test::More against one nginx (the steps depend on each other).
use strict;
use warnings;
use Test::More;
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use Time::HiRes qw(sleep time);
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::Nginx::Lite::Http qw(build_request send_request parse_response);

my $fixture = "$ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32";
my $dir = tempdir('llm-model-update-XXXXXX', TMPDIR => 1, CLEANUP => 1);
for my $f (qw(config.json generation_config.json tokenizer.json tokenizer_config.json)) {
    symlink("$fixture/$f", "$dir/$f") or die "symlink $f: $!";
}
copy("$fixture/model.safetensors", "$dir/model.safetensors") or die "copy: $!";
my $weights = "$dir/model.safetensors";

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => "llm_model tiny $dir;\nllm_thread_pool llm;",
    config      => 'location = /v1/completions { llm_api completions; }',
);

sub complete {
    my $raw = build_request("POST /v1/completions\n" . '{"prompt": "ab", "max_tokens": 2}',
                            "Content-Type: application/json");
    my ($reply) = send_request('127.0.0.1', $srv->port, $raw, 30);
    my ($res) = parse_response($reply);
    return $res ? ($res->code, $res->content) : (0, '');
}

sub log_since {
    my ($pos) = @_;
    my ($lines) = $srv->error_log_lines($pos);
    return join '', @$lines;
}

# Waits (up to 30 s) until $cond->() is true; returns its last value.
sub eventually {
    my ($cond) = @_;
    my $deadline = time + 30;
    my $v;
    until (($v = $cond->()) || time > $deadline) { sleep 0.05 }
    return $v;
}

sub workers {
    my $master = $srv->pid;
    my @w;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open my $fh, '<', $stat or next;
        my $line = <$fh> // '';
        push @w, $1 if $line =~ /^(\d+) \(.*?\) \S+ (\d+)/ && $2 == $master;
    }
    return @w;
}

my ($code, $body) = complete();
is($code, 200, 'the model serves before the update');

# the unsafe update: the same file rewritten in place (cp over it)
my $pos = $srv->error_log_size;
open my $fh, '+<', $weights or die "$weights: $!";
binmode $fh;
seek $fh, -4, 2;
print $fh "\x01\x02\x03\x04";
close $fh;
my $mtime = (stat $weights)[9] + 10;
utime $mtime, $mtime, $weights or die "utime: $!";

($code, $body) = complete();
is($code, 500, 'a request after the rewrite fails instead of reading the mapping');
like($body, qr/Generation failed: \Q$weights\E changed on disk since it was loaded: it was rewritten in place/,
     'the error names the file and the change');
my $log = log_since($pos);
like($log, qr/\[alert\].*llm_model "tiny": \Q$weights\E changed on disk.*every request for the model fails until nginx is reloaded/,
     'an alert says which file changed and what to do');
unlike($log, qr/exited on signal/, 'no worker crashed');

# a worker that crashed on the rewritten file (as with SIGBUS) is respawned:
# the new one refuses the model instead of crashing in a loop
my @old = workers();
is(scalar @old, 1, 'one worker');
$pos = $srv->error_log_size;
kill 'KILL', @old;
my @new = @{ eventually(sub { my @w = grep { $_ != $old[0] } workers(); @w ? \@w : undef }) || [] };
is(scalar @new, 1, 'the master respawned the worker');
ok(eventually(sub { log_since($pos) =~ /the model is not served until nginx is reloaded/ }),
   'the new worker says at start that the model changed on disk');
($code, $body) = complete();
is($code, 503, 'the respawned worker answers 503 for the model');
like($body, qr/Model 'tiny' is not loaded in this worker/, '... in the protocol shape');
ok(kill(0, $new[0]), 'and keeps running');

# the way out: a reload loads the file as it now is
$pos = $srv->error_log_size;
kill 'HUP', $srv->pid;
ok(eventually(sub { (complete())[0] == 200 }), 'after a reload the model serves again');
unlike(log_since($pos), qr/exited on signal/, 'no worker crashed during the reload');

$srv->stop;
done_testing();
