#!/usr/bin/env bash
# The official conformance suite's client scenarios against this crate's
# Client over Streamable HTTP (`examples/conformance_client`): every
# scenario each revision requires except the authorization ones (OAuth,
# which this crate leaves to the application's header callback). Fails on
# any failed check.
#
#   tests/conformance/run-client.sh                     both revisions
#   tests/conformance/run-client.sh SCENARIO [VERSION]  one scenario, verbose
#
# Needs npm (the registry): it installs the suite and Node 22 under
# target/conformance/, as run.sh does. `cargo test` never needs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/conformance/install.sh
. tests/conformance/install.sh
cargo build --quiet --features http --example conformance_client
CLIENT=target/debug/examples/conformance_client
if [ $# -gt 0 ]; then
    exec "$NODE" "$SUITE_JS" client --command "$CLIENT" --scenario "$1" \
        --spec-version "${2:-2026-07-28}" --verbose
fi
failed=0
for revision in 2026-07-28 2025-11-25; do
    echo "client requirements $revision:"
    scenarios=$("$NODE" "$SUITE_JS" list 2>&1 |
        sed -n '/^Client scenarios/,/^$/p' |
        grep -E "^  - " | grep -v "auth/" |
        grep -E "\[[^]]*$revision" | sed -E 's/^  - ([^ ]+).*/\1/') || true
    for scenario in $scenarios; do
        report=$("$NODE" "$SUITE_JS" client --command "$CLIENT" --scenario "$scenario" \
            --spec-version "$revision" --timeout 20000 2>&1) || true
        line=$(grep -E "^Passed: " <<<"$report" || echo "no result")
        echo "  $scenario: $line"
        grep -qE "^Passed: [0-9]+/[0-9]+, 0 failed, 0 warnings" <<<"$report" || {
            failed=1
            grep -E "FAILURE|WARNING|Error|error" <<<"$report" | head -5 | sed 's/^/    /'
        }
    done
done
exit $failed
