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
cargo build --quiet --features http --example everything
PORT=${PORT:-39124}
target/debug/examples/everything --http "127.0.0.1:$PORT" 2>"$OUT/http-server.stderr" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
for _ in $(seq 50); do
    grep -q "http://" "$OUT/http-server.stderr" 2>/dev/null && break
    sleep 0.1
done
URL="http://127.0.0.1:$PORT/mcp"
if [ $# -gt 0 ]; then
    exec "$NODE" "$SUITE_JS" server --url "$URL" --scenario "$1" --verbose
fi
failed=0
for revision in 2026-07-28 2025-11-25; do
    echo "requirements $revision:"
    report=$("$NODE" "$SUITE_JS" server --url "$URL" --requirements "$revision" 2>&1) || failed=1
    grep -E "✗|Total" <<<"$report"
    grep -qE "Total: [0-9]+ passed, 0 failed" <<<"$report" || failed=1
done
exit $failed
