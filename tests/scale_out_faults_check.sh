#!/usr/bin/env bash
# The verdict of tests/scale_out_faults.sh (its Python, taken from the
# script as it is) on made-up runs, each with one listen that missed its
# task's end: the verdict must be "wrong: 1" and exit 1 for each. Needs
# python3 only (no Redis, no nginx, no build); a second.
#
# The cases (review of issue 48's fixes, second round):
#   closed   a listen whose stream a live replica closed (`cut:closed`)
#            before the task ended. A SIGKILLed replica sends no final
#            result, so "closed" never comes from the killed one; the
#            verdict counts it among "cut (a replica killed)".
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -n "/<<'PY'\$/,/^PY\$/p" tests/scale_out_faults.sh | sed '1d;$d' >"$work/verdict.py"
[ -s "$work/verdict.py" ] || { echo "no verdict found in tests/scale_out_faults.sh" >&2; exit 2; }

failed=0
# case NAME STORM_OUT_LINE: the task ran on replica 0 (alive; 1 is the
# killed one) and its handler finished.
case_() {
    local name=$1 line=$2 out=$work/$1
    mkdir -p "$out"
    printf 'task-log: start L1\ntask-log: done L1\n' >"$out/replica0.log"
    : >"$out/replica1.log"
    : >"$out/replica2.log"
    printf '%s\n' "$line" >"$out/storm.out"
    local verdict status=0
    verdict=$(python3 "$work/verdict.py" "$out" 1) || status=$?
    if [ "$status" -eq 1 ] && grep -q '^wrong: 1$' <<<"$verdict"; then
        echo "ok: $name"
    else
        echo "FAILED: $name: a listen that missed its task's end passed (exit $status):" >&2
        sed 's/^/    /' <<<"$verdict" >&2
        failed=1
    fi
}
case_ closed "t1 L1 run false cut:closed completed done after 1s"
exit "$failed"
