#!/usr/bin/env bash
# Past one process (issue 28): three replicas of `examples/everything --http`
# behind a real nginx doing plain round robin (no stickiness), proven with
# the Python SDK's HTTP client (tests/scale_out/checks.py):
#
#   - a multi round-trip call whose rounds land on different replicas
#     completes (they share one sealing key), and a state sealed by another
#     key is refused;
#   - a `subscriptions/listen` held by one replica hears the tool-list
#     change and the resource update caused by calls that landed on the
#     others (a change feed on Redis pub/sub, `RedisChangeFeed`);
#   - a task (one Redis store, `RedisTaskStore`) run by one replica is
#     polled on a second and answered on a third, and another is cancelled
#     there (the answer and the stop reach the handler through the feed);
#   - a replica killed in the middle: the call in flight on it fails as the
#     client sees a broken response, the others complete, the task it ran
#     reads `failed` on another replica within its lease (10 s), and later
#     calls are served by the replicas left.
#
#
# Our client (`mcp-stdio --url`, examples/replicas.rs) does the same
# through nginx: MRTR rounds on two replicas, a listen hearing each
# replica's change, a task followed across replicas and another cancelled,
# and, after the Python checks, a replica killed under a call in flight.
#
#   tests/scale_out.sh          install what is missing, run, exit 1 on a failure
#
# Installs nginx and redis-server from Debian (apt-get) when they are missing, and the Python SDK
# (mcp==2.3.0) into target/interop/py as tests/interop/run.sh does. Logs and
# the nginx config are in target/scale_out/. `cargo test` never needs any of it.
set -euo pipefail
cd "$(dirname "$0")/.."

PY_MCP=2.3.0
OUT=target/scale_out
rm -rf "$OUT"
mkdir -p "$OUT/nginx"

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

venv=target/interop/py
if [ "$(cat "$venv/.pinned" 2>/dev/null)" != "mcp==$PY_MCP" ]; then
    step "Python SDK mcp==$PY_MCP ($venv)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP"
    echo "mcp==$PY_MCP" >"$venv/.pinned"
fi

# REPLICAS_BIN=DIR: the binaries built already (everything, replicas,
# mcp-stdio), as .ci/run does so that this runs beside steps that build the
# crate with other features.
bin=${REPLICAS_BIN:-}
cli=$bin/mcp-stdio
if [ -z "$bin" ]; then
    step "examples/everything and mcp-stdio with the http and redis features"
    cargo build --quiet --features http,redis-tls --example everything --example replicas --bin mcp-stdio
    bin=target/debug/examples
    cli=target/debug/mcp-stdio
fi
everything=$bin/everything

# Free loopback ports: three replicas, nginx, a stranger with its own key, Redis.
read -r -a ports <<<"$(python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
')"
replica_ports=("${ports[@]:0:3}")
nginx_port=${ports[3]}
stranger_port=${ports[4]}
redis_port=${ports[5]}
key=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
other_key=$(python3 -c 'import secrets; print(secrets.token_hex(32))')

# A mistyped key is refused without being echoed: the error goes to the
# server's log, and a key with one digit wrong or missing is most of the
# real one (review seal14).
typo=${key:0:63}
if refused=$("$everything" --http 127.0.0.1:0 --state-key "$typo" 2>&1 </dev/null); then
    echo "FAIL: a 63-digit --state-key was accepted" >&2
    exit 1
elif grep -q "${typo:0:32}" <<<"$refused"; then
    echo "FAIL: a mistyped --state-key was echoed: $refused" >&2
    exit 1
fi

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    { wait; } 2>/dev/null || true
}
trap cleanup EXIT

step "redis-server on 127.0.0.1:$redis_port (no persistence)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$OUT" \
    --logfile "$PWD/$OUT/redis.log" &
pids+=($!)
for _ in $(seq 1 100); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
done

