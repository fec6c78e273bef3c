//! Test helpers: a server on one end of an in-memory transport, the test on
//! the other, and bounded waits (a bug fails a test instead of hanging it).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::Receiver;
use mcp_stdio::types::{CallToolResult, LoggingLevel, Tool};
use mcp_stdio::{Server, ServerBuilder, Transport};
use serde_json::{Value, json};

/// The 1×1 PNG of the conformance fixtures.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// How long any single wait may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(10);

/// The per-request `_meta` every modern request must carry.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A request with the standard `_meta` merged into `params`.
pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut params = params;
    let map = params.as_object_mut().expect("params must be an object");
    map.entry("_meta").or_insert_with(meta);
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// A `tools/call` request.
pub fn call(id: impl Into<Value>, tool: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
}

/// A `notifications/cancelled` notification.
pub fn cancel(id: impl Into<Value>) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id.into(), "reason": "test" } })
}

/// The `_meta` every result carries.
pub fn server_meta(server: &Server) -> Value {
    json!({ "io.modelcontextprotocol/serverInfo": server.info() })
}

/// A test's end of a connection to a server running on its own thread.
pub struct Peer {
    input: Option<Box<dyn Write + Send>>,
    lines: Receiver<String>,
    serving: Option<JoinHandle<Result<(), mcp_stdio::Error>>>,
    /// The server's `_meta` on results.
    pub server_meta: Value,
}

impl Peer {
    /// Serves `server` on a new thread over an in-memory transport.
    pub fn start(server: &Server) -> Peer {
        let (ours, theirs) = Transport::memory();
        let serving = {
            let server = server.clone();
            std::thread::spawn(move || server.serve(theirs))
        };
        Peer::over(ours, Some(serving), server_meta(server))
    }

    /// Serves `server` with an output that takes nothing while the returned
    /// lock is held: a client that stops reading, until the test lets go.
    pub fn start_stalling(server: &Server) -> (Peer, Arc<Mutex<()>>) {
        let (peer, held, _) = Peer::start_stalling_told(server);
        (peer, held)
    }

