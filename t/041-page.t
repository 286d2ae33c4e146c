# llm_api page: the chat page compiled into the module (src/page/chat.html).
# What the location answers (GET/HEAD, 405, 404 off the page's directory),
# its headers (type, revalidation by ETag, CSP), and that it stays behind
# nginx's auth_basic.  t/041-page-browser.t loads it in headless Chromium.
use Test::Nginx::Socket 'no_plan';
use Compress::Zlib ();
use Cwd ();
use File::Basename ();

no_shuffle();
$ENV{TEST_NGINX_HTML_DIR} ||= html_dir();

# The bytes the module embeds and the ETag it derives ("crc32-length").
our $Page = do {
    my $f = File::Basename::dirname(Cwd::abs_path(__FILE__)) . '/../src/page/chat.html';
    open my $fh, '<:raw', $f or die "$f: $!";
    local $/;
    <$fh>;
};
our $ETag = sprintf('"%08x-%d"', Compress::Zlib::crc32($Page), length $Page);

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value("main_config", "thread_pool llm threads=1;")
        unless defined $block->main_config;
    $block->set_value("http_config",
        "llm_model tiny $ENV{TEST_NGINX_FIXTURES}/models/qwen3_f32;\n"
        . "llm_thread_pool llm;")
        unless defined $block->http_config;
});

run_tests();

__DATA__

=== TEST 1: GET / is the page, byte for byte, as HTML that revalidates
--- config
location = / { llm_api page; }
--- request
GET /
--- error_code: 200
--- response_headers eval
"Content-Type: text/html; charset=utf-8
Cache-Control: no-cache
ETag: $::ETag
X-Content-Type-Options: nosniff
Content-Length: " . length $::Page
--- response_body eval
$::Page



=== TEST 2: the page may fetch its own origin only (no CDN, no other host)
--- config
location = / { llm_api page; }
--- request
GET /
--- response_headers_like
Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'



=== TEST 3: the page names no other host: every URL in it is relative
--- config
location = / { llm_api page; }
--- request
GET /
--- response_body_like eval
qr/\A(?!.*(?:https?:)?\/\/[a-z0-9.-]+[:\/])(?=.*fetch\(api\('models'\)).*\z/s



=== TEST 4: HEAD has the headers and no body
--- config
location = / { llm_api page; }
--- request
HEAD /
--- error_code: 200
--- response_headers eval
"Content-Type: text/html; charset=utf-8
ETag: $::ETag
Content-Length: " . length $::Page
--- response_body eval
""



=== TEST 5: a matching If-None-Match is a 304 without the page
--- config
location = / { llm_api page; }
--- request
GET /
--- more_headers eval
"If-None-Match: $::ETag"
--- error_code: 304
--- response_body eval
""



=== TEST 6: a stale ETag gets the page
--- config
location = / { llm_api page; }
--- request
GET /
--- more_headers
If-None-Match: "00000000-1"
--- error_code: 200
--- response_body eval
$::Page



=== TEST 7: POST is a 405 naming GET and HEAD
--- config
location = / { llm_api page; }
--- request
POST /
{"messages":[]}
--- more_headers
Content-Type: application/json
--- error_code: 405
--- response_headers
Allow: GET, HEAD
--- response_body_like: ^\{"error":\{"message":"Method POST is not allowed here; use GET, HEAD\."



=== TEST 8: under a prefix the page is its directory; other paths are a JSON 404
--- config
location /chat/ { llm_api page; }
--- request eval
["GET /chat/", "GET /chat/favicon.ico", "GET /chat/?x=1"]
--- error_code eval
[200, 404, 200]
--- response_body_like eval
[qr/<title>ngx_llm chat<\/title>/, qr/^\{"error":\{"message":"Invalid URL \(GET \/chat\/favicon\.ico\)/, qr/<title>ngx_llm chat<\/title>/]



=== TEST 9: behind auth_basic the page is a 401 without credentials
--- config
location = / {
    auth_basic "llm";
    auth_basic_user_file $TEST_NGINX_HTML_DIR/htpasswd;
    llm_api page;
}
--- user_files
>>> htpasswd
u:{PLAIN}pw
--- request
GET /
--- error_code: 401
--- response_headers_like
WWW-Authenticate: Basic realm="llm"



=== TEST 10: and the page with them
--- config
location = / {
    auth_basic "llm";
    auth_basic_user_file $TEST_NGINX_HTML_DIR/htpasswd;
    llm_api page;
}
--- user_files
>>> htpasswd
u:{PLAIN}pw
--- request
GET /
--- more_headers
Authorization: Basic dTpwdw==
--- error_code: 200
--- response_body eval
$::Page



=== TEST 11: an unknown llm_api value names page among the choices
--- config
location = / { llm_api pages; }
--- must_die
--- error_log eval
qr/unknown llm_api "pages", expected chat, completions, messages, responses, embeddings, models, health, tokenize, detokenize, metrics or page/
