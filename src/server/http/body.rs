//! A POST's response body as a connection's output: [`Body`] is the
//! writer of lines a `ConnHandle` writes to (`conn::Writer::Lines`), told
//! what each line is (`LineKind`: the response, with its error code, or a
//! message), and it turns them into an HTTP response without reading them
//! again.
//!
//! JSON or SSE is decided by the first line, so nothing has to be guessed
//! before the handler runs (spec 2026-07-28 basic/transports/streamable-http,
//! "Sending Messages": the server chooses per request):
//!
//! - the first line is the response (an inline handler, an error, a
//!   quick pooled one): `application/json`, with `Content-Length`, and a
//!   status from its error code (`404` for `-32601`, `400` for a
//!   malformed request, a header mismatch, a missing capability or an
//!   unsupported version, `200` otherwise);
//! - the first line is a notification (progress, a log message, a
//!   subscription's acknowledgment), or the request has sent nothing for
//!   a keep-alive interval: `text/event-stream`, one `data:` event per
//!   line, the response last, the stream ended after it. A client whose
//!   `Accept` lacks `text/event-stream` gets the response alone.
//!
//! The body is given whole lines only, so a keep-alive comment never lands
//! inside an event. After the response, or once the request is cancelled,
//! nothing more is written.

use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::http::{write_chunk, write_last_chunk, write_response, write_stream_head};
use crate::jsonrpc::error_code;
use crate::server::conn::{LineKind, LineWriter};

/// The response of one POST, shared by the connection's output (the
/// writer) and the thread that serves the POST.
#[derive(Clone)]
pub(crate) struct Body(Arc<(Mutex<State>, Condvar)>);

/// How the response goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Nothing written yet.
    Undecided,
    /// Headers sent: `text/event-stream`.
    Events,
    /// The response is complete (or was never to be written).
    Done,
}

struct State {
    socket: TcpStream,
    mode: Mode,
    /// The client accepts `text/event-stream`.
    events: bool,
    /// HTTP/1.1: a stream is chunked (HTTP/1.0: it ends when the
    /// connection closes).
    chunked: bool,
    keep_alive: bool,
    /// Headers every response of this POST carries.
    headers: Vec<(&'static str, String)>,
    /// A write to the socket failed: the client is gone.
    failed: bool,
    /// Lines held back until [`Body::release`].
    held: Option<Vec<(LineKind, Vec<u8>)>>,
    /// A client that goes away does not end the request (a legacy POST,
    /// see [`Body::outlive_client`]).
    outlives_client: bool,
    /// The client went away: what is written goes nowhere, and the
    /// response is complete when the reply comes.
    detached: bool,
}

impl Body {
    /// The body of a POST answered on `socket`.
    pub fn new(socket: TcpStream, events: bool, http10: bool, keep_alive: bool) -> Body {
        let state = Mutex::new(State {
            socket,
            mode: Mode::Undecided,
            events,
            chunked: !http10,
            keep_alive: keep_alive && !http10,
            headers: Vec::new(),
            failed: false,
            held: None,
            outlives_client: false,
            detached: false,
        });
        Body(Arc::new((state, Condvar::new())))
    }

    /// Whether the client takes an event stream: only then can the
    /// server's own requests reach it (legacy sessions, see `sessions`).
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    pub fn streams(&self) -> bool {
        self.lock().events
    }

    /// Whether a notification written now would reach the client: it
    /// takes an event stream, and the response is not over.
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    pub fn takes_events(&self) -> bool {
        let state = self.lock();
        state.events && !state.is_done() && !state.detached
    }

    /// Holds back what the connection writes until [`Body::release`]: an
    /// `initialize`'s answer waits until its session is stored, so the
    /// client's next POST finds it.
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    pub fn hold(&self) {
        self.lock().held.get_or_insert_with(Vec::new);
    }

    /// Writes what [`Body::hold`] held back, and from here on writes at
    /// once.
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    pub fn release(&self) {
        let mut state = self.lock();
        for (kind, line) in state.held.take().unwrap_or_default() {
            state.line(kind, &line);
        }
        self.wake_if_done(state);
    }

