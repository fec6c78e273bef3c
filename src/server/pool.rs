//! The worker pool: named threads that run pooled handlers and write their
//! replies (see `shared_output`).
//!
//! The pool keeps `workers` threads warm and grows, one thread at a time,
//! whenever every thread is busy and fewer than `max_running` handlers run,
//! so a slow handler never holds up the others. Threads beyond the warm
//! ones exit after a while without work.
//!
//! Jobs go out over an unbounded channel: the owner never blocks sending
//! one, and the number of jobs in it is capped by the owner's own count of
//! running requests (DESIGN.md: no cycles of bounded channels).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::jsonrpc::RequestId;
use crate::server::connections::published;
use crate::server::context::{RequestContext, Sink};
use crate::server::event::Event;
use crate::server::reply::Reply;
use crate::server::work::{Work, run};

/// How long a thread beyond the warm ones waits for work before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

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
    alive: Arc<AtomicUsize>,
    warm: usize,
    max: usize,
    spawned: usize,
}

impl Pool {
    /// Starts `warm` workers that send their results into `inbox`.
    pub fn new(warm: usize, max: usize, inbox: Sender<Event>, finished: Arc<Finished>) -> Pool {
        let (jobs, queue) = crossbeam_channel::unbounded();
        let mut pool = Pool {
            jobs,
            queue,
            inbox,
            finished,
            alive: Arc::new(AtomicUsize::new(0)),
            warm: warm.max(1),
            max: max.max(warm).max(1),
            spawned: 0,
        };
        for _ in 0..pool.warm {
            pool.spawn();
        }
        pool
    }

    /// Hands a job to the pool. `running` is the number of pooled handlers
    /// running, this one included.
    pub fn submit(&mut self, job: PoolJob, running: usize) {
        let alive = self.alive.load(Ordering::Acquire);
        if running > alive && alive < self.max {
            self.spawn();
        }
        // The workers hold the receiving side until the pool is dropped.
        let _ = self.jobs.send(job);
    }

    fn spawn(&mut self) {
        self.spawned += 1;
        let queue = self.queue.clone();
        let inbox = self.inbox.clone();
        let finished = Arc::clone(&self.finished);
        let alive = Arc::clone(&self.alive);
        let warm = self.warm;
        alive.fetch_add(1, Ordering::AcqRel);
        let spawned = thread::Builder::new()
            .name(format!("mcp-worker-{}", self.spawned))
            .spawn(move || worker(queue, inbox, finished, alive, warm));
        if spawned.is_err() {
            // Out of threads: the jobs wait for the workers there are.
            self.alive.fetch_sub(1, Ordering::AcqRel);
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
/// waiting for it would put a wake-up back on the reply's path); under
/// load the owner's one flush per burst serves many replies.
fn answer(ctx: &RequestContext, reply: Reply, inbox: &Sender<Event>) {
    if let Sink::Pooled { output, gate, .. } = ctx.sink() {
        // Encoded before the lock is taken, so that workers finishing
        // together do not wait on each other's encoding.
        let line = reply.into_line();
        let mut locked = output.lock();
        if locked.close_gate(gate) {
            locked.write(&line);
            if inbox.is_empty() {
                locked.flush();
            }
        }
    }
}

fn worker(
    queue: Receiver<PoolJob>,
    inbox: Sender<Event>,
    finished: Arc<Finished>,
    alive: Arc<AtomicUsize>,
    warm: usize,
) {
    loop {
        match queue.recv_timeout(IDLE_EXIT) {
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
            }
            Err(RecvTimeoutError::Timeout) => {
                let shrunk = alive
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                        (n > warm).then(|| n - 1)
                    })
                    .is_ok();
                if shrunk {
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                alive.fetch_sub(1, Ordering::AcqRel);
                return;
            }
        }
    }
}
