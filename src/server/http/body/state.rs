//! What a response has written and holds ([`State`]): the framing, JSON
//! (its status from its error code, [`status_for`]) or SSE as the first
//! line decides, whole events only; and the sends to the socket, which
//! take what it has room for at once and leave the rest, in order, for
//! the thread serving the request to write ([`State::send`]; see the
//! module docs of `body`).

use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::SystemTime;

use nix::sys::socket::{MsgFlags, send};

use crate::http::{write_chunk, write_last_chunk, write_response, write_stream_head};
use crate::jsonrpc::error_code;
use crate::server::conn::LineKind;

/// How the response goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Nothing written yet.
    Undecided,
    /// Headers sent: `text/event-stream`.
    Events,
    /// The response is complete (or was never to be written).
    Done,
}

/// A response's state, under its body's lock.
pub(super) struct State {
    pub(super) mode: Mode,
    /// The client accepts `text/event-stream`.
    pub(super) events: bool,
    /// HTTP/1.1: a stream is chunked (HTTP/1.0: it ends when the
    /// connection closes).
    pub(super) chunked: bool,
    pub(super) keep_alive: bool,
    /// Headers every response of this POST carries.
    pub(super) headers: Vec<(&'static str, String)>,
    /// A write to the socket failed: the client is gone.
    pub(super) failed: bool,
    /// Lines held back until `Body::release`.
    pub(super) held: Option<Vec<(LineKind, Vec<u8>)>>,
    /// A client that goes away does not end the request (a legacy POST,
    /// see `Body::outlive_client`).
    pub(super) outlives_client: bool,
    /// The client went away: what is written goes nowhere, and the
    /// response is complete when the reply comes.
    pub(super) detached: bool,
    /// Bytes the socket did not take at once, in order, for the serving
    /// thread to write.
    pub(super) unsent: Vec<u8>,
    /// How many of `unsent`'s bytes are published events.
    pub(super) unsent_events: usize,
    /// The serving thread is writing bytes taken from `unsent`: nobody
    /// else writes to the socket until it is done.
    pub(super) writing: bool,
    /// When the stream ends: the expiry of the token it was opened with
    /// (see `Body::end_at`).
    pub(super) ends_at: Option<SystemTime>,
}

impl State {
    pub(super) fn is_done(&self) -> bool {
        (self.mode == Mode::Done && !self.has_unsent() && !self.writing) || self.failed
    }

    /// Bytes wait for the serving thread to write them.
    pub(super) fn has_unsent(&self) -> bool {
        !self.unsent.is_empty()
    }

    /// Whether the stream's end (`Body::end_at`) has come.
    pub(super) fn is_expired(&self) -> bool {
        self.ends_at.is_some_and(|at| SystemTime::now() >= at)
    }

    /// One whole message from the connection, which is `kind`.
    pub(super) fn line(&mut self, socket: &TcpStream, kind: LineKind, line: &[u8]) {
        if self.mode == Mode::Done || self.failed || self.is_expired() {
            return;
        }
        if let Some(held) = &mut self.held {
            held.push((kind, line.to_vec()));
            return;
        }
        let (is_response, code) = match kind {
            LineKind::Response { error } => (true, error),
            LineKind::Message | LineKind::Event => (false, None),
        };
        match (self.mode, is_response) {
            (Mode::Undecided, true) => {
                let mut headers: Vec<(&str, &str)> =
                    self.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
                headers.push(("Content-Type", "application/json"));
                let status = status_for(code);
                let mut out = Vec::with_capacity(line.len() + 256);
                // Into a Vec: cannot fail.
                let _ = write_response(&mut out, status, &headers, line, self.keep_alive);
                self.mode = Mode::Done;
                self.send(socket, &out);
            }
            (Mode::Undecided, false) if !self.events => {
                // The client takes JSON only: the response alone.
            }
            (Mode::Undecided | Mode::Events, _) => {
                if self.mode == Mode::Undecided {
                    self.start_events(socket);
                }
                let mut out = Vec::with_capacity(line.len() + 32);
                let mut event = Vec::with_capacity(line.len() + 24);
                event.extend_from_slice(b"event: message\ndata: ");
                event.extend_from_slice(line);
                event.extend_from_slice(b"\n\n");
                write_chunk(&mut out, &event, self.chunked);
                if is_response {
                    write_last_chunk(&mut out, self.chunked);
                    self.mode = Mode::Done;
                }
                self.send(socket, &out);
            }
            (Mode::Done, _) => {}
        }
    }

    /// Sends the head of an event stream.
    pub(super) fn start_events(&mut self, socket: &TcpStream) {
        let mut headers: Vec<(&str, &str)> =
            self.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        headers.push(("Content-Type", "text/event-stream"));
        headers.push(("Cache-Control", "no-cache"));
        // Spec 2026-07-28 basic/transports/streamable-http: proxies must
        // not buffer the stream.
        headers.push(("X-Accel-Buffering", "no"));
        let mut out = Vec::with_capacity(256);
        write_stream_head(&mut out, 200, &headers, self.chunked);
        self.mode = Mode::Events;
        self.send(socket, &out);
    }

    /// Sends `bytes` after what waits: what the socket takes at once now,
    /// the rest left in `unsent` for the serving thread. Never waits.
    pub(super) fn send(&mut self, socket: &TcpStream, bytes: &[u8]) {
        if self.failed || self.detached {
            return;
        }
        let mut rest = bytes;
        if !self.writing && self.unsent.is_empty() {
            while !rest.is_empty() {
                match send(socket.as_raw_fd(), rest, at_once()) {
                    Ok(n) => rest = &rest[n..],
                    Err(nix::errno::Errno::EINTR) => {}
                    Err(nix::errno::Errno::EAGAIN) => break,
                    Err(_) => return self.client_lost(),
                }
            }
        }
        self.unsent.extend_from_slice(rest);
    }

    /// Drops what waits for a client that will not take it (gone, or its
    /// request cancelled).
    pub(super) fn drop_unsent(&mut self) {
        self.unsent = Vec::new();
        self.unsent_events = 0;
    }

    /// A write failed: the client is gone. A request that outlives its
    /// client goes on with nothing more written; any other ends.
    pub(super) fn client_lost(&mut self) {
        self.drop_unsent();
        match self.outlives_client {
            true => self.detached = true,
            false => self.failed = true,
        }
    }
}

/// A send that takes what the socket has room for and returns
/// (`EAGAIN` when it has none), without raising `SIGPIPE` where the flag
/// exists (elsewhere the standard library's own writes rely on the same
/// process setting the application chose).
fn at_once() -> MsgFlags {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    return MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    return MsgFlags::MSG_DONTWAIT;
}

/// The HTTP status of a JSON response, from its error code (spec
/// 2026-07-28 basic/transports/streamable-http: `404` for an unknown
/// method, `400` for an unsupported version or a header mismatch; a
/// request the server cannot read at all is `400` too).
pub(crate) fn status_for(code: Option<i32>) -> u16 {
    match code {
        Some(error_code::METHOD_NOT_FOUND) => 404,
        Some(
            error_code::PARSE_ERROR
            | error_code::INVALID_REQUEST
            | error_code::HEADER_MISMATCH
            | error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | error_code::UNSUPPORTED_PROTOCOL_VERSION,
        ) => 400,
        _ => 200,
    }
}
