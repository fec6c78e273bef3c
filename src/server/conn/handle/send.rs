//! Sending what changes wrote: the `Shared::send*` calls of
//! [`ConnHandle`](super::ConnHandle) (`handle.rs`), and the waits that go
//! with them.
//!
//! What was written is sent without the lock, one thread at a time
//! ([`Output::detach`](super::super::output::Output::detach)), and each send
//! takes every line waiting. A thread that wrote sends its lines itself,
//! unless a send takes them first; when it finds another thread sending,
//! it waits for that `write(2)` to end and then sends what waits
//! (`Shared::send_written`). So a thread sends at most once for its lines:
//! no thread is held sending for others for as long as they write, and
//! none waits for more than the `write(2)` in progress and its own. A
//! client slower than the writers makes them wait, which is the
//! backpressure; a change that wrote nothing never waits.
//!
//! A pooled request's finish is the exception: it never waits behind
//! another thread's send (`Shared::send_unless_sending`), since a thread of
//! the pool that waits looks blocked, and the pool would start threads for
//! the jobs behind it. It leaves its reply to the send in progress, whose
//! end hands what waits to the pool as a send of its own
//! (`Shared::send`, the event that guarantees it), and on a byte stream,
//! while other jobs wait on the pool, it queues that send itself, so the
//! replies of a pipelined burst leave in one `write(2)`
//! (`Shared::send_unless_sending`); the pool runs a send once the jobs
//! before it are taken, or at once on a thread it starts because every
//! thread blocks (`Pool::submit_send`). Its backpressure is the
//! backlog instead: while more than a megabyte waits to be sent, no queued
//! request starts and the reader reads no further (`Conn::backed_up`).
//! A publisher never sends either (`Connection::publish`): it reaches
//! every connection in turn, and one whose client stopped reading must not
//! hold up the events of the others, nor the reply of the handler that
//! published. It hands the send to the pool
//! (`Shared::send_in_background`). Behind a client that is behind (more
//! than the backlog waits), each subscription keeps the latest event about
//! each thing instead (`Conn::publish`), so a publisher of the same changes
//! never waits; it waits only while more than the backlog of events is
//! held for that connection, or was and waits to be sent to it
//! (`Conn::publisher_waits`), for a client that
//! takes some of its output: one that took less than 16 KiB of a send in
//! progress in the write timeout (`ServerBuilder::write_timeout`, 10 s) is
//! let go. (To a writer of lines, which never
//! waits for its client, it sends itself: over HTTP the event is then on
//! the listener's socket before the publisher's reply is on its call's.)
//! (Over HTTP a send never waits for the client: a request's notifications
//! wait for room after it instead, `Outlet::notify` in `handle.rs`, and a response
//! body's own thread writes what the socket did not take:
//! `server::http::body`.)
//!
//! Two more changes leave their send to someone else, each to an event
//! that is never a blocking read (ARCHITECTURE.md, "Who sends, and when"):
//! the reader defers the send of what it writes while it has lines in hand
//! ([`Sending::BeforeRead`](super::Sending::BeforeRead): one `write(2)` for a pipelined burst), and
//! sends it before it reads ([`ConnHandle::send_deferred`](super::ConnHandle::send_deferred), called by the
//! reader's input before every read: `reader::SendFirst`) or sleeps
//! ([`ConnHandle::wait_until`](super::ConnHandle::wait_until) sends first); between the two it only
//! dispatches the lines it holds and runs inline handlers, which promise
//! not to block. A stop ([`Sending::AtShutdown`](super::Sending::AtShutdown)) leaves the final results
//! it writes to the connection's own shutdown, which it starts: the caller
//! of `stop` never waits on a client.

use std::sync::{MutexGuard, PoisonError};
use std::time::Duration;

use super::{Sending, Shared};
use crate::server::conn::Conn;
use crate::server::conn::output::{BUFFER, Detached};
use crate::server::pool::Blocking;

impl Shared {
    /// See [`ConnHandle::send_as`].
    pub(super) fn send_as(&self, sending: Sending, written: u64) {
        match sending {
            Sending::Now => self.send_written(written),
            deferred => {
                let waiting = {
                    let mut state = self.lock_state();
                    state.deferred = state.deferred.max(written);
                    state.output.waiting()
                };
                if deferred == Sending::BeforeRead && waiting >= BUFFER {
                    self.send_written(written);
                }
            }
        }
    }

