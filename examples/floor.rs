//! The floor: the least a stdio server can do to answer the benchmark's
//! `echo` calls, kept as the physical limit the crate is compared against.
//! It does not use the crate.
//!
//! ```text
//! $ cargo run --release --example floor
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"hi"}}}
//! {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"floor","version":"1.0.0"}}}}
//! ```
//!
//! One thread reads a line, parses it into a `serde_json::Value` and writes a
//! canned reply with the same id: for `tools/call`, the echo result carrying
//! `params.arguments.text` (whatever the tool name, with no check of `_meta`
//! or of the arguments); for `server/discover`, a fixed minimal
//! `DiscoverResult`, so startup can be measured against it too; for
//! `tools/list`, the one `echo` tool (SDK clients in the client benchmark
//! list the tools before they check a result); for any other request,
//! `-32601`. Notifications and blank lines are ignored, a line that
//! is not JSON gets `-32700`. Replies are buffered and flushed only when no
//! complete line is left in the input buffer, so a pipelined burst costs few
//! writes and a lone request is never kept waiting. It exits on end of input.
//!
//! [`serve_floor`] is public so that a test binary can run the floor itself
//! (`tests/loadgen.rs` includes this file with `#[path]`).

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::AsFd;

use serde_json::Value;

/// Both buffers: large enough that a burst of small messages is one read and
/// one write.
const BUFFER: usize = 64 * 1024;

/// The echo result after the text. The server info makes the reply the same
/// shape and about the same size as the crate's `examples/echo.rs` reply.
const CALL_SUFFIX: &[u8] = br#"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"floor","version":"1.0.0"}}}}
"#;

/// A minimal `DiscoverResult` (every required field, tools only).
const DISCOVER_RESULT: &[u8] = br#","result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"floor","version":"1.0.0"}}}}
"#;

/// `tools/list`: the one tool, for SDK clients that list the tools before
/// they check a call's result against its output schema (the Python SDK).
const TOOLS_LIST_RESULT: &[u8] = br#","result":{"tools":[{"name":"echo","description":"Returns its text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}],"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"floor","version":"1.0.0"}}}}
"#;

fn main() -> io::Result<()> {
    serve_floor()
}

/// Serves the floor on the process's stdin and stdout until end of input.
///
/// Both streams are used through duplicates of their file descriptors, so
/// neither std's stdin buffer nor stdout's line buffering sits in between.
pub fn serve_floor() -> io::Result<()> {
    let input = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let output = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    serve(
        BufReader::with_capacity(BUFFER, input),
        BufWriter::with_capacity(BUFFER, output),
    )
}

fn serve(mut input: BufReader<impl Read>, mut output: BufWriter<impl Write>) -> io::Result<()> {
    let mut line = Vec::new();
    loop {
        // The next read may block: let everything answered so far go first.
        if !input.buffer().contains(&b'\n') {
            output.flush()?;
        }
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return output.flush();
        }
        answer(&line, &mut output)?;
    }
}

/// Writes the reply to one input line, if it gets one.
fn answer(line: &[u8], out: &mut impl Write) -> io::Result<()> {
    if line.trim_ascii().is_empty() {
        return Ok(());
    }
    let Ok(message) = serde_json::from_slice::<Value>(line) else {
        return out.write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse error\"}}\n",
        );
    };
    let Some(id) = message.get("id") else {
        return Ok(()); // a notification
    };
    out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
    serde_json::to_writer(&mut *out, id)?;
    match message["method"].as_str() {
        Some("tools/call") => {
            bench_work();
            let text = message["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or("");
            out.write_all(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":")?;
            serde_json::to_writer(&mut *out, text)?;
            out.write_all(CALL_SUFFIX)
        }
        Some("server/discover") => out.write_all(DISCOVER_RESULT),
        Some("tools/list") => out.write_all(TOOLS_LIST_RESULT),
        _ => out.write_all(b",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n"),
    }
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
