package Test::LLM::Client;

# Raw HTTP/1.1 clients for tests that need several requests in flight at once
# against one nginx (reload and quit mid-generation, stalled readers,
# admission under load): a request is sent on its own socket and read later,
# in pieces or to the end.  A client may shrink its receive buffer and stop
# reading, which is how a test holds a stream paused deterministically (the
# server's backpressure stops its generation) instead of racing the model.
#
#   my $c = Test::LLM::Client->post($port, '/v1/chat/completions', $json,
#                                   rcvbuf => 4096);
#   $c->read_until(qr/data: /, 30);       # the stream has started
#   my ($status, $headers, $body) = $c->finish(60);   # read to EOF, de-chunk

use strict;
use warnings;
use Errno qw(EAGAIN EWOULDBLOCK EINTR);
use IO::Select ();
use JSON::PP ();
use Socket qw(SOL_SOCKET SO_RCVBUF AF_INET SOCK_STREAM inet_aton pack_sockaddr_in);
use Time::HiRes qw(sleep time);

use Exporter 'import';
our @EXPORT_OK = qw(get_json wait_until);

our $Addr = '127.0.0.1';

# post($port, $uri, $body, rcvbuf => bytes, headers => "X: y\r\n")
sub post {
    my ($class, $port, $uri, $body, %o) = @_;
    return $class->request($port, 'POST', $uri, $body, %o);
}

sub request {
    my ($class, $port, $method, $uri, $body, %o) = @_;
    socket(my $s, AF_INET, SOCK_STREAM, 0) or die "socket: $!";
    # before connect, so the window the server sees is small from the start
    setsockopt($s, SOL_SOCKET, SO_RCVBUF, $o{rcvbuf}) or die "SO_RCVBUF: $!"
        if $o{rcvbuf};
    connect($s, pack_sockaddr_in($port, inet_aton($Addr))) or die "connect $port: $!";
    binmode $s;
    $body //= '';
    my $req = "$method $uri HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        . ($o{headers} // '')
        . (length $body ? "Content-Type: application/json\r\nContent-Length: "
                          . length($body) . "\r\n" : '')
        . "\r\n$body";
    my $off = 0;
    while ($off < length $req) {
        my $n = syswrite($s, $req, length($req) - $off, $off);
        die "write: $!" unless defined $n;
        $off += $n;
    }
    return bless { sock => $s, raw => '', eof => 0 }, $class;
}

sub raw    { $_[0]{raw} }
sub at_eof { $_[0]{eof} }

# Reads what is there within $timeout seconds (at most $max bytes);
# returns the number of bytes read (0 at EOF or on timeout).
sub read_some {
    my ($self, $timeout, $max) = @_;
    return 0 if $self->{eof};
    my $sel = IO::Select->new($self->{sock});
    return 0 unless $sel->can_read($timeout);
    my $n = sysread($self->{sock}, my $buf, $max || 65536);
    if (!defined $n) {
        return 0 if $! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR;
        $self->{eof} = 1;
        return 0;
    }
    if ($n == 0) {
        $self->{eof} = 1;
        return 0;
    }
    $self->{raw} .= $buf;
    return $n;
}

# Reads until the raw response matches $re, EOF, or $timeout seconds.
sub read_until {
    my ($self, $re, $timeout) = @_;
    my $deadline = time + $timeout;
    while ($self->{raw} !~ $re && !$self->{eof} && time < $deadline) {
        $self->read_some($deadline - time);
    }
    return $self->{raw} =~ $re;
}

# Reads to EOF (or $timeout); returns (status, {lc header => value}, body).
sub finish {
    my ($self, $timeout) = @_;
    my $deadline = time + $timeout;
    while (!$self->{eof} && time < $deadline) {
        $self->read_some($deadline - time);
    }
    CORE::close($self->{sock});
    return parse($self->{raw});
}

# Drops the connection without reading the rest.
sub hangup {
    my ($self) = @_;
    CORE::close($self->{sock});
    $self->{eof} = 1;
}

# Raw HTTP/1.1 response -> (status, {lc header => value}, de-chunked body);
# a truncated chunked body comes back as far as it got.
sub parse {
    my ($raw) = @_;
    my ($head, $rest) = split /\r\n\r\n/, $raw, 2;
    return (0, {}, '') unless defined $rest;
    my ($status) = $head =~ m{^HTTP/\d\.\d (\d+)};
    my %h;
    for (split /\r\n/, $head) {
        $h{lc $1} = $2 if /^([^:]+):\s*(.*)$/;
    }
    my $body = $rest;
    if (($h{'transfer-encoding'} // '') =~ /chunked/i) {
        $body = '';
        while ($rest =~ s/^([0-9a-fA-F]+)\r\n//) {
            my $len = hex $1;
            last if $len == 0;
            $body .= substr($rest, 0, $len);
            last if length($rest) < $len + 2;
            $rest = substr($rest, $len + 2);
        }
    }
    return ($status // 0, \%h, $body);
}

# GET $uri on $port -> decoded JSON (undef if not JSON).
sub get_json {
    my ($port, $uri) = @_;
    my $c = __PACKAGE__->request($port, 'GET', $uri);
    my (undef, undef, $body) = $c->finish(10);
    return eval { JSON::PP::decode_json($body) };
}

# Polls $cond every 50 ms until it is true or $timeout seconds pass.
sub wait_until {
    my ($cond, $timeout) = @_;
    my $deadline = time + $timeout;
    while (time < $deadline) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return $cond->();
}

1;
