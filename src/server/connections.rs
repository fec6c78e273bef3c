//! The connections a server is serving, as the rest of the server sees
//! them: how a published change or a stop reaches each one's owner.
//!
//! Published changes go into every connection's inbox. Application threads
//! take a publish credit for each (at most `PUBLISH_CREDITS` wait per
//! connection, however fast they come); an owner thread never waits on an
//! inbox, and what an inline handler publishes for its own connection is
//! captured (see `inline`) and applied before its reply.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crossbeam_channel::Sender;

use crate::server::event::{Event, ServerEvent};

/// One connection being served.
#[derive(Clone)]
pub(crate) struct ConnectionHandle {
    pub key: u64,
    pub inbox: Sender<Event>,
    /// Taken by application threads for each event they publish, given
    /// back by the owner as it handles the event: at most
    /// `PUBLISH_CREDITS` events wait in the inbox, however fast they come.
    pub publish_credits: Sender<()>,
}

/// How many published events may wait for one connection before a
/// publishing thread blocks until the owner catches up.
pub(crate) const PUBLISH_CREDITS: usize = 1024;

/// Every connection a server is serving, and whether it was stopped.
#[derive(Default)]
pub(crate) struct Connections {
    list: Mutex<Vec<ConnectionHandle>>,
    next_key: AtomicU64,
    stopped: AtomicBool,
}

impl Connections {
    /// A key for a new connection.
    pub fn next_key(&self) -> u64 {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a connection being served; `disconnect` removes it.
    pub fn connect(&self, handle: ConnectionHandle) {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(handle);
    }

    /// Forgets the connection with `key`: it is finishing.
    pub fn disconnect(&self, key: u64) {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|c| c.key != key);
    }

    /// The connections being served right now. A copy, so that nobody
    /// holds the lock while sending (a publisher may block on credits).
    fn snapshot(&self) -> Vec<ConnectionHandle> {
        self.list.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the server was stopped.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Stops the server: every connection being served gets a stop, and
    /// a later one stops at once.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        for connection in self.snapshot() {
            // A connection that is finishing has dropped its inbox already.
            let _ = connection.inbox.send(Event::Stop);
        }
    }

    /// Sends a published change to every connection.
    pub fn publish(&self, event: ServerEvent) {
        published::mark();
        for connection in self.snapshot() {
            if inline::capture(connection.key, &event) {
                // Published by an inline handler of this very connection:
                // its owner applies it as soon as the handler returns.
                continue;
            }
            // An owner thread must never wait on an inbox (its own or, when
            // the owner of another connection blocks writing, someone
            // else's); every other thread takes a credit and may wait.
            let credited = !inline::is_running() && connection.publish_credits.send(()).is_ok();
            // A connection that is finishing has dropped its inbox already.
            let _ = connection.inbox.send(Event::Publish {
                event: event.clone(),
                credited,
            });
        }
    }
}

/// Events published by an inline handler, which runs on its connection's
/// owner thread.
///
/// Why a thread-local: the owner must never wait on its own inbox, and an
/// event an inline handler publishes should take effect before anything
/// the client sends later is read (an `end_listen` followed by a new
/// listen must not close the new one). So while an inline handler runs,
/// the owner marks its thread, and events published for that connection
/// are collected here instead of queued; the owner applies them the moment
/// the handler returns, before its reply.
pub(crate) mod inline {
    use std::cell::RefCell;

    use crate::server::event::ServerEvent;

    thread_local! {
        static RUNNING: RefCell<Option<(u64, Vec<ServerEvent>)>> = const { RefCell::new(None) };
    }

    /// Runs an inline handler for connection `key`; returns its result and
    /// the events it published for that connection.
    pub fn run<R>(key: u64, handler: impl FnOnce() -> R) -> (R, Vec<ServerEvent>) {
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                RUNNING.with(|running| running.borrow_mut().take());
            }
        }
        RUNNING.with(|running| *running.borrow_mut() = Some((key, Vec::new())));
        let reset = Reset;
        let res = handler();
        let events = RUNNING
            .with(|running| running.borrow_mut().take())
            .map(|(_, events)| events)
            .unwrap_or_default();
        drop(reset);
        (res, events)
    }

    /// Whether an inline handler runs on this thread.
    pub fn is_running() -> bool {
        RUNNING.with(|running| running.borrow().is_some())
    }

    /// Collects `event` if an inline handler of connection `key` runs on
    /// this thread.
    pub fn capture(key: u64, event: &ServerEvent) -> bool {
        RUNNING.with(|running| match &mut *running.borrow_mut() {
            Some((running_key, events)) if *running_key == key => {
                events.push(event.clone());
                true
            }
            _ => false,
        })
    }
}

/// Whether this thread published an event: a pool worker asks after each
/// handler, so that what a pooled handler published reaches the client
/// before its reply (the worker then hands the reply to the owner, which
/// writes it after the published events, in inbox order).
pub(crate) mod published {
    use std::cell::Cell;

    thread_local! {
        static PUBLISHED: Cell<bool> = const { Cell::new(false) };
    }

    /// Notes that this thread published an event.
    pub fn mark() {
        PUBLISHED.with(|p| p.set(true));
    }

    /// Whether this thread published an event since the last call.
    pub fn take() -> bool {
        PUBLISHED.with(|p| p.replace(false))
    }
}
