//! Reaching a connection: [`ConnHandle`] (shared by the reader, the pool's
//! jobs, the notifier and `serve`), its lock ([`ConnGuard`]), and what
//! happens when the lock is let go.
//!
//! Two locks, always taken in this order: the state ([`Conn`]), then the
//! output. A method of `Conn` only records what to write (`pending`); when
//! the guard is let go, the output's lock is taken first, the state's let
//! go, and the lines written. So lines go out in the order of the changes
//! that wrote them, and the `write(2)` itself never holds the state: a
//! client that is slow to read, or a worker preempted in its write, never
//! keeps the reader from its next request.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crossbeam_channel::Sender;

use super::output::SharedOutput;
use super::{Conn, End};
use crate::error::Error;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::cancel::CancelToken;
use crate::server::connections::Connection;
use crate::server::context::{Outlet, RequestContext, Sink};
use crate::server::dispatch::Prepared;
use crate::server::event::ServerEvent;
#[cfg(feature = "legacy")]
use crate::server::event::{AskFailed, AskReply};
use crate::server::in_flight::Stage;
use crate::server::pool::Job as PoolJob;
use crate::server::reply::Reply;
use crate::server::work::{Work, call};
use crate::server::{Inner, Server};

/// A connection, shared by the threads that act on it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ConnHandle(Arc<Shared>);

struct Shared {
    state: Mutex<Conn>,
    output: SharedOutput,
    /// Signalled when what a waiter waits for may have changed: room in the
    /// queue for slots, nothing left in flight, a failed output.
    changed: Condvar,
    /// Where the end of serving is announced, to the thread in `serve`.
    end: Sender<End>,
    /// Shut down: the reader reads no more (it looks without the lock).
    closed: AtomicBool,
}

/// When the lines a guard wrote are flushed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flush {
    /// At once, unless another thread waits to write, which then flushes
    /// for both (see `output`).
    UnlessFollowed,
    /// Later: the reader flushes when its input holds no complete line.
    Later,
}

impl ConnHandle {
    /// A new connection writing to `output`; its end goes to `end`.
    pub fn new(
        inner: &Arc<Inner>,
        output: Box<dyn std::io::Write + Send>,
        end: Sender<End>,
    ) -> Self {
        ConnHandle(Arc::new(Shared {
            state: Mutex::new(Conn::new(inner)),
            output: SharedOutput::new(output),
            changed: Condvar::new(),
            end,
            closed: AtomicBool::new(false),
        }))
    }

