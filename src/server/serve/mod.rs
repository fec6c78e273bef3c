//! The driver: the reader thread, and the owner loop that runs on the
//! thread that called [`Server::serve`](crate::Server::serve).
//!
//! ```text
//! input ──► mcp-reader ──► inbox ──► owner ──────────────► output (8 KiB buffer, one lock)
//!              │             ▲ ▲       │ pooled jobs            ▲
//!              │             │ └ Finished ┴► mcp-worker-N ──────┘ its reply, its notifications
//!              └─ pooled jobs (owner's state locked) ──┘
//!                            └─ Publish ◄── Notifier (any thread)
//! ```
//!
//! The owner's state (`Owner`: the cancellation map, the subscription
//! table, the pool, the legacy session) is behind one mutex. The owner
//! thread holds it while it handles an event, and writes everything but
//! what pooled handlers write: a worker writes its request's reply and
//! notifications itself, under the output's lock and while the request's
//! gate is open (`shared_output`), so a reply is written only if its
//! request was not cancelled and no request is answered twice, without a
//! hand-off back to the owner. The reader holds the owner's state while it
//! starts a pooled request itself (`direct`), which it may do only when
//! the owner has handled every line sent to it before: lines take effect
//! in their order whichever thread acts on them. Why no writer thread, and
//! why the reader starts pooled requests: each thread hand-off costs a
//! wake-up, several microseconds on one core and tens across cores
//! (DESIGN.md, BENCHMARKS.md). For the same reason the owner, like a pool
//! worker, spins (yielding) for a moment before it sleeps when the process
//! has more than one CPU (`spin_for_event`).
//!
//! Backpressure without a cycle of bounded channels: before it reads a
//! line the reader takes a read-ahead credit (`reader::ReadAhead`), and the
//! owner gives it back once it is done with the line, or, for a request
//! that must wait for a free worker, once that request starts. So at most
//! `queue_limit` lines and, past one line, about `queue_bytes` bytes are
//! read but not started; past that the reader stops reading, while
//! everything it already read (cancellations included) is still handled.
//!
//! The owner's work is split by job: `requests.rs` the client's messages,
//! `direct.rs` the reader's fast path, `publish.rs` the application's
//! events, `legacy_client.rs` a legacy session and the server's asks,
//! `output.rs` the writes.

#[cfg(feature = "legacy")]
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::error::Error;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::cancel::CancelToken;
use crate::server::connections::{ConnectionHandle, PUBLISH_CREDITS};
use crate::server::context::RequestContext;
#[cfg(feature = "legacy")]
use crate::server::event::AskReply;
use crate::server::event::Event;
use crate::server::heap;
use crate::server::in_flight::{Entry, InFlight};
#[cfg(feature = "legacy")]
use crate::server::legacy::LegacySession;
use crate::server::pool::{Finished, Pool, PoolJob, SPIN, STALL, spin_recv};
use crate::server::reader;
use crate::server::shared_output::SharedOutput;
use crate::server::subscriptions::SubscriptionTable;
use crate::server::work::Work;
use crate::server::{Inner, Server};
use crate::transport::Transport;

mod direct;
#[cfg(feature = "legacy")]
mod legacy_client;
mod output;
mod publish;
mod requests;

impl Server {
    /// Serves one connection: blocks until its input ends or
    /// [`StopHandle::stop`](crate::StopHandle::stop) is called, then shuts down (see
    /// [`ServerBuilder::shutdown_grace`](crate::ServerBuilder::shutdown_grace)) and returns.
    ///
    /// The calling thread becomes the connection's owner: it writes every
    /// output line and runs inline handlers. Several connections may be
    /// served at once from different threads.
    ///
    /// Returns an error only when the output could not be written (the
    /// client went away) or a thread could not be started.
    pub fn serve(&self, transport: Transport) -> Result<(), Error> {
        serve(&self.inner, transport)
    }
}

