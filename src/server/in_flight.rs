//! The in-flight map, which is also the cancellation map: every request of
//! one connection that began and is not answered yet, by id, with its
//! cancel token and where it is (on the reader, queued for a slot, on the
//! pool, or on the pool waiting without its slot: `RequestContext::wait_without_slot`).
//!
//! It lives in the connection state (`conn`), under the connection's lock.
//! A request is answered only if its entry is still here when its reply
//! comes (`Conn::finish` takes it out in the same step it writes the
//! reply), so a cancelled request gets nothing and no request gets two
//! replies. A request whose id is reused after it ended gets a new
//! sequence number, so late messages of the old handler are never taken
//! for the new request's.
//!
//! The slots (`max_running`) are counted here too, from the stages alone:
//! `InFlight::count` is the only code that changes the counts.

use std::collections::VecDeque;

use crate::jsonrpc::{IdMap, RequestId};
use crate::server::cancel::CancelToken;
use crate::server::pool::Job;

/// One request in flight.
pub(crate) struct Entry {
    pub seq: u64,
    pub token: CancelToken,
    stage: Stage,
}

/// Where a request in flight is.
pub(crate) enum Stage {
    /// Its inline handler runs on the reader.
    Inline,
    /// It waits for a slot: its job, and the size of its line.
    Queued(Job, usize),
    /// It runs on the pool and holds a slot.
    Running,
    /// It runs on the pool and waits for something outside the server
    /// (`RequestContext::wait_without_slot`): it holds no slot meanwhile.
    Waiting,
}

/// The requests in flight by id, the queue for slots, and the counts.
#[derive(Default)]
pub(crate) struct InFlight {
    map: IdMap<Entry>,
    /// Queued requests in arrival order; one cancelled meanwhile is gone
    /// from the map and skipped.
    queue: VecDeque<(RequestId, u64)>,
    next_seq: u64,
    /// Requests holding a slot.
    running: usize,
    /// Requests on the pool waiting without their slot.
    waiting: usize,
    queued: usize,
    queued_bytes: usize,
}

impl InFlight {
    /// A new sequence number, for a request about to be inserted.
    pub fn new_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// Adds a request with the sequence number [`InFlight::new_seq`] gave.
    pub fn insert(&mut self, id: RequestId, seq: u64, token: CancelToken, stage: Stage) {
        if matches!(stage, Stage::Queued(..)) {
            self.queue.push_back((id.clone(), seq));
        }
        self.count(&stage, true);
        // The caller refused an id in use: nothing is replaced.
        self.map.insert(id, Entry { seq, token, stage });
    }

