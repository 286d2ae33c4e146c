package Test::Nginx::Socket;

# A small stand-in for the real Test::Nginx::Socket, compatible with the
# subset of its data-section format this project uses (see t/README.md).
# The same .t files run unchanged under the real module.
#
# Per test file: one loopback port, one server root t/servroot-<file>/.
# Per block: write conf/nginx.conf, (re)start nginx unless the running one
# has the identical configuration, send the request(s) repeat_each() times,
# and report TAP through Test::More with the real module's test names.

use strict;
use warnings;
use Exporter ();
use List::Util qw(shuffle);
use Scalar::Util qw(looks_like_number);
use Test::More ();
use Time::HiRes qw(sleep);

use Test::Nginx::Lite::Blocks ();
use Test::Nginx::Lite::Server ();
use Test::Nginx::Lite::Http qw(build_request send_request parse_response curl_request);

our $VERSION = '0.01';

our @EXPORT = qw(
    env_to_nginx is_str plan run_tests run_test blocks repeat_each
    config_preamble worker_connections master_process_enabled no_long_string
    workers master_on master_off log_level no_shuffle no_root_location use_hup
    server_name server_addr server_root html_dir server_port
    server_port_for_client timeout no_nginx_manager check_accum_error_log
    add_block_preprocessor bail_out add_cleanup_handler add_response_body_check
);

# ---- settings (same environment variables as the real module) ----

our $RepeatEach       = 1;
our $NoShuffle        = $ENV{TEST_NGINX_NO_SHUFFLE} || 0;
our $NoLongString     = 0;
our $NoRootLocation   = 0;
our $LogLevel         = $ENV{TEST_NGINX_LOG_LEVEL} || 'debug';
our $Timeout          = $ENV{TEST_NGINX_TIMEOUT} || 3;
our $Master           = ($ENV{TEST_NGINX_MASTER_PROCESS} // 'on') =~ /^(?:on|1)$/ ? 'on' : 'off';
our $Workers          = 1;
our $WorkerConns      = 64;
our $ServerName       = 'localhost';
our $ServerAddr       = '127.0.0.1';
our $ConfigPreamble   = '';
our $CheckAccumErrLog = $ENV{TEST_NGINX_CHECK_ACCUM_ERR_LOG} || 0;
our $UseHttp2         = $ENV{TEST_NGINX_USE_HTTP2} || 0;
our $ForceRestart     = $ENV{TEST_NGINX_FORCE_RESTART_ON_TEST} || 0;
our $Sleep            = $ENV{TEST_NGINX_SLEEP} || 0.015;
our @EnvToNginx;
our @BlockPreprocessors;
our @CleanupHandlers;
our @ResponseBodyChecks;

our $ServerPort = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT}
    || Test::Nginx::Lite::Server::pick_free_port();
$ENV{TEST_NGINX_SERVER_PORT} = $ServerPort;

our $ServRoot = $ENV{TEST_NGINX_SERVROOT} || do {
    (my $base = $0) =~ s{.*/}{};
    $base =~ s/\.t$//;
    $base =~ s/[^\w.-]+/_/g;
    "t/servroot-$base";
};
our $Server = Test::Nginx::Lite::Server->new(root => $ServRoot, port => $ServerPort);
$ServRoot = $Server->root;
$ENV{TEST_NGINX_SERVER_ROOT} = $ServRoot;

my $OwnerPid = $$;
my ($RawBlocks, $PrevConfig, $RunningConf, $ErrLogPos);

# The Test::More functions Test::Base hands to a script (no more, so a .t
# that works here also works under the real module).
our @TestMoreExports = qw(
    ok is isnt like unlike is_deeply cmp_ok skip todo_skip pass fail
    eq_array eq_hash eq_set plan can_ok isa_ok diag use_ok $TODO
);

