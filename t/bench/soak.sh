#!/usr/bin/env bash
# make soak: the default model under mixed load for SOAK_SECONDS (default 60);
# fails if a worker crashed, an alert was logged or a sequence was left behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
build=${BUILD:-build}
prefix="$top/$build/soak"
rm -rf "$prefix"
mkdir -p "$prefix/conf" "$prefix/logs"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -e "s|@MODULE@|$top/$build/ngx_http_llm_module.so|" -e "s|@MODEL@|$top/models/ngxllm-tiny|" \
    -e "s|@PORT@|$port|" -e "s|ctx=4096 parallel=8|ctx=2048 parallel=8 queue=8|" \
    conf/nginx.conf > "$prefix/conf/nginx.conf"
/usr/sbin/nginx -p "$prefix" -c conf/nginx.conf
trap '/usr/sbin/nginx -p "$prefix" -c conf/nginx.conf -s quit 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done

LLM_BASE_URL="http://127.0.0.1:$port" node t/bench/soak.js
if grep -E '\[(alert|crit|emerg)\]' "$prefix/logs/error.log"; then
    echo "FAIL: see $prefix/logs/error.log"
    exit 1
fi
echo "soak: ok"
