package Test::LLM::Topology;

# A multi-node layout on loopback ports for t/061-topology.t and
# t/bench/scale.pl: nodes are nginx instances serving models with the
# module; a front nginx loads the same module with no model and proxies to
# them as docs/deployment.md describes (TLS with a self-signed certificate,
# the API-key recipe of docs/directives.md, limit_req, `hash $llm_prefix_key
# consistent`, keepalive, proxy_buffering off, retries on connection errors
# only).  Plus a small HTTP/1.1 client (TLS, chunked bodies, SSE events read
# as they arrive) and agent sessions that grow turn by turn.
#
# Every nginx is a Test::Nginx::Lite::Server (t/lib): started in its own
# process group, stopped with QUIT then KILL; the servers of a topology
# live under one directory (t/servroot-<file>/ by default).

use strict;
use warnings;

use Carp qw(croak);
use Exporter 'import';
use File::Path qw(make_path);
use IO::Socket::INET ();
use IO::Socket::SSL ();
use JSON::PP ();
use POSIX ();
use Time::HiRes qw(sleep time);

use Test::Nginx::Lite::Server ();

our @EXPORT_OK = qw(make_cert start_node front_conf start_front http_request
                    open_stream node_health unread_requests session_body
                    read_turn);

our $Json = JSON::PP->new->canonical->utf8;

# A self-signed certificate for localhost / 127.0.0.1 (EC P-256: quick to
# make).  Returns (cert_path, key_path); the certificate is its own CA.
sub make_cert {
    my ($dir) = @_;
    make_path($dir);
    my ($crt, $key) = ("$dir/front.crt", "$dir/front.key");
    my @cmd = ('openssl', 'req', '-x509', '-newkey', 'ec',
               '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
               '-keyout', $key, '-out', $crt, '-days', '2', '-subj', '/CN=localhost',
               '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1');
    system("@cmd >/dev/null 2>&1") == 0 or croak "openssl could not make a certificate";
    return ($crt, $key);
}