sub import {
    my ($class, @plan) = @_;
    my $caller = caller;
    # Import arguments ('no_plan', tests => N, skip_all => ...) are the plan.
    eval "package $caller; Test::More->import(import => \\\@Test::Nginx::Socket::TestMoreExports, \@plan); 1"
        or die $@;
    Exporter::export(__PACKAGE__, $caller, grep { $_ ne 'plan' } @EXPORT);
}

# ---- configuration functions ----

sub repeat_each { $RepeatEach = shift if @_; $RepeatEach }
sub no_shuffle () { $NoShuffle = 1 }
sub no_long_string () { $NoLongString = 1 }
sub no_root_location () { $NoRootLocation = 1 }
sub log_level { $LogLevel = shift if @_; $LogLevel }
sub timeout { $Timeout = shift if @_; $Timeout }
sub workers { $Workers = shift if @_; $Workers }
sub worker_connections { $WorkerConns = shift if @_; $WorkerConns }
sub master_on () { $Master = 'on' }
sub master_off () { $Master = 'off' }
sub master_process_enabled { $Master = $_[0] ? 'on' : 'off' if @_; $Master }
sub config_preamble ($) { $ConfigPreamble = shift }
sub server_name { $ServerName = shift if @_; $ServerName }
sub server_addr { $ServerAddr = shift if @_; $ServerAddr }
sub server_root () { $ServRoot }
sub html_dir () { $Server->html_dir }
sub server_port { $ServerPort }
sub server_port_for_client { $ServerPort }
sub check_accum_error_log () { $CheckAccumErrLog = 1 }
sub use_hup () { }            # reloads are not emulated; nginx restarts instead
sub no_nginx_manager () { }
sub add_block_preprocessor (&) { unshift @BlockPreprocessors, shift }
sub add_cleanup_handler ($) { unshift @CleanupHandlers, shift }
sub add_response_body_check ($) { push @ResponseBodyChecks, shift }
sub plan { Test::More::plan(@_) }

sub env_to_nginx {
    die "env_to_nginx: no arguments specified\n" unless @_;
    for my $v (@_) {
        die "env_to_nginx: bad argument value: $v\n" if $v !~ /^[A-Za-z_]/ || $v =~ /\n/;
        push @EnvToNginx, $v;
    }
}

sub is_str {
    my ($got, $expected, $desc) = @_;
    return Test::More::like($got, $expected, $desc) if ref $expected eq 'Regexp';
    return Test::More::is($got, $expected, $desc);
}

sub bail_out {
    cleanup();
    Test::More::BAIL_OUT(join '', @_);
}

# ---- blocks ----

sub _raw_blocks {
    $RawBlocks //= Test::Nginx::Lite::Blocks::select_blocks(
        Test::Nginx::Lite::Blocks::parse_blocks(Test::Nginx::Lite::Blocks::data_of_script($0)));
    return @$RawBlocks;
}

# Scalar context: how many blocks will run (filters not run yet, as in
# Test::Base, so `plan` may come before the variables sections use).
# List context: the blocks, filtered.  An argument keeps only blocks
# that have that section.
sub blocks {
    my ($sect) = @_;
    my @b = _raw_blocks();
    @b = grep { $_->_has_raw($sect) } @b if defined $sect;
    return scalar @b unless wantarray;
    $_->run_filters for @b;
    return @b;
}

sub run_tests () {
    my @blocks = blocks();
    @blocks = shuffle @blocks unless $NoShuffle;
    for my $block (@blocks) {
        $_->($block) for @BlockPreprocessors;
        $block->set_value('name', "$0 " . $block->name);
        run_test($block);
    }
    cleanup();
}

sub cleanup {
    return unless $$ == $OwnerPid;
    $_->() for @CleanupHandlers;
    $Server->stop;
    undef $RunningConf;
}

END { cleanup() if $Server }

for my $sig (qw(INT TERM HUP)) {
    $SIG{$sig} = sub { cleanup(); exit 130 };
}

# ---- one block ----

