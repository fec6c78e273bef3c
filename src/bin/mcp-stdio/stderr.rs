//! Everything the command line writes on stderr, through one lock: the
//! progress bar, the server's log messages, the wire (`--wire`), the
//! client's notes, questions for the user, and errors.
//!
//! With `--json` every line is a JSON object, so that a script reads
//! stderr as it reads stdout: an error is `{"error": ..., "status": N}`
//! (with `rpcError`, the server's error as it sent it, when that is what
//! failed), progress and log messages are the notifications as the client
//! read them (`{"method": "notifications/progress", "params": ...}`: the
//! params the spec defines, in its order, a whole number without a
//! fraction; not the server's bytes, which the client does not keep), the
//! wire is `{"wire": "sent"|"received", "line": ...}`, the server's stderr
//! `{"serverStderr": ...}`, and everything else `{"note": ...}`.
//!
//! Why one place: these come from several threads at once (the client's
//! reader and writer threads call the wire hook, the waiting thread draws
//! progress, a legacy server's questions are asked on a thread of their
//! own), and a progress bar redrawn in place with `\r` must be wiped before
//! any other line is written, or the two end up on one line.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use mcp_stdio::ErrorObject;
use mcp_stdio::types::{LoggingMessageNotificationParams, ProgressNotificationParams};
use serde_json::{Value, json};

use crate::escape::Mode;

/// How wide the bar is, in cells.
const BAR_CELLS: usize = 24;
/// How much of a progress message the bar shows: a line that wraps
/// cannot be redrawn in place.
const BAR_MESSAGE_CHARS: usize = 40;

/// stderr, shared.
#[derive(Debug)]
pub struct Stderr {
    /// Whether the progress bar is on the screen now.
    bar_drawn: Mutex<bool>,
    /// Draw a bar (stderr is a terminal and nothing else streams there),
    /// or write progress as plain lines.
    bar: bool,
    /// How the server's text is shown: escaped on a terminal, as text
    /// or (`--json`) as JSON escapes (see `escape`); `--raw` does not
    /// change it, being about stdout.
    escape: Mode,
    /// `--json`: every line a JSON object.
    json: bool,
}

impl Stderr {
    /// `plain`: progress as lines even on a terminal (under `--wire`, whose
    /// lines come between two redraws). `escape`: how control characters
    /// in what is written are shown (the bar's own are not escaped).
    /// `json`: every line a JSON object (`--json`; no bar).
    pub fn new(plain: bool, escape: Mode, json: bool) -> Stderr {
        Stderr {
            bar_drawn: Mutex::new(false),
            bar: !plain && !json && std::io::stderr().is_terminal(),
            escape,
            json,
        }
    }

