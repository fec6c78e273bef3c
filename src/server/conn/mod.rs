//! The connection state: everything the spec's per-connection rules are
//! about, behind one lock. The output, the in-flight map (which is the
//! cancellation map), the subscription table, the legacy session and its
//! asks, and the slots.
//!
//! Every thread that acts on a connection takes this lock: the reader
//! (`reader`) to begin requests, cancel them and open subscriptions; a pool
//! worker to answer its request; any thread that publishes (`Notifier`) or
//! sends a request's progress; the thread in `serve` to shut down. Each
//! rule of the protocol is kept by one method here, which the others call:
//!
//! | rule | kept by |
//! |---|---|
//! | a cancelled request gets nothing more; no request gets two replies | [`Conn::finish`] (and [`Conn::notify`] for notifications): writes only if the request is still in flight, and takes it out in the same step |
//! | an acknowledgment is its subscription's first message | [`Conn::listen`]: inserts and acknowledges in one step |
//! | stdout carries only whole lines | `Output::write_line` (`output.rs`), the only writer |
//! | a cancellation wins over a late reply | [`Conn::cancel`]: takes the request out, then trips its token |
//! | every request gets exactly one reply, even at shutdown | [`Conn::shut_down`] |
//!
//! Nothing here blocks but a write to a client that stops reading (which
//! then pauses every thread that writes to it) and the waits that say so
//! ([`ConnGuard::wait_until`]).

#[cfg(feature = "legacy")]
mod legacy;
mod output;

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crossbeam_channel::Sender;
use serde_json::json;

use crate::error::Error;
use crate::jsonrpc::{ErrorObject, RequestId, encode_error};
use crate::server::cancel::CancelToken;
use crate::server::connections::Connection;
use crate::server::context::{Outlet, RequestContext, Sink};
use crate::server::event::ServerEvent;
#[cfg(feature = "legacy")]
use crate::server::event::{AskFailed, AskReply};
use crate::server::in_flight::{InFlight, Stage};
use crate::server::pool::Job as PoolJob;
use crate::server::reply::Reply;
use crate::server::subscriptions::{
    Accepted, SubscriptionTable, Template, encode_ack, encode_final,
};
use crate::server::work::{Job, Work, call};
use crate::server::{Inner, Server};
use output::Output;

/// Why serving a connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The input ended (or failed).
    Eof,
    /// [`crate::StopHandle::stop`] was called.
    Stop,
    /// A write to the output failed: the client went away.
    OutputFailed,
}

/// A connection, shared by the threads that act on it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ConnHandle(Arc<Shared>);

struct Shared {
    state: Mutex<Conn>,
    /// Threads holding the lock or waiting for it: a writer that sees
    /// another behind it leaves the flush to that one (see `output`).
    lockers: AtomicUsize,
    /// Signalled when what a waiter waits for may have changed: room in the
    /// queue for slots, nothing left in flight, a failed output.
    changed: Condvar,
    /// Where the end of serving is announced, to the thread in `serve`.
    end: Sender<End>,
}

/// One connection's state. Reached only through [`ConnHandle::lock`].
pub(crate) struct Conn {
    inner: Arc<Inner>,
    out: Output,
    in_flight: InFlight,
    subscriptions: SubscriptionTable,
    #[cfg(feature = "legacy")]
    legacy: legacy::Legacy,
    /// Shutting down: no request begins any more.
    stopping: bool,
    /// Shut down: nothing more is written.
    closed: bool,
    /// Threads waiting on `changed` ([`ConnGuard::wait_until`]).
    waiters: usize,
    /// Something a waiter may wait for changed under this lock.
    changed: bool,
    /// Lines handled so far: `serve` tells an idle spell by it.
    pub lines: u64,
    /// Where a failed write announces the end (see [`End`]).
    end: Sender<End>,
}

impl ConnHandle {
    /// A new connection writing to `output`; its end goes to `end`.
    pub fn new(
        inner: &Arc<Inner>,
        output: Box<dyn std::io::Write + Send>,
        end: Sender<End>,
    ) -> Self {
        ConnHandle(Arc::new(Shared {
            state: Mutex::new(Conn {
                inner: Arc::clone(inner),
                out: Output::new(output),
                in_flight: InFlight::default(),
                subscriptions: SubscriptionTable::default(),
                #[cfg(feature = "legacy")]
                legacy: legacy::Legacy::default(),
                stopping: false,
                closed: false,
                waiters: 0,
                changed: false,
                lines: 0,
                end: end.clone(),
            }),
            lockers: AtomicUsize::new(0),
            changed: Condvar::new(),
            end,
        }))
    }

