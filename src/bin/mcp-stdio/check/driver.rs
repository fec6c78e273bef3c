//! The checker's own driver: raw lines to a server and back, with every
//! line kept as evidence.
//!
//! Why not the library's `Client`: it is polite. It never sends a blank
//! line, a request split across writes, an id of every type, a line that
//! is not JSON or a request without `_meta`, and it hides what it does not
//! understand. A checker must send exactly what it means and see exactly
//! what came back, so this driver writes bytes and reads lines, nothing
//! more: a session is a child process (`stdio_link.rs`) or a URL
//! (`http_link.rs`) behind one `Link`, lines in, lines out.
//!
//! Every wait is bounded by a deadline; a server that never answers costs
//! one check its deadline, not the run.

use std::collections::VecDeque;
use std::process::{Child, ExitStatus};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::{Value, json};

pub use super::stdio_link::StderrLog;

/// The bytes of messages one wait keeps before the awaited response;
/// past it they are dropped (a server flooding its output).
const KEEP_BEFORE: usize = 16 << 20;
/// How much of one line the evidence keeps.
const EVIDENCE_CUT: usize = 2048;
/// How long a server process started for a session may take to say its
/// first line: until it has said one, no wait ends before this much time
/// since its start (a Python or `npx` server can take seconds to start on
/// a loaded machine, and a slow start is not a missing answer).
const STARTUP: Duration = Duration::from_secs(15);
/// How many lines one check's evidence keeps.
const EVIDENCE_LINES: usize = 400;
/// How many of them may be the server's stderr.
const STDERR_EVIDENCE: usize = 100;

/// The protocol version this checker speaks in the modern era.
pub const MODERN: &str = "2026-07-28";
/// The legacy version it offers at `initialize`.
pub const LEGACY: &str = "2025-11-25";

/// Which era a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28: every request carries its `_meta`.
    Modern,
    /// 2025-11-25: `initialize` first.
    Legacy,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

/// One line of evidence: what was sent or received, or a note of the
/// checker's (a pause, a closed input, an exit).
#[derive(Debug, Clone)]
pub struct Evidence {
    /// `sent`, `received`, `stderr` or `note`.
    pub kind: &'static str,
    pub text: String,
}

/// The evidence of one check, shared by every session it starts, and the
/// process groups of the servers they started (so that a check that
/// overruns its deadline can have them killed).
#[derive(Debug, Clone, Default)]
pub struct Transcript(Arc<Mutex<Vec<Evidence>>>, Arc<Mutex<Vec<u32>>>);

impl Transcript {
    /// Remembers a server started for this transcript's sessions.
    pub(super) fn started(&self, pid: u32) {
        self.1.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
    }

    /// A server started for it has been reaped: its pid is no longer its.
    pub(super) fn forget(&self, pid: u32) {
        self.1
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| *p != pid);
    }

    /// SIGKILL to the process group of every server started for it.
    pub fn kill_servers(&self) {
        for pid in self.1.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            super::stdio_link::kill_pid_group(pid);
        }
    }

    /// Keeps one line of evidence, up to `EVIDENCE_LINES` in all, of
    /// which at most `STDERR_EVIDENCE` are the server's stderr: a server
    /// that logs without pause (stderr is its to use "for any logging
    /// purposes") cannot push the lines sent and received out.
    pub fn push(&self, kind: &'static str, text: &str) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() >= EVIDENCE_LINES {
            return;
        }
        if kind == "stderr" {
            let stderr = lines.iter().filter(|e| e.kind == "stderr").count();
            if stderr >= STDERR_EVIDENCE {
                return;
            }
        }
        let text = if text.len() > EVIDENCE_CUT {
            let mut end = EVIDENCE_CUT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}… ({} bytes)", &text[..end], text.len())
        } else {
            text.to_owned()
        };
        lines.push(Evidence { kind, text });
    }

    pub fn note(&self, text: &str) {
        self.push("note", text);
    }

    /// Adds evidence taken from another transcript.
    pub fn extend(&self, evidence: Vec<Evidence>) {
        for e in evidence {
            self.push(e.kind, &e.text);
        }
    }

    pub fn take(&self) -> Vec<Evidence> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A message from the server.
