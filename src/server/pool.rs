//! The worker pool: threads that run pooled requests, shared by every
//! connection of a server.
//!
//! The jobs wait in a channel, and the sends of what waits on a
//! connection in another ([`Pool::submit_send`]: a running thread takes a
//! send once no job waits, a thread that starts takes it first); beside
//! them, plain counts under one lock
//! ([`Counts`]): how many threads are alive, idle (waiting for a job),
//! blocked, and starting. No watcher, no clock. A job says which of its
//! steps may block for as long as something outside the server likes
//! ([`Blocking::may_block`]): a pooled request's handler, and a send to a
//! client that may not read (one per connection at a time: a thread never
//! waits behind another's send, `conn::handle`). So the pool knows whether
//! a job that waits will be taken soon: a thread that is idle or between
//! such steps (encoding a reply, writing it into the output) will take it;
//! a blocked one may never. A thread starts when jobs wait that no idle
//! thread will take, none is starting already, and fewer than the warm
//! threads are alive or every thread is blocked ([`Counts::wants_thread`]).
//! That is looked at, under the lock, after each change that can make it
//! true: a job sent ([`Pool::submit`]), a thread that blocks
//! ([`Blocking::may_block`]), a thread that started ([`Threads::work`]); a
//! thread that leaves looks at the channel first ([`Threads::leaves`]).
//!
//! What a handler that blocks costs: the jobs behind it get a thread at
//! once (one thread start, tens of microseconds, where the watcher this
//! replaced made them wait 10 ms), and the pool keeps a thread per
//! blocked handler, and one per connection whose client is slow to read.
//! A handler that computes looks blocked too: a burst of them gets a
//! thread each, one start at a time. So the threads are at most the
//! pooled handlers running (`max_running` per connection, more while
//! handlers wait without their slot) and a send per connection, never a
//! thread per queued job (a thread per job in flight cost twice the CPU
//! and three times the memory kept after a burst, BENCHMARKS.md "A pool
//! without a watcher, measured"). The first `warm` threads stay once
//! started; the others exit after [`IDLE_EXIT`] without work. A thread
//! the system refuses to start leaves its job to the threads there are,
//! and nothing looks again until the next job, a thread that blocks or
//! one that starts (the watcher looked every 10 ms): untested, for want
//! of a per-test limit on threads.
//!
//! A thread out of jobs may spin (yielding the CPU) for a moment before it
//! sleeps, when the application asked for it (`spin_before_sleep`): the
//! next job of a client that calls one tool after another then costs no
//! wake-up. Off by default, since a library must not burn its host's CPU
//! unasked; one thread spins at a time.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};

/// How long a thread beyond the warm ones waits for work before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// One pooled request: its handler, its reply, and the bookkeeping after;
/// its steps that may block say so through the [`Blocking`] it is given.
pub(crate) type Job = Box<dyn FnOnce(&Blocking) + Send>;

/// What a job tells the pool about its steps.
pub(crate) struct Blocking {
    threads: Arc<Threads>,
}

impl Blocking {
    /// Runs `step`, which may block for as long as something outside the
    /// server likes (an application's handler, a send to a client that
    /// may not read): meanwhile this thread counts as blocked.
    pub fn may_block<T>(&self, step: impl FnOnce() -> T) -> T {
        // This thread counts as blocked, and a thread starts if that leaves
        // waiting jobs to none (`Counts::wants_thread`).
        self.threads.count_and_look(|counts| counts.blocked += 1);
        // A step that panics is not blocked any more either; the panic
        // goes on to `Threads::work`, which catches it.
        let value = catch_unwind(AssertUnwindSafe(step));
        self.threads.lock().blocked -= 1;
        value.unwrap_or_else(|panic| resume_unwind(panic))
    }
}

/// The pool: where jobs are sent, and the threads that take them. The
/// threads end once it is dropped (and the jobs sent are done).
pub(crate) struct Pool {
    jobs: Sender<Job>,
    /// Where sends go ([`Pool::submit_send`]).
    sends: Sender<Job>,
    threads: Arc<Threads>,
}

