package Test::Nginx::Lite::Server;

# One nginx instance under a private server root:
#   <root>/conf/nginx.conf, <root>/html/, <root>/logs/{error,access}.log
# The master runs in the foreground (daemon off) as our child, in its own
# process group, so it can be stopped (QUIT, then KILL) with its workers.
# Its stderr goes to logs/error.log, so messages nginx prints before it has
# read the configuration (e.g. a bad directive) land in the error log too.

use strict;
use warnings;
use Carp qw(croak);
use File::Path qw(make_path remove_tree);
use File::Spec ();
use IO::Socket::INET ();
use POSIX qw(:sys_wait_h setpgid);
use Time::HiRes qw(sleep time);

our $Addr = '127.0.0.1';

# A free loopback TCP port below the kernel's ephemeral range, so it cannot
# collide with our own client sockets.
sub pick_free_port {
    for (1 .. 200) {
        my $port = 20000 + int(rand(12000));
        my $s = IO::Socket::INET->new(
            LocalAddr => $Addr, LocalPort => $port, Proto => 'tcp', ReuseAddr => 1, Listen => 1,
        ) or next;
        close $s;
        return $port;
    }
    croak "no free loopback port found";
}

# A version as the real Test::Nginx compares them: 1.22.1 -> 1.022001.
sub canon_version { sprintf '%d.%03d%03d', @_ }

# nginx takes `listen ... http2` before 1.25.1 and the `http2` directive since.
our $Http2DirectiveVersion = canon_version(1, 25, 1);

my %Versions;    # binary -> canonical version (0 when `nginx -v` says none)

sub nginx_version {
    my ($self) = @_;
    my $bin = $self->{binary};
    $Versions{$bin} //= do {
        my $out = `\Q$bin\E -v 2>&1` // '';
        $out =~ m{nginx/(\d+)\.(\d+)\.(\d+)} ? canon_version($1, $2, $3) : 0;
    };
    return $Versions{$bin};
}

# $TEST_NGINX_* in configuration text -> the value of that environment
# variable; $TEST_NGINX_RAND_PORT_<N> -> a free port, the same for one
# %$ports.  Dies on an undefined variable, as the real Test::Nginx does.
sub expand_env {
    my ($text, $ports) = @_;
    return undef unless defined $text;
    $ports ||= {};
    $text =~ s{\$(TEST_NGINX_[_A-Z0-9]+)}{
        my $var = $1;
        if ($var =~ /^TEST_NGINX_RAND_PORT_\d+$/) {
            $ports->{$var} //= pick_free_port();
        } elsif (!defined $ENV{$var}) {
            die "No environment $var defined.\n";
        } else {
            $ENV{$var};
        }
    }ge;
    return $text;
}

