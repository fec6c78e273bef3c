#!/usr/bin/env bash
# `mcp-stdio serve-http` (issue 28, item 3): stdio servers of both eras
# exposed over Streamable HTTP through one child process, driven by the
# Python SDK's HTTP clients (2.3, 2026-07-28; 1.30, sessions) and by ours.
#
#   children:  examples/everything (this crate, modern)
#              tests/interop/python/legacy_server.py (PyPI mcp 1.30, legacy)
#              @modelcontextprotocol/server-everything and server-memory
#              (npm reference servers, legacy)
#   drivers:   the interop checks (tests/interop/CHECKS.md) of both Python
#              SDKs against the two fixture children; the npm reference
#              server (no fixtures) listed and called by each client
#
#   tests/interop/serve-http.sh    one line per check; exit 1 if any failed
#   tests/interop/serve-http.sh --fetch-only   only the peers from PyPI and npm
#
# Needs python3 and npm (the registries); it reuses the venvs of
# http-client.sh and the Node of tests/conformance/install.sh. `cargo test`
# never needs it.
set -uo pipefail
cd "$(dirname "$0")/../.."

SERVER_EVERYTHING=2026.8.31 # @modelcontextprotocol/server-everything
SERVER_MEMORY=2026.8.31     # @modelcontextprotocol/server-memory
# shellcheck source=tests/conformance/install.sh
. tests/conformance/install.sh # sets NODE (and an OUT of its own)
OUT=target/interop
mkdir -p "$OUT/logs" "$OUT/serve-http"
if [ "${1:-}" = --fetch-only ]; then
    tests/interop/http-client.sh --fetch-only || exit 1
else
    tests/interop/http-client.sh --install-only || exit 1
fi
if [ "$(cat "$OUT/serve-http/.pinned" 2>/dev/null)" != "$SERVER_EVERYTHING $SERVER_MEMORY" ]; then
    (cd "$OUT/serve-http" && echo '{"private":true}' >package.json &&
        npm install --silent --no-audit --no-fund \
            "@modelcontextprotocol/server-everything@$SERVER_EVERYTHING" \
            "@modelcontextprotocol/server-memory@$SERVER_MEMORY") &&
        echo "$SERVER_EVERYTHING $SERVER_MEMORY" >"$OUT/serve-http/.pinned" || exit 1
fi
[ "${1:-}" = --fetch-only ] && exit 0
# The crate's features: http, or MCP_STDIO_FEATURES (.ci/run gives its
# HTTP step's, so that this only links what that step compiled).
cargo build --quiet --features "${MCP_STDIO_FEATURES:-http}" --bin mcp-stdio --example everything || exit 1

CLI=target/debug/mcp-stdio
PASSED=0
FAILED=0
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done' EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# proxy NAME PORT CHILD...: serve-http in front of CHILD, once it listens.
proxy() {
    local name=$1 port=$2
    shift 2
    "$CLI" serve-http --listen "127.0.0.1:$port" -- "$@" >"$OUT/logs/serve-http-$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 300); do
        grep -q "serving" "$OUT/logs/serve-http-$name.log" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "serve-http: $name did not start (see $OUT/logs/serve-http-$name.log)" >&2
    FAILED=$((FAILED + 1))
    return 1
}

verdict() { # NAME OK DETAIL
    if [ "$2" = 0 ]; then
        PASSED=$((PASSED + 1))
        printf 'PASS  %s: %s\n' "$1" "$3"
    else
        FAILED=$((FAILED + 1))
        printf 'FAIL  %s: %s\n' "$1" "$3"
    fi
}

