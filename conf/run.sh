#!/usr/bin/env bash
# Starts (or stops) nginx with conf/nginx.conf and a runtime prefix under runtime/.
# usage: conf/run.sh [PORT] | conf/run.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
prefix="$top/runtime"
nginx_bin=${NGINX_BIN:-/usr/sbin/nginx}

if [ "${1:-}" = stop ]; then
    if [ -f "$prefix/logs/nginx.pid" ]; then
        "$nginx_bin" -p "$prefix" -c conf/nginx.conf -s quit && echo "nginx stopped"
    else
        echo "nginx is not running (no $prefix/logs/nginx.pid)"
    fi
    exit 0
fi

port=${1:-8080}

# The shipped default model; until its weights exist, the smallest fixture model.
model="$top/models/ngxllm-tiny"
if [ ! -f "$model/model.safetensors.index.json" ] && [ ! -f "$model/model.safetensors" ]; then
    model=$(ls -d "$top"/t/fixtures/models/*/ 2>/dev/null | while read -r d; do
        [ -f "$d/config.json" ] && echo "$(du -sk "$d" | cut -f1) ${d%/}"; done | sort -n | head -1 | cut -d' ' -f2)
    [ -n "$model" ] || { echo "no model found (models/ngxllm-tiny or t/fixtures/models/*)" >&2; exit 1; }
    echo "note: default model weights not present; serving fixture $model"
fi

mkdir -p "$prefix/conf" "$prefix/logs" "$prefix/tmp"
sed -e "s|@MODULE@|$top/build/ngx_http_llm_module.so|" \
    -e "s|@MODEL@|$model|" \
    -e "s|@PORT@|$port|" conf/nginx.conf > "$prefix/conf/nginx.conf"

if [ -f "$prefix/logs/nginx.pid" ] && kill -0 "$(cat "$prefix/logs/nginx.pid")" 2>/dev/null; then
    "$nginx_bin" -p "$prefix" -c conf/nginx.conf -s quit || true
    sleep 1
fi

"$nginx_bin" -p "$prefix" -c conf/nginx.conf -t -q
echo "listening on http://127.0.0.1:$port  (model: $model)"
echo "try:  curl http://127.0.0.1:$port/v1/models"
echo "stop: Ctrl-C, or 'make stop' from another shell"
exec "$nginx_bin" -p "$prefix" -c conf/nginx.conf -g 'daemon off;'
