#!/usr/bin/env bash
# The Streamable HTTP benchmark of issue 27 (BENCHMARKS.md, "Streamable HTTP
# (issue 27)"): the same echo tool on three servers, measured by
# examples/httpload in one interleaved run (rounds alternate the servers):
#
#   ours    examples/echo --http (feature http), release
#   rmcp    rmcp 3.11's Streamable HTTP server, stateless, JSON responses
#           (tests/interop/rmcp-http), release
#   python  the Python SDK 2.3's server, stateless, JSON responses
#           (tests/interop/python/http_echo_server.py, uvicorn)
#
#   scripts/bench-http.sh [httpload options]   e.g. --rounds 5 --calls 2000
#
# Prints a markdown table on stdout (progress on stderr). Needs the Rust
# toolchain, python3 and PyPI (mcp==2.3.0 in target/interop/py, shared
# with tests/interop/run.sh). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

PY_MCP=2.3.0
OUT=target/interop
mkdir -p "$OUT/logs"

echo "== building (release)" >&2
cargo build --quiet --release --features http --example echo --example httpload
cargo build --quiet --release --manifest-path tests/interop/rmcp-http/Cargo.toml \
    --target-dir "$OUT/rmcp-http"
if [ "$(cat "$OUT/py/.pinned" 2>/dev/null)" != "mcp==$PY_MCP" ]; then
    rm -rf "$OUT/py"
    python3 -m venv "$OUT/py"
    "$OUT/py/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP"
    echo "mcp==$PY_MCP" >"$OUT/py/.pinned"
fi

PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT

# Starts a server that prints its URL on stderr; sets TARGET to LABEL=URL@PID.
start() {
    local label=$1 log="$OUT/logs/bench-http-$1.log" url=""
    shift
    "$@" 2>"$log" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 300); do
        url=$(grep -so 'http://[^ ]*/mcp' "$log" | head -1 || true)
        # Ready when the port answers, not merely when the URL is printed.
        if [ -n "$url" ] && curl -s -o /dev/null -X POST "$url"; then
            break
        fi
        url=""
        sleep 0.1
    done
    [ -n "$url" ] || { echo "$label did not start: see $log" >&2; exit 1; }
    TARGET="$label=$url@$pid"
}

echo "== starting the servers" >&2
start ours target/release/examples/echo --http 127.0.0.1:0
OURS=$TARGET
start rmcp "$OUT/rmcp-http/release/rmcp-http-echo" 127.0.0.1:0
RMCP=$TARGET
start python "$OUT/py/bin/python" tests/interop/python/http_echo_server.py 0
PYTHON=$TARGET

echo "== measuring (interleaved: ours, rmcp, python, ours, ...)" >&2
target/release/examples/httpload "$@" "$OURS" "$RMCP" "$PYTHON"
