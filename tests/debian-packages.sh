#!/usr/bin/env bash
# The Debian packages of the Redis and nginx steps (tests/redis.sh,
# tests/scale_out.sh, tests/scale_out_faults.sh), installed when missing:
# .ci/run starts it while the Rust builds run. Each of those scripts still
# installs what it needs on its own.
set -euo pipefail
missing=()
for pair in redis-server:redis-server openssl:openssl nginx:nginx-light; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "== Debian packages: ${missing[*]}"
apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }
