#!/usr/bin/env bash
# Replicas behind nginx (issue 28, item 4; BENCHMARKS.md, "Past one
# process"): examples/echo --http (release) measured by examples/httpload
# in one interleaved run, three ways:
#
#   direct    one replica, no nginx
#   nginx-1   nginx (one worker, keep-alive upstream) in front of that replica
#   nginx-3   nginx in front of three replicas, plain round robin
#
#   scripts/bench-scale-out.sh [httpload options]   e.g. --rounds 5 --calls 4000 --conns 1,16
#
# The CPU and RSS columns are those of the process named in each row (the
# replica for `direct`, nginx's worker for the others). Every process shares
# the machine's cores with the load generator: on two cores, three replicas
# can only add what nginx and the load generator leave. Needs nginx (Debian
# nginx-light; installed when missing, as tests/scale_out.sh does). Not part
# of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=target/bench-scale-out
rm -rf "$OUT"
mkdir -p "$OUT"
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
    apt-get install -y -qq nginx-light >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq nginx-light >/dev/null; }
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

echo "== building (release)" >&2
cargo build --quiet --release --features http --example echo --example httpload

PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    { wait; } 2>/dev/null || true
}
trap cleanup EXIT

read -r -a ports <<<"$(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
')"
replica_pids=()
for i in 0 1 2; do
    target/release/examples/echo --http "127.0.0.1:${ports[$i]}" 2>"$OUT/replica$i.log" &
    PIDS+=($!)
    replica_pids+=($!)
done

# nginx NAME PORT REPLICAS...: one nginx in front of the replicas; its worker's pid.
nginx() {
    local name=$1 port=$2 upstreams=""
    shift 2
    for p in "$@"; do upstreams+="        server 127.0.0.1:$p;"$'\n'; done
    mkdir -p "$OUT/$name"
    cat >"$OUT/$name/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $PWD/$OUT/$name/nginx.pid;
error_log $PWD/$OUT/$name/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $PWD/$OUT/$name/body;
    proxy_temp_path $PWD/$OUT/$name/proxy;
    fastcgi_temp_path $PWD/$OUT/$name/fastcgi;
    uwsgi_temp_path $PWD/$OUT/$name/uwsgi;
    scgi_temp_path $PWD/$OUT/$name/scgi;
    upstream replicas {
$upstreams        keepalive 64;
        keepalive_requests 10000000;
    }
    # httpload keeps each connection for the whole run.
    keepalive_requests 10000000;
    keepalive_timeout 600s;
    server {
        listen 127.0.0.1:$port;
        location /mcp {
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host:\$server_port;
            proxy_buffering off;
        }
    }
}
CONF
    "$NGINX" -p "$PWD/$OUT/$name" -c "$PWD/$OUT/$name/nginx.conf" 2>"$OUT/$name/stderr.log" &
    PIDS+=($!)
}
nginx one "${ports[3]}" "${ports[0]}"
nginx three "${ports[4]}" "${ports[0]}" "${ports[1]}" "${ports[2]}"

for port in "${ports[@]}"; do
    for _ in $(seq 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
        sleep 0.1
    done
done
worker() { pgrep -P "$(cat "$OUT/$1/nginx.pid")" | head -1; }

echo "== measuring (interleaved: direct, nginx-1, nginx-3, ...)" >&2
target/release/examples/httpload "$@" \
    "direct=http://127.0.0.1:${ports[0]}/mcp@${replica_pids[0]}" \
    "nginx-1=http://127.0.0.1:${ports[3]}/mcp@$(worker one)" \
    "nginx-3=http://127.0.0.1:${ports[4]}/mcp@$(worker three)"
