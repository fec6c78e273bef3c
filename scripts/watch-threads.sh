#!/usr/bin/env bash
# Runs a server (the rest of the command line), passing its stdin and stdout
# through, and when it exits appends its most threads and its last VmRSS,
# sampled every 20 ms, to $WATCH_LOG (default target/watch-threads.log).
# For loadgen, which then measures this script's process, not the server's:
#
#   target/floor/examples/loadgen --rounds 1 --sizes 32 --compare \
#     scripts/watch-threads.sh A --pooled -- scripts/watch-threads.sh B --pooled
#   sort target/watch-threads.log | uniq -c
set -uo pipefail
log=${WATCH_LOG:-target/watch-threads.log}
"$@" <&0 &
pid=$!
most=0
rss=0
while kill -0 "$pid" 2>/dev/null; do
    threads=$(awk '/^Threads/{print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$threads" ] && [ "$threads" -gt "$most" ] && most=$threads
    now=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$now" ] && rss=$now
    sleep 0.02
done
echo "$1 most_threads=$most last_rss_kib=$rss" >>"$log"
wait "$pid"
