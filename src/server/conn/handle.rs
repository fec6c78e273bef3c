//! Reaching a connection: [`ConnHandle`] (shared by the reader, the pool's
//! jobs, the notifier and `serve`), its lock ([`ConnGuard`]), and what
//! happens when the lock is let go: what was written is sent (unless the
//! reader will, or another thread is sending: see `output`), the jobs that
//! may start go to the pool, and the threads waiting for a change are woken.
//!
//! One lock: the output is part of the state, so lines are written in the
//! order of the changes that wrote them, from any thread. A client slower
//! than the server's writers makes them wait once a backlog builds; over
//! HTTP the write timeout bounds that (`HttpOptions::write_timeout`).

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

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
    /// Signalled when what a waiter waits for may have changed: room in the
    /// queue for slots, nothing left in flight, a failed output.
    changed: Condvar,
    /// Shut down: the reader reads no more (it looks without the lock).
    closed: AtomicBool,
}

/// When the lines a guard wrote are flushed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flush {
    /// When the guard is let go, unless the reader will.
    Now,
    /// By the reader, when its input holds no complete line.
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
            state: Mutex::new(Conn::new(inner, output, end)),
            changed: Condvar::new(),
            closed: AtomicBool::new(false),
        }))
    }

    /// The connection's state, locked; what it writes is flushed when it
    /// is let go (unless the reader will).
    pub fn lock(&self) -> ConnGuard<'_> {
        self.0.lock(Flush::Now)
    }

    /// The state, locked by the reader: what it writes is flushed when the
    /// reader's input runs dry ([`ConnHandle::ran_dry`]: one `write(2)` for
    /// a pipelined burst).
    pub fn lock_for_reader(&self) -> ConnGuard<'_> {
        self.0.lock(Flush::Later)
    }

    /// The reader ran out of complete lines: what it and the other writers
    /// left to it meanwhile is sent. `wrote`: whether it may have left any
    /// since it last ran dry (see `reader`).
    pub fn ran_dry(&self, wrote: bool) {
        if wrote {
            self.lock().reader_flushes = false;
        }
    }

    /// Whether the connection was shut down: nothing more is read.
    pub fn is_closed(&self) -> bool {
        self.0.closed.load(Ordering::Acquire)
    }

    /// Announces the end of serving (the first one counts).
    pub fn end(&self, why: End) {
        let _ = self.0.lock_state().end.send(why);
    }

    /// The connection as the server's registry of connections sees it.
    pub fn as_connection(&self) -> Arc<dyn Connection> {
        self.0.clone()
    }

    /// The end (see [`Conn::shut_down`]): every request still in flight is
    /// answered with `-32603`, then the output is flushed and closed.
    /// Returns the first write error.
    pub fn shut_down(&self) -> Result<(), Error> {
        let mut conn = self.lock();
        conn.shut_down();
        let mut conn = conn.wait_until(None, |c| !c.output.sending);
        self.0.closed.store(true, Ordering::Release);
        match conn.output.close() {
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
                #[cfg(feature = "legacy")]
                bytes,
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
                        self.to_pool(guard, id, job.seq, job.ctx, rest, job.bytes);
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
                // flush goes out now (`wait_until`).
                drop(guard.wait_until(None, |c| !c.queue_full()));
            }
        }
    }
}

/// An inline request, begun: its handler runs on the reader, without the
/// connection's lock ([`ConnHandle::run_inline`]).
pub(crate) struct InlineJob {
    ctx: RequestContext,
    seq: u64,
    /// The size of its line: it counts against `queue_bytes` if it goes
    /// on on the pool and has to wait for a slot.
    #[cfg(feature = "legacy")]
    bytes: usize,
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
}

impl Outlet for Shared {
    fn notify(&self, id: &RequestId, seq: u64, line: Vec<u8>) {
        self.lock(Flush::Now).notify(id, seq, line);
    }

    #[cfg(feature = "legacy")]
    fn ask(
        &self,
        request: &RequestId,
        seq: u64,
        id: RequestId,
        line: &[u8],
    ) -> Result<crossbeam_channel::Receiver<AskReply>, AskFailed> {
        self.lock(Flush::Now).ask(request, seq, id, line)
    }

