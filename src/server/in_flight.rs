//! The cancellation map: every pooled request that is running or waiting to
//! start, by id, with its cancel token.
//!
//! Only the owner thread touches it. Whether a reply is still wanted is
//! the entry's gate, which the worker writing the reply and the owner
//! cancelling the request both close under the output's lock, so one of
//! them wins (see `shared_output`); the entry leaves the map when the
//! owner hears the request is done, or when it cancels it. A request whose id is reused after it
//! was cancelled gets a new sequence number, so late messages from the old
//! handler are never taken for the new request's.

use std::collections::HashMap;

use crate::jsonrpc::RequestId;
use crate::server::cancel::CancelToken;
use crate::server::shared_output::Gate;

/// One request in flight.
#[derive(Debug)]
pub(crate) struct Entry {
    pub seq: u64,
    pub token: CancelToken,
    /// Not started yet: it waits for a free slot in the pool.
    pub waiting: bool,
    /// Open while its worker may still write (see `shared_output`).
    pub gate: Gate,
}

/// Requests in flight by id.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    map: HashMap<RequestId, Entry>,
}

impl InFlight {
    pub fn insert(&mut self, id: RequestId, entry: Entry) {
        self.map.insert(id, entry);
    }

    /// Whether `id` belongs to a request still in flight. A request whose
    /// reply is written (its gate closed) but whose end the owner has not
    /// collected yet (`pool::Finished`) is over: the client may have read
    /// the reply and reused the id already, so its entry goes now (its
    /// end, with the old sequence number, then finds nothing).
    pub fn is_busy(&mut self, id: &RequestId) -> bool {
        match self.map.get(id) {
            None => false,
            // Closed only by the worker that wrote the reply (a cancelled
            // request leaves the map when it is cancelled); never reopened.
            Some(entry) if !entry.gate.load(std::sync::atomic::Ordering::Acquire) => {
                self.map.remove(id);
                false
            }
            Some(_) => true,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether messages of request `id` with sequence `seq` may still be
    /// written.
    pub fn is_current(&self, id: &RequestId, seq: u64) -> bool {
        self.map.get(id).is_some_and(|e| e.seq == seq)
    }

    /// The request finished: removes it, unless the id went to a newer
    /// request meanwhile. Says whether it was there.
    pub fn finish(&mut self, id: &RequestId, seq: u64) -> bool {
        if self.is_current(id, seq) {
            self.map.remove(id);
            true
        } else {
            false
        }
    }

    /// The gate of request `id` with sequence `seq`, if it is still the
    /// one in flight under that id.
    pub fn gate_of(&self, id: &RequestId, seq: u64) -> Option<Gate> {
        self.map
            .get(id)
            .filter(|e| e.seq == seq)
            .map(|e| std::sync::Arc::clone(&e.gate))
    }

    /// A waiting request is about to start: marks it running, or says it
    /// was cancelled meanwhile.
    pub fn start(&mut self, id: &RequestId, seq: u64) -> bool {
        match self.map.get_mut(id) {
            Some(entry) if entry.seq == seq => {
                entry.waiting = false;
                true
            }
            _ => false,
        }
    }

    /// Forgets request `id`, for its cancellation: the caller closes its
    /// gate, then trips its token (in that order: a handler that wakes on
    /// the token must find the gate closed). Unknown ids are ignored.
    pub fn remove(&mut self, id: &RequestId) -> Option<Entry> {
        self.map.remove(id)
    }

    /// Removes every request, for shutdown.
    pub fn drain(&mut self) -> impl Iterator<Item = (RequestId, Entry)> + '_ {
        self.map.drain()
    }
}
