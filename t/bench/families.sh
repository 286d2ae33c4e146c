#!/usr/bin/env bash
# Batch-1 decode of every dense family against Llama on the same synthesized
# shape (Qwen2.5-0.5B-sized, bf16, tied embeddings; t/bench/families/*.json),
# all in one process, one token of each model in turn (build/bench/families,
# t/bench/families.c), so the machine's bandwidth drift reaches every family
# alike.  Prints each model's median step, the bandwidth it implies and its
# ratio to Llama's: 1.00 = the same share of the memory bound as Llama.
# Not a test: nothing asserts on time.
#
#   t/bench/families.sh [BUILD_DIR] [THREADS] [MODEL_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
threads=${2:-$(nproc)}
dir=${3:-$build/bench/families-models}
steps=${STEPS:-100}
make -s BUILD="$build" cli "$build/bench/families"
mkdir -p "$dir"
dirs="$dir/llama"
for f in t/bench/families/*.json; do
    n=$(basename "$f" .json)
    [ -f "$dir/$n/model.safetensors" ] || "$build/llm" synth --config "$f" --out "$dir/$n" --dtype bf16 >/dev/null
    [ "$n" = llama ] || dirs="$dirs $dir/$n"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), threads $threads, $steps steps"
# shellcheck disable=SC2086
"$build/bench/families" "$threads" "$steps" $dirs
