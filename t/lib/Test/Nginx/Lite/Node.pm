package Test::Nginx::Lite::Node;

# Runs client scripts (node, or any TAP-printing command) against one
# long-lived nginx for a whole .t file:
#
#   use lib 't/lib';
#   use Test::Nginx::Lite::Node qw(run_node_tests);
#   run_node_tests(
#       scripts     => ['t/node/openai-chat.test.js'],
#       http_config => 'llm_model tiny $TEST_NGINX_MODEL_DIR;',
#       config      => 'location /v1/chat/completions { llm_api chat; }',
#   );
#
# The .t prints one TAP stream: each script is a subtest (its own TAP,
# indented) reported as "ok N - <script>" when it exits 0 with a plan, then
# one last test that nginx is still up with no [alert]/[crit]/[emerg] or
# crashed worker in its error log.  The scripts get LLM_BASE_URL (e.g.
# http://127.0.0.1:24567), TEST_NGINX_SERVER_PORT and LLM_ERROR_LOG.

use strict;
use warnings;
use Cwd qw(abs_path);
use Exporter 'import';
use File::Basename qw(dirname);
use POSIX ();

use Test::Nginx::Lite::Server ();

our @EXPORT_OK = qw(run_node_tests run_tap_scripts start_nginx);

my $NodeDir = abs_path(dirname(__FILE__) . '/../../../../node');

# start_nginx(config => ..., http_config => ..., main_config => ...,
#             post_main_config => ..., log_level => 'info', http2 => 0,
#             files => { 'name' => 'body' }, nginx_env => ['VAR'],
#             root => DIR, port => N, workers => N)
# Starts nginx with those sections laid out as Test::Nginx::Socket does
# ($TEST_NGINX_* expanded) and returns the running
# Test::Nginx::Lite::Server; dies with the error log's tail if it fails.
sub start_nginx {
    my (%o) = @_;
    (my $base = $0) =~ s{.*/}{};
    $base =~ s/\.t$//;
    $base =~ s/[^\w.-]+/_/g;
    my $srv = Test::Nginx::Lite::Server->new(
        root => $o{root} || $ENV{TEST_NGINX_SERVROOT} || "t/servroot-$base",
        port => $o{port} || $ENV{TEST_NGINX_SERVER_PORT}
                || Test::Nginx::Lite::Server::pick_free_port(),
        ($o{log_level} ? (log_level => $o{log_level}) : ()),
        ($o{workers} ? (workers => $o{workers}) : ()),
        env => $o{nginx_env} || [],
    );
    $ENV{TEST_NGINX_SERVER_PORT} = $srv->port;
    $ENV{TEST_NGINX_SERVER_ROOT} = $srv->root;
    my %ports;
    my %sect = map { $_ => Test::Nginx::Lite::Server::expand_env($o{$_}, \%ports) }
               qw(main_config http_config config post_main_config);
    $srv->setup_root;
    my $files = $o{files} || {};
    $srv->write_file($_, Test::Nginx::Lite::Server::expand_env($files->{$_}, \%ports))
        for sort keys %$files;
    $srv->write_conf($srv->render_conf(%sect, http2 => $o{http2}));
    my $err = $srv->start;
    die "nginx failed to start: $err" if $err;
    return $srv;
}

# Runs one command, printing its stdout indented by four spaces (a TAP
# subtest).  Returns (exit_status, plan_line_or_undef).
sub _run_subtest {
    my ($cmd, $env, $timeout) = @_;
    my $pid = open(my $from, '-|');
    die "fork failed: $!" unless defined $pid;
    if ($pid == 0) {
        POSIX::setpgid(0, 0);
        $ENV{$_} = $env->{$_} for keys %$env;
        exec @$cmd or do { print STDERR "cannot exec $cmd->[0]: $!\n"; POSIX::_exit(127) };
    }
    my $plan;
    my $timed_out = 0;
    local $| = 1;
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm $timeout;
        while (my $line = <$from>) {
            $plan //= $line if $line =~ /^1\.\.\d+/;
            print "    $line";
        }
        alarm 0;
        1;
    } or do {
        $timed_out = 1;
        kill 'KILL', -$pid;
    };
    close $from;
    my $status = $?;
    return (-1, $plan) if $timed_out;
    return ($status & 127 ? 128 + ($status & 127) : $status >> 8, $plan);
}