# interop NAME EXPECTED-NOT-PASSING DRIVER...: runs the checks, each
# "check status" line; the checks not passing must be exactly those listed
# (the documented limits of a legacy child, see src/proxy/mod.rs).
interop() {
    local name=$1 expected=$2
    shift 2
    local got
    got=$(timeout 300 "$@" 2>"$OUT/logs/serve-http-$name.stderr" | python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin if l.startswith("{")]
passed = sum(1 for l in lines if l["status"] == "pass")
others = " ".join(l["check"] + "=" + l["status"] for l in lines if l["status"] != "pass")
print(f"{passed} pass|{others}")')
    local others=${got#*|}
    [ "$others" = "$expected" ] && [ "${got%% *}" -gt 0 ]
    verdict "$name" $? "${got%%|*}${others:+, $others}"
}

# The crate's own everything example (modern) behind serve-http.
p=$(port)
if proxy everything "$p" target/debug/examples/everything; then
    url="http://127.0.0.1:$p/mcp"
    interop "everything ← Python SDK 2.3" "" "$OUT/py/bin/python" tests/interop/python/client_checks.py --url "$url"
    interop "everything ← Python SDK 1.30 (sessions)" "" \
        "$OUT/py1/bin/python" tests/interop/python/legacy_client.py --url "$url"
fi

# The PyPI (mcp 1.30) fixture server, legacy, behind serve-http: its
# mid-call elicitation belongs to no request on stdio, so it is not
# passed on (src/proxy/mod.rs).
p=$(port)
if proxy py1 "$p" "$OUT/py1/bin/python" tests/interop/python/legacy_server.py; then
    url="http://127.0.0.1:$p/mcp"
    interop "mcp 1.30 server ← Python SDK 2.3" "mrtr.elicitation=fail" \
        "$OUT/py/bin/python" tests/interop/python/client_checks.py --url "$url"
    interop "mcp 1.30 server ← Python SDK 1.30 (sessions)" "mrtr.elicitation=skip" \
        "$OUT/py1/bin/python" tests/interop/python/legacy_client.py --url "$url"
fi

# The npm reference server (legacy, no fixtures): listed and called.
p=$(port)
if proxy npm "$p" "$NODE" "$OUT/serve-http/node_modules/@modelcontextprotocol/server-everything/dist/index.js" stdio; then
    url="http://127.0.0.1:$p/mcp"
    got=$("$OUT/py/bin/python" tests/interop/python/http_smoke.py "$url" echo '{"message":"hi"}' 2>&1)
    [[ "$got" == *"Echo: hi"* ]]
    verdict "server-everything $SERVER_EVERYTHING ← Python SDK 2.3" $? "$got"
    for era in modern legacy; do
        got=$(timeout 60 "$CLI" call echo message=hi --era "$era" --url "$url" 2>&1)
        [ "$got" = "Echo: hi" ]
        verdict "server-everything $SERVER_EVERYTHING ← mcp-stdio --era $era" $? "$got"
    done
    got=$(timeout 60 "$CLI" tools --url "$url" 2>&1 | wc -l)
    [ "$got" -ge 10 ]
    verdict "server-everything $SERVER_EVERYTHING ← mcp-stdio tools" $? "$got tools"
fi

# The npm reference memory server (a knowledge graph in a file): an
# entity created through one client is read back through the other.
p=$(port)
if MEMORY_FILE_PATH="$PWD/$OUT/serve-http/memory.jsonl" proxy memory "$p" "$NODE" \
    "$OUT/serve-http/node_modules/@modelcontextprotocol/server-memory/dist/index.js"; then
    url="http://127.0.0.1:$p/mcp"
    rm -f "$OUT/serve-http/memory.jsonl"
    entity='{"entities":[{"name":"serve-http","entityType":"test","observations":["through one child"]}]}'
    got=$("$OUT/py/bin/python" tests/interop/python/http_smoke.py "$url" create_entities "$entity" 2>&1)
    verdict "server-memory $SERVER_MEMORY ← Python SDK 2.3: create_entities" $? "$got"
    got=$(timeout 60 "$CLI" call read_graph --era legacy --url "$url" 2>&1)
    [[ "$got" == *"through one child"* ]]
    verdict "server-memory $SERVER_MEMORY ← mcp-stdio --era legacy: read_graph" $? "$(echo "$got" | head -c 120)"
fi

printf '\nserve-http: %d passed, %d failed\n' "$PASSED" "$FAILED"
[ "$FAILED" = 0 ]
