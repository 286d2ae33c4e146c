#!/usr/bin/env bash
# make soak: the default model (conf/nginx.conf) through the phases of
# t/bench/soak.js, then a reload to a configuration that cannot run:
#   mixed   SOAK_SECONDS (default 60) of mixed load with clients hanging up
#   bad     one bad request among 8 streams: no collateral failure
#   stall   clients that stop reading: paused, bounded, cancelled, slots freed
#   reload  mixed load with nginx -s reload every 2 s: zero truncated responses
#   huge    a reload to ctx=1048576 parallel=256 is refused, the workers serve on
#   quit    mixed load, then nginx -s quit: every accepted request completes
# SOAK_PHASES picks some ("reload quit").  Fails if a phase fails, a worker
# crashed, or an alert was logged (other than the refusal the huge phase
# provokes).
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
build=${BUILD:-build}
prefix="$top/$build/soak"
rm -rf "$prefix"
mkdir -p "$prefix/conf" "$prefix/logs"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
stall_port=$(free_port)
render() {   # $1: the llm_model options
    sed -e "s|@MODULE@|$top/$build/ngx_http_llm_module.so|" -e "s|@MODEL@|$top/models/ngxllm-tiny|" \
        -e "s|@PORT@|$port|" -e "s|ctx=4096 parallel=8|$1|" \
        -e "s|^http {|http {\n    include soak-stall.conf;|" \
        conf/nginx.conf > "$prefix/conf/nginx.conf"
}
render "ctx=2048 parallel=8 queue=8"
# a server whose clients fill their buffers fast: small send buffer, short send_timeout
cat > "$prefix/conf/soak-stall.conf" <<EOF
server {
    listen 127.0.0.1:$stall_port sndbuf=16k;
    send_timeout 3s;
    location = /v1/chat/completions { llm_api chat; }
}
EOF
nginx_ctl() { /usr/sbin/nginx -p "$prefix" -c conf/nginx.conf "$@"; }
health() { curl -sf "http://127.0.0.1:$port/health"; }
nginx_ctl
trap 'nginx_ctl -s quit 2>/dev/null || true' EXIT
for _ in $(seq 100); do health >/dev/null && break; sleep 0.1; done

export LLM_BASE_URL="http://127.0.0.1:$port" LLM_STALL_PORT=$stall_port NGINX_PREFIX=$prefix

# huge: the configuration check refuses it at nginx -s reload, and a HUP sent
# directly leaves the running workers in place
huge() {
    local pid after status
    pid=$(health | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
    render "ctx=1048576 parallel=256"
    if nginx_ctl -s reload 2>"$prefix/logs/huge.err"; then
        echo "FAIL (huge): nginx -s reload accepted ctx=1048576 parallel=256"; exit 1
    fi
    grep -q 'each worker needs .* more than the .* of this machine.s memory' "$prefix/logs/huge.err" \
        || { echo "FAIL (huge): no memory refusal:"; cat "$prefix/logs/huge.err"; exit 1; }
    kill -HUP "$(cat "$prefix/logs/nginx.pid")"
    sleep 2
    after=$(health | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
    status=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
        -d '{"messages":[{"role":"user","content":"still there?"}],"max_tokens":5}' \
        "http://127.0.0.1:$port/v1/chat/completions")
    echo "huge: nginx -s reload refused it; after a HUP worker $pid -> $after, a request got $status"
    [ "$pid" = "$after" ] && [ "$status" = 200 ] || { echo "FAIL (huge): the old workers stopped serving"; exit 1; }
    render "ctx=2048 parallel=8 queue=8"
}

for phase in ${SOAK_PHASES:-mixed bad stall reload huge quit}; do
    case $phase in
    huge) huge ;;
    quit)
        node t/bench/soak.js quit
        for _ in $(seq 300); do [ -e "$prefix/logs/nginx.pid" ] || break; sleep 0.1; done
        [ -e "$prefix/logs/nginx.pid" ] && { echo "FAIL (quit): nginx did not exit"; exit 1; }
        trap - EXIT ;;
    *) node t/bench/soak.js "$phase" ;;
    esac
done

if grep -E '\[(alert|crit|emerg)\]|exited on signal' "$prefix/logs/error.log" \
        | grep -v 'each worker needs .* more than the'; then
    echo "FAIL: see $prefix/logs/error.log"
    exit 1
fi
echo "soak: ok"
