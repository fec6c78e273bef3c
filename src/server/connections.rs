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
//! that published; only once more than a megabyte waits for that client
//! does a publisher wait for it, and a client that takes less than 16 KiB
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
    /// What runs once at the stop ([`Connections::at_stop`]), by key.
    #[cfg(feature = "client")]
    at_stop: Mutex<std::collections::HashMap<u64, AtStop>>,
    pub replicas: Replicas,
}

/// Work the stop does for the server's own code ([`Connections::at_stop`]).
#[cfg(feature = "client")]
pub(crate) type AtStop = Box<dyn FnOnce() + Send>;

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
        #[cfg(feature = "client")]
        {
            let at_stop = std::mem::take(&mut *crate::sync::lock(&self.at_stop));
            for (_, work) in at_stop {
                work();
            }
        }
    }

    /// Runs `work` at the stop, on the thread that stops the server, after
    /// every connection was told to stop (at once if the server stopped
    /// already): for a proxy, the `tasks/cancel` of a task it follows
    /// behind (`proxy::follow_task`). `work` must not wait long: the stop
    /// never blocks on a client. Returns the key that
    /// [`forget_at_stop`](Connections::forget_at_stop) takes.
    #[cfg(feature = "client")]
    pub fn at_stop(&self, work: AtStop) -> u64 {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let mut at_stop = crate::sync::lock(&self.at_stop);
        // Read under the lock the stop takes after setting it: a stop
        // that took the hooks already is seen here.
        if self.is_stopped() {
            drop(at_stop);
            work();
        } else {
            at_stop.insert(key, work);
        }
        key
    }

    /// Takes back the work registered under `key`; whether it was still
    /// there (not run by a stop).
    #[cfg(feature = "client")]
    pub fn forget_at_stop(&self, key: u64) -> bool {
        crate::sync::lock(&self.at_stop).remove(&key).is_some()
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
