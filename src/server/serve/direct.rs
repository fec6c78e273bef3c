//! The reader's fast path: a request for a pooled handler starts on the
//! reader thread, straight to the pool, without waking the owner.
//!
//! Why: every thread hand-off is a wake-up, a context switch on one core
//! and tens of microseconds across cores (BENCHMARKS.md, issue 19). With
//! workers writing their own replies (`shared_output`), a pooled call
//! went reader → owner → worker; now it goes reader → worker, and the
//! owner sleeps through it.
//!
//! Why it is still correct:
//!
//! - **Order.** The reader offers a line here only when the owner has
//!   handled every line sent to it before (`ReadAhead::handled`, counted
//!   down under the owner's lock), and it then locks the owner's state. So
//!   the duplicate-id check, the era (a legacy session opened by an
//!   earlier `initialize`), the cancellation map and the running count are
//!   exactly what the owner would see if it took the line itself.
//! - **Only a pooled start happens here.** Nothing is written, no inline
//!   handler runs, nothing waits for a slot. Everything else (an error, a
//!   subscription, an inline job, a legacy session's request, a request
//!   that must wait) goes to the owner, already prepared, and the lines
//!   after it queue behind it in the inbox. A method that never runs on
//!   the pool (`server/discover`, the lists, `subscriptions/listen`, a
//!   legacy session's) goes to the owner unprepared, and so does a
//!   `tools/call` when every tool is inline.
//! - **The reader never waits for the owner**: it only tries the lock, and
//!   while the owner holds it (handling an event, or flushing) the line
//!   goes through the inbox as before.
//! - **The owner's timers.** The owner gives freed memory back after an
//!   idle spell, and checks a pool whose threads had none free (see
//!   `pool`). A request the reader starts while the owner sleeps without
//!   the timer it needs wakes it once (`Event::DirectWork`), and an idle
//!   timer that runs out while the reader was busy is not taken for
//!   idleness.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, Weak};

use super::Owner;
use crate::incoming::Incoming;
use crate::server::Inner;
use crate::server::dispatch::{Prepared, always_on_owner};
use crate::server::event::{Event, PreparedLine};
use crate::types::method;

/// The reader offers a line of `bytes` bytes (counted in the read-ahead)
/// while the owner has no line in hand. `None`: the request started here;
/// otherwise the event for the owner's inbox.
pub(super) fn offer(
    inner: &Inner,
    owner: &Weak<Mutex<Owner>>,
    incoming: Incoming,
    bytes: usize,
) -> Option<Event> {
    let may_run_pooled = match &incoming {
        Incoming::Request { method, .. } => may_run_pooled(inner, method),
        _ => false,
    };
    if !may_run_pooled {
        return Some(Event::Line(incoming, bytes));
    }
    let Some(owner) = owner.upgrade() else {
        return Some(Event::Line(incoming, bytes));
    };
    let Ok(mut locked) = owner.try_lock() else {
        return Some(Event::Line(incoming, bytes));
    };
    locked.direct(incoming, bytes)
}

impl Owner {
    /// A request for a pooled handler starts on the pool; anything else
    /// goes back as the owner's event.
    fn direct(&mut self, incoming: Incoming, bytes: usize) -> Option<Event> {
        let Incoming::Request { id, method, params } = incoming else {
            return Some(Event::Line(incoming, bytes));
        };
        if !self.has_room() || self.refusal(&id).is_some() {
            // The owner writes the error, or queues the request.
            let incoming = Incoming::Request { id, method, params };
            return Some(Event::Line(incoming, bytes));
        }
        match self.prepare(&method, params) {
            Ok(Prepared::Run(job)) if !job.inline => {
                // Room was checked: it starts now, and its credit goes back.
                let checked = self.pool_check.is_some();
                let queued = self.start(id, job, bytes);
                debug_assert!(!queued, "a request started by the reader never waits");
                self.ahead.release(bytes);
                self.direct_work = true;
                // The owner may sleep without the timers this work needs.
                let new_check = !checked && self.pool_check.is_some();
                if !self.worked || new_check {
                    self.worked = true;
                    let _ = self.inbox_tx.send(Event::DirectWork);
                }
                None
            }
            prepared => Some(Event::Prepared(Box::new(PreparedLine {
                id,
                prepared,
                bytes,
            }))),
        }
    }

    /// Whether a pooled request could start now, with nobody waiting
    /// ahead of it.
    fn has_room(&mut self) -> bool {
        self.collect_finished();
        self.waiting.is_empty() && self.running < self.inner.config.max_running
    }
}

/// Whether a request for `method` may run on the pool: not one of the
/// methods that always run on the owner, and not a `tools/call` on a
/// server whose tools are all inline. Checked before the owner's lock is
/// tried: preparing those on the reader, or only trying the lock for them,
/// cost the inline echo 5–12% of its pipelined throughput (BENCHMARKS.md).
fn may_run_pooled(inner: &Inner, method: &str) -> bool {
    if always_on_owner(method) {
        return false;
    }
    method != method::TOOLS_CALL || inner.pooled_tools.load(Ordering::Acquire)
}
