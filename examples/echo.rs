//! The smallest complete server: one inline `echo` tool. It is what the
//! benchmarks measure.
//!
//! ```text
//! $ cargo run --release --example echo
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"hi"}}}
//! {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echo","version":"1.0.0"}}}}
//! ```

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct EchoArgs {
    text: String,
}

fn main() -> Result<(), mcp_stdio::Error> {
    let echo = Tool::new("echo", "Returns its text unchanged.").input_schema(json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    }));
    let server = Server::builder("echo", "1.0.0")
        // Inline: the handler is cheap and never blocks, so it runs on the
        // thread that writes the output, with no thread hop.
        .inline_tool(echo, |_ctx, args: EchoArgs| {
            Ok(CallToolResult::text(args.text))
        })
        .build();
    mcp_stdio::signal::stop_on_signals(server.stop_handle())?;
    server.serve(Transport::stdio())
}
