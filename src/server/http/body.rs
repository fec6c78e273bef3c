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
//! inside an event. After the response, once the request is cancelled, or
//! past the end of a stream opened with a token that expires
//! ([`Body::end_at`]), nothing more is written.
//!
//! Who writes to the socket: a writer (a handler's thread, a publisher)
//! only ever sends what the socket takes at once (`MSG_DONTWAIT`) and
//! leaves the rest, in order, to the thread that serves the request, which
//! writes it in [`Body::wait_done`] and [`Body::complete`] with the socket's
//! write timeout (`HttpOptions::write_timeout`), one thread at a time (a
//! handler waiting for room writes it too: [`Body::wait_for_room`]; the
//! timeout bounds each `write(2)`, so a client that takes a little now and
//! then is dropped later than one that takes nothing). So a client that stops
//! reading holds up no thread but its own: a publisher reaching a hundred
//! stuck listeners returns at once, and each listener is dropped by its own
//! thread after one write timeout, all of them at the same time.
//!
//! No writer waits in [`LineWriter::line`], so none holds up the
//! connection's send, which the other writers wait for. What a client
//! that reads nothing costs is bounded by [`UNSENT_LIMIT`] twice over:
//! - published events ([`LineKind::Event`]) waiting past it let the client
//!   go, as one that took nothing for the write timeout is: a publisher
//!   never waits on a client (Redis treats a pub/sub client past its output
//!   limit the same way), and the client learns it missed events from its
//!   stream's end, not from a gap;
//! - a request's own notifications (progress, logs) wait for room once sent
//!   ([`Body::wait_for_room`], through `LineWriter::room`, which the
//!   connection calls after the send): the backpressure a handler that
//!   writes faster than its client reads meets, bounded by the write
//!   timeout. A reply is one line, held whole.

use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::http::{write_chunk, write_last_chunk};
use crate::server::conn::{LineKind, LineWriter, Room};

mod state;

pub(crate) use state::status_for;
use state::{Mode, State};

/// Bytes of events, and bytes of a request's own notifications, a stream
/// may hold for a client that does not take them (see the module docs):
/// 256 KiB each. With a batch being written as much again, a stream holds
/// about 1 MiB at most (64 MiB at the default cap of 64 connections),
/// besides a reply, held whole.
pub(crate) const UNSENT_LIMIT: usize = 256 * 1024;

/// The response of one POST, shared by the connection's output (the
/// writer) and the thread that serves the POST.
#[derive(Clone)]
pub(crate) struct Body(Arc<Shared>);

struct Shared {
    state: Mutex<State>,
    /// Signalled when the response is complete, when bytes wait to be
    /// written, and when they were.
    changed: Condvar,
    /// The client's socket: written under the state's lock only without
    /// waiting (`State::send`), else without the lock by one thread at a
    /// time (`Body::write_unsent`).
    socket: TcpStream,
}

