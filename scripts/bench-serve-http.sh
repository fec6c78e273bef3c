#!/usr/bin/env bash
# `mcp-stdio serve-http` against supergateway (npm) and mcp-proxy (PyPI):
# the same stdio server (examples/echo, release) behind each, measured as
# one client session sees it (BENCHMARKS.md, "Any stdio server over HTTP").
#
#   ours          mcp-stdio serve-http (release, --features http)
#   supergateway  supergateway --outputTransport streamableHttp --stateful
#                 (one child per session; without --stateful it starts a
#                 child per request)
#   mcp-proxy     mcp-proxy --port P (its Streamable HTTP endpoint, /mcp)
#
#   scripts/bench-serve-http.sh [proxybench options]  e.g. --rounds 3 --calls 1000
#
# Prints, on stdout: start-up (from the proxy's start until a first
# `tools/list` through it is answered, median of 5), the proxy process's
# own resident set after the run (its child not counted; VmHWM peak,
# VmRSS now), and examples/proxybench's latency table (interleaved
# rounds, legacy sessions, which all three serve). Needs npm, python3 and
# the registries. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

SUPERGATEWAY=4.0.0
MCP_PROXY=0.13.0
OUT=target/interop
mkdir -p "$OUT/logs"
# shellcheck source=tests/conformance/install.sh
. tests/conformance/install.sh # NODE
OUT=target/interop

echo "== building (release) and installing the peers" >&2
cargo build --quiet --release --features http --bin mcp-stdio --example echo --example proxybench
# Its own npm prefix: tests/interop/serve-http.sh owns target/interop/serve-http.
if [ "$(cat "$OUT/supergateway/.pinned" 2>/dev/null)" != "$SUPERGATEWAY" ]; then
    mkdir -p "$OUT/supergateway"
    (cd "$OUT/supergateway" && echo '{"private":true}' >package.json &&
        npm install --silent --no-audit --no-fund "supergateway@$SUPERGATEWAY") &&
        echo "$SUPERGATEWAY" >"$OUT/supergateway/.pinned"
fi
if [ "$(cat "$OUT/mcp-proxy/.pinned" 2>/dev/null)" != "$MCP_PROXY" ]; then
    rm -rf "$OUT/mcp-proxy"
    python3 -m venv "$OUT/mcp-proxy"
    "$OUT/mcp-proxy/bin/pip" install --quiet --disable-pip-version-check "mcp-proxy==$MCP_PROXY"
    echo "$MCP_PROXY" >"$OUT/mcp-proxy/.pinned"
fi

CHILD=$PWD/target/release/examples/echo
CLI=target/release/mcp-stdio
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME PORT: the proxy NAME on PORT in front of the echo server; its pid.
start() {
    # `exec`: the pid is the proxy's own, not a subshell's.
    case $1 in
    ours) exec "$CLI" serve-http --listen "127.0.0.1:$2" -- "$CHILD" ;;
    supergateway)
        exec "$NODE" "$OUT/supergateway/node_modules/supergateway/dist/index.js" --stdio "$CHILD" \
            --outputTransport streamableHttp --stateful --port "$2" --logLevel none
        ;;
    mcp-proxy) exec "$OUT/mcp-proxy/bin/mcp-proxy" --port "$2" --host 127.0.0.1 "$CHILD" ;;
    esac >"$OUT/logs/bench-serve-http-$1.log" 2>&1 &
    echo $!
}

# startup NAME: milliseconds from the start until tools/list is answered.
startup() {
    local p t0 pid
    p=$(port)
    t0=$(date +%s%N)
    pid=$(start "$1" "$p")
    until "$CLI" tools --era legacy --url "http://127.0.0.1:$p/mcp" >/dev/null 2>&1; do
        sleep 0.005
    done
    echo $((($(date +%s%N) - t0) / 1000000))
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

urls=()
declare -A pid_of startup_of
for name in ours supergateway mcp-proxy; do
    echo "== $name: start-up" >&2
    startup_of[$name]=$(for _ in 1 2 3 4 5; do startup "$name"; done | sort -n | sed -n 3p)
    p=$(port)
    pid_of[$name]=$(start "$name" "$p")
    PIDS+=("${pid_of[$name]}")
    until "$CLI" tools --era legacy --url "http://127.0.0.1:$p/mcp" >/dev/null 2>&1; do sleep 0.01; done
    urls+=("$name=http://127.0.0.1:$p/mcp")
done
table=$(target/release/examples/proxybench "$@" "${urls[@]}")
echo "| proxy | start-up ms (median of 5) | RSS peak MB | RSS after MB |"
echo "|---|---:|---:|---:|"
for name in ours supergateway mcp-proxy; do
    status=/proc/${pid_of[$name]}/status
    hwm=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "$status")
    rss=$(awk '/VmRSS/ {printf "%.1f", $2/1024}' "$status")
    echo "| $name | ${startup_of[$name]} | $hwm | $rss |"
done
echo
echo "$table"