    /// The request was cancelled by the client's `notifications/cancelled`
    /// or the end of its session (a legacy session, see `sessions`): the
    /// response ends without a reply (2025-11-25 basic/utilities/cancellation: none is sent). An
    /// event stream ends with its last chunk; a response not begun is sent
    /// as an empty stream when the client takes one, and otherwise the
    /// connection closes without one.
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    pub fn end_unanswered(&self) {
        let mut state = self.lock();
        state.held = None;
        match state.mode {
            Mode::Done => return,
            Mode::Undecided if !state.events => state.keep_alive = false,
            Mode::Undecided | Mode::Events => {
                if state.mode == Mode::Undecided {
                    state.start_events();
                }
                let mut out = Vec::with_capacity(8);
                write_last_chunk(&mut out, state.chunked);
                state.send(&out);
            }
        }
        state.mode = Mode::Done;
        self.wake_if_done(state);
    }

    /// The request goes on when its client goes away (2025-11-25
    /// basic/transports: a disconnection "SHOULD NOT be interpreted as the
    /// client cancelling its request"): a failed write or a closed socket
    /// detaches the body ([`Body::detach`]) instead of failing the
    /// connection, whose request then runs to its end.
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    pub fn outlive_client(&self) {
        self.lock().outlives_client = true;
    }

    /// Whether the request goes on without its client.
    pub fn outlives_client(&self) -> bool {
        self.lock().outlives_client
    }

    /// The client went away from a request that goes on: from here on
    /// nothing is written, and the response is complete when the reply
    /// comes (or the request is cancelled); the connection then closes.
    pub fn detach(&self) {
        self.lock().detached = true;
    }

    /// Adds a header to the response (before its first line).
    pub fn header(&self, name: &'static str, value: String) {
        self.lock().headers.push((name, value));
    }

    /// Waits until the response is complete (or will never be) or
    /// `timeout` passed; returns whether it is.
    pub fn wait_done(&self, timeout: Duration) -> bool {
        let state = self.lock();
        let (state, _) = (self.0.1)
            .wait_timeout_while(state, timeout, |state| !state.is_done())
            .unwrap_or_else(PoisonError::into_inner);
        state.is_done()
    }

    /// Whether the connection may carry another request after this
    /// response.
    pub fn keeps_alive(&self) -> bool {
        let state = self.lock();
        state.keep_alive
            && !state.failed
            && !state.detached
            && (state.mode != Mode::Events || state.chunked)
    }

    /// The request was cancelled (the client closed its stream): nothing
    /// more is written.
    pub fn cancel(&self) {
        let mut state = self.lock();
        state.mode = Mode::Done;
        self.wake_if_done(state);
    }

    /// A keep-alive comment on a quiet stream; a request that has sent
    /// nothing yet becomes a stream for it (when the client accepts one).
    pub fn keep_alive(&self) {
        let mut state = self.lock();
        if state.mode == Mode::Undecided && state.events {
            state.start_events();
        }
        if state.mode == Mode::Events {
            let mut out = Vec::with_capacity(16);
            write_chunk(&mut out, b":\n\n", state.chunked);
            state.send(&out);
        }
        self.wake_if_done(state);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets go of the state, waking the thread waiting for the response
    /// ([`Body::wait_done`]) if it is complete.
    fn wake_if_done(&self, state: MutexGuard<'_, State>) {
        let done = state.is_done();
        drop(state);
        if done {
            self.0.1.notify_all();
        }
    }
}

impl LineWriter for Body {
    fn line(&mut self, kind: LineKind, line: &[u8]) -> io::Result<()> {
        let mut state = self.lock();
        state.line(kind, line);
        let failed = state.failed;
        self.wake_if_done(state);
        if failed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        Ok(())
    }
}

impl State {
    fn is_done(&self) -> bool {
        self.mode == Mode::Done || self.failed
    }

    /// One whole message from the connection, which is `kind`.
    fn line(&mut self, kind: LineKind, line: &[u8]) {
        if self.mode == Mode::Done || self.failed {
            return;
        }
        if let Some(held) = &mut self.held {
            held.push((kind, line.to_vec()));
            return;
        }
        let (is_response, code) = match kind {
            LineKind::Response { error } => (true, error),
            LineKind::Message => (false, None),
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
                self.send(&out);
            }
            (Mode::Undecided, false) if !self.events => {
                // The client takes JSON only: the response alone.
            }
            (Mode::Undecided | Mode::Events, _) => {
                if self.mode == Mode::Undecided {
                    self.start_events();
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
                self.send(&out);
            }
            (Mode::Done, _) => {}
        }
    }

    /// Sends the head of an event stream.
    fn start_events(&mut self) {
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
        self.send(&out);
    }

    fn send(&mut self, bytes: &[u8]) {
        if self.failed || self.detached || self.socket.write_all(bytes).is_ok() {
            return;
        }
        match self.outlives_client {
            true => self.detached = true,
            false => self.failed = true,
        }
    }
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