    /// The connection's state, locked.
    pub fn lock(&self) -> ConnGuard<'_> {
        self.0.lock()
    }

    /// Announces the end of serving (the first one counts).
    pub fn end(&self, why: End) {
        let _ = self.0.end.send(why);
    }

    /// The connection as the server's registry of connections sees it.
    pub fn as_connection(&self) -> Arc<dyn Connection> {
        self.0.clone()
    }

    /// Begins a request that passed validation: it enters the in-flight
    /// map and either runs on the pool, or waits for a slot, or (an inline
    /// one) is handed back for the caller to run, without the lock, then
    /// to answer with [`Conn::finish`].
    pub fn begin(&self, id: RequestId, job: Job, bytes: usize) -> Option<InlineJob> {
        let mut guard = self.lock();
        if let Some(error) = guard.refusal(&id) {
            guard.write_error(Some(&id), &error);
            return None;
        }
        let conn = &mut *guard;
        let seq = conn.in_flight.new_seq();
        let token = CancelToken::new();
        let outlet: Arc<dyn Outlet> = self.0.clone();
        let ctx = RequestContext::new(
            id.clone(),
            job.meta,
            token.clone(),
            Sink::Conn { outlet, seq },
            Server {
                inner: Arc::clone(&conn.inner),
            },
            job.retry,
        );
        let work = job.work;
        if job.inline {
            conn.in_flight.insert(id, seq, token, Stage::Inline);
            return Some(InlineJob { ctx, seq, work });
        }
        let handle = self.clone();
        let pooled: PoolJob = Box::new(move || {
            // Encoded before the lock: workers finishing together do not
            // wait on each other's encoding.
            let line = call(work, &ctx).into_line();
            let mut conn = handle.lock();
            conn.finish(ctx.id(), seq, Reply::Line(line));
            conn.flush_unless_followed();
        });
        if conn.in_flight.has_slot(conn.inner.config.max_running) {
            conn.in_flight.insert(id, seq, token, Stage::Running);
            conn.inner.pool.submit(pooled);
        } else {
            conn.in_flight
                .insert(id, seq, token, Stage::Queued(pooled, bytes));
        }
        None
    }
}

impl Shared {
    fn lock(&self) -> ConnGuard<'_> {
        // Counted before it waits: the holder sees it is followed.
        self.lockers.fetch_add(1, Ordering::AcqRel);
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        ConnGuard {
            shared: self,
            state: Some(state),
        }
    }
}

impl Outlet for Shared {
    fn notify(&self, id: &RequestId, seq: u64, line: &[u8]) {
        let mut conn = self.lock();
        conn.notify(id, seq, line);
        conn.flush_unless_followed();
    }

    #[cfg(feature = "legacy")]
    fn ask(
        &self,
        request: &RequestId,
        seq: u64,
        id: RequestId,
        line: &[u8],
    ) -> Result<crossbeam_channel::Receiver<AskReply>, AskFailed> {
        let mut conn = self.lock();
        let asked = conn.ask(request, seq, id, line);
        conn.flush_unless_followed();
        asked
    }

    #[cfg(feature = "legacy")]
    fn withdraw(&self, asks: &[RequestId]) {
        let mut conn = self.lock();
        conn.withdraw(asks);
        conn.flush_unless_followed();
    }
}

impl Connection for Shared {
    fn publish(&self, event: &ServerEvent) {
        let mut conn = self.lock();
        conn.publish(event);
        conn.flush_unless_followed();
    }

    /// Takes effect at once, as end of input would: a request read after
    /// `stop` returned is refused.
    fn stop(&self) {
        let mut conn = self.lock();
        conn.begin_shutdown();
        conn.flush_unless_followed();
        drop(conn);
        let _ = self.end.send(End::Stop);
    }
}

/// The connection's state, locked. Dropping it pays a flush that an
/// earlier writer left to it, and wakes the waiters when something they
/// wait for changed.
pub(crate) struct ConnGuard<'a> {
    shared: &'a Shared,
    /// `None` only inside [`ConnGuard::wait_until`].
    state: Option<MutexGuard<'a, Conn>>,
}

impl Deref for ConnGuard<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.state
            .as_ref()
            .expect("the state is held outside a wait")
    }
}

impl DerefMut for ConnGuard<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.state
            .as_mut()
            .expect("the state is held outside a wait")
    }
}

impl Drop for ConnGuard<'_> {
    fn drop(&mut self) {
        let Some(mut state) = self.state.take() else {
            return;
        };
        let shared = self.shared;
        // The last holder of a run pays the flush an earlier writer left.
        if state.out.flush_owed && shared.lockers.load(Ordering::Acquire) == 1 {
            state.flush();
        }
        let wake = std::mem::take(&mut state.changed) && state.waiters > 0;
        // Uncounted while still holding the lock: the next holder must see
        // whether anyone is behind it, or an owed flush is never paid.
        shared.lockers.fetch_sub(1, Ordering::AcqRel);
        drop(state);
        if wake {
            shared.changed.notify_all();
        }
    }
}

