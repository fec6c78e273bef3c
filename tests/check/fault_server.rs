//! The fault server: the everything example, its input read a line at a
//! time through the fault (`filter_in`: a line dropped, changed, or
//! answered before the server sees it) and its output through
//! `fault_output.rs`. `main` becomes this server when the fault is in its
//! environment.

use std::io::{BufReader, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stdio::Transport;
use serde_json::{Value, json};

use crate::everything;
use crate::fault_output::FaultOut;

/// What the input and output filters share.
pub struct Shared {
    pub fault: String,
    /// Output held back until the next line that is not blank.
    pub hold: bool,
    pub held: Vec<Vec<u8>>,
    out: std::io::Stdout,
}

impl Shared {
    pub fn write_now(&mut self, line: &[u8]) {
        let _ = self.out.write_all(line);
        let _ = self.out.write_all(b"\n");
        let _ = self.out.flush();
    }
}

pub fn serve_with_fault(fault: &str) -> ! {
    // `stderr-flood+FAULT`: FAULT, and stderr written without pause.
    let fault = match fault.strip_prefix("stderr-flood+") {
        Some(rest) => {
            std::thread::spawn(|| {
                for n in 0u64.. {
                    if writeln!(std::io::stderr(), "log {n}: busy").is_err() {
                        return;
                    }
                    if n % 100 == 0 {
                        // About 100,000 lines a second, no more.
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            });
            rest
        }
        None => fault,
    };
    let shared = Arc::new(Mutex::new(Shared {
        fault: fault.to_owned(),
        hold: false,
        held: Vec::new(),
        out: std::io::stdout(),
    }));
    if let Some(marker) = fault.strip_prefix("answers-once:") {
        // The first server answers; every one after it, nothing, ever.
        if std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(marker)
            .is_err()
        {
            loop {
                std::thread::park();
            }
        }
    }
    if fault == "slow-start" {
        // Three seconds before it reads or writes anything.
        std::thread::sleep(Duration::from_secs(3));
    }
    if fault == "flood" {
        // Long notifications, as fast as they can be written, and
        // nothing else.
        let line = json!({ "jsonrpc": "2.0", "method": "notifications/message",
            "params": { "level": "info", "data": "x".repeat(1 << 20) } })
        .to_string()
            + "\n";
        let mut out = std::io::stdout().lock();
        while out.write_all(line.as_bytes()).is_ok() {}
        std::process::exit(0);
    }
    if fault == "stdout-log" {
        shared
            .lock()
            .unwrap()
            .write_now(b"Server starting on stdio...");
    }
    // A first line, before anything is read: a log notification with
    // DATA in it, as the fault has it.
    let message = |data: &[u8]| {
        [
            &br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"#[..],
            data,
            b"}}",
        ]
        .concat()
    };
    let first: Option<Vec<u8>> = match fault {
        "number-past-a-double" => Some(message(b"1e400")),
        "bare-number-past-a-double" => Some(b"1e400".to_vec()),
        "array-past-a-double" => Some(b"[1e400]".to_vec()),
        "invalid-utf8-in-a-string" => Some(message(b"\"caf\xe9\"")),
        "lone-surrogate" => Some(message(br#""\ud800""#)),
        "nested-past-128" => Some(message(
            &["[".repeat(200), "]".repeat(200)].concat().into_bytes(),
        )),
        "trailing-garbage" => Some([message(b"1"), b" x".to_vec()].concat()),
        "two-messages-on-a-line" => Some([message(b"1"), message(b"2")].concat()),
        "number-then-log" => {
            Some([message(b"1e400"), b"\nServer starting on stdio...".to_vec()].concat())
        }
        _ => None,
    };
    if let Some(line) = first {
        shared.lock().unwrap().write_now(&line);
    }
    let input = FaultIn {
        shared: Arc::clone(&shared),
        lines: 0,
        partial: Vec::new(),
        ready: Vec::new(),
        at: 0,
    };
    let output = FaultOut {
        shared: Arc::clone(&shared),
        partial: Vec::new(),
    };
    let res = everything::build().serve(Transport::new(BufReader::new(input), output));
    if fault == "no-exit-on-eof" {
        // Served to the end, then lingers: the checker kills it.
        std::thread::sleep(Duration::from_secs(60));
    }
    std::process::exit(i32::from(res.is_err()));
}

/// The server's input: stdin, line by line, through the fault.
struct FaultIn {
    shared: Arc<Mutex<Shared>>,
    /// The lines read so far.
    lines: usize,
    partial: Vec<u8>,
    ready: Vec<u8>,
    at: usize,
}

impl Read for FaultIn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.ready.len() {
            if let Some(token) = self
                .shared
                .lock()
                .unwrap()
                .fault
                .strip_prefix("stops-reading:")
            {
                // Served its first lines; now reads nothing, ever (its
                // process is found by the token and must be gone).
                if self.lines >= 6 {
                    let _ = token;
                    loop {
                        std::thread::park();
                    }
                }
            }
            let mut chunk = [0u8; 65536];
            let n = std::io::stdin().read(&mut chunk)?;
            if n == 0 {
                if self.partial.is_empty() {
                    return Ok(0);
                }
                self.ready = std::mem::take(&mut self.partial);
                self.at = 0;
                break;
            }
            self.partial.extend_from_slice(&chunk[..n]);
            let mut lines = Vec::new();
            while let Some(at) = self.partial.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.partial.drain(..=at).collect();
                lines.push(line);
                self.lines += 1;
            }
            self.ready.clear();
            self.at = 0;
            let mut shared = self.shared.lock().unwrap();
            let last_blank = lines
                .last()
                .is_some_and(|l| l.iter().all(u8::is_ascii_whitespace));
            for line in lines {
                if let Some(line) = filter_in(&mut shared, line) {
                    self.ready.extend_from_slice(&line);
                }
            }
            if shared.fault == "blank-line-hold" && last_blank {
                shared.hold = true;
            }
        }
        let n = buf.len().min(self.ready.len() - self.at);
        buf[..n].copy_from_slice(&self.ready[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// One line of input through the fault: dropped, changed, or answered
/// before the server sees it.
fn filter_in(shared: &mut Shared, line: Vec<u8>) -> Option<Vec<u8>> {
    let blank = line.iter().all(u8::is_ascii_whitespace);
    if !blank && shared.hold {
        // A line that is not blank releases what was held, then goes on.
        shared.hold = false;
        for held in std::mem::take(&mut shared.held) {
            shared.write_now(&held);
        }
    }
    let parsed: Option<Value> = serde_json::from_slice(&line).ok();
    if let (Some(path), Some(v)) = (shared.fault.strip_prefix("count-calls:"), &parsed)
        && v["method"] == "tools/call"
    {
        // Every tool called, one a line, whichever server process it is.
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        let _ = writeln!(
            file,
            "{} {}",
            v["params"]["name"].as_str().unwrap_or("?"),
            v["params"]["arguments"]
        );
    }
    if let Some(v) = &parsed
        && shared.fault.contains("+modern-lists-nothing+")
        && v["method"] == "tools/list"
        && v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .is_some()
    {
        // A modern `tools/list`: no tools (the legacy era lists them).
        let empty = json!({ "jsonrpc": "2.0", "id": v["id"],
            "result": { "resultType": "complete", "tools": [] } });
        shared.write_now(empty.to_string().as_bytes());
        return None;
    }
    match (shared.fault.as_str(), &parsed) {
        ("no-parse-error", None) if !blank => None,
        ("reply-after-cancel", Some(v)) if v["method"] == "notifications/cancelled" => None,
        ("answers-notifications", Some(v))
            if v.get("method").is_some() && v.get("id").is_none() =>
        {
            shared.write_now(
                json!({ "jsonrpc": "2.0", "id": null, "result": {} })
                    .to_string()
                    .as_bytes(),
            );
            Some(line)
        }
        ("ack-after-event", Some(v)) if v["method"] == "subscriptions/listen" => {
            let event = json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": v["id"] } } });
            shared.write_now(event.to_string().as_bytes());
            Some(line)
        }
        ("mrtr-undeclared", Some(v)) if v["method"] == "tools/call" => {
            // Every capability, whatever the client declared.
            let mut v = v.clone();
            v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({ "elicitation": {}, "sampling": {}, "roots": {} });
            Some(format!("{v}\n").into_bytes())
        }
        ("task-get-undeclared", Some(v)) if v["method"] == "tasks/get" => {
            // The Tasks extension, whatever the client declared.
            let mut v = v.clone();
            v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
                json!({ "io.modelcontextprotocol/tasks": {} });
            Some(format!("{v}\n").into_bytes())
        }
        ("task-undeclared", Some(v)) if v["method"] == "tools/call" => {
            let mut v = v.clone();
            v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
                json!({ "io.modelcontextprotocol/tasks": {} });
            Some(format!("{v}\n").into_bytes())
        }
        ("no-listen", Some(v)) if v["method"] == "subscriptions/listen" => {
            // Not implemented: answered as any unknown method is.
            let mut v = v.clone();
            v["method"] = json!("mcp-stdio-check-fault/no-listen");
            Some(format!("{v}\n").into_bytes())
        }
        ("many-pages", Some(v)) if v["method"] == "tools/list" => {
            // 150 tools, one a page.
            let page = v
                .pointer("/params/cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.strip_prefix("page-"))
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or(0);
            let mut result = json!({ "resultType": "complete",
                "tools": [{ "name": format!("tool_{page}"), "inputSchema": { "type": "object" } }] });
            if page + 1 < 150 {
                result["nextCursor"] = json!(format!("page-{}", page + 1));
            }
            shared.write_now(
                json!({ "jsonrpc": "2.0", "id": v["id"], "result": result })
                    .to_string()
                    .as_bytes(),
            );
            None
        }
        ("endless-pages", Some(v)) if v["method"] == "tools/list" => {
            // Always a next page: one tool of 4 MiB each (written as it
            // is, not serialized each time: fast enough to show).
            static BIG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
            let big = BIG.get_or_init(|| "x".repeat(4 << 20));
            let page = v
                .pointer("/params/cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.strip_prefix("page-"))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","nextCursor":"page-{}","tools":[{{"name":"tool_{page}","description":"{big}","inputSchema":{{"type":"object"}}}}]}}}}"#,
                v["id"],
                page + 1
            );
            shared.write_now(answer.as_bytes());
            None
        }
        ("listen-flood", Some(v)) if v["method"] == "subscriptions/listen" => {
            // 300 notifications of 1 MiB on the subscription, then the
            // acknowledgment (the server's own).
            let event = json!({ "jsonrpc": "2.0", "method": "notifications/message",
                "params": { "level": "info", "data": "x".repeat(1 << 20),
                    "_meta": { "io.modelcontextprotocol/subscriptionId": v["id"] } } })
            .to_string();
            for _ in 0..300 {
                shared.write_now(event.as_bytes());
            }
            Some(line)
        }
        ("errors-not-results", Some(v))
            if matches!(
                v["method"].as_str(),
                Some("resources/read" | "prompts/get" | "completion/complete")
            ) =>
        {
            let error = if v["method"] == "completion/complete" {
                json!({ "code": -32602, "message": "Missing required arguments: complete the other argument first" })
            } else {
                json!({ "code": -32603, "message": "Internal error: the backing store is unavailable" })
            };
            shared.write_now(
                json!({ "jsonrpc": "2.0", "id": v["id"], "error": error })
                    .to_string()
                    .as_bytes(),
            );
            None
        }
        ("any-version", Some(v))
            if v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                == Some(&json!("1900-01-01")) =>
        {
            let mut v = v.clone();
            v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
            Some(format!("{v}\n").into_bytes())
        }
        _ => Some(line),
    }
}
