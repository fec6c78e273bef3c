#!/usr/bin/env bash
# The Redis parts (issue 28: RedisChangeFeed, RedisTaskStore) against a
# real redis-server: starts one on a free loopback port with no
# persistence, runs the tests that need it
# (`#[ignore]`d in `cargo test`), stops it. The fault tests
# (tests/it/redis_faults.rs, issue 48) also start redis-servers of their
# own, for the stalls. Installs redis-server from Debian when it is
# missing. `cargo test` never needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null; then
    echo "== redis-server (Debian package redis-server)" >&2
    apt-get install -y -qq redis-server >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
fi
dir=target/redis
mkdir -p "$dir"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --logfile "$PWD/$dir/redis.log" --daemonize no &
redis=$!
trap 'kill $redis 2>/dev/null; { wait $redis; } 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
REDIS_URL="redis://127.0.0.1:$port/" cargo test --features http,redis --test it redis -- --ignored
