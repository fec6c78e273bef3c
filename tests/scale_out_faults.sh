#!/usr/bin/env bash
# Past one process, under faults (issue 48): three replicas of
# `examples/everything --http --redis` behind nginx (plain round robin), one
# Redis with an append-only file, and a storm of task calls from six
# clients (examples/fault_storm.rs) while this script, in turn:
#
#   1. stalls Redis for 7 s (`DEBUG SLEEP 7`: less than the 10 s lease);
#   2. restarts Redis (`SHUTDOWN`, then the same server on the same file);
#   3. kills every subscriber connection (`CLIENT KILL TYPE pubsub`);
#   4. stops a replica for 6 s (SIGSTOP, then SIGCONT: less than a lease);
#   5. kills a replica (SIGKILL).
#
# Then every task started must have ended in exactly one terminal state that
# matches what its handler did (the handlers say so on stderr, `--task-log`):
# completed with its result when its handler finished (`slow_compute`) or
# got its answer (`confirm_delete`, answered with `tasks/update` wherever it
# landed), cancelled with its handler stopped when the client cancelled it,
# failed only when its replica was killed, and none still working 20 s
# after the storm (a lease, a sweep and time to spare). Each task is also
# followed by a listen of its own, on whichever replica nginx picks: the
# listen must hear the task end, in the state it ended in, and nothing
# after, its statuses in an order the task can take (nothing after its
# end); the only cut allowed is a dropped connection (`disconnected`) at or
# after the kill, counted as the killed replica's; a stream a live replica
# closed, or one the client overflowed, before the end was heard is wrong.
# Listens that could not be opened (or were, without their task: Redis
# out) are counted. Prints the counts; exit 1 on any task that breaks
# these.
#
#   tests/scale_out_faults.sh      install what is missing, run (about 80 s)
#
# Installs nginx and redis-server from Debian when missing, as
# tests/scale_out.sh does. Logs in target/scale_out_faults/.
# SCALE_OUT_FAULTS_SERVER=PATH runs another build of the everything example
# (to count the faults of an older one).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=target/scale_out_faults
STORM_SECONDS=45
rm -rf "$OUT"
mkdir -p "$OUT/nginx" "$OUT/redis"

step() { printf '\n== %s\n' "$*" >&2; }

if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
    step "nginx (Debian package nginx-light)"
    apt-get install -y -qq nginx-light >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq nginx-light >/dev/null; }
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if ! command -v redis-server >/dev/null; then
    step "redis-server (Debian package redis-server)"
    apt-get install -y -qq redis-server >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
fi

# REPLICAS_BIN=DIR: the binaries built already (everything, fault_storm),
# as .ci/run does (see tests/scale_out.sh).
bin=${REPLICAS_BIN:-}
if [ -z "$bin" ]; then
    step "examples/everything and examples/fault_storm with the http and redis features"
    cargo build --quiet --features http,redis-tls --example everything --example fault_storm
    bin=target/debug/examples
fi
everything=${SCALE_OUT_FAULTS_SERVER:-$bin/everything}
storm=$bin/fault_storm

read -r -a ports <<<"$(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
')"
replica_ports=("${ports[@]:0:3}")
nginx_port=${ports[3]}
redis_port=${ports[4]}
key=$(python3 -c 'import secrets; print(secrets.token_hex(32))')

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
    { wait; } 2>/dev/null || true
}
trap cleanup EXIT

redis_cli() { redis-cli -p "$redis_port" "$@"; }
start_redis() {
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly yes \
        --appendfsync everysec --enable-debug-command yes --dir "$PWD/$OUT/redis" \
        --logfile "$PWD/$OUT/redis/redis.log" &
    redis_pid=$!
    pids+=("$redis_pid")
    for _ in $(seq 1 100); do
        redis_cli ping >/dev/null 2>&1 && return
        sleep 0.1
    done
    echo "redis-server did not start" >&2
    exit 1
}
step "redis-server on 127.0.0.1:$redis_port (append-only file)"
start_redis