#[derive(Debug, Clone)]
pub enum Msg {
    /// A line that parses as JSON, with its text.
    Json(Value, String),
    /// A line that does not (lossy UTF-8).
    NotJson(String),
    /// A line that is JSON the checker cannot read, with why: a number
    /// past a double's range (`1e400`), which RFC 8259 section 6 lets a
    /// reader refuse, as serde_json does. The checker's limit, not the
    /// server's fault.
    Unreadable(String, String),
    /// A line longer than the checker keeps (`MAX_LINE`), its start: the
    /// checker's limit, not the server's fault (the spec sets none).
    Cut(String),
}

impl Msg {
    pub fn json(&self) -> Option<&Value> {
        match self {
            Msg::Json(v, _) => Some(v),
            Msg::NotJson(_) | Msg::Unreadable(..) | Msg::Cut(_) => None,
        }
    }

    /// Whether this is a JSON-RPC response (it has `result` or `error`).
    pub fn is_response(&self) -> bool {
        self.json()
            .is_some_and(|v| v.get("result").is_some() || v.get("error").is_some())
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        self.json()
            .and_then(|v| v.get("method"))
            .and_then(Value::as_str)
    }

    pub fn text(&self) -> &str {
        match self {
            Msg::Json(_, text) | Msg::NotJson(text) | Msg::Unreadable(text, _) | Msg::Cut(text) => {
                text
            }
        }
    }
}

/// What `Missing::OtherId` says: a server that was reached and broke a
/// MUST (the run's status is 1, not 2).
pub const OTHER_ID: &str = "a response came back with the id";

/// What `Missing::NotJson` says: a server that was reached and wrote what
/// is not a message (the run's status is 1, not 2).
pub const NOT_JSON: &str = "it wrote a line that is not a JSON-RPC message";

/// Why no answer came.
#[derive(Debug, Clone, PartialEq)]
pub enum Missing {
    /// None within the time given.
    Timeout(Duration),
    /// The server's output ended first.
    Eof,
    /// None within the time given, but a response with another id came
    /// (`back`), for the request with the id `sent`: "Result responses
    /// MUST include the same ID as the request".
    OtherId {
        wait: Duration,
        sent: Value,
        back: Value,
    },
    /// None within the time given, but a line that is not JSON came
    /// (its start): "The server MUST NOT write anything to its stdout
    /// that is not a valid MCP message".
    NotJson { wait: Duration, line: String },
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Timeout(t) => write!(f, "no answer within {:.1} s", t.as_secs_f64()),
            Missing::Eof => write!(f, "the server's output ended before the answer"),
            Missing::OtherId { wait, sent, back } => write!(
                f,
                "no answer within {:.1} s with the id {sent}; {OTHER_ID} {back}",
                wait.as_secs_f64()
            ),
            Missing::NotJson { wait, line } => write!(
                f,
                "no answer within {:.1} s; {NOT_JSON}: {line:?}",
                wait.as_secs_f64()
            ),
        }
    }
}

/// What the reader threads pass on: a line holds its bytes' share of the
/// session's read-ahead budget until the session takes it.
pub enum Incoming {
    Line(Vec<u8>, Lease),
    /// The first `MAX_LINE` bytes of a longer line (the rest was dropped).
    Cut(Vec<u8>, Lease),
    Eof,
}

/// The bytes of the server's lines read ahead of the session: a reader
/// waits while they exceed the budget, so a server that floods its output
/// with long lines costs at most this much memory, not the lines' count
/// times their longest.
pub struct Budget {
    /// The bytes held, and whether the session has ended (a reader then
    /// stops: what it holds is never taken).
    state: Mutex<(usize, bool)>,
    freed: Condvar,
}

