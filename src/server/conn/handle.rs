//! Reaching a connection: [`ConnHandle`], shared by the reader, the pool's
//! jobs, the notifier and `serve`.
//!
//! Every change goes through one call, [`ConnHandle::act`]: take the lock,
//! change the state, let the lock go, and then, in plain sight, hand the
//! jobs that may start to the pool, wake the threads that wait for a
//! change, and send what the change wrote. Taking and letting go of the
//! lock does nothing else, and no `Drop` here does any of it.
//!
//! What was written is sent without the lock, one thread at a time
//! ([`Output::detach`](super::output::Output::detach)), and each send
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
//! (`Shared::send_in_background`), and waits only while more than the
//! backlog waits on that connection, for a client that takes some of it:
//! one that takes not a byte for [`LET_GO`] is let go. (To a writer of lines, which never
//! waits for its client, it sends itself: over HTTP the event is then on
//! the listener's socket before the publisher's reply is on its call's.)
//! (Over HTTP a send never waits for the client: a request's notifications
//! wait for room after it instead, `Outlet::notify` below, and a response
//! body's own thread writes what the socket did not take:
//! `server::http::body`.)
//!
//! Two more changes leave their send to someone else, each to an event
//! that is never a blocking read (ARCHITECTURE.md, "Who sends, and when"):
//! the reader holds back what it writes while it has lines in hand
//! ([`Sending::BeforeRead`]: one `write(2)` for a pipelined burst), and
//! sends it before it reads ([`ConnHandle::send_held`], called by the
//! reader's input before every read: `reader::SendFirst`) or sleeps
//! ([`ConnHandle::wait_until`] sends first); between the two it only
//! dispatches the lines it holds and runs inline handlers, which promise
//! not to block. A stop ([`Sending::AtShutdown`]) leaves the final results
//! it writes to the connection's own shutdown, which it starts: the caller
//! of `stop` never waits on a client.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::output::{BACKLOG, BUFFER, Detached, Room};
use super::{Conn, End, Writer};
use crate::error::Error;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::cancel::CancelToken;
use crate::server::connections::Connection;
use crate::server::context::{Holding, Outlet, RequestContext, Sink};
use crate::server::dispatch::Prepared;
use crate::server::event::ServerEvent;
use crate::server::in_flight::Stage;
use crate::server::pool::{Blocking, Job};
use crate::server::reply::Reply;
use crate::server::work::{Work, call};
use crate::server::{Inner, Server};

/// How long a publisher waits for a client that takes none of its output
/// while more than the backlog waits for it, before the client is taken to
/// be gone (`Conn::let_go`): as long as a Streamable HTTP client's write
/// timeout (`HttpOptions::write_timeout`'s default).
pub(super) const LET_GO: Duration = Duration::from_secs(10);

/// A connection, shared by the threads that act on it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ConnHandle(Arc<Shared>);

struct Shared {
    state: Mutex<Conn>,
    /// Signalled when what a waiter waits for may have changed: room in the
    /// queue for slots, nothing left in flight, a send over.
    changed: Condvar,
    /// Shut down: the reader reads no more (it looks without the lock).
    closed: AtomicBool,
    /// The output's wait for room, when its writer has one
    /// (`output::LineWriter::room`: an HTTP response body).
    room: Option<Room>,
    /// Itself, for a send handed to the pool ([`Shared::send`]).
    me: Weak<Shared>,
}

/// When what a change wrote is sent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sending {
    /// Before [`ConnHandle::act`] returns: sent by this thread, or taken
    /// by a send that was waiting for the one in progress (see the module
    /// docs).
    Now,
    /// By the reader, before it next reads or waits, or at once when a
    /// buffer's worth waits already. Only the reader's own calls use it.
    BeforeRead,
    /// By the connection's shutdown, which the change starts (a stop):
    /// `serve`'s thread, or over HTTP the thread serving the request.
    AtShutdown,
}

