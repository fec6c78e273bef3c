#!/usr/bin/env bash
# The interop matrix: this crate against the official MCP SDKs, both ways.
#
#   tests/interop/run.sh            install the pinned peers (cached under
#                                   target/interop/), run every driver, print
#                                   the matrix; exit 1 if any check failed
#   tests/interop/run.sh --readme   the same, then rewrite README.md's
#                                   "Works with" table from this run
#   tests/interop/run.sh --fetch-only   only the peers from PyPI and npm
#
# The HTTP rows run their clients against `everything --http` (feature
# http), a fresh server on a free port for each row.
#
# Needs python3 (3.10+), node (20+) with npm, and the Rust toolchain; the
# registries of PyPI, npm and crates.io. `cargo test` never needs any of it.
# The checks and the fixtures are in tests/interop/CHECKS.md; peer
# deviations in tests/interop/PEERS.md.
set -uo pipefail
cd "$(dirname "$0")/../.."

# The peers, pinned.
PY_MCP=2.3.0          # Python SDK, 2026-07-28 era (probes server/discover)
PY_MCP_LEGACY=1.30.0  # Python SDK, initialize era only
TS_MCP=2.4.0          # @modelcontextprotocol/client and /server (see ts/package.json)
RMCP=3.11.0           # the Rust SDK (see rmcp/Cargo.toml)
INSPECTOR=2.12.0      # @modelcontextprotocol/inspector, its CLI (see inspector/package.json)

OUT=target/interop
mkdir -p "$OUT/results" "$OUT/logs"
rm -f "$OUT"/results/*.jsonl "$OUT"/logs/*.log

step() { printf '\n== %s\n' "$*" >&2; }

# A venv at $1 with exactly mcp==$2, made again only when the pin changes.
venv() {
    local dir=$1 pin="mcp==$2"
    if [ "$(cat "$dir/.pinned" 2>/dev/null)" != "$pin" ]; then
        rm -rf "$dir"
        python3 -m venv "$dir" &&
            "$dir/bin/pip" install --quiet --disable-pip-version-check "$pin" &&
            echo "$pin" >"$dir/.pinned" || return 1
    fi
}

install_peers() {
    step "Python SDK mcp==$PY_MCP and mcp==$PY_MCP_LEGACY (venvs in $OUT/py, $OUT/py1)"
    venv "$OUT/py" "$PY_MCP" || return 1
    venv "$OUT/py1" "$PY_MCP_LEGACY" || return 1

    step "TypeScript SDK $TS_MCP (npm prefix $OUT/npm)"
    mkdir -p "$OUT/npm"
    if ! cmp -s tests/interop/ts/package.json "$OUT/npm/package.json" ||
        [ ! -d "$OUT/npm/node_modules/@modelcontextprotocol/client" ]; then
        cp tests/interop/ts/package.json "$OUT/npm/package.json"
        (cd "$OUT/npm" && npm install --silent --no-audit --no-fund) || return 1
    fi

    step "MCP Inspector $INSPECTOR (npm prefix $OUT/inspector)"
    mkdir -p "$OUT/inspector"
    if ! cmp -s tests/interop/inspector/package.json "$OUT/inspector/package.json" ||
        [ ! -x "$OUT/inspector/node_modules/.bin/mcp-inspector" ]; then
        cp tests/interop/inspector/package.json "$OUT/inspector/package.json"
        (cd "$OUT/inspector" && npm install --silent --no-audit --no-fund) || return 1
    fi

    [ "${FETCH_ONLY:-}" = 1 ] && return 0
    step "rmcp $RMCP fixture server (target dir $OUT/rmcp)"
    cargo build --quiet --manifest-path tests/interop/rmcp/Cargo.toml \
        --target-dir "$OUT/rmcp" || return 1

    step "this crate's examples (everything, interop)"
    # The crate's features: http, or MCP_STDIO_FEATURES (.ci/run gives its
    # HTTP step's, so that this only links what that step compiled).
    cargo build --quiet --features "${MCP_STDIO_FEATURES:-http}" --example everything --example interop || return 1
}

# Runs one driver: $1 is the row's name, the rest its command. Its JSON
# lines go to results/<name>.jsonl, its stderr to logs/<name>.log.
drive() {
    local name=$1
    shift
    step "$name"
    timeout 300 "$@" >"$OUT/results/$name.jsonl" 2>"$OUT/logs/$name.log"
    echo $? >"$OUT/results/$name.status"
}

# Runs one driver against a fresh `everything --http 127.0.0.1:0`: $1 is
# the row's name, the rest its command, in which the word URL becomes the
# server's endpoint. The server's stderr goes to logs/<name>.server.log.
drive_http() {
    local name=$1 url="" arg
    shift
    "$OURS" --http 127.0.0.1:0 2>"$OUT/logs/$name.server.log" &
    local pid=$!
    for _ in $(seq 100); do
        url=$(grep -o 'http://[^ ]*/mcp' "$OUT/logs/$name.server.log" | head -1)
        [ -n "$url" ] && break
        sleep 0.1
    done
    local cmd=()
    for arg in "$@"; do
        [ "$arg" = URL ] && arg=$url
        cmd+=("$arg")
    done
    if [ -n "$url" ]; then
        drive "$name" "${cmd[@]}"
    else
        step "$name: everything --http printed no URL (see $OUT/logs/$name.server.log)"
        echo 1 >"$OUT/results/$name.status"
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}

# --fetch-only: the peers from PyPI and npm, no build (.ci/run fetches
# them while the Rust builds run).
if [ "${1:-}" = --fetch-only ]; then
    FETCH_ONLY=1 install_peers
    exit $?
fi

if ! install_peers; then
    echo "interop: installing the peers failed" >&2
    exit 1
fi

OURS=target/debug/examples/everything
CLIENT=target/debug/examples/interop
PY=$OUT/py/bin/python
PY1=$OUT/py1/bin/python
export INTEROP_NODE_MODULES=$PWD/$OUT/npm/node_modules

drive python-client "$PY" tests/interop/python/client_checks.py "$OURS"
drive ts-client node tests/interop/ts/client_checks.mjs "$OURS"
drive python-legacy-client "$PY1" tests/interop/python/legacy_client.py "$OURS"
drive python-server "$CLIENT" "$PY" tests/interop/python/server.py
drive ts-server "$CLIENT" node tests/interop/ts/server.mjs
drive rmcp-server "$CLIENT" "$OUT/rmcp/debug/rmcp-fixture"
drive python-legacy-server "$CLIENT" "$PY1" tests/interop/python/legacy_server.py

# Streamable HTTP: their clients against `everything --http`, each era.
drive_http python-http-client "$PY" tests/interop/python/client_checks.py --url URL
drive_http python-legacy-http-client "$PY1" tests/interop/python/legacy_client.py --url URL
drive_http ts-http-client node tests/interop/ts/client_checks.mjs --url URL
drive_http ts-legacy-http-client node tests/interop/ts/client_checks.mjs --url URL --legacy
INSPECTOR_CLI=$PWD/$OUT/inspector/node_modules/.bin/mcp-inspector
drive_http inspector-http-client python3 tests/interop/inspector/inspector_checks.py "$INSPECTOR_CLI" URL modern
drive_http inspector-legacy-http-client python3 tests/interop/inspector/inspector_checks.py "$INSPECTOR_CLI" URL legacy

python3 tests/interop/report.py "$OUT" "$@"