sub parse_time {
    my ($t) = @_;
    return undef unless defined $t;
    $t =~ s/^\s+|\s+$//g;
    return $1 / 1000 if $t =~ /^([\d.]+)ms$/;
    return $1 if $t =~ /^([\d.]+)s?$/;
    return $t;
}

sub use_http2 {
    my ($block) = @_;
    return 0 if defined $block->no_http2;
    return defined $block->http2 || $UseHttp2;
}

sub expand_env {
    my ($text, $name, $ports) = @_;
    my $out = eval { Test::Nginx::Lite::Server::expand_env($text, $ports) };
    die "$name - $@" if $@;
    return $out;
}

sub _user_files {
    my ($block, $ports) = @_;
    my $files = $block->user_files;
    return [] unless defined $files;
    return $files if ref $files eq 'ARRAY';
    my (@out, $cur);
    for my $line (split /^/, $files) {
        if ($line =~ /^>>> (\S+)/) {
            push @out, $cur if $cur;
            $cur = [ $1, '' ];
        } elsif ($cur) {
            $cur->[1] .= $line;
        }
    }
    push @out, $cur if $cur;
    $_->[1] = expand_env($_->[1], $block->name, $ports) for @out;
    return \@out;
}

sub _render_conf {
    my ($block, $ports) = @_;
    my $name = $block->name;
    my $config = $block->config;
    $config = $PrevConfig unless defined $config;
    $PrevConfig = $config;
    $Server->{log_level} = $LogLevel;
    $Server->{master_process} = $Master;
    $Server->{workers} = $Workers;
    $Server->{worker_connections} = $WorkerConns;
    $Server->{env} = [@EnvToNginx];
    $Server->{stop_timeout} = $Timeout;
    return $Server->render_conf(
        main_config      => expand_env(scalar $block->main_config, $name, $ports),
        http_config      => expand_env(scalar $block->http_config, $name, $ports),
        post_main_config => expand_env(scalar $block->post_main_config, $name, $ports),
        config           => expand_env(($ConfigPreamble // '') . ($config // ''), $name, $ports),
        http2            => use_http2($block),
        no_root_location => $NoRootLocation,
        log_level        => $block->log_level || $LogLevel,
        server_name      => $block->server_name // $ServerName,
    );
}

sub _fresh_root {
    my ($conf, $files) = @_;
    $Server->stop;
    undef $RunningConf;
    $Server->setup_root;
    $Server->write_file(@$_) for @$files;
    $Server->write_conf($conf);
}

sub canon_version { Test::Nginx::Lite::Server::canon_version(@_) }
sub nginx_version { $Server->nginx_version }

# One "OP X.Y.Z" bound of skip_nginx / skip_nginx2 against the nginx here.
# In an --- http2 block a lower bound at or below 1.25.1 never holds: the
# real module needs it because it writes `http2 on;` (new in 1.25.1), while
# this runner writes `listen ... http2` on older nginx and runs the block.
sub _version_holds {
    my ($block, $op, @v) = @_;
    my $ver = canon_version(@v);
    return 0 if use_http2($block) && $op =~ /^</
        && $ver <= $Test::Nginx::Lite::Server::Http2DirectiveVersion;
    my $have = nginx_version();
    return $op eq '<'  ? $have <  $ver : $op eq '<=' ? $have <= $ver
         : $op eq '>'  ? $have >  $ver : $have >= $ver;
}

# (number of checks, reason) when the block is to be skipped, else ().
# Same sections and syntax as the real module: skip_eval (`N: perl code`,
# its value taken in scalar context), skip_nginx (`N: OP X.Y.Z[: reason]`)
# and skip_nginx2 (`N: OP X.Y.Z and|or OP X.Y.Z[: reason]`).
sub _should_skip {
    my ($block) = @_;
    my $name = $block->name;
    my $v = qr/([<>]=?)\s*(\d+)\.(\d+)\.(\d+)/;
    if (defined(my $skip = $block->skip_eval)) {
        my ($n, $code) = $skip =~ /^\s*(\d+)\s*:\s*(.*)$/s
            or bail_out("$name - bad --- skip_eval (want 'N: perl code')");
        my $yes = eval { Test::Nginx::Lite::Block::_eval_code($code, "$name skip_eval") };
        bail_out("$name - skip_eval - failed to eval the Perl code \"$code\": $@") if $@;
        return ($n, 'skip_eval') if $yes;
    }
    if (defined(my $skip = $block->skip_nginx)) {
        my ($n, @c) = $skip =~ /^\s*(\d+)\s*:\s*$v(?:\s*:\s*(.*))?\s*$/s
            or bail_out("$name - Invalid --- skip_nginx spec: $skip");
        my $why = $c[4] || "nginx version $c[0] $c[1].$c[2].$c[3]";
        return ($n, $why) if _version_holds($block, @c[0 .. 3]);
    } elsif (defined(my $skip2 = $block->skip_nginx2)) {
        my ($n, @c) = $skip2 =~ /^\s*(\d+)\s*:\s*$v\s*(or|and)\s*$v(?:\s*:\s*(.*))?\s*$/s
            or bail_out("$name - Invalid --- skip_nginx2 spec: $skip2");
        my ($one, $two) = (_version_holds($block, @c[0 .. 3]), _version_holds($block, @c[5 .. 8]));
        my $yes = $c[4] eq 'or' ? ($one || $two) : ($one && $two);
        return ($n, $c[9] || 'various reasons') if $yes;
    }
    return;
}

sub run_test {
    my ($block) = @_;
    my $name = $block->name;
    return if defined $block->SKIP;

    if (my ($n, $why) = _should_skip($block)) {
        SKIP: { Test::More::skip("$name - $why", $n * $RepeatEach) }
        return;
    }

    my (%ports, $conf, $files);
    eval { $conf = _render_conf($block, \%ports); $files = _user_files($block, \%ports); 1 }
        or do { Test::More::fail($@); return };

    if (defined $block->must_die) {
        _run_must_die($block, $conf, $files);
        return;
    }

    # A block without --- config keeps the running nginx (as the real module
    # does); otherwise reuse it only for an identical configuration, and not
    # when the block looks for messages nginx may have logged at startup.
    my $keep = !defined $block->config && defined $RunningConf;
    my $reuse = $Server->is_running && defined $RunningConf
        && ($keep || (!$ForceRestart && $RunningConf eq $conf && !defined $block->error_log));
    if ($reuse) {
        $Server->write_file(@$_) for @$files;
        $ErrLogPos = $Server->error_log_size;
    } else {
        _fresh_root($conf, $files);
        # As in the real module, an nginx that cannot start ends the run
        # (no later block of this file could pass against it either).
        if (my $err = $Server->start) {
            my ($why, $tail) = split /\n/, $err, 2;
            Test::More::diag("error.log:\n$tail") if length($tail // '');
            bail_out("$name - Cannot start nginx using command \"" . join(' ', $Server->command)
                     . "\" ($why).");
        }
        $RunningConf = $conf;
        $ErrLogPos = 0;
    }
    $ErrLogPos = 0 if $CheckAccumErrLog;

    my @reqs = _requests($block) or return;
    my $need_array = @reqs > 1;
    my $timeout = parse_time(scalar $block->timeout) // $Timeout;
    for my $rep (0 .. $RepeatEach - 1) {
        for my $idx (0 .. $#reqs) {
            _one_request($block, $reqs[$idx], $idx, $rep, $need_array, $timeout);
            if ($idx < $#reqs) {
                sleep parse_time(scalar $block->wait) if $block->wait;
                check_error_log($block, $rep);
            }
        }
        sleep parse_time(scalar $block->wait) if $block->wait;
        check_error_log($block, $rep);
    }
}

sub _run_must_die {
    my ($block, $conf, $files) = @_;
    my $name = $block->name;
    my $expect = $block->must_die;
    for my $rep (0 .. $RepeatEach - 1) {
        _fresh_root($conf, $files);
        my ($status, $why) = $Server->run_until_exit($Server->{start_timeout});
        if (!defined $status) {
            Test::More::fail("$name - die as expected ($why)");
        } elsif ($status & 127) {
            Test::More::fail("$name - nginx killed by signal " . ($status & 127));
        } elsif (looks_like_number($expect)) {
            Test::More::is($status >> 8, $expect, "$name - die with the expected exit code");
        } else {
            Test::More::isnt($status, 0, "$name - die as expected");
        }
        $ErrLogPos = 0;
        check_error_log($block, $rep);
    }
}

# The request(s) of a block as raw HTTP/1.x bytes.
sub _requests {
    my ($block) = @_;
    my $name = $block->name;
    my $raw = $block->raw_request;
    if (defined $raw) {
        return (ref $raw eq 'ARRAY' ? join('', @$raw) : $raw);
    }
    my $req = $block->request;
    if (!defined $req) {
        Test::More::fail("$name - no --- request section");
        return;
    }
    my $more = $block->more_headers // '';
    my @list = ref $req eq 'ARRAY' ? @$req : ($req);
    my @out;
    for my $i (0 .. $#list) {
        my $hdr = ref $more eq 'ARRAY' ? $more->[$i] : $more;
        my $bytes = eval { build_request($list[$i], $hdr, 'close') };
        if (!defined $bytes) {
            Test::More::fail("$name - $@");
            return;
        }
        push @out, $bytes;
    }
    return @out;
}

sub _indexed {
    my ($name, $value, $idx, $need_array) = @_;
    if (ref $value eq 'ARRAY') {
        return $value->[$idx];
    }
    die "$name - several requests were sent, so the expected results must be arrays too\n"
        if $need_array && defined $value;
    return $value;
}

sub _one_request {
    my ($block, $bytes, $idx, $rep, $need_array, $timeout) = @_;
    my $name = $block->name;
    my $head_req = $bytes =~ /^\s*HEAD\s/ ? 1 : 0;
    my ($reply, $err, $timed_out);
    if (use_http2($block)) {
        ($reply, $err, $timed_out) = curl_request($ServerAddr, $ServerPort, $bytes, $timeout,
                                                  $Server->html_dir . '/curl.data.bin');
    } else {
        ($reply, $err, $timed_out) = send_request($ServerAddr, $ServerPort, $bytes, $timeout);
    }
    Test::More::fail("$name - $err") if $err;
    if ($timed_out && !defined $block->abort) {
        Test::More::fail("ERROR: client socket timed out - $name");
    }
    return if defined $block->ignore_response;

    my ($res, $raw_headers, $perr) = parse_response($reply, $head_req, $timed_out);
    if ($perr && length $reply) {
        Test::More::fail("$name - invalid response: $perr");
    }
    eval {
        check_error_code($block, $res, $idx, $need_array);
        check_raw_response_headers($block, $raw_headers, $idx, $need_array);
        check_response_headers($block, $res, $raw_headers, $idx, $need_array);
        check_response_body($block, $res, $idx, $rep, $need_array);
        1;
    } or Test::More::fail($@);
}

# ---- checks (names as in the real Test::Nginx::Socket) ----

sub check_error_code {
    my ($block, $res, $idx, $need_array) = @_;
    my $name = $block->name;
    my $code = ($res && $res->code) || '';
    if (defined $block->error_code_like) {
        my $pat = _indexed($name, scalar $block->error_code_like, $idx, $need_array);
        Test::More::like($code, qr/$pat/sm, "$name - status code ok");
    } elsif (defined $block->error_code) {
        Test::More::is($code, _indexed($name, scalar $block->error_code, $idx, $need_array),
                       "$name - status code ok");
    } else {
        Test::More::is($code, 200, "$name - status code ok");
    }
}

sub check_raw_response_headers {
    my ($block, $raw, $idx, $need_array) = @_;
    my $name = $block->name;
    if (defined $block->raw_response_headers_like) {
        my $pat = _indexed($name, scalar $block->raw_response_headers_like, $idx, $need_array);
        Test::More::like($raw, qr/$pat/s, "$name - raw resp headers like");
    }
    if (defined $block->raw_response_headers_unlike) {
        my $pat = _indexed($name, scalar $block->raw_response_headers_unlike, $idx, $need_array);
        Test::More::unlike($raw, qr/$pat/s, "$name - raw resp headers unlike");
    }
}

# "Name: value" lines (in order); "!Name" means the header must be absent.
sub parse_headers {
    my ($text) = @_;
    my @out;
    for my $line (split /\n/, $text // '') {
        $line =~ s/^\s+|\s+$//g;
        next unless length $line;
        if ($line =~ s/^!\s*//) {
            push @out, [ $line, undef ];
        } else {
            my ($k, $v) = split /\s*:\s*/, $line, 2;
            push @out, [ $k, $v // '' ];
        }
    }
    return @out;
}

sub check_response_headers {
    my ($block, $res, $raw, $idx, $need_array) = @_;
    my $name = $block->name;
    if (defined $block->response_headers) {
        for my $h (parse_headers(_indexed($name, scalar $block->response_headers, $idx, $need_array))) {
            my ($key, $val) = @$h;
            if (!defined $val) {
                Test::More::unlike($raw, qr/^\s*\Q$key\E\s*:/msi,
                                   "$name - header $key not present in the raw headers");
                next;
            }
            $val =~ s/\$ServerPort\b/$ServerPort/g;
            $val =~ s/\$ServerPortForClient\b/$ServerPort/g;
            my $got = $res ? $res->header($key) : undef;
            Test::More::is($got // '', $val, "$name - header $key ok");
        }
    } elsif (defined $block->response_headers_like) {
        for my $h (parse_headers(_indexed($name, scalar $block->response_headers_like, $idx, $need_array))) {
            my ($key, $val) = @$h;
            my $got = $res ? $res->header($key) : undef;
            Test::More::like($got // '', qr/^$val$/, "$name - header $key like ok");
        }
    }
}

sub _summary {
    my ($s) = @_;
    return '' unless defined $s;
    $s =~ s/^\s+|\s+$//g;
    $s =~ s/\s+/ /g;
    $s = substr($s, 0, 200) . '...' if length $s > 200;
    return $s;
}

sub check_response_body {
    my ($block, $res, $idx, $rep, $need_array) = @_;
    my $name = $block->name;
    my $content = $res ? $res->content : undef;
    if (defined $block->response_body) {
        my $expected = _indexed($name, scalar $block->response_body, $idx, $need_array);
        if (defined $expected && !ref $expected) {
            $expected =~ s/\$ServerPort\b/$ServerPort/g;
            $expected =~ s/\$ServerPortForClient\b/$ServerPort/g;
        }
        if (ref $expected) {
            Test::More::like($content, $expected,
                "$name - response_body - like (repeated req $rep, req $idx)");
        } else {
            Test::More::is($content, $expected,
                "$name - response_body - response is expected (repeated req $rep, req $idx)");
        }
    } else {
        # Both when a block has both (the real module checks only the
        # _like one then; see t/README.md).
        for my $type (qw(like unlike)) {
            my $pat = $block->get_value("response_body_$type");
            next unless defined $pat;
            $pat = _indexed($name, $pat, $idx, $need_array);
            $pat =~ s/\$ServerPort\b/$ServerPort/g unless ref $pat;
            my $desc = "$name - response_body_$type - response is expected (" . _summary($content) . ")";
            if ($type eq 'like') {
                Test::More::like($content, qr/$pat/s, $desc);
            } else {
                Test::More::unlike($content, qr/$pat/s, $desc);
            }
        }
    }
    $_->($block, $content, $idx, $rep, 0) for @ResponseBodyChecks;
}

sub _patterns {
    my ($pats) = @_;
    return [] unless defined $pats;
    if (!ref $pats) {
        chomp $pats;
        return [ split /\n+/, $pats ];
    }
    return [$pats] if ref $pats eq 'Regexp';
    return [@$pats];
}

sub _fmt {
    my ($s) = @_;
    chomp $s;
    $s =~ s/"/\\"/g;
    $s =~ s/\r/\\r/g;
    $s =~ s/\n/\\n/g;
    return $s;
}

# The error log written since the last read (the whole log of this nginx
# after a restart).  Waits a moment first: nginx logs the log phase after
# it has closed the connection.
sub error_log_data {
    sleep $Sleep * 3;
    my ($lines, $end) = $Server->error_log_lines($ErrLogPos // 0);
    $ErrLogPos = $end unless $CheckAccumErrLog;
    return $lines;
}

sub _matches { my ($line, $pat) = @_; ref $pat ? $line =~ $pat : index($line, $pat) >= 0 }

sub check_error_log {
    my ($block, $rep) = @_;
    my $name = $block->name;
    my $want = _patterns(scalar $block->error_log);
    my $dont = _patterns(scalar $block->no_error_log);
    my $lines = error_log_data();

    # --- grep_error_log: what the pattern matched, one line per match.
    my $grep = $block->grep_error_log;
    if (defined $grep) {
        $grep = $grep->[$rep] if ref $grep eq 'ARRAY';
        my $expected = $block->grep_error_log_out;
        $expected = $expected->[$rep] if ref $expected eq 'ARRAY';
        my $got = '';
        for my $line (@$lines) {
            my $m = ref $grep ? ($line =~ $grep ? $& : undef)
                  : (index($line, $grep) >= 0 ? $grep : undef);
            $got .= "$m\n" if defined $m && $m !~ /\n/;
        }
        if (ref $expected eq 'Regexp') {
            Test::More::like($got, $expected, "$name - grep_error_log_out (req $rep)");
        } else {
            Test::More::is($got, $expected, "$name - grep_error_log_out (req $rep)");
        }
    }

    for my $pat (@$want) {
        if (grep { _matches($_, $pat) } @$lines) {
            Test::More::pass("$name - pattern \"$pat\" matches a line in error.log (req $rep)");
        } else {
            Test::More::fail("$name - pattern \"$pat\" should match a line in error.log (req $rep)");
        }
    }
    for my $pat (@$dont) {
        my $p = _fmt("$pat");
        my ($i) = grep { _matches($lines->[$_], $pat) } 0 .. $#$lines;
        if (defined $i) {
            my $last = $i + 9 < $#$lines ? $i + 9 : $#$lines;
            Test::More::fail("$name - pattern \"$p\" should not match any line in error.log "
                . "but matches line \"" . _fmt($lines->[$i]) . "\" (req $rep)\n"
                . join('', @$lines[$i + 1 .. $last]));
        } else {
            Test::More::pass("$name - pattern \"$p\" does not match a line in error.log (req $rep)");
        }
    }

    # A crashed worker fails the block even when its answers looked right
    # (the real module only warns about it).
    for my $line (grep { /exited on signal \d+/ } @$lines) {
        Test::More::fail("$name - nginx process crashed: " . _fmt($line));
    }

    # Serious messages nobody asked about are worth a warning.
    return if defined $block->must_die;
    my $all = join "\n", map { "$_" } @$want, @$dont;
    for my $level (qw(alert crit emerg)) {
        next if index($all, "[$level") >= 0;
        for my $line (grep { /\[$level\]/ } @$lines) {
            warn "WARNING: $name - " . _fmt($line) . "\n";
        }
    }
}

1;
