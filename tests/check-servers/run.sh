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
    # With the features the interop steps before it build (http, or
    # MCP_STDIO_FEATURES: .ci/run gives its HTTP step's): the checker needs
    # no feature, and a build of other features would be a rebuild of the
    # crate.
    cargo build --quiet --features "${MCP_STDIO_FEATURES:-http}" --bin mcp-stdio --example everything || return 1
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
# Each server: its name, then the checker's arguments (the server's
# command line after --). Only the everything example is called with
# --call: its slow, ask (MRTR) and slow_compute (a task) tools are known
# to be harmless.
servers=(
    "everything-rs|--call slow={\"ms\":1500} --call ask --call slow_compute={\"seconds\":0} -- target/debug/examples/everything"
    "server-everything|-- $NPM/mcp-server-everything"
    "server-memory|-- $NPM/mcp-server-memory"
    "server-filesystem|-- $NPM/mcp-server-filesystem $WORK/files"
    "mcp-server-time|-- $OUT/time/bin/mcp-server-time"
    "mcp-server-fetch|-- $OUT/fetch/bin/mcp-server-fetch"
    "python-sdk-2|-- $OUT/py/bin/python tests/interop/python/server.py"
    "python-sdk-1|-- $OUT/py1/bin/python tests/interop/python/legacy_server.py"
    "rmcp|-- target/interop/rmcp/debug/rmcp-fixture"
)

actual=$OUT/actual.txt
: >"$actual"

# Runs the checker: $1 the row's name, the rest its arguments after
# `check`; then writes the row's outcome to results/NAME.rows (gathered
# into $actual in the rows' order once all ended).
row() {
    local name=$1
    shift
    step "$name: $*"
    timeout 300 "$CHECK" check --format json "$@" >"$OUT/results/$name.jsonl" 2>"$OUT/results/$name.stderr"
    echo $? >"$OUT/results/$name.status"
    python3 - "$name" "$OUT/results/$name.jsonl" "$OUT/results/$name.status" >"$OUT/results/$name.rows" <<'PY'
import json, sys
name, path, status = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().strip()
rows = []
for line in open(path):
    v = json.loads(line)
    if "summary" in v:
        s = v["summary"]
        print(f"{name} exit {status}")
    elif v["status"] != "pass":
        rows.append(f"{name} {v['id']} {v['status']}")
if not rows and status not in ("0", "1"):
    rows.append(f"{name} exit={status} (see target/check-servers/results/{name}.stderr)")
print("\n".join(rows))
PY
}

# Three rows at a time: each mostly waits for its server (the checker's
# deadlines, a slow tool), about 10 s a row; 114 s one after the other in
# CI (ninth session).
names=()
for entry in "${servers[@]}"; do
    name=${entry%%|*}
    names+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge 3 ]; do wait -n; done
    # shellcheck disable=SC2086 # the command line is split on purpose
    row "$name" ${entry#*|} &
done

# The everything example over Streamable HTTP, on a free port.
target/debug/examples/everything --http 127.0.0.1:0 2>"$OUT/results/everything-http.server.log" &
SERVER=$!
url=""
for _ in $(seq 100); do
    url=$(grep -o 'http://[^ ]*/mcp' "$OUT/results/everything-http.server.log" | head -1)
    [ -n "$url" ] && break
    sleep 0.1
done
row everything-rs-http --call 'slow={"ms":1500}' --call ask --call 'slow_compute={"seconds":0}' --url "$url"
names+=(everything-rs-http)
kill "$SERVER" 2>/dev/null
wait
for name in "${names[@]}"; do
    cat "$OUT/results/$name.rows" >>"$actual"
done

if [ "${1:-}" = --update ]; then
    # This run's rows; a known race's line (with alternatives) is kept as
    # it was while this run's outcome is one of them.
    python3 - tests/check-servers/expected.txt "$actual" <<'PY'
import sys
old = {}
for line in open(sys.argv[1]):
    body = line.split("#")[0].strip()
    if "|" in body:
        *key, status = body.split(" ")
        old[" ".join(key)] = (set(status.split("|")), line.rstrip("\n"))
lines, seen = [], set()
for line in open(sys.argv[2]):
    line = line.strip()
    if not line:
        continue
    *key, status = line.split(" ")
    key = " ".join(key)
    seen.add(key)
    if key in old and status in old[key][0]:
        lines.append(old[key][1])
    else:
        lines.append(line)
for key, (statuses, line) in old.items():
    if key not in seen and "pass" in statuses:
        lines.append(line)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
    echo "check-servers: tests/check-servers/expected.txt rewritten" >&2
    exit 0
fi
# Compared line by line: a check not listed must pass; a status written
# `pass|warn` is a server's race, either outcome taken (expected.txt says
# which and why).
python3 - tests/check-servers/expected.txt "$actual" <<'PY'
import sys
def rows(path, alternatives):
    out = {}
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            *key, status = line.split(" ")
            out[" ".join(key)] = set(status.split("|")) if alternatives else {status}
    return out
expected, actual = rows(sys.argv[1], True), rows(sys.argv[2], False)
wrong = []
for key in sorted(set(expected) | set(actual)):
    want = expected.get(key, {"pass"})
    got = actual.get(key, {"pass"})
    if not got <= want:
        wrong.append(f"{key}: expected {'|'.join(sorted(want))}, got {'|'.join(sorted(got))}")
if wrong:
    print("\n".join(wrong))
    print("check-servers: the outcomes differ from tests/check-servers/expected.txt (above); each reason is in target/check-servers/results/SERVER.jsonl", file=sys.stderr)
    sys.exit(1)
print(f"check-servers: every server's outcome as expected ({len(actual)} lines)", file=sys.stderr)
PY
