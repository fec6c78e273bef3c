//! The crate's error type.
//!
//! Two planes, as in ureq: the peer answered with a JSON-RPC error
//! ([`Error::Rpc`], its code, message and data kept as sent), or there was no
//! usable answer at all (every other variant).

use std::fmt;
use std::io;

use crate::jsonrpc::ErrorObject;

/// Everything that can go wrong in this crate.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The peer answered with a JSON-RPC error.
    Rpc(ErrorObject),
    /// Reading or writing the transport failed, or a thread could not be
    /// started.
    Io(io::Error),
    /// A message could not be encoded or decoded.
    Json(serde_json::Error),
    /// No answer came in time.
    Timeout,
    /// The request was cancelled.
    Cancelled,
    /// The task that was to give the answer ended `cancelled` (Tasks
    /// extension): the server, or a `tasks/cancel` from anyone holding the
    /// task's id, stopped it.
    TaskCancelled {
        /// The task.
        task_id: String,
        /// The server's word on it (the task's `statusMessage`), if any.
        status_message: Option<String>,
    },
    /// The connection closed before an answer came.
    Disconnected,
    /// The peer broke the protocol, or the two sides cannot agree on it
    /// (no common version, an unknown `resultType`, a legacy server when
    /// modern was required, a response that could not be read); the text
    /// says what happened.
    Protocol(String),
    /// The answer came as a line longer than the configured maximum
    /// (`ClientBuilder::max_line_bytes`), and was dropped unread.
    MessageTooLarge {
        /// The line's length in bytes.
        size: usize,
        /// The maximum line length in bytes.
        limit: usize,
    },
    /// The server process exited before the connection was set up: its
    /// exit status and the last lines it wrote to stderr, which usually
    /// say why.
    ServerExited {
        /// How the process ended (`None` if that could not be learned).
        status: Option<std::process::ExitStatus>,
        /// The last lines of its stderr, oldest first (at most 10).
        stderr: Vec<String>,
    },
}

/// The `data.transport` of an error the client makes up for a request
/// whose exchange ended without the server's answer (over HTTP: refused,
/// broken, a stream that ended first): see
/// [`Error::is_transport_failure`].
pub(crate) const NO_ANSWER: &str = "no answer from the server";

impl Error {
    /// Whether the server never answered: the client made this error up
    /// because the transport failed first (over Streamable HTTP a
    /// connection refused or broken, a status that refused the request
    /// without a JSON-RPC error, a stream that ended without the answer).
    /// It is an [`Error::Rpc`] (`-32603`) whose `data` says so,
    /// `{"transport": "no answer from the server"}`, and no wire hook saw
    /// it: the server did not send it.
    pub fn is_transport_failure(&self) -> bool {
        matches!(self, Error::Rpc(e)
            if e.data.as_ref().is_some_and(|data| data["transport"] == NO_ANSWER))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The peer's message may span lines (a traceback): an error
            // is one line.
            Error::Rpc(e) => write!(
                f,
                "the peer answered with an error: {} ({})",
                one_line(&e.message),
                e.code
            ),
            Error::Io(e) => write!(f, "i/o failed: {e}"),
            Error::Json(e) => write!(f, "invalid json: {e}"),
            Error::Timeout => f.write_str("no answer within the timeout"),
            Error::Cancelled => f.write_str("the request was cancelled"),
            Error::TaskCancelled {
                task_id,
                status_message,
            } => {
                write!(f, "task {task_id} was cancelled")?;
                match status_message {
                    Some(message) => write!(f, ": {message}"),
                    None => Ok(()),
                }
            }
            Error::Disconnected => f.write_str("the connection closed"),
            Error::Protocol(what) => write!(f, "protocol error: {}", one_line(what)),
            Error::MessageTooLarge { size, limit } => write!(
                f,
                "the answer is a message of {size} bytes, over the maximum line length of {limit} bytes"
            ),
            Error::ServerExited { status, stderr } => {
                match status {
                    Some(status) => write!(f, "the server exited during start-up ({status})")?,
                    None => f.write_str("the server exited during start-up")?,
                }
                f.write_str(&stderr_ending(stderr))
            }
        }
    }
}

/// `text` on one line: its lines trimmed, blank ones dropped, the rest
/// joined with ` | ` (as [`stderr_ending`] joins a server's last lines).
pub(crate) fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return text.into();
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" | ").into()
}

/// The last three non-blank lines of a server's stderr, on one line, to
/// end a message with (empty when there are none).
pub(crate) fn stderr_ending(stderr: &[String]) -> String {
    let last: Vec<&str> = stderr
        .iter()
        .map(|line| line.trim())
        .filter(|line| !line.is_empty())
        .collect();
    match last.len() {
        0 => String::new(),
        n => format!(
            "; its stderr ended with: {}",
            last[n.saturating_sub(3)..].join(" | ")
        ),
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Rpc(e) => Some(e),
            Error::Io(e) => Some(e),
            Error::Json(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error::Json(e)
    }
}

impl From<ErrorObject> for Error {
    fn from(e: ErrorObject) -> Error {
        Error::Rpc(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_one_line_whatever_the_peer_wrote() {
        let e = Error::Rpc(ErrorObject::new(
            -32603,
            "Traceback (most recent call last):\n  File \"s.py\", line 3\nValueError: bad\n",
        ));
        assert_eq!(
            e.to_string(),
            "the peer answered with an error: Traceback (most recent call last): | File \"s.py\", line 3 | ValueError: bad (-32603)"
        );
        let e = Error::Protocol("first\r\nsecond".into());
        assert_eq!(e.to_string(), "protocol error: first | second");
    }
}
