//! Reaching a connection: [`ConnHandle`], shared by the reader, the pool's
//! jobs, the notifier and `serve`.
//!
//! Every change goes through one call, [`ConnHandle::act`]: take the lock,
//! change the state, let the lock go, and then, in plain sight, hand the
//! jobs that may start to the pool, wake the threads that wait for a
//! change, and send what the change wrote. Taking and letting go of the
//! lock does nothing else, and no `Drop` here does any of it.
//!
//! What the change wrote is sent without the lock, one thread at a time;
//! who sends it, and when, is `send.rs` (the `Shared::send*` calls).

mod send;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::output::Room;
use super::{Conn, End, Writer};
use crate::error::Error;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::cancel::CancelToken;
use crate::server::connections::Connection;
use crate::server::context::{Holding, Outlet, RequestContext, Sink};
use crate::server::dispatch::Prepared;
use crate::server::event::ServerEvent;
use crate::server::in_flight::Stage;
use crate::server::pool::Job;
use crate::server::reply::Reply;
use crate::server::work::{Work, call};
use crate::server::{Inner, Server};

/// A connection, shared by the threads that act on it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ConnHandle(Arc<Shared>);

struct Shared {
    state: Mutex<Conn>,
    /// The server: its pool takes the jobs and sends handed over.
    inner: Arc<Inner>,
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
    pub fn new(inner: &Arc<Inner>, output: Writer, end: Sender<End>) -> Self {
        let room = match &output {
            Writer::Lines(writer) => writer.room(),
            Writer::Bytes(_) => None,
        };
        ConnHandle(Arc::new_cyclic(|me| Shared {
            state: Mutex::new(Conn::new(inner, output, end)),
            inner: Arc::clone(inner),
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
        // Through `send_as`, which the legacy front end's asks call too: a
        // server-only build would otherwise leave it unused.
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

    /// Sends what was left to the reader or the shutdown ([`Sending::BeforeRead`],
    /// [`Sending::AtShutdown`]), and what was written before it; lines
    /// other threads wrote after it are theirs to send. The reader calls it
    /// before every read of its input (`reader::SendFirst`); over HTTP a
    /// POST, which has no next line, calls it once its request is
    /// dispatched, and the thread serving it on a stop.
    pub fn send_deferred(&self) {
        let deferred = self.0.lock_state().deferred;
        self.0.send_written(deferred);
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

    /// Lets the client go if it is too slow to keep
    /// (`Shared::let_go_if_stalled`: less than 16 KiB of a send in progress
    /// taken in the write timeout); else returns how long it has left.
    pub fn let_go_if_stalled(&self) -> Option<Duration> {
        let state = self.0.lock_state();
        self.0.let_go_if_stalled(state).map(|(_, left)| left)
    }

    /// The end (see [`Conn::close`]): every request still in flight is
    /// answered with `-32603`, everything written is sent, then the output
    /// is closed, in the same hold of the lock as the last look (nothing is
    /// written after [`Conn::close`]). Returns the first failed send.
    ///
    /// With `watch` the sends go to the pool, and the client is let go if
    /// it is too slow to keep (`Shared::let_go_if_stalled`: less than 16
    /// KiB of a send in progress taken in the write timeout): the output is
    /// closed with the send still in its `write(2)` (whose writer is
    /// dropped when it comes back, if ever), and this returns `TimedOut`.
    /// Without it, this thread sends and waits as long as it takes: for a
    /// writer that never waits for its client (an HTTP response body).
    pub fn shut_down(&self, watch: bool) -> Result<(), Error> {
        let shared = &*self.0;
        shared.act_unsent(Conn::close);
        let mut state = shared.lock_state();
        // (An output given up on, `Conn::let_go`, waits no more.)
        while !state.output.is_closed() && (state.output.sending() || state.output.waiting() > 0) {
            if !watch {
                state = shared.send_or_wait(state);
                continue;
            }
            state = match shared.let_go_if_stalled(state) {
                Some((state, left)) => shared.queue_or_wait(state, Some(left)),
                None => shared.lock_state(),
            };
        }
        shared.closed.store(true, Ordering::Release);
        let (writer, error) = state.output.close();
        drop(state);
        // What the writers waiting for a send given up on wrote was dropped
        // with the output: they wait no more (`Shared::send_written`).
        shared.changed.notify_all();
        let error = match (writer, error) {
            // Flushed and dropped without the lock: the peer sees the end
            // (a writer of lines holds nothing).
            (Some(Writer::Bytes(mut writer)), None) => writer.flush().err(),
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
        // The inline request for the caller to run, if it is one, and
        // whether the connection is backed up after it.
        let (inline, backed_up) = self.act(Sending::BeforeRead, |conn| {
            conn.lines += 1;
            let runnable = match conn.refusal(&id).map_or(prepared, Err) {
                Ok(Prepared::Run(runnable)) => runnable,
                Ok(Prepared::Listen(accepted)) => {
                    conn.listen(id, accepted);
                    return (None, false);
                }
                Err(error) => {
                    conn.write_error(Some(&id), &error);
                    return (None, false);
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
                let inline = InlineRunnable {
                    ctx,
                    seq,
                    work: runnable.work,
                    bytes,
                };
                return (Some(inline), false);
            }
            let backed_up = self.enter_pooled(conn, id, seq, ctx, runnable.work, bytes);
            (None, backed_up)
        });
        if backed_up {
            self.wait_for_room();
        }
        inline
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

    /// See [`ConnHandle::act`].
    fn act<T>(&self, sending: Sending, change: impl FnOnce(&mut Conn) -> T) -> T {
        let (value, written) = self.act_unsent(change);
        if let Some(written) = written {
            self.send_as(sending, written);
        }
        value
    }

    /// See [`ConnHandle::act_unsent`].
    fn act_unsent<T>(&self, change: impl FnOnce(&mut Conn) -> T) -> (T, Option<u64>) {
        let mut state = self.lock_state();
        let before = state.output.written();
        let value = change(&mut state);
        let written = state.output.written();
        let ready = std::mem::take(&mut state.ready);
        let wake = state.waiters > 0;
        drop(state);
        // Handed over once the lock is let go: a worker woken on this CPU
        // then does not find it taken.
        for job in ready {
            self.inner.pool.submit(job);
        }
        if wake {
            self.changed.notify_all();
        }
        (value, (written > before).then_some(written))
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
    /// An event held back for a client that is behind writes nothing, and
    /// waits once too much is held (`Conn::publisher_waits`).
    fn publish(&self, event: &ServerEvent) {
        let ((stream, waits), written) = self.act_unsent(|conn| {
            conn.publish(event);
            (conn.output.is_stream(), conn.publisher_waits())
        });
        match written {
            Some(written) if !stream => self.send_written(written),
            Some(_) => self.send_in_background(),
            None if waits => self.send_in_background(),
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
