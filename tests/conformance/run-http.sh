#!/usr/bin/env bash
# The official conformance suite natively over Streamable HTTP: every
# scenario the 2026-07-28 revision requires, the Tasks extension's
# included, and every one the 2025-11-25 revision requires (a legacy
# client with a session: initialize, logs, and the server's elicitation
# and sampling requests answered by later POSTs), against
# `examples/everything --http` (no bridge). Fails on any failed check.
#
#   tests/conformance/run-http.sh           --requirements, both revisions
#   tests/conformance/run-http.sh SCENARIO  one scenario, verbose
#
# Needs npm (the registry): it installs the suite and Node 22 under
# target/conformance/, as run.sh does. `cargo test` never needs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/conformance/install.sh
. tests/conformance/install.sh
# The crate's features: http, or MCP_STDIO_FEATURES (.ci/run gives its
# HTTP step's, so that this only links what that step compiled).
cargo build --quiet --features "${MCP_STDIO_FEATURES:-http}" --example everything
# Port 0: the server takes a free port and prints its URL. (A fixed port
# sits in the kernel's ephemeral range, where any outgoing connection of
# the machine may hold it: CI once got "Address already in use".)
target/debug/examples/everything --http "127.0.0.1:${PORT:-0}" 2>"$OUT/http-server.stderr" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
URL=
for _ in $(seq 100); do
    URL=$(grep -o "http://[^ ]*/mcp" "$OUT/http-server.stderr" 2>/dev/null | head -1) && [ -n "$URL" ] && break
    kill -0 $SERVER 2>/dev/null || break
    sleep 0.1
done
[ -n "$URL" ] || { echo "run-http: the server did not start:" >&2; cat "$OUT/http-server.stderr" >&2; exit 1; }
if [ $# -gt 0 ]; then
    # Not exec: the trap stops the server afterwards.
    "$NODE" "$SUITE_JS" server --url "$URL" --scenario "$1" --verbose
    exit
fi
failed=0
for revision in 2026-07-28 2025-11-25; do
    echo "requirements $revision:"
    report=$("$NODE" "$SUITE_JS" server --url "$URL" --requirements "$revision" 2>&1) || failed=1
    grep -E "✗|Total" <<<"$report"
    grep -qE "Total: [0-9]+ passed, 0 failed" <<<"$report" || failed=1
done
exit $failed
