//! The worker pool: named threads that run pooled handlers and write their
//! replies (see `shared_output`).
//!
//! The pool keeps `workers` threads warm and grows when jobs wait and its
//! threads stalled: when a job comes and no thread is free for it (every
//! idle thread is spoken for by the jobs already queued), the owner checks
//! again after [`STALL`] (`Owner::check_pool`), and if no thread took a job
//! in between, every waiting job gets a thread of its own. So a slow
//! handler never holds up the others for more than [`STALL`], while a
//! burst of quick calls, which keeps the threads taking jobs, does not
//! grow the pool: growing to one thread per request in flight, as it did
//! before, cost a third more CPU and 1 MB more memory under load with
//! no gain in throughput (BENCHMARKS.md, issue 19). Threads beyond the
//! warm ones exit after a while without work.
//!
//! A worker that runs out of jobs spins for a moment before it sleeps
//! (yielding the CPU to any thread that has work), when the machine has
//! more than one CPU for it and no other worker is spinning: the next job
//! of a client that calls one tool after another then costs no wake-up
//! (tens of microseconds on an idle core). On one CPU it never spins: the
//! spinning thread would take the time the one that sends the job needs.
//!
//! Jobs go out over an unbounded channel: the owner never blocks sending
//! one, and the number of jobs in it is capped by the owner's own count of
//! running requests (DESIGN.md: no cycles of bounded channels).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::jsonrpc::RequestId;
use crate::server::connections::published;
use crate::server::context::{RequestContext, Sink};
use crate::server::event::Event;
use crate::server::reply::Reply;
use crate::server::work::{Work, run};

/// How long a thread beyond the warm ones waits for work before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// How long jobs may wait behind threads that take none before the pool
/// grows (see the module docs).
pub(crate) const STALL: Duration = Duration::from_millis(1);

/// How long a worker out of jobs spins before it sleeps (see the module
/// docs): about a round trip of a client that calls again at once.
pub(crate) const SPIN: Duration = Duration::from_micros(100);

/// The pooled requests that finished since the owner last looked, by id
/// and sequence number.
///
/// Their replies are written already (see `shared_output`): what the owner
/// does with them is bookkeeping (its count of running requests, the
/// cancellation map, starting a request that waits for a slot), and that
/// can wait for the owner's next wake-up. So a worker wakes the owner
/// (`Event::Finished`) only while the owner asks for it: when requests
/// wait for a slot, when it shuts down, when a legacy request is parked.
/// Otherwise a pooled call costs no wake-up of the owner after its reply.
#[derive(Default)]
pub(crate) struct Finished {
    list: Mutex<Vec<(RequestId, u64)>>,
    wake: AtomicBool,
}

