//! Framing on the wire, as careless clients write it: a real server
//! process over OS pipes, its stdin held open, and every reply required
//! while the client waits. This test binary re-executes itself as the
//! server (with `MCP_FRAMING_TEST_SERVER` set).
//!
//! Each case writes a message the way some client does (a blank line after
//! it, as Python's `print(json.dumps(msg) + "\n")` does; `\r\n`; a line
//! split across writes or sent byte by byte; the start of the next line)
//! and waits for the replies it must get (in any order: two pooled calls
//! may finish either way round), a generous deadline each, never a tight
//! timing. Then it requires that nothing else was written: a request sent
//! next is answered by the very next line, and the output ends, once stdin
//! is closed, with nothing more (a spurious error for a blank line, or a
//! reply sent twice, fails). Every case runs for an inline tool, a pooled
//! tool, a legacy session's `initialize` and a malformed line. The rule
//! they check is `reader::SendFirst`'s: nothing the server decided waits
//! behind a blocking read (ARCHITECTURE.md, "Who sends, and when").
//!
//! Output: one line per check (`ok <name>` or `FAILED <name>: <reason>`),
//! then `N passed, M failed`; non-zero exit status if any failed.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};
use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde_json::{Value, json};

const SERVER_ENV: &str = "MCP_FRAMING_TEST_SERVER";
/// How long a reply may take before a case fails: seconds, never a timing.
const WAIT: Duration = Duration::from_secs(10);
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        serve();
    }
    std::process::exit(run_checks());
}

/// The server: `inline` (an inline tool) and `pooled` (a pooled one), both
/// echoing their text.
fn serve() -> ! {
    let tool = |name: &str| {
        Tool::new(name, "Returns its text.").input_schema(json!({
            "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"]
        }))
    };
    let text = |args: &Value| CallToolResult::text(args["text"].as_str().unwrap_or_default());
    let server = Server::builder("framing-test", "0.0.1")
        .inline_tool(tool("inline"), move |_ctx, args: Value| Ok(text(&args)))
        .tool(tool("pooled"), move |_ctx, args: Value| Ok(text(&args)))
        .build();
    match server.serve(Transport::stdio()) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("framing-test server: {e}");
            std::process::exit(1);
        }
    }
}

// ---------------------------------------------------------------------------
// What is sent, and what must come back
// ---------------------------------------------------------------------------

/// One kind of message: a line (with `ID` for its id) and how to tell the
/// reply it must get.
struct Kind {
    name: &'static str,
    /// A line to write first, answered before the case starts (the legacy
    /// session's `initialize`, for a call under it).
    setup: Option<fn() -> String>,
    line: fn(u64) -> String,
    expect: fn(u64, &Value) -> Result<(), String>,
}

fn modern_call(tool: &str, id: u64) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": tool, "arguments": { "text": format!("text {id}") },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": { "name": "framing", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string()
}

fn legacy_call(id: u64) -> String {
    let params = json!({ "name": "inline", "arguments": { "text": format!("text {id}") } });
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string()
}

fn initialize(id: u64) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": { "name": "framing", "version": "1" }
        }
    })
    .to_string()
}

/// The setup of a call in a legacy session: `initialize` (id 0), then
/// `notifications/initialized`.
fn legacy_session() -> String {
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    format!("{}\n{initialized}\n", initialize(0))
}

fn text_reply(id: u64, reply: &Value) -> Result<(), String> {
    let text = reply
        .pointer("/result/content/0/text")
        .and_then(Value::as_str);
    match (reply.get("id"), text) {
        (Some(got), Some(text)) if *got == json!(id) && text == format!("text {id}") => Ok(()),
        _ => Err(format!(
            "want the result `text {id}` of request {id}, got {reply}"
        )),
    }
}

fn initialize_reply(id: u64, reply: &Value) -> Result<(), String> {
    match reply
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
    {
        Some(LEGACY) if reply["id"] == json!(id) => Ok(()),
        _ => Err(format!("want initialize's result for id {id}, got {reply}")),
    }
}

fn parse_error(_: u64, reply: &Value) -> Result<(), String> {
    match reply.pointer("/error/code").and_then(Value::as_i64) {
        Some(-32700) if reply["id"].is_null() => Ok(()),
        _ => Err(format!(
            "want a -32700 parse error with a null id, got {reply}"
        )),
    }
}

