//! The stdio transport over real OS pipes: this test binary re-executes
//! itself as the server.
//!
//! With `MCP_STDIO_TEST_SERVER=1` in the environment, `main` builds a small
//! server and serves it over `Transport::stdio()`, exiting 0 when `serve`
//! returns `Ok`. With `MCP_STDIO_TEST_SERVER=everything` it serves the
//! crate's fixture server, the everything example (its modules are compiled
//! into this binary), exactly as `examples/everything/main.rs` does.
//! Without either, `main` runs the checks below, each of which spawns
//! `current_exe()` in one of the server modes with piped stdin, stdout and
//! stderr, so nothing but the server itself ever writes to the protocol
//! stream (`harness = false`: there is no libtest banner either).
//!
//! Output: one line per check (`ok <name>` or `FAILED <name>: <reason>`),
//! then `N passed, M failed`; the exit status is non-zero if any check
//! failed. Every wait is bounded: stdout is read on a thread into a
//! channel and read back with `recv_timeout`, exits are awaited with a
//! bounded `try_wait` loop.

// The everything example's fixture set, at the crate root because its
// modules refer to each other as `crate::fixtures` and `crate::conformance`.
#[path = "../examples/everything/conformance.rs"]
mod conformance;
#[path = "../examples/everything/server.rs"]
mod everything;
#[path = "../examples/everything/fixtures.rs"]
mod fixtures;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{ErrorObject, Server, Transport};
use serde::Deserialize;
use serde_json::{Value, json};

/// Set in the server process's environment: to [`EVERYTHING_MODE`] for the
/// everything server, to anything else for the small server.
const SERVER_ENV: &str = "MCP_STDIO_TEST_SERVER";
/// The value of [`SERVER_ENV`] that selects the everything server.
const EVERYTHING_MODE: &str = "everything";
/// The value of [`SERVER_ENV`] that selects the small server.
const SMALL_MODE: &str = "1";
/// The small server, serving while its main thread holds
/// `std::io::stderr().lock()`; its stderr is never read.
const STDERR_LOCKED_MODE: &str = "stderr-locked";
/// The small server, serving with its stderr a full pipe nobody reads.
const STDERR_FULL_MODE: &str = "stderr-full";
/// The everything server's name, as `examples/everything/server.rs` sets it.
const EVERYTHING_NAME: &str = "mcp-stdio-everything";
const SERVER_NAME: &str = "stdio-test";
const SERVER_VERSION: &str = "0.0.1";
/// The payload of the `panic` tool's panic.
const PANIC_PAYLOAD: &str = "deliberate panic from the panic tool";
/// How long any single wait for a message may take before a check fails.
const WAIT: Duration = Duration::from_secs(10);
/// The default grace period of `ServerBuilder::shutdown_grace`.
const GRACE: Duration = Duration::from_secs(2);
/// The small server's write timeout (`ServerBuilder::write_timeout`, 10 s
/// by default): a client that takes too little of its last output is
/// given up on that long after the grace period.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

fn main() {
    match std::env::var_os(SERVER_ENV) {
        Some(mode) if mode == EVERYTHING_MODE => run_everything_server(),
        Some(mode) if mode == STDERR_LOCKED_MODE => {
            let _held = std::io::stderr().lock();
            run_server()
        }
        Some(mode) if mode == STDERR_FULL_MODE => {
            fill_stderr();
            run_server()
        }
        Some(_) => run_server(),
        None => {}
    }
    std::process::exit(run_checks());
}

// ---------------------------------------------------------------------------
// Server mode
// ---------------------------------------------------------------------------

fn run_server() -> ! {
    #[derive(Deserialize)]
    #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
    struct EchoArgs {
        text: String,
    }
    #[derive(Deserialize)]
    #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
    struct SlowArgs {
        ms: u64,
        /// What to answer with (default `slept <ms> ms`), so concurrent
        /// slow calls can be told apart.
        #[serde(default)]
        text: Option<String>,
    }
    #[derive(Deserialize)]
    #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
    struct BigArgs {
        bytes: usize,
    }

    let object = |props: Value, required: &[&str]| json!({ "type": "object", "properties": props, "required": required });
    let server = Server::builder(SERVER_NAME, SERVER_VERSION)
        .write_timeout(WRITE_TIMEOUT)
        .inline_tool(
            Tool::new("echo", "Returns its text unchanged.")
                .input_schema(object(json!({ "text": { "type": "string" } }), &["text"])),
            |_ctx, args: EchoArgs| Ok(CallToolResult::text(args.text)),
        )
        .tool(
            Tool::new("slow", "Waits `ms` milliseconds (cancellable).").input_schema(object(
                json!({ "ms": { "type": "integer" }, "text": { "type": "string" } }),
                &["ms"],
            )),
            |ctx, args: SlowArgs| {
                if ctx.wait_cancelled(Duration::from_millis(args.ms)) {
                    return Ok(CallToolResult::error_text("cancelled"));
                }
                Ok(CallToolResult::text(
                    args.text.unwrap_or_else(|| format!("slept {} ms", args.ms)),
                ))
            },
        )
        .tool(
            Tool::new("big", "Returns `bytes` bytes of text.").input_schema(object(
                json!({ "bytes": { "type": "integer" } }),
                &["bytes"],
            )),
            |_ctx, args: BigArgs| Ok(CallToolResult::text(big_text(args.bytes))),
        )
        .tool(
            Tool::new("panic", "Panics."),
            |_ctx, _args: Value| -> Result<CallToolResult, ErrorObject> {
                panic!("{PANIC_PAYLOAD}")
            },
        )
        .build();
    if let Err(e) = mcp_stdio::signal::stop_on_signals(server.stop_handle()) {
        eprintln!("stdio-test server: {e}");
        std::process::exit(2);
    }
    match server.serve(Transport::stdio()) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("stdio-test server: serve failed: {e}");
            std::process::exit(1);
        }
    }
}

/// Fills stderr's pipe: a thread writes to it through a handle of its own
/// (so it holds no lock of `std::io::stderr()`) until the write blocks,
/// which it then does for good, since nobody reads the pipe.
fn fill_stderr() {
    use std::os::fd::AsFd;
    let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() else {
        std::process::exit(2);
    };
    let mut pipe = std::fs::File::from(fd);
    let (filling_tx, filling) = crossbeam_channel::bounded::<()>(0);
    thread::spawn(move || {
        let chunk = [b'x'; 4096];
        // The first chunk: the thread runs. The pipe holds at least 4 KiB.
        let _ = pipe.write_all(&chunk);
        drop(filling_tx);
        while pipe.write_all(&chunk).is_ok() {}
    });
    let _ = filling.recv();
    // The pipe is full once a write has been blocked for a while; there is
    // no event for that, so the test's checks give the filler a head
    // start by sending their junk after a first round trip.
}

/// The everything example's `main`: its fixture server over stdio, stopped
/// gracefully by SIGINT/SIGTERM.
fn run_everything_server() -> ! {
    let server = everything::build();
    if let Err(e) = mcp_stdio::signal::stop_on_signals(server.stop_handle()) {
        eprintln!("everything server: {e}");
        std::process::exit(2);
    }
    match server.serve(Transport::stdio()) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("everything server: serve failed: {e}");
            std::process::exit(1);
        }
    }
}

/// The `big` tool's text: a repeating, position-revealing pattern.
fn big_text(bytes: usize) -> String {
    const PATTERN: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    (0..bytes)
        .map(|i| PATTERN[i % PATTERN.len()] as char)
        .collect()
}

