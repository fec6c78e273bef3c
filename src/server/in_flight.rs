//! The cancellation map: every pooled request that is running or waiting to
//! start, by id, with its cancel token.
//!
//! Only the owner thread touches it, so "is this reply still wanted?" has
//! one answer at a time: a reply is written only if its request is still in
//! the map, and it leaves the map when its reply is written or when it is
//! cancelled, whichever comes first. A request whose id is reused after it
//! was cancelled gets a new sequence number, so late messages from the old
//! handler are never taken for the new request's.

use std::collections::HashMap;

use crate::jsonrpc::RequestId;
use crate::server::cancel::CancelToken;

/// One request in flight.
#[derive(Debug)]
pub(crate) struct Entry {
    pub seq: u64,
    pub token: CancelToken,
    /// Not started yet: it waits for a free slot in the pool.
    pub waiting: bool,
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

    pub fn contains(&self, id: &RequestId) -> bool {
        self.map.contains_key(id)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether messages of request `id` with sequence `seq` may still be
    /// written.
    pub fn is_current(&self, id: &RequestId, seq: u64) -> bool {
        self.map.get(id).is_some_and(|e| e.seq == seq)
    }

    /// The request finished: removes it and says whether its reply is
    /// still wanted.
    pub fn finish(&mut self, id: &RequestId, seq: u64) -> bool {
        if self.is_current(id, seq) {
            self.map.remove(id);
            true
        } else {
            false
        }
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

    /// Cancels request `id`: trips its token and forgets it, so nothing
    /// more is written for it. Unknown ids are ignored.
    pub fn cancel(&mut self, id: &RequestId) -> Option<Entry> {
        let entry = self.map.remove(id)?;
        entry.token.cancel();
        Some(entry)
    }

    /// Removes every request, for shutdown.
    pub fn drain(&mut self) -> impl Iterator<Item = (RequestId, Entry)> + '_ {
        self.map.drain()
    }
}