    /// Sees the first `written` lines on their way: returns once a send
    /// took them, sending them itself (with whatever else waits) unless
    /// another thread is sending, whose `write(2)` it then waits for first.
    /// At most one send: a thread is never held sending for others.
    pub(super) fn send_written(&self, written: u64) {
        let mut state = self.lock_state();
        // A send of its own takes them: it looks once more and is done.
        while !state.output.taken(written) {
            state = self.send_or_wait(state);
        }
    }

    /// Sees the first `written` lines on their way without waiting for
    /// another thread's `write(2)`: a pooled request's finish (a thread of
    /// the pool waiting behind another's send would look blocked to the
    /// pool, which would start threads for the jobs behind it). Nothing to
    /// do if a send took them, or one is in progress or queued: its end
    /// sees to what waits ([`Shared::send`]). While other jobs wait on the
    /// pool and the output is a byte stream, it queues a send
    /// ([`Shared::queue_send`]) that a running thread takes once those
    /// jobs are taken, so the replies they write leave in the same
    /// `write(2)` (a pipelined burst on one CPU: 0.64x the floor against
    /// 0.33x, BENCHMARKS.md), and a thread started because every thread
    /// blocks takes first ([`Pool::submit_send`](crate::server::pool::Pool::submit_send)):
    /// the reply waits for no thread start of the jobs before it.
    /// Otherwise it sends now, a step that may block, and counts so.
    pub(super) fn send_unless_sending(&self, written: u64, blocking: &Blocking) {
        let mut state = self.lock_state();
        if state.output.taken(written) || state.send_queued {
            return;
        }
        let gather = state.output.is_stream() && state.inner.pool.waiting() > 0;
        if gather && !state.output.sending() {
            state.send_queued = true;
            drop(state);
            return self.queue_send();
        }
        let detached = state.output.detach();
        drop(state);
        if let Some(detached) = detached {
            blocking.may_block(|| self.send(detached));
        }
    }