/// Serves one connection until its input ends or a stop is requested.
fn serve(inner: &Arc<Inner>, transport: Transport) -> Result<(), Error> {
    let config = &inner.config;
    let (reader, writer) = transport.into_parts();
    let (inbox_tx, inbox) = crossbeam_channel::unbounded();
    // Capacity = how many lines may be read but not yet started.
    let ahead = Arc::new(reader::ReadAhead::new(
        config.queue_limit,
        config.queue_bytes,
    ));
    let key = inner.connections.next_key();
    // Capacity = how many published events may wait in the inbox.
    let (credit, publish_credits) = crossbeam_channel::bounded(PUBLISH_CREDITS);
    inner.connections.connect(ConnectionHandle {
        key,
        inbox: inbox_tx.clone(),
        publish_credits: credit.clone(),
    });
    // Parked requests (see `Owner::parked`) hold threads of their own.
    let finished = Arc::new(Finished::default());
    let pool = Pool::new(
        config.workers,
        2 * config.max_running,
        config.spin,
        inbox_tx.clone(),
        Arc::clone(&finished),
    );
    let owner = Arc::new(Mutex::new(Owner {
        inner: Arc::clone(inner),
        output: Arc::new(SharedOutput::new(writer)),
        key,
        inbox_tx: inbox_tx.clone(),
        ahead: Arc::clone(&ahead),
        publish_credits,
        in_flight: InFlight::default(),
        subscriptions: SubscriptionTable::default(),
        #[cfg(feature = "legacy")]
        asks: HashMap::new(),
        #[cfg(feature = "legacy")]
        parked: HashMap::new(),
        #[cfg(feature = "legacy")]
        legacy: None,
        waiting: VecDeque::new(),
        running: 0,
        pool,
        finished,
        next_seq: 0,
        inline_token: CancelToken::new(),
        deadline: None,
        closed: false,
        pool_check: None,
        worked: false,
        direct_work: false,
        handled_lines: false,
    }));
    {
        let max_line = config.max_line_bytes;
        let traced = Arc::clone(inner);
        // Weak: a reader blocked on its input must not keep the owner's
        // state (and its pool) alive once `serve` returned.
        let owner = Arc::downgrade(&owner);
        thread::Builder::new()
            .name("mcp-reader".into())
            .spawn(move || {
                let trace = |line: &str| traced.trace(line);
                let mut direct = |incoming, bytes| direct::offer(&traced, &owner, incoming, bytes);
                reader::read_loop(reader, inbox_tx, ahead, max_line, &trace, &mut direct)
            })
            .map_err(Error::Io)?;
    }
    let res = run(&owner, &inbox);
    inner.connections.disconnect(key);
    res
}

/// The owner's state, locked. The owner thread holds it while it handles
/// an event; the reader holds it while it starts a request (`direct`).
fn lock(owner: &Mutex<Owner>) -> MutexGuard<'_, Owner> {
    owner.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The owner loop: one event at a time, in arrival order, until the input
/// ended (or a stop) and nothing is in flight, the grace period ran out,
/// or the output failed.
fn run(owner: &Mutex<Owner>, inbox: &Receiver<Event>) -> Result<(), Error> {
    if lock(owner).inner.connections.is_stopped() {
        return Ok(());
    }
    while let Some(event) = next_event(owner, inbox) {
        let mut locked = lock(owner);
        locked.worked = true;
        locked.handle(event);
        if locked.output.failed() || locked.done() {
            break;
        }
    }
    lock(owner).shut_down()
}

/// The next event: at once when one is waiting; otherwise after a flush
/// (one per burst), blocking until one comes or a timer runs out (see
/// [`Timers`]). `None`: the loop ends. The owner's state is not locked
/// while it sleeps, so that the reader can start requests.
fn next_event(owner: &Mutex<Owner>, inbox: &Receiver<Event>) -> Option<Event> {
    if let Ok(event) = inbox.try_recv() {
        return Some(event);
    }
    let (mut timers, spin) = {
        let mut locked = lock(owner);
        if !locked.before_sleep() {
            return None;
        }
        // Only after lines: a wake-up for a timer or for the reader's
        // work is not a client calling in a loop.
        let spin = locked.inner.config.spin && std::mem::take(&mut locked.handled_lines);
        (locked.timers(), spin)
    };
    if let Some(event) = spin_for_event(inbox, spin) {
        return Some(event);
    }
    loop {
        let next = match timers.next() {
            Some(at) => inbox.recv_deadline(at),
            None => inbox.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(event) => return Some(event),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => {
                if timers.shutdown.is_some_and(|at| Instant::now() >= at) {
                    return None;
                }
                timers = lock(owner).on_timer(timers.idle);
            }
        }
    }
}

/// Before it sleeps after handling lines, the owner spins (yielding) for
/// up to `SPIN` when the process has more than one CPU, as a pool worker
/// does (see `pool`): the next line of a client that calls in a loop then
/// costs no wake-up.
fn spin_for_event(inbox: &Receiver<Event>, spin: bool) -> Option<Event> {
    if spin {
        spin_recv(inbox, SPIN)
    } else {
        inbox.try_recv().ok()
    }
}

/// What the owner wakes for while its inbox is empty.
struct Timers {
    /// The end of the grace period, once stopping: the loop ends.
    shutdown: Option<Instant>,
    /// Whether the pool's threads took the jobs that wait (see `pool`).
    pool_check: Option<Instant>,
    /// The end of an idle spell: what the work freed goes back to the
    /// system (see `heap`).
    idle: Option<Instant>,
}

