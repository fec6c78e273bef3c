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
//!
//! The files, by job: this one holds the types (a session, its messages,
//! its evidence, the readers' budget); `Session`'s methods are in
//! `life.rs` (a session started, its server's input closed, its exit
//! waited for), `sends.rs` (what it writes: `initialize`, requests, raw
//! bytes) and `receives.rs` (what it reads: lines taken as messages, a
//! request's response waited for).

mod head;
mod life;
mod receives;
mod sends;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::process::Child;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::{Value, json};

pub use super::stdio_link::StderrLog;
pub use head::{Head, malformed};

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
    /// past a double's range (`1e400`, RFC 8259 section 6), nesting past
    /// serde_json's 128 (section 9), a lone surrogate escape (section
    /// 8.2), each of which RFC 8259 lets a reader refuse, as serde_json
    /// does. The checker's limit, not the server's fault. Never a line
    /// that is not UTF-8. A response so written is still read for its id
    /// and kind (`unreadable_response`): an answer, `Answer::Unreadable`.
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

    /// The id of a response, readable or not (`unreadable_response`).
    pub fn response_id(&self) -> Option<Value> {
        match self {
            Msg::Json(v, _) if self.is_response() => v.get("id").cloned(),
            Msg::Unreadable(..) => self.unreadable_response().map(|(id, _)| id),
            _ => None,
        }
    }

    /// A response the checker cannot read whole: its id (`null` when it
    /// has none, as a parse error's), and whether it is an error, read
    /// past the values the checker cannot read (`Head`). `None` for
    /// anything else (a line that is not an object, as an array holding
    /// an id), and for a response whose id itself is unreadable.
    pub fn unreadable_response(&self) -> Option<(Value, bool)> {
        let Msg::Unreadable(text, _) = self else {
            return None;
        };
        let head = Head::of(text)?;
        Some((head.id, head.error))
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

/// What `Missing::Malformed` says: a server that was reached and broke
/// a rule (the run's status is 1, not 2).
pub const MALFORMED: &str = "it answered with a malformed response";

/// Why a line of JSON is one the checker cannot read, for a reason: the
/// reader's own message (which names its limit) and what RFC 8259 lets
/// a reader refuse.
pub fn unreadable_why(why: &str) -> String {
    format!(
        "{why}; RFC 8259 lets a reader refuse a number past a double's range, deep nesting, a lone surrogate"
    )
}

/// The answer to a request: readable, or a response with its id that the
/// checker cannot read whole (`Msg::Unreadable`).
#[derive(Debug, Clone)]
pub enum Answer {
    Json(Value),
    /// A response with the id sent that is not one well-formed response
    /// (`Head::malformed`: a member twice, both `result` and `error`, a
    /// `result` or `error` that is not an object), readable or not.
    Malformed {
        why: String,
        msg: Msg,
    },
    Unreadable {
        /// The reader's error (`Msg::Unreadable`).
        why: String,
        /// The line.
        line: String,
        /// An `error` response, not a `result`.
        error: bool,
    },
}

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
    /// An answer came, with the id sent, but the checker cannot read it
    /// whole (`Msg::Unreadable`): the checker's limit, not the server's
    /// fault. A check that needs its content skips; one that needs only
    /// an answer has one (`Missing::answered`); one that needs an error
    /// and reads a result, or the other way, fails
    /// (`verdict_wanting_error`, `verdict_wanting_result`).
    Unreadable {
        why: String,
        line: String,
        error: bool,
    },
    /// An answer came, with the id sent, that is not one well-formed
    /// response (`Answer::Malformed`): the server's fault, a failure of
    /// the check that needed it.
    Malformed { why: String, line: String },
}

impl Missing {
    /// Whether the server answered all the same (a response the checker
    /// cannot read, or a malformed one).
    pub fn answered(&self) -> bool {
        matches!(self, Missing::Unreadable { .. } | Missing::Malformed { .. })
    }

    /// The verdict of a check that needed the answer to `what`: a skip
    /// when it came but cannot be read, else a failure.
    pub fn verdict(&self, what: &str) -> super::Verdict {
        if matches!(self, Missing::Unreadable { .. }) {
            super::Verdict::Skip(format!("{what}: {self}"))
        } else {
            super::Verdict::Fail(format!("{what}: {self}"))
        }
    }

    /// The verdict of a check that needed an error in answer to `what`:
    /// a result the checker cannot read is a result all the same, not
    /// the error due (a failure); else as `verdict`.
    pub fn verdict_wanting_error(&self, what: &str) -> super::Verdict {
        match self {
            Missing::Unreadable { error: false, .. } => {
                super::Verdict::Fail(format!("{what}: {self}; a result, where an error is due"))
            }
            _ => self.verdict(what),
        }
    }

    /// The verdict of a check that needed a result in answer to `what`:
    /// an error the checker cannot read is an error all the same, not
    /// the result due (a failure); else as `verdict`.
    pub fn verdict_wanting_result(&self, what: &str) -> super::Verdict {
        match self {
            Missing::Unreadable { error: true, .. } => {
                super::Verdict::Fail(format!("{what}: {self}; an error, where a result is due"))
            }
            _ => self.verdict(what),
        }
    }
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
            Missing::Unreadable { why, line, error } => write!(
                f,
                "it answered with {}, but a line of JSON the checker cannot read ({}): {line}",
                if *error { "an error" } else { "a result" },
                unreadable_why(why)
            ),
            Missing::Malformed { why, line } => {
                write!(f, "{MALFORMED} ({why}): {line}")
            }
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
    /// Why the result of `initialize` could not be read, when it came as
    /// a line the checker cannot read (`initialize` is `None` then).
    pub unread: Option<String>,
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