    /// The connection's state, locked; what it writes is flushed when it
    /// is let go (unless another writer follows).
    pub fn lock(&self) -> ConnGuard<'_> {
        self.0.lock(Flush::UnlessFollowed)
    }

    /// The state, locked by the reader: what it writes is flushed when the
    /// reader's input runs dry ([`ConnHandle::reading`]: one `write(2)` for
    /// a pipelined burst).
    pub fn lock_for_reader(&self) -> ConnGuard<'_> {
        self.0.lock(Flush::Later)
    }

    /// Whether the reader has complete lines in hand. When it runs out it
    /// flushes what it and the other writers left meanwhile (see `output`);
    /// nothing, without taking the output's lock, when nobody left any.
    pub fn reading(&self, lines_in_hand: bool) {
        let busy = &self.0.output.reader_busy;
        if lines_in_hand {
            busy.store(true, Ordering::Release);
        } else if busy.swap(false, Ordering::AcqRel) {
            let mut out = self.0.output.lock();
            if out.flush() {
                drop(out);
                self.0.failed();
            }
        }
    }

    /// Whether the connection was shut down: nothing more is read.
    pub fn is_closed(&self) -> bool {
        self.0.closed.load(Ordering::Acquire)
    }

    /// Announces the end of serving (the first one counts).
    pub fn end(&self, why: End) {
        let _ = self.0.end.send(why);
    }

    /// The connection as the server's registry of connections sees it.
    pub fn as_connection(&self) -> Arc<dyn Connection> {
        self.0.clone()
    }

    /// The end (see [`Conn::shut_down`]): every request still in flight is
    /// answered with `-32603`, then the output is flushed and closed.
    /// Returns the first write error.
    pub fn shut_down(&self) -> Result<(), Error> {
        self.lock().shut_down();
        self.0.closed.store(true, Ordering::Release);
        match self.0.output.lock().close() {
            Some(e) => Err(Error::Io(e)),
            None => Ok(()),
        }
    }

    /// Begins a prepared request: it is refused ([`Conn::refusal`], the
    /// only place that refuses one), answered at once (an error, a listen,
    /// a request of the legacy session), or it enters the in-flight map and
    /// runs on the pool, or waits for a slot, or (an inline one) is handed
    /// back for the caller to run ([`ConnHandle::run_inline`]). When the
    /// queue for slots is full after it, this waits for room: the reader's
    /// backpressure.
    pub fn begin(
        &self,
        id: RequestId,
        prepared: Result<Prepared, ErrorObject>,
        bytes: usize,
    ) -> Option<InlineJob> {
        let mut guard = self.lock_for_reader();
        guard.lines += 1;
        let job = match guard.refusal(&id).map_or(prepared, Err) {
            Ok(Prepared::Job(job)) => job,
            Ok(Prepared::Listen(accepted)) => {
                guard.listen(id, accepted);
                return None;
            }
            #[cfg(feature = "legacy")]
            Ok(Prepared::Legacy(request)) => {
                guard.legacy_request(&id, request);
                return None;
            }
            Err(error) => {
                guard.write_error(Some(&id), &error);
                return None;
            }
        };
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
        if job.inline {
            conn.in_flight.insert(id, seq, token, Stage::Inline);
            return Some(InlineJob {
                ctx,
                seq,
                work: job.work,
                #[cfg(feature = "legacy")]
                then: job.then,
            });
        }
        self.to_pool(guard, id, seq, ctx, job.work, bytes);
        None
    }

    /// Runs an inline request's handler, here and without the lock, and
    /// answers it ([`Conn::finish`]). An inline legacy request whose handler
    /// needs the client's input goes on on the pool: it waits for answers
    /// that only the reader can read.
    pub fn run_inline(&self, job: InlineJob) {
        let reply = call(job.work, &job.ctx);
        #[cfg(feature = "legacy")]
        let reply = match job.then {
            None => reply,
            Some(then) => match then(reply) {
                Ok(reply) => reply,
                Err(rest) => {
                    let mut guard = self.lock_for_reader();
                    // Out of the map as inline, back in as pooled: the same
                    // sequence number and token (unless shut down meanwhile).
                    if guard.in_flight.take(job.ctx.id(), job.seq).is_some() {
                        let id = job.ctx.id().clone();
                        self.to_pool(guard, id, job.seq, job.ctx, rest, 0);
                    }
                    return;
                }
            },
        };
        self.lock_for_reader().finish(job.ctx.id(), job.seq, reply);
    }

    /// Enters request `id` (of `ctx`, with its cancel token) in the map
    /// as pooled: it runs on the pool if a slot is free, or waits in the
    /// queue for one. When the queue is full after it, this waits for
    /// room: the reader's backpressure.
    fn to_pool(
        &self,
        mut guard: ConnGuard<'_>,
        id: RequestId,
        seq: u64,
        ctx: RequestContext,
        work: Work,
        bytes: usize,
    ) {
        let token = ctx.cancel_token();
        let handle = self.clone();
        let pooled: PoolJob = Box::new(move || {
            // Encoded before the lock: workers finishing together do not
            // wait on each other's encoding.
            let line = call(work, &ctx).into_line();
            handle.lock().finish(ctx.id(), seq, Reply::Line(line));
        });
        let conn = &mut *guard;
        if conn.in_flight.has_slot(conn.inner.config.max_running) {
            conn.in_flight.insert(id, seq, token, Stage::Running);
            conn.ready.push(pooled);
        } else {
            conn.in_flight
                .insert(id, seq, token, Stage::Queued(pooled, bytes));
            if conn.queue_full() {
                // The reader stops with lines in hand: what waits for its
                // flush goes out now, and writers flush their own meanwhile.
                drop(guard);
                self.reading(false);
                drop(self.lock_for_reader().wait_until(None, |c| !c.queue_full()));
            }
        }
    }
}

/// An inline request, begun: its handler runs on the reader, without the
/// connection's lock ([`ConnHandle::run_inline`]).
pub(crate) struct InlineJob {
    ctx: RequestContext,
    seq: u64,
    work: Work,
    #[cfg(feature = "legacy")]
    then: Option<crate::server::work::Then>,
}

