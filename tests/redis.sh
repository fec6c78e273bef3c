#!/usr/bin/env bash
# The Redis parts (issue 28: RedisChangeFeed, RedisTaskStore) against a
# real redis-server: starts one on a free loopback port with no
# persistence, and one with TLS only whose sole user is an ACL user with
# the commands README lists (issue 48, item 5: a test CA made with
# openssl), runs the tests that need them (`#[ignore]`d in `cargo test`),
# stops them. The fault tests (tests/it/redis_faults.rs, issue 48) also
# start redis-servers of their own, for the stalls. Installs redis-server
# and openssl from Debian when missing. `cargo test` never needs them.
# REDIS_FEATURES: the features the test binary is built with (default
# http,redis-tls; .ci/run passes the ones its build used, to reuse it).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in redis-server openssl; do
    if ! command -v "$tool" >/dev/null; then
        echo "== $tool (Debian package $tool)" >&2
        apt-get install -y -qq "$tool" >/dev/null 2>&1 ||
            { apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null; }
    fi
done
dir=target/redis
mkdir -p "$dir/tls"
read -r port tls_port <<<"$(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
')"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --logfile "$PWD/$dir/redis.log" --daemonize no &
redis=$!
# A CA, and a certificate for localhost signed by it.
tls=$dir/tls
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.crt" \
    -days 2 -subj /CN=mcp-stdio-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$tls/server.key" -out "$tls/server.csr" \
    -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$tls/ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
    -CAcreateserial -out "$tls/server.crt" -days 2 -extfile "$tls/ext" 2>/dev/null
# README "Deploying past one process": the commands a replica needs, on its
# key prefix and channel only; the default user is off.
password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
cat >"$tls/redis.conf" <<CONF
port 0
tls-port $tls_port
bind 127.0.0.1
tls-cert-file $PWD/$tls/server.crt
tls-key-file $PWD/$tls/server.key
tls-ca-cert-file $PWD/$tls/ca.crt
tls-auth-clients no
save ""
appendonly no
dir $PWD/$tls
logfile $PWD/$tls/redis.log
user default off
user mcp on >$password ~mcp:* &mcp:* +get +set +del +exists +eval +pexpire +sadd +srem +smembers +publish +subscribe +ping
CONF
redis-server "$tls/redis.conf" &
redis_tls=$!
trap 'kill $redis $redis_tls 2>/dev/null; { wait $redis $redis_tls; } 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
for _ in $(seq 1 100); do
    redis-cli --tls --cacert "$tls/ca.crt" -p "$tls_port" --user mcp --pass "$password" \
        --no-auth-warning ping >/dev/null 2>&1 && break
    sleep 0.1
done
REDIS_URL="redis://127.0.0.1:$port/" \
    REDIS_TLS_URL="rediss://mcp:$password@localhost:$tls_port/" \
    SSL_CERT_FILE="$PWD/$tls/ca.crt" \
    cargo test --features "${REDIS_FEATURES:-http,redis-tls}" --test it redis -- --ignored
