//! The connections a server is serving, as the rest of the server sees
//! them: where a published change and a stop go (and, through
//! `change_feed`, the server's other replicas).
//!
//! Publishing is synchronous: [`Connections::publish`] hands the event to
//! each connection in turn, which writes it under its own lock before the
//! call returns (see `conn`). So what a handler publishes reaches its
//! client before the handler's reply, from whatever thread it published.
//! The publisher does not send what it wrote: the pool does
//! (`conn::handle`, `Shared::send_in_background`), so a client that stops
//! reading holds up neither the other connections' events nor the handler
//! that published. Once more than a megabyte waits for that client, each
//! of its subscriptions keeps the latest event about each thing
//! (`Conn::publish`); only once more than a megabyte is held so does a
//! publisher wait for it, and a client that takes less than 16 KiB
//! of it in the write timeout (`ServerBuilder::write_timeout`, 10 s) is let go
//! (`Conn::let_go`; over HTTP a client that does not
//! keep up with its events is let go at once, `server::http::body`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::server::change_feed::{Change, Replicas, to_event};
use crate::server::event::ServerEvent;

/// One connection being served, as a publisher sees it. Implemented by
/// the connection state (`conn::ConnHandle`), which this module does not
/// name: the server's registry of connections stays below the code that
/// serves them.
pub(crate) trait Connection: Send + Sync {
    /// Delivers a published change to the connection's subscriptions.
    fn publish(&self, event: &ServerEvent);
    /// Ends serving the connection, as end of input would.
    fn stop(&self);
}

/// Every connection a server is serving, whether it was stopped, and the
/// server's other replicas, if it has any (`change_feed`).
#[derive(Default)]
pub(crate) struct Connections {
    list: Mutex<Vec<(u64, Arc<dyn Connection>)>>,
    next_key: AtomicU64,
    stopped: AtomicBool,
    pub replicas: Replicas,
}

impl Connections {
    /// Registers a connection being served; returns the key that
    /// [`Connections::disconnect`] takes. A connection registered after a
    /// stop is stopped at once.
    pub fn connect(&self, connection: Arc<dyn Connection>) -> u64 {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        self.list().push((key, Arc::clone(&connection)));
        if self.is_stopped() {
            connection.stop();
        }
        key
    }

    /// Forgets the connection with `key`: it is finishing.
    pub fn disconnect(&self, key: u64) {
        self.list().retain(|(k, _)| *k != key);
    }

    /// Whether the server was stopped.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Stops the server: every connection being served is stopped, and a
    /// later one at once.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        for connection in self.snapshot() {
            connection.stop();
        }
    }

    /// Delivers a change published on this server to every connection,
    /// then to the other replicas.
    pub fn publish(&self, change: Change) {
        if let Some(event) = to_event(&change) {
            self.publish_here(event);
        }
        self.replicas.send(&change);
    }

    /// Delivers an event to every connection of this server only.
    pub fn publish_here(&self, event: ServerEvent) {
        for connection in self.snapshot() {
            connection.publish(&event);
        }
    }

    /// The connections right now. A copy: nobody holds this lock while a
    /// connection writes.
    fn snapshot(&self) -> Vec<Arc<dyn Connection>> {
        self.list().iter().map(|(_, c)| Arc::clone(c)).collect()
    }

    fn list(&self) -> MutexGuard<'_, Vec<(u64, Arc<dyn Connection>)>> {
        self.list.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
