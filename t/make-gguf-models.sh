#!/bin/bash
# GGUF and MLX files the tests read, made from committed models by committed
# writers (numpy), so that the repository holds each model once:
#  - t/.cache/gguf-archs/: the architectures beyond llama/qwen as llama.cpp
#    lays them out (t/fixtures/gen/make_gguf_fixtures.py --archs; read by
#    t/unit/test_gguf.c against their Hugging Face folders), and gptoss_mxfp4/,
#    the gpt-oss fixture's MXFP4 checkpoint (t/fixtures/gen/make_gptoss_mxfp4.py;
#    read by t/unit/test_engine.c against t/fixtures/models/gptoss_bf16);
#  - the shipped default model (models/ngxllm-tiny) as quantized files for
#    the end-to-end tests: t/.cache/gguf/ngxllm-tiny-Q8_0.gguf and
#    -Q4_K_M.gguf (t/080-gguf.t), written by t/fixtures/gen/make_gguf.py,
#    and the MLX 4-bit folder t/.cache/mlx/ngxllm-tiny-4bit (groups of 64,
#    t/081-mlx.t), written by t/fixtures/gen/make_mlx.py.
# Remade when a source or a writer is newer than what was made.
#
#   t/make-gguf-models.sh [archs]     (archs: the first part only)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/t/.cache/gguf"
model="$root/models/ngxllm-tiny"
gen="$root/t/fixtures/gen"

py=""
for p in python3 /usr/bin/python3; do
    if "$p" -c "import numpy" >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || { echo "make-gguf-models: no python3 with numpy (Debian: python3-numpy)" >&2; exit 1; }

mkdir -p "$out"
# t/080-gguf.t and t/081-mlx.t both call this script, at once under prove -j:
# one runs it while the other waits, then finds the files made
exec 9>"$out/.lock"
flock 9

archs="$root/t/.cache/gguf-archs"
if [ ! -f "$archs/.made" ] \
   || [ -n "$(find "$gen" "$root/t/fixtures/models" -newer "$archs/.made" -type f -print -quit)" ]; then
    echo "make-gguf-models: $archs" >&2
    rm -rf "$archs.tmp"
    "$py" "$gen/make_gguf_fixtures.py" "$archs.tmp" --archs >/dev/null
    "$py" "$gen/make_gptoss_mxfp4.py" "$root/t/fixtures/models/gptoss_bf16" "$archs.tmp/gptoss_mxfp4"
    touch "$archs.tmp/.made"
    rm -rf "$archs"
    mv "$archs.tmp" "$archs"
fi
[ "${1:-}" = archs ] && exit 0
for t in Q8_0 Q4_K_M; do
    f="$out/ngxllm-tiny-$t.gguf"
    if [ -s "$f" ] && [ "$f" -nt "$gen/make_gguf.py" ] && [ "$f" -nt "$gen/gguf_writer.py" ] \
       && [ "$f" -nt "$model/model.safetensors.index.json" ]; then
        continue
    fi
    echo "make-gguf-models: $f" >&2
    "$py" "$gen/make_gguf.py" "$model" "$f.tmp" "$t"
    mv "$f.tmp" "$f"
done

mlx="$root/t/.cache/mlx/ngxllm-tiny-4bit"
if ! { [ -s "$mlx/model.safetensors" ] && [ "$mlx/model.safetensors" -nt "$gen/make_mlx.py" ] \
       && [ "$mlx/model.safetensors" -nt "$model/model.safetensors.index.json" ]; }; then
    echo "make-gguf-models: $mlx" >&2
    rm -rf "$mlx.tmp"
    "$py" "$gen/make_mlx.py" "$model" "$mlx.tmp" 4 64
    rm -rf "$mlx"
    mv "$mlx.tmp" "$mlx"
fi
