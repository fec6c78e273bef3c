//! A transport that carries one message at a time (Streamable HTTP, see
//! `client::http`), in place of a byte-stream pair and its two threads.
//!
//! Over a byte stream a link has a writer thread and a reader thread, and
//! a call crosses from its caller to the reader and back. A [`Carrier`]
//! takes each line from the caller as it is sent, and hands what the
//! server answers to the link itself, on whichever of its threads read it
//! ([`Inbox::deliver`], which routes the message as the reader would): a
//! call then crosses from its caller to the thread that reads its answer,
//! and back, and no line waits for a writer thread.

use std::sync::{Arc, Weak};

use crossbeam_channel::Sender;

use super::Link;
use crate::client::wire::WireDirection;
use crate::error::Error;
use crate::note_limiter::NoteLimiter;

/// A transport that sends one message at a time and hands what comes back
/// to the link's [`Inbox`].
pub(crate) trait Carrier: Send + Sync {
    /// Sends one message (its JSON text, no newline). Never waits on the
    /// server: what takes time goes on the carrier's threads, and a
    /// request's failure comes back through the inbox as its answer.
    /// `Err`: nothing will be sent any more (the client closed).
    fn send(&self, line: Vec<u8>) -> Result<(), Error>;

    /// The client is done with the server: nothing more is sent, what is
    /// under way ends, and with it the inbox (see [`Inbox`]).
    fn close(&self);

    /// How many messages sent wait for something before the server can
    /// have them (an HTTP request waiting for its authorization), if the
    /// carrier knows: the era probe waits for a server that has not had
    /// it (`Link::unread`).
    fn unread(&self) -> Option<usize> {
        None
    }
}

/// Where a carrier hands the messages the server sends. Cheap to clone:
/// each thread that reads the server holds one while it does. When the
/// last one goes (the carrier closed and its threads ended), the link's
/// reading has ended, as at the end of a byte stream's output: what still
/// waits fails, and the link's death watch fires (`Link::died`).
#[derive(Clone)]
pub(crate) struct Inbox(Arc<Reading>);

struct Reading {
    link: Weak<Link>,
    /// Dropped with the last inbox: `Link::wait_reader` sees the end.
    _reading: Sender<()>,
}

impl Inbox {
    pub(super) fn new(link: Weak<Link>, reading: Sender<()>) -> Inbox {
        Inbox(Arc::new(Reading {
            link,
            _reading: reading,
        }))
    }

    /// Routes one message from the server (its JSON text) as the link's
    /// reader routes a line, on this thread: its wire hook first. Nothing
    /// once the link is dead (`Link::fail_all`: after `close`, what still
    /// arrives reaches no hook of the application's). `notes` limits this
    /// thread's notes. Returns whether the link is alive.
    pub fn deliver(&self, message: &[u8], notes: &mut NoteLimiter) -> bool {
        let Some(link) = self.0.link.upgrade() else {
            return false;
        };
        if !link.is_alive() {
            return false;
        }
        if let Some(wire) = &link.wire {
            // A panic in it is caught: the message is still routed.
            let _ = (link.notes).guard("wire", || wire(WireDirection::Received, message));
        }
        link.route(message, notes);
        true
    }

    /// Until when the link still hears request `id`'s reply though its
    /// caller gave it up (`Link::forget_but_hear`), if it does.
    pub fn hears_late_until(&self, id: &crate::jsonrpc::RequestId) -> Option<std::time::Instant> {
        self.0.link.upgrade()?.hears_late_until(id)
    }

    /// Routes a message the client made up for a request the server never
    /// answered (its transport failed: [`Error::is_transport_failure`](crate::Error::is_transport_failure)),
    /// as [`Inbox::deliver`] does, but without the wire hook: the server
    /// did not send it, and `--wire` must not show it as received.
    pub fn made_up(&self, message: &[u8], notes: &mut NoteLimiter) -> bool {
        let Some(link) = self.0.link.upgrade() else {
            return false;
        };
        if !link.is_alive() {
            return false;
        }
        link.route(message, notes);
        true
    }
}

impl Drop for Reading {
    /// The last thread that read the server let go: the link's reading
    /// ended (see [`Inbox`]). A link already gone needs nothing.
    fn drop(&mut self) {
        if let Some(link) = self.link.upgrade() {
            link.fail_all();
            link.died();
        }
    }
}