// ---------------------------------------------------------------------------
// Check runner
// ---------------------------------------------------------------------------

type Check = fn() -> Result<String, String>;

const CHECKS: &[(&str, Check)] = &[
    ("discover_over_pipes", discover_over_pipes),
    (
        "notes_never_stall_the_server_when_stderr_is_locked",
        notes_never_stall_the_server_when_stderr_is_locked,
    ),
    (
        "notes_never_stall_the_server_when_stderr_is_a_full_pipe",
        notes_never_stall_the_server_when_stderr_is_a_full_pipe,
    ),
    ("eof_idle_exits_zero", eof_idle_exits_zero),
    ("eof_with_slow_call_in_flight", eof_with_slow_call_in_flight),
    (
        "echo_64kib_round_trip_byte_exact",
        echo_64kib_round_trip_byte_exact,
    ),
    ("big_8mib_reply_is_one_line", big_8mib_reply_is_one_line),
    (
        "line_of_64mib_rejected_memory_bounded",
        line_of_64mib_rejected_memory_bounded,
    ),
    (
        "pipelined_200_concurrent_calls",
        pipelined_200_concurrent_calls,
    ),
    ("panic_recovery_over_pipes", panic_recovery_over_pipes),
    ("sigterm_idle_exits_zero", sigterm_idle_exits_zero),
    (
        "eof_while_stdout_is_never_read_exits_in_bounded_time",
        eof_while_stdout_is_never_read_exits_in_bounded_time,
    ),
    (
        "sigterm_with_slow_call_in_flight",
        sigterm_with_slow_call_in_flight,
    ),
    // The everything server (the example's fixture set) as a real process.
    (
        "everything_discover_capabilities",
        everything_discover_capabilities,
    ),
    (
        "everything_listen_conformance_probe",
        everything_listen_conformance_probe,
    ),
    (
        "everything_bump_updates_counter_subscription",
        everything_bump_updates_counter_subscription,
    ),
    (
        "everything_toggle_tool_announces_list_change",
        everything_toggle_tool_announces_list_change,
    ),
    (
        "everything_eof_ends_listens_gracefully",
        everything_eof_ends_listens_gracefully,
    ),
    (
        "everything_sigterm_ends_listens_gracefully",
        everything_sigterm_ends_listens_gracefully,
    ),
    (
        "everything_end_listen_ends_every_listen",
        everything_end_listen_ends_every_listen,
    ),
    (
        "everything_removed_methods_not_found",
        everything_removed_methods_not_found,
    ),
    ("everything_tasks_over_stdio", everything_tasks_over_stdio),
    // These two look at the traffic of every check above, so they run last.
    (
        "stdout_lines_are_single_line_json",
        stdout_lines_are_single_line_json,
    ),
    (
        "stdout_only_jsonrpc_stderr_never",
        stdout_only_jsonrpc_stderr_never,
    ),
];

#[path = "harness/selection.rs"]
mod selection;
use selection::Selection;

/// Runs the selected checks and returns the exit status.
fn run_checks() -> i32 {
    let selection = Selection::from_args(std::env::args().skip(1));
    let selected = CHECKS.iter().filter(|(name, _)| selection.includes(name));
    if selection.list {
        for (name, _) in selected {
            println!("{name}: test");
        }
        return 0;
    }
    let (mut passed, mut failed) = (0, 0);
    for (name, check) in selected {
        let outcome = match catch_unwind(AssertUnwindSafe(check)) {
            Ok(outcome) => outcome,
            Err(panic) => Err(format!(
                "panicked: {}",
                panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default()
            )),
        };
        match outcome {
            Ok(note) if note.is_empty() => {
                passed += 1;
                println!("ok {name}");
            }
            Ok(note) => {
                passed += 1;
                println!("ok {name} ({note})");
            }
            Err(reason) => {
                failed += 1;
                println!("FAILED {name}: {reason}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    i32::from(failed > 0)
}

/// Fails the enclosing check with a formatted reason.
macro_rules! ensure {
    ($cond:expr, $($reason:tt)+) => {
        if !$cond {
            return Err(format!($($reason)+));
        }
    };
}

// ---------------------------------------------------------------------------
// Traffic bookkeeping shared by all checks
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Traffic {
    stdout_lines: usize,
    stdout_bytes: usize,
    /// Lines that are not exactly one JSON value terminated by `\n`.
    not_single_line_json: Vec<String>,
    /// Lines that are JSON but not a JSON-RPC 2.0 message.
    not_jsonrpc: Vec<String>,
    stderr_bytes: usize,
    /// stderr lines that carry a JSON-RPC message.
    jsonrpc_on_stderr: Vec<String>,
    servers: usize,
}

static TRAFFIC: Mutex<Traffic> = Mutex::new(Traffic {
    stdout_lines: 0,
    stdout_bytes: 0,
    not_single_line_json: Vec::new(),
    not_jsonrpc: Vec::new(),
    stderr_bytes: 0,
    jsonrpc_on_stderr: Vec::new(),
    servers: 0,
});

fn traffic() -> std::sync::MutexGuard<'static, Traffic> {
    TRAFFIC.lock().unwrap_or_else(|e| e.into_inner())
}

/// The first 160 bytes of some bytes (lossy UTF-8), for failure messages.
fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(160)]);
    if bytes.len() > 160 {
        format!("{text}... ({} bytes)", bytes.len())
    } else {
        text.into_owned()
    }
}

/// Whether a JSON value is a JSON-RPC 2.0 message a server may send: a
/// response (an id, and exactly one of result and error) or a notification.
fn is_jsonrpc_message(value: &Value) -> bool {
    let Some(map) = value.as_object() else {
        return false;
    };
    if map.get("jsonrpc") != Some(&json!("2.0")) {
        return false;
    }
    let response = map.contains_key("id")
        && (map.contains_key("result") != map.contains_key("error"))
        && !map.contains_key("method");
    let notification = map.get("method").is_some_and(Value::is_string) && !map.contains_key("id");
    response || notification
}

/// Checks one raw stdout line (with its `\n`, if it had one) and records it.
fn record_stdout_line(raw: &[u8]) -> Option<Value> {
    let mut t = traffic();
    t.stdout_lines += 1;
    t.stdout_bytes += raw.len();
    let Some(body) = raw.strip_suffix(b"\n") else {
        t.not_single_line_json
            .push(format!("output ended inside a line: {}", snippet(raw)));
        return None;
    };
    // `from_slice` rejects trailing characters, so a line holding two
    // messages, or half of one, fails here.
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => {
            if !is_jsonrpc_message(&value) {
                t.not_jsonrpc.push(snippet(body));
            }
            Some(value)
        }
        Err(e) => {
            t.not_single_line_json
                .push(format!("not one JSON value ({e}): {}", snippet(body)));
            None
        }
    }
}

/// Checks a server's whole stderr and records it.
fn record_stderr(bytes: &[u8]) {
    let mut t = traffic();
    t.stderr_bytes += bytes.len();
    for line in bytes.split(|&b| b == b'\n') {
        let carries_message = serde_json::from_slice::<Value>(line)
            .map(|v| is_jsonrpc_message(&v))
            .unwrap_or(false)
            || line.windows(9).any(|w| w == b"\"jsonrpc\"");
        if carries_message {
            t.jsonrpc_on_stderr.push(snippet(line));
        }
    }
}

// ---------------------------------------------------------------------------
// A server process
// ---------------------------------------------------------------------------

