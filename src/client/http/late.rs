//! A request's stream after its give-up: closed at once (the cancellation,
//! spec 2026-07-28 basic/transports/streamable-http "Cancellation"), or,
//! for a request whose caller still hears a late answer
//! (`Link::forget_but_hear`: a `tools/call` whose answer may be a task,
//! `PendingCall::cancel_late_task`), half-closed and read on.
//!
//! An answer the server wrote just as the close reached it crosses the
//! cancellation, as `notifications/cancelled` and an answer cross on
//! stdio; a stream shut both ways drops it unread, and a task it made runs
//! on, with nobody to poll or cancel it. So such a stream is only shut for
//! sending: a server that reads the connection while it answers sees its
//! end (its cancellation, as a close: ours, `serve_http`); one that
//! notices a client's going only when a write to it fails sees nothing
//! until the stream is let go, at most the request's timeout after the
//! give-up (the price of hearing the answer). Meanwhile the POST's worker
//! reads on until the answer (handed to the link, whose late hook cancels
//! the task), the stream's end, or the late entry's end (the request's
//! timeout from the give-up), when it is shut both ways. What it reads
//! starts nothing more (no new authorization, no re-listing and retry
//! after a `HeaderMismatch`: `Shared::post`). Its connection is not used
//! again. A request without a late hook is
//! shut both ways at once, as before.

use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use crossbeam_channel::{RecvTimeoutError, Sender};

use super::Shared;
use crate::jsonrpc::RequestId;
use crate::sync::lock;

/// The most given-up request streams one client holds open at once: past
/// it a give-up shuts its stream at once (its late answer, if any, is
/// lost, as with the link's `MAX_LATE`). Each costs a socket, the POST's
/// worker that reads it, and a thread that shuts it at its end: so at
/// most this many of each, and each for no longer than its request's
/// timeout after the give-up.
pub(super) const MAX_HELD: usize = 16;

/// A given-up request's stream, held open to hear its late answer.
pub(super) struct Held {
    socket: Arc<TcpStream>,
    /// Dropped when the POST is done with the stream: its watcher ends
    /// without shutting it.
    _done: Sender<()>,
}

impl Held {
    /// Shuts the stream both ways (the client closes).
    pub(super) fn shut(self) {
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

impl Shared {
    /// Takes request `id`'s stream out of `streams` (its cancellation: the
    /// POST then reports nothing) and closes it: both ways, or, when the
    /// link still hears the request's late answer and fewer than
    /// [`MAX_HELD`] are held, for sending only, read on until that ends
    /// (module docs). Taken out and held under `streams`' lock: the POST,
    /// which looks at both under it, never reuses a held connection nor
    /// misses letting it go ([`Shared::let_go`]).
    pub(super) fn close_stream(&self, id: &str) {
        let until = serde_json::from_str::<RequestId>(id)
            .ok()
            .and_then(|request| self.inbox()?.hears_late_until(&request));
        let mut streams = lock(&self.streams);
        let Some(Some(socket)) = streams.remove(id) else {
            return;
        };
        if let Some(until) = until
            && self.hold(id, &socket, until)
        {
            drop(streams);
            let _ = socket.shutdown(Shutdown::Write);
            return;
        }
        drop(streams);
        let _ = socket.shutdown(Shutdown::Both);
    }

    /// Holds `socket` as request `id`'s stream until `until`, when a
    /// thread shuts it unless the POST let it go before; `false` when
    /// [`MAX_HELD`] are held already or no thread could be started.
    fn hold(&self, id: &str, socket: &Arc<TcpStream>, until: Instant) -> bool {
        let mut held = lock(&self.held);
        if held.len() >= MAX_HELD || self.is_closed() {
            return false;
        }
        let (done, ended) = crossbeam_channel::bounded::<()>(0);
        let watched = Arc::clone(socket);
        let watcher = thread::Builder::new()
            .name("mcp-http-late".into())
            .spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = ended.recv_deadline(until) {
                    let _ = watched.shutdown(Shutdown::Both);
                }
            });
        if watcher.is_err() {
            return false;
        }
        let socket = Arc::clone(socket);
        held.insert(
            id.to_owned(),
            Held {
                socket,
                _done: done,
            },
        );
        true
    }

    /// Whether request `id`'s stream is held after its give-up (its
    /// connection, shut for sending, is not used again).
    pub(super) fn is_held(&self, id: &str) -> bool {
        lock(&self.held).contains_key(id)
    }

    /// The POST of request `id` is done with its stream: a held one's
    /// watcher ends.
    pub(super) fn let_go(&self, id: &str) {
        lock(&self.held).remove(id);
    }
}