    /// `text` as it may be written here.
    fn shown<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.escape.shown(text)
    }

    /// Writes one line for people (wiping the bar first); `{"note": ...}`
    /// with `--json`.
    pub fn line(&self, text: &str) {
        if self.json {
            return self.write(&json!({ "note": text }).to_string());
        }
        self.write(text);
    }

    /// The line of a failure: `mcp-stdio: MESSAGE`, or with `--json`
    /// `{"error": MESSAGE, "status": STATUS}` and the server's error as it
    /// sent it (`rpcError`) when that is what failed. `MESSAGE` is one
    /// line, its control characters escaped by the caller (`one_line`, in
    /// `main`).
    pub fn error(&self, message: &str, status: u8, rpc: Option<&ErrorObject>) {
        if !self.json {
            return self.write(&format!("mcp-stdio: {message}"));
        }
        let mut line = json!({ "error": message, "status": status });
        if let Some(rpc) = rpc {
            line["rpcError"] = serde_json::to_value(rpc).unwrap_or(Value::Null);
        }
        self.write(&line.to_string());
    }

    /// A note of the command line's own: `mcp-stdio: note: TEXT`, its
    /// control characters escaped wherever it goes (`escape::text`:
    /// it may quote a server's error).
    pub fn note(&self, text: &str) {
        let text = &crate::escape::text(text);
        if self.json {
            return self.write(&json!({ "note": text }).to_string());
        }
        self.write(&format!("mcp-stdio: note: {text}"));
    }

    /// A note of the client's (`--wire`): `· TEXT`, its control
    /// characters escaped wherever it goes (`escape::text`: it may quote
    /// what the server sent).
    pub fn client_note(&self, text: &str) {
        let text = &crate::escape::text(text);
        if self.json {
            return self.write(&json!({ "clientNote": text }).to_string());
        }
        self.write(&format!("· {text}"));
    }

    /// A line the server wrote to its stderr (`--show-stderr`).
    pub fn server_stderr(&self, line: &str) {
        if self.json {
            return self.write(&json!({ "serverStderr": line }).to_string());
        }
        self.write(&format!("[server] {line}"));
    }

    /// A line on the wire (`--wire`): `→` sent, `←` received.
    pub fn wire(&self, sent: bool, line: &str) {
        if self.json {
            let direction = if sent { "sent" } else { "received" };
            return self.write(&json!({ "wire": direction, "line": line }).to_string());
        }
        let arrow = if sent { '→' } else { '←' };
        self.write(&format!("{arrow} {line}"));
    }

    /// Writes `text` and a newline, wiping the bar first.
    fn write(&self, text: &str) {
        let mut drawn = self.lock();
        let mut err = std::io::stderr().lock();
        if *drawn {
            let _ = err.write_all(b"\r\x1b[2K");
            *drawn = false;
        }
        // A failed write to stderr has nowhere left to be reported.
        let _ = writeln!(err, "{}", self.shown(text));
    }

    /// Writes `text` with no newline after it: a question whose answer is
    /// typed on the same line (with `--json`, `{"question": ...}` on a
    /// line of its own).
    pub fn ask(&self, text: &str) {
        if self.json {
            return self.write(&json!({ "question": text }).to_string());
        }
        let mut drawn = self.lock();
        let mut err = std::io::stderr().lock();
        if *drawn {
            let _ = err.write_all(b"\r\x1b[2K");
            *drawn = false;
        }
        let _ = write!(err, "{}", self.shown(text));
        let _ = err.flush();
    }

    /// Wipes the progress bar, if it is drawn.
    pub fn clear(&self) {
        let mut drawn = self.lock();
        if *drawn {
            let _ = std::io::stderr().write_all(b"\r\x1b[2K");
            *drawn = false;
        }
    }

    /// Shows a progress notification: the bar redrawn in place, or a line.
    pub fn progress(&self, p: &ProgressNotificationParams) {
        if self.json {
            return self.write(&progress_json(p));
        }
        let count = match p.total {
            Some(total) => format!("{}/{}", number(p.progress), number(total)),
            None => number(p.progress),
        };
        let message = p.message.as_deref().unwrap_or("");
        if !self.bar {
            let text = format!("progress {count} {message}");
            return self.line(text.trim_end());
        }
        let cells = match p.total {
            Some(total) if total > 0.0 => {
                let done = ((p.progress / total).clamp(0.0, 1.0) * BAR_CELLS as f64) as usize;
                format!("{}{}", "#".repeat(done), "-".repeat(BAR_CELLS - done))
            }
            // No total: a marker that moves with each notification.
            _ => {
                let at = (p.progress.max(0.0) as usize) % BAR_CELLS;
                let mut cells = "-".repeat(BAR_CELLS);
                cells.replace_range(at..at + 1, "#");
                cells
            }
        };
        let message: String = crate::escape::line(message)
            .chars()
            .take(BAR_MESSAGE_CHARS)
            .collect();
        let mut drawn = self.lock();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K[{cells}] {count} {message}");
        let _ = err.flush();
        *drawn = true;
    }

    /// Shows a log message from the server.
    pub fn log(&self, log: &LoggingMessageNotificationParams) {
        if self.json {
            // The params in the spec's order (a `Value` would sort them).
            let params = serde_json::to_string(log).unwrap_or_else(|_| "null".to_owned());
            return self.write(&format!(
                r#"{{"method":"notifications/message","params":{params}}}"#
            ));
        }
        let level = serde_json::to_value(log.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let data = match &log.data {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        match &log.logger {
            Some(logger) => self.line(&format!("log {level} [{logger}]: {data}")),
            None => self.line(&format!("log {level}: {data}")),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, bool> {
        // A panic while writing to stderr leaves nothing to repair.
        self.bar_drawn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A progress notification as one JSON line: its params as read, in the
/// spec's order (`progressToken`, `progress`, `total`, `message`,
/// `_meta`), a whole number without a fraction (the client reads the
/// figures as `f64`: `1` would be written back `1.0`).
fn progress_json(p: &ProgressNotificationParams) -> String {
    fn text<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
    }
    let mut params = format!(
        r#"{{"progressToken":{},"progress":{}"#,
        text(&p.progress_token),
        json_number(p.progress)
    );
    if let Some(total) = p.total {
        params.push_str(&format!(r#","total":{}"#, json_number(total)));
    }
    if let Some(message) = &p.message {
        params.push_str(&format!(r#","message":{}"#, text(message)));
    }
    if let Some(meta) = &p.meta {
        params.push_str(&format!(r#","_meta":{}"#, text(meta)));
    }
    format!(r#"{{"method":"notifications/progress","params":{params}}}}}"#)
}

/// A figure as JSON: a whole number as an integer.
fn json_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 9.2e18 {
        format!("{}", n as i64)
    } else {
        Value::from(n).to_string()
    }
}

/// A progress figure: whole numbers without a fraction.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_drop_a_zero_fraction() {
        assert_eq!(super::number(3.0), "3");
        assert_eq!(super::number(2.5), "2.5");
    }

    #[test]
    fn progress_is_one_json_line_in_the_specs_order() {
        let p = serde_json::from_str(
            r#"{"message":"half","total":2,"progress":1.5,"progressToken":"t"}"#,
        )
        .unwrap();
        assert_eq!(
            super::progress_json(&p),
            r#"{"method":"notifications/progress","params":{"progressToken":"t","progress":1.5,"total":2,"message":"half"}}"#
        );
    }
}
