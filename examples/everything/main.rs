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

mod conformance;
mod fixtures;
mod server;

fn main() -> Result<(), mcp_stdio::Error> {
    let server = server::build();
    mcp_stdio::signal::stop_on_signals(server.stop_handle())?;
    server.serve(mcp_stdio::Transport::stdio())
}
