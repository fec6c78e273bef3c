#!/usr/bin/env bash
# The command line's OAuth as a person uses it, driven by the conformance
# suite (run-client.sh runs it as the client of auth/metadata-default):
# `login` prints the authorization URL and "opens" it with $BROWSER, here
# curl, which follows the suite's redirect to the loopback port mcp-stdio
# listens on; then `tools` and `call` use the tokens kept (no second
# authorization), and `logout` forgets them. Tokens go to a directory of
# this run's own (XDG_CONFIG_HOME).
set -euo pipefail
url="${!#}"
bin="$(dirname "$0")/../../target/debug/mcp-stdio"
config=$(mktemp -d)
trap 'rm -rf "$config"' EXIT
export XDG_CONFIG_HOME="$config"
era=modern
[[ "${MCP_CONFORMANCE_PROTOCOL_VERSION:-}" < "2026" ]] && era=legacy
BROWSER="curl -sL -o /dev/null" "$bin" --era "$era" --url "$url" login
file=$(ls "$config"/mcp-stdio/oauth/*.json)
[ "$(stat -c %a "$file")" = 600 ] || { echo "token file not 0600" >&2; exit 1; }
# Kept tokens only: no one is at a terminal, and no browser is given.
"$bin" --era "$era" --url "$url" tools </dev/null
"$bin" --era "$era" --url "$url" call test-tool </dev/null
"$bin" --era "$era" --url "$url" logout
[ ! -e "$file" ] || { echo "logout left $file" >&2; exit 1; }