impl ConnHandle {
    /// A new connection writing to `output` (a byte stream, or a writer
    /// of lines told what each is: `output::Writer`); its end goes to
    /// `end`.
    pub fn new(inner: &Arc<Inner>, output: impl Into<Writer>, end: Sender<End>) -> Self {
        let output = output.into();
        let room = match &output {
            Writer::Lines(writer) => writer.room(),
            Writer::Bytes(_) => None,
        };
        ConnHandle(Arc::new_cyclic(|me| Shared {
            state: Mutex::new(Conn::new(inner, output, end)),
            changed: Condvar::new(),
            closed: AtomicBool::new(false),
            room,
            me: me.clone(),
        }))
    }

    /// Changes the connection with `change` under its lock; then, without
    /// it: hands the jobs that may start to the pool, wakes the threads
    /// waiting for a change, and sees what the change wrote sent as
    /// `sending` says (with [`Sending::Now`] it waits for at most the
    /// `write(2)` in progress and its own: see the module docs).
    pub fn act<T>(&self, sending: Sending, change: impl FnOnce(&mut Conn) -> T) -> T {
        let (value, written) = self.act_unsent(change);
        if let Some(written) = written {
            self.send_as(sending, written);
        }
        value
    }

    /// [`ConnHandle::act`] without the send: for a caller that holds a lock
    /// of its own while it acts (a legacy front end's asks), which a
    /// `write(2)` must not hold. It sends once it let go of it
    /// ([`ConnHandle::send_as`], with the count returned: the lines written
    /// up to the change's last, `None` if it wrote nothing).
    pub fn act_unsent<T>(&self, change: impl FnOnce(&mut Conn) -> T) -> (T, Option<u64>) {
        self.0.act_unsent(change)
    }

    /// Sees the first `written` lines, written by a change of this thread,
    /// sent as `sending` says.
    pub fn send_as(&self, sending: Sending, written: u64) {
        self.0.send_as(sending, written);
    }

    /// Reads the connection's state under its lock; nothing else happens.
    pub fn look<T>(&self, read: impl FnOnce(&Conn) -> T) -> T {
        read(&self.0.lock_state())
    }

    /// Sends what was held back ([`Sending::BeforeRead`],
    /// [`Sending::AtShutdown`]), and what was written before it; lines
    /// other threads wrote after it are theirs to send. The reader calls it
    /// before every read of its input (`reader::SendFirst`); over HTTP a
    /// POST, which has no next line, calls it once its request is
    /// dispatched, and the thread serving it on a stop.
    pub fn send_held(&self) {
        let held = self.0.lock_state().held;
        self.0.send_written(held);
    }

    /// Waits until `done` holds or `deadline` (`None`: none) passes, and
    /// says whether `done` holds. Before it sleeps it sees what waits to be
    /// sent on its way: nothing decided waits behind a thread that sleeps,
    /// the reader included. Without a deadline it sends it itself (the
    /// reader's wait for room: a `write(2)` to a slow client is its
    /// backpressure); with one it hands the send to the pool, since a
    /// `write(2)` may block for as long as the client likes, and the wait
    /// must end by its deadline (the shutdown's grace period).
    pub fn wait_until(&self, deadline: Option<Instant>, done: impl Fn(&Conn) -> bool) -> bool {
        let shared = &*self.0;
        let mut state = shared.lock_state();
        loop {
            if done(&state) {
                return true;
            }
            let now = Instant::now();
            if deadline.is_some_and(|at| now >= at) {
                return false;
            }
            state = match deadline {
                None => shared.send_or_wait(state),
                Some(at) => shared.queue_or_wait(state, Some(at - now)),
            };
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

    /// The end (see [`Conn::close`]): every request still in flight is
    /// answered with `-32603`, everything written is sent, then the output
    /// is closed, in the same hold of the lock as the last look (nothing is
    /// written after [`Conn::close`]). Returns the first failed send.
    ///
    /// With `patience` the sends go to the pool, and a client that takes
    /// none of the output for that long is given up on: the output is
    /// closed with the send still in its `write(2)` (whose writer is
    /// dropped when it comes back, if ever), and this returns `TimedOut`.
    /// A client that takes any of it (a byte of a long send, not only the
    /// send's end: `Output::progress`) is given as long again; that is
    /// looked at once per `patience`, so a client that stopped taking is
    /// given up on between `patience` and twice it after its last byte.
    /// Without it, this thread sends and waits as long as it takes: for a
    /// writer that never waits for its client (an HTTP response body).
    pub fn shut_down(&self, patience: Option<Duration>) -> Result<(), Error> {
        let shared = &*self.0;
        shared.act_unsent(Conn::close);
        let mut state = shared.lock_state();
        let mut progress = state.output.progress();
        let mut deadline = patience.and_then(|p| Instant::now().checked_add(p));
        let mut gave_up = None;
        // (An output given up on already, `Conn::let_go`, waits no more.)
        while !state.output.is_closed() && (state.output.sending() || state.output.waiting() > 0) {
            let Some(patience) = patience else {
                state = shared.send_or_wait(state);
                continue;
            };
            if state.output.progress() != progress {
                // The client took some since the last look.
                progress = state.output.progress();
                deadline = Instant::now().checked_add(patience);
            }
            let now = Instant::now();
            if deadline.is_some_and(|at| now >= at) {
                gave_up = Some(patience);
                break;
            }
            state = shared.queue_or_wait(state, deadline.map(|at| at - now));
        }
        shared.closed.store(true, Ordering::Release);
        let (writer, error) = state.output.close();
        drop(state);
        // What the writers waiting for a send given up on wrote was dropped
        // with the output: they wait no more (`Shared::send_written`).
        shared.changed.notify_all();
        if let Some(patience) = gave_up {
            let took_nothing = format!(
                "the client took none of the server's output for {patience:?} after the end of serving, and its last replies were not sent: a client must read the server's output until it ends"
            );
            return Err(Error::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                took_nothing,
            )));
        }
        let error = match (writer, error) {
            // Flushed and dropped without the lock: the peer sees the end.
            (Some(mut writer), None) => writer.flush().err(),
            (_, error) => error,
        };
        error.map_or(Ok(()), |e| Err(Error::Io(e)))
    }

