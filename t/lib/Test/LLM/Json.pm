package Test::LLM::Json;

# The module's JSON endpoints answer 415 unless the body is declared as
# `Content-Type: application/json` (docs/api.md), as the OpenAI and Anthropic
# SDKs send it.  Test::Nginx sends no Content-Type of its own, so a .t file
# calls json_content_type($block) from its block preprocessor: every POST
# block then carries the header, unless the block sets a Content-Type itself
# or has a more_headers line `# no Content-Type` (the tests of the 415; both
# runners skip comment lines there).  Works unchanged under the real Test::Nginx (put
# t/lib on the include path after its lib).

use strict;
use warnings;

use Exporter 'import';
our @EXPORT_OK = qw(json_content_type);

my $HEADER = 'Content-Type: application/json';

sub _with_header {
    my ($text) = @_;
    return $HEADER unless defined $text && length $text;
    return $text if $text =~ /^\s*(?:Content-Type\s*:|#\s*no Content-Type)/mi;
    return "$HEADER\n$text";
}

sub json_content_type {
    my ($block) = @_;
    my $req = $block->request;
    my @reqs = ref $req eq 'ARRAY' ? @$req : ($req // '');
    return unless grep { /^\s*POST\b/ } @reqs;
    my $mh = $block->more_headers;
    if (ref $mh eq 'ARRAY') {
        $block->set_value(more_headers => [map { _with_header($_) } @$mh]);
    } else {
        $block->set_value(more_headers => _with_header($mh));
    }
}

1;