impl Body {
    /// The body of a POST answered on `socket`.
    pub fn new(socket: TcpStream, events: bool, http10: bool, keep_alive: bool) -> Body {
        let state = Mutex::new(State {
            mode: Mode::Undecided,
            events,
            chunked: !http10,
            keep_alive: keep_alive && !http10,
            headers: Vec::new(),
            failed: false,
            held: None,
            outlives_client: false,
            detached: false,
            unsent: Vec::new(),
            unsent_events: 0,
            writing: false,
            ends_at: None,
        });
        Body(Arc::new(Shared {
            state,
            changed: Condvar::new(),
            socket,
        }))
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
        // Not `is_done`: a reply complete and still being written takes
        // nothing more either.
        state.events && state.mode != Mode::Done && !state.failed && !state.detached
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
            state.line(&self.0.socket, kind, &line);
        }
        self.let_go(state);
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
                    state.start_events(&self.0.socket);
                }
                let mut out = Vec::with_capacity(8);
                write_last_chunk(&mut out, state.chunked);
                state.send(&self.0.socket, &out);
            }
        }
        state.mode = Mode::Done;
        self.let_go(state);
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
        let mut state = self.lock();
        state.detached = true;
        state.drop_unsent();
        self.let_go(state);
    }

    /// The stream ends at `at`, the expiry of the token it was opened with
    /// (a listen, a legacy session's GET stream): a line written from then
    /// on is dropped, whichever thread writes it and however late the
    /// thread serving the stream notices ([`Body::expired`]), so that no
    /// event reaches a client whose token has expired.
    pub fn end_at(&self, at: SystemTime) {
        self.lock().ends_at = Some(at);
    }

    /// Whether the stream's end ([`Body::end_at`]) has come: the thread
    /// serving it then cuts it (`Exchange::watch`).
    pub fn expired(&self) -> bool {
        self.lock().is_expired()
    }

    /// Adds a header to the response (before its first line).
    pub fn header(&self, name: &'static str, value: String) {
        self.lock().headers.push((name, value));
    }

    /// Waits until the response is complete and sent (or will never be)
    /// or `timeout` passed, writing what writers left unsent as it comes;
    /// returns whether the response is complete. Only the thread serving
    /// the request calls it (see the module docs).
    pub fn wait_done(&self, timeout: Duration) -> bool {
        let until = crate::deadline::from_now(timeout);
        let mut state = self.lock();
        loop {
            if state.has_unsent() {
                state = self.write_unsent(state);
                continue;
            }
            let now = Instant::now();
            if state.is_done() || now >= until {
                return state.is_done();
            }
            state = (self.0.changed)
                .wait_timeout_while(state, until - now, |state| {
                    !state.is_done() && (!state.has_unsent() || state.writing)
                })
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Writes what is still unsent (each write bounded by the socket's
    /// write timeout), then says whether the connection may carry another
    /// request after this response. The thread serving the request calls
    /// it last.
    pub fn complete(&self) -> bool {
        let mut state = self.lock();
        while state.has_unsent() || state.writing {
            state = self.write_unsent(state);
        }
        let keeps_alive = state.keep_alive
            && !state.failed
            && !state.detached
            && (state.mode != Mode::Events || state.chunked);
        // Nothing written late (a publish that found this connection just
        // before it left) may land in the connection's next response.
        state.mode = Mode::Done;
        keeps_alive
    }

    /// The request was cancelled (the client closed its stream): nothing
    /// more is written.
    pub fn cancel(&self) {
        let mut state = self.lock();
        state.mode = Mode::Done;
        state.drop_unsent();
        self.let_go(state);
    }

    /// A keep-alive comment on a quiet stream; a request that has sent
    /// nothing yet becomes a stream for it (when the client accepts one).
    pub fn keep_alive(&self) {
        let mut state = self.lock();
        if state.mode == Mode::Undecided && state.events {
            state.start_events(&self.0.socket);
        }
        if state.mode == Mode::Events {
            let mut out = Vec::with_capacity(16);
            write_chunk(&mut out, b":\n\n", state.chunked);
            state.send(&self.0.socket, &out);
        }
        self.let_go(state);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets go of the state, waking the serving thread
    /// ([`Body::wait_done`]) when the response is complete or bytes wait
    /// for it to write.
    fn let_go(&self, state: MutexGuard<'_, State>) {
        let wake = state.is_done() || state.has_unsent();
        drop(state);
        if wake {
            self.0.changed.notify_all();
        }
    }

    /// Waits until at most [`UNSENT_LIMIT`] bytes wait for the client, and
    /// no event (or the client is gone), writing them itself when nobody
    /// is: a request's own notifications wait here once sent (see the
    /// module docs). Events go first: a handler that notifies as fast as
    /// its client reads does not push the events the client subscribed to
    /// past their limit, which only a client slower than the events alone
    /// reaches.
    pub fn wait_for_room(&self) {
        let mut state = self.lock();
        while state.unsent.len() > UNSENT_LIMIT || state.unsent_events > 0 {
            state = self.write_unsent(state);
        }
    }

    /// Writes what waits, without the lock, and wakes the writers that
    /// wait for room; or, when another thread is writing, waits for that
    /// write to end. The serving thread calls it (a client slow to read
    /// holds up that thread only), and a writer waiting for room.
    fn write_unsent<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        if state.writing {
            return (self.0.changed)
                .wait_while(state, |state| state.writing)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.unsent_events = 0;
        let bytes = std::mem::take(&mut state.unsent);
        state.writing = true;
        drop(state);
        let written = (&self.0.socket).write_all(&bytes);
        let mut state = self.lock();
        state.writing = false;
        if written.is_err() {
            state.client_lost();
        }
        self.0.changed.notify_all();
        state
    }
}

impl LineWriter for Body {
    /// Sends what the socket takes at once and leaves the rest to the
    /// serving thread; never waits. Past [`UNSENT_LIMIT`] bytes of events
    /// waiting, an event lets the client go (see the module docs).
    fn line(&mut self, kind: LineKind, line: &[u8]) -> io::Result<()> {
        let mut state = self.lock();
        let before = state.unsent.len();
        state.line(&self.0.socket, kind, line);
        if kind == LineKind::Event {
            state.unsent_events += state.unsent.len() - before;
            if state.unsent_events > UNSENT_LIMIT {
                state.client_lost();
            }
        }
        let failed = state.failed;
        self.let_go(state);
        if failed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        Ok(())
    }

    /// A request's own notifications wait for room once sent.
    fn room(&self) -> Option<Room> {
        let body = self.clone();
        Some(Box::new(move || body.wait_for_room()))
    }
}