    /// Begins a prepared request (the reader's call): it is refused
    /// ([`Conn::refusal`], the only place that refuses one), answered at
    /// once (an error, a listen), or it enters the in-flight map and runs
    /// on the pool, or waits for a slot, or (an inline one) is handed back
    /// for the caller to run ([`ConnHandle::run_inline`]). When the
    /// connection is backed up after it ([`Conn::backed_up`]: the queue for
    /// slots is full, or more than a megabyte waits to be sent), this waits
    /// for room: the reader's backpressure.
    pub fn begin(
        &self,
        id: RequestId,
        prepared: Result<Prepared, ErrorObject>,
        bytes: usize,
    ) -> Option<InlineRunnable> {
        let begun = self.act(Sending::BeforeRead, |conn| {
            conn.lines += 1;
            let runnable = match conn.refusal(&id).map_or(prepared, Err) {
                Ok(Prepared::Run(runnable)) => runnable,
                Ok(Prepared::Listen(accepted)) => {
                    conn.listen(id, accepted);
                    return Begun::Answered;
                }
                Err(error) => {
                    conn.write_error(Some(&id), &error);
                    return Begun::Answered;
                }
            };
            let seq = conn.in_flight.new_seq();
            let token = CancelToken::new();
            let outlet: Arc<dyn Outlet> = self.0.clone();
            let ctx = RequestContext::new(
                id.clone(),
                runnable.meta,
                token.clone(),
                Sink::Conn { outlet, seq },
                Server {
                    inner: Arc::clone(&conn.inner),
                },
                runnable.retry,
            );
            if runnable.inline {
                conn.in_flight.insert(id, seq, token, Stage::Inline);
                return Begun::Inline(InlineRunnable {
                    ctx,
                    seq,
                    work: runnable.work,
                    bytes,
                });
            }
            Begun::Pooled {
                backed_up: self.enter_pooled(conn, id, seq, ctx, runnable.work, bytes),
            }
        });
        match begun {
            Begun::Inline(inline) => Some(inline),
            Begun::Pooled { backed_up: true } => {
                self.wait_for_room();
                None
            }
            Begun::Pooled { backed_up: false } | Begun::Answered => None,
        }
    }

