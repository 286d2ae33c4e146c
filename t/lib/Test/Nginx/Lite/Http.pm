package Test::Nginx::Lite::Http;

# The client side of a test block: turns "--- request" text into HTTP/1.1
# bytes, sends them over a plain socket (or through curl for HTTP/2),
# reads until the server closes or goes quiet for the timeout, and parses
# the reply into an HTTP::Response with a de-chunked body.

use strict;
use warnings;
use Errno qw(EAGAIN EWOULDBLOCK EINTR);
use HTTP::Response ();
use IO::Select ();
use IO::Socket::INET ();
use IPC::Run ();
use Time::HiRes qw(sleep time);

our @EXPORT_OK = qw(build_request send_request parse_response curl_request parse_more_headers);
use Exporter 'import';

# "--- more_headers" text -> ("Name: value\r\n"..., is_chunked)
sub parse_more_headers {
    my ($text) = @_;
    my ($out, $chunked) = ('', 0);
    for my $line (split /\n+/, $text // '') {
        next if $line =~ /^\s*#/ || $line !~ /\S/;
        my ($k, $v) = split /:\s*/, $line, 2;
        $v //= '';
        $chunked = 1 if lc($k) eq 'transfer-encoding' && $v eq 'chunked';
        $out .= "$k: $v\r\n";
    }
    return ($out, $chunked);
}

# "METHOD [URI [PROTO]]\n[body]" plus extra headers -> raw request bytes.
# Like Test::Nginx: adds Host and Connection unless given, and a
# Content-Length for a (whitespace-trimmed) body unless the request is
# chunked or the header is already there.
sub build_request {
    my ($text, $more_headers, $conn) = @_;
    $conn ||= 'close';
    $text //= '';
    1 while $text =~ s/^\s*#[^\n]+\s+|^\s+//s;
    my ($first, $body) = split /\n/, $text, 2;
    $first //= '';
    die "request line should be 'METHOD [URI [VERSION]]', got \"$first\"\n"
        unless $first =~ /^\s*(\S+)(?:\s+(\S+))?(?:\s+(\S+))?\s*$/;
    my ($meth, $uri, $ver) = ($1, $2 // '/', $3 // 'HTTP/1.1');
    my ($hdr, $chunked) = parse_more_headers($more_headers);
    $body //= '';
    my $len = '';
    if (!$chunked && length $body && $hdr !~ /(?:^|\n)Content-Length:/i) {
        $body =~ s/^\s+|\s+$//gs;
        $len = 'Content-Length: ' . length($body) . "\r\n";
    }
    my $head = "$meth $uri $ver\r\n";
    $head .= "Host: localhost\r\n" unless $hdr =~ /(?:^|\n)Host:/i;
    $head .= "Connection: $conn\r\n" unless $hdr =~ /(?:^|\n)Connection/i;
    return "$head$hdr$len\r\n$body";
}

# Sends raw bytes to addr:port, reads the whole reply.
# Returns ($reply, $error, $timed_out): $error is a connect/IO failure.
# The timeout counts from the last byte received (like Test::Nginx).
sub send_request {
    my ($addr, $port, $bytes, $timeout) = @_;
    local $SIG{PIPE} = 'IGNORE';
    my $sock;
    for my $try (1 .. 50) {
        $sock = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port,
                                      Proto => 'tcp', Timeout => $timeout);
        last if $sock;
        sleep(0.02 * $try > 0.5 ? 0.5 : 0.02 * $try);
    }
    return ('', "cannot connect to $addr:$port: $!", 0) unless $sock;
    $sock->blocking(0);
    my $sel = IO::Select->new($sock);
    my ($reply, $off) = ('', 0);
    while (1) {
        my $want_write = $off < length $bytes;
        my ($r, $w) = IO::Select->select($sel, $want_write ? $sel : undef, undef, $timeout);
        if (!$r && !$w) {
            next if $!{EINTR};
            close $sock;
            return ($reply, '', 1);
        }
        if ($w && @$w) {
            my $n = syswrite($sock, $bytes, length($bytes) - $off, $off);
            if (defined $n) {
                $off += $n;
            } elsif (!($!{EAGAIN} || $!{EWOULDBLOCK})) {
                # The server may answer before reading the whole request.
                $off = length $bytes;
            }
        }
        if ($r && @$r) {
            my $n = sysread($sock, my $buf, 65536);
            if (!defined $n) {
                next if $!{EAGAIN} || $!{EWOULDBLOCK} || $!{EINTR};
                my $err = $!;
                close $sock;
                return ($reply, length $reply ? '' : "read failed: $err", 0);
            }
            last if $n == 0;
            $reply .= $buf;
        }
    }
    close $sock;
    return ($reply, '', 0);
}