impl Timers {
    fn next(&self) -> Option<Instant> {
        [self.shutdown, self.pool_check, self.idle]
            .into_iter()
            .flatten()
            .min()
    }
}

/// The owner of one connection: its state, locked by the thread in `serve`
/// for each event and by the reader for each request it starts itself.
struct Owner {
    inner: Arc<Inner>,
    /// Shared with the workers, which write their replies themselves.
    output: Arc<SharedOutput>,
    /// This connection's key among the server's connections.
    key: u64,
    /// The owner's own inbox: for a legacy request's asks (its handler's
    /// sink), and for the reader to wake the owner (`direct`).
    inbox_tx: Sender<Event>,
    ahead: Arc<reader::ReadAhead>,
    publish_credits: Receiver<()>,
    in_flight: InFlight,
    subscriptions: SubscriptionTable,
    /// This server's requests to a legacy client, by id, awaiting its
    /// response (see `legacy::input`).
    #[cfg(feature = "legacy")]
    asks: HashMap<RequestId, (Sender<AskReply>, u64)>,
    /// Pooled requests waiting for the client's answers, by sequence
    /// number, with how many asks each has open. They hold a worker thread
    /// but not a place among `max_running`: they wait on input, so if they
    /// filled the pool, the requests queued behind them would fill the
    /// read-ahead, the reader would stop, and the answers would never be
    /// read. At most `max_running` requests may be parked.
    #[cfg(feature = "legacy")]
    parked: HashMap<u64, usize>,
    /// The legacy session of this connection, once a client sent
    /// `initialize`.
    #[cfg(feature = "legacy")]
    legacy: Option<LegacySession>,
    waiting: VecDeque<Waiting>,
    running: usize,
    pool: Pool,
    /// Pooled requests that finished, for the owner's bookkeeping.
    finished: Arc<Finished>,
    next_seq: u64,
    /// Inline handlers run to completion before the owner reads the next
    /// event, so nothing can cancel them: they share one token.
    inline_token: CancelToken,
    /// When in-flight requests must be done: set at the end of input or a
    /// stop, after which no new work starts.
    deadline: Option<Instant>,
    /// Shut down: nothing more starts, not even from the reader.
    closed: bool,
    /// When to check whether the pool's threads took the jobs that wait
    /// for them, and how many jobs they had taken (see `pool`).
    pool_check: Option<(Instant, u64)>,
    /// Something happened since the heap was last given back.
    worked: bool,
    /// The reader started a request since the owner last looked (see
    /// `idle`).
    direct_work: bool,
    /// Lines were handled since the owner last slept (see
    /// `spin_for_event`).
    handled_lines: bool,
}

/// A pooled request waiting for a free slot.
struct Waiting {
    ctx: RequestContext,
    seq: u64,
    work: Work,
    /// The size of its line, released when it starts.
    bytes: usize,
}

/// How long the inbox stays empty before freed memory goes back to the
/// system.
const IDLE: Duration = Duration::from_millis(250);

impl Owner {
    /// Before the owner sleeps: flushes (one per burst), says whether a
    /// finished request must wake it, and takes what finished meanwhile
    /// (in that order: see `Finished::push`). `false`: the loop ends (the
    /// output failed, or the shutdown is done).
    fn before_sleep(&mut self) -> bool {
        self.check_pool();
        self.flush();
        if self.output.failed() {
            return false;
        }
        let wake = !self.waiting.is_empty() || self.deadline.is_some() || self.parked() > 0;
        self.finished.wake_owner(wake);
        self.collect_finished();
        !self.done()
    }

    /// The timers the owner sleeps with.
    fn timers(&self) -> Timers {
        let idle = self.deadline.is_none() && self.worked && self.inner.config.release_memory;
        Timers {
            shutdown: self.deadline,
            pool_check: self.pool_check.map(|(at, _)| at),
            idle: idle.then(|| Instant::now() + IDLE),
        }
    }

    /// A timer ran out (not the shutdown's): checks the pool if due, and
    /// gives memory back after an idle spell. Returns the timers to sleep
    /// with next.
    fn on_timer(&mut self, idle: Option<Instant>) -> Timers {
        self.check_pool();
        let now = Instant::now();
        let idle = match idle {
            Some(at) if now >= at => (!self.idle()).then(|| now + IDLE),
            other => other,
        };
        Timers {
            idle,
            ..self.timers()
        }
    }

    /// A job found no free thread in the pool: the pool is checked after
    /// `STALL` (see `pool`), unless a check is pending already.
    fn watch_pool(&mut self, taken: Option<u64>) {
        if let Some(taken) = taken
            && self.pool_check.is_none()
        {
            self.pool_check = Some((Instant::now() + STALL, taken));
        }
    }

