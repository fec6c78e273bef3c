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
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// A job that is all one step that may block, `handler`.
    fn job(handler: impl FnOnce() + Send + 'static) -> Job {
        Box::new(move |blocking| blocking.may_block(handler))
    }

    /// (alive, idle, blocked)
    fn counts(pool: &Pool) -> (usize, usize, usize) {
        let counts = pool.threads.lock();
        (counts.alive, counts.idle, counts.blocked)
    }

    fn wait_for(pool: &Pool, what: &str, done: impl Fn((usize, usize, usize)) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done(counts(pool)) {
            assert!(Instant::now() < deadline, "{what}: {:?}", counts(pool));
            thread::yield_now();
        }
    }

    #[test]
    fn jobs_behind_blocked_handlers_get_threads_of_their_own() {
        let pool = Pool::new(1, Duration::ZERO);
        let (started, starts) = crossbeam_channel::unbounded();
        let (release, gate) = crossbeam_channel::unbounded::<()>();
        for i in 0..3 {
            let (started, gate) = (started.clone(), gate.clone());
            pool.submit(job(move || {
                started.send(i).unwrap();
                gate.recv().unwrap();
            }));
        }
        // All three run at once, although one thread was warm.
        let mut seen: Vec<i32> = (0..3)
            .map(|_| starts.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        seen.sort();
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(counts(&pool), (3, 0, 3));
        for _ in 0..3 {
            release.send(()).unwrap();
        }
        // Once they are idle, the next job takes one of them.
        wait_for(&pool, "the threads never came back", |(_, idle, _)| {
            idle == 3
        });
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(job(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(counts(&pool).0, 3);
    }

    #[test]
    fn quick_jobs_behind_a_blocked_handler_run_while_it_blocks() {
        let pool = Pool::new(1, Duration::ZERO);
        let (release, held) = crossbeam_channel::bounded::<()>(0);
        pool.submit(job(move || {
            let _ = held.recv();
        }));
        let (done, finished) = crossbeam_channel::unbounded();
        for _ in 0..10_000 {
            let done = done.clone();
            pool.submit(job(move || done.send(()).unwrap()));
        }
        for _ in 0..10_000 {
            finished.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        // Not a thread per job: a thread busy finishing is waited for.
        // (The last quick job's thread may still be in its step, having
        // said it is done: the count comes back to the blocked handler.)
        assert!(
            counts(&pool).0 < 100,
            "{:?} threads for 10,000 quick jobs",
            counts(&pool)
        );
        wait_for(
            &pool,
            "blocked, besides the blocked handler",
            |(_, _, blocked)| blocked == 1,
        );
        drop(release);
    }

    #[test]
    fn a_thread_between_blocking_steps_is_waited_for_not_replaced() {
        // Between its blocking steps a job does the server's own work
        // (encoding a reply, writing it into the output): jobs wait for
        // its thread, and run once it is done.
        let pool = Pool::new(1, Duration::ZERO);
        let (release, held) = crossbeam_channel::bounded::<()>(0);
        let (between, reached) = crossbeam_channel::bounded(1);
        pool.submit(Box::new(move |_| {
            between.send(()).unwrap();
            let _ = held.recv();
        }));
        reached.recv_timeout(Duration::from_secs(5)).unwrap();
        let (done, finished) = crossbeam_channel::unbounded();
        for _ in 0..100 {
            let done = done.clone();
            pool.submit(job(move || done.send(()).unwrap()));
        }
        thread::sleep(Duration::from_millis(50));
        assert_eq!(counts(&pool), (1, 0, 0));
        assert!(
            finished.is_empty(),
            "a job ran while the only thread was busy"
        );
        drop(release);
        for _ in 0..100 {
            finished.recv_timeout(Duration::from_secs(5)).unwrap();
        }
    }

    #[test]
    fn a_burst_behind_blocked_threads_starts_one_thread_at_a_time() {
        // Every thread blocked (as when all are sending to clients that
        // do not read) and 10,000 jobs at once: not a thread each.
        let pool = Pool::new(2, Duration::ZERO);
        let (release, held) = crossbeam_channel::unbounded::<()>();
        for _ in 0..2 {
            let held = held.clone();
            pool.submit(job(move || {
                let _ = held.recv();
            }));
        }
        wait_for(&pool, "the two never blocked", |(_, _, blocked)| {
            blocked == 2
        });
        let (done, finished) = crossbeam_channel::unbounded();
        for _ in 0..10_000 {
            let done = done.clone();
            pool.submit(Box::new(move |_| done.send(()).unwrap()));
        }
        for _ in 0..10_000 {
            finished.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        let (alive, _, _) = counts(&pool);
        assert_eq!(alive, 3, "one thread for the jobs behind the two blocked");
        drop(release);
    }

    #[test]
    fn a_job_that_panics_leaves_the_counts_true() {
        // The connection's jobs catch their handlers' panics (`work::call`),
        // but not a panic in what follows (the reply's encoding, the
        // finish): a thread that unwinds must not stay counted alive, nor
        // blocked, or the pool keeps one thread fewer than it says, for good.
        let pool = Pool::new(1, Duration::ZERO);
        let (panicking, panics) = crossbeam_channel::bounded(1);
        pool.submit(job(move || {
            panicking.send(()).unwrap();
            panic!("a job that panics (this panic is the test's)");
        }));
        panics.recv_timeout(Duration::from_secs(5)).unwrap();
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(job(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        wait_for(
            &pool,
            "a thread counted that is gone",
            |(alive, idle, blocked)| alive == idle && blocked == 0,
        );
    }

    #[test]
    fn jobs_submitted_at_once_each_get_a_thread_when_the_others_block() {
        // Jobs submitted from several threads at once (readers of several
        // connections, workers starting queued requests), one idle thread
        // for them: each must start while the others block, however the
        // submits and the idle thread's taking interleave. (The pool before
        // this one once let two submits count the same idle thread, and
        // the second job waited until the first returned.)
        let started_at = Instant::now();
        let mut rounds = 0;
        while started_at.elapsed() < Duration::from_secs(2) {
            rounds += 1;
            let pool = Arc::new(Pool::new(1, Duration::ZERO));
            let (done, finished) = crossbeam_channel::bounded(1);
            pool.submit(job(move || done.send(()).unwrap()));
            finished.recv().unwrap();
            wait_for(&pool, "the thread never came back", |(_, idle, _)| {
                idle == 1
            });
            let (started, starts) = crossbeam_channel::unbounded();
            let (release, gate) = crossbeam_channel::unbounded::<()>();
            let go = Arc::new(AtomicBool::new(false));
            let submitters: Vec<_> = (0..2)
                .map(|_| {
                    let (pool, started, gate) = (pool.clone(), started.clone(), gate.clone());
                    let go = go.clone();
                    thread::spawn(move || {
                        // Both submit at the same moment.
                        while !go.load(Ordering::Acquire) {
                            std::hint::spin_loop();
                        }
                        pool.submit(job(move || {
                            let _ = started.send(());
                            let _ = gate.recv();
                        }));
                    })
                })
                .collect();
            go.store(true, Ordering::Release);
            submitters.into_iter().for_each(|t| t.join().unwrap());
            for job in 0..2 {
                let start = starts.recv_timeout(Duration::from_secs(2));
                assert!(
                    start.is_ok(),
                    "round {rounds}: job {job} of 2 never started"
                );
            }
            drop(release);
        }
    }

    #[test]
    fn a_thread_spinning_however_long_ends_with_the_pool() {
        let pool = Pool::new(1, Duration::MAX);
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(job(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        let threads = Arc::clone(&pool.threads);
        // Spinning now, for ever if nothing told it the pool is gone.
        while !threads.lock().spinning {
            thread::yield_now();
        }
        drop(pool);
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads.lock().alive > 0 {
            assert!(
                Instant::now() < deadline,
                "the spinning thread outlived its pool"
            );
            thread::yield_now();
        }
    }

    #[test]
    fn a_send_waits_for_no_thread_start_of_the_blocking_jobs_before_it() {
        // Blocking jobs that wait for the send (as handlers may wait for
        // the client's reaction to a reply the send carries).
        let pool = Pool::new(1, Duration::ZERO);
        let started = Arc::new(AtomicUsize::new(0));
        let (release, gate) = crossbeam_channel::unbounded::<()>();
        for _ in 0..5 {
            let (started, gate) = (Arc::clone(&started), gate.clone());
            pool.submit(job(move || {
                started.fetch_add(1, Ordering::SeqCst);
                let _ = gate.recv_timeout(Duration::from_secs(5));
            }));
        }
        let (sent, sends) = crossbeam_channel::unbounded();
        let before = Arc::clone(&started);
        pool.submit_send(Box::new(move |_| {
            sent.send(before.load(Ordering::SeqCst)).unwrap();
            drop(release);
        }));
        let behind = sends.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            behind < 5,
            "the send ran after all 5 blocking jobs had a thread"
        );
        wait_for(&pool, "all idle", |(alive, idle, blocked)| {
            idle == alive && blocked == 0
        });
    }

    #[test]
    fn quick_jobs_do_not_grow_the_pool() {
        let pool = Pool::new(1, Duration::ZERO);
        let (done, finished) = crossbeam_channel::unbounded();
        for _ in 0..10_000 {
            let done = done.clone();
            pool.submit(job(move || done.send(()).unwrap()));
        }
        for _ in 0..10_000 {
            finished.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        // Nothing like a thread per job (a loaded machine may stop a
        // thread in a handler now and then).
        let alive = counts(&pool).0;
        assert!(alive < 100, "{alive} threads for 10,000 quick jobs");
    }

    #[test]
    fn a_job_that_panics_between_its_blocking_steps_leaves_the_counts_true() {
        // A panic outside `may_block` (in a reply's encoding, in the
        // finish): the thread is neither blocked nor gone, and the next
        // job still runs, on it.
        let pool = Pool::new(1, Duration::ZERO);
        let (panicking, panics) = crossbeam_channel::bounded(1);
        pool.submit(Box::new(move |_| {
            panicking.send(()).unwrap();
            panic!("a job that panics between its steps (this panic is the test's)");
        }));
        panics.recv_timeout(Duration::from_secs(5)).unwrap();
        wait_for(&pool, "the thread never came back", |(_, idle, _)| {
            idle == 1
        });
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(job(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        wait_for(&pool, "counts that drifted", |counts| counts == (1, 1, 0));
    }

    #[test]
    fn a_job_waiting_for_a_job_it_submitted_gets_it_run() {
        // A send job hands what was written meanwhile to the pool as a job
        // of its own, before it blocks on nothing: with one thread, the job
        // it submitted must not wait for it.
        let pool = Arc::new(Pool::new(1, Duration::ZERO));
        let (done, finished) = crossbeam_channel::bounded(1);
        let of_job = Arc::clone(&pool);
        pool.submit(Box::new(move |blocking| {
            let (inner_done, inner_finished) = crossbeam_channel::bounded(1);
            of_job.submit(job(move || inner_done.send(()).unwrap()));
            let ran = blocking.may_block(|| inner_finished.recv_timeout(Duration::from_secs(5)));
            done.send(ran.is_ok()).unwrap();
        }));
        let ran = finished.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(ran, "the job submitted by a job waited for it");
    }

    #[test]
    fn blocking_jobs_submitted_from_many_threads_each_get_a_thread() {
        // Five submitters, ten jobs each, every job blocks until all fifty
        // started: each must get a thread, however the submits, the thread
        // starts (one at a time) and the blocks interleave.
        let started_at = Instant::now();
        let mut rounds = 0;
        while started_at.elapsed() < Duration::from_secs(2) {
            rounds += 1;
            let pool = Arc::new(Pool::new(1, Duration::ZERO));
            let (started, starts) = crossbeam_channel::unbounded();
            let (release, gate) = crossbeam_channel::unbounded::<()>();
            let submitters: Vec<_> = (0..5)
                .map(|_| {
                    let (pool, started, gate) = (pool.clone(), started.clone(), gate.clone());
                    thread::spawn(move || {
                        for _ in 0..10 {
                            let (started, gate) = (started.clone(), gate.clone());
                            pool.submit(job(move || {
                                let _ = started.send(());
                                let _ = gate.recv();
                            }));
                        }
                    })
                })
                .collect();
            submitters.into_iter().for_each(|t| t.join().unwrap());
            for n in 0..50 {
                let start = starts.recv_timeout(Duration::from_secs(5));
                assert!(start.is_ok(), "round {rounds}: job {n} of 50 never started");
            }
            drop(release);
        }
    }

    #[test]
    fn jobs_waiting_when_the_pool_is_dropped_still_run() {
        // A send job queued behind a busy thread when the server lets its
        // pool go: its lines must still go out.
        let pool = Pool::new(1, Duration::ZERO);
        let (release, held) = crossbeam_channel::bounded::<()>(0);
        let (between, reached) = crossbeam_channel::bounded(1);
        pool.submit(Box::new(move |_| {
            between.send(()).unwrap();
            let _ = held.recv();
        }));
        reached.recv_timeout(Duration::from_secs(5)).unwrap();
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(Box::new(move |_| done.send(()).unwrap()));
        drop(pool);
        drop(release);
        assert!(
            finished.recv_timeout(Duration::from_secs(5)).is_ok(),
            "a job queued when the pool was dropped never ran"
        );
    }

    /// A pool dropped while its thread is busy and jobs and sends wait:
    /// the thread runs every one of them before it ends, spinning or not
    /// (`Threads::try_next` says the pool is gone only once both are
    /// empty), and ends (no spin for ever on the closed channel).
    #[test]
    fn a_dropped_pool_runs_every_job_and_send_left_then_its_threads_end() {
        for spin in [Duration::ZERO, Duration::from_millis(50)] {
            let pool = Pool::new(1, spin);
            let threads = Arc::clone(&pool.threads);
            let (release, gate) = crossbeam_channel::unbounded::<()>();
            let (started, starts) = crossbeam_channel::unbounded();
            // One job that does not say it blocks: no other thread starts.
            pool.submit(Box::new(move |_| {
                started.send(()).unwrap();
                gate.recv().unwrap();
            }));
            starts.recv_timeout(Duration::from_secs(5)).unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            for i in 0..6 {
                let ran = Arc::clone(&ran);
                let job: Job = Box::new(move |_| {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
                if i % 2 == 0 {
                    pool.submit(job);
                } else {
                    pool.submit_send(job);
                }
            }
            drop(pool);
            release.send(()).unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            while threads.lock().alive > 0 {
                assert!(Instant::now() < deadline, "a thread never ended ({spin:?})");
                thread::yield_now();
            }
            assert_eq!(ran.load(Ordering::SeqCst), 6, "jobs left behind ({spin:?})");
        }
    }
}