impl Finished {
    /// Records a finished request, and wakes the owner if it asked.
    fn push(&self, id: RequestId, seq: u64, inbox: &Sender<Event>) {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, seq));
        // SeqCst on both sides (here, and in `wake_owner` before the owner
        // takes the list): either this load sees the owner's request, or
        // the owner's `take` sees this request.
        if self.wake.load(Ordering::SeqCst) {
            // The owner is gone only after shutdown; then nobody wants it.
            let _ = inbox.send(Event::Finished);
        }
    }

    /// Whether workers wake the owner for each finished request.
    pub fn wake_owner(&self, on: bool) {
        self.wake.store(on, Ordering::SeqCst);
    }

    /// The requests finished since the last call.
    pub fn take(&self) -> Vec<(RequestId, u64)> {
        std::mem::take(&mut *self.list.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// One pooled request.
pub(crate) struct PoolJob {
    pub ctx: RequestContext,
    pub seq: u64,
    pub work: Work,
}

pub(crate) struct Pool {
    jobs: Sender<PoolJob>,
    queue: Receiver<PoolJob>,
    inbox: Sender<Event>,
    finished: Arc<Finished>,
    threads: Arc<Threads>,
    warm: usize,
    max: usize,
    spawned: usize,
}

/// What the pool's threads are doing, counted by the threads themselves.
struct Threads {
    alive: AtomicUsize,
    /// Waiting for a job (spinning or asleep).
    idle: AtomicUsize,
    /// Jobs taken so far: whether the threads make progress.
    taken: AtomicU64,
    /// A worker is spinning: the others sleep at once.
    spinning: AtomicBool,
    /// How long a worker spins; zero on one CPU.
    spin: Duration,
}

impl Pool {
    /// Starts `warm` workers that send their results into `inbox`; they
    /// spin before they sleep if `spin` (more than one CPU).
    pub fn new(
        warm: usize,
        max: usize,
        spin: bool,
        inbox: Sender<Event>,
        finished: Arc<Finished>,
    ) -> Pool {
        let (jobs, queue) = crossbeam_channel::unbounded();
        let mut pool = Pool {
            jobs,
            queue,
            inbox,
            finished,
            threads: Arc::new(Threads {
                alive: AtomicUsize::new(0),
                idle: AtomicUsize::new(0),
                taken: AtomicU64::new(0),
                spinning: AtomicBool::new(false),
                spin: if spin { SPIN } else { Duration::ZERO },
            }),
            warm: warm.max(1),
            max: max.max(warm).max(1),
            spawned: 0,
        };
        for _ in 0..pool.warm {
            pool.spawn();
        }
        pool
    }

    /// Hands a job to the pool. Returns the number of jobs taken so far
    /// when no thread is free for this one: the caller checks after
    /// [`STALL`] whether the threads took any since ([`Pool::check`]).
    pub fn submit(&mut self, job: PoolJob) -> Option<u64> {
        // Each queued job will take one of the idle threads.
        let free = self.threads.idle.load(Ordering::Acquire) > self.jobs.len();
        let taken = self.taken();
        // The workers hold the receiving side until the pool is dropped.
        let _ = self.jobs.send(job);
        (!free).then_some(taken)
    }

    /// The check after [`STALL`]: when jobs still wait and no thread took a
    /// job since `taken` was read, each waiting job gets a thread (up to
    /// the maximum). Returns the count for the next check while jobs wait.
    pub fn check(&mut self, taken: u64) -> Option<u64> {
        let waiting = self.jobs.len();
        if waiting == 0 {
            return None;
        }
        if self.taken() == taken {
            let idle = self.threads.idle.load(Ordering::Acquire);
            for _ in idle..waiting {
                if self.threads.alive.load(Ordering::Acquire) >= self.max {
                    break;
                }
                self.spawn();
            }
        }
        Some(self.taken())
    }

    fn taken(&self) -> u64 {
        self.threads.taken.load(Ordering::Acquire)
    }

    fn spawn(&mut self) {
        self.spawned += 1;
        let queue = self.queue.clone();
        let inbox = self.inbox.clone();
        let finished = Arc::clone(&self.finished);
        let threads = Arc::clone(&self.threads);
        let warm = self.warm;
        // Counted idle from the start: it is about to take a job.
        threads.alive.fetch_add(1, Ordering::AcqRel);
        threads.idle.fetch_add(1, Ordering::AcqRel);
        let spawned = thread::Builder::new()
            .name(format!("mcp-worker-{}", self.spawned))
            .spawn(move || worker(queue, inbox, finished, threads, warm));
        if spawned.is_err() {
            // Out of threads: the jobs wait for the workers there are.
            self.threads.alive.fetch_sub(1, Ordering::AcqRel);
            self.threads.idle.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Writes a finished request's reply, unless it was cancelled: the gate
/// is closed and the reply written under the output's lock (see
/// `shared_output`).
///
/// Flushing: the owner flushes whenever its inbox runs empty, so while it
/// has events to take, its next flush carries this reply. The worker
/// flushes itself when the inbox is empty (the owner is likely asleep:
/// waiting for it would put a wake-up back on the reply's path), unless
/// another thread waits for the output's lock, which then flushes for
/// both (`Locked::flush_unless_followed`): under load one flush serves
/// many replies.
fn answer(ctx: &RequestContext, reply: Reply, inbox: &Sender<Event>) {
    if let Sink::Pooled { output, gate, .. } = ctx.sink() {
        // Encoded before the lock is taken, so that workers finishing
        // together do not wait on each other's encoding.
        let line = reply.into_line();
        let mut locked = output.lock();
        if locked.close_gate(gate) {
            locked.write(&line);
            if inbox.is_empty() {
                locked.flush_unless_followed();
            }
        }
    }
}

fn worker(
    queue: Receiver<PoolJob>,
    inbox: Sender<Event>,
    finished: Arc<Finished>,
    threads: Arc<Threads>,
    warm: usize,
) {
    loop {
        // Counted idle until it has a job (see `Pool::submit`).
        let next = threads.next_job(&queue);
        if next.is_ok() {
            threads.idle.fetch_sub(1, Ordering::AcqRel);
            threads.taken.fetch_add(1, Ordering::AcqRel);
        }
        match next {
            Ok(PoolJob { ctx, seq, work }) => {
                published::take();
                let reply = run(work, &ctx);
                if published::take() {
                    // What it published goes out first: the owner writes
                    // the reply after the events, in inbox order.
                    let id = ctx.id().clone();
                    let line = reply.into_line();
                    let _ = inbox.send(Event::Reply { id, seq, line });
                } else {
                    answer(&ctx, reply, &inbox);
                    finished.push(ctx.id().clone(), seq, &inbox);
                }
                threads.idle.fetch_add(1, Ordering::AcqRel);
            }
            Err(RecvTimeoutError::Timeout) => {
                let shrunk = threads
                    .alive
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                        (n > warm).then(|| n - 1)
                    })
                    .is_ok();
                if shrunk {
                    threads.idle.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                threads.alive.fetch_sub(1, Ordering::AcqRel);
                threads.idle.fetch_sub(1, Ordering::AcqRel);
                return;
            }
        }
    }
}

impl Threads {
    /// The next job: spinning first when no other worker spins (see the
    /// module docs), then asleep until one comes or `IDLE_EXIT` passed.
    fn next_job(&self, queue: &Receiver<PoolJob>) -> Result<PoolJob, RecvTimeoutError> {
        if let Ok(job) = queue.try_recv() {
            return Ok(job);
        }
        if !self.spin.is_zero()
            && self
                .spinning
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            let job = spin_recv(queue, self.spin);
            self.spinning.store(false, Ordering::Release);
            if let Some(job) = job {
                return Ok(job);
            }
        }
        queue.recv_timeout(IDLE_EXIT)
    }
}

/// Takes a message from `queue` as soon as one comes within `spin`,
/// yielding the CPU between looks: not a busy loop, so a thread with work
/// on this CPU runs first (spinning without yielding cost a third of the
/// throughput under load, BENCHMARKS.md). Used by a worker out of jobs
/// and by the owner before they sleep.
pub(crate) fn spin_recv<T>(queue: &Receiver<T>, spin: Duration) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Ok(message) = queue.try_recv() {
            return Some(message);
        }
        if started.elapsed() >= spin {
            return None;
        }
        thread::yield_now();
    }
}
