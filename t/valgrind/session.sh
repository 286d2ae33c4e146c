#!/usr/bin/env bash
# A short scripted session against nginx (master + one worker) running
# under the memcheck command given after $1 (build) and $2 (output dir):
# models, chat and completions (plain and streamed), Anthropic messages,
# count_tokens, embeddings, bad requests, and two clients that disconnect
# mid-stream; then /health must show no live sequence and nginx is stopped
# with QUIT so every process writes its leak report.
set -uo pipefail
top=$(pwd)
build=$1; out=$2; shift 2
root=$out/nginx
mkdir -p "$root/logs" "$root/conf"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user=""; [ "$(id -u)" = 0 ] && user="user root;"
cat >"$root/conf/nginx.conf" <<CONF
$user
worker_processes 1;
daemon off;
master_process on;
error_log $root/logs/error.log info;
pid $root/logs/nginx.pid;
load_module $top/$build/ngx_http_llm_module.so;
thread_pool llm threads=1;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $root/body;
    proxy_temp_path $root/proxy; fastcgi_temp_path $root/fastcgi;
    uwsgi_temp_path $root/uwsgi; scgi_temp_path $root/scgi;
    llm_model tiny $top/t/fixtures/models/qwen3_f32 parallel=2;
    llm_thread_pool llm;
    server {
        listen 127.0.0.1:$port;
        location = /v1/chat/completions { llm_api chat; }
        location = /v1/completions { llm_api completions; }
        location = /v1/embeddings { llm_api embeddings; }
        location /v1/messages { llm_api messages; }
        location = /v1/models { llm_api models; }
        location = /health { llm_api health; }
    }
}
CONF
"$@" --trace-children=yes --log-file="$root/nginx.%p.vg" \
    /usr/sbin/nginx -p "$root" -c "$root/conf/nginx.conf" >"$root/stderr" 2>&1 &
vgpid=$!
for i in $(seq 1 600); do
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
    sleep 0.2
done
base=http://127.0.0.1:$port
fail=0
req() {   # req EXPECTED_STATUS PATH BODY
    local code
    code=$(curl -s -o "$root/last" -w '%{http_code}' -m 120 -H 'Content-Type: application/json' \
           ${3:+--data-binary "$3"} "$base$2")
    if [ "$code" != "$1" ]; then
        echo "session: $2 -> $code, expected $1: $(head -c 300 "$root/last")"
        fail=1
    fi
}
req 200 /v1/models
req 200 /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4}'
req 200 /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":2}'
req 200 /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"weather?"}],"max_tokens":6,"n":2,"stop":["x"],"temperature":0.8,"seed":3}'
req 200 /v1/completions '{"model":"tiny","prompt":"Once upon","max_tokens":5,"echo":true,"logprobs":1}'
req 200 /v1/completions '{"model":"tiny","prompt":"Once upon","max_tokens":5,"stream":true}'
req 200 /v1/messages '{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}'
req 200 /v1/messages '{"model":"tiny","max_tokens":4,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
req 200 /v1/messages/count_tokens '{"model":"tiny","messages":[{"role":"user","content":"hi"}]}'
req 200 /v1/embeddings '{"model":"tiny","input":["a","bc"]}'
req 400 /v1/chat/completions '{"model":"tiny","messages":[{"role":"bot","content":"hi"}]}'
req 400 /v1/chat/completions '{"model":"tiny","messages":'"$(printf '[%.0s' $(seq 100))$(printf ']%.0s' $(seq 100))"'}'
req 400 /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"'"$(head -c 400 /dev/zero | tr '\0' y)"'"}]}'
req 404 /v1/chat/completions '{"model":"nope","messages":[{"role":"user","content":"hi"}]}'
req 400 /v1/chat/completions '{"model":"tiny",'
# two clients leave mid-stream: the first after its first bytes, the second
# while queued behind a long generation
for n in 1 2; do
    curl -s -N -m 120 -H 'Content-Type: application/json' --data-binary \
        '{"model":"tiny","messages":[{"role":"user","content":"go"}],"max_tokens":200,"stream":true}' \
        "$base/v1/chat/completions" | head -c 200 >/dev/null &
done
curl -s -N -m 3 -H 'Content-Type: application/json' --data-binary \
    '{"model":"tiny","prompt":"long","max_tokens":220,"stream":true}' "$base/v1/completions" >/dev/null
wait %2 %3 2>/dev/null
# the cancelled sequences are released: /health returns to 0 live sequences
for i in $(seq 1 100); do
    curl -s -m 60 "$base/health" >"$root/health"
    grep -q '"live_sequences":0' "$root/health" && break
    sleep 0.5
done
grep -q '"live_sequences":0' "$root/health" || { echo "session: sequences left: $(cat "$root/health")"; fail=1; }
req 200 /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"after"}],"max_tokens":3}'

kill -QUIT "$(cat "$root/logs/nginx.pid")"
wait "$vgpid"
if grep -E '\[(alert|crit|emerg)\]|exited on signal' "$root/logs/error.log"; then fail=1; fi
echo "session: fail=$fail"
exit $fail