/// How a server process ended.
struct Finished {
    status: ExitStatus,
    /// From closing stdin (or whatever the check started timing from) to
    /// the exit being observed.
    elapsed: Duration,
    /// Messages written after the last one the check received.
    rest: Vec<Value>,
    stderr: String,
}

struct ServerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    stdout_thread: Option<JoinHandle<()>>,
    stderr_thread: Option<JoinHandle<Vec<u8>>>,
    /// stderr, held open and never read (the stalled-stderr modes).
    _unread_stderr: Option<std::process::ChildStderr>,
}

impl ServerProcess {
    /// The small server of [`run_server`].
    fn spawn() -> Result<ServerProcess, String> {
        ServerProcess::spawn_mode(SMALL_MODE)
    }

    /// The everything server of [`run_everything_server`].
    fn spawn_everything() -> Result<ServerProcess, String> {
        ServerProcess::spawn_mode(EVERYTHING_MODE)
    }

    fn spawn_mode(mode: &str) -> Result<ServerProcess, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .env(SERVER_ENV, mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawning the server failed: {e}"))?;
        traffic().servers += 1;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let unread = mode.starts_with("stderr-");
        let (tx, lines) = crossbeam_channel::unbounded();
        let stdout_thread = thread::spawn(move || {
            let mut reader = BufReader::with_capacity(64 * 1024, stdout);
            let mut raw = Vec::new();
            loop {
                raw.clear();
                match reader.read_until(b'\n', &mut raw) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if let Some(value) = record_stdout_line(&raw) {
                            // The check may be done with this server already.
                            let _ = tx.send(value);
                        }
                    }
                }
            }
        });
        if unread {
            return Ok(ServerProcess {
                child,
                stdin,
                lines,
                stdout_thread: Some(stdout_thread),
                stderr_thread: None,
                _unread_stderr: Some(stderr),
            });
        }
        let stderr_thread = thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stderr.read_to_end(&mut bytes);
            record_stderr(&bytes);
            bytes
        });
        Ok(ServerProcess {
            child,
            stdin,
            lines,
            stdout_thread: Some(stdout_thread),
            stderr_thread: Some(stderr_thread),
            _unread_stderr: None,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send_raw(&mut self, bytes: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("writing to the server failed: {e}"))
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(message).expect("a Value always encodes");
        line.push(b'\n');
        self.send_raw(&line)
    }

    fn recv_within(&self, limit: Duration) -> Result<Value, String> {
        self.lines.recv_timeout(limit).map_err(|e| match e {
            RecvTimeoutError::Timeout => format!("no message from the server within {limit:?}"),
            RecvTimeoutError::Disconnected => "the server closed stdout".to_owned(),
        })
    }

    fn recv(&self) -> Result<Value, String> {
        self.recv_within(WAIT)
    }

    fn ask(&mut self, message: &Value) -> Result<Value, String> {
        self.send(message)?;
        self.recv()
    }

    /// Waits up to `limit` for the process to exit; returns its status and
    /// how long after `since` the exit was seen.
    fn wait_exit(
        &mut self,
        since: Instant,
        limit: Duration,
    ) -> Result<(ExitStatus, Duration), String> {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok((status, since.elapsed())),
                Ok(None) if since.elapsed() > limit => {
                    return Err(format!("the server did not exit within {limit:?}"));
                }
                // Polling interval of the bounded wait.
                Ok(None) => thread::sleep(Duration::from_millis(1)),
                Err(e) => return Err(format!("try_wait failed: {e}")),
            }
        }
    }

    /// Waits for the exit (timed from `since`), then collects what the
    /// server still wrote on stdout and all of its stderr.
    fn finish_from(mut self, since: Instant, limit: Duration) -> Result<Finished, String> {
        let (status, elapsed) = self.wait_exit(since, limit)?;
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(WAIT) {
                Ok(value) => rest.push(value),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    return Err("stdout stayed open after the server exited".into());
                }
            }
        }
        let stderr = self.join_threads();
        Ok(Finished {
            status,
            elapsed,
            rest,
            stderr,
        })
    }

    /// Closes stdin (end of file) and waits for the exit, timed from the
    /// close.
    fn close_and_finish(mut self, limit: Duration) -> Result<Finished, String> {
        let since = Instant::now();
        self.stdin = None;
        self.finish_from(since, limit)
    }

    fn join_threads(&mut self) -> String {
        if let Some(t) = self.stdout_thread.take() {
            let _ = t.join();
        }
        match self.stderr_thread.take().map(JoinHandle::join) {
            Some(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => String::new(),
        }
    }
}

impl Drop for ServerProcess {
    /// A check that failed half-way leaves no process behind; the pipes
    /// close with it, so the reader threads end and have recorded
    /// everything before the traffic checks run.
    fn drop(&mut self) {
        self.stdin = None;
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        self.join_threads();
    }
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut params = params;
    params.as_object_mut().expect("params is an object").insert(
        "_meta".into(),
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }),
    );
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

fn call(id: impl Into<Value>, tool: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
}

/// A complete result as the small server sends it.
fn result(id: impl Into<Value>, result: Value) -> Value {
    result_from(
        json!({ "name": SERVER_NAME, "version": SERVER_VERSION }),
        id,
        result,
    )
}

/// A complete result as a server with this `serverInfo` sends it.
fn result_from(server_info: Value, id: impl Into<Value>, mut result: Value) -> Value {
    let map = result.as_object_mut().expect("result is an object");
    map.insert("resultType".into(), json!("complete"));
    map.insert(
        "_meta".into(),
        json!({ "io.modelcontextprotocol/serverInfo": server_info }),
    );
    json!({ "jsonrpc": "2.0", "id": id.into(), "result": result })
}

/// A tool result holding one text block.
fn text_result(id: impl Into<Value>, text: &str) -> Value {
    result(id, json!({ "content": [{ "type": "text", "text": text }] }))
}

fn expect_eq(what: &str, got: &Value, want: &Value) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "{what}: got {}, want {}",
            snippet(got.to_string().as_bytes()),
            snippet(want.to_string().as_bytes())
        ))
    }
}

/// Checks an error response: its id, its code, no `data`, and that the
/// message mentions each of `mentions` (the wording is the crate's own).
fn expect_error(
    what: &str,
    reply: &Value,
    id: Value,
    code: i64,
    mentions: &[&str],
) -> Result<(), String> {
    let Some(message) = reply["error"]["message"].as_str() else {
        return Err(format!(
            "{what}: not an error response with a message: {reply}"
        ));
    };
    let want = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message }
    });
    expect_eq(what, reply, &want)?;
    for needle in mentions {
        ensure!(
            message.contains(needle),
            "{what}: the message {message:?} does not mention {needle:?}"
        );
    }
    Ok(())
}

