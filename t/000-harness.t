# Self-test of the Test::Nginx::Socket runner in t/lib, using only stock
# nginx directives.  The blocks exercise every section the suite relies
# on; the checks after run_tests() run small scripts through the runner
# and assert that broken expectations are reported as failures.

use strict;
use warnings;
use Test::Nginx::Socket;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Temp qw(tempdir);

$ENV{TEST_NGINX_HTML_DIR} ||= html_dir();
$ENV{TEST_NGINX_GREETING} = 'howdy';

our $BigBody = join '', map { sprintf "line %05d\n", $_ } 1 .. 6000;

repeat_each(2);
env_to_nginx('TEST_NGINX_GREETING');

# 75 checks per round of blocks (counted in each block's comment), plus
# the runner self-checks at the end of this file.
plan tests => repeat_each() * 75 + 45;

log_level('debug');
no_long_string();
no_shuffle();

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(request => "GET /t") unless defined $block->request
        || defined $block->raw_request || defined $block->must_die;
    if (!defined $block->must_die && !defined $block->error_log
        && !defined $block->no_error_log) {
        $block->set_value(no_error_log => "[error]");
    }
});

run_tests();

runner_self_checks();

# ---- self-checks of failure reporting ----

sub run_script {
    my ($data, $head) = @_;
    my $dir = tempdir(CLEANUP => 1);
    my $lib = abs_path(dirname(__FILE__) . '/lib');
    open my $out, '>', "$dir/probe.t" or die "cannot write probe: $!";
    print $out "use Test::Nginx::Socket $head;\nno_shuffle();\nrun_tests();\n__DATA__\n$data";
    close $out;
    local $ENV{TEST_NGINX_SERVROOT} = "$dir/servroot";
    # A probe picks its own free port, also when the suite runs on a fixed one.
    local @ENV{qw(TEST_NGINX_SERVER_PORT TEST_NGINX_PORT)};
    delete @ENV{qw(TEST_NGINX_SERVER_PORT TEST_NGINX_PORT)};
    my $tap = `$^X -I$lib $dir/probe.t 2>&1`;
    return ($tap, $? >> 8);
}

