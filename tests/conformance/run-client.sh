#!/usr/bin/env bash
# The official conformance suite's client scenarios against this crate's
# Client over Streamable HTTP (`examples/conformance_client`): every
# scenario each revision requires, the authorization ones (`auth/*`)
# included, and the client credentials extension's `auth/client-credentials-basic`;
# then the command line's `login` (tests/conformance/cli-login.sh).
# Fails on any failed check.
#
# The authorization scenarios (suite 0.2.0-alpha.12, src/scenarios/client/auth/):
# each starts an MCP server that answers 401 with `WWW-Authenticate` and an
# authorization server (express, plain http on loopback), and checks what
# the client sent them. The client is `ClientBuilder::oauth` with the
# authorization code flow; the suite's authorization endpoint redirects at
# once, so the example's "user agent" is one GET of the authorization URL
# whose `Location` is the redirect (code, state, iss). What they check:
#   metadata-default, -var1..3   protected resource metadata from
#       `resource_metadata` or the well-known URIs (path-inserted first, the
#       root never asked when the first answers), AS metadata at RFC 8414 and
#       OIDC URIs (path insertion, then appending), DCR, PKCE S256, token
#   basic-cimd                   the client ID metadata document URL as
#       client_id when the AS says client_id_metadata_document_supported
#   scope-from-www-authenticate, -from-scopes-supported, -omitted-when-undefined
#       the spec's scope selection order
#   scope-step-up                a 403 insufficient_scope re-authorizes with the
#       union of the old and challenged scopes (2026-07-28: SEP-2350)
#   scope-retry-limit            at most 3 authorizations against a server that
#       always answers 403 (the client errs: allowed)
#   token-endpoint-auth-basic, -post, -none   the method the registration
#       answer names; `resource` in both the authorization and token requests
#   pre-registration             the context's client_id and secret, as Basic
#   2026-07-28 only: resource-mismatch (PRM `resource` of another origin:
#       no authorization request), offline-access-scope and
#       -not-supported (offline_access only when the AS lists it;
#       refresh_token in the DCR grant types), authorization-server-migration
#       (a new issuer in the PRM: register again, never reuse the old client
#       ID), iss-supported, -not-advertised, -supported-missing, -wrong-issuer,
#       -unexpected, -normalized (RFC 9207 by simple string comparison),
#       metadata-issuer-mismatch (AS metadata naming another issuer: unused)
# Left out: auth/2025-03-26-oauth-metadata-backcompat and
# -oauth-endpoint-fallback (revision 2025-03-26 only, which this crate does
# not speak: no protected resource metadata there); the extension scenarios
# auth/client-credentials-jwt (private_key_jwt: no JWT signing in the crate),
# enterprise-managed-authorization, dpop, dpop-nonce, wif-jwt-bearer (not
# implemented).
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
# The crate's features: http, or MCP_STDIO_FEATURES (.ci/run gives its
# HTTP step's, so that this only links what that step compiled).
cargo build --quiet --features "${MCP_STDIO_FEATURES:-http}" --example conformance_client --bin mcp-stdio
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
        grep -E "^  - " |
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
echo "extension io.modelcontextprotocol/oauth-client-credentials:"
report=$("$NODE" "$SUITE_JS" client --command "$CLIENT" --scenario auth/client-credentials-basic \
    --timeout 20000 2>&1) || true
line=$(grep -E "^Passed: " <<<"$report" || echo "no result")
echo "  auth/client-credentials-basic: $line"
grep -qE "^Passed: [0-9]+/[0-9]+, 0 failed, 0 warnings" <<<"$report" || failed=1
echo "the command line's login, tools, call and logout (tests/conformance/cli-login.sh):"
for revision in 2026-07-28 2025-11-25; do
    report=$("$NODE" "$SUITE_JS" client --command "$PWD/tests/conformance/cli-login.sh" \
        --scenario auth/metadata-default --spec-version "$revision" --timeout 30000 2>&1) || true
    line=$(grep -E "^Passed: " <<<"$report" || echo "no result")
    echo "  auth/metadata-default $revision: $line"
    grep -qE "^Passed: [0-9]+/[0-9]+, 0 failed, 0 warnings" <<<"$report" || {
        failed=1
        grep -E "FAILURE|WARNING|Error|error" <<<"$report" | head -5 | sed 's/^/    /'
    }
done
exit $failed
