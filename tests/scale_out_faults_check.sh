#!/usr/bin/env bash
# The verdict of tests/scale_out_faults.sh (its Python, taken from the
# script as it is) on made-up runs of one task, each with what its listen
# heard (examples/fault_storm.rs: follow). The task ran on replica 0 (alive;
# replica 1 was killed at 5000 ms) and its handler finished. Each wrong
# listen must give "wrong: 1" and exit 1; each right one "wrong: 0" and
# exit 0. Needs python3 only (no Redis, no nginx, no build); a second.
#
# The wrong ones (the second review of issue 48's fixes): a listen whose
# stream a live replica closed before it heard the end (a SIGKILLed replica
# sends no final result, so "closed" never comes from the killed one; the
# verdict counted it as "a replica killed"); one the client overflowed;
# one dropped before the kill; one that heard input_required after
# completed; one that heard nothing of an end; one that heard another end.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -n "/<<'PY'\$/,/^PY\$/p" tests/scale_out_faults.sh | sed '1d;$d' >"$work/verdict.py"
[ -s "$work/verdict.py" ] || { echo "no verdict found in tests/scale_out_faults.sh" >&2; exit 2; }

failed=0
# case NAME WRONG LISTEN: the verdict on one `run` task that completed,
# whose listen says LISTEN, must count WRONG (0 or 1) wrong.
case_() {
    local name=$1 wrong=$2 listen=$3 out=$work/$1
    mkdir -p "$out"
    printf 'task-log: start L1\ntask-log: done L1\n' >"$out/replica0.log"
    : >"$out/replica1.log"
    : >"$out/replica2.log"
    printf 't1 L1 run true %s completed done after 1s\n' "$listen" >"$out/storm.out"
    local verdict status=0
    verdict=$(python3 "$work/verdict.py" "$out" 1 5000) || status=$?
    if [ "$status" -eq "$wrong" ] && grep -q "^wrong: $wrong\$" <<<"$verdict"; then
        echo "ok: $name"
    else
        echo "FAILED: $name: $listen gave exit $status, not wrong: $wrong:" >&2
        sed 's/^/    /' <<<"$verdict" >&2
        failed=1
    fi
}
case_ closed-by-a-live-replica 1 "cut:closed@6000:working"
case_ closed-before-the-kill 1 "cut:closed@4000:working"
case_ overflowed 1 "cut:overflowed@6000:working"
case_ dropped-before-the-kill 1 "cut:disconnected@4999:working"
case_ input-required-after-completed 1 "heard:working+completed+input_required"
case_ heard-nothing-of-the-end 1 "nothing:working"
case_ heard-another-end 1 "heard:failed"
case_ heard-the-end 0 "heard:working+completed"
case_ dropped-with-the-killed-replica 0 "cut:disconnected@5000:working"
case_ opened-after-the-end 0 "before"
case_ not-opened 0 "none"
exit "$failed"