const KINDS: &[Kind] = &[
    Kind {
        name: "inline tool",
        setup: None,
        line: |id| modern_call("inline", id),
        expect: text_reply,
    },
    Kind {
        name: "pooled tool",
        setup: None,
        line: |id| modern_call("pooled", id),
        expect: text_reply,
    },
    Kind {
        name: "legacy initialize",
        setup: None,
        line: initialize,
        expect: initialize_reply,
    },
    Kind {
        name: "legacy session's call",
        setup: Some(legacy_session),
        line: legacy_call,
        expect: text_reply,
    },
    Kind {
        name: "malformed line",
        setup: None,
        line: |_| r#"{"jsonrpc":"2.0","id":1,"method":"#.to_owned(),
        expect: parse_error,
    },
];

/// How a case writes: each item is one write (flushed), with a pause
/// between writes.
enum Step {
    Bytes(Vec<u8>),
    /// One write per byte.
    ByteByByte(Vec<u8>),
    /// Closes stdin.
    Close,
}

/// A framing case: the writes, given the kind's line for ids 1 and 2, and
/// the ids whose replies must come (in any order: two pooled calls may
/// finish either way round).
struct Case {
    name: &'static str,
    writes: fn(&str, &str) -> Vec<Step>,
    answered: &'static [u64],
    /// The writes end with the first [`PARTIAL`] bytes of line 2: once
    /// the replies came, the rest of it is written, and its reply must
    /// come too.
    partial: bool,
}

/// How much of line 2 the cases with a partial next line write.
const PARTIAL: usize = 10;

fn bytes(text: String) -> Step {
    Step::Bytes(text.into_bytes())
}

const CASES: &[Case] = &[
    Case {
        name: "a plain line",
        writes: |a, _| vec![bytes(format!("{a}\n"))],
        answered: &[1],
        partial: false,
    },
    Case {
        name: "a blank line after it",
        writes: |a, _| vec![bytes(format!("{a}\n\n"))],
        answered: &[1],
        partial: false,
    },
    Case {
        name: "a blank line before it",
        writes: |a, _| vec![bytes(format!("\n{a}\n"))],
        answered: &[1],
        partial: false,
    },
    Case {
        name: "CRLF",
        writes: |a, _| vec![bytes(format!("{a}\r\n"))],
        answered: &[1],
        partial: false,
    },
    Case {
        name: "CRLF, then a blank CRLF line",
        writes: |a, _| vec![bytes(format!("{a}\r\n\r\n"))],
        answered: &[1],
        partial: false,
    },
    Case {
        name: "a whitespace-only line after it",
        writes: |a, _| vec![bytes(format!("{a}\n \t \n"))],
        answered: &[1],
        partial: false,
    },
    Case {
        name: "the blank line in a write of its own",
        writes: |a, _| vec![bytes(format!("{a}\n")), bytes("\n".into())],
        answered: &[1],
        partial: false,
    },
    Case {
        name: "two lines, then a blank line",
        writes: |a, b| vec![bytes(format!("{a}\n{b}\n\n"))],
        answered: &[1, 2],
        partial: false,
    },
    Case {
        name: "split across two writes",
        writes: |a, _| {
            let (head, tail) = a.split_at(a.len() / 2);
            vec![bytes(head.into()), bytes(format!("{tail}\n"))]
        },
        answered: &[1],
        partial: false,
    },
    Case {
        name: "byte by byte",
        writes: |a, _| vec![Step::ByteByByte(format!("{a}\n").into_bytes())],
        answered: &[1],
        partial: false,
    },
    Case {
        name: "the start of the next line after it",
        writes: |a, b| vec![bytes(format!("{a}\n{}", &b[..PARTIAL]))],
        answered: &[1],
        partial: true,
    },
    Case {
        name: "a blank line, then the start of the next line",
        writes: |a, b| vec![bytes(format!("{a}\n\n{}", &b[..PARTIAL]))],
        answered: &[1],
        partial: true,
    },
    Case {
        name: "a last line without a newline at the end of input",
        writes: |a, _| vec![bytes(a.into()), Step::Close],
        answered: &[1],
        partial: false,
    },
];

// ---------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------

struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
}