/// What one session's readers may hold, read ahead.
const READ_AHEAD_BYTES: usize = 64 << 20;
/// The longest line kept from the server, the whole read-ahead budget:
/// past it the rest of the line is read and dropped (a server writing
/// without newlines costs this much), and the line is `Msg::Cut`.
pub const MAX_LINE: usize = READ_AHEAD_BYTES;
/// The lines they may hold (each link's channel is this long).
pub const READ_AHEAD_LINES: usize = 256;

impl Budget {
    pub fn new() -> Arc<Budget> {
        Arc::new(Budget {
            state: Mutex::new((0, false)),
            freed: Condvar::new(),
        })
    }

    /// Waits until `n` more bytes fit (a line longer than the whole
    /// budget waits until nothing else is held), then holds them; `None`
    /// once the session has ended.
    pub fn lease(self: &Arc<Budget>, n: usize) -> Option<Lease> {
        self.lease_within(n, READ_AHEAD_BYTES)
    }

    /// Holds `n` bytes at once, whatever is held: for a reader that is
    /// the session's own thread (an HTTP response read by the request's
    /// sender, bounded by its own cut), which waiting would deadlock.
    pub fn lease_now(self: &Arc<Budget>, n: usize) -> Option<Lease> {
        self.lease_within(n, usize::MAX)
    }

    fn lease_within(self: &Arc<Budget>, n: usize, limit: usize) -> Option<Lease> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !state.1 && state.0 > 0 && state.0.saturating_add(n) > limit {
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.1 {
            return None;
        }
        state.0 += n;
        Some(Lease {
            budget: Arc::clone(self),
            n,
        })
    }

    /// The session has ended: a reader waiting for room stops.
    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        self.freed.notify_all();
    }
}

/// Bytes held from a `Budget`, given back when dropped.
pub struct Lease {
    budget: Arc<Budget>,
    n: usize,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut state = self.budget.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 -= self.n;
        self.budget.freed.notify_all();
    }
}

/// How a session reaches its server: a child process or HTTP.
pub trait Link: Send {
    /// Writes these bytes as they are (stdio), or posts one message
    /// (HTTP: `bytes` is one line).
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// Closes the server's input (stdio); ends the session (HTTP).
    fn close_input(&mut self);
    /// The child, for the stdio checks that need the process itself.
    fn child(&mut self) -> Option<&mut Child> {
        None
    }
}

/// One connection to the server under test.
pub struct Session {
    link: Box<dyn Link>,
    incoming: Receiver<Incoming>,
    /// The readers' read-ahead budget, closed when the session ends.
    budget: Arc<Budget>,
    /// Messages taken past a wait's deadline, in a row.
    overdue: usize,
    /// A process started for this session that has not said a line yet:
    /// no wait ends before `STARTUP` has passed since it was started.
    pub(super) starting: bool,
    started: Instant,
    pub era: Era,
    /// The version each modern request names, or the one `initialize`
    /// agreed.
    pub version: String,
    next_id: i64,
    transcript: Transcript,
    backlog: VecDeque<Msg>,
    /// The ids of requests whose wait ended without their response: a
    /// response to one that comes later is evidence only, never taken for
    /// the answer to a later request (nor for a response to a
    /// notification).
    abandoned: Vec<Value>,
    /// The server's output ended.
    pub ended: bool,
    pub stderr: Arc<Mutex<StderrLog>>,
    /// The result of `initialize` (legacy sessions).
    pub initialize: Option<Value>,
    /// What the server wrote during `initialize`: what came before its
    /// answer (a log line on stdout, say), then the answer.
    pub handshake: Vec<Msg>,
}

/// What starts a server: a command line, or a URL with headers.
#[derive(Debug, Clone)]
pub enum Target {
    Command(Vec<String>),
    Url(String, Vec<(String, String)>),
}

impl Target {
    pub fn is_stdio(&self) -> bool {
        matches!(self, Target::Command(_))
    }
}