step "three replicas (one sealing key, one Redis)"
replica_pids=()
for i in 0 1 2; do
    "$everything" --http "127.0.0.1:${replica_ports[$i]}" --state-key "$key" \
        --redis "redis://127.0.0.1:$redis_port/" --task-log 2>"$OUT/replica$i.log" &
    pids+=($!)
    replica_pids+=($!)
    disown $!
done

upstreams=""
for port in "${replica_ports[@]}"; do
    upstreams+="        server 127.0.0.1:$port max_fails=1 fail_timeout=30s;"$'\n'
done
cat >"$OUT/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $PWD/$OUT/nginx/nginx.pid;
error_log $PWD/$OUT/nginx/error.log warn;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path $PWD/$OUT/nginx/body;
    proxy_temp_path $PWD/$OUT/nginx/proxy;
    fastcgi_temp_path $PWD/$OUT/nginx/fastcgi;
    uwsgi_temp_path $PWD/$OUT/nginx/uwsgi;
    scgi_temp_path $PWD/$OUT/nginx/scgi;
    upstream replicas {
$upstreams        keepalive 16;
    }
    server {
        listen 127.0.0.1:$nginx_port;
        location /mcp {
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host:\$server_port;
            proxy_buffering off;
            proxy_read_timeout 120s;
        }
    }
}
CONF
step "nginx on 127.0.0.1:$nginx_port"
"$NGINX" -p "$PWD/$OUT/nginx" -c "$PWD/$OUT/nginx/nginx.conf" 2>"$OUT/nginx/stderr.log" &
pids+=($!)
for port in "${replica_ports[@]}" "$nginx_port"; do
    for _ in $(seq 1 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
        sleep 0.1
    done
done

step "a storm of task calls for ${STORM_SECONDS}s, six clients, while the faults come"
"$storm" "http://127.0.0.1:$nginx_port/mcp" "$STORM_SECONDS" 6 >"$OUT/storm.out" 2>"$OUT/storm.err" &
storm_pid=$!
pids+=("$storm_pid")
began=$(date +%s)
at() { # wait until $1 seconds into the storm
    local now
    now=$(date +%s)
    [ $((began + $1)) -le "$now" ] || sleep $((began + $1 - now))
}

at 4
step "fault 1: Redis stalls for 7 s (DEBUG SLEEP 7)"
redis_cli DEBUG SLEEP 7 >/dev/null
at 14
step "fault 2: Redis restarts (SHUTDOWN, then the same append-only file)"
redis_cli SHUTDOWN >/dev/null 2>&1 || true
wait "$redis_pid" 2>/dev/null || true
start_redis
at 20
step "fault 3: every subscriber's connection killed (CLIENT KILL TYPE pubsub)"
echo "killed $(redis_cli CLIENT KILL TYPE pubsub) subscribers" >&2
at 24
step "fault 4: replica 0 stopped for 6 s (SIGSTOP, SIGCONT)"
kill -STOP "${replica_pids[0]}"
sleep 6
kill -CONT "${replica_pids[0]}"
at 34
step "fault 5: replica 1 killed (SIGKILL)"
killed_at=$(python3 -c 'import time; print(int(time.time() * 1000))')
kill -9 "${replica_pids[1]}"

step "the storm ends, every task is followed to its end (20 s at most)"
wait "$storm_pid" || true

step "every task against what its handler did"
python3 - "$OUT" 1 "$killed_at" <<'PY'
import collections, os, sys

# The logs' directory, the replica killed, and when (Unix milliseconds).
out, killed, killed_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
TERMINAL = ("completed", "cancelled", "failed")
# What each handler said, by label, and on which replica it ran.
events = collections.defaultdict(set)
ran_on = {}
for i in range(3):
    with open(os.path.join(out, f"replica{i}.log"), errors="replace") as f:
        for line in f:
            if line.startswith("task-log: "):
                what, label = line.split()[1:3]
                events[label].add(what)
                if what == "start":
                    ran_on[label] = i
counts = collections.Counter()
bad = []
with open(os.path.join(out, "storm.out")) as f:
    for line in f:
        task_id, label, kind, acted, listen, status, *text = line.split()
        text = " ".join(text)
        acted = acted == "true"
        gone = ran_on.get(label) == killed
        did = events[label]
        counts["started"] += 1
        counts[f"{kind} tasks"] += 1
        counts[status] += 1
        why = None
        if status not in ("completed", "cancelled", "failed"):
            why = f"not ended: {status}"
            counts["left working"] += 1
        elif status == "failed":
            if not gone:
                why = f"failed while its handler's replica lived ({text})"
            elif "went away" not in text:
                why = f"failed on the killed replica, but not as gone: {text}"
            else:
                counts["failed: replica killed"] += 1
        elif status == "cancelled":
            if kind != "cancel":
                why = "cancelled, but nobody cancelled it"
            elif "done" in did:
                why = "cancelled, but its handler ran to the end"
            elif "stopped" in did:
                counts["cancelled: handler stopped"] += 1
            elif gone:
                counts["cancelled: handler gone with its replica"] += 1
            else:
                why = "cancelled, but its handler was never stopped"
        elif status == "completed":
            if kind == "run" and not ("done" in did and "done after" in text):
                why = f"completed without its handler's result: {text} {sorted(did)}"
            elif kind == "answer" and not ("answered" in did and text == f"Deleted {label}"):
                why = f"completed without its handler's answer: {text} {sorted(did)}"
            elif kind == "cancel" and acted:
                why = "completed after its cancel was acknowledged"
            elif kind == "answer":
                counts["answered: handler got the answer"] += 1
        if kind == "answer" and acted and not gone and "answered" not in did:
            why = why or f"answered, but its handler never got the answer ({status})"
        # What its listen heard (examples/fault_storm.rs: follow):
        # `heard:S+S`, `nothing:S+S`, `cut:END@MS:S+S`, `before`, `none`,
        # `refused`.
        kind_of, _, rest = listen.partition(":")
        if kind_of == "cut":
            end, _, rest = rest.partition(":")
            end, _, at = end.partition("@")
        heard = [s for s in rest.split("+") if s]
        ends = [i for i, s in enumerate(heard) if s in TERMINAL]
        if ends and ends[0] + 1 < len(heard):
            why = why or f"its listen heard it go on after its end: {listen}"
        if kind_of == "heard":
            counts["listens: heard the end"] += 1
            if not ends or heard[ends[0]] != status:
                why = why or f"its listen heard it end {heard[ends[0]] if ends else None}, but it ended {status}"
        elif kind_of == "nothing":
            counts["listens: heard nothing"] += 1
            if status in TERMINAL:
                why = why or f"its listen never heard it end ({status})"
        elif kind_of == "cut":
            if end == "disconnected" and at.isdigit() and int(at) >= killed_at:
                counts["listens: cut (a replica killed)"] += 1
            else:
                counts["listens: cut otherwise"] += 1
                late = int(at) - killed_at if at.lstrip("-").isdigit() else None
                why = why or f"its listen was cut ({end}, {late} ms from the kill) before it heard the end"
        elif kind_of == "before":
            counts["listens: opened after the end"] += 1
        else:
            counts["listens: not opened"] += 1
        if why:
            bad.append(f"{task_id} {label} {kind}: {why}")
for name in ["started", "run tasks", "cancel tasks", "answer tasks", "completed", "cancelled",
             "cancelled: handler stopped", "cancelled: handler gone with its replica",
             "answered: handler got the answer", "failed", "failed: replica killed", "left working",
             "listens: heard the end", "listens: opened after the end",
             "listens: cut (a replica killed)", "listens: cut otherwise", "listens: not opened",
             "listens: heard nothing"]:
    print(f"{name}: {counts[name]}")
print(f"wrong: {len(bad)}")
for line in bad[:40]:
    print(f"  {line}")
sys.exit(1 if bad or counts["started"] == 0 else 0)
PY