impl ConnGuard<'_> {
    /// Flushes now unless another thread waits for the lock, which then
    /// flushes for both (see `output`).
    pub fn flush_unless_followed(&mut self) {
        let lockers = self.shared.lockers.load(Ordering::Acquire);
        if self.out.flush_unless_followed(lockers) {
            self.output_failed();
        }
    }

    /// Waits, without holding the lock, until `done` holds or `deadline`
    /// (`None`: no deadline) passes; flushes before it sleeps.
    pub fn wait_until(mut self, deadline: Option<Instant>, done: impl Fn(&Conn) -> bool) -> Self {
        let shared = self.shared;
        while !done(&self) {
            let now = Instant::now();
            if deadline.is_some_and(|at| now >= at) {
                break;
            }
            self.flush();
            let mut state = self.state.take().expect("held outside a wait");
            state.waiters += 1;
            shared.lockers.fetch_sub(1, Ordering::AcqRel);
            state = match deadline {
                Some(at) => shared
                    .changed
                    .wait_timeout(state, at - now)
                    .map(|(state, _)| state)
                    .unwrap_or_else(|e| e.into_inner().0),
                None => shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
            };
            shared.lockers.fetch_add(1, Ordering::AcqRel);
            state.waiters -= 1;
            self.state = Some(state);
        }
        self
    }
}

/// An inline request, begun: its handler runs on the reader, without the
/// connection's lock.
pub(crate) struct InlineJob {
    pub ctx: RequestContext,
    pub seq: u64,
    pub work: Work,
}

impl Conn {
    /// Why a request with this id is refused before it is even prepared:
    /// the server is shutting down, or the id is in use by a request in
    /// flight or an open subscription.
    pub fn refusal(&self, id: &RequestId) -> Option<ErrorObject> {
        if self.stopping {
            return Some(ErrorObject::internal_error("the server is shutting down"));
        }
        if self.in_flight.contains(id) || self.subscriptions.contains(id) {
            return Some(ErrorObject::invalid_request(format!(
                "request id {id} is already in use by a request in flight"
            )));
        }
        None
    }

    /// Answers request `id` (sequence `seq`) with `reply`, if it is still
    /// in flight, and takes it out in the same step: the one place that
    /// makes "a cancelled request gets nothing" and "no request gets two
    /// replies" true. Returns whether the reply was written.
    pub fn finish(&mut self, id: &RequestId, seq: u64, reply: Reply) -> bool {
        let Some(_entry) = self.in_flight.take(id, seq) else {
            return false;
        };
        self.write_line(|out| reply.write_to(out));
        #[cfg(feature = "legacy")]
        self.forget_asks_of(seq);
        self.start_queued();
        self.changed = true;
        true
    }

    /// Writes a notification of request `id` (sequence `seq`: its progress,
    /// its logs) if the request is still in flight.
    pub fn notify(&mut self, id: &RequestId, seq: u64, line: &[u8]) {
        if self.in_flight.is_current(id, seq) {
            self.write(line);
        }
    }

    /// `notifications/cancelled` for `id`: the request leaves the map
    /// before its token trips, so whatever its handler does next writes
    /// nothing (spec 2026-07-28 basic/patterns/cancellation: no further
    /// messages for it). A cancelled listen ends without a final result.
    /// Unknown ids are ignored.
    pub fn cancel(&mut self, id: &RequestId) {
        if let Some(entry) = self.in_flight.remove(id) {
            #[cfg(feature = "legacy")]
            self.withdraw_asks_of(entry.seq);
            entry.token.cancel();
            self.start_queued();
            self.changed = true;
        } else {
            // From here on nothing carries its subscription id.
            self.subscriptions.remove(id);
        }
    }

    /// `subscriptions/listen`: the subscription opens and its
    /// acknowledgment is written in one step (spec 2026-07-28
    /// basic/patterns/subscriptions: the ack is the first message carrying
    /// its id), unless the connection holds its maximum already.
    pub fn listen(&mut self, id: RequestId, accepted: Accepted) {
        if let Some(error) = self.refusal(&id) {
            return self.write_error(Some(&id), &error);
        }
        let max = self.inner.config.max_subscriptions;
        if self.subscriptions.len() >= max {
            let error = ErrorObject::internal_error(format!(
                "too many open subscriptions on this connection (at most {max}): cancel one first"
            ))
            .with_data(json!({ "limit": max }));
            return self.write_error(Some(&id), &error);
        }
        let mut line = Vec::with_capacity(160);
        encode_ack(&mut line, &id, &accepted);
        self.subscriptions.insert(id, accepted);
        self.write(&line);
    }