/// What the pool's threads share.
struct Threads {
    queue: Receiver<Job>,
    /// Sends of what waits on a connection: a thread that starts takes
    /// them before the jobs, the others after ([`Threads::next_job`]).
    sends: Receiver<Job>,
    counts: Mutex<Counts>,
    /// Threads that stay however long they wait.
    warm: usize,
    /// How long a thread out of jobs spins; zero: it sleeps at once.
    spin: Duration,
}

/// What the threads are doing.
#[derive(Default)]
struct Counts {
    alive: usize,
    /// Alive and waiting for a job (spinning, asleep, or starting).
    idle: usize,
    /// In a step that may block ([`Blocking::may_block`]).
    blocked: usize,
    /// Started and not yet looking for a job.
    starting: usize,
    /// A thread is spinning: the others sleep at once.
    spinning: bool,
}

impl Counts {
    /// Whether a thread should start now, `waiting` jobs in the channel:
    /// some wait that no idle thread will take, no thread is starting, and
    /// the pool is below its warm threads or every thread is blocked.
    /// Counts the new thread alive, idle and starting when it says yes.
    fn wants_thread(&mut self, waiting: usize, warm: usize) -> bool {
        let wanted = waiting > self.idle
            && self.starting == 0
            && (self.alive < warm || self.blocked == self.alive);
        if wanted {
            self.alive += 1;
            self.idle += 1;
            self.starting += 1;
        }
        wanted
    }
}

impl Pool {
    /// A pool that keeps up to `warm` threads (started as jobs come), whose
    /// threads spin for `spin` before they sleep.
    pub fn new(warm: usize, spin: Duration) -> Pool {
        let (jobs, queue) = crossbeam_channel::unbounded();
        let (sends, sends_queue) = crossbeam_channel::unbounded();
        let threads = Threads {
            queue,
            sends: sends_queue,
            counts: Mutex::new(Counts::default()),
            warm: warm.max(1),
            spin,
        };
        Pool {
            jobs,
            sends,
            threads: Arc::new(threads),
        }
    }

    /// How many jobs wait for a thread (sends not counted).
    pub fn waiting(&self) -> usize {
        self.jobs.len()
    }

    /// Hands over a send of what waits on a connection. A running or idle
    /// thread takes it once no job waits, so the replies those jobs write
    /// leave with it (a pipelined burst on one CPU: one `write(2)`); but a
    /// thread that starts takes it first: a thread starts when every other
    /// is blocked, and the send then waits for no thread start of the
    /// jobs queued before it (a reply behind 150 blocking calls waited for
    /// 150 thread starts: `batch_sends::a_quick_reply_does_not_wait_for_the_blocking_calls_pipelined_behind_it`).
    /// Never blocks.
    pub fn submit_send(&self, send: Job) {
        let _ = self.sends.send(send);
        self.threads.count_and_look(|_| {});
    }

    /// Hands `job` to the pool: an idle thread takes it, or one that is
    /// done with its blocking steps, or a new one (see the module docs).
    /// Never blocks.
    pub fn submit(&self, job: Job) {
        // Sent before the lock is taken: a thread the send wakes on this
        // CPU does not find the lock held by the thread it preempted. A
        // look after the send sees the job; so does every look of a thread
        // that blocks later. (The threads hold the receiving side until
        // the pool is dropped.)
        let _ = self.jobs.send(job);
        self.threads.count_and_look(|_| {});
    }
}

/// Starts a thread, already counted alive, idle and starting. Out of
/// threads, the count is given back and the job waits for a thread there
/// is.
fn spawn(threads: &Arc<Threads>) {
    let of_it = Arc::clone(threads);
    let spawned = thread::Builder::new()
        .name("mcp-worker".into())
        .spawn(move || of_it.work());
    if spawned.is_err() {
        let mut counts = threads.lock();
        counts.alive -= 1;
        counts.idle -= 1;
        counts.starting -= 1;
    }
}

impl Threads {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Jobs and sends waiting for a thread.
    fn waiting(&self) -> usize {
        self.queue.len() + self.sends.len()
    }

    /// Changes the counts with `change`, then, under the same lock, looks
    /// whether a thread should start ([`Counts::wants_thread`]), and
    /// starts it once the lock is let go: the one look every change that
    /// can make one needed ends with.
    fn count_and_look(self: &Arc<Self>, change: impl FnOnce(&mut Counts)) {
        let mut counts = self.lock();
        change(&mut counts);
        let start = counts.wants_thread(self.waiting(), self.warm);
        drop(counts);
        if start {
            spawn(self);
        }
    }

