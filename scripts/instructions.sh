#!/usr/bin/env bash
# Instructions per call, counted by callgrind (repeatable, unlike time on a
# shared machine): 20,000 pipelined 32-byte echo calls piped through each
# server, startup included, divided by 20,000.
#
#   scripts/instructions.sh                 the echo (inline, pooled) and the floor
#   scripts/instructions.sh -- CMD [ARGS]   one other server command
#
# Needs valgrind (Debian: valgrind). Builds the echo at opt-level s (the
# release profile, as shipped) and 3 (the floor's profile, what an
# application's release build gives the library), and the floor.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
CALLS=20000
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk -v n=$CALLS 'BEGIN { for (i = 0; i < n; i++) printf "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}},\"name\":\"echo\",\"arguments\":{\"text\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}}\n", i }' >"$dir/calls.jsonl"

count() {
    local name=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$dir/out" "$@" <"$dir/calls.jsonl" >"$dir/replies" 2>"$dir/log"
    local replies instructions
    replies=$(grep -c '"result"' "$dir/replies" || true)
    instructions=$(sed -n 's/.*refs: *//p' "$dir/log" | tr -d ,)
    [ "$replies" = "$CALLS" ] || { echo "$name: $replies of $CALLS calls answered" >&2; exit 1; }
    printf '| %s | %s |\n' "$name" "$((instructions / CALLS))"
}

echo "| server | instructions per call |"
echo "|---|---|"
if [ "${1:-}" = "--" ]; then
    shift
    count "$*" "$@"
    exit
fi
cargo build --quiet --release --example echo
cp target/release/examples/echo "$dir/echo-s"
cargo build --quiet --profile floor --example echo --example floor
count "floor" target/floor/examples/floor
count "echo, inline, opt-level 3" target/floor/examples/echo
count "echo, pooled, opt-level 3" target/floor/examples/echo --pooled
count "echo, inline, opt-level s (release)" "$dir/echo-s"
count "echo, pooled, opt-level s (release)" "$dir/echo-s" --pooled