fn expect_exit_zero(finished: &Finished) -> Result<(), String> {
    ensure!(
        finished.status.success(),
        "the server exited with {} (stderr: {})",
        finished.status,
        snippet(finished.stderr.as_bytes())
    );
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// A server whose stderr cannot take a line (`mode`) is sent input it
/// notes (responses that answer none of its requests, more than the note
/// limiter lets through); every request must still be answered.
fn notes_never_stall_the_server(mode: &str) -> Result<String, String> {
    let mut server = ServerProcess::spawn_mode(mode)?;
    let started = Instant::now();
    server.ask(&call(1, "echo", json!({ "text": "before" })))?;
    for n in 0..20 {
        server.send(&json!({ "jsonrpc": "2.0", "id": 1000 + n, "result": {} }))?;
    }
    for id in 2..5 {
        let text = format!("after {id}");
        let reply = server.ask(&call(id, "echo", json!({ "text": text })))?;
        expect_eq(
            "echo after the noted lines",
            &reply,
            &text_result(id, &text),
        )?;
    }
    Ok(format!("answered in {}", ms(started.elapsed())))
}

fn notes_never_stall_the_server_when_stderr_is_locked() -> Result<String, String> {
    notes_never_stall_the_server(STDERR_LOCKED_MODE)
}

fn notes_never_stall_the_server_when_stderr_is_a_full_pipe() -> Result<String, String> {
    notes_never_stall_the_server(STDERR_FULL_MODE)
}

fn discover_over_pipes() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    let reply = server.ask(&request(1, "server/discover", json!({})))?;
    let want = result(
        1,
        json!({
            "supportedVersions": ["2026-07-28"],
            // `subscriptions/listen` delivers tool-list changes, so a
            // server with tools advertises `listChanged`.
            "capabilities": { "tools": { "listChanged": true }, "logging": {} },
            "ttlMs": 0,
            "cacheScope": "private"
        }),
    );
    expect_eq("discover reply", &reply, &want)?;
    // A string id is echoed as a string.
    let reply = server.ask(&request("d-2", "server/discover", json!({})))?;
    let mut want = want;
    want["id"] = json!("d-2");
    expect_eq("discover reply with a string id", &reply, &want)?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    Ok(String::new())
}

fn eof_idle_exits_zero() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    // One round trip first, so the server is up and idle when stdin closes.
    let reply = server.ask(&call(1, "echo", json!({ "text": "up" })))?;
    expect_eq("echo reply", &reply, &text_result(1, "up"))?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    Ok(format!(
        "exited 0 {} after stdin closed",
        ms(finished.elapsed)
    ))
}

fn eof_with_slow_call_in_flight() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    server.send(&call(1, "slow", json!({ "ms": 300 })))?;
    let since = Instant::now();
    server.stdin = None;
    // The reply is written before the process exits, since stdout closes
    // only with the process.
    let reply = server.recv()?;
    expect_eq("slow reply", &reply, &text_result(1, "slept 300 ms"))?;
    let finished = server.finish_from(since, Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    Ok(format!(
        "reply, then exited 0 {} after stdin closed",
        ms(finished.elapsed)
    ))
}

/// Exactly 64 KiB of UTF-8 text with everything JSON must escape.
fn tricky_text(len: usize) -> String {
    let pattern = "plain ASCII, \"quotes\", back\\slash, new\nline, tab\t, \u{1} control, \
                   é ü ß, 日本語, emoji 😀, line separator \u{2028}, slash / ; ";
    let mut text = String::with_capacity(len);
    'fill: loop {
        for c in pattern.chars() {
            if text.len() + c.len_utf8() > len {
                break 'fill;
            }
            text.push(c);
        }
    }
    while text.len() < len {
        text.push('.');
    }
    text
}

fn echo_64kib_round_trip_byte_exact() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    let text = tricky_text(64 * 1024);
    ensure!(
        text.len() == 64 * 1024,
        "the test text is {} bytes",
        text.len()
    );
    let reply = server.ask(&call(1, "echo", json!({ "text": text })))?;
    let got = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    ensure!(
        got.as_bytes() == text.as_bytes(),
        "the echoed text differs: {} bytes back for {} sent",
        got.len(),
        text.len()
    );
    expect_eq("echo reply", &reply, &text_result(1, &text))?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    Ok(String::new())
}

fn big_8mib_reply_is_one_line() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    let bytes = 8 * 1024 * 1024;
    // Output lines have no limit: only input lines do.
    let reply = server.ask(&call(1, "big", json!({ "bytes": bytes })))?;
    expect_eq("big reply", &reply, &text_result(1, &big_text(bytes)))?;
    let reply = server.ask(&call(2, "echo", json!({ "text": "after" })))?;
    expect_eq("echo after big", &reply, &text_result(2, "after"))?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    Ok(String::new())
}

/// The peak resident set size of a process, in KiB, from /proc.
fn vm_hwm_kib(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("reading /proc/{pid}/status: {e}"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .ok_or("no VmHWM in /proc/<pid>/status")?;
    line.trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .map_err(|e| format!("bad VmHWM line {line:?}: {e}"))
}

fn line_of_64mib_rejected_memory_bounded() -> Result<String, String> {
    const MIB: usize = 1024 * 1024;
    let mut server = ServerProcess::spawn()?;
    let pid = server.pid();
    // A well-formed request whose text is 64 MiB, its id last (as the
    // TypeScript SDK orders members): the server must not hold the line,
    // yet the error carries the id, read as the line went by.
    let mut template = call(99, "echo", json!({ "text": "@SPLIT@" }));
    let id = template
        .as_object_mut()
        .and_then(|m| m.remove("id"))
        .ok_or("no id")?;
    let template = serde_json::to_string(&template).expect("encodes");
    let (head, tail) = template.split_once("@SPLIT@").ok_or("no marker")?;
    let tail = format!(
        "{},\"id\":{id}}}",
        tail.strip_suffix('}').ok_or("no brace")?
    );
    let head = head.to_owned();
    let chunk = vec![b'x'; MIB];
    let chunks = 64;
    let total = head.len() + chunks * MIB + tail.len();
    let mut stdin = server.stdin.take().ok_or("stdin is closed")?;
    let writer = thread::spawn(move || -> std::io::Result<ChildStdin> {
        stdin.write_all(head.as_bytes())?;
        for _ in 0..chunks {
            stdin.write_all(&chunk)?;
        }
        stdin.write_all(tail.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        Ok(stdin)
    });
    let started = Instant::now();
    let reply = server.recv_within(Duration::from_secs(120))?;
    let took = started.elapsed();
    let total_text = total.to_string();
    let limit_text = mcp_stdio::DEFAULT_MAX_LINE_BYTES.to_string();
    expect_error(
        "reply to the 64 MiB line",
        &reply,
        json!(99),
        -32600,
        &[&limit_text, &total_text],
    )?;
    let stdin = writer
        .join()
        .map_err(|_| "the writer thread panicked")?
        .map_err(|e| format!("writing the 64 MiB line failed: {e}"))?;
    server.stdin = Some(stdin);
    // The connection survives and serves the next request.
    let reply = server.ask(&call(100, "echo", json!({ "text": "still here" })))?;
    expect_eq(
        "echo after the 64 MiB line",
        &reply,
        &text_result(100, "still here"),
    )?;
    let hwm = vm_hwm_kib(pid)?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    let hwm_mib = hwm as f64 / 1024.0;
    // About the limit: the first 16 MiB are read into the buffer before
    // the line is known to be too long; nothing past them is kept.
    ensure!(
        hwm < 30 * 1024,
        "peak RSS (VmHWM) {hwm} kB = {hwm_mib:.1} MiB is not below 30 MiB (the 16 MiB limit and some slack): the line was buffered"
    );
    Ok(format!(
        "VmHWM {hwm} kB = {hwm_mib:.1} MiB after a {total}-byte line; rejected in {}",
        ms(took)
    ))
}

fn pipelined_200_concurrent_calls() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    // For each k an integer id k and a string id "k": different ids that
    // look alike, in flight together. One of each pair is slow.
    let mut batch = Vec::new();
    let mut want: HashMap<String, Value> = HashMap::new();
    for k in 0..100i64 {
        let int_text = format!("int-{k}");
        let str_text = format!("str-{k}");
        let str_id = k.to_string();
        let (int_call, str_call) = if k % 2 == 0 {
            (
                call(k, "echo", json!({ "text": int_text })),
                call(
                    str_id.clone(),
                    "slow",
                    json!({ "ms": 20, "text": str_text }),
                ),
            )
        } else {
            (
                call(k, "slow", json!({ "ms": 20, "text": int_text })),
                call(str_id.clone(), "echo", json!({ "text": str_text })),
            )
        };
        for message in [int_call, str_call] {
            serde_json::to_writer(&mut batch, &message).expect("encodes");
            batch.push(b'\n');
        }
        want.insert(json!(k).to_string(), text_result(k, &int_text));
        want.insert(
            json!(str_id).to_string(),
            text_result(str_id.as_str(), &str_text),
        );
    }
    // All 200 in one write: pipelined, none waits for an earlier reply.
    server.send_raw(&batch)?;
    let mut seen: HashMap<String, Value> = HashMap::new();
    let started = Instant::now();
    while seen.len() < 200 {
        let reply = server.recv()?;
        let id = reply["id"].to_string();
        let Some(expected) = want.get(&id) else {
            return Err(format!("reply to an unknown id {id}: {reply}"));
        };
        expect_eq(&format!("reply to id {id}"), &reply, expected)?;
        if seen.insert(id.clone(), reply).is_some() {
            return Err(format!("id {id} was answered twice"));
        }
    }
    let took = started.elapsed();
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "extra replies after all 200: {:?}",
        finished.rest
    );
    Ok(format!("200 replies in {}", ms(took)))
}