impl Session {
    /// Starts the server (or opens the URL) and, for the legacy era,
    /// initializes it.
    pub fn start(
        target: &Target,
        era: Era,
        transcript: &Transcript,
        deadline: Duration,
    ) -> Result<Session, String> {
        let mut session = Session::connect(target, transcript, deadline)?;
        session.era = era;
        if era == Era::Legacy {
            session.initialize(LEGACY, deadline)?;
        }
        Ok(session)
    }

    /// Starts the server without a word to it. `wait` bounds each HTTP
    /// exchange (connection, head and JSON body).
    pub fn connect(
        target: &Target,
        transcript: &Transcript,
        wait: Duration,
    ) -> Result<Session, String> {
        match target {
            Target::Command(argv) => super::stdio_link::spawn(argv, transcript),
            Target::Url(url, headers) => super::http_link::connect(url, headers, transcript, wait),
        }
    }

    /// A session over any link.
    pub fn new(
        link: Box<dyn Link>,
        incoming: Receiver<Incoming>,
        budget: Arc<Budget>,
        transcript: &Transcript,
        stderr: Arc<Mutex<StderrLog>>,
    ) -> Session {
        Session {
            link,
            incoming,
            budget,
            overdue: 0,
            starting: false,
            started: Instant::now(),
            era: Era::Modern,
            version: MODERN.to_owned(),
            next_id: 0,
            transcript: transcript.clone(),
            backlog: VecDeque::new(),
            abandoned: Vec::new(),
            ended: false,
            stderr,
            initialize: None,
            handshake: Vec::new(),
        }
    }

