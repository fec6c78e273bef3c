//! The smallest complete server: one inline `echo` tool. It is what the
//! benchmarks measure. With `--pooled` the tool runs on the worker pool
//! instead, as a tool registered with `.tool(..)` does; `--spin` and
//! `--release-memory` turn on the builder settings of those names. With
//! `MCP_BENCH_WORK_US=200` in the environment each call does 200 µs of CPU
//! work first (a handler that does real work). With `--http ADDR` (feature
//! `http`) it serves Streamable HTTP at `http://ADDR/mcp` instead of stdio,
//! printing that URL on stderr: the fixture of `scripts/bench-http.sh`.
//!
//! Its schema is written by hand, unlike the README's server (which
//! advertises the schema derived from its argument type): this is the
//! binary the benchmarks measure, in the smallest build too, which leaves
//! out the `schemars` feature. With `schemars` on, a typed tool's argument
//! type must derive `JsonSchema` (`ToolArguments`), hence the `cfg_attr`;
//! the hand-written schema still wins.
//!
//! ```text
//! $ cargo run --release --example echo
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"hi"}}}
//! {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echo","version":"1.0.0"}}}}
//! ```

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{RequestContext, Server, Transport};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct EchoArgs {
    text: String,
}

fn main() -> std::process::ExitCode {
    // One line for people, not the error's `Debug`.
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), mcp_stdio::Error> {
    let echo = Tool::new("echo", "Returns its text unchanged.").input_schema(json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    }));
    let handler = |_ctx: &RequestContext, args: EchoArgs| {
        bench_work();
        Ok(CallToolResult::text(args.text))
    };
    let flag = |name: &str| std::env::args().any(|arg| arg == name);
    // The library's defaults, unless asked: `--spin` keeps an idle worker
    // awake for 100 µs (yielding) before it sleeps, `--release-memory`
    // gives memory back to the system after a burst (both process-wide
    // choices a whole-process server may make; BENCHMARKS.md measures them).
    let mut builder = Server::builder("echo", "1.0.0");
    if flag("--spin") {
        builder = builder.spin_before_sleep(std::time::Duration::from_micros(100));
    }
    if flag("--release-memory") {
        builder = builder.release_memory_when_idle(true);
    }
    let server = if flag("--pooled") {
        builder.tool(echo, handler)
    } else {
        // Inline: the handler is cheap and never blocks, so it runs on the
        // thread that writes the output, with no thread hop.
        builder.inline_tool(echo, handler)
    }
    .build();
    // Without the `signals` feature (the smallest build) SIGTERM simply
    // ends the process.
    #[cfg(feature = "signals")]
    mcp_stdio::signal::stop_on_signals(server.stop_handle())?;
    #[cfg(feature = "http")]
    if let Some(addr) = value_of("--http") {
        let listener = std::net::TcpListener::bind(&addr)?;
        eprintln!("http://{}/mcp", listener.local_addr()?);
        return server.serve_http(listener, mcp_stdio::HttpOptions::new());
    }
    server.serve(Transport::stdio())
}

/// The argument after `name`, if `name` is on the command line.
#[cfg(feature = "http")]
fn value_of(name: &str) -> Option<String> {
    let mut args = std::env::args().skip_while(|arg| arg != name);
    args.next();
    args.next()
}

/// The work a benchmark's handler does per call: `MCP_BENCH_WORK_US`
/// microseconds of CPU (none when unset), as a handler that does real work
/// would; the same in `floor.rs` and the rmcp fixture.
fn bench_work() {
    static WORK: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    let work = *WORK.get_or_init(|| {
        let us = std::env::var("MCP_BENCH_WORK_US")
            .ok()
            .and_then(|v| v.parse().ok());
        std::time::Duration::from_micros(us.unwrap_or(0))
    });
    let started = std::time::Instant::now();
    while started.elapsed() < work {
        std::hint::spin_loop();
    }
}