    #[cfg(feature = "legacy")]
    fn withdraw(&self, asks: &[RequestId]) {
        self.lock(Flush::Now).withdraw(asks);
    }
}

impl Connection for Shared {
    fn publish(&self, event: &ServerEvent) {
        self.lock(Flush::Now).publish(event);
    }

    /// Takes effect at once, as end of input would: a request read after
    /// `stop` returned is refused.
    fn stop(&self) {
        let mut conn = self.lock(Flush::Now);
        conn.begin_shutdown();
        let _ = conn.end.send(End::Stop);
    }
}

/// The connection's state, locked. Letting it go flushes what it wrote,
/// hands the jobs that may start to the pool, and wakes the waiters (each
/// looks again at what it waits for).
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
    /// (`None`: no deadline) passes; the jobs that may start are handed
    /// over and what was written is sent first.
    pub fn wait_until(mut self, deadline: Option<Instant>, done: impl Fn(&Conn) -> bool) -> Self {
        let shared = self.shared;
        while !done(&self) {
            let now = Instant::now();
            if deadline.is_some_and(|at| now >= at) {
                break;
            }
            let mut state = self.state.take().expect("held until let go");
            if !state.ready.is_empty() || (state.output.unflushed && !state.output.sending) {
                // Nothing waits for a thread that sleeps: not even the reader.
                state.reader_flushes = false;
                let_go(shared, state, Flush::Now);
                self.state = Some(shared.lock_state());
                continue;
            }
            self.state = Some(wait(shared, state, deadline.map(|at| at - now)));
        }
        self
    }
}

/// Sleeps until the state changes (or `timeout` passes).
fn wait<'a>(
    shared: &'a Shared,
    mut state: MutexGuard<'a, Conn>,
    timeout: Option<Duration>,
) -> MutexGuard<'a, Conn> {
    state.waiters += 1;
    let mut state = match timeout {
        Some(timeout) => shared
            .changed
            .wait_timeout(state, timeout)
            .map(|(state, _)| state)
            .unwrap_or_else(|e| e.into_inner().0),
        None => shared
            .changed
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner),
    };
    state.waiters -= 1;
    state
}

/// Lets go of the state: what was written is sent (or left to the reader,
/// as `flush` says, or to the thread sending already); a writer far ahead
/// of a slow client waits for it; the ready jobs go to the pool once the
/// lock is let go (a worker woken on this CPU then does not find it
/// taken), and the waiters are woken.
fn let_go<'a>(shared: &'a Shared, mut state: MutexGuard<'a, Conn>, flush: Flush) {
    if state.output.unflushed {
        match flush {
            Flush::Later => state.reader_flushes = true,
            Flush::Now if !state.reader_flushes => state = send(shared, state),
            Flush::Now => {}
        }
    }
    while state.output.backlogged() {
        state = wait(shared, state, None);
    }
    let ready = std::mem::take(&mut state.ready);
    let wake = state.waiters > 0;
    let inner = (!ready.is_empty()).then(|| Arc::clone(&state.inner));
    drop(state);
    if let Some(inner) = inner {
        ready.into_iter().for_each(|job| inner.pool.submit(job));
    }
    if wake {
        shared.changed.notify_all();
    }
}

/// Sends what was written without the lock, and what the others write
/// meanwhile, until nothing is left; unless another thread is sending,
/// which then sends it (`Output::detach`): one send at a time, so lines
/// leave in the order they were written. A failed send ends serving.
fn send<'a>(shared: &'a Shared, mut state: MutexGuard<'a, Conn>) -> MutexGuard<'a, Conn> {
    while let Some(mut detached) = state.output.detach() {
        drop(state);
        // A writer that panics fails the output like one that errs: the
        // send must come back, or every writer after it would wait.
        let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| detached.send()))
            .unwrap_or_else(|_| Err(std::io::Error::other("the output's writer panicked")));
        state = shared.lock_state();
        if state.output.attach(detached, sent) {
            state.fail();
        }
        if state.waiters > 0 {
            shared.changed.notify_all();
        }
    }
    state
}
