#!/usr/bin/env bash
# `make test-asan`: the unit tests and the Test::Nginx suite (as t/run-all.sh
# runs them) against the build in $1 (compiled with -fsanitize=address,undefined).
# LLM_TESTS="t/011-chat.t ..." runs a subset of the .t files.
# Any sanitizer report fails the run: the processes abort on the first
# error, and every report file under the log directory is printed and counted.
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
build=${1:-build-asan}
logdir="$top/$build/asan-logs"
rm -rf "$logdir"; mkdir -p "$logdir"

export LLM_ASAN_LOG_DIR="$logdir"
# unit tests and the CLI are instrumented executables: leak checking stays on
export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1:log_path=$logdir/asan"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$logdir/ubsan"
export LSAN_OPTIONS="suppressions=$top/t/asan/lsan.supp:print_suppressions=0"
export TEST_NGINX_BINARY="$top/t/asan/nginx"
# sanitized code is 2-4x slower (a 1M-step template render in t/040 takes
# over 15 s on a loaded 2-core machine): give starts and clients more time
export TEST_NGINX_TIMEOUT=${TEST_NGINX_TIMEOUT:-40}
export LLM_NODE_TIMEOUT_SCALE=${LLM_NODE_TIMEOUT_SCALE:-3}
. t/env.sh
# What t/run-all.sh runs, with the nginx server roots under $build/ so a
# plain run in the same tree at the same time does not collide.
export LLM_SERVROOT_DIR="$top/$build"
start=$(date +%s)
bash t/fetch-tokenizers.sh && bash t/node/install.sh && bash t/make-gguf-models.sh archs || exit 1
jobs=${TEST_JOBS:-2}
prove -j"$jobs" -e '' "$build"/unit/test_*
rc=$?
prove -j"$jobs" --exec "$top/t/asan/servroot-exec" ${LLM_TESTS:-t/*.t} || rc=1

reports=$(find "$logdir" -type f | sort)
# the error logs of the suite may also hold reports (stderr of nginx)
logs=$(grep -l -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$build"/servroot-*/logs/error.log 2>/dev/null || true)
if [ -n "$reports" ] || [ -n "$logs" ]; then
    for f in $reports $logs; do echo "==== $f"; head -60 "$f"; done
    echo "test-asan: sanitizer reports found" >&2
    rc=1
fi
echo "test-asan: rc=$rc in $(( $(date +%s) - start )) s" >&2
exit $rc