sub runner_self_checks {
    my ($tap, $rc) = run_script(<<'EOT', "'no_plan'");
=== TEST 1: wrong expectations
--- config
    location = /t { add_header X-Here yes; return 200 "hello\n"; }
--- request
GET /t
--- error_code: 201
--- response_headers
X-Here: no
!X-Here
--- response_body
bye
--- error_log
this line is not in the log
--- no_error_log
[debug]

=== TEST 2: silent server without --- abort
--- config
    location = /t { limit_rate_after 0; limit_rate 1; return 200 "slow"; }
--- request
GET /t
--- timeout: 200ms
--- ignore_response

=== TEST 3: bad section filter
--- config
--- request chomp eval
"GET /t\n" . (
--- SKIP

=== TEST 4: nginx that does not die
--- config
--- must_die
EOT
    like($tap, qr/^not ok \d+ - \S+ TEST 1: wrong expectations - status code ok$/m,
         'wrong status is a failure');
    like($tap, qr/^not ok \d+ - .* TEST 1: .* - header X-Here ok$/m,
         'wrong header value is a failure');
    like($tap, qr/^not ok \d+ - .* TEST 1: .* - header X-Here not present in the raw headers$/m,
         'a present !header is a failure');
    like($tap, qr/^not ok \d+ - .* TEST 1: .* - response_body - response is expected/m,
         'wrong body is a failure');
    like($tap, qr/^not ok \d+ - .*should match a line in error\.log/m,
         'missing error_log pattern is a failure');
    like($tap, qr/^not ok \d+ - .*pattern "\[debug\]" should not match any line/m,
         'no_error_log pattern found is a failure');
    like($tap, qr/^not ok \d+ - ERROR: client socket timed out - .* TEST 2: /m,
         'timeout without --- abort is a failure');
    unlike($tap, qr/TEST 3/, '--- SKIP block does not run');
    like($tap, qr/^not ok \d+ - .* TEST 4: .* - die as expected/m,
         'must_die with a good config is a failure');
    my $fails = () = $tap =~ /^not ok /mg;
    is($fails, 8, 'exactly the broken expectations fail');
    isnt($rc, 0, 'failing script exits non-zero');

    ($tap, $rc) = run_script(<<'EOT', "'no_plan'");
=== TEST 1: first
--- config
    location = /t { return 200 "1\n"; }
--- request
GET /t
--- response_body
1

=== TEST 2: only this
--- ONLY
--- config
    location = /t { return 200 "2\n"; }
--- request
GET /t
--- response_body
2
EOT
    like($tap, qr/^ok 1 - \S+ TEST 2: only this - status code ok$/m, '--- ONLY runs that block');
    unlike($tap, qr/TEST 1: first/, '--- ONLY leaves the others out');

    ($tap, $rc) = run_script(<<'EOT', "'no_plan'");
=== TEST 1: one
--- config
    location = /t { return 200 "1\n"; }
--- request
GET /t
--- LAST

=== TEST 2: never
--- request
GET /t
EOT
    like($tap, qr/^ok 1 - .* TEST 1: one - status code ok$/m, '--- LAST block runs');
    unlike($tap, qr/TEST 2: never/, 'blocks after --- LAST are left out');
    is($rc, 0, 'passing script exits zero');

    my $data = "=== TEST 1: a\n--- config\n    location = /t { return 200 \"x\\n\"; }\n"
             . "--- request\nGET /t\n--- response_body\nx\n\n=== TEST 2: b\n--- request\nGET /t\n";
    my $plan_head = "; repeat_each(3); plan tests => repeat_each() * (blocks() * 2) - 3";
    ($tap, $rc) = run_script($data, $plan_head);
    like($tap, qr/^1\.\.9$/m, 'plan tests => repeat_each() * blocks() * N');
    my $oks = () = $tap =~ /^ok /mg;
    is($oks, 9, 'repeat_each(3) sends every request three times');
    is($rc, 0, 'a block without --- config reuses the previous one');

    # TEST_NGINX_LOAD_MODULES becomes load_module lines in the main context.
    {
        local $ENV{TEST_NGINX_LOAD_MODULES} = '/nonexistent/ngx_test_a.so';
        ($tap, $rc) = run_script(<<'EOT', "'no_plan'");
=== TEST 1: modules are loaded first
--- config
--- must_die
--- error_log eval
qr{dlopen\(\) "/nonexistent/ngx_test_a\.so" failed .* in \S+nginx\.conf:\d+$}
EOT
    }
    like($tap, qr/^ok 1 - .* die as expected$/m, 'a missing module stops nginx');
    like($tap, qr/^ok 2 - .* matches a line in error\.log/m, 'load_module comes from TEST_NGINX_LOAD_MODULES');

    # skip_eval, skip_nginx: a false condition runs the block, a true one
    # skips N checks; an --- http2 block still runs on nginx < 1.25.1 here.
    ($tap, $rc) = run_script(<<'EOT', "'no_plan'");
=== TEST 1: false skip_eval runs
--- skip_eval: 1: 0
--- config
    location = /t { return 200 "$server_protocol\n"; }
--- request
GET /t

=== TEST 2: true skip_eval skips
--- skip_eval: 2: 1 + 1 == 2
--- request
GET /t

=== TEST 3: skip_nginx below a version nginx is above skips
--- skip_nginx: 3: > 0.0.1
--- request
GET /t

=== TEST 4: skip_nginx above a version nginx is below runs
--- skip_nginx: 1: > 999.0.0
--- request
GET /t

=== TEST 5: http2 runs despite the real module's version bound
--- http2
--- skip_nginx: 2: < 1.25.1
--- config
    location = /t { return 200 "$server_protocol\n"; }
--- request
GET /t
--- response_body
HTTP/2.0

=== TEST 6: response_body_like and response_body_unlike are both checked
--- config
    location = /t { return 200 "$server_protocol\n"; }
--- request
GET /t
--- response_body_like: HTTP
--- response_body_unlike: 1\.1
EOT
    like($tap, qr/^ok 1 - .* TEST 1: false skip_eval runs - status code ok$/m,
         'skip_eval with a false condition runs the block');
    like($tap, qr/^ok 2 # skip .* TEST 2: .*\nok 3 # skip .* TEST 2: /m,
         'skip_eval with a true condition skips N checks');
    like($tap, qr/^ok 6 # skip .* TEST 3: .* nginx version > 0\.0\.1$/m,
         'skip_nginx with a true condition skips N checks');
    like($tap, qr/^ok 7 - .* TEST 4: .* - status code ok$/m, 'skip_nginx with a false condition runs');
    like($tap, qr/^ok 9 - .* TEST 5: .* - response_body - response is expected/m,
         'an --- http2 block below 1.25.1 runs here');
    like($tap, qr/^ok 11 - .* TEST 6: .* - response_body_like - /m, 'response_body_like checked');
    like($tap, qr/^not ok 12 - .* TEST 6: .* - response_body_unlike - /m,
         'response_body_unlike checked in the same block');
    is($rc, 1, 'only the unlike check fails');

    # nginx that cannot start ends the run the way the real module does.
    ($tap, $rc) = run_script(<<'EOT', "'no_plan'");
=== TEST 1: bad directive without must_die
--- config
    location = /t { no_such_directive on; }
--- request
GET /t

=== TEST 2: never reached
--- config
    location = /t { return 200; }
--- request
GET /t
EOT
    like($tap, qr/^Bail out!  \S+ TEST 1: .* - Cannot start nginx using command "\S+ -p .*" \(status code \d+\)\.$/m,
         'nginx that cannot start bails out');
    like($tap, qr/unknown directive "no_such_directive"/, 'the bail-out shows the error log');
    unlike($tap, qr/TEST 2/, 'no block runs after the bail-out');
    is($rc, 255, 'a bail-out exits 255');

    open my $in, '<', server_root() . '/conf/nginx.conf' or die "cannot read nginx.conf: $!";
    my $conf = do { local $/; <$in> };
    like($conf, qr/^env TEST_NGINX_GREETING;$/m, 'env_to_nginx adds env directives');

    node_driver_checks();
    parser_checks();
}

# The data-section parser on its own (Test::Base's rules).
sub parser_checks {
    require Test::Nginx::Lite::Blocks;
    my $blocks = Test::Nginx::Lite::Blocks::parse_blocks(<<'EOT');
preamble is ignored
=== TEST 1: first
some description
--- inline:   spaced value   
--- multi
line one
line two


--- kept -trim

  two leading blank lines kept

--- listed lines array
a
b
=== TEST 2: second
--- code eval: 6 * 7
--- colon: Name: value
EOT
    my ($one, $two) = @$blocks;
    $_->run_filters for @$blocks;
    is(scalar @$blocks, 2, 'parser: two blocks, preamble ignored');
    is($one->name . '|' . $one->description, "TEST 1: first|some description",
       'parser: name and description');
    is($one->inline, 'spaced value', 'parser: one-line value is trimmed');
    is($one->multi, "line one\nline two\n", 'parser: trailing blank lines dropped');
    is($one->kept, "\n  two leading blank lines kept\n\n", 'parser: -trim keeps blank lines');
    is_deeply($one->listed, ["a\n", "b\n"], 'parser: lines array');
    is($two->code . '|' . $two->colon, '42|Name: value', 'parser: eval and a colon in the value');
}

# Test::Nginx::Lite::Node: one nginx, client scripts run as TAP subtests.
sub node_driver_checks {
    SKIP: {
        skip 'node is not installed', 4 if system('node --version >/dev/null 2>&1') != 0;
        my $dir = tempdir(CLEANUP => 1);
        my $lib = abs_path(dirname(__FILE__) . '/lib');
        my $harness = abs_path(dirname(__FILE__) . '/node/lib/harness.js');
        open my $js, '>', "$dir/fetch.test.js" or die "cannot write script: $!";
        print $js <<"EOJ";
const t = require('$harness');
t.run(async () => {
  t.plan(2);
  const r = await fetch(t.baseUrl() + '/t');
  t.is(r.status, 200, 'status');
  t.is(await r.text(), 'port ' + process.env.TEST_NGINX_SERVER_PORT, 'body');
});
EOJ
        close $js;
        open my $bad, '>', "$dir/bad.test.js" or die "cannot write script: $!";
        print $bad "const t = require('$harness');\nt.plan(1); t.ok(false, 'broken');\n";
        close $bad;
        open my $drv, '>', "$dir/driver.t" or die "cannot write driver: $!";
        print $drv <<"EOD";
use Test::Nginx::Lite::Node qw(run_node_tests);
run_node_tests(scripts => ['$dir/fetch.test.js', '$dir/bad.test.js'], install => 0,
               config => 'location = /t { return 200 "port \$TEST_NGINX_SERVER_PORT"; }');
EOD
        close $drv;
        local $ENV{TEST_NGINX_SERVROOT} = "$dir/servroot";
        local @ENV{qw(TEST_NGINX_SERVER_PORT TEST_NGINX_PORT)};
        delete @ENV{qw(TEST_NGINX_SERVER_PORT TEST_NGINX_PORT)};
        my $tap = `$^X -I$lib $dir/driver.t 2>/dev/null`;
        like($tap, qr/^ok 1 - \S+fetch\.test\.js$/m, 'node driver: passing script is ok');
        like($tap, qr/^not ok 2 - \S+bad\.test\.js$/m, 'node driver: failing script is not ok');
        like($tap, qr/^ok 3 - nginx stayed up/m, 'node driver: nginx health check');
        is($? >> 8, 1, 'node driver exits with the number of failures');
    }
}

__DATA__

=== TEST 1: plain response, default headers
# 3 checks: status, header, body (+1 no_error_log from the preprocessor)
--- config
    location = /t { return 200 "hello\n"; }
--- response_headers
Content-Type: text/plain
--- response_body
hello



=== TEST 2: more_headers reach nginx, Host defaults to localhost
# 3 (+1)
--- config
    location = /t { return 200 "$http_x_one|$http_x_two|$host\n"; }
--- more_headers
X-One: first
# a comment line is ignored
X-Two: second value
--- response_body_like chomp
^first\|second value\|localhost$
--- error_code: 200



=== TEST 3: request body with Content-Length from the trimmed body
# 3: status, header, no_error_log
--- config
    location = /t {
        proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/empty;
        add_header X-Body "$request_body" always;
        add_header X-Len "$content_length" always;
    }
    location = /empty { return 204; }
--- request
POST /t
{"model": "m"}

--- error_code: 204
--- response_headers
X-Body: {"model": "m"}
X-Len: 14



=== TEST 4: request eval and response_body eval
# 2 (+1)
--- config
    location = /t { return 200 "$request_method $content_length\n"; }
--- request eval
"PUT /t\n" . ("x" x 1000)
--- response_body eval
"PUT 1000\n"



=== TEST 5: 404 with error_log and response_body_like
# 3: status, body, error_log
--- config
    location = /t { return 200; }
--- request
GET /missing.html
--- error_code: 404
--- response_body_like: 404 Not Found
--- error_log
open()



=== TEST 6: absent and regex-matched headers
# 3 (+1): status, !X-Nope via response_headers; the like form is exercised in TEST 7
--- config
    location = /t { add_header X-Req-Id abc-123; return 200 "ok\n"; }
--- response_headers
!X-Nope
X-Req-Id: abc-123



=== TEST 7: response_headers_like and raw_response_headers_like
# 4 (+1)
--- config
    location = /t { add_header X-Req-Id abc-123; return 200 "ok\n"; }
--- response_headers_like
X-Req-Id: abc-\d+
Content-Type: text/.*
--- raw_response_headers_like: X-Req-Id: abc-123\r\n
--- response_body_unlike: error



=== TEST 8: chunked response decoded (sub_filter drops Content-Length)
# 4 (+1)
--- config
    location = /t {
        sub_filter_types *;
        sub_filter 'hello' 'bye';
        return 200 "hello world\n";
    }
--- response_headers
Transfer-Encoding: chunked
!Content-Length
--- response_body
bye world



=== TEST 9: large chunked body from user_files
# 2 (+1)
--- config
    location = /big.txt {
        root $TEST_NGINX_HTML_DIR;
        sub_filter_types *;
        sub_filter 'line 00001' 'LINE 00001';
    }
--- user_files eval
">>> big.txt\n" . $::BigBody
--- request
GET /big.txt
--- response_body eval
(my $b = $::BigBody) =~ s/line 00001/LINE 00001/; $b



=== TEST 10: $TEST_NGINX_* expansion in config, http_config and main_config
# 2 (+1)
--- main_config
    pcre_jit on;
--- http_config
    map $uri $greeting { default "$TEST_NGINX_GREETING"; }
--- config
    location = /t { return 200 "$greeting $TEST_NGINX_SERVER_PORT\n"; }
--- response_body eval
"howdy $ENV{TEST_NGINX_SERVER_PORT}\n"



=== TEST 11: block without --- config reuses the previous configuration
# 2 (+1)
--- response_body eval
qr/^howdy \d+$/



=== TEST 12: raw_request is sent as it is
# 2 (+1)
--- config
    location = /t { return 200 "$server_protocol [$http_connection]\n"; }
--- raw_request eval
"GET /t HTTP/1.0\r\nHost: localhost\r\n\r\n"
--- response_body
HTTP/1.0 []



=== TEST 13: HEAD request has no body
# 3 (+1)
--- config
    location = /t { return 200 "0123456789\n"; }
--- request
HEAD /t
--- response_headers
Content-Length: 11
--- response_body chomp
--- error_code_like: ^2\d\d$



=== TEST 14: error_log and no_error_log with eval'd patterns
# 5: status, 2 error_log, 2 no_error_log
--- config
    location = /t { return 200 "ok\n"; }
--- error_log eval
[qr/http request line: "GET \/t HTTP\/1\.1"/, "http finalize request"]
--- no_error_log eval
[qr/\[emerg\]/, "[error]"]



=== TEST 15: per-block log level
# 2: status, no_error_log
--- config
    location = /t { return 200 "ok\n"; }
--- log_level: warn
--- no_error_log
[debug]



=== TEST 16: several requests in one block
# 4 (+2): two requests, status and body for each, no_error_log after each
--- config
    location = /a { return 200 "a\n"; }
    location = /b { return 201 "b\n"; }
--- request eval
["GET /a", "GET /b"]
--- error_code eval
[200, 201]
--- response_body eval
["a\n", "b\n"]



=== TEST 17: HTTP/2 through curl
# 3 (+1)
--- http2
--- skip_nginx: 4: < 1.25.1
--- config
    location = /t { return 200 "$server_protocol\n"; }
--- response_headers
Content-Type: text/plain
--- response_body
HTTP/2.0



=== TEST 18: abort on timeout is not a failure
# 2 (+1): status and the part of the body that arrived
--- config
    location = /t {
        limit_rate_after 250;
        limit_rate 1;
        return 200 "$request_id aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    }
--- timeout: 500ms
--- abort
--- response_body_like: ^[0-9a-f]{32} a+$



=== TEST 19: must_die with the error message in the error log
# 2: die as expected, error_log
--- config
    location = /t { no_such_directive on; }
--- must_die
--- error_log
unknown directive "no_such_directive"



=== TEST 20: must_die on a main_config error names the conf file
# 2
--- main_config
    pcre_jit maybe;
--- config
--- must_die
--- error_log eval
qr/invalid value "maybe" in .*nginx\.conf:\d+/



=== TEST 21: grep_error_log collects what a pattern matched
# 2 (+1): status, grep_error_log_out
--- config
    location = /t { return 200 "ok\n"; }
--- grep_error_log eval: qr/http request line: "[^"]+"/
--- grep_error_log_out
http request line: "GET /t HTTP/1.1"



=== TEST 22: skipped block never runs
--- SKIP
--- config
    location = /t { return 500; }
--- response_body
never