fn panic_recovery_over_pipes() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    let mut stdout_seen = Vec::new();
    for round in 0..2i64 {
        let id = 10 * round + 1;
        let reply = server.ask(&call(id, "panic", json!({})))?;
        expect_error(
            "reply to the panic call",
            &reply,
            json!(id),
            -32603,
            &["panicked", PANIC_PAYLOAD],
        )?;
        stdout_seen.push(reply);
        let reply = server.ask(&call(id + 1, "echo", json!({ "text": "after panic" })))?;
        expect_eq(
            "echo after a panic",
            &reply,
            &text_result(id + 1, "after panic"),
        )?;
        stdout_seen.push(reply);
        // A pooled call after the panic too: the worker pool survived.
        let reply = server.ask(&call(id + 2, "slow", json!({ "ms": 1 })))?;
        expect_eq(
            "slow after a panic",
            &reply,
            &text_result(id + 2, "slept 1 ms"),
        )?;
        stdout_seen.push(reply);
    }
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    // The panic hook's report goes to stderr...
    let reports = finished.stderr.matches(PANIC_PAYLOAD).count();
    ensure!(
        reports == 2 && finished.stderr.contains("panicked"),
        "stderr should report both panics, got: {}",
        snippet(finished.stderr.as_bytes())
    );
    // ...and never to stdout: what stdout carried is the JSON-RPC replies.
    for message in &stdout_seen {
        ensure!(
            !message.to_string().contains("panicked at"),
            "the panic report reached stdout: {message}"
        );
    }
    Ok(String::new())
}

fn send_sigterm(pid: u32) -> Result<(), String> {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .map_err(|e| format!("running kill failed: {e}"))?;
    ensure!(status.success(), "kill -TERM {pid} failed: {status}");
    Ok(())
}

/// Claim (review-44sd): a client that ends the server's stdin while it
/// never reads the server's stdout (an 8 MiB reply stuck in a full pipe)
/// does not keep the process alive: `serve` gives up on it within the
/// grace period and the write timeout (2 s each) and the process exits 1,
/// saying why on stderr. It never exited before the bounded shutdown.
fn eof_while_stdout_is_never_read_exits_in_bounded_time() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut child = Command::new(exe)
        .env(SERVER_ENV, SMALL_MODE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawning the server failed: {e}"))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let stderr_thread = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut line = serde_json::to_vec(&call(1, "big", json!({ "bytes": 8 << 20 }))).unwrap();
    line.push(b'\n');
    stdin
        .write_all(&line)
        .map_err(|e| format!("writing the call: {e}"))?;
    // The reply's write began; nothing more of it is read.
    let mut first = [0u8; 1];
    stdout
        .read_exact(&mut first)
        .map_err(|e| format!("the start of the reply: {e}"))?;
    let since = Instant::now();
    drop(stdin);
    let limit = Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("try_wait: {e}"))? {
            break Some(status);
        }
        if since.elapsed() > limit {
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let took = since.elapsed();
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    drop(stdout);
    let said = stderr_thread.join().unwrap_or_default();
    let status = status.ok_or_else(|| format!("still running {} after stdin closed", ms(took)))?;
    ensure!(status.code() == Some(1), "exited {status}; stderr: {said}");
    ensure!(said.contains("took less than 16 KiB"), "stderr: {said}");
    ensure!(
        took < GRACE + WRITE_TIMEOUT + Duration::from_secs(3),
        "exited after {}",
        ms(took)
    );
    Ok(format!("exited 1 {} after stdin closed", ms(took)))
}

fn sigterm_idle_exits_zero() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    // The signal handler is installed before `serve` starts, so once a
    // request is answered the handler is in place.
    let reply = server.ask(&call(1, "echo", json!({ "text": "up" })))?;
    expect_eq("echo reply", &reply, &text_result(1, "up"))?;
    let since = Instant::now();
    send_sigterm(server.pid())?;
    // stdin stays open: only the signal can stop the server.
    let finished = server.finish_from(since, Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    Ok(format!("exited 0 {} after SIGTERM", ms(finished.elapsed)))
}

fn sigterm_with_slow_call_in_flight() -> Result<String, String> {
    let mut server = ServerProcess::spawn()?;
    server.send(&call(1, "slow", json!({ "ms": 10_000 })))?;
    // Requests are handled in order: once the echo is answered, the slow
    // call has started and is in flight.
    let reply = server.ask(&call(2, "echo", json!({ "text": "ping" })))?;
    expect_eq("echo reply", &reply, &text_result(2, "ping"))?;
    let since = Instant::now();
    send_sigterm(server.pid())?;
    let reply = server.recv_within(Duration::from_secs(6))?;
    let answered = since.elapsed();
    expect_error(
        "reply to the slow call after SIGTERM",
        &reply,
        json!(1),
        -32603,
        &["shut down"],
    )?;
    let finished = server.finish_from(since, Duration::from_secs(6))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    // The grace period was given (a lower bound only ever gets safer on a
    // slow machine).
    ensure!(
        answered >= GRACE - Duration::from_millis(100),
        "the slow call was cut off after {} instead of the {GRACE:?} grace period",
        ms(answered)
    );
    Ok(format!(
        "-32603 after {}, exited 0 {} after SIGTERM",
        ms(answered),
        ms(finished.elapsed)
    ))
}

fn stdout_lines_are_single_line_json() -> Result<String, String> {
    let t = traffic();
    ensure!(t.stdout_lines > 0, "no stdout traffic was recorded");
    ensure!(
        t.not_single_line_json.is_empty(),
        "{} of {} stdout lines are not exactly one JSON value per line, first: {}",
        t.not_single_line_json.len(),
        t.stdout_lines,
        t.not_single_line_json[0]
    );
    Ok(format!(
        "{} lines, {} bytes from {} servers",
        t.stdout_lines, t.stdout_bytes, t.servers
    ))
}

