#!/usr/bin/env bash
# Batch-1 decode of every dense family against Llama on the same synthesized
# shape (Qwen2.5-0.5B-sized, bf16, tied embeddings; t/bench/families/*.json):
# for each family, ROUNDS alternating runs of Llama and the family, each
# printing decode speed as a share of its bandwidth bound; the family's share
# over Llama's of the same round, best round reported.  Not a test: prints.
#
#   t/bench/families.sh [LLM_BINARY] [THREADS] [MODEL_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
llm=${1:-build/llm}
threads=${2:-$(nproc)}
dir=${3:-build/bench/families}
rounds=${ROUNDS:-3}
gen=${GEN:-48}
mkdir -p "$dir"
share() {   # model dir -> "decode / bandwidth bound" percent
    "$llm" bench --model "$1" --prompt-len 16 --gen "$gen" --batch 1 --threads "$threads" \
        | sed -n 's/^decode \/ bandwidth bound: \([0-9.]*\)%$/\1/p'
}
for f in t/bench/families/*.json; do
    n=$(basename "$f" .json)
    [ -f "$dir/$n/model.safetensors" ] || "$llm" synth --config "$f" --out "$dir/$n" --dtype bf16 >/dev/null
done
printf "%-10s %-28s %-28s %s\n" family "llama share per round %" "family share per round %" "best family/llama"
for f in t/bench/families/*.json; do
    n=$(basename "$f" .json)
    [ "$n" = llama ] && continue
    ls="" fs="" best=0
    for r in $(seq "$rounds"); do
        a=$(share "$dir/llama"); b=$(share "$dir/$n")
        ls="$ls $a"; fs="$fs $b"
        best=$(awk -v a="$a" -v b="$b" -v m="$best" 'BEGIN { x = b / a; print (x > m ? x : m) }')
    done
    printf "%-10s %-28s %-28s %.3f\n" "$n" "$ls" "$fs" "$best"
done
