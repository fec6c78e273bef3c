#!/usr/bin/env bash
# `mcp-stdio check` against the servers people use (issue 45, item 3): the
# reference servers from npm and PyPI, a Python SDK 2.x and 1.x server, an
# rmcp server and this crate's everything example. Each server's outcome
# (every check that did not pass: fail, warn or skip, with its reason's
# first words left out) is compared with tests/check-servers/expected.txt,
# so that a checker change that adds a false alarm or loses a finding
# fails. Each MUST failure there is a real violation, shown in
# CONFORMANCE.md ("Published servers").
#
#   tests/check-servers/run.sh              install (cached under
#                                           target/check-servers/), run,
#                                           compare; exit 1 on a difference
#   tests/check-servers/run.sh --update     rewrite expected.txt from this run
#   tests/check-servers/run.sh --fetch-only install only
#
# Needs python3 (3.10+), node (20+) with npm, the registries of PyPI and
# npm, and the Rust toolchain (the rmcp fixture of tests/interop/rmcp).
set -uo pipefail
cd "$(dirname "$0")/../.."

PY_MCP=2.3.0          # Python SDK, 2026-07-28 era (as tests/interop/run.sh)
PY_MCP_LEGACY=1.30.0  # Python SDK, initialize era only
TIME=2026.10.19       # mcp-server-time (PyPI)
FETCH=2026.10.24      # mcp-server-fetch (PyPI)

OUT=target/check-servers
mkdir -p "$OUT/results"

step() { printf '== %s\n' "$*" >&2; }

# A venv at $1 with exactly the pin $2, made again only when it changes.
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
    step "PyPI: mcp==$PY_MCP, mcp==$PY_MCP_LEGACY, mcp-server-time==$TIME, mcp-server-fetch==$FETCH"
    venv "$OUT/py" "mcp==$PY_MCP" || return 1
    venv "$OUT/py1" "mcp==$PY_MCP_LEGACY" || return 1
    venv "$OUT/time" "mcp-server-time==$TIME" || return 1
    venv "$OUT/fetch" "mcp-server-fetch==$FETCH" || return 1
    step "npm: tests/check-servers/package.json"
    mkdir -p "$OUT/npm"
    if ! cmp -s tests/check-servers/package.json "$OUT/npm/package.json" ||
        [ ! -d "$OUT/npm/node_modules/@modelcontextprotocol/server-filesystem" ]; then
        cp tests/check-servers/package.json "$OUT/npm/package.json"
        (cd "$OUT/npm" && npm install --silent --no-audit --no-fund) || return 1
    fi
    [ "${FETCH_ONLY:-}" = 1 ] && return 0
    step "rmcp fixture (tests/interop/rmcp), this crate's mcp-stdio and everything"
    cargo build --quiet --manifest-path tests/interop/rmcp/Cargo.toml \
        --target-dir target/interop/rmcp || return 1
    cargo build --quiet --bin mcp-stdio --example everything || return 1
}

if [ "${1:-}" = --fetch-only ]; then
    FETCH_ONLY=1 install
    exit $?
fi
install || { echo "check-servers: installing the servers failed" >&2; exit 1; }

# A directory for server-filesystem to serve, and a file for server-memory
# to keep (no check writes to it: no tool is called with arguments it
# accepts).
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/files" && echo hello >"$WORK/files/hello.txt"
export MEMORY_FILE_PATH=$WORK/memory.jsonl

NPM=$OUT/npm/node_modules/.bin
CHECK=target/debug/mcp-stdio
# Each server: its name, then its command line.
servers=(
    "everything-rs|target/debug/examples/everything"
    "server-everything|$NPM/mcp-server-everything"
    "server-memory|$NPM/mcp-server-memory"
    "server-filesystem|$NPM/mcp-server-filesystem $WORK/files"
    "mcp-server-time|$OUT/time/bin/mcp-server-time"
    "mcp-server-fetch|$OUT/fetch/bin/mcp-server-fetch"
    "python-sdk-2|$OUT/py/bin/python tests/interop/python/server.py"
    "python-sdk-1|$OUT/py1/bin/python tests/interop/python/legacy_server.py"
    "rmcp|target/interop/rmcp/debug/rmcp-fixture"
)

actual=$OUT/actual.txt
: >"$actual"
for entry in "${servers[@]}"; do
    name=${entry%%|*}
    cmd=${entry#*|}
    step "$name: $cmd"
    # shellcheck disable=SC2086 # the command line is split on purpose
    timeout 300 "$CHECK" check --format json -- $cmd >"$OUT/results/$name.jsonl" 2>"$OUT/results/$name.stderr"
    echo $? >"$OUT/results/$name.status"
    python3 - "$name" "$OUT/results/$name.jsonl" "$OUT/results/$name.status" >>"$actual" <<'PY'
import json, sys
name, path, status = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().strip()
rows = []
for line in open(path):
    v = json.loads(line)
    if "summary" in v:
        s = v["summary"]
        print(f"{name} summary exit={status} pass={s['pass']} fail={s['fail']} warn={s['warn']} skip={s['skip']}")
    elif v["status"] != "pass":
        rows.append(f"{name} {v['id']} {v['status']}")
if not rows and status not in ("0", "1"):
    rows.append(f"{name} exit={status} (see target/check-servers/results/{name}.stderr)")
print("\n".join(rows))
PY
done

if [ "${1:-}" = --update ]; then
    cp "$actual" tests/check-servers/expected.txt
    echo "check-servers: tests/check-servers/expected.txt rewritten" >&2
    exit 0
fi
if diff -u tests/check-servers/expected.txt "$actual"; then
    echo "check-servers: every server's outcome as expected ($(wc -l <"$actual") lines)" >&2
else
    echo "check-servers: the outcomes differ from tests/check-servers/expected.txt (above); each line's reason is in target/check-servers/results/SERVER.jsonl" >&2
    exit 1
fi