impl Shared {
    fn lock(&self, flush: Flush) -> ConnGuard<'_> {
        ConnGuard {
            shared: self,
            state: Some(self.lock_state()),
            flush,
        }
    }

    fn lock_state(&self) -> MutexGuard<'_, Conn> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A write failed: the client is gone, and serving ends. Called
    /// without either lock held.
    fn failed(&self) {
        let _ = self.end.send(End::OutputFailed);
        let mut state = self.lock_state();
        state.failed = true;
        if state.waiters > 0 {
            self.changed.notify_all();
        }
    }
}

impl Outlet for Shared {
    fn notify(&self, id: &RequestId, seq: u64, line: Vec<u8>) {
        self.lock(Flush::UnlessFollowed).notify(id, seq, line);
    }

    #[cfg(feature = "legacy")]
    fn ask(
        &self,
        request: &RequestId,
        seq: u64,
        id: RequestId,
        line: &[u8],
    ) -> Result<crossbeam_channel::Receiver<AskReply>, AskFailed> {
        self.lock(Flush::UnlessFollowed).ask(request, seq, id, line)
    }

    #[cfg(feature = "legacy")]
    fn withdraw(&self, asks: &[RequestId]) {
        self.lock(Flush::UnlessFollowed).withdraw(asks);
    }
}

impl Connection for Shared {
    fn publish(&self, event: &ServerEvent) {
        self.lock(Flush::UnlessFollowed).publish(event);
    }

    /// Takes effect at once, as end of input would: a request read after
    /// `stop` returned is refused.
    fn stop(&self) {
        self.lock(Flush::UnlessFollowed).begin_shutdown();
        let _ = self.end.send(End::Stop);
    }
}

/// The connection's state, locked. Letting it go writes what it left to
/// write, hands the jobs that may start to the pool, and wakes the waiters
/// (each looks again at what it waits for).
pub(crate) struct ConnGuard<'a> {
    shared: &'a Shared,
    /// `None` only while let go.
    state: Option<MutexGuard<'a, Conn>>,
    flush: Flush,
}

impl Deref for ConnGuard<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.state.as_ref().expect("the state is held until let go")
    }
}

impl DerefMut for ConnGuard<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.state.as_mut().expect("the state is held until let go")
    }
}

impl Drop for ConnGuard<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            let_go(self.shared, state, self.flush);
        }
    }
}

impl ConnGuard<'_> {
    /// Waits, without holding the state, until `done` holds or `deadline`
    /// (`None`: no deadline) passes; what is pending is written and
    /// flushed first.
    pub fn wait_until(mut self, deadline: Option<Instant>, done: impl Fn(&Conn) -> bool) -> Self {
        let shared = self.shared;
        while !done(&self) {
            let now = Instant::now();
            if deadline.is_some_and(|at| now >= at) {
                break;
            }
            let mut state = self.state.take().expect("held until let go");
            if !state.pending.is_empty() || !state.ready.is_empty() {
                let_go(shared, state, Flush::UnlessFollowed);
                self.state = Some(shared.lock_state());
                continue;
            }
            state.waiters += 1;
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
            state.waiters -= 1;
            self.state = Some(state);
        }
        self
    }
}

/// Lets go of the state: the output's lock is taken before the state's is
/// let go (lines keep the order of the changes that wrote them), then what
/// is pending is written and flushed as `flush` says; the ready jobs go to
/// the pool and the waiters are woken. A failed write ends serving.
fn let_go(shared: &Shared, mut state: MutexGuard<'_, Conn>, flush: Flush) {
    let pending = std::mem::take(&mut state.pending);
    let ready = std::mem::take(&mut state.ready);
    let wake = state.waiters > 0;
    let inner = (!ready.is_empty()).then(|| Arc::clone(&state.inner));
    let out = (!pending.is_empty()).then(|| shared.output.lock());
    drop(state);
    if let Some(mut out) = out {
        let mut failed = false;
        for reply in pending {
            failed |= out.write_line(|w| reply.write_to(w));
        }
        match flush {
            Flush::UnlessFollowed => failed |= out.flush_unless_followed(),
            // The reader flushes when it runs out of lines (`ConnHandle::reading`).
            Flush::Later => shared.output.reader_busy.store(true, Ordering::Release),
        }
        drop(out);
        if failed {
            shared.failed();
        }
    }
    if let Some(inner) = inner {
        ready.into_iter().for_each(|job| inner.pool.submit(job));
    }
    if wake {
        shared.changed.notify_all();
    }
}
