//! The smallest complete server: one inline `echo` tool. It is what the
//! benchmarks measure. With `--pooled` the tool runs on the worker pool
//! instead, as a tool registered with `.tool(..)` does.
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

fn main() -> Result<(), mcp_stdio::Error> {
    let echo = Tool::new("echo", "Returns its text unchanged.").input_schema(json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    }));
    let handler = |_ctx: &RequestContext, args: EchoArgs| Ok(CallToolResult::text(args.text));
    let builder = Server::builder("echo", "1.0.0");
    let server = if std::env::args().any(|arg| arg == "--pooled") {
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
    server.serve(Transport::stdio())
}