    /// Runs an inline request's handler, here and without the lock, and
    /// answers it ([`Conn::finish`]). When its work hands back the rest
    /// ([`Reply::Later`]: a legacy request that must wait for the client's
    /// answers, which only the reader can read), the rest goes on on the
    /// pool as the same request: the same sequence number and token.
    pub fn run_inline(&self, inline: InlineRunnable) {
        let InlineRunnable {
            ctx,
            seq,
            work,
            bytes,
        } = inline;
        match call(work, &ctx) {
            Reply::Later(rest) => {
                let backed_up = self.act(Sending::BeforeRead, |conn| {
                    // Out of the map as inline, back in as pooled (unless
                    // cancelled or shut down meanwhile).
                    let id = ctx.id().clone();
                    conn.in_flight.take(&id, seq).is_some()
                        && self.enter_pooled(conn, id, seq, ctx, rest, bytes)
                });
                if backed_up {
                    self.wait_for_room();
                }
            }
            reply => {
                let id = ctx.id();
                self.act(Sending::BeforeRead, |conn| conn.finish(id, seq, reply));
            }
        }
    }

    /// Enters request `id` (of `ctx`, with its cancel token) in the map
    /// as pooled: it runs on the pool if it may start now
    /// ([`Conn::may_start`]: nothing queued before it, a slot free, the
    /// backlog small; `Conn::ready`, which [`ConnHandle::act`] hands
    /// over), or waits in the queue. Returns whether the connection is
    /// backed up after it ([`Conn::backed_up`]).
    fn enter_pooled(
        &self,
        conn: &mut Conn,
        id: RequestId,
        seq: u64,
        ctx: RequestContext,
        work: Work,
        bytes: usize,
    ) -> bool {
        let token = ctx.cancel_token();
        let handle = self.clone();
        let pooled: Job = Box::new(move |blocking| {
            // The handler may block (the pool then starts a thread for the
            // jobs behind it). (A pooled job's work runs its rest itself:
            // `Reply::Later` is an inline request's.)
            let reply = blocking.may_block(|| match call(work, &ctx) {
                Reply::Later(rest) => call(rest, &ctx),
                reply => reply,
            });
            // Encoded before the lock: workers finishing together do not
            // wait on each other's encoding.
            let reply = reply.encoded();
            let ((), written) = handle.act_unsent(|conn| conn.finish(ctx.id(), seq, reply));
            if let Some(written) = written {
                handle.0.send_unless_sending(written, blocking);
            }
        });
        if conn.may_start() {
            conn.in_flight.insert(id, seq, token, Stage::Running);
            conn.ready.push(pooled);
        } else {
            conn.in_flight
                .insert(id, seq, token, Stage::Queued(pooled, bytes));
        }
        conn.backed_up()
    }

    /// The reader's backpressure ([`Conn::backed_up`]): it waits for room
    /// before it reads another line (what waits to be sent is sent first,
    /// unless a send is in progress: [`ConnHandle::wait_until`]).
    fn wait_for_room(&self) {
        self.wait_until(None, |c| !c.backed_up());
    }
}

/// What [`ConnHandle::begin`] did with a request.
#[allow(
    clippy::large_enum_variant,
    reason = "returned once from the lock to the reader, never stored; boxing the runnable would cost an allocation per inline request"
)]
enum Begun {
    /// Refused or answered at once.
    Answered,
    /// Inline: the caller runs it.
    Inline(InlineRunnable),
    /// On the pool or queued for a slot; the reader waits for room first
    /// if the connection is backed up.
    Pooled { backed_up: bool },
}

/// An inline request, begun: its handler runs on the reader, without the
/// connection's lock ([`ConnHandle::run_inline`]).
pub(crate) struct InlineRunnable {
    ctx: RequestContext,
    seq: u64,
    work: Work,
    /// The size of its line: it counts against `queue_bytes` if its rest
    /// goes on on the pool and has to wait for a slot.
    bytes: usize,
}

