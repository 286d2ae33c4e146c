# The disk tier of the prefix cache (llm_kv_cache_path) shared by two worker
# processes: both run the same prompt at once and write the same blocks (one
# file per block name; a temporary file renamed into place, never a partial
# or a duplicate file), and after nginx -s reload whichever new worker gets a
# request reads the blocks back and answers as the cold run did.  Nothing
# here measures time: the waits are for states the server reports.
use strict;
use warnings;
use Test::More;
use JSON::PP ();
use Test::Nginx::Lite::Node qw(start_nginx);
use Test::LLM::Client qw(get_json wait_until);

my $srv = start_nginx(
    workers     => 2,
    main_config => 'thread_pool llm threads=1;',
    http_config => <<'EOC',
llm_model m $TEST_NGINX_FIXTURES/models/qwen3_f32 parallel=2 ctx=1024;
llm_kv_cache_path kv_cache max_size=64m;
llm_thread_pool llm;
EOC
    config => 'location = /v1/chat/completions { llm_api chat; }
               location = /health { llm_api health; }',
);
my $port = $srv->port;
my $json = JSON::PP->new->canonical;
my $system = join ' ', ('You answer questions about a garden centre and its opening hours.') x 6;
my $body = $json->encode({
    model => 'm', max_tokens => 10, temperature => 0, logit_bias => { 2 => -100 },
    messages => [{ role => 'system', content => $system },
                 { role => 'user', content => 'When do you open on Sundays?' }],
});

sub finish {
    my ($c, $what) = @_;
    my ($status, undef, $b) = $c->finish(60);
    my $r = eval { JSON::PP::decode_json($b) } // {};
    is($status, 200, "$what: 200") or diag($b);
    return {
        text   => $r->{choices}[0]{message}{content} // '',
        prompt => $r->{usage}{prompt_tokens} // 0,
        cached => $r->{usage}{prompt_tokens_details}{cached_tokens} // -1,
    };
}

sub workers { my $m = $srv->pid; return grep { /\d/ } map { s/\s+//gr } `ps -o pid= --ppid $m` }

my $dir = $srv->root . '/kv_cache';
unlink glob("$dir/*/*/*.kv"), glob("$dir/*/*/*.part");    # an earlier run's
my @first = workers();
is(scalar @first, 2, 'two workers run');

# ---- the same prompt four times at once: both workers compute it and write its blocks ----
my @c = map { Test::LLM::Client->post($port, '/v1/chat/completions', $body) } 1 .. 4;
my @r = map { finish($c[$_], "concurrent request $_") } 0 .. 3;
my $full = int(($r[0]{prompt} - 1) / 16) * 16;
cmp_ok($full, '>=', 64, "the prompt has $full tokens in whole blocks");
is($_->{text}, $r[0]{text}, 'every answer is the same') for @r[1 .. 3];

my @files;
ok(wait_until(sub { @files = glob("$dir/*/*/*.kv"); @files >= $full / 16 }, 60),
   'the blocks are written once the requests ended (' . scalar(@files) . ' files)');
sleep 1;    # a second writer, if any, would have renamed by now
@files = glob("$dir/*/*/*.kv");
is(scalar @files, $full / 16, 'one file per block, whichever workers wrote it');
my @tmp = grep { !/\.(?:kv|part)$/ } glob("$dir/*/*/*");
is(scalar @tmp, 0, 'no temporary file left') or diag(join ' ', @tmp);

# ---- reload: both new workers may answer; each reads the blocks back ----
kill 'HUP', $srv->pid;
ok(wait_until(sub { my %old = map { $_ => 1 } @first; my @w = workers();
                    @w == 2 && !grep { $old{$_} } @w }, 60),
   'two new workers replace the old ones');
for my $i (1 .. 2) {
    my $r = finish(Test::LLM::Client->post($port, '/v1/chat/completions', $body), "after reload $i");
    # the whole blocks, then the head of the block the prompt ends in (its newest block on disk)
    is($r->{cached}, $r[0]{prompt} - 1, "after reload, request $i: all but the last prompt token cached (disk or memory)");
    is($r->{text}, $r[0]{text}, "after reload, request $i: the same answer");
}
my $h = get_json($port, '/health') // {};
is($h->{models}[0]{kv_disk}{files_rejected}, 0, '/health: no file rejected');

my @bad = grep { /\[(?:alert|crit|emerg)\]|exited on signal/ } @{ ($srv->error_log_lines(0))[0] };
ok(!@bad, 'no [alert], [crit], [emerg] or crash') or diag(join '', @bad[0 .. ($#bad < 5 ? $#bad : 5)]);
$srv->stop;
done_testing();
