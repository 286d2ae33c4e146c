# Sourced by the test scripts: the environment the .t files and unit tests
# read, for the build in ${build:-build} of the checkout at $top.
#   TEST_NGINX_BINARY        nginx to run (kept when already set)
#   TEST_NGINX_LOAD_MODULES  the module under test, loaded by every nginx.conf
#   TEST_NGINX_FIXTURES      t/fixtures (tiny models, golden ids, renders)
#   TEST_NGINX_MODELS        models/ (the shipped model)
#   TEST_NGINX_TOKENIZERS    real tokenizers fetched by t/fetch-tokenizers.sh
#   LLM_CLI                  the CLI built alongside
: "${top:?t/env.sh needs \$top}"
build=${build:-build}
export TEST_NGINX_BINARY=${TEST_NGINX_BINARY:-/usr/sbin/nginx}
export TEST_NGINX_LOAD_MODULES="$top/$build/ngx_http_llm_module.so"
export TEST_NGINX_FIXTURES="$top/t/fixtures"
export TEST_NGINX_MODELS="$top/models"
export TEST_NGINX_TOKENIZERS="$top/t/.cache/tokenizers"
export LLM_CLI="$top/$build/llm"