    /// `initialize` with `version`, then `notifications/initialized`.
    pub fn initialize(&mut self, version: &str, deadline: Duration) -> Result<Value, String> {
        let id = self.fresh_id();
        let line = json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": { "name": "mcp-stdio-check", "version": env!("CARGO_PKG_VERSION") }
            }
        });
        self.send_json(&line);
        let (reply, before) = self
            .response_with(&id, deadline)
            .map_err(|e| format!("initialize: {e}"))?;
        self.handshake = before;
        self.handshake
            .push(Msg::Json(reply.clone(), reply.to_string()));
        let Some(result) = reply.get("result") else {
            return Err(format!(
                "initialize was refused: {}",
                reply.get("error").unwrap_or(&Value::Null)
            ));
        };
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            self.version = v.to_owned();
        }
        self.initialize = Some(result.clone());
        self.send_json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        Ok(reply)
    }

    /// A new integer id.
    pub fn fresh_id(&mut self) -> Value {
        self.next_id += 1;
        json!(self.next_id)
    }

    /// The `_meta` of a modern request: version, capabilities (none),
    /// identity.
    pub fn meta(&self) -> Value {
        let mut meta = meta_declaring(json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!(self.version);
        meta
    }

    /// The request `method` with `params` and `id`, as this session's era
    /// writes it: a modern one's `_meta` added to its params.
    pub fn envelope(&self, id: &Value, method: &str, params: Value) -> Value {
        let mut params = match params {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        if self.era == Era::Modern && !params.contains_key("_meta") {
            params.insert("_meta".into(), self.meta());
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    }

    /// Sends a request with a fresh id; returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.fresh_id();
        let message = self.envelope(&id, method, params);
        self.send_json(&message);
        id
    }

    /// Sends a request and waits for its response.
    pub fn call(&mut self, method: &str, params: Value, wait: Duration) -> Result<Value, Missing> {
        let id = self.request(method, params);
        self.response(&id, wait)
    }

    /// Sends one message as a line.
    pub fn send_json(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes());
    }

    /// Writes bytes as they are (in evidence, with `\n` and `\r` shown).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let shown = String::from_utf8_lossy(bytes)
            .replace('\r', "\\r")
            .replace('\n', "\\n");
        self.transcript.push("sent", &shown);
        if let Err(e) = self.link.send(bytes) {
            self.transcript.note(&format!("could not send: {e}"));
        }
    }

    /// The next message, waiting until `deadline`. Past it, only what
    /// was already read ahead (at most `READ_AHEAD_LINES` lines): a server
    /// that writes faster than the checker reads cannot hold a wait open
    /// for ever (the channel is never empty then, and a receive that
    /// finds a message never looks at its deadline).
    /// While the server has said nothing since it started, the wait
    /// lasts until `STARTUP` has passed (this waits for an answer; `drain`
    /// and `wait_exit`, which may expect silence, do not).
    pub fn recv_until(&mut self, deadline: Instant) -> Option<Msg> {
        self.recv(deadline, true)
    }

    fn recv(&mut self, deadline: Instant, answer: bool) -> Option<Msg> {
        if let Some(msg) = self.backlog.pop_front() {
            return Some(msg);
        }
        if self.ended {
            return None;
        }
        let deadline = if answer && self.starting {
            deadline.max(self.started + STARTUP)
        } else {
            deadline
        };
        if Instant::now() >= deadline {
            self.overdue += 1;
            if self.overdue > READ_AHEAD_LINES {
                return None;
            }
        } else {
            self.overdue = 0;
        }
        loop {
            match self.incoming.recv_deadline(deadline) {
                Ok(Incoming::Line(bytes, lease)) => {
                    let msg = self.take_line(&bytes);
                    drop(lease);
                    if self.is_late(&msg) {
                        continue;
                    }
                    return Some(msg);
                }
                Ok(Incoming::Cut(bytes, lease)) => {
                    self.starting = false;
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    drop(lease);
                    self.transcript.push("received", &text);
                    self.transcript.note(&format!(
                        "that message was longer than the checker keeps ({} MiB of a line, 16 MiB of an SSE event): the rest was dropped",
                        MAX_LINE >> 20
                    ));
                    return Some(Msg::Cut(text));
                }
                Ok(Incoming::Eof) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    self.transcript.note("the server's output ended");
                    return None;
                }
                Err(RecvTimeoutError::Timeout) => return None,
            }
        }
    }

    /// Whether `msg` is the response to a request whose wait has ended
    /// (noted in the evidence, then passed over).
    fn is_late(&mut self, msg: &Msg) -> bool {
        if !msg.is_response() {
            return false;
        }
        let Some(id) = msg.json().and_then(|v| v.get("id")) else {
            return false;
        };
        let Some(at) = self.abandoned.iter().position(|a| a == id) else {
            return false;
        };
        self.abandoned.swap_remove(at);
        self.transcript.note(&format!(
            "a late response to the request with id {id}, after its wait had ended: not taken for another's"
        ));
        true
    }

    /// Waits again for the response to `id` after a wait for it ended:
    /// it is read as any other message.
    pub fn reclaim(&mut self, id: &Value) {
        self.abandoned.retain(|a| a != id);
    }

    /// Stops waiting for the response to `id`: if it comes later, it is
    /// evidence only.
    pub fn abandon(&mut self, id: &Value) {
        if self.abandoned.len() >= READ_AHEAD_LINES {
            self.abandoned.remove(0);
        }
        self.abandoned.push(id.clone());
    }

    fn take_line(&mut self, bytes: &[u8]) -> Msg {
        self.starting = false;
        let text = String::from_utf8_lossy(bytes).into_owned();
        self.transcript.push("received", &text);
        match serde_json::from_slice::<Value>(bytes) {
            Ok(value) => Msg::Json(value, text),
            // JSON all the same when it can be read past its values.
            Err(e) if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() => {
                Msg::Unreadable(text, e.to_string())
            }
            Err(_) => Msg::NotJson(text),
        }
    }

    /// The response to `id`, waiting at most `wait`; what came before it
    /// is dropped (it is in the evidence).
    pub fn response(&mut self, id: &Value, wait: Duration) -> Result<Value, Missing> {
        self.response_with(id, wait).map(|(reply, _)| reply)
    }

    /// The response to `id` and every message that came before it (those
    /// are consumed).
    pub fn response_with(
        &mut self,
        id: &Value,
        wait: Duration,
    ) -> Result<(Value, Vec<Msg>), Missing> {
        let now = Instant::now();
        let deadline = now + wait;
        // What a miss says it waited: a server that has said nothing yet
        // gets until `STARTUP` (`recv`), not only `wait`.
        let wait = match self.starting {
            true => wait.max((self.started + STARTUP).saturating_duration_since(now)),
            false => wait,
        };
        let mut before = Vec::new();
        let mut kept = 0;
        let mut other_id = None;
        let mut not_json = None;
        loop {
            match self.recv_until(deadline) {
                Some(msg) => {
                    if msg.is_response() && msg.json().and_then(|v| v.get("id")) == Some(id) {
                        let Msg::Json(reply, _) = msg else {
                            unreachable!("a response is JSON")
                        };
                        return Ok((reply, before));
                    }
                    if other_id.is_none() && msg.is_response() {
                        other_id = msg.json().and_then(|v| v.get("id")).cloned();
                    }
                    if not_json.is_none()
                        && let Msg::NotJson(text) = &msg
                    {
                        not_json = Some(super::short(text, 80));
                    }
                    kept += msg.text().len();
                    if kept <= KEEP_BEFORE {
                        before.push(msg);
                    }
                }
                None if self.ended => return Err(Missing::Eof),
                None => {
                    self.abandon(id);
                    return Err(match (other_id, not_json) {
                        (Some(back), _) => Missing::OtherId {
                            wait,
                            sent: id.clone(),
                            back,
                        },
                        (None, Some(line)) => Missing::NotJson { wait, line },
                        (None, None) => Missing::Timeout(wait),
                    });
                }
            }
        }
    }

    /// Every message that arrives within `wait`.
    pub fn drain(&mut self, wait: Duration) -> Vec<Msg> {
        let deadline = Instant::now() + wait;
        let (mut got, mut kept) = (Vec::new(), 0);
        while let Some(msg) = self.recv(deadline, false) {
            kept += msg.text().len();
            if kept <= KEEP_BEFORE {
                got.push(msg);
            }
        }
        got
    }

    /// Closes the server's input.
    pub fn close_input(&mut self) {
        self.transcript.note("closed the server's input");
        self.link.close_input();
    }

    /// Waits for the server's output to end, then for its exit, until
    /// `wait` has passed. `None` if it had not exited by then.
    pub fn wait_exit(&mut self, wait: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + wait;
        let mut kept: usize = self.backlog.iter().map(|m| m.text().len()).sum();
        while !self.ended && Instant::now() < deadline {
            if let Some(msg) = self.recv(deadline, false) {
                // What it writes while it exits is kept for the check,
                // the last of it up to `KEEP_BEFORE` bytes.
                kept += msg.text().len();
                self.backlog.push_back(msg);
                while kept > KEEP_BEFORE && self.backlog.len() > 1 {
                    let first = self.backlog.pop_front().expect("more than one");
                    kept -= first.text().len();
                }
            }
        }
        let child = self.link.child()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                // Reaped: its pid is no longer one to kill.
                self.transcript.forget(child.id());
                self.transcript
                    .note(&format!("the server exited ({status})"));
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends SIGTERM to the server.
    #[cfg(unix)]
    pub fn terminate(&mut self) -> bool {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let Some(child) = self.link.child() else {
            return false;
        };
        let Ok(pid) = i32::try_from(child.id()) else {
            return false;
        };
        self.transcript.note("sent SIGTERM");
        kill(Pid::from_raw(pid), Signal::SIGTERM).is_ok()
    }
}

impl Drop for Session {
    /// Its readers stop (one waiting for room would otherwise wait for
    /// ever: the lines it holds are never taken).
    fn drop(&mut self) {
        self.budget.close();
    }
}

/// The `_meta` of a 2026-07-28 request that declares `capabilities` (a
/// check's own request, given in its params: a session adds its own
/// `_meta` only to a request without one).
pub fn meta_declaring(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "mcp-stdio-check", "version": env!("CARGO_PKG_VERSION") }
    })
}