step "three replicas (one sealing key, one Redis) and a stranger (its own key)"
replica_pids=()
for i in 0 1 2; do
    "$everything" --http "127.0.0.1:${replica_ports[$i]}" --state-key "$key" \
        --redis "redis://127.0.0.1:$redis_port/" 2>"$OUT/replica$i.log" &
    pids+=($!)
    replica_pids+=($!)
    # Not a job of this shell: the one the checks kill is not reported.
    disown $!
done
"$everything" --http "127.0.0.1:$stranger_port" --state-key "$other_key" 2>"$OUT/stranger.log" &
pids+=($!)

upstreams=""
for port in "${replica_ports[@]}"; do
    upstreams+="        server 127.0.0.1:$port max_fails=1 fail_timeout=30s;"$'\n'
done
cat >"$OUT/nginx/nginx.conf" <<CONF
# Plain round robin over the replicas: no stickiness, no session affinity.
worker_processes 1;
daemon off;
pid $PWD/$OUT/nginx/nginx.pid;
error_log $PWD/$OUT/nginx/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $PWD/$OUT/nginx/body;
    proxy_temp_path $PWD/$OUT/nginx/proxy;
    fastcgi_temp_path $PWD/$OUT/nginx/fastcgi;
    uwsgi_temp_path $PWD/$OUT/nginx/uwsgi;
    scgi_temp_path $PWD/$OUT/nginx/scgi;
    # Which replica served each POST, for the checks.
    log_format upstream '\$upstream_addr \$status \$http_mcp_method';
    upstream replicas {
$upstreams        keepalive 16;
    }
    server {
        listen 127.0.0.1:$nginx_port;
        access_log $PWD/$OUT/nginx/access.log upstream;
        location /mcp {
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host:\$server_port;
            # Event streams go through as they are written.
            proxy_buffering off;
            proxy_read_timeout 120s;
        }
    }
}
CONF
step "nginx on 127.0.0.1:$nginx_port"
"$NGINX" -p "$PWD/$OUT/nginx" -c "$PWD/$OUT/nginx/nginx.conf" 2>"$OUT/nginx/stderr.log" &
pids+=($!)