fn stdout_only_jsonrpc_stderr_never() -> Result<String, String> {
    let t = traffic();
    ensure!(t.stdout_lines > 0, "no stdout traffic was recorded");
    ensure!(
        t.not_jsonrpc.is_empty(),
        "{} stdout lines are not JSON-RPC messages, first: {}",
        t.not_jsonrpc.len(),
        t.not_jsonrpc[0]
    );
    ensure!(
        t.jsonrpc_on_stderr.is_empty(),
        "{} stderr lines carry JSON-RPC, first: {}",
        t.jsonrpc_on_stderr.len(),
        t.jsonrpc_on_stderr[0]
    );
    Ok(format!("{} bytes of stderr checked", t.stderr_bytes))
}

// ---------------------------------------------------------------------------
// The everything server: subscriptions/listen over real pipes
// ---------------------------------------------------------------------------

/// The everything server's `serverInfo`.
fn everything_info() -> Value {
    json!({ "name": EVERYTHING_NAME, "version": env!("CARGO_PKG_VERSION") })
}

/// A complete result as the everything server sends it.
fn ev_result(id: impl Into<Value>, body: Value) -> Value {
    result_from(everything_info(), id, body)
}

/// A tool result of the everything server holding one text block.
fn ev_text_result(id: impl Into<Value>, text: &str) -> Value {
    ev_result(id, json!({ "content": [{ "type": "text", "text": text }] }))
}

/// A `subscriptions/listen` request with this filter.
fn listen(id: impl Into<Value>, filter: Value) -> Value {
    request(
        id,
        "subscriptions/listen",
        json!({ "notifications": filter }),
    )
}

/// `notifications/subscriptions/acknowledged` for subscription `id`.
fn ack(id: impl Into<Value>, accepted: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "_meta": { "io.modelcontextprotocol/subscriptionId": id.into() },
            "notifications": accepted
        }
    })
}

/// A notification delivered on subscription `id`, with `fields` beside
/// `_meta` in its params.
fn delivery(id: impl Into<Value>, method: &str, fields: Value) -> Value {
    let mut params = fields;
    params.as_object_mut().expect("fields is an object").insert(
        "_meta".into(),
        json!({ "io.modelcontextprotocol/subscriptionId": id.into() }),
    );
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

fn tools_changed(id: impl Into<Value>) -> Value {
    delivery(id, "notifications/tools/list_changed", json!({}))
}

fn prompts_changed(id: impl Into<Value>) -> Value {
    delivery(id, "notifications/prompts/list_changed", json!({}))
}

fn resource_updated(id: impl Into<Value>, uri: &str) -> Value {
    delivery(id, "notifications/resources/updated", json!({ "uri": uri }))
}

/// The final result that ends subscription `id` gracefully.
fn final_result(id: impl Into<Value>) -> Value {
    let id = id.into();
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "resultType": "complete",
            "_meta": {
                "io.modelcontextprotocol/subscriptionId": id,
                "io.modelcontextprotocol/serverInfo": everything_info()
            }
        }
    })
}

/// The client's cancellation of request `id` (over stdio, how a client
/// closes a listen stream).
fn cancelled(id: impl Into<Value>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": id.into(), "reason": "the client is done listening" }
    })
}

/// `resources/read` of `mem://counter` showing `value`.
fn counter_read(id: impl Into<Value>, value: &str) -> Value {
    ev_result(
        id,
        json!({
            "contents": [{ "uri": "mem://counter", "mimeType": "text/plain", "text": value }],
            "ttlMs": 0,
            "cacheScope": "private"
        }),
    )
}

/// The tool `toggle_tool` adds, as `tools/list` shows it.
fn ephemeral_tool() -> Value {
    json!({
        "name": "ephemeral",
        "description": "Exists between two calls of toggle_tool.",
        "inputSchema": { "type": "object", "properties": {} }
    })
}

/// A millisecond timestamp, as the conformance suite uses for listen ids.
fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// Whether a message is the response to request `id`.
fn is_response_to(message: &Value, id: &Value) -> bool {
    message.get("method").is_none() && message.get("id") == Some(id)
}

/// Checks a successful tool result whose content is the fixture's own
/// business: `resultType: complete`, the server's info, not `isError`.
fn expect_tool_success(what: &str, reply: &Value, id: &Value) -> Result<(), String> {
    let mut stripped = reply.clone();
    let content = stripped
        .get_mut("result")
        .and_then(Value::as_object_mut)
        .and_then(|result| result.remove("content"));
    ensure!(
        content.as_ref().is_some_and(Value::is_array),
        "{what}: not a tool result with content: {reply}"
    );
    expect_eq(what, &stripped, &ev_result(id.clone(), json!({})))
}

/// Hands out barrier ids, distinct from every id a check uses.
static NEXT_BARRIER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl ServerProcess {
    /// Sends a listen and checks that the next message (nothing else is
    /// outstanding) is its acknowledgment with the `accepted` filter.
    fn open_listen(&mut self, id: Value, filter: Value, accepted: Value) -> Result<(), String> {
        let reply = self.ask(&listen(id.clone(), filter))?;
        expect_eq(
            &format!("the first message of listen {id}"),
            &reply,
            &ack(id, accepted),
        )
    }

    /// Receives until the response to `id`; returns it and the messages
    /// that came before it.
    fn until_reply(&self, id: &Value) -> Result<(Value, Vec<Value>), String> {
        let mut before = Vec::new();
        loop {
            let message = self.recv().map_err(|e| {
                format!("waiting for the reply to {id}: {e} (got {})", json!(before))
            })?;
            if is_response_to(&message, id) {
                return Ok((message, before));
            }
            before.push(message);
        }
    }

    /// A round trip through the server's inbox: an `echo` sent now is
    /// handled after every event that was already queued, so whatever the
    /// server had to write for earlier requests is written before its
    /// reply. Returns the messages that came before the reply.
    fn settle(&mut self) -> Result<Vec<Value>, String> {
        let n = NEXT_BARRIER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = json!(format!("barrier-{n}"));
        let text = format!("barrier {n}");
        self.send(&call(id.clone(), "echo", json!({ "text": text })))?;
        let (reply, before) = self.until_reply(&id)?;
        expect_eq("the barrier's echo", &reply, &ev_text_result(id, &text))?;
        Ok(before)
    }

    /// Calls a tool, then waits out a barrier; returns the reply and every
    /// other message the call caused, in order. A handler publishes before
    /// it returns, so its events are queued before the barrier's request
    /// is even sent.
    fn call_and_settle(
        &mut self,
        id: impl Into<Value>,
        tool: &str,
    ) -> Result<(Value, Vec<Value>), String> {
        let id = id.into();
        self.send(&call(id.clone(), tool, json!({})))?;
        let (reply, mut caused) = self.until_reply(&id)?;
        caused.extend(self.settle()?);
        Ok((reply, caused))
    }
}

fn everything_discover_capabilities() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    let reply = server.ask(&request(1, "server/discover", json!({})))?;
    // FIXTURES.md part A: `tools.listChanged`, `prompts.listChanged`,
    // `resources.subscribe` and `resources.listChanged`, `completions`;
    // part C: the Tasks extension.
    let want = ev_result(
        1,
        json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {
                "tools": { "listChanged": true },
                "prompts": { "listChanged": true },
                "resources": { "subscribe": true, "listChanged": true },
                "completions": {},
                "logging": {},
                "extensions": { "io.modelcontextprotocol/tasks": {} }
            },
            "instructions": "Fixture server of mcp-stdio: every tool, resource and prompt is a test fixture.",
            "ttlMs": 0,
            "cacheScope": "private"
        }),
    );
    expect_eq("discover reply", &reply, &want)?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    Ok(String::new())
}