    /// Sends `detached` without the lock, puts the writer back, and wakes
    /// the threads waiting for it. What was written meanwhile may have no
    /// thread waiting to send it (a pooled request's finish does not wait:
    /// [`Shared::send_unless_sending`]), so it goes to the pool as a send
    /// of its own ([`Shared::queue_send`]): this thread sent once, and is
    /// not held sending for others. A failed send ends serving.
    pub(super) fn send(&self, mut detached: Detached) {
        // A writer that panics fails the output like one that errs: the
        // send must come back, or every writer after it would wait.
        let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| detached.send()))
            .unwrap_or_else(|_| Err(std::io::Error::other("the output's writer panicked")));
        let ((more, orphan), _) = self.act_unsent(|conn| {
            let (more, orphan) = conn.sent(detached, sent);
            conn.send_queued |= more;
            (more, orphan)
        });
        // A client given up on: its writer goes without the lock.
        drop(orphan);
        if more {
            self.queue_send();
        }
    }

    /// Queues a send of what waits on the pool ([`Shared::send_waiting`],
    /// as a send: `Pool::submit_send`); the caller set `Conn::send_queued`.
    pub(super) fn queue_send(&self) {
        if let Some(shared) = self.me.upgrade() {
            (self.inner.pool).submit_send(Box::new(move |blocking| shared.send_waiting(blocking)));
        }
    }

    /// A queued send: sends what waits, unless a send is in progress (its
    /// end sees to it) or nothing waits (a thread that wrote it and waits
    /// took it).
    pub(super) fn send_waiting(&self, blocking: &Blocking) {
        let detached = {
            let mut state = self.lock_state();
            state.send_queued = false;
            state.output.detach()
        };
        if let Some(detached) = detached {
            blocking.may_block(|| self.send(detached));
        }
    }

    /// One step of a wait that sends itself: sends what waits (then the
    /// caller looks again), or sleeps until the state changes.
    pub(super) fn send_or_wait<'a>(
        &'a self,
        mut state: MutexGuard<'a, Conn>,
    ) -> MutexGuard<'a, Conn> {
        match state.output.detach() {
            Some(detached) => {
                drop(state);
                self.send(detached);
                self.lock_state()
            }
            None => self.wait(state, None),
        }
    }

    /// Hands what waits to the pool as a send ([`Shared::queue_send`])
    /// unless a send is in progress or queued (its end sees to it) or
    /// nothing waits; returns the lock (taken again if it queued one) and
    /// whether it did.
    fn queue_if_idle<'a>(
        &'a self,
        mut state: MutexGuard<'a, Conn>,
    ) -> (MutexGuard<'a, Conn>, bool) {
        let idle = !state.output.sending() && !state.send_queued;
        if !(idle && state.output.waiting() > 0) {
            return (state, false);
        }
        state.send_queued = true;
        drop(state);
        self.queue_send();
        (self.lock_state(), true)
    }

    /// One step of a wait that must not block on the client: hands what
    /// waits to the pool as a send ([`Shared::queue_send`]) unless a send
    /// is in progress or queued (its end sees to it), then sleeps until the
    /// state changes or `timeout` passes.
    pub(super) fn queue_or_wait<'a>(
        &'a self,
        state: MutexGuard<'a, Conn>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Conn> {
        let (state, queued) = self.queue_if_idle(state);
        if queued {
            return state;
        }
        self.wait(state, timeout)
    }

    /// Sees what waits sent without this thread's writing it: hands it to
    /// the pool as a send ([`Shared::queue_send`]) unless a send is in
    /// progress or queued (its end sees to it). Then, while more than the
    /// backlog of events is held back for a client slow to read, or was
    /// and waits to be sent to it ([`Conn::publisher_waits`]: events about the same things take the
    /// place of each other), it waits, and what piles up behind such a
    /// client is bounded: a publisher's backpressure, as the backlog is the
    /// reader's (`Conn::backed_up`).
    /// A client too slow to keep is let go meanwhile
    /// ([`Shared::let_go_if_stalled`]): else one that stopped reading for
    /// good, or reads a page now and then, would hold every publisher of
    /// the server for good, or at its pace. Its clock is the connection's,
    /// not this wait's: clients that stopped reading together cost a
    /// publisher the write timeout once, not once each in turn
    /// (`send_path::clients_that_stopped_reading_together_hold_a_publisher_the_let_go_once`).
    pub(super) fn send_in_background(&self) {
        let mut state = self.lock_state();
        loop {
            let queued;
            (state, queued) = self.queue_if_idle(state);
            if queued {
                continue;
            }
            if !state.publisher_waits() {
                return;
            }
            let Some((locked, left)) = self.let_go_if_stalled(state) else {
                return;
            };
            state = self.wait(locked, Some(left));
        }
    }

    /// The rule for a client too slow to keep: one that took less than 16
    /// KiB of a send in progress in the write timeout
    /// (`ServerBuilder::write_timeout`) is taken to be gone and let go
    /// (`Conn::let_go`: serving ends as at a failed write), and the threads
    /// waiting on the connection are woken (publishers, the reader waiting
    /// for room: they find nothing waiting). Its clock is the client's
    /// (`Output::idle`: since it last took 16 KiB, or the send began); a
    /// send merely queued has not begun, nothing to hold against the client
    /// yet. Returns the lock again and how long the client has left (the
    /// write timeout when no send is in progress), or `None` once it was
    /// let go. Asked by a waiting publisher, and by the thread in `serve`
    /// while it waits for the end (`ConnHandle::let_go_if_stalled`), so a
    /// client that stopped reading is let go even when nobody waits on it:
    /// a reader held in its own `write(2)` to such a client would never
    /// read the end of input.
    pub(super) fn let_go_if_stalled<'a>(
        &'a self,
        mut state: MutexGuard<'a, Conn>,
    ) -> Option<(MutexGuard<'a, Conn>, Duration)> {
        let timeout = state.inner.config.write_timeout;
        if !state.output.sending() || state.output.is_closed() {
            return Some((state, timeout));
        }
        let idle = state.output.idle();
        if idle < timeout {
            return Some((state, timeout - idle));
        }
        let writer = state.let_go();
        drop(state);
        drop(writer);
        self.changed.notify_all();
        None
    }

    /// Sleeps until the state changes (or `timeout` passes).
    pub(super) fn wait<'a>(
        &'a self,
        mut state: MutexGuard<'a, Conn>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Conn> {
        state.waiters += 1;
        // No timeout: `Duration::MAX`, past which `Condvar::wait_timeout`
        // saturates (no deadline on Linux): as long as it takes.
        let timeout = timeout.unwrap_or(Duration::MAX);
        let (mut state, _) =
            (self.changed.wait_timeout(state, timeout)).unwrap_or_else(PoisonError::into_inner);
        state.waiters -= 1;
        state
    }
}
