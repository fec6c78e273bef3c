//! The checker's memory and time stay bounded whatever the server sends:
//! an SSE event that never ends, pages that never end, messages before a
//! listen's acknowledgment, a tool schema that refers to itself.

use std::io::{BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Tests;
use crate::support::{BIN, FAULT_ENV, Run, check, outcome, this_exe};

pub const TESTS: Tests = named![
    review_an_sse_event_that_never_ends_costs_bounded_memory,
    review_a_list_whose_pages_never_end_costs_bounded_memory,
    review_messages_before_a_listens_acknowledgment_cost_bounded_memory,
    review_a_tool_schema_that_refers_to_itself_gets_a_verdict_in_time,
];

/// The peak resident memory of a running process, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Waits for `child`, killed after 60 s, looking at its peak resident
/// memory meanwhile: its exit code (`None` if killed) and that peak (KiB).
fn wait_watching_peak(child: &mut std::process::Child) -> (Option<i32>, u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut peak = 0;
    loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), peak);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (None, peak);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `mcp-stdio check ARGS` against this executable as the server
/// with `fault`, killed after 60 s: its status, its peak resident memory
/// (KiB) and its stdout.
fn check_peak(args: &[&str], fault: &str) -> (Option<i32>, u64, String) {
    let mut child = Command::new(BIN)
        .arg("check")
        .args(args)
        .args(["--", &this_exe()])
        .env(FAULT_ENV, fault)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp-stdio starts");
    let mut stdout = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let (status, peak) = wait_watching_peak(&mut child);
    (status, peak, out.join().unwrap())
}

/// review-check10: an HTTP server that answers a POST with an SSE stream
/// of `data:` lines and never the blank line that ends the event: the
/// checker's SSE reader (`http_link::sse`) bounds each line (4 MiB) but
/// keeps every line of the event, so its memory grows as fast as the
/// server writes (here 768 MiB in 1 MiB lines, then silence).
fn review_an_sse_event_that_never_ends_costs_bounded_memory() -> Result<(), String> {
    use std::io::BufRead;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = n.trim().parse().unwrap_or(0);
                    }
                    if line.trim().is_empty() {
                        break;
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let mut stream = stream;
                let _ =
                    stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
                let mut line = b"data: ".to_vec();
                line.extend(std::iter::repeat_n(b'x', 1 << 20));
                line.push(b'\n');
                for _ in 0..768 {
                    if stream.write_all(&line).is_err() {
                        return;
                    }
                }
                // Then nothing, until the checker lets go.
                let _ = stream.read(&mut [0; 1]);
            });
        }
    });
    let mut child = Command::new(BIN)
        .args(["check", "--era", "modern", "--wait", "5", "--url", &url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let (status, peak) = wait_watching_peak(&mut child);
    if peak > 256 << 10 || status != Some(2) {
        return Err(format!(
            "status {status:?}, peak resident memory {} MiB",
            peak >> 10
        ));
    }
    Ok(())
}

/// review-check-bounds10: a server whose `tools/list` always has a next
/// page (a new cursor each time), each page one tool of 4 MiB: `list_all`
/// keeps every item until the deadline (Facts::gather's, then the
/// check's), so the checker's memory grows as fast as the server writes
/// (gigabytes with the default 20 s deadline). Bounded, the list is cut at
/// the checker's limit, which is not the server's fault.
fn review_a_list_whose_pages_never_end_costs_bounded_memory() -> Result<(), String> {
    let (status, peak, stdout) = check_peak(
        &[
            "--format",
            "json",
            "--era",
            "modern",
            "--wait",
            "2",
            "--deadline",
            "6",
            "--only",
            "tools.list",
        ],
        "endless-pages",
    );
    let run = Run {
        status,
        stdout,
        stderr: String::new(),
    };
    let list = outcome(&run, "tools.list")?;
    if peak > 256 << 10 || list["status"] == "fail" {
        return Err(format!(
            "status {status:?}, peak resident memory {} MiB; tools.list: {} ({})",
            peak >> 10,
            list["status"],
            list["reason"]
        ));
    }
    Ok(())
}

/// review-check-bounds10: a server that answers `subscriptions/listen`
/// with 300 notifications of 1 MiB on the subscription, then the
/// acknowledgment: `subscriptions::open` keeps every message before the
/// acknowledgment (its text and its parsed value), 600 MiB, though the
/// check looks at the first one only.
fn review_messages_before_a_listens_acknowledgment_cost_bounded_memory() -> Result<(), String> {
    let (status, peak, stdout) = check_peak(
        &[
            "--format",
            "json",
            "--era",
            "modern",
            "--wait",
            "20",
            "--deadline",
            "40",
            "--only",
            "subscriptions.ack-first",
        ],
        "listen-flood",
    );
    let run = Run {
        status,
        stdout,
        stderr: String::new(),
    };
    let ack = outcome(&run, "subscriptions.ack-first")?;
    let reason = ack["reason"].as_str().unwrap_or_default();
    if peak > 256 << 10 || ack["status"] != "fail" || !reason.contains("before the acknowledgment")
    {
        return Err(format!(
            "status {status:?}, peak resident memory {} MiB; ack-first: {} ({reason})",
            peak >> 10,
            ack["status"]
        ));
    }
    Ok(())
}

/// review-check10: a tool whose input schema refers to itself in two
/// branches of a `oneOf` (`{"oneOf": [{"$ref": "#"}, {"$ref": "#"}]}`,
/// valid JSON Schema). The validator (`schema.rs`) bounds its depth (64)
/// but not its work: every `oneOf` probes both branches, 2^64 walks, so
/// `tools.wrong-arguments` never comes back; the runner then blames the
/// server ("the server stopped answering"), and the check's thread spins
/// on a CPU until the run ends. The deadline is three times the 10 s it
/// was: the capped walk takes about 5 s of a debug build's CPU, and 10.2 s
/// in one CI run whose two CPUs had other work (11th session).
fn review_a_tool_schema_that_refers_to_itself_gets_a_verdict_in_time() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--deadline",
            "30",
            "--only",
            "tools.wrong-arguments",
            "--",
            &this_exe(),
        ],
        Some("schema-bomb"),
    );
    let checked = outcome(&run, "tools.wrong-arguments")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    if reason.contains("no verdict within the check's deadline") {
        return Err(format!("{} ({reason})", checked["status"]));
    }
    Ok(())
}