    /// A thread's life: jobs until it has waited [`IDLE_EXIT`] for one
    /// (a thread beyond the warm ones) or the pool is dropped.
    fn work(self: &Arc<Self>) {
        // It was the one starting, and jobs may have come meanwhile with
        // every other thread blocked: it looks again.
        self.count_and_look(|counts| counts.starting -= 1);
        let blocking = Blocking {
            threads: Arc::clone(self),
        };
        // A thread starts when every other is blocked (or the pool is
        // below its warm threads): its first pick is a send.
        let mut fresh = true;
        loop {
            let job = match self.next_job(fresh) {
                Ok(job) => job,
                Err(RecvTimeoutError::Timeout) if !self.leaves() => continue,
                Err(RecvTimeoutError::Timeout) => return,
                Err(RecvTimeoutError::Disconnected) => {
                    let mut counts = self.lock();
                    counts.alive -= 1;
                    counts.idle -= 1;
                    return;
                }
            };
            self.lock().idle -= 1;
            // A panic is caught here rather than let end the thread: a
            // thread counted alive that is gone would stay counted for
            // good. (A connection's job has turned its handler's panic
            // into a reply already, `work::call`.)
            let _ = catch_unwind(AssertUnwindSafe(|| job(&blocking)));
            self.lock().idle += 1;
            fresh = false;
        }
    }

    /// Whether this thread, which waited [`IDLE_EXIT`] for a job, ends: not
    /// if it is a warm one, nor if a job came meanwhile (its submit counted
    /// this thread idle).
    fn leaves(&self) -> bool {
        let mut counts = self.lock();
        let leaves = counts.alive > self.warm && self.waiting() == 0;
        if leaves {
            counts.alive -= 1;
            counts.idle -= 1;
        }
        leaves
    }

    /// The next job: for a thread just started (`fresh`), a send first
    /// ([`Pool::submit_send`]); for the others the jobs first, then the
    /// sends. Spinning first if asked and no other thread spins, then
    /// asleep until one comes or [`IDLE_EXIT`] passed.
    fn next_job(&self, fresh: bool) -> Result<Job, RecvTimeoutError> {
        if fresh && let Ok(job) = self.sends.try_recv() {
            return Ok(job);
        }
        if let Some(job) = self.try_next()? {
            return Ok(job);
        }
        let spins = !self.spin.is_zero() && !std::mem::replace(&mut self.lock().spinning, true);
        if spins {
            let job = self.spin_recv();
            self.lock().spinning = false;
            if let Some(job) = job? {
                return Ok(job);
            }
        }
        // Woken by either, it takes a job first all the same: a send waits
        // for the jobs before it (see `Pool::submit_send`).
        let deadline = Instant::now() + IDLE_EXIT;
        let mut select = crossbeam_channel::Select::new();
        select.recv(&self.queue);
        select.recv(&self.sends);
        loop {
            let woken = select.ready_deadline(deadline);
            // Ready and empty: another thread took what came (or a job
            // came just now).
            if let Some(job) = self.try_next()? {
                return Ok(job);
            }
            if woken.is_err() {
                return Err(RecvTimeoutError::Timeout);
            }
        }
    }

    /// A job, or else a send, if one waits; `Disconnected` once the pool
    /// is gone (both ends are its) and nothing waits.
    fn try_next(&self) -> Result<Option<Job>, RecvTimeoutError> {
        let next = (self.queue.try_recv()).or_else(|none| self.sends.try_recv().map_err(|_| none));
        match next {
            Ok(job) => Ok(Some(job)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
        }
    }

    /// Takes a job or a send as soon as one comes within `spin`, yielding
    /// the CPU between looks: not a busy loop, so a thread with work on
    /// this CPU runs first (spinning without yielding cost a third of the
    /// throughput under load, BENCHMARKS.md).
    fn spin_recv(&self) -> Result<Option<Job>, RecvTimeoutError> {
        let started = Instant::now();
        loop {
            // The pool is gone: however long the spin, it ends now.
            let job = self.try_next()?;
            if job.is_some() || started.elapsed() >= self.spin {
                return Ok(job);
            }
            thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests;
