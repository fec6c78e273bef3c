#!/usr/bin/env bash
# The server core before and after: one interleaved run of the floor, the
# code at BEFORE (default 7e84180, the core before issues 42 and 44; 1094b28
# is the one before issue 26's rework) and this checkout, pooled and inline,
# and rmcp 3.11, with a handler that does no work and one that does 200 µs
# of CPU work (MCP_BENCH_WORK_US), pinned to CPU 1 and unpinned. Prints the four tables (BENCHMARKS.md,
# "The core made simple again").
#
#   scripts/bench-core.sh [ROUNDS]        # default 3 rounds; ~25 minutes
#   EXTRA="path/to/echo --pooled" scripts/bench-core.sh   # one more server, last
#   PLAIN_POOL=1 scripts/bench-core.sh    # that server: this tree with a plain pool
#
# PLAIN_POOL builds this checkout with scripts/plain-pool.patch applied (the
# pool as issue 44 item 2 asked for it: a mutex and a channel, no watcher;
# measured and not kept: BENCHMARKS.md "A pool without a watcher,
# measured") in a worktree under target/bench-core, and runs its echo last.
#
# The "before" echo is built from BEFORE's tree, in a worktree under
# target/bench-core; a tree whose examples/echo.rs cannot do the handler's
# work yet gets this file's copy (the same tool, plus the work).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
before=${BEFORE:-7e84180}
dir=target/bench-core
mkdir -p "$dir"
if [ ! -d "$dir/before" ]; then
    git worktree add --detach "$dir/before" "$before" >/dev/null
fi
# The worktree may be left from a run with another BEFORE.
git -C "$dir/before" checkout --quiet --force --detach "$before"
grep -q MCP_BENCH_WORK_US "$dir/before/examples/echo.rs" || cat > "$dir/before/examples/echo.rs" <<'RS'
use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{RequestContext, Server, Transport};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct EchoArgs {
    text: String,
}

fn bench_work() {
    static WORK: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    let work = *WORK.get_or_init(|| {
        let us = std::env::var("MCP_BENCH_WORK_US").ok().and_then(|v| v.parse().ok());
        std::time::Duration::from_micros(us.unwrap_or(0))
    });
    let started = std::time::Instant::now();
    while started.elapsed() < work {
        std::hint::spin_loop();
    }
}

fn main() -> Result<(), mcp_stdio::Error> {
    let echo = Tool::new("echo", "Returns its text unchanged.").input_schema(json!({
        "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"]
    }));
    let handler = |_ctx: &RequestContext, args: EchoArgs| {
        bench_work();
        Ok(CallToolResult::text(args.text))
    };
    let builder = Server::builder("echo", "1.0.0");
    let server = if std::env::args().any(|arg| arg == "--pooled") {
        builder.tool(echo, handler)
    } else {
        builder.inline_tool(echo, handler)
    }
    .build();
    #[cfg(feature = "signals")]
    mcp_stdio::signal::stop_on_signals(server.stop_handle())?;
    server.serve(Transport::stdio())
}
RS
(cd "$dir/before" && CARGO_TARGET_DIR="../target-before" cargo build --quiet --release --example echo)
cargo build --quiet --release --example echo
if [ -n "${PLAIN_POOL:-}" ]; then
    rm -rf "$dir/plain"
    git worktree prune
    git worktree add --detach "$dir/plain" HEAD >/dev/null
    git -C "$dir/plain" apply "$PWD/scripts/plain-pool.patch"
    (cd "$dir/plain" && CARGO_TARGET_DIR="../target-plain" cargo build --quiet --release --example echo)
    cp "$dir/target-plain/release/examples/echo" "$dir/echo-plain"
    EXTRA="$dir/echo-plain --pooled"
fi
cargo build --quiet --profile floor --example floor --example loadgen
cargo build --quiet --release --manifest-path tests/interop/rmcp/Cargo.toml --target-dir target/interop/rmcp
cp "$dir/target-before/release/examples/echo" "$dir/echo-before"
cp target/release/examples/echo "$dir/echo-after"
floor=target/floor/examples/floor
rmcp=target/interop/rmcp/release/rmcp-fixture
for work in 0 200; do
    for pin in "--pin 1" ""; do
        echo "== handler work ${work} µs, ${pin:-unpinned}"
        # shellcheck disable=SC2086
        MCP_BENCH_WORK_US=$work target/floor/examples/loadgen $pin --rounds "$rounds" --sizes 32 \
            --compare $floor -- "$dir/echo-before" --pooled -- "$dir/echo-after" --pooled \
            -- "$dir/echo-before" -- "$dir/echo-after" -- $rmcp ${EXTRA:+-- $EXTRA} 2>/dev/null
    done
done
