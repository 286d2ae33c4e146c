#!/bin/bash
# The shipped default model (models/ngxllm-tiny) as GGUF files for the
# end-to-end tests (t/080-gguf.t): t/.cache/gguf/ngxllm-tiny-Q8_0.gguf and
# -Q4_K_M.gguf, written by t/fixtures/gen/make_gguf.py (numpy).  Remade when
# the model or the writer is newer than a file.
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
