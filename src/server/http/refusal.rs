//! [`Refusal`]: how a request is turned away before it is served (by
//! `guard`'s checks, or `auth`'s): a status, a one-line reason, headers;
//! and the answer that turns a request away and closes the connection
//! ([`refuse`]), read by the client before the close ([`close_gently`]).

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::http::{write_head_answer, write_response};
use crate::jsonrpc::{ErrorObject, encode_error, error_code};

/// A refusal: the status, the reason, and headers to send with it.
pub(crate) struct Refusal {
    pub status: u16,
    pub message: String,
    pub headers: Vec<(&'static str, String)>,
    /// The JSON-RPC error of its body: `-32600`, or `-32020` for a header
    /// mirrored from the body that is malformed (`guard::single_fields`).
    pub mismatch: bool,
}

impl Refusal {
    pub(crate) fn new(status: u16, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
            headers: Vec::new(),
            mismatch: false,
        }
    }

    /// The JSON-RPC error of the refusal's body.
    pub fn error(&self) -> ErrorObject {
        match self.mismatch {
            true => ErrorObject::new(
                error_code::HEADER_MISMATCH,
                format!("Header mismatch: {}", self.message),
            ),
            false => ErrorObject::invalid_request(&self.message),
        }
    }
}

/// Answers `status` with a JSON-RPC error without id, and closes.
pub(super) fn refuse(socket: &TcpStream, status: u16, message: &str, headers: &[(&str, &str)]) {
    refuse_with(
        socket,
        status,
        &ErrorObject::invalid_request(message),
        headers,
        true,
    );
}

/// [`refuse`] with `error` as the body; without it, nor a
/// `Content-Length`, when the answer may carry no `content` (one to a
/// `HEAD`: `write_head_answer`).
pub(super) fn refuse_with(
    socket: &TcpStream,
    status: u16,
    error: &ErrorObject,
    headers: &[(&str, &str)],
    content: bool,
) {
    let mut all = headers.to_vec();
    all.push(("Content-Type", "application/json"));
    let mut out = socket;
    if content {
        let mut body = Vec::with_capacity(128);
        encode_error(&mut body, None, error);
        let _ = write_response(&mut out, status, &all, &body, false);
    } else {
        let _ = write_head_answer(&mut out, status, &all, false);
    }
    close_gently(socket, Duration::from_millis(200));
}

/// Closes after an answer. Closing with unread input would reset the
/// connection, and the client might lose the answer: what it still sends
/// is read and dropped, for at most `linger` in all and 1 MiB. In all, not
/// between reads: a client that trickles would otherwise hold its
/// connection's thread for as long as it likes.
pub(super) fn close_gently(socket: &TcpStream, linger: Duration) {
    let _ = socket.shutdown(std::net::Shutdown::Write);
    let until = crate::deadline::from_now(linger);
    let mut sink = [0u8; 8192];
    let mut left: usize = 1024 * 1024;
    let mut input = socket;
    loop {
        let wait = until.saturating_duration_since(Instant::now());
        if wait.is_zero() || socket.set_read_timeout(Some(wait)).is_err() {
            return;
        }
        match input.read(&mut sink) {
            Ok(n @ 1..) if n <= left => left -= n,
            _ => return,
        }
    }
}
