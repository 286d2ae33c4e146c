#!/usr/bin/env bash
# Batch-1 decode of every dense family against Llama on the same synthesized
# shape (Qwen2.5-0.5B-sized, bf16, tied embeddings; t/bench/families/*.json).
# For each family, ROUNDS rounds of one Llama run and one family run back to
# back; per round the family's bandwidth-bound ratio over Llama's, from the
# fastest decode step of each run (the step least disturbed by other load),
# with the bandwidth taken as equal within the round (the separate bandwidth
# probes of one run drift more than decode itself on a shared machine):
#   (family tok/s x family MB per token) / (Llama tok/s x Llama MB per token)
# 1.00 = the family reaches the same share of the memory bound as Llama.
# Prints every round and the median.  Not a test: nothing asserts on time.
#
#   t/bench/families.sh [LLM_BINARY] [THREADS] [MODEL_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
llm=${1:-build/llm}
threads=${2:-$(nproc)}
dir=${3:-build/bench/families}
rounds=${ROUNDS:-5}
gen=${GEN:-128}
mkdir -p "$dir"
# model dir -> "tok/s MB" of a batch-1 decode
run() {
    "$llm" bench --model "$1" --prompt-len 16 --gen "$gen" --batch 1 --threads "$threads" | awk '
        /^bandwidth bound, 1 stream:/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "MB") { mb = $i; sub(/^\(/, "", mb) } }
        /^decode fastest step:/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "tok/s") { ts = $i; exit } }
        END { print ts, mb }'
}
for f in t/bench/families/*.json; do
    n=$(basename "$f" .json)
    [ -f "$dir/$n/model.safetensors" ] || "$llm" synth --config "$f" --out "$dir/$n" --dtype bf16 >/dev/null
done
echo "load: $(uptime)"
printf "%-9s %-8s %-44s %s\n" family "MB/tok" "family/llama per round" median
for f in t/bench/families/*.json; do
    n=$(basename "$f" .json)
    [ "$n" = llama ] && continue
    rs=""
    for r in $(seq "$rounds"); do
        read -r lt lm < <(run "$dir/llama")
        read -r ft fm < <(run "$dir/$n")
        rs="$rs $(awk -v a="$lt" -v b="$lm" -v c="$ft" -v d="$fm" 'BEGIN { printf "%.3f", (c * d) / (a * b) }')"
    done
    med=$(echo $rs | tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    printf "%-9s %-8s %-44s %s\n" "$n" "$fm" "$rs" "$med"
done