impl Shared {
    fn lock_state(&self) -> MutexGuard<'_, Conn> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// See [`ConnHandle::act`] (the same, for the connection's own traits).
    fn act<T>(&self, sending: Sending, change: impl FnOnce(&mut Conn) -> T) -> T {
        let (value, written) = self.act_unsent(change);
        if let Some(written) = written {
            self.send_as(sending, written);
        }
        value
    }

    /// See [`ConnHandle::send_as`].
    fn send_as(&self, sending: Sending, written: u64) {
        match sending {
            Sending::Now => self.send_written(written),
            held => {
                let waiting = {
                    let mut state = self.lock_state();
                    state.held = state.held.max(written);
                    state.output.waiting()
                };
                if held == Sending::BeforeRead && waiting >= BUFFER {
                    self.send_written(written);
                }
            }
        }
    }

    /// See [`ConnHandle::act_unsent`].
    fn act_unsent<T>(&self, change: impl FnOnce(&mut Conn) -> T) -> (T, Option<u64>) {
        let mut state = self.lock_state();
        let before = state.output.written();
        let value = change(&mut state);
        let written = state.output.written();
        let ready = std::mem::take(&mut state.ready);
        let wake = state.waiters > 0;
        let inner = (!ready.is_empty()).then(|| Arc::clone(&state.inner));
        drop(state);
        // Handed over once the lock is let go: a worker woken on this CPU
        // then does not find it taken.
        if let Some(inner) = inner {
            ready.into_iter().for_each(|job| inner.pool.submit(job));
        }
        if wake {
            self.changed.notify_all();
        }
        (value, (written > before).then_some(written))
    }

    /// Sees the first `written` lines on their way: returns once a send
    /// took them, sending them itself (with whatever else waits) unless
    /// another thread is sending, whose `write(2)` it then waits for first.
    /// At most one send: a thread is never held sending for others.
    fn send_written(&self, written: u64) {
        let mut state = self.lock_state();
        while !state.output.taken(written) {
            match state.output.detach() {
                Some(detached) => {
                    drop(state);
                    return self.send(detached);
                }
                None => state = self.wait(state, None),
            }
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
    fn send_unless_sending(&self, written: u64, blocking: &Blocking) {
        let mut state = self.lock_state();
        if state.output.taken(written) || state.send_queued {
            return;
        }
        let gather = state.output.is_stream() && state.inner.pool.waiting() > 0;
        if gather && !state.output.sending() {
            state.send_queued = true;
            let inner = Arc::clone(&state.inner);
            drop(state);
            return self.queue_send(&inner);
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
    fn send(&self, mut detached: Detached) {
        // A writer that panics fails the output like one that errs: the
        // send must come back, or every writer after it would wait.
        let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| detached.send()))
            .unwrap_or_else(|_| Err(std::io::Error::other("the output's writer panicked")));
        let ((more, orphan), _) = self.act_unsent(|conn| {
            let (more, orphan) = conn.sent(detached, sent);
            conn.send_queued |= more;
            (more.then(|| Arc::clone(&conn.inner)), orphan)
        });
        // A client given up on: its writer goes without the lock.
        drop(orphan);
        if let Some(inner) = more {
            self.queue_send(&inner);
        }
    }

    /// Queues a send of what waits on the pool ([`Shared::send_waiting`],
    /// as a send: `Pool::submit_send`); the caller set `Conn::send_queued`.
    fn queue_send(&self, inner: &Inner) {
        if let Some(shared) = self.me.upgrade() {
            (inner.pool).submit_send(Box::new(move |blocking| shared.send_waiting(blocking)));
        }
    }

    /// A queued send: sends what waits, unless a send is in progress (its
    /// end sees to it) or nothing waits (a thread that wrote it and waits
    /// took it).
    fn send_waiting(&self, blocking: &Blocking) {
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
    fn send_or_wait<'a>(&'a self, mut state: MutexGuard<'a, Conn>) -> MutexGuard<'a, Conn> {
        match state.output.detach() {
            Some(detached) => {
                drop(state);
                self.send(detached);
                self.lock_state()
            }
            None => self.wait(state, None),
        }
    }

    /// One step of a wait that must not block on the client: hands what
    /// waits to the pool as a send ([`Shared::queue_send`]) unless a send
    /// is in progress or queued (its end sees to it), then sleeps until the
    /// state changes or `timeout` passes.
    fn queue_or_wait<'a>(
        &'a self,
        mut state: MutexGuard<'a, Conn>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Conn> {
        let idle = !state.output.sending() && !state.send_queued;
        if idle && state.output.waiting() > 0 {
            state.send_queued = true;
            let inner = Arc::clone(&state.inner);
            drop(state);
            self.queue_send(&inner);
            return self.lock_state();
        }
        self.wait(state, timeout)
    }

    /// Sees what waits sent without this thread's writing it: hands it to
    /// the pool as a send ([`Shared::queue_send`]) unless a send is in
    /// progress or queued (its end sees to it). Then, while more than
    /// [`BACKLOG`] waits to be sent (a client slow to read), it waits, and
    /// what piles up behind such a client is bounded: a publisher's
    /// backpressure, as the backlog is the reader's (`Conn::backed_up`).
    /// A client that takes not a byte of it for [`LET_GO`] is let go
    /// (`Conn::let_go`): else one that stopped reading for good would hold
    /// every publisher of the server for good.
    fn send_in_background(&self) {
        let mut state = self.lock_state();
        let (mut progress, mut since) = (state.output.progress(), Instant::now());
        loop {
            let idle = !state.output.sending() && !state.send_queued;
            if idle && state.output.waiting() > 0 {
                state.send_queued = true;
                let inner = Arc::clone(&state.inner);
                drop(state);
                self.queue_send(&inner);
                state = self.lock_state();
                continue;
            }
            if state.output.waiting() <= BACKLOG {
                return;
            }
            if state.output.progress() != progress {
                (progress, since) = (state.output.progress(), Instant::now());
            }
            let waited = since.elapsed();
            if waited >= LET_GO {
                let writer = state.let_go();
                drop(state);
                drop(writer);
                // The other publishers waiting on it find nothing waiting.
                self.changed.notify_all();
                return;
            }
            state = self.wait(state, Some(LET_GO - waited));
        }
    }

    /// Sleeps until the state changes (or `timeout` passes).
    fn wait<'a>(
        &'a self,
        mut state: MutexGuard<'a, Conn>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Conn> {
        state.waiters += 1;
        let mut state = match timeout {
            Some(timeout) => self
                .changed
                .wait_timeout(state, timeout)
                .map(|(state, _)| state)
                .unwrap_or_else(|e| e.into_inner().0),
            None => self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner),
        };
        state.waiters -= 1;
        state
    }
}

