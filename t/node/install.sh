#!/usr/bin/env bash
# Installs the node client SDKs into t/node/node_modules (git-ignored) with
# `npm ci`, only when they are missing or package.json / package-lock.json
# changed since the last install.  Quiet on success; on failure prints npm's
# output and exits non-zero.
#   t/node/install.sh [DIR]   the same for the package.json in DIR
#                             (t/clients: the agent clients of `make clients`)
set -euo pipefail

cd "${1:-$(dirname "$0")}"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "t/node/install.sh: '$tool' not found (Debian: apt-get install nodejs npm)" >&2
        exit 1
    fi
done

major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
    echo "t/node/install.sh: node >= 18 is needed, found $(node --version)" >&2
    exit 1
fi

stamp=node_modules/.install-stamp
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

# Test files running in parallel may all call this: one installs, the
# others wait for it and then find the stamp up to date.
if command -v flock >/dev/null 2>&1; then
    lock="${TMPDIR:-/tmp}/ngx_llm-npm-$(pwd | sha256sum | cut -c1-16).lock"
    exec 9>"$lock"
    flock 9
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        exit 0
    fi
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
    echo "t/node/install.sh: 'npm ci' failed in $(pwd):" >&2
    cat "$log" >&2
    exit 1
fi
echo "$want" >"$stamp"