    /// Delivers a published event to every subscription that asked for it
    /// (spec 2026-07-28 basic/patterns/subscriptions: nothing a client did
    /// not ask for), tagged with its id, or closes subscriptions.
    pub fn publish(&mut self, event: &ServerEvent) {
        #[cfg(feature = "legacy")]
        self.publish_legacy(event);
        match event {
            ServerEvent::CloseAll => self.close_subscriptions(),
            ServerEvent::Close(id) => {
                if self.subscriptions.remove(id) {
                    self.write_final(id);
                }
            }
            _ => {
                let Some(template) = Template::for_event(event) else {
                    return;
                };
                let mut ids = Vec::new();
                self.subscriptions
                    .each_wanting(event, |id| ids.push(id.clone()));
                let mut line = Vec::with_capacity(template.head.len() + template.tail.len() + 24);
                for id in ids {
                    line.clear();
                    line.extend_from_slice(&template.head);
                    // An id into a Vec: encoding cannot fail.
                    let _ = serde_json::to_writer(&mut line, &id);
                    line.extend_from_slice(&template.tail);
                    self.write(&line);
                }
            }
        }
    }

    /// Ends every open subscription with its final result, oldest first.
    ///
    /// Spec 2026-07-28 basic/patterns/subscriptions ("Graceful Closure"):
    /// a server that ends a subscription SHOULD answer the listen request
    /// with a completion result. basic/patterns/cancellation also says a
    /// server MUST send `notifications/cancelled` for a listen it tears
    /// down; that page's own rules say a cancellation may only name a
    /// request still in progress, which a listen stops being the moment
    /// its final result is written. So a graceful end sends the final
    /// result alone, as the official Python SDK and rmcp do.
    fn close_subscriptions(&mut self) {
        for id in self.subscriptions.drain() {
            self.write_final(&id);
        }
    }

    fn write_final(&mut self, id: &RequestId) {
        let mut line = Vec::with_capacity(160);
        encode_final(&mut line, id, &self.inner.info_value);
        self.write(&line);
    }

    /// Writes an error response (for a request that never began, or a
    /// line that is not one).
    pub fn write_error(&mut self, id: Option<&RequestId>, error: &ErrorObject) {
        let mut line = Vec::with_capacity(128);
        encode_error(&mut line, id, error);
        self.write(&line);
    }

    /// Whether the queue for slots is full: the reader waits before it
    /// reads another line (see `reader`).
    pub fn queue_full(&self) -> bool {
        let config = &self.inner.config;
        self.in_flight
            .queue_full(config.queue_limit, config.queue_bytes)
            && !self.closed
    }

    /// Nothing is in flight any more, or nothing more can be written.
    pub fn settled(&self) -> bool {
        self.in_flight.is_empty() || self.out.failed() || self.closed
    }

    /// Shut down: nothing more is read for it.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The end of input or a stop: no new request begins, and every
    /// subscription gets its final result. Requests in flight go on (see
    /// [`Conn::shut_down`]).
    pub fn begin_shutdown(&mut self) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        self.close_subscriptions();
        #[cfg(feature = "legacy")]
        self.drop_asks();
        self.changed = true;
    }

    /// The end: what is still in flight is cancelled and answered with
    /// `-32603` (every request gets exactly one reply), and the output is
    /// flushed and closed. Returns the first write error.
    pub fn shut_down(&mut self) -> Result<(), Error> {
        self.begin_shutdown();
        self.closed = true;
        self.changed = true;
        for (id, entry) in self.in_flight.drain() {
            entry.token.cancel();
            let error =
                ErrorObject::internal_error("the server shut down before the request finished");
            self.write_error(Some(&id), &error);
        }
        match self.out.close() {
            Some(e) => Err(Error::Io(e)),
            None => Ok(()),
        }
    }

    /// Flushes the output.
    pub fn flush(&mut self) {
        if self.out.flush() {
            self.output_failed();
        }
    }

    /// Writes one encoded message.
    fn write(&mut self, line: &[u8]) {
        self.write_line(|out| out.write_all(line));
    }

    fn write_line(&mut self, body: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>) {
        if self.out.write_line(body) {
            self.output_failed();
        }
    }

    /// A write failed: the client is gone, and serving ends.
    fn output_failed(&mut self) {
        self.changed = true;
        let _ = self.end.send(End::OutputFailed);
    }

    /// Starts queued requests while slots are free.
    fn start_queued(&mut self) {
        while let Some(job) = self.in_flight.next_to_start(self.inner.config.max_running) {
            self.inner.pool.submit(job);
            self.changed = true;
        }
    }
}
