# The disk tier of the prefix cache (llm_kv_cache_path) across reloads: a
# prompt's full KV blocks are written to files as they fill, a sequence's
# partial last block when it ends; after nginx -s reload the new worker reads
# them back instead of computing them, up to the head of the block the prompt
# ends in (cached_tokens says how many) and answers token for token as the cold run
# did.  A file written for other weights (here the same weights with f16 KV)
# or a corrupted one is not trusted: it is logged, the prompt is computed,
# the answer is unchanged.  Q8_0 KV blocks (kv=q8_0) go to disk and come back
# the same way, in a directory of their own.  Nothing here measures time: the waits are for
# states the server reports.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client qw(get_json wait_until);

my $srv = start_nginx(
    main_config => 'thread_pool llm threads=1;',
    http_config => <<'EOC',
llm_model f32 $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 ctx=1024;
llm_model f16 $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 ctx=1024 kv=f16;
llm_model q8 $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 ctx=1024 kv=q8_0;
llm_kv_cache_path kv_cache max_size=64m;
llm_thread_pool llm;
EOC
    config => 'location = /v1/chat/completions { llm_api chat; }
               location = /health { llm_api health; }',
);
my $port = $srv->port;
my $json = JSON::PP->new->canonical;
my $system = join ' ', ('You are a careful assistant for a shop that sells tools and parts.') x 6;

sub chat {
    my ($model) = @_;
    my $c = Test::LLM::Client->post($port, '/v1/chat/completions', $json->encode({
        model => $model, max_tokens => 12, temperature => 0, logit_bias => { 2 => -100 },
        messages => [{ role => 'system', content => $system },
                     { role => 'user', content => 'Which hammer should I buy?' }],
    }));
    my ($status, undef, $body) = $c->finish(60);
    my $r = eval { JSON::PP::decode_json($body) } // {};
    is($status, 200, "$model: 200") or diag($body);
    return {
        text   => $r->{choices}[0]{message}{content} // '',
        prompt => $r->{usage}{prompt_tokens} // 0,
        cached => $r->{usage}{prompt_tokens_details}{cached_tokens} // -1,
    };
}

sub health {
    my ($id) = @_;
    my $h = get_json($port, '/health') // { models => [] };
    my ($m) = grep { $_->{id} eq $id } @{ $h->{models} };
    return $m // {};
}

sub disk { health($_[0])->{kv_disk} // {} }

# A reload, then the old worker gone (it writes what it still holds as it exits).
sub reload {
    my ($what) = @_;
    my $old = (get_json($port, '/health') // {})->{pid} // 0;
    kill 'HUP', $srv->pid;
    ok(wait_until(sub { my $p = (get_json($port, '/health') // {})->{pid}; $p && $p != $old }, 60),
       "$what: a new worker answers");
    ok(wait_until(sub { !kill 0, $old }, 60), "$what: the old worker has exited");
}

my $dir = $srv->root . '/kv_cache';
ok(-d $dir, 'nginx made the llm_kv_cache_path directory');
unlink glob("$dir/*/*/*.kv"), glob("$dir/*/*/*.part");    # an earlier run's

# ---- cold runs ----
my %cold = map { $_ => chat($_) } qw(f32 f16 q8);
is($cold{$_}{cached}, 0, "$_: the first request computes its whole prompt") for qw(f32 f16 q8);
is(health('q8')->{kv_type}, 'q8_0', '/health: kv_type q8_0');
my $full = int(($cold{f32}{prompt} - 1) / 16) * 16;   # one token is always computed
cmp_ok($full, '>=', 64, "the prompt has $full tokens in whole blocks");
for my $m (qw(f32 f16 q8)) {
    ok(wait_until(sub { (disk($m)->{blocks_written} // 0) >= $full / 16 }, 60),
       "$m: its blocks are written (" . (disk($m)->{blocks_written} // 0) . ')');
}
my @dirs = grep { -d } glob("$dir/*");
is(scalar @dirs, 3, 'a directory per model fingerprint and KV type');

# ---- reload: read back ----
# the whole blocks, then the head of the block the prompt ends in: the newest block after its
# prefix on disk (a full one holding the answer's first tokens, or the sequence's partial last one)
reload('reload');
my $upto = $cold{f32}{prompt} - 1;
my $warm = chat('f32');
is($warm->{cached}, $upto, "after the reload $upto prompt tokens are read back from disk");
is($warm->{text}, $cold{f32}{text}, 'the answer equals the cold run token for token');
my $d = disk('f32');
is($d->{tokens_read}, $upto, '/health: kv_disk.tokens_read');
is($d->{blocks_read}, $full / 16 + 1, '/health: kv_disk.blocks_read (the whole blocks and one head)');
is($d->{files_rejected}, 0, '/health: no file rejected');
cmp_ok($d->{bytes}, '>', 0, "/health: kv_disk.bytes $d->{bytes}");
my $q8 = chat('q8');
is($q8->{cached}, $upto, "q8_0 KV: $upto prompt tokens read back from disk");
is($q8->{text}, $cold{q8}{text}, 'q8_0 KV: the answer equals its cold run token for token');
is(disk('q8')->{blocks_read}, $full / 16 + 1, 'q8_0 KV: /health kv_disk.blocks_read');

# ---- foreign and corrupted files ----
# the three directories hold the same block names (the names hash the tokens);
# by size: the q8_0 files, the f16 ones, the f32 ones
my %files;
for my $sub (@dirs) {
    my @f = sort glob("$sub/*/*.kv");
    $files{-s $f[0]} = { map { my $n = $_; $n =~ s{.*/([^/]+/[^/]+)$}{$1}; ($n => $_) } @f };
}
my (undef, $small, $big) = sort { $a <=> $b } keys %files;
my ($f16, $f32) = @files{$small, $big};
my $copied = 0;
for my $name (keys %$f32) {
    next unless $f16->{$name};
    system('cp', $f16->{$name}, $f32->{$name}) == 0 and $copied++;
}
cmp_ok($copied, '>=', $full / 16, "the f32 model's files replaced by the f16 model's ($copied)");
my $flipped = 0;
for my $path (values %$f16) {
    open(my $fh, '+<:raw', $path) or next;
    seek($fh, 200, 0); read($fh, my $byte, 1);
    seek($fh, 200, 0); print $fh chr(ord($byte) ^ 0x40);
    close $fh;
    $flipped++;
}
cmp_ok($flipped, '>=', $full / 16, "a byte flipped in each of the f16 model's files ($flipped)");

my $pos = $srv->error_log_size;
reload('reload with bad files');
for my $m (qw(f32 f16)) {
    my $r = chat($m);
    is($r->{cached}, 0, "$m: no block of a bad file is used");
    is($r->{text}, $cold{$m}{text}, "$m: the answer is unchanged");
    is(disk($m)->{files_rejected}, 1, "$m: /health counts the rejected file");
}
my @log = @{ ($srv->error_log_lines($pos))[0] };
ok((grep { /\[warn\].*"f32": the KV disk tier ignored a file: .*written by another model/ } @log),
   'the log names the foreign file');
ok((grep { /\[warn\].*"f16": the KV disk tier ignored a file: .*checksum mismatch/ } @log),
   'the log names the corrupted file');

my @bad = grep { /\[(?:alert|crit|emerg)\]|exited on signal/ } @{ ($srv->error_log_lines(0))[0] };
ok(!@bad, 'no [alert], [crit], [emerg] or crash') or diag(join '', @bad[0 .. ($#bad < 5 ? $#bad : 5)]);
$srv->stop;
done_testing();
