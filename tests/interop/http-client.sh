#!/usr/bin/env bash
# Our HTTP client (`mcp-stdio --url`) against other SDKs' Streamable HTTP
# servers: the Python SDK 2.3 (2026-07-28) and 1.30 (legacy), stateless and
# with sessions, fastmcp, and the TypeScript SDK 2.4 (both eras). CI-optional like run.sh; kept apart from
# run.sh's stdio matrix.
#
#   tests/interop/http-client.sh    install the pinned peers (cached under
#                                   target/interop/), run the checks, print
#                                   one line per check; exit 1 if any failed
#
# Needs python3 (3.10+) and the Rust toolchain. `cargo test` never needs it.
set -uo pipefail
cd "$(dirname "$0")/../.."

PY_MCP=2.3.0          # Python SDK, 2026-07-28 era
PY_MCP_LEGACY=1.30.0  # Python SDK, initialize era only
FASTMCP=4.1.6         # fastmcp

OUT=target/interop
mkdir -p "$OUT/logs"

step() { printf '\n== %s\n' "$*" >&2; }

# A venv at $1 with exactly the pin $2, made again only when the pin changes.
venv() {
    local dir=$1 pin=$2
    if [ "$(cat "$dir/.pinned" 2>/dev/null)" != "$pin" ]; then
        rm -rf "$dir"
        python3 -m venv "$dir" &&
            "$dir/bin/pip" install --quiet --disable-pip-version-check "$pin" &&
            echo "$pin" >"$dir/.pinned" || return 1
    fi
}

install() {
    step "peers: mcp==$PY_MCP ($OUT/py), mcp==$PY_MCP_LEGACY ($OUT/py1), fastmcp==$FASTMCP ($OUT/fastmcp)"
    venv "$OUT/py" "mcp==$PY_MCP" || return 1
    venv "$OUT/py1" "mcp==$PY_MCP_LEGACY" || return 1
    venv "$OUT/fastmcp" "fastmcp==$FASTMCP" || return 1
    [ "${FETCH_ONLY:-}" = 1 ] && return 0
    step "mcp-stdio with the http feature (or MCP_STDIO_FEATURES)"
    # The crate's features: http, or MCP_STDIO_FEATURES (.ci/run gives its
    # HTTP step's, so that this only links what that step compiled).
    cargo build --quiet --features "${MCP_STDIO_FEATURES:-http}" --bin mcp-stdio || return 1
}

[ "${1:-}" = "--install-only" ] && { install; exit $?; }
[ "${1:-}" = "--fetch-only" ] && { FETCH_ONLY=1 install; exit $?; }
install || { echo "http-client: could not install the peers" >&2; exit 1; }

CLI=target/debug/mcp-stdio
PASSED=0
FAILED=0
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done' EXIT

# A free loopback port.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts a server (the command after the name) and waits until its port
# takes connections (at most 30 s: a venv's first import is slow).
serve() {
    local name=$1 port=$2
    shift 2
    "$@" >"$OUT/logs/http-$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 300); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.1)" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "http-client: $name did not start (see $OUT/logs/http-$name.log)" >&2
    return 1
}

# check NAME EXPECTED-SUBSTRING CLI-ARGS...: one line, PASS or FAIL.
check() {
    local name=$1 want=$2
    shift 2
    local got
    got=$(timeout 60 "$CLI" "$@" 2>&1)
    if [[ "$got" == *"$want"* ]]; then
        PASSED=$((PASSED + 1))
        printf 'PASS  %s\n' "$name"
    else
        FAILED=$((FAILED + 1))
        printf 'FAIL  %s: wanted %q, got: %s\n' "$name" "$want" "$(echo "$got" | head -3)"
    fi
}

# The checks against one server at $1, speaking era $2 (modern or legacy).
checks() {
    local peer=$1 url=$2 era=$3
    check "$peer: era probe settles on $era" "era:          $era" info --url "$url"
    check "$peer: tools/list" "echo" tools --url "$url"
    check "$peer: tools/call echo" "hi there" call echo 'text=hi there' --url "$url"
    check "$peer: a header is sent (--header)" "hi" call echo text=hi --url "$url" --header 'X-Interop: 1'
}

py_app() { # the fixture server of a legacy SDK or fastmcp, inline
    cat <<PY
import sys
stateless = sys.argv[2] == "stateless"
port = int(sys.argv[1])
if "$1" == "fastmcp":
    from fastmcp import FastMCP
    mcp = FastMCP("fastmcp-fixture")
else:
    from mcp.server.fastmcp import FastMCP
    mcp = FastMCP("legacy-fixture", port=port, stateless_http=stateless)
@mcp.tool()
def echo(text: str) -> str:
    """Returns its text unchanged."""
    return text
if "$1" == "fastmcp":
    mcp.run(transport="http", host="127.0.0.1", port=port, stateless_http=stateless)
else:
    mcp.run(transport="streamable-http")
PY
}

for mode in sessions stateless; do
    flag=$([ $mode = stateless ] && echo --stateless)
    p=$(port)
    serve "py-$mode" "$p" "$OUT/py/bin/python" tests/interop/python/server.py --http "$p" $flag &&
        checks "Python SDK $PY_MCP ($mode)" "http://127.0.0.1:$p/mcp" modern
    p=$(port)
    serve "py1-$mode" "$p" "$OUT/py1/bin/python" -c "$(py_app legacy)" "$p" "$mode" &&
        checks "Python SDK $PY_MCP_LEGACY ($mode)" "http://127.0.0.1:$p/mcp" legacy
    p=$(port)
    serve "fastmcp-$mode" "$p" "$OUT/fastmcp/bin/python" -c "$(py_app fastmcp)" "$p" "$mode" &&
        checks "fastmcp $FASTMCP ($mode)" "http://127.0.0.1:$p/mcp" modern
done

# The TypeScript SDK 2.4's `createMcpHandler` (stateless; 2025-era
# requests through its legacy fallback), from run.sh's npm prefix.
if [ -d "$OUT/npm/node_modules/@modelcontextprotocol/server" ] && command -v node >/dev/null; then
    p=$(port)
    serve ts "$p" node tests/interop/ts/http_echo_server.mjs "$p" && {
        checks "TypeScript SDK 2.4.0 (stateless)" "http://127.0.0.1:$p/mcp" modern
        check "TypeScript SDK 2.4.0 (stateless, --era legacy): tools/call echo" "hi there" \
            call echo 'text=hi there' --era legacy --url "http://127.0.0.1:$p/mcp"
    }
else
    echo "SKIP  TypeScript SDK 2.4.0: no npm prefix at $OUT/npm (tests/interop/run.sh --fetch-only makes it)"
fi

printf '\nhttp-client: %d passed, %d failed\n' "$PASSED" "$FAILED"
[ "$FAILED" -eq 0 ]