# new(root => DIR, port => N, binary => 'nginx', load_modules => [...],
#     log_level => 'debug', master_process => 'on', workers => 1,
#     worker_connections => 64, env => [...], start_timeout => 30)
sub new {
    my ($class, %o) = @_;
    croak "root is required" unless $o{root};
    my $self = bless {
        binary => $ENV{TEST_NGINX_BINARY} || 'nginx',
        load_modules => [ grep { length } split ' ', ($ENV{TEST_NGINX_LOAD_MODULES} // '') ],
        log_level => 'debug',
        master_process => 'on',
        workers => 1,
        worker_connections => 64,
        env => [],
        start_timeout => $ENV{TEST_NGINX_START_TIMEOUT} || 30,
        stop_timeout => 3,
        owner => $$,
        %o,
    }, $class;
    $self->{root} = File::Spec->rel2abs($self->{root});
    $self->{port} ||= pick_free_port();
    return $self;
}

sub root      { $_[0]{root} }
sub port      { $_[0]{port} }
sub html_dir  { "$_[0]{root}/html" }
sub conf_file { "$_[0]{root}/conf/nginx.conf" }
sub error_log { "$_[0]{root}/logs/error.log" }
sub access_log { "$_[0]{root}/logs/access.log" }
sub pid_file  { "$_[0]{root}/logs/nginx.pid" }
sub base_url  { "http://$Addr:$_[0]{port}" }
sub pid       { $_[0]{pid} }

# The nginx.conf text for the given sections, laid out like the one the
# real Test::Nginx writes.  Options: main_config, http_config, config,
# post_main_config, http2, no_root_location, log_level, server_name.
sub render_conf {
    my ($self, %s) = @_;
    my $root = $self->{root};
    my $level = $s{log_level} || $self->{log_level};
    my $listen = "$Addr:$self->{port}";
    if ($s{http2}) {
        $listen .= $self->nginx_version >= $Http2DirectiveVersion ? ";\n        http2 on" : ' http2';
    }
    my $server_name = $s{server_name} // 'localhost';
    my $http_config = $s{http_config} // '';
    my $main = join '', map { "load_module $_;\n" } @{ $self->{load_modules} };
    my $env = join '', map { /\s/ ? "env '$_';\n" : "env $_;\n" } @{ $self->{env} };
    # Debian's nginx keeps temp files under /var/lib/nginx; keep ours private.
    my $temps = '';
    for my $t (qw(client_body proxy fastcgi uwsgi scgi)) {
        next if $http_config =~ /\b${t}_temp_path\b/;
        $temps .= "    ${t}_temp_path $root/${t}_temp;\n";
    }
    my $root_loc = $s{no_root_location} ? '' : <<"EOC";
        location / {
            root $root/html;
            index index.html index.htm;
        }
EOC
    my $user = $> == 0 ? "user root;\n" : '';
    return <<"EOC";
worker_processes  $self->{workers};
daemon off;
master_process $self->{master_process};
error_log $root/logs/error.log $level;
pid       $root/logs/nginx.pid;
$user$env$main
@{[ $s{main_config} // '' ]}

http {
    access_log $root/logs/access.log;
    default_type text/plain;
    keepalive_timeout  68;
$temps
$http_config

    server {
        listen          $listen;
        server_name     '$server_name';
        client_max_body_size 30M;

        # Begin test case config...
@{[ $s{config} // '' ]}
        # End test case config.

$root_loc    }
}

@{[ $s{post_main_config} // '' ]}

events {
    accept_mutex off;
    worker_connections  $self->{worker_connections};
}
EOC
}

# Fresh conf/ html/ logs/ (stops a leftover nginx of this root first).
sub setup_root {
    my ($self) = @_;
    my $root = $self->{root};
    $self->_kill_stale;
    remove_tree("$root/conf", "$root/logs", "$root/html", glob("$root/*_temp"));
    make_path("$root/conf", "$root/logs", "$root/html");
    _write("$root/html/index.html",
        '<html><head><title>It works!</title></head><body>It works!</body></html>');
}

sub write_conf {
    my ($self, $text) = @_;
    _write($self->conf_file, $text);
    $self->{conf_text} = $text;
}

sub conf_text { $_[0]{conf_text} }

# Writes files relative to html/ (or absolute paths).
sub write_file {
    my ($self, $name, $body) = @_;
    my $path = $name =~ m{^/} ? $name : $self->html_dir . "/$name";
    (my $dir = $path) =~ s{/[^/]*$}{};
    make_path($dir) unless -d $dir;
    _write($path, $body // '');
}

sub _write {
    my ($path, $body) = @_;
    open my $out, '>', $path or croak "cannot write $path: $!";
    binmode $out;
    print $out $body;
    close $out or croak "cannot write $path: $!";
}

sub command { ($_[0]{binary}, '-p', "$_[0]{root}/", '-c', $_[0]->conf_file) }

sub _spawn {
    my ($self) = @_;
    my @cmd = $self->command;
    my $pid = fork;
    croak "fork failed: $!" unless defined $pid;
    if ($pid == 0) {
        setpgid(0, 0);
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', '/dev/null';
        open STDERR, '>>', $self->error_log;
        exec @cmd or do { print STDERR "cannot exec $cmd[0]: $!\n"; POSIX::_exit(127) };
    }
    return $pid;
}

# Starts nginx with the written conf; waits until it listens on the port.
# Returns '' on success, else why not (first line: "status code N", the
# wait status as the real Test::Nginx reports it, or "not listening after
# Ns"; then the error log's tail).
sub start {
    my ($self) = @_;
    my $pid = $self->_spawn;
    $self->{pid} = $pid;
    $self->{started_at} = time;
    my $deadline = time + $self->{start_timeout};
    while (time < $deadline) {
        my $r = waitpid($pid, WNOHANG);
        if ($r == $pid) {
            my $st = $?;
            delete $self->{pid};
            return "status code $st\n" . $self->log_tail(20);
        }
        return '' if $self->_listening;
        sleep 0.005;
    }
    $self->stop;
    return "not listening on $Addr:$self->{port} after $self->{start_timeout}s\n"
        . $self->log_tail(20);
}

# Runs nginx expecting it to fail at startup (--- must_die).
# Returns (exit_status, error_text): status is undef when nginx came up
# (it is then stopped again).
sub run_until_exit {
    my ($self, $timeout) = @_;
    my $pid = $self->_spawn;
    my $deadline = time + ($timeout || 10);
    while (time < $deadline) {
        my $r = waitpid($pid, WNOHANG);
        return ($?, '') if $r == $pid;
        if ($self->_listening) {
            $self->{pid} = $pid;
            $self->stop;
            return (undef, 'nginx started');
        }
        sleep 0.005;
    }
    $self->{pid} = $pid;
    $self->stop;
    return (undef, 'nginx neither exited nor listened');
}

# True once some socket listens on our address and port (read from
# /proc/net/tcp so no probe connection shows up in the error log).
sub _listening {
    my ($self) = @_;
    my $want = sprintf('0100007F:%04X', $self->{port});
    if (open my $in, '<', '/proc/net/tcp') {
        while (<$in>) {
            my @f = split ' ';
            return 1 if @f > 3 && $f[1] eq $want && $f[3] eq '0A';
        }
        return 0;
    }
    my $s = IO::Socket::INET->new(PeerAddr => $Addr, PeerPort => $self->{port}, Timeout => 0.2);
    return $s ? 1 : 0;
}

sub is_running {
    my ($self) = @_;
    return 0 unless $self->{pid};
    return 1 if waitpid($self->{pid}, WNOHANG) == 0;
    delete $self->{pid};
    return 0;
}

# Graceful stop (QUIT), then KILL of the whole process group.
sub stop {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;
    kill 'QUIT', $pid;
    my $deadline = time + $self->{stop_timeout};
    my $gone = 0;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) != 0) { $gone = 1; last }
        sleep 0.005;
    }
    if (!$gone) {
        warn "# nginx $pid did not exit after QUIT; killing it\n";
        kill 'KILL', -$pid;
        waitpid($pid, 0);
    }
    kill 'KILL', -$pid if kill 0, -$pid;    # orphaned workers
}

# An nginx left running by an interrupted earlier run of this root.
sub _kill_stale {
    my ($self) = @_;
    return if $self->{pid};
    open my $in, '<', $self->pid_file or return;
    my $pid = <$in>;
    close $in;
    return unless defined $pid && $pid =~ /^(\d+)\s*$/;
    $pid = $1;
    open my $cl, '<', "/proc/$pid/cmdline" or return;
    my $cmdline = do { local $/; <$cl> };
    close $cl;
    return unless index($cmdline, $self->{root}) >= 0;
    kill 'QUIT', $pid;
    for (1 .. 200) { last unless kill 0, $pid; sleep 0.01 }
    kill 'KILL', -$pid, $pid;
}

sub error_log_size { -s $_[0]->error_log || 0 }

# Lines of the error log from byte offset $pos; returns (\@lines, $end).
sub error_log_lines {
    my ($self, $pos) = @_;
    open my $in, '<', $self->error_log or return ([], $pos // 0);
    seek $in, $pos, 0 if $pos;
    my @lines = <$in>;
    my $end = tell $in;
    close $in;
    return (\@lines, $end);
}

sub log_tail {
    my ($self, $n) = @_;
    my ($lines) = $self->error_log_lines(0);
    my @t = @$lines > $n ? @$lines[-$n .. -1] : @$lines;
    return join '', @t;
}

sub DESTROY {
    my ($self) = @_;
    local ($?, $!, $@);
    $self->stop if $self->{pid} && $self->{owner} && $self->{owner} == $$;
}

1;