    /// Whether `id` is the id of a request in flight.
    pub fn contains(&self, id: &RequestId) -> bool {
        self.map.contains_key(id)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether request `id` with sequence `seq` is still in flight.
    pub fn is_current(&self, id: &RequestId, seq: u64) -> bool {
        self.map.get(id).is_some_and(|e| e.seq == seq)
    }

    /// Takes request `id` out if it is the one with sequence `seq`: it is
    /// being answered. `None`: it was cancelled (or shut down) meanwhile.
    pub fn take(&mut self, id: &RequestId, seq: u64) -> Option<Entry> {
        if !self.is_current(id, seq) {
            return None;
        }
        self.remove(id)
    }

    /// Takes request `id` out, whatever its sequence: it is cancelled.
    pub fn remove(&mut self, id: &RequestId) -> Option<Entry> {
        let entry = self.map.remove(id)?;
        self.count(&entry.stage, false);
        if matches!(entry.stage, Stage::Queued(..)) {
            self.forget_cancelled();
        }
        Some(entry)
    }

    /// Drops the queue's places of requests cancelled while they waited,
    /// once they outnumber the requests that wait: else a client that
    /// sends a call and its cancellation again and again while every slot
    /// is held grows the queue (each place with a copy of its id) without
    /// bound, none of it counted against `queue_limit`. Amortized, each
    /// place is looked at a constant number of times.
    fn forget_cancelled(&mut self) {
        if self.queue.len() <= 2 * self.queued + 16 {
            return;
        }
        let map = &self.map;
        self.queue.retain(|(id, seq)| {
            map.get(id)
                .is_some_and(|e| e.seq == *seq && matches!(e.stage, Stage::Queued(..)))
        });
    }

    /// Every request, taken out, for shutdown.
    pub fn drain(&mut self) -> Vec<(RequestId, Entry)> {
        let entries: Vec<_> = self.map.drain().collect();
        for (_, entry) in &entries {
            self.count(&entry.stage, false);
        }
        self.queue.clear();
        entries
    }

    /// The next queued request that may start now that a slot is free (at
    /// most `max_running` hold one): it holds a slot from here on.
    pub fn next_to_start(&mut self, max_running: usize) -> Option<Job> {
        while self.running < max_running {
            let (id, seq) = self.queue.pop_front()?;
            let Some(entry) = self.map.get_mut(&id).filter(|e| e.seq == seq) else {
                continue; // cancelled while it waited
            };
            let stage = std::mem::replace(&mut entry.stage, Stage::Running);
            self.count(&stage, false);
            self.count(&Stage::Running, true);
            if let Stage::Queued(job, _) = stage {
                return Some(job);
            }
        }
        None
    }

    /// Request `id` (sequence `seq`), running on the pool, gives up its
    /// slot while it waits (`RequestContext::wait_without_slot`), unless
    /// `max` requests wait so already. Returns whether it did; `false` for a
    /// request not running (inline, cancelled, waiting already).
    pub fn stop_holding(&mut self, id: &RequestId, seq: u64, max: usize) -> bool {
        self.waiting < max && self.restage(id, seq, Stage::Running, Stage::Waiting)
    }

    /// How many requests wait without their slot.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Whether request `id` (sequence `seq`) runs on the pool, holding its
    /// slot.
    pub fn is_running(&self, id: &RequestId, seq: u64) -> bool {
        (self.map.get(id)).is_some_and(|e| e.seq == seq && matches!(e.stage, Stage::Running))
    }

    /// Request `id` (sequence `seq`) is done waiting: it holds a slot again
    /// (for a moment past `max_running`, if need be: it was running).
    pub fn hold_again(&mut self, id: &RequestId, seq: u64) {
        self.restage(id, seq, Stage::Waiting, Stage::Running);
    }

    /// Whether the queue for slots holds `lines` requests or `bytes` bytes
    /// of them (one request is always admitted, whatever its size).
    pub fn queue_full(&self, lines: usize, bytes: usize) -> bool {
        self.queued >= lines || (self.queued > 0 && self.queued_bytes >= bytes)
    }

    /// Whether requests wait in the queue for slots.
    pub fn any_queued(&self) -> bool {
        self.queued > 0
    }

    /// Whether a pooled request could start now.
    pub fn has_slot(&self, max_running: usize) -> bool {
        self.running < max_running
    }

    /// Moves request `id` (sequence `seq`) from stage `from` to `to` (two
    /// stages without a job); returns whether it was in `from`.
    fn restage(&mut self, id: &RequestId, seq: u64, from: Stage, to: Stage) -> bool {
        let current = self.map.get(id).filter(|e| e.seq == seq);
        let same = |e: &Entry| std::mem::discriminant(&e.stage) == std::mem::discriminant(&from);
        if !current.is_some_and(same) {
            return false;
        }
        self.count(&from, false);
        self.count(&to, true);
        if let Some(entry) = self.map.get_mut(id) {
            entry.stage = to;
        }
        true
    }

    /// A request enters `stage` or leaves it: the only code that changes
    /// the counts.
    fn count(&mut self, stage: &Stage, enter: bool) {
        let (counter, bytes) = match stage {
            Stage::Inline => return,
            Stage::Queued(_, bytes) => (&mut self.queued, *bytes),
            Stage::Running => (&mut self.running, 0),
            Stage::Waiting => (&mut self.waiting, 0),
        };
        if enter {
            *counter += 1;
            self.queued_bytes += bytes;
        } else {
            *counter -= 1;
            self.queued_bytes -= bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Box::new(|_| {})
    }

    /// Claim (core review 8): a client that sends a call and its
    /// cancellation, again and again, while every slot is held, leaves
    /// nothing behind: the queue for slots kept an entry (with a copy of
    /// the id, up to the maximum line length) for each cancelled request
    /// until a slot freed, without counting it against `queue_limit`: a
    /// client that never reads grew the server's memory without bound.
    #[test]
    fn cancelled_queued_requests_leave_nothing_behind_while_no_slot_frees() {
        let mut in_flight = InFlight::default();
        let seq = in_flight.new_seq();
        let token = CancelToken::new();
        in_flight.insert(RequestId::Number(0), seq, token, Stage::Running);
        let id = RequestId::String("x".repeat(1000));
        for _ in 0..10_000 {
            assert!(!in_flight.has_slot(1));
            let seq = in_flight.new_seq();
            let stage = Stage::Queued(job(), 1100);
            in_flight.insert(id.clone(), seq, CancelToken::new(), stage);
            assert!(in_flight.remove(&id).is_some());
        }
        assert!(
            in_flight.queue.len() <= 64,
            "{} cancelled requests still queued, their ids with them",
            in_flight.queue.len()
        );
    }
}
