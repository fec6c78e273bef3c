#!/usr/bin/env bash
# Builds the echo server as a fully static binary (glibc, crt-static; no
# extra toolchain) with only the `server` feature, checks that it needs no
# dynamic loader, and runs it on a piped request. README, "Static
# binaries"; run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-unknown-linux-gnu
RUSTFLAGS="-C target-feature=+crt-static" cargo build --quiet --release --target "$target" \
    --no-default-features --features server --example echo
bin=target/$target/release/examples/echo
# A dynamic executable names its loader in a PT_INTERP program header.
python3 - "$bin" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:4] == b"\x7fELF" and data[4] == 2, "not a 64-bit ELF file"
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
types = [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]
assert 3 not in types, "the binary names a dynamic loader (PT_INTERP): not static"
PY
request='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"static"}}}'
expected='{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"static"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echo","version":"1.0.0"}}}}'
got=$(printf '%s\n' "$request" | "$bin")
if [ "$got" != "$expected" ]; then
    echo "static echo answered: $got" >&2
    exit 1
fi
echo "static echo: $(stat -c %s "$bin") bytes, no dynamic loader, answered the piped request"