# run_tap_scripts(server => $srv, commands => [[cmd...], ...],
#                 names => [...], env => {...}, timeout => seconds)
# Prints the whole TAP stream (plan, one subtest per command, the nginx
# health check) and returns the number of failures.
sub run_tap_scripts {
    my (%o) = @_;
    my $srv = $o{server};
    my @cmds = @{ $o{commands} };
    my @names = @{ $o{names} || [ map { join ' ', @$_ } @cmds ] };
    my %env = (
        %{ $o{env} || {} },
        LLM_BASE_URL => $srv->base_url,
        TEST_NGINX_SERVER_PORT => $srv->port,
        LLM_ERROR_LOG => $srv->error_log,
    );
    local $| = 1;
    # a sanitized or valgrind build runs the same scripts several times slower:
    # its runner scales every script's allowance (LLM_NODE_TIMEOUT_SCALE)
    my $timeout = ($o{timeout} || 300) * ($ENV{LLM_NODE_TIMEOUT_SCALE} || 1);
    print '1..', scalar(@cmds) + 1, "\n";
    my $failed = 0;
    for my $i (0 .. $#cmds) {
        my ($rc, $plan) = _run_subtest($cmds[$i], \%env, $timeout);
        my $n = $i + 1;
        if ($rc == 0 && defined $plan && $plan =~ /^1\.\.0\s*#\s*skip\S*\s*(.*)/i) {
            print "ok $n - $names[$i] # skip $1\n";
        } elsif ($rc == 0 && defined $plan) {
            print "ok $n - $names[$i]\n";
        } else {
            $failed++;
            print "not ok $n - $names[$i]\n";
            print STDERR '#   ', ($rc == -1 ? "timed out after ${timeout}s"
                                   : "exited with status $rc"), defined $plan ? '' : ', no TAP plan',
                         "\n";
        }
    }
    my ($lines) = $srv->error_log_lines(0);
    my @bad = grep { /\[(?:alert|crit|emerg)\]/ || /exited on signal/ } @$lines;
    my $alive = $srv->is_running;
    my $n = @cmds + 1;
    if ($alive && !@bad) {
        print "ok $n - nginx stayed up, no [alert]/[crit]/[emerg] in its error log\n";
    } else {
        $failed++;
        print "not ok $n - nginx stayed up, no [alert]/[crit]/[emerg] in its error log\n";
        print STDERR "#   nginx is no longer running\n" unless $alive;
        print STDERR "#   $_" for @bad[0 .. ($#bad < 9 ? $#bad : 9)];
    }
    return $failed;
}

# run_node_tests(scripts => [...], <start_nginx options>, env => {...},
#                timeout => seconds per script, install => 1)
# Installs the npm packages if needed (t/node/install.sh), starts nginx,
# runs every script with node, stops nginx and exits with the number of
# failures.  Skips the whole file when node is not installed.
sub run_node_tests {
    my (%o) = @_;
    my @scripts = @{ $o{scripts} || [ $o{script} ] };
    local $| = 1;
    if (system('node --version >/dev/null 2>&1') != 0) {
        print "1..0 # SKIP node is not installed\n";
        exit 0;
    }
    if ($o{install} // 1) {
        if (system("$NodeDir/install.sh") != 0) {
            print "1..1\nnot ok 1 - t/node/install.sh installs the npm packages\n";
            exit 1;
        }
    }
    my $srv = eval { start_nginx(%o) };
    if (!$srv) {
        print "1..1\nnot ok 1 - nginx starts\n";
        print STDERR map { "# $_\n" } split /\n/, $@;
        exit 1;
    }
    my $failed = run_tap_scripts(
        server => $srv,
        commands => [ map { [ 'node', $_ ] } @scripts ],
        names => \@scripts,
        env => $o{env},
        timeout => $o{timeout},
    );
    $srv->stop;
    exit($failed > 254 ? 254 : $failed);
}

1;