    /// A pool check that is due: grows the pool if its threads took no
    /// job since the check was set, and checks again later while jobs
    /// wait.
    fn check_pool(&mut self) {
        if let Some((at, taken)) = self.pool_check
            && Instant::now() >= at
        {
            self.pool_check = self
                .pool
                .check(taken)
                .map(|taken| (Instant::now() + STALL, taken));
        }
    }

    /// The inbox stayed empty for `IDLE`. Unless the reader started work
    /// meanwhile, the spell is idle: what the work freed goes back to the
    /// system, and the owner sleeps until the next event. Returns whether
    /// it did.
    fn idle(&mut self) -> bool {
        if std::mem::take(&mut self.direct_work) {
            return false;
        }
        self.worked = false;
        self.ahead.free_parked();
        heap::give_back();
        true
    }

    /// Stopping, and nothing is in flight any more.
    fn done(&self) -> bool {
        self.deadline.is_some() && self.in_flight.is_empty()
    }

    /// One event. End of input or a stop starts the shutdown: every
    /// subscription gets its final result, no new work, and in-flight
    /// requests have until `deadline`.
    fn handle(&mut self, event: Event) {
        match event {
            Event::Line(incoming, bytes) => {
                self.on_line(incoming, bytes);
                self.ahead.handled();
                self.handled_lines = true;
            }
            Event::Prepared(line) => {
                self.on_prepared(*line);
                self.ahead.handled();
                self.handled_lines = true;
            }
            Event::DirectWork => {}
            Event::Eof | Event::Stop => {
                if self.deadline.is_none() {
                    self.deadline = Some(Instant::now() + self.inner.config.shutdown_grace);
                    self.close_all_subscriptions();
                    #[cfg(feature = "legacy")]
                    self.drop_asks();
                }
            }
            Event::Publish { event, credited } => {
                if credited {
                    // The publisher holds one, so one is there to take.
                    let _ = self.publish_credits.try_recv();
                }
                self.publish(&event);
            }
            Event::Finished => self.collect_finished(),
            Event::Reply { id, seq, line } => {
                if let Some(gate) = self.in_flight.gate_of(&id, seq) {
                    let mut locked = self.output.lock();
                    if locked.close_gate(&gate) {
                        locked.write(&line);
                    }
                }
                self.ended(&id, seq);
                self.start_waiting();
            }
            #[cfg(feature = "legacy")]
            Event::AskClient {
                id,
                line,
                reply,
                seq,
            } => self.on_ask(id, line, reply, seq, self.deadline.is_some()),
            #[cfg(feature = "legacy")]
            Event::AskWithdrawn { id } => self.on_ask_withdrawn(id),
        }
    }

    /// The bookkeeping of pooled requests that finished: their workers
    /// wrote the replies (or dropped them: cancelled); they leave the
    /// cancellation map and free their slots for requests waiting.
    pub(super) fn collect_finished(&mut self) {
        let finished = self.finished.take();
        if finished.is_empty() {
            return;
        }
        for (id, seq) in finished {
            self.ended(&id, seq);
        }
        self.start_waiting();
    }

    /// A pooled request ended: its asks, its slot and its entry go.
    fn ended(&mut self, id: &RequestId, seq: u64) {
        #[cfg(feature = "legacy")]
        self.forget_asks_of(seq);
        self.running -= 1;
        self.in_flight.finish(id, seq);
    }

    /// Hands a job to the pool, and has the pool checked later when no
    /// thread was free for it (see `pool`).
    pub(super) fn submit(&mut self, job: PoolJob) {
        let taken = self.pool.submit(job);
        self.watch_pool(taken);
    }

    /// Requests parked waiting for a legacy client's answers: they hold
    /// threads of the pool beyond `running`.
    fn parked(&self) -> usize {
        #[cfg(feature = "legacy")]
        return self.parked.len();
        #[cfg(not(feature = "legacy"))]
        0
    }

    /// Past the grace period (or with the output gone): cancel what is
    /// left, tell the client, flush.
    fn shut_down(&mut self) -> Result<(), Error> {
        self.closed = true;
        self.close_all_subscriptions();
        let left: Vec<(RequestId, Entry)> = self.in_flight.drain().collect();
        for (id, entry) in left {
            // Unless its worker is writing the reply right now.
            let wanted = self.output.lock().close_gate(&entry.gate);
            entry.token.cancel();
            if wanted {
                let error =
                    ErrorObject::internal_error("the server shut down before the request finished");
                self.write_error_line(Some(&id), &error);
            }
        }
        self.waiting.clear();
        // Closed even if a handler past its grace period still holds it.
        match self.output.close() {
            Some(e) => Err(Error::Io(e)),
            None => Ok(()),
        }
    }
}
