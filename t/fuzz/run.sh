#!/usr/bin/env bash
# `make fuzz FUZZ_SECONDS=N`: build the libFuzzer targets (clang,
# -fsanitize=fuzzer,address,undefined) into $1 and run each for N seconds,
# FUZZ_JOBS (default 2) at a time under nice.  Seeds: t/fuzz/corpus/<target>/
# (committed, read-only); inputs found go to $1/corpus/<target>/, crashes to
# $1/crashes/.  FUZZ_TARGETS="openai jinja" limits the set; FUZZ_BUILD_ONLY=1
# only builds.  Exit status 1 if any target crashed.
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
build=${1:-build-fuzz}
secs=${2:-60}
jobs=${FUZZ_JOBS:-2}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
all="openai anthropic tokenizer jinja parsers safetensors config prefix_key"
targets=${FUZZ_TARGETS:-$all}

bash t/fetch-tokenizers.sh >/dev/null 2>&1 || echo "fuzz: tokenizers not fetched; tokenizer/jinja targets use the fixtures only" >&2

# The core library, instrumented for coverage (clang; its warnings are not
# errors here).  kernels/cpu is built by gcc and left uninstrumented: clang 14
# lacks some __builtin_cpu_supports names, and no target feeds kernels bytes.
# Objects are rebuilt when their source or any core header is newer.
dirs="src/core src/api src/chat src/parsers src/engine kernels/cpu"
newest_h=$(ls -t $(for d in $dirs; do echo $d/*.h; done) | head -1)
mkdir -p "$build/obj"
: >"$build.log"
compile() {
    local c=$1 o=$2
    case $c in
    kernels/*) cc -std=gnu11 -O1 -g -fPIC -pthread -Isrc -I. -c "$c" -o "$o" ;;
    *) clang -std=gnu11 -O1 -g -fPIC -pthread -Wall -Wextra -Wno-unused-parameter \
           -fsanitize=fuzzer-no-link $san -Isrc -I. -c "$c" -o "$o" ;;
    esac
}
export -f compile; export san
for d in $dirs; do for c in $d/*.c; do
    o=$build/obj/$(echo "$c" | tr / _).o
    if [ ! -f "$o" ] || [ "$c" -nt "$o" ] || [ "$newest_h" -nt "$o" ]; then echo "$c $o"; fi
done; done | xargs -r -n2 -P2 bash -c 'compile "$0" "$1"' >>"$build.log" 2>&1 \
    || { tail -30 "$build.log"; exit 1; }
objs=()
for d in $dirs; do for c in $d/*.c; do objs+=("$build/obj/$(echo "$c" | tr / _).o"); done; done
lib=$build/libllmcore_fuzz.a
rm -f "$lib" && ar rcs "$lib" "${objs[@]}" || exit 1
mkdir -p "$build/bin" "$build/corpus" "$build/crashes" "$build/logs"
for t in $targets; do
    src=t/fuzz/fuzz_$t.c
    bin=$build/bin/fuzz_$t
    if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] || [ t/fuzz/llm_fuzz.h -nt "$bin" ] \
       || [ "$lib" -nt "$bin" ]; then
        clang -std=gnu11 -O1 -g -fsanitize=fuzzer $san -Isrc -I. -It/fuzz \
            -DLLM_FUZZ_ROOT="\"$top\"" "$src" "$lib" \
            -ljansson -lpcre2-8 -lopenblas -lm -lpthread -o "$bin" || exit 1
    fi
done
[ -n "${FUZZ_BUILD_ONLY:-}" ] && exit 0

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$top/t/asan/lsan.supp:print_suppressions=0"
run_one() {
    local t=$1 dict=()
    mkdir -p "$build/corpus/$t"
    [ -f "t/fuzz/$t.dict" ] && dict=(-dict="t/fuzz/$t.dict")
    nice -n 10 "$build/bin/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=3072 \
        -max_len=8192 -print_final_stats=1 "${dict[@]}" \
        -artifact_prefix="$build/crashes/$t-" "$build/corpus/$t" "t/fuzz/corpus/$t" \
        >"$build/logs/$t.log" 2>&1
    echo "$t rc=$?" >>"$build/logs/$t.log"
}
running=0
for t in $targets; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

rc=0
printf '%-12s %10s %8s %8s %8s %s\n' target execs cov ft corpus status
for t in $targets; do
    log=$build/logs/$t.log
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    status=ok
    if ! grep -q "^$t rc=0" "$log"; then status="CRASH (see $log, $build/crashes/$t-*)"; rc=1; fi
    printf '%-12s %10s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$status"
done
exit $rc
