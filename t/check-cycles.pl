#!/usr/bin/env perl
# No dependency cycles between the files of the tree (`make check-cycles`,
# run by `make test`).  A file depends on another when its object uses a
# symbol the other defines (nm), which is what an include cycle hides: two
# files that call each other through a shared header are one unit in
# disguise.  Prints each cycle (the strongly connected components of more
# than one file) and exits 1 when there is one.
#
#   t/check-cycles.pl OBJECT...
#
# Every file of an nginx module names its ngx_module_t (to reach its
# configuration and request context) while the file that defines it names
# the handlers: that is how nginx modules are built, so the module objects
# are not counted as dependencies.
use strict;
use warnings;

my %nginx_module = map { $_ => 1 }
    qw(ngx_http_llm_module ngx_http_llm_route_module ngx_http_llm_memory_module);

# Known cycles in files another issue is changing now; each entry names
# them all, sorted.  Remove an entry when its cycle is gone.
my %known = map { $_ => 1 } (
    # issue 15 (quant): fp16/bf16 conversions vs. row (de)quantizers
    'llm_kernels_scalar.o llm_quant.o',
);

my (%defines, %uses);
for my $obj (@ARGV) {
    open(my $nm, '-|', 'nm', $obj) or die "nm $obj: $!\n";
    while (<$nm>) {
        if (/^\S+\s+[TDBRC]\s+(\S+)$/) {
            $defines{$1} = $obj;
        } elsif (/^\s+U\s+(\S+)$/) {
            $uses{$obj}{$1} = 1;
        }
    }
    close($nm) or die "nm $obj failed\n";
}

my %edges;
for my $obj (@ARGV) {
    for my $sym (keys %{ $uses{$obj} || {} }) {
        my $to = $defines{$sym};
        next if !defined $to || $to eq $obj || $nginx_module{$sym};
        $edges{$obj}{$to} = 1;
    }
}

# Tarjan's strongly connected components.
my ($index, @stack, %on, %idx, %low, @cycles) = (0);
my $visit;
$visit = sub {
    my ($v) = @_;
    $idx{$v} = $low{$v} = $index++;
    push @stack, $v;
    $on{$v} = 1;
    for my $w (sort keys %{ $edges{$v} || {} }) {
        if (!defined $idx{$w}) {
            $visit->($w);
            $low{$v} = $low{$w} if $low{$w} < $low{$v};
        } elsif ($on{$w}) {
            $low{$v} = $idx{$w} if $idx{$w} < $low{$v};
        }
    }
    if ($low{$v} == $idx{$v}) {
        my @comp;
        while (1) {
            my $w = pop @stack;
            delete $on{$w};
            push @comp, $w;
            last if $w eq $v;
        }
        push @cycles, [sort @comp] if @comp > 1;
    }
};
$visit->($_) for grep { !defined $idx{$_} } sort @ARGV;

my $failed = 0;
for my $c (@cycles) {
    my $names = join ' ', sort map { (split m{/}, $_)[-1] } @$c;
    if ($known{$names}) {
        print "known cycle (see t/check-cycles.pl): $names\n";
        next;
    }
    $failed = 1;
    print "cycle: $names\n";
    for my $a (@$c) {
        for my $b (@$c) {
            next if $a eq $b || !$edges{$a}{$b};
            my @syms = sort grep { ($defines{$_} // '') eq $b } keys %{ $uses{$a} };
            printf "  %s -> %s (%s)\n", $a, $b, join(', ', @syms);
        }
    }
}
printf "check-cycles: %d objects, %s\n", scalar(@ARGV), $failed ? 'cycles found' : 'no new cycles';
exit $failed;
