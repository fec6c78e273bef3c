//! A server with every fixture of `../shared/FIXTURES.md`: its own (part A: `echo`, `add`, `slow`, `progress`, `fail`,
//! `panic`, `big`, `bump`, `toggle_tool`, `add_tool`, `stats`, resource
//! `mem://counter`, prompt `greet`) and the conformance suite's (part B:
//! `test_*` tools, `test://` resources and template, `test_*` prompts,
//! completion), and the Tasks extension's (part C: `greet`, `slow_compute`,
//! `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`,
//! `test_tool_with_task`). Tests, benchmarks and interop checks drive it.
//!
//! ```text
//! $ printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' | cargo run --example everything
//! ```
//!
//! With the `http` feature, `--http ADDR` serves the same fixtures over
//! Streamable HTTP at `http://ADDR/mcp` (and prints that URL on stderr),
//! with one more tool whose argument is mirrored in a header:
//!
//! ```text
//! $ cargo run --features http --example everything -- --http 127.0.0.1:8080
//! ```
//!
//! `--state-key HEX` (64 hex digits) seals multi round-trip state with that
//! key instead of a random one, so that replicas behind a load balancer
//! accept each other's rounds; with the `redis` feature, `--redis URL`
//! carries what one replica publishes to the listens held by the others
//! and keeps the tasks there, so that any replica answers for any task
//! (`tests/scale_out.sh`). `--task-log` has the handlers of `slow_compute`
//! and `confirm_delete` say on stderr what they did
//! (`tests/scale_out_faults.sh`).

mod conformance;
mod fixtures;
mod server;

fn main() -> std::process::ExitCode {
    // One line for people, not the error's `Debug`.
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("everything: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), mcp_stdio::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let key = match flag(&args, "--state-key").map(|hex| parse_key(&hex)) {
        None => None,
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => {
            eprintln!("everything: {e}");
            std::process::exit(2);
        }
    };
    let redis = flag(&args, "--redis");
    if args.iter().any(|a| a == "--task-log") {
        server::tasks::TASK_LOG.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let server = server::build_with(|mut builder| {
        if let Some(key) = key {
            builder = builder.request_state_key(key);
        }
        match &redis {
            Some(url) => with_change_feed(builder, url),
            None => builder,
        }
    });
    mcp_stdio::signal::stop_on_signals(server.stop_handle())?;
    if let Some(at) = args.iter().position(|a| a == "--http") {
        let Some(addr) = args.get(at + 1) else {
            eprintln!("everything: --http needs an address, for example --http 127.0.0.1:8080");
            std::process::exit(2);
        };
        return serve_http(&server, addr);
    }
    server.serve(mcp_stdio::Transport::stdio())
}

#[cfg(feature = "http")]
fn serve_http(server: &mcp_stdio::Server, addr: &str) -> Result<(), mcp_stdio::Error> {
    // Over HTTP one more tool: its `region` is mirrored in the
    // `Mcp-Param-Region` header (SEP-2243; the conformance suite's
    // `http-custom-header-server-validation` needs such a tool).
    let region = mcp_stdio::types::Tool::new(
        "test_custom_header",
        "Returns its region, which HTTP clients mirror in a header.",
    )
    .input_schema(serde_json::json!({
        "type": "object",
        "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
        "required": ["region"]
    }));
    server.add_tool(region, |_ctx, args: serde_json::Value| {
        let region = args["region"].as_str().unwrap_or_default();
        Ok(mcp_stdio::types::CallToolResult::text(format!(
            "region: {region}"
        )))
    });
    let listener = std::net::TcpListener::bind(addr)?;
    eprintln!("http://{}/mcp", listener.local_addr()?);
    server.serve_http(listener, mcp_stdio::HttpOptions::new())
}

#[cfg(not(feature = "http"))]
fn serve_http(_: &mcp_stdio::Server, _: &str) -> Result<(), mcp_stdio::Error> {
    eprintln!(
        "everything: --http needs the http feature: cargo run --features http --example everything -- --http ADDR"
    );
    std::process::exit(2);
}

/// The value after `name` in `args`, if it is there.
fn flag(args: &[String], name: &str) -> Option<String> {
    let at = args.iter().position(|a| a == name)?;
    Some(args.get(at + 1).cloned().unwrap_or_default())
}

/// A 32-byte key from 64 hex digits.
fn parse_key(hex: &str) -> Result<[u8; 32], String> {
    // Never the value: a key with a typo is most of the real one.
    let wrong = || {
        format!(
            "--state-key needs 64 hex digits (32 bytes), got {} characters",
            hex.chars().count()
        )
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(wrong());
    }
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(hex.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| wrong())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| wrong())?;
    }
    Ok(key)
}

/// What `--redis URL` adds to the builder: a change feed and the task
/// store on that Redis.
#[cfg(feature = "redis")]
fn with_change_feed(builder: mcp_stdio::ServerBuilder, url: &str) -> mcp_stdio::ServerBuilder {
    let feed = match mcp_stdio::RedisChangeFeed::open(url, "mcp-stdio-everything:changes") {
        Ok(feed) => feed,
        Err(e) => {
            eprintln!("everything: {e}");
            std::process::exit(2);
        }
    };
    let store = match mcp_stdio::RedisTaskStore::open(url, "mcp-stdio-everything:tasks") {
        Ok(store) => store,
        Err(e) => {
            eprintln!("everything: {}", e.message);
            std::process::exit(2);
        }
    };
    builder.change_feed(feed).task_store(store)
}

#[cfg(not(feature = "redis"))]
fn with_change_feed(_: mcp_stdio::ServerBuilder, _: &str) -> mcp_stdio::ServerBuilder {
    eprintln!(
        "everything: --redis needs the redis feature: cargo run --features http,redis --example everything -- --http ADDR --redis URL"
    );
    std::process::exit(2);
}
