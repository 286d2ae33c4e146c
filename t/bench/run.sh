#!/usr/bin/env bash
# make bench: engine and server throughput on a random-weight model of a real
# shape (Qwen2.5-0.5B, bf16, and quantized at load to Q8_0, Q4_0, Q4_K_M;
# BENCH_QUANTS picks).  Prints the engine's own numbers, then drives
# nginx with 1, 4 and 16 concurrent streaming clients.  Not a test: nothing
# here asserts on time.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
build=${BUILD:-build}
config=${BENCH_CONFIG:-t/bench/qwen2.5-0.5b.json}
dtype=${BENCH_DTYPE:-bf16}
threads=${BENCH_THREADS:-$(nproc)}
prompt=${BENCH_PROMPT:-128}
gen=${BENCH_GEN:-32}
model="$top/$build/bench/$(basename "$config" .json)-$dtype"

if [ ! -f "$model/model.safetensors" ]; then
    echo "synthesising $model"
    mkdir -p "$(dirname "$model")"
    "$build/llm" synth --config "$config" --out "$model" --dtype "$dtype"
fi

# the server needs a tokenizer: Qwen's real one fits this vocabulary
bash t/fetch-tokenizers.sh >/dev/null
cp t/.cache/tokenizers/qwen3/tokenizer.json t/.cache/tokenizers/qwen3/tokenizer_config.json "$model/"

echo "== grammar engine (masks and compile on Qwen3's 150k vocabulary; decode with and without a grammar on the bench model, $threads threads; load: $(cut -d' ' -f1-3 /proc/loadavg))"
"$build/bench/grammar" t/.cache/tokenizers/qwen3 "${BENCH_GRAMMAR_GENS:-20}" "$model" "$threads"

echo "== speculative decoding on the default model (greedy, 1 sequence, ${BENCH_SPEC_THREADS:-1} thread(s); load: $(cut -d' ' -f1-3 /proc/loadavg))"
"$build/bench/spec" models/ngxllm-tiny "${BENCH_SPEC_THREADS:-1}" "${BENCH_SPEC_REPEATS:-3}"

echo "== engine alone (build/llm bench)"
for b in 1 4 16; do
    "$build/llm" bench --model "$model" --prompt-len "$prompt" --gen "$gen" --batch "$b" --threads "$threads"
done

# the same weights quantized at load (quant=: Q8_0, Q4_0, and the Q4_K_M mix,
# whose 896-wide rows fall back to Q5_0 / Q8_0 as llama.cpp's do): prefill,
# batch-1 decode against the bandwidth bound of the quantized bytes, 16 streams
for q in ${BENCH_QUANTS:-q8_0 q4_0 q4_k}; do
    echo "== engine alone, quant=$q"
    for b in 1 16; do
        "$build/llm" bench --model "$model" --quant "$q" --prompt-len "$prompt" --gen "$gen" --batch "$b" \
            --threads "$threads"
    done
done

echo "== panel matmuls alone, 1 thread, every kernel table this CPU runs (best of 5; load: $(cut -d' ' -f1-3 /proc/loadavg))"
"$build/bench/qmatmul" 5

echo "== MoE: Qwen3-30B-A3B's experts with 4 of its layers (t/bench/qwen3-30b-a3b-4l.json, $dtype)"
moe="$top/$build/bench/qwen3-30b-a3b-4l-$dtype"
[ -f "$moe/model.safetensors" ] || "$build/llm" synth --config t/bench/qwen3-30b-a3b-4l.json --out "$moe" --dtype "$dtype"
for b in 1 4; do
    "$build/llm" bench --model "$moe" --prompt-len "$prompt" --gen "$gen" --batch "$b" --threads "$threads"
done

echo "== hybrid: Qwen3-Next-80B-A3B's Gated DeltaNet, gated attention and experts with 4 of its layers (3 DeltaNet, 1 attention) and 64 of its 512 experts (t/bench/qwen3-next-80b-a3b-4l.json, $dtype)"
hybrid="$top/$build/bench/qwen3-next-80b-a3b-4l-$dtype"
[ -f "$hybrid/model.safetensors" ] || "$build/llm" synth --config t/bench/qwen3-next-80b-a3b-4l.json --out "$hybrid" --dtype "$dtype"
for b in 1 4; do
    "$build/llm" bench --model "$hybrid" --prompt-len "$prompt" --gen "$gen" --batch "$b" --threads "$threads"
done

echo "== server (nginx + thread pool + SSE), $threads threads"
prefix="$top/$build/bench/nginx"
mkdir -p "$prefix/conf" "$prefix/logs"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$prefix/conf/nginx.conf" <<CONF
load_module $top/$build/ngx_http_llm_module.so;
worker_processes 1;
error_log logs/error.log notice;
pid logs/nginx.pid;
thread_pool llm threads=1;
events { worker_connections 256; }
http {
    access_log off;
    llm_model bench $model ctx=1024 parallel=16 queue=64 threads=$threads;
    llm_thread_pool llm;
    server {
        listen 127.0.0.1:$port;
        location = /v1/completions { llm_api completions; }
        location = /health { llm_api health; }
    }
}
CONF
/usr/sbin/nginx -p "$prefix" -c conf/nginx.conf
trap '/usr/sbin/nginx -p "$prefix" -c conf/nginx.conf -s quit 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.1
done

LLM_BASE_URL="http://127.0.0.1:$port" BENCH_PROMPT=$prompt BENCH_GEN=$gen \
    node t/bench/load.js 1 4 16

# agent-loop replay (t/bench/agent.js): a coding agent's session shape on a small model of a
# real vocabulary, through a fresh server with a KV budget that holds every session
echo "== agent replay ($threads threads; load: $(cut -d' ' -f1-3 /proc/loadavg))"
/usr/sbin/nginx -p "$prefix" -c conf/nginx.conf -s quit 2>/dev/null || true
agent="$top/$build/bench/agent-model-$dtype"
if [ ! -f "$agent/model.safetensors" ]; then
    "$build/llm" synth --config t/bench/agent-model.json --out "$agent" --dtype "$dtype"
fi
cp t/.cache/tokenizers/qwen3/tokenizer.json t/.cache/tokenizers/qwen3/tokenizer_config.json "$agent/"
rm -rf "$prefix/kvcache"
sed -e "s|llm_model bench .*;|llm_model bench $agent parallel=8 queue=64 threads=$threads kv=f16 kv_memory=${BENCH_AGENT_KV:-2048m}; llm_kv_cache_path kvcache max_size=1024m;|" \
    -e "s|location = /v1/completions { llm_api completions; }|location = /v1/messages { llm_api messages; }|" \
    "$prefix/conf/nginx.conf" > "$prefix/conf/agent.conf"
for _ in $(seq 50); do [ -f "$prefix/logs/nginx.pid" ] || break; sleep 0.1; done
/usr/sbin/nginx -p "$prefix" -c conf/agent.conf
trap '/usr/sbin/nginx -p "$prefix" -c conf/agent.conf -s quit 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.1
done
LLM_BASE_URL="http://127.0.0.1:$port" AGENT_NGINX_PID="$prefix/logs/nginx.pid" node t/bench/agent.js

# several nodes behind a front nginx: cached-token share by balancing, and
# the cost of the front hop per chunk (docs/deployment.md)
/usr/sbin/nginx -p "$prefix" -c conf/agent.conf -s quit 2>/dev/null || true
trap - EXIT
BUILD=$build perl -I t/lib t/bench/scale.pl