    /// [`Peer::start_stalling`], and a channel told as each write of the
    /// server's begins (before it waits for the lock): the test knows
    /// which thread of the server is in a `write(2)` the client does not
    /// take.
    pub fn start_stalling_told(server: &Server) -> (Peer, Arc<Mutex<()>>, Receiver<()>) {
        /// The server's output, stalled while `held` is locked.
        struct Stalling {
            out: mcp_stdio::MemoryWriter,
            held: Arc<Mutex<()>>,
            entered: crossbeam_channel::Sender<()>,
        }
        impl Write for Stalling {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                // The test may have stopped listening: nothing to tell.
                let _ = self.entered.send(());
                let _reading = self.held.lock().unwrap();
                self.out.write(bytes)
            }
            // A pipe's flush is a no-op: only a write waits for the
            // client. (Stalled here too, a send whose line the test has
            // read could still be stuck in its flush once the test holds
            // `held`, and look to a later writer like a send in progress:
            // `send_path::a_cancellation_takes_effect_...` under load.)
            fn flush(&mut self) -> std::io::Result<()> {
                self.out.flush()
            }
        }
        let (to_server, server_in) = mcp_stdio::memory_pipe();
        let (server_out, from_server) = mcp_stdio::memory_pipe();
        let held = Arc::new(Mutex::new(()));
        let (entered, told) = crossbeam_channel::unbounded();
        let stalling = Stalling {
            out: server_out,
            held: Arc::clone(&held),
            entered,
        };
        let serving = {
            let server = server.clone();
            std::thread::spawn(move || server.serve(Transport::new(server_in, stalling)))
        };
        let ours = Transport::new(from_server, to_server);
        (
            Peer::over(ours, Some(serving), server_meta(server)),
            held,
            told,
        )
    }

    /// The test's end of any transport.
    pub fn over(
        transport: Transport,
        serving: Option<JoinHandle<Result<(), mcp_stdio::Error>>>,
        server_meta: Value,
    ) -> Peer {
        let (mut reader, writer) = transport.into_parts();
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        assert!(line.ends_with('\n'), "every message ends with a newline");
                        if tx.send(line.trim_end_matches('\n').to_owned()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Peer {
            input: Some(writer),
            lines,
            serving,
            server_meta,
        }
    }

    /// Sends raw bytes followed by a newline.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().expect("input is open");
        input.write_all(bytes).unwrap();
        input.write_all(b"\n").unwrap();
        input.flush().unwrap();
    }

    /// Writes raw bytes as they are (no newline added).
    pub fn write_raw(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().expect("input is open");
        input.write_all(bytes).unwrap();
        input.flush().unwrap();
    }

    /// Sends one message.
    pub fn send(&mut self, message: &Value) {
        self.send_raw(serde_json::to_string(message).unwrap().as_bytes());
    }

    /// The next line the server wrote, exactly as written.
    pub fn recv_line(&self) -> String {
        self.lines
            .recv_timeout(WAIT)
            .expect("the server wrote nothing within the time limit")
    }

    /// The next message the server wrote.
    pub fn recv(&self) -> Value {
        let line = self.recv_line();
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("invalid JSON from the server: {e}: {line}"))
    }

    /// The next message the server wrote within `within`, if any.
    #[allow(dead_code, reason = "used by the tests of optional features")]
    pub fn try_recv(&self, within: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(within).ok()?;
        Some(serde_json::from_str(&line).expect("the server writes JSON"))
    }

    /// Sends a request and returns the next message (its reply, when
    /// nothing else is in flight).
    pub fn ask(&mut self, message: &Value) -> Value {
        self.send(message);
        self.recv()
    }

    /// A complete result as the server sends it: `result` plus
    /// `resultType` and `_meta`.
    pub fn result(&self, id: impl Into<Value>, mut result: Value) -> Value {
        let map = result.as_object_mut().unwrap();
        map.insert("resultType".into(), json!("complete"));
        map.insert("_meta".into(), self.server_meta.clone());
        json!({ "jsonrpc": "2.0", "id": id.into(), "result": result })
    }

    /// Closes the input (end of file), then returns everything the server
    /// still wrote until it closed its output, and what `serve` returned.
    pub fn finish(mut self) -> (Vec<Value>, Result<(), mcp_stdio::Error>) {
        self.input = None;
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(WAIT) {
                Ok(line) => rest.push(serde_json::from_str(&line).unwrap()),
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
                Err(e) => panic!("the server did not close its output: {e}"),
            }
        }
        let res = match self.serving.take() {
            Some(handle) => handle.join().expect("serve panicked"),
            None => Ok(()),
        };
        (rest, res)
    }

    /// Closes the input and asserts the server wrote nothing more and
    /// returned cleanly.
    pub fn finish_quietly(self) {
        let (rest, res) = self.finish();
        assert_eq!(rest, Vec::<Value>::new(), "nothing more was expected");
        res.expect("serve returned an error");
    }
}

/// The keys of a JSON object, sorted.
pub fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

/// An error response.
pub fn error(id: impl Into<Value>, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "error": { "code": code, "message": message } })
}

/// The error code of a response.
pub fn code(resp: &Value) -> i64 {
    resp["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error response: {resp}"))
}

/// How many subscriptions to the tools list's changes make a publisher
/// wait for a client that stopped reading (see [`Peer::listen_past_the_backlog`]).
pub const LISTENS_PAST_THE_BACKLOG: usize = 1_000;