/// FIXTURES.md section 7, as the conformance suite's `server-stateless`
/// scenario probes it, over stdio.
fn everything_listen_conformance_probe() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    // 1. A tools stream, id a millisecond timestamp: the ack comes first.
    let tools_id = now_ms();
    server.open_listen(
        json!(tools_id),
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    )?;
    let (reply, caused) = server.call_and_settle(1, "test_trigger_tool_change")?;
    expect_tool_success("test_trigger_tool_change reply", &reply, &json!(1))?;
    expect_eq(
        "what test_trigger_tool_change sent",
        &json!(caused),
        &json!([tools_changed(tools_id)]),
    )?;
    // 2. A prompts stream does not get the tool change...
    let prompts_id = now_ms().max(tools_id + 1);
    server.open_listen(
        json!(prompts_id),
        json!({ "promptsListChanged": true }),
        json!({ "promptsListChanged": true }),
    )?;
    let (reply, caused) = server.call_and_settle(2, "test_trigger_tool_change")?;
    expect_tool_success("test_trigger_tool_change reply", &reply, &json!(2))?;
    expect_eq(
        "what test_trigger_tool_change sent with a prompts stream open",
        &json!(caused),
        &json!([tools_changed(tools_id)]),
    )?;
    // 3. ...but does get the prompt change, which the tools stream does not.
    let (reply, caused) = server.call_and_settle(3, "test_trigger_prompt_change")?;
    expect_tool_success("test_trigger_prompt_change reply", &reply, &json!(3))?;
    expect_eq(
        "what test_trigger_prompt_change sent",
        &json!(caused),
        &json!([prompts_changed(prompts_id)]),
    )?;
    // 4. The suite closes its streams: over stdio, notifications/cancelled.
    // From then on nothing carries either id.
    server.send(&cancelled(tools_id))?;
    server.send(&cancelled(prompts_id))?;
    for (id, tool) in [
        (4, "test_trigger_tool_change"),
        (5, "test_trigger_prompt_change"),
    ] {
        server.send(&call(id, tool, json!({})))?;
        // Barrier: the trigger's own reply is the next line...
        let reply = server.recv()?;
        expect_tool_success(
            &format!("the next line after {tool} on cancelled streams"),
            &reply,
            &json!(id),
        )?;
        // ...and nothing follows it before a later request's reply.
        let caused = server.settle()?;
        ensure!(
            caused.is_empty(),
            "{tool} after both listens were cancelled sent {}",
            json!(caused)
        );
    }
    // A cancelled listen has ended: no final result for it either.
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "output after stdin closed with only cancelled listens: {:?}",
        finished.rest
    );
    Ok(format!("listen ids {tools_id} and {prompts_id}"))
}

fn everything_bump_updates_counter_subscription() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    server.open_listen(
        json!("counter-watch"),
        json!({ "resourceSubscriptions": ["mem://counter"] }),
        json!({ "resourceSubscriptions": ["mem://counter"] }),
    )?;
    // A stream for something else, which must not get the update.
    server.open_listen(
        json!(9),
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    )?;
    let read = |id: i64| request(id, "resources/read", json!({ "uri": "mem://counter" }));
    let reply = server.ask(&read(1))?;
    expect_eq("mem://counter before bump", &reply, &counter_read(1, "0"))?;
    let (reply, caused) = server.call_and_settle(2, "bump")?;
    expect_eq("bump reply", &reply, &ev_text_result(2, "1"))?;
    expect_eq(
        "what bump sent",
        &json!(caused),
        &json!([resource_updated("counter-watch", "mem://counter")]),
    )?;
    let reply = server.ask(&read(3))?;
    expect_eq("mem://counter after bump", &reply, &counter_read(3, "1"))?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    expect_eq(
        "output after stdin closed",
        &json!(finished.rest),
        &json!([final_result("counter-watch"), final_result(9)]),
    )?;
    Ok(String::new())
}

fn everything_toggle_tool_announces_list_change() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    server.open_listen(
        json!(7),
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    )?;
    server.open_listen(
        json!("prompts"),
        json!({ "promptsListChanged": true }),
        json!({ "promptsListChanged": true }),
    )?;
    let listed = |server: &mut ServerProcess, id: i64| -> Result<Vec<Value>, String> {
        let reply = server.ask(&request(id, "tools/list", json!({})))?;
        let tools = reply["result"]["tools"]
            .as_array()
            .ok_or_else(|| format!("not a tools/list result: {reply}"))?;
        Ok(tools
            .iter()
            .filter(|t| t["name"] == "ephemeral")
            .cloned()
            .collect())
    };
    let found = listed(&mut server, 1)?;
    ensure!(found.is_empty(), "ephemeral is listed before toggle_tool");
    let (reply, caused) = server.call_and_settle(2, "toggle_tool")?;
    expect_eq(
        "toggle_tool reply",
        &reply,
        &ev_text_result(2, "added ephemeral"),
    )?;
    expect_eq(
        "what toggle_tool sent",
        &json!(caused),
        &json!([tools_changed(7)]),
    )?;
    let found = listed(&mut server, 3)?;
    expect_eq(
        "ephemeral in tools/list",
        &json!(found),
        &json!([ephemeral_tool()]),
    )?;
    let reply = server.ask(&call(4, "ephemeral", json!({})))?;
    expect_eq("ephemeral reply", &reply, &ev_text_result(4, "ephemeral"))?;
    // And back: the removal is announced too.
    let (reply, caused) = server.call_and_settle(5, "toggle_tool")?;
    expect_eq(
        "second toggle_tool reply",
        &reply,
        &ev_text_result(5, "removed ephemeral"),
    )?;
    expect_eq(
        "what the second toggle_tool sent",
        &json!(caused),
        &json!([tools_changed(7)]),
    )?;
    let found = listed(&mut server, 6)?;
    ensure!(
        found.is_empty(),
        "ephemeral is still listed after the second toggle_tool"
    );
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    expect_eq(
        "output after stdin closed",
        &json!(finished.rest),
        &json!([final_result(7), final_result("prompts")]),
    )?;
    Ok(String::new())
}

/// Opens two listens whose ids differ only in type (string "7", then
/// integer 7), as two subscriptions of their own.
fn open_two_listens(server: &mut ServerProcess) -> Result<(), String> {
    server.open_listen(
        json!("7"),
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    )?;
    server.open_listen(
        json!(7),
        json!({ "promptsListChanged": true, "resourceSubscriptions": ["mem://counter"] }),
        json!({ "promptsListChanged": true, "resourceSubscriptions": ["mem://counter"] }),
    )
}

fn everything_eof_ends_listens_gracefully() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    open_two_listens(&mut server)?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    // Exactly the two final results, oldest first, and never a
    // notifications/cancelled from the server.
    expect_eq(
        "output after stdin closed",
        &json!(finished.rest),
        &json!([final_result("7"), final_result(7)]),
    )?;
    expect_exit_zero(&finished)?;
    Ok(format!(
        "2 final results, exited 0 {} after stdin closed",
        ms(finished.elapsed)
    ))
}

