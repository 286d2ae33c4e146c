package Test::Nginx::Lite::Blocks;

# Reads the __DATA__ section of a test script into blocks, the way
# Test::Base does for Test::Nginx::Socket:
#
#   === TEST 1: name          starts a block (the rest of the line is its name)
#   --- section [filters]     multi-line section; value runs to the next "---"
#   --- section [filters]: v  one-line section
#
# Every value first goes through the default filters "norm" (CRLF -> LF)
# and "trim" (drop leading blank lines and trailing whitespace after the
# last newline), then through the filters named on the section line.
# Filters run lazily (see filtered_blocks) so that `eval` sections can see
# package variables the script sets after `plan tests => blocks() * N`.

use strict;
use warnings;
use Carp qw(croak);
use MIME::Base64 ();

our @EXPORT_OK = qw(parse_blocks select_blocks);
use Exporter 'import';

# The text after __DATA__ (or __END__) in the given script file.
sub data_of_script {
    my ($path) = @_;
    open my $in, '<', $path or croak "cannot read test script $path: $!";
    local $/;
    my $src = <$in>;
    close $in;
    return '' unless $src =~ /^__(?:DATA|END)__[ \t]*\r?\n(.*)\z/ms;
    return $1;
}

# Splits data text into raw (unfiltered) blocks.  A section line is
# "--- name [filters]" (value on the following lines) or
# "--- name [filters]: value" (a colon followed by blank space or the end
# of the line makes it a one-line section).
sub parse_blocks {
    my ($text) = @_;
    $text .= "\n" unless $text =~ /\n\z/;
    my @blocks;
    my $seq = 0;
    for my $hunk ($text =~ /^(===.*?(?=^===|\z))/msg) {
        $hunk =~ s/\A===[ \t]*(.*)\s+// or next;
        my $name = $1;
        $name =~ s/\s+\z//;
        my @parts = split /^---[ \t]+\(?(\w+)\)?[ \t]*(.*)?\n/m, $hunk;
        my $desc = shift @parts;
        $desc = $name unless defined $desc && $desc =~ /\S/;
        $desc =~ s/\s*\z//;
        my $block = Test::Nginx::Lite::Block->new(
            name => $name, description => $desc, seq_num => ++$seq);
        while (@parts) {
            my ($sect, $filters, $value) = splice @parts, 0, 3;
            $filters = '' unless defined $filters;
            $value = '' unless defined $value;
            $filters =~ s/\r\z//;
            if ($filters =~ /:(\s|\z)/) {
                croak "block '$name': extra lines are not allowed after '--- $sect: ...'"
                    if $value =~ /\S/;
                ($filters, $value) = split /\s*:(?:\s+|\z)/, $filters, 2;
                $value = '' unless defined $value;
                $value =~ s/^\s*(.*?)\s*$/$1/;
            }
            $block->_add_raw($sect, $value, [ split ' ', $filters ]);
        }
        push @blocks, $block;
    }
    return \@blocks;
}

# Applies --- ONLY / --- SKIP / --- LAST the way Test::Base does.
sub select_blocks {
    my ($blocks) = @_;
    my @only = grep { $_->_has_raw('ONLY') } @$blocks;
    if (@only) {
        warn "# I found ONLY: maybe you're debugging?\n";
        return [ $only[0] ];
    }
    my @out;
    for my $b (@$blocks) {
        next if $b->_has_raw('SKIP');
        push @out, $b;
        last if $b->_has_raw('LAST');
    }
    return \@out;
}

package Test::Nginx::Lite::Block;

use strict;
use warnings;
use Carp qw(croak);

our $AUTOLOAD;

sub new {
    my ($class, %args) = @_;
    my $self = bless { raw => {}, order => [], values => {}, filtered => 0 }, $class;
    $self->{values}{$_} = [ $args{$_} ] for keys %args;
    return $self;
}

sub _add_raw {
    my ($self, $sect, $text, $filters) = @_;
    push @{ $self->{order} }, $sect unless exists $self->{raw}{$sect};
    $self->{raw}{$sect} = [ $text, $filters ];
}

sub _has_raw { exists $_[0]{raw}{ $_[1] } }

# Section names in file order.
sub sections { @{ $_[0]{order} } }

sub run_filters {
    my ($self) = @_;
    return if $self->{filtered}++;
    for my $sect (@{ $self->{order} }) {
        next if $self->{set}{$sect} || !exists $self->{raw}{$sect};
        my ($text, $filters) = @{ $self->{raw}{$sect} };
        my @val = ($text);
        my %off = map { /^-(\w+)$/ ? ($1 => 1) : () } @$filters;
        @val = _norm(@val) unless $off{norm};
        @val = _trim(@val) unless $off{trim};
        for my $f (grep { !/^-/ } @$filters) {
            @val = $self->_apply($f, $sect, @val);
        }
        $self->{values}{$sect} = \@val;
    }
}