# A node: models served under /v1/ plus /health; every response names the
# node in X-LLM-Node.  models => [[alias, path, options], ...]
sub start_node {
    my (%o) = @_;
    my $srv = Test::Nginx::Lite::Server->new(
        root => $o{root}, log_level => $o{log_level} || 'info',
        worker_connections => 256,
    );
    my $models = join '', map { "llm_model $_->[0] $_->[1] " . ($_->[2] // '') . ";\n" }
                          @{ $o{models} };
    $srv->setup_root;
    $srv->write_conf($srv->render_conf(
        main_config => "thread_pool llm threads=1;",
        http_config => "$models    llm_thread_pool llm;\n",
        config => <<"EOC",
        add_header X-LLM-Node $o{name} always;
        location = /v1/chat/completions { llm_api chat; }
        location = /v1/completions { llm_api completions; }
        location /v1/messages { llm_api messages; }
        location /v1/models { llm_api models; }
        location = /health { llm_api health; }
EOC
        no_root_location => 1,
    ));
    my $err = $srv->start;
    croak "node $o{name} did not start: $err" if $err;
    $srv->{name} = $o{name};
    return $srv;
}

# The front's nginx.conf: what docs/deployment.md "Several nodes" shows,
# with this layout's paths and ports.  Options: root, port, nodes
# (servers), cert, key, balance ('hash' or 'round-robin'), keys (API keys
# accepted), trial_key (a key limited to 1 request a minute), log_level.
sub front_conf {
    my (%o) = @_;
    my $root = $o{root};
    my $mods = join '', map { "load_module $_;\n" }
                        grep { length } split ' ', ($ENV{TEST_NGINX_LOAD_MODULES} // '');
    my $servers = join '', map { "        server 127.0.0.1:" . $_->port
                                 . " max_fails=1 fail_timeout=10s;\n" } @{ $o{nodes} };
    my $balance = ($o{balance} // 'hash') eq 'hash'
                  ? "hash \$llm_prefix_key consistent;" : "# round-robin";
    my @keys = @{ $o{keys} || ['sk-team-key'] };
    push @keys, $o{trial_key} if $o{trial_key};
    my $bearer = join '', map { "        \"~^(?i:bearer) +\Q$_\E\$\"    ok;\n" } @keys;
    my $xkey = join '', map { "        \"~^\Q$_\E\$\"    ok;\n" } @keys;
    my $trial = $o{trial_key}
        ? "        \"~^(?i:bearer) +\Q$o{trial_key}\E\$\"    trial;\n" : '';
    my $level = $o{log_level} || 'info';
    my $user = $> == 0 ? "user root;\n" : '';
    return <<"EOC";
$mods$user
worker_processes 1;
daemon off;
master_process on;
error_log $root/logs/error.log $level;
pid $root/logs/nginx.pid;

events {
    worker_connections 512;
}

http {
    default_type application/octet-stream;
    client_body_temp_path $root/client_body_temp;
    proxy_temp_path $root/proxy_temp;
    fastcgi_temp_path $root/fastcgi_temp;
    uwsgi_temp_path $root/uwsgi_temp;
    scgi_temp_path $root/scgi_temp;

    log_format llm '\$remote_addr "\$request" \$status \$request_id '
                   'key=\$llm_prefix_key est=\$llm_prompt_tokens_estimate '
                   'upstream=\$upstream_addr rt=\$request_time';
    access_log $root/logs/access.log llm;

    # API keys: the recipe of docs/directives.md
    map \$http_authorization \$llm_bearer_key {
        ""    none;
$bearer        default    bad;
    }
    map \$http_x_api_key \$llm_x_api_key {
        ""    none;
$xkey        default    bad;
    }
    map "\$llm_bearer_key:\$llm_x_api_key" \$llm_key_ok {
        default      0;
        "ok:none"    1;
        "none:ok"    1;
        "ok:ok"      1;
    }

    # rate limits: per API key, and a stricter one for trial keys
    map \$http_authorization \$llm_trial_key {
$trial        default    "";
    }
    map \$llm_trial_key \$llm_trial_limit {
        trial      \$http_authorization;
        default    "";
    }
    limit_req_zone "\$http_authorization\$http_x_api_key" zone=llm_keys:1m rate=50r/s;
    limit_req_zone \$llm_trial_limit zone=llm_trial:1m rate=1r/m;
    limit_req_status 429;

    upstream llm_nodes {
        $balance
        zone llm_nodes 64k;
$servers        keepalive 16;
    }

    server {
        listen 127.0.0.1:$o{port} ssl http2;
        server_name localhost;

        ssl_certificate $o{cert};
        ssl_certificate_key $o{key};
        ssl_protocols TLSv1.2 TLSv1.3;

        client_max_body_size 8m;
        client_body_buffer_size 1m;

        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header X-Request-ID \$llm_request_id;
        proxy_buffering off;
        proxy_request_buffering on;
        proxy_connect_timeout 2s;
        proxy_send_timeout 600s;
        proxy_read_timeout 600s;
        proxy_next_upstream error timeout non_idempotent;
        proxy_next_upstream_tries 3;

        location /v1/messages {
            llm_errors anthropic;
            if (\$llm_key_ok = 0) { return 401; }
            limit_req zone=llm_keys burst=200 nodelay;
            limit_req zone=llm_trial;
            proxy_pass http://llm_nodes;
        }

        location /v1/ {
            llm_errors openai;
            if (\$llm_key_ok = 0) { return 401; }
            limit_req zone=llm_keys burst=200 nodelay;
            limit_req zone=llm_trial;
            proxy_pass http://llm_nodes;
        }
    }
}
EOC
}

sub start_front {
    my (%o) = @_;
    my $srv = Test::Nginx::Lite::Server->new(root => $o{root});
    $srv->setup_root;
    $srv->write_conf(front_conf(%o, root => $srv->root, port => $srv->port));
    my $err = $srv->start;
    croak "front did not start: $err" if $err;
    return $srv;
}

# ---- HTTP/1.1 client ----

sub _connect {
    my (%o) = @_;
    my $sock;
    if ($o{ca}) {
        $sock = IO::Socket::SSL->new(
            PeerHost => '127.0.0.1', PeerPort => $o{port}, Timeout => 10,
            SSL_ca_file => $o{ca}, SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
            SSL_verifycn_name => 'localhost', SSL_verifycn_scheme => 'http',
        ) or croak "TLS connect to $o{port}: $IO::Socket::SSL::SSL_ERROR";
    } else {
        $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $o{port},
                                      Proto => 'tcp', Timeout => 10)
            or croak "connect to $o{port}: $!";
    }
    binmode $sock;
    return $sock;
}

# open_stream(port => N, ca => CERT|undef, method => 'POST', path => '/x',
#             headers => {...}, body => '...', timeout => seconds)
# Sends the request and reads the response head.  Returns a reader:
# ->{status}, ->{headers} (lowercase names; a repeated header joined by
# ", "), ->{head} (raw), ->read (the next decoded body bytes, '' at the
# end), ->next_event (the next SSE event as {event, data} or undef at the
# end), ->rest (all remaining body), ->close.
sub open_stream {
    my (%o) = @_;
    my $sock = _connect(%o);
    my $body = $o{body} // '';
    my %h = (Host => 'localhost', Connection => 'close', %{ $o{headers} || {} });
    $h{'Content-Length'} = length $body if length $body || ($o{method} // 'GET') eq 'POST';
    my $req = ($o{method} // 'GET') . " $o{path} HTTP/1.1\r\n"
            . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n" . $body;
    print {$sock} $req or croak "write: $!";
    my $self = bless { sock => $sock, buf => '', timeout => $o{timeout} || 60,
                       events => '', done => 0 }, 'Test::LLM::Topology::Reader';
    $self->_read_head;
    return $self;
}

sub http_request {
    my $r = open_stream(@_);
    $r->{body} = $r->rest;
    $r->close;
    return $r;
}

# /health of a node, decoded.
sub node_health {
    my ($node) = @_;
    my $r = http_request(port => $node->port, path => '/health');
    return $Json->decode($r->{body});
}

# Requests sent to a node that it has not read yet: its established TCP
# sockets (accepted or still in the accept queue) holding unread bytes.
sub unread_requests {
    my ($port) = @_;
    my $want = sprintf(':%04X', $port);
    my $n = 0;
    open my $in, '<', '/proc/net/tcp' or croak "/proc/net/tcp: $!";
    while (<$in>) {
        my @f = split ' ';
        next unless @f > 4 && $f[1] =~ /^0100007F\Q$want\E$/ && $f[3] eq '01';
        my (undef, $rx) = split /:/, $f[4];
        $n++ if hex($rx) > 0;
    }
    close $in;
    return $n;
}

# ---- agent sessions ----

# The JSON body of the next turn of session $s (a hash: id, api 'openai'
# or 'anthropic', model, system, first (first user message), turns (the
# [assistant, user] pairs so far), max_tokens, nonce (Anthropic: send Claude
# Code's billing header with a new nonce, default 1)); extra => {...} adds
# or replaces fields.
sub session_body {
    my ($s, %o) = @_;
    my @msgs = ({ role => 'user', content => $s->{first} });
    for my $t (@{ $s->{turns} }) {
        push @msgs, { role => 'assistant', content => $t->[0] }, { role => 'user', content => $t->[1] };
    }
    my %body = (model => $s->{model}, max_tokens => $s->{max_tokens} // 2, stream => JSON::PP::true,
                temperature => 0);
    if ($s->{api} eq 'anthropic') {
        # Claude Code's billing header, a new nonce per request (nonce => 0: none)
        $body{system} = [($s->{nonce} // 1
                          ? { type => 'text', text => "x-anthropic-billing-header: "
                              . 'cc_version=2.1.1.' . sprintf('%03x', int rand 4096)
                              . '; cc_entrypoint=cli; cch=' . sprintf('%05x', int rand 1048576)
                              . ';' } : ()),
                         { type => 'text', text => $s->{system} }];
        $body{messages} = \@msgs;
    } else {
        $body{messages} = [{ role => 'system', content => $s->{system} }, @msgs];
        $body{stream_options} = { include_usage => JSON::PP::true };
    }
    %body = (%body, %{ $o{extra} || {} });
    return $Json->encode(\%body);
}

# Reads a streamed turn to its end: returns {status, node, text, events,
# complete (the protocol's last event seen), prompt_tokens, cached_tokens,
# body (for a response that is not a stream)}.
sub read_turn {
    my ($r, $api) = @_;
    my %t = (status => $r->{status}, node => $r->{headers}{'x-llm-node'} // '',
             type => $r->{headers}{'content-type'} // '', text => '', events => 0,
             complete => 0, prompt_tokens => 0, cached_tokens => 0);
    if ($t{type} !~ m{^text/event-stream}) {
        $t{body} = $r->rest;
        $r->close;
        return \%t;
    }
    while (my $ev = $r->next_event) {
        $t{events}++;
        if ($ev->{data} eq '[DONE]') { $t{complete} = 1; next }
        my $d = eval { $Json->decode($ev->{data}) } or next;
        if ($api eq 'anthropic') {
            $t{complete} = 1 if ($d->{type} // '') eq 'message_stop';
            $t{text} .= $d->{delta}{text} // '' if ($d->{type} // '') eq 'content_block_delta';
            # message_start and message_delta carry usage; the last one counts
            my $u = ($d->{message} && $d->{message}{usage}) || $d->{usage};
            if ($u && defined $u->{input_tokens}) {
                $t{cached_tokens} = $u->{cache_read_input_tokens} // 0;
                $t{prompt_tokens} = $u->{input_tokens} + $t{cached_tokens};
            }
        } else {
            for my $c (@{ $d->{choices} || [] }) {
                $t{text} .= $c->{delta}{content} // '';
            }
            if (my $u = $d->{usage}) {
                $t{prompt_tokens} = $u->{prompt_tokens};
                $t{cached_tokens} = $u->{prompt_tokens_details}{cached_tokens} // 0;
            }
        }
    }
    $r->close;
    return \%t;
}


package Test::LLM::Topology::Reader;

use strict;
use warnings;
use Carp qw(croak);

sub _fill {
    my ($self) = @_;
    my $n;
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm $self->{timeout};
        $n = sysread($self->{sock}, my $chunk, 65536);
        alarm 0;
        $self->{buf} .= $chunk if $n;
        1;
    } or croak "no data from the server within $self->{timeout}s";
    return $n;
}

sub _read_head {
    my ($self) = @_;
    while ($self->{buf} !~ /\r\n\r\n/) {
        $self->_fill or croak "connection closed before the response head";
    }
    my ($head, $rest) = split /\r\n\r\n/, $self->{buf}, 2;
    $self->{buf} = $rest;
    $self->{head} = $head;
    my ($status, @lines) = split /\r\n/, $head;
    ($self->{status}) = $status =~ m{^HTTP/\S+ (\d+)} or croak "bad status line: $status";
    for (@lines) {
        my ($k, $v) = split /:\s*/, $_, 2;
        $k = lc $k;
        $self->{headers}{$k} = exists $self->{headers}{$k} ? "$self->{headers}{$k}, $v" : $v;
    }
    my $te = $self->{headers}{'transfer-encoding'} // '';
    $self->{chunked} = $te =~ /chunked/i;
    $self->{left} = $self->{headers}{'content-length'};
}

# The next decoded body bytes; '' at the end of the body.
sub read {
    my ($self) = @_;
    return '' if $self->{done};
    if (!$self->{chunked}) {
        if (defined $self->{left} && $self->{left} == 0) { $self->{done} = 1; return '' }
        if (!length $self->{buf}) {
            if (!$self->_fill) { $self->{done} = 1; return '' }
        }
        my $out = $self->{buf};
        $self->{buf} = '';
        $self->{left} -= length $out if defined $self->{left};
        return $out;
    }
    for (;;) {
        if ($self->{buf} =~ /^([0-9a-fA-F]+)[^\r\n]*\r\n/) {
            my ($size, $hlen) = (hex $1, length $&);
            if ($size == 0) { $self->{done} = 1; return '' }
            if (length($self->{buf}) >= $hlen + $size + 2) {
                my $out = substr($self->{buf}, $hlen, $size);
                substr($self->{buf}, 0, $hlen + $size + 2) = '';
                return $out;
            }
        }
        if (!$self->_fill) {
            $self->{truncated} = 1;    # the server closed inside the body
            $self->{done} = 1;
            return '';
        }
    }
}

sub rest {
    my ($self) = @_;
    my $all = '';
    while (length(my $b = $self->read)) { $all .= $b }
    return $all;
}

# The next SSE event ({event, data}) or undef at the end of the stream.
sub next_event {
    my ($self) = @_;
    for (;;) {
        if ($self->{events} =~ s/^(.*?)\n\n//s) {
            my %ev = (event => '', data => '');
            for my $line (split /\n/, $1) {
                $ev{event} = $1 if $line =~ /^event: ?(.*)$/;
                $ev{data} .= $1 if $line =~ /^data: ?(.*)$/;
            }
            return \%ev;
        }
        my $more = $self->read;
        return undef unless length $more;
        $self->{events} .= $more;
    }
}

sub close {
    my ($self) = @_;
    close $self->{sock} if $self->{sock};
    delete $self->{sock};
}

1;