# Every server answers before the checks start.
for port in "${replica_ports[@]}" "$stranger_port" "$nginx_port"; do
    for _ in $(seq 1 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
        sleep 0.1
    done
done

step "checks (our client, mcp-stdio --url, through nginx)"
url="http://127.0.0.1:$nginx_port/mcp"
failed=0
ours() { # NAME OK DETAIL
    if [ "$2" = 0 ]; then echo "PASS  ours: $1: $3"; else echo "FAIL  ours: $1: $3"; failed=1; fi
}
# Which replica served each POST of a method since line $1 of the log.
served() { tail -n +"$(($1 + 1))" "$OUT/nginx/access.log" | awk -v m="$2" '$3 == m {print $1}'; }
# A multi round-trip call: round 1 and its retry go to two replicas.
mark=$(wc -l <"$OUT/nginx/access.log")
got=$(timeout 30 "$cli" call ask --answer name=Ada --url "$url" 2>&1 || true)
rounds=$(served "$mark" tools/call | tr '\n' ' ')
distinct=$(served "$mark" tools/call | sort -u | wc -l)
ok=1
[[ "$got" == *Ada* ]] && [ "$distinct" -ge 2 ] && ok=0
ours "mrtr across replicas" $ok "$got (rounds on $rounds)"
# A listen held by one replica hears the list change each replica makes.
mark=$(wc -l <"$OUT/nginx/access.log")
timeout 30 "$cli" listen --tools --json --url "$url" >"$OUT/ours-listen.out" 2>"$OUT/ours-listen.err" &
listener=$!
for _ in $(seq 100); do [ -s "$OUT/ours-listen.out" ] && break; sleep 0.05; done
# Each replica toggles once, called directly: through nginx, which replica
# a call reaches depends on how many requests each client makes (round
# robin), and three clients of as many requests each can all land on one.
for port in "${replica_ports[@]}"; do
    "$cli" call toggle_tool --url "http://127.0.0.1:$port/mcp" >/dev/null 2>&1
done
for _ in $(seq 100); do
    [ "$(grep -c list_changed "$OUT/ours-listen.out")" -ge 3 ] && break
    sleep 0.05
done
kill -INT "$listener" 2>/dev/null || true
wait "$listener" 2>/dev/null || true
heard=$(grep -c list_changed "$OUT/ours-listen.out" || true)
holder=$(served "$mark" subscriptions/listen | head -1)
ok=1
[ "$heard" = 3 ] && [ -n "$holder" ] && ok=0
ours "listen across replicas" $ok "the listen on $holder heard $heard list changes, one made on each of the 3 replicas"
# Each replica toggled back, as it was.
for port in "${replica_ports[@]}"; do
    "$cli" call toggle_tool --url "http://127.0.0.1:$port/mcp" >/dev/null 2>&1
done
# A task run on one replica, followed by our client (tasks/get polled,
# its question answered with tasks/update) through all of them; another
# cancelled.
mark=$(wc -l <"$OUT/nginx/access.log")
got=$(timeout 60 "$bin/replicas" "$url" 2>&1 || true)
created=$(served "$mark" tools/call | head -1)
polled=$(served "$mark" tasks/get | sort -u | tr '\n' ' ')
answered=$(served "$mark" tasks/update | tr '\n' ' ')
cancelled=$(served "$mark" tasks/cancel | tr '\n' ' ')
ok=1
[[ "$got" == *"Deleted ours.txt"* && "$got" == *": cancelled"* ]] &&
    [ "$(served "$mark" tasks/get | sort -u | wc -l)" -ge 2 ] && [ -n "$answered" ] && ok=0
ours "tasks across replicas" $ok "created on $created, polled on $polled, answered on $answered, cancelled on $cancelled: $(echo "$got" | tr '\n' ';')"
[ "$failed" = 0 ] || exit 1

step "checks (Python SDK mcp==$PY_MCP through nginx)"
"$venv/bin/python" tests/scale_out/checks.py \
    --url "http://127.0.0.1:$nginx_port/mcp" \
    --access-log "$OUT/nginx/access.log" \
    --stranger "http://127.0.0.1:$stranger_port/mcp" \
    --replicas "$(IFS=,; echo "${replica_ports[*]}")" \
    --replica-pids "$(IFS=,; echo "${replica_pids[*]}")"

step "our client when a replica dies mid-call (two replicas left, one is killed)"
alive=()
alive_ports=()
for k in "${!replica_pids[@]}"; do
    if kill -0 "${replica_pids[k]}" 2>/dev/null; then
        alive+=("${replica_pids[k]}")
        alive_ports+=("${replica_ports[k]}")
    fi
done
# Four slow calls in flight, spread over the two replicas left by round
# robin; which call went where is read from nginx's log once they ended
# (two calls can land on one replica: nginx's rotation also counts the dead
# one, and each command's discover request takes a turn).
mark=$(wc -l <"$OUT/nginx/access.log")
for i in 0 1 2 3; do
    timeout 60 "$cli" call slow ms=3000 --url "$url" >"$OUT/ours-slow$i.out" 2>&1 &
    slow[i]=$!
done
sleep 1
kill -9 "${alive[0]}"
for i in 0 1 2 3; do wait "${slow[i]}" || true; done
outcomes=$(cat "$OUT"/ours-slow?.out | tr '\n' ';')
on_killed=$(served "$mark" tools/call | grep -c -x "127.0.0.1:${alive_ports[0]}" || true)
done_calls=$(grep -l -x done "$OUT"/ours-slow?.out | wc -l)
after=$(timeout 30 "$cli" call echo text=after --url "$url" 2>&1 || true)
ok=1
# The calls on the killed replica fail, the others complete: at least one of each.
[ "$on_killed" -ge 1 ] && [ "$done_calls" -ge 1 ] && [ $((4 - done_calls)) = "$on_killed" ] &&
    [ "$after" = after ] && ok=0
ours "replica killed" $ok "$on_killed of 4 calls in flight on the killed replica; outcomes: $outcomes then echo: $after"
[ "$failed" = 0 ]