# Raw reply -> (HTTP::Response or undef, raw header text, error text).
# With $lenient a truncated chunked body is kept as far as it goes.
sub parse_response {
    my ($raw, $head_req, $lenient) = @_;
    return (undef, '', 'empty response') unless length $raw;
    my $raw_headers = $raw =~ /\A(.*?\r\n)\r\n/s ? $1 : '';
    my $res = HTTP::Response->parse($raw);
    my $code = $res->code;
    if (!defined $code || $code !~ /^\d+$/) {
        $res->code(undef);
        return ($res, $raw_headers, '');
    }
    return ($res, $raw_headers, '') if $code == 304 || $code == 101 || $head_req;
    my $te = $res->header('Transfer-Encoding');
    if (defined $te && $te eq 'chunked') {
        my ($body, $err) = dechunk($res->content // '');
        return (undef, $raw_headers, $err) if $err && !$lenient;
        $res->content($body);
    } elsif (defined(my $len = $res->header('Content-Length'))) {
        my $c = $res->content // '';
        $res->content(substr $c, 0, $len) if $len =~ /^\d+$/ && length $c > $len;
    }
    return ($res, $raw_headers, '');
}

# Decodes a chunked body; returns ($data, $error_or_empty).
sub dechunk {
    my ($raw) = @_;
    my ($out, $pos) = ('', 0);
    while (1) {
        pos($raw) = $pos;
        return ($out, 'no last chunk found') unless $raw =~ /\G[ \t]*([0-9A-Fa-f]+)[^\r\n]*\r\n/gc;
        my $size = hex $1;
        $pos = pos $raw;
        return ($out, '') if $size == 0;
        return ($out . substr($raw, $pos), 'truncated chunk') if length($raw) < $pos + $size;
        $out .= substr $raw, $pos, $size;
        $pos += $size;
        return ($out, 'missing CRLF after a chunk') unless substr($raw, $pos, 2) eq "\r\n";
        $pos += 2;
    }
}

# HTTP/2 (prior knowledge) through curl, as Test::Nginx does for
# "--- http2".  $raw_req is what build_request made.  Returns
# ($reply_like_http1_text, $error, $timed_out).
sub curl_request {
    my ($addr, $port, $raw_req, $timeout, $body_file) = @_;
    my ($head, $body) = split /\r\n\r\n/, $raw_req, 2;
    my ($line, @headers) = split /\r\n/, $head;
    my ($meth, $uri, $ver) = split ' ', $line;
    my @args = ('curl', '-i', '-sS', '-H', 'User-Agent:', '-H', 'Accept:', '-H', 'Host:',
                '--http2', '--http2-prior-knowledge');
    push @args, $meth eq 'HEAD' ? ('-I') : ('-X', $meth);
    my $has_ct;
    for my $h (@headers) {
        next if $h =~ /^Connection\s*:/i;
        $has_ct = 1 if $h =~ /^\s*Content-Type\s*:/i;
        push @args, '-H', $h;
    }
    if (defined $body && length $body) {
        push @args, '-H', 'Content-Type: ' unless $has_ct;
        open my $fh, '>', $body_file or return ('', "cannot write $body_file: $!", 0);
        binmode $fh;
        print $fh $body;
        close $fh;
        push @args, '--data-binary', "\@$body_file";
    }
    push @args, '--connect-timeout', $timeout, '--max-time', $timeout, "http://$addr:$port$uri";
    my ($out, $err) = ('', '');
    IPC::Run::run(\@args, '<', \undef, '>', \$out, '2>', \$err);
    my $rc = $? >> 8;
    return ($out, '', 1) if $rc == 28;    # curl's "operation timed out"
    return ($out, "curl failed (exit $rc): $err", 0) if $rc != 0 && !length $out;
    return ($out, '', 0);
}

1;