impl Peer {
    /// Opens [`LISTENS_PAST_THE_BACKLOG`] subscriptions to the tools list's
    /// changes, each id about a kilobyte long (`"past-the-backlog-000000-xxx…"`),
    /// so that each event is more than 1,100 bytes, and reads their
    /// acknowledgments: one change then writes more than the backlog (a
    /// megabyte) for this client, and once it stopped reading, the latest
    /// change held back for each subscription is more than a megabyte too,
    /// past which a publisher waits for it (`Conn::publisher_waits`).
    /// Events about the same things never make a publisher wait otherwise:
    /// each subscription keeps the latest. (Long ids, not many
    /// subscriptions: 9,000 of them cost the tests that use this about 18
    /// s of CPU, in two CI lanes.)
    pub fn listen_past_the_backlog(&mut self) {
        let notifications = json!({ "toolsListChanged": true });
        let long = "x".repeat(1_000);
        for n in 0..LISTENS_PAST_THE_BACKLOG {
            let params = json!({ "notifications": notifications });
            let id = format!("past-the-backlog-{n:06}-{long}");
            self.send(&request(id, "subscriptions/listen", params));
        }
        for _ in 0..LISTENS_PAST_THE_BACKLOG {
            let ack = self.recv();
            assert_eq!(
                ack["method"],
                json!("notifications/subscriptions/acknowledged"),
                "{ack}"
            );
        }
    }

    /// Closes the input (the server reads end of file) but keeps reading.
    pub fn close_input(&mut self) {
        self.input = None;
    }

    /// Waits, with the input still open, until the server closes its
    /// output; returns the lines it wrote meanwhile, or `None` if the
    /// output was still open after `within`.
    pub fn wait_output_closed(&self, within: Duration) -> Option<Vec<String>> {
        let deadline = std::time::Instant::now() + within;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return Some(lines),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => return None,
            }
        }
    }

    /// Asserts that the server writes nothing for `quiet`. Only for checks
    /// that something does *not* happen; a failure shows up as an
    /// unexpected message, never as a spurious timeout.
    pub fn assert_silent_for(&self, quiet: Duration) {
        if let Ok(line) = self.lines.recv_timeout(quiet) {
            panic!("expected silence, got {line}");
        }
    }
}

/// A test-controlled tool, `block`: it reports its start, then waits until
/// the test releases it (reply `released`) or the request is cancelled. On
/// cancellation it reports that too, then tries to send progress, a log
/// message and a reply, none of which may reach the wire.
pub struct Blocker {
    pub started: Receiver<Value>,
    pub observed_cancel: Receiver<Value>,
    release: crossbeam_channel::Sender<()>,
}

impl Blocker {
    /// Adds the `block` tool to `builder`.
    pub fn install(builder: ServerBuilder) -> (ServerBuilder, Blocker) {
        let (started_tx, started) = crossbeam_channel::unbounded();
        let (observed_tx, observed_cancel) = crossbeam_channel::unbounded();
        let (release, release_rx) = crossbeam_channel::unbounded::<()>();
        let tool = Tool::new("block", "Blocks until released or cancelled.");
        let builder = builder.tool(tool, move |ctx, _: Value| {
            let id = ctx.id().to_value();
            started_tx.send(id.clone()).unwrap();
            loop {
                if ctx.is_cancelled() {
                    observed_tx.send(id).unwrap();
                    ctx.progress(99.0, None, Some("after cancel"));
                    ctx.log(LoggingLevel::Emergency, None, json!("after cancel"));
                    return Ok(CallToolResult::text("late"));
                }
                match release_rx.recv_timeout(Duration::from_millis(2)) {
                    Ok(()) => return Ok(CallToolResult::text("released")),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                    Err(_) => return Ok(CallToolResult::text("blocker dropped")),
                }
            }
        });
        (
            builder,
            Blocker {
                started,
                observed_cancel,
                release,
            },
        )
    }

    /// Waits until a `block` call started; returns its id.
    pub fn wait_started(&self) -> Value {
        self.started
            .recv_timeout(WAIT)
            .expect("a block call should have started")
    }

    /// Waits until a `block` call saw its cancellation; returns its id.
    pub fn wait_cancel_observed(&self) -> Value {
        self.observed_cancel
            .recv_timeout(WAIT)
            .expect("a block call should have seen its cancellation")
    }

    /// Lets one running `block` call finish.
    pub fn release_one(&self) {
        self.release.send(()).unwrap();
    }
}

/// A `block` reply.
pub fn text_result(peer: &Peer, id: impl Into<Value>, text: &str) -> Value {
    peer.result(id, json!({ "content": [{ "type": "text", "text": text }] }))
}