fn everything_sigterm_ends_listens_gracefully() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    // The handler is installed before `serve` starts: an ack means it is.
    open_two_listens(&mut server)?;
    let since = Instant::now();
    send_sigterm(server.pid())?;
    // stdin stays open: only the signal can stop the server.
    let finished = server.finish_from(since, Duration::from_secs(5))?;
    expect_eq(
        "output after SIGTERM",
        &json!(finished.rest),
        &json!([final_result("7"), final_result(7)]),
    )?;
    expect_exit_zero(&finished)?;
    Ok(format!(
        "2 final results, exited 0 {} after SIGTERM",
        ms(finished.elapsed)
    ))
}

fn everything_end_listen_ends_every_listen() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    server.open_listen(
        json!("end-a"),
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    )?;
    server.open_listen(
        json!(2),
        json!({ "resourceSubscriptions": ["mem://counter"], "promptsListChanged": true }),
        json!({ "promptsListChanged": true, "resourceSubscriptions": ["mem://counter"] }),
    )?;
    let (reply, caused) = server.call_and_settle(3, "end_listen")?;
    expect_eq(
        "end_listen reply",
        &reply,
        &ev_text_result(3, "closing every subscription"),
    )?;
    expect_eq(
        "what end_listen sent",
        &json!(caused),
        &json!([final_result("end-a"), final_result(2)]),
    )?;
    // The ended streams get nothing more.
    let (reply, caused) = server.call_and_settle(4, "toggle_tool")?;
    expect_eq(
        "toggle_tool reply",
        &reply,
        &ev_text_result(4, "added ephemeral"),
    )?;
    ensure!(
        caused.is_empty(),
        "toggle_tool after end_listen sent {}",
        json!(caused)
    );
    let (reply, caused) = server.call_and_settle(5, "bump")?;
    expect_eq("bump reply", &reply, &ev_text_result(5, "1"))?;
    ensure!(
        caused.is_empty(),
        "bump after end_listen sent {}",
        json!(caused)
    );
    // An ended listen's id is free again, and a new stream works.
    server.open_listen(
        json!("end-a"),
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    )?;
    let (reply, caused) = server.call_and_settle(6, "toggle_tool")?;
    expect_eq(
        "toggle_tool reply",
        &reply,
        &ev_text_result(6, "removed ephemeral"),
    )?;
    expect_eq(
        "what toggle_tool sent to the new stream",
        &json!(caused),
        &json!([tools_changed("end-a")]),
    )?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    expect_eq(
        "output after stdin closed",
        &json!(finished.rest),
        &json!([final_result("end-a")]),
    )?;
    Ok(String::new())
}

/// A request declaring the Tasks extension (FIXTURES.md part C).
fn task_request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut req = request(id, method, params);
    req["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({
        "elicitation": {},
        "extensions": { "io.modelcontextprotocol/tasks": {} }
    });
    req
}

/// Polls `tasks/get` until the task's status is one of `until`.
fn poll_task(server: &mut ServerProcess, task_id: &Value, until: &[&str]) -> Result<Value, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    for n in 0.. {
        let id = format!("poll {n}");
        let reply = server.ask(&task_request(id, "tasks/get", json!({ "taskId": task_id })))?;
        let status = reply["result"]["status"].as_str().unwrap_or_default();
        if until.contains(&status) {
            return Ok(reply["result"].clone());
        }
        ensure!(Instant::now() < deadline, "task still {status}: {reply}");
        std::thread::sleep(Duration::from_millis(50));
    }
    unreachable!()
}

/// Part C over a real process: a 60-second task cancelled, a task that
/// asks for input, one whose handler panics (its backtrace goes to
/// stderr); stdout carries whole JSON-RPC lines throughout (checked on
/// all traffic by the last two checks), and the server exits cleanly at
/// EOF with a task still running.
fn everything_tasks_over_stdio() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    let start = |server: &mut ServerProcess, id: &str, tool: &str, args: Value| {
        let reply = server.ask(&task_request(
            id,
            "tools/call",
            json!({ "name": tool, "arguments": args }),
        ))?;
        ensure!(reply["result"]["resultType"] == "task", "no task: {reply}");
        Ok::<Value, String>(reply["result"]["taskId"].clone())
    };
    let long = start(
        &mut server,
        "long",
        "slow_compute",
        json!({ "seconds": 60 }),
    )?;
    let ask = start(
        &mut server,
        "ask",
        "confirm_delete",
        json!({ "filename": "f" }),
    )?;
    let panics = start(&mut server, "panics", "protocol_error_job", json!({}))?;
    let _left_running = start(
        &mut server,
        "left",
        "slow_compute",
        json!({ "seconds": 60 }),
    )?;
    poll_task(&mut server, &ask, &["input_required"])?;
    let answer = json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
    let ack = server.ask(&task_request(
        "update",
        "tasks/update",
        json!({ "taskId": ask, "inputResponses": answer }),
    ))?;
    ensure!(ack["result"]["resultType"] == "complete", "{ack}");
    let done = poll_task(&mut server, &ask, &["completed"])?;
    ensure!(
        done["result"]["content"][0]["text"] == "Deleted f",
        "{done}"
    );
    let failed = poll_task(&mut server, &panics, &["failed"])?;
    ensure!(failed["error"]["code"] == -32603, "{failed}");
    let ack = server.ask(&task_request(
        "cancel",
        "tasks/cancel",
        json!({ "taskId": long }),
    ))?;
    ensure!(ack["result"]["resultType"] == "complete", "{ack}");
    poll_task(&mut server, &long, &["cancelled"])?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    Ok(String::new())
}
fn everything_removed_methods_not_found() -> Result<String, String> {
    let mut server = ServerProcess::spawn_everything()?;
    // Removed at 2026-07-28 in favour of subscriptions/listen.
    for (n, method) in [(1, "resources/subscribe"), (2, "resources/unsubscribe")] {
        for id in [json!(n), json!(format!("{method} {n}"))] {
            let reply = server.ask(&request(
                id.clone(),
                method,
                json!({ "uri": "mem://counter" }),
            ))?;
            expect_error(&format!("reply to {method}"), &reply, id, -32601, &[method])?;
        }
    }
    // initialize with the 2026 `_meta` is a modern request for a removed
    // method: -32601, and the error names the version this server speaks,
    // which may be the only diagnostic such a client shows. (Without
    // `_meta` it opens a legacy session: the dual-era tests cover that.)
    let reply = server.ask(&request("init", "initialize", json!({})))?;
    let error = &reply["error"];
    let text = error["message"].as_str().unwrap_or_default();
    let mut want = json!({
        "jsonrpc": "2.0",
        "id": "init",
        "error": { "code": -32601, "message": text }
    });
    // `data` is the server's to add.
    if let Some(data) = error.get("data") {
        want["error"]["data"] = data.clone();
    }
    expect_eq("reply to an initialize with _meta", &reply, &want)?;
    ensure!(
        text.contains("2026-07-28"),
        "the error answering an initialize with _meta does not name 2026-07-28: {reply}"
    );
    // Still serving.
    let reply = server.ask(&call(4, "echo", json!({ "text": "after" })))?;
    expect_eq("echo after", &reply, &ev_text_result(4, "after"))?;
    let finished = server.close_and_finish(Duration::from_secs(5))?;
    expect_exit_zero(&finished)?;
    ensure!(
        finished.rest.is_empty(),
        "unexpected output: {:?}",
        finished.rest
    );
    Ok(String::new())
}