impl Process {
    fn spawn() -> Result<Process, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .env(SERVER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawning the server failed: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("stdout is piped")?;
        let (tx, lines) = crossbeam_channel::unbounded();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value =
                    serde_json::from_str(&line).unwrap_or_else(|_| json!({ "not JSON": line }));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Ok(Process {
            child,
            stdin,
            lines,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("writing failed: {e}"))
    }

    fn reply(&self) -> Result<Value, String> {
        self.lines.recv_timeout(WAIT).map_err(|e| match e {
            RecvTimeoutError::Timeout => format!("no reply within {WAIT:?} while the client waits"),
            RecvTimeoutError::Disconnected => "the server closed its output".to_owned(),
        })
    }

    /// Nothing was written but the replies: a request sent now is answered
    /// by the very next line (unless stdin is closed already), and after
    /// it the output ends, once stdin is closed, with nothing more.
    fn nothing_more(&mut self) -> Result<(), String> {
        if self.stdin.is_some() {
            self.write(format!("{BARRIER}\n").as_bytes())?;
            let reply = self.reply()?;
            if reply["id"] != json!("barrier") {
                return Err(format!("want the barrier's reply next, got {reply}"));
            }
            self.stdin = None;
        }
        match self.lines.recv_timeout(WAIT) {
            Err(RecvTimeoutError::Disconnected) => Ok(()),
            Ok(line) => Err(format!("want nothing more, got {line}")),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "the output did not end within {WAIT:?} of the end of input"
            )),
        }
    }
}

/// A request every build answers (a legacy `ping`, or an error naming its
/// id): what the server writes next is its reply.
const BARRIER: &str = r#"{"jsonrpc":"2.0","id":"barrier","method":"ping"}"#;

impl Drop for Process {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `case` for `kind` on a server of its own; stdin stays open (but
/// where the case closes it) until every reply came.
fn run(kind: &Kind, case: &Case) -> Result<(), String> {
    let mut server = Process::spawn()?;
    if let Some(setup) = kind.setup {
        server.write(setup().as_bytes())?;
        initialize_reply(0, &server.reply()?).map_err(|e| format!("setup: {e}"))?;
    }
    let (a, b) = ((kind.line)(1), (kind.line)(2));
    for write in (case.writes)(&a, &b) {
        match write {
            Step::Bytes(bytes) => server.write(&bytes)?,
            Step::ByteByByte(bytes) => {
                for byte in bytes {
                    server.write(&[byte])?;
                }
            }
            Step::Close => server.stdin = None,
        }
        // Separate writes reach the server as separate reads.
        thread::sleep(Duration::from_millis(20));
    }
    expect_replies(kind, case.answered, &server)?;
    if case.partial {
        server.write(format!("{}\n", &b[PARTIAL..]).as_bytes())?;
        expect_replies(kind, &[2], &server)?;
    }
    server.nothing_more()
}

/// The replies to `ids`, each once, in any order.
fn expect_replies(kind: &Kind, ids: &[u64], server: &Process) -> Result<(), String> {
    let mut replies = Vec::new();
    for _ in ids {
        replies.push(server.reply()?);
    }
    for &id in ids {
        let Some(at) = replies.iter().position(|r| (kind.expect)(id, r).is_ok()) else {
            let first = replies.first().map_or(Ok(()), |r| (kind.expect)(id, r));
            return Err(first.err().unwrap_or_else(|| format!("no reply for {id}")));
        };
        replies.remove(at);
    }
    Ok(())
}

fn run_checks() -> i32 {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut runs = Vec::new();
    for kind in KINDS {
        if kind.name.starts_with("legacy") && !cfg!(feature = "legacy") {
            continue;
        }
        for case in CASES {
            let name = format!("{}: {}", kind.name, case.name);
            if filter.iter().all(|f| !name.contains(f.as_str())) && !filter.is_empty() {
                continue;
            }
            // Side by side: a hang costs one deadline, not one per case.
            runs.push((name, thread::spawn(move || run(kind, case))));
        }
    }
    let (mut passed, mut failed) = (0, 0);
    for (name, run) in runs {
        match run.join() {
            Ok(Ok(())) => {
                passed += 1;
                println!("ok {name}");
            }
            Ok(Err(reason)) => {
                failed += 1;
                println!("FAILED {name}: {reason}");
            }
            Err(_) => {
                failed += 1;
                println!("FAILED {name}: panicked");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    i32::from(failed > 0)
}