sub _norm { map { my $s = $_; $s =~ s/\r\n/\n/g; $s =~ s/\r/\n/g; $s } @_ }

sub _trim { map { my $s = $_; $s =~ s/\A([ \t]*\n)+//; $s =~ s/(?<=\n)\s*\z//; $s } @_ }

sub _apply {
    my ($self, $f, $sect, @val) = @_;
    # A filter the test script defines itself, as in Test::Base: it gets the
    # value in @_ and in $_, and may return the result or munge $_.
    if (defined &{"main::$f"}) {
        no strict 'refs';
        local $_ = join '', @val;
        my @r = &{"main::$f"}(@val);
        @r = ($_) if !@r || (@r == 1 && defined $r[0] && $r[0] =~ /\A(\d+|)\z/);
        return @r;
    }
    if ($f eq 'eval') {
        my $code = join '', @val;
        my $where = "block '" . $self->name . "', section '$sect'";
        my @r = _eval_code($code, $where);
        return @r;
    }
    return map { my $s = $_; chomp $s; $s } @val if $f eq 'chomp';
    return map { my $s = $_; chop $s; $s } @val if $f eq 'chop';
    return _trim(@val) if $f eq 'trim';
    return _norm(@val) if $f eq 'norm';
    return map { my $s = $_; $s =~ s/\A\s+|\s+\z//g; $s } @val if $f eq 'strip';
    return map { /([^\n]*\n|[^\n]+)/g } @val if $f eq 'lines';
    return [@val] if $f eq 'array';
    return join('', @val) if $f eq 'join';
    return map { MIME::Base64::decode_base64($_) } @val if $f eq 'base64_decode';
    return map { "$_\n" } @val if $f eq 'unchomp';
    return map { my $s = $_; $s =~ s/(\\[nrt\\"])/eval qq{"$1"}/ge; $s } @val if $f eq 'escape';
    if ($f eq 'regexp') {
        my $re = join '', @val;
        my $flags = $re =~ /\n.*?\n/s ? 'xism' : '';
        chomp $re unless $flags;
        my $qr = eval "qr{$re}$flags";
        croak "bad regexp in block '" . $self->name . "', section '$sect': $@" if $@;
        return $qr;
    }
    croak "unknown filter '$f' in block '" . $self->name . "', section '$sect'";
}

# Test::Base's filters live in the package section code runs in, and some
# are named like Perl builtins; with subs of those names declared there,
# perl warns "Ambiguous call resolved as CORE::join()" here as it does
# under the real Test::Nginx (write CORE::join in section code).
{
    package Test::Base::Filter;
    no strict 'refs';
    for my $f (qw(chomp chop join reverse sort split)) {
        *{$f} = sub { die "Test::Base::Filter::$f is a filter, not a function\n" } unless defined &{$f};
    }
}

# Section code runs in the package Test::Base uses for it, under strict,
# so a .t file behaves the same here and under the real Test::Nginx
# (package variables of the script are reached as $::name).  The code runs
# in the caller's context: a condition such as skip_eval's `0` must come
# back as 0, not as the length of a one-element list.
sub _eval_code {
    my ($code, $where) = @_;
    my $src = "package Test::Base::Filter; use strict; use warnings;\n#line 1 \"$where\"\n$code";
    my (@r, $r);
    if (wantarray) { @r = eval $src } else { $r = eval $src }
    die "eval failed in $where: $@" if $@;
    return wantarray ? @r : $r;
}

sub set_value {
    my ($self, $sect, @val) = @_;
    $self->{values}{$sect} = \@val;
    $self->{set}{$sect} = 1;
    push @{ $self->{order} }, $sect
        unless exists $self->{raw}{$sect} || grep { $_ eq $sect } @{ $self->{order} };
}

# Value of a section: the list in list context, its first element in
# scalar context, undef when the block has no such section.
sub get_value {
    my ($self, $sect) = @_;
    my $v = $self->{values}{$sect};
    if (!$v && exists $self->{raw}{$sect}) {
        $self->run_filters;
        $v = $self->{values}{$sect};
    }
    return wantarray ? () : undef unless $v;
    return wantarray ? @$v : $v->[0];
}

sub name        { scalar $_[0]->get_value('name') }
sub description { scalar $_[0]->get_value('description') }
sub seq_num     { scalar $_[0]->get_value('seq_num') }

sub AUTOLOAD {
    my $self = shift;
    (my $sect = $AUTOLOAD) =~ s/.*:://;
    return if $sect eq 'DESTROY';
    croak "no such block method: $sect" unless ref $self;
    return $self->get_value($sect);
}

1;