impl Outlet for Shared {
    /// Writes a request's notification; then, the send over, waits for
    /// room where the output says to (`output::LineWriter::room`), so a
    /// handler that notifies faster than its client reads is held, but
    /// never while it holds the send other writers wait for.
    fn notify(&self, id: &RequestId, seq: u64, line: Vec<u8>) {
        self.act(Sending::Now, |conn| conn.notify(id, seq, line));
        if let Some(room) = &self.room {
            room();
        }
    }

    fn stop_holding(&self, id: &RequestId, seq: u64) -> Holding {
        self.act(Sending::Now, |conn| conn.stop_holding(id, seq))
    }

    fn hold_again(&self, id: &RequestId, seq: u64) {
        self.act(Sending::Now, |conn| conn.hold_again(id, seq));
    }
}

impl Connection for Shared {
    /// Writes the event for the subscriptions that asked for it, and hands
    /// its send to the pool ([`Shared::send_in_background`]): a publisher
    /// reaches every connection in turn (`Connections::publish_here`), and
    /// a client that stopped reading must not hold up the others' events,
    /// nor the handler that published (its reply). A writer of lines (an
    /// HTTP response body) never waits for its client, so the publisher
    /// sends to it itself, as before: the event is on the listener's
    /// socket before the publisher's reply is on its call's
    /// (`http::what_a_tool_publishes_is_on_the_listeners_socket_before_its_reply_is`).
    fn publish(&self, event: &ServerEvent) {
        let (stream, written) = self.act_unsent(|conn| {
            conn.publish(event);
            conn.output.is_stream()
        });
        match written {
            Some(written) if !stream => self.send_written(written),
            Some(_) => self.send_in_background(),
            None => {}
        }
    }

    /// Takes effect at once, as end of input would: a request read after
    /// `stop` returned is refused.
    fn stop(&self) {
        self.act(Sending::AtShutdown, |conn| {
            conn.begin_shutdown();
            let _ = conn.end.send(End::Stop);
        });
    }
}
