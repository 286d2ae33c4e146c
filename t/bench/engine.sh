#!/usr/bin/env bash
# Engine benchmark on a random-weight Qwen2.5-0.5B-shaped model (bf16):
# prefill of a 256-token prompt, decode at batch 1, 4 and 16, and the
# bandwidth bound measured in the same runs.  Not a test: prints numbers.
#
#   t/bench/engine.sh [BUILD_DIR] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
threads=${2:-$(nproc)}
model=${LLM_BENCH_MODEL:-t/.cache/qwen2.5-0.5b-bf16}

make -s BUILD="$build" cli
if [ ! -f "$model/model.safetensors" ]; then
    mkdir -p "$(dirname "$model")"
    "$build/llm" synth --config t/bench/qwen2.5-0.5b.json --out "$model" --dtype bf16
fi
for b in 1 4 16; do
    echo "== batch $b"
    "$build/llm" bench --model "$model" --prompt-len 256 --gen 32 --batch "$b" --threads "$threads"
done
