//! The worker pool: threads that run pooled handlers, shared by every
//! connection of a server.
//!
//! A job takes an idle thread if there is one. The first `workers` threads
//! start as jobs need them and stay. Past them, a job that finds no idle
//! thread is left to the watcher, a sleeping thread started the first time
//! it is needed: it looks again [`STALL`] later, and if no thread took a
//! job meanwhile (each is busy with a handler that blocks), waiting jobs
//! get threads of their own, at most as many as there are (the pool at
//! most doubles per look). So a slow handler holds up the others for
//! [`STALL`], and a burst of `n` blocking handlers for about `log2(n)`
//! looks, while a burst of quick calls, which keeps the threads taking
//! jobs, does not grow the pool (a thread per job in flight cost a third
//! more CPU and a megabyte more memory under load, BENCHMARKS.md), nor
//! does one moment the machine did not run them (CI saw a thread per
//! queued job when growth had no bound).
//! Threads beyond the warm ones exit after [`IDLE_EXIT`] without work.
//!
//! A thread out of jobs may spin (yielding the CPU) for a moment before it
//! sleeps, when the application asked for it (`spin_before_sleep`): the
//! next job of a client that calls one tool after another then costs no
//! wake-up. Off by default, since a library must not burn its host's CPU
//! unasked; one thread spins at a time.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};

/// How long a thread beyond the warm ones waits for work before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// How long jobs may wait behind threads that take none before the pool
/// grows (see the module docs). Longer than the scheduler lets a runnable
/// thread wait for a CPU (a few milliseconds): at 1 ms, a worker that only
/// waited for its turn on a busy CPU looked blocked, and a pipelined
/// client on one CPU grew the pool to 68 threads that fought over it.
const STALL: Duration = Duration::from_millis(10);

/// One pooled request: its handler, its reply, and the bookkeeping after.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The pool: where jobs are sent, and the threads that take them. The
/// threads end once it is dropped.
pub(crate) struct Pool {
    jobs: Sender<Job>,
    threads: Arc<Threads>,
}

/// The queue of jobs, and what the threads are doing, counted by the
/// threads themselves.
struct Threads {
    queue: Receiver<Job>,
    alive: AtomicUsize,
    /// Waiting for a job (spinning or asleep).
    idle: AtomicUsize,
    /// Jobs taken so far: whether the threads make progress.
    taken: AtomicU64,
    /// Threads that stay however long they wait.
    warm: usize,
    /// How long a thread out of jobs spins; zero: it sleeps at once.
    spin: Duration,
    /// A thread is spinning: the others sleep at once.
    spinning: AtomicBool,
    /// Wakes the watcher; `None` if it could not be started.
    watcher: OnceLock<Option<Sender<()>>>,
}

impl Pool {
    /// A pool that keeps up to `warm` threads (started as jobs come), whose
    /// threads spin for `spin` before they sleep.
    pub fn new(warm: usize, spin: Duration) -> Pool {
        let (jobs, queue) = crossbeam_channel::unbounded();
        let threads = Threads {
            queue,
            alive: AtomicUsize::new(0),
            idle: AtomicUsize::new(0),
            taken: AtomicU64::new(0),
            warm: warm.max(1),
            spin,
            spinning: AtomicBool::new(false),
            watcher: OnceLock::new(),
        };
        Pool {
            jobs,
            threads: Arc::new(threads),
        }
    }

    /// Hands `job` to the pool: an idle thread takes it, or a new one
    /// while the pool has fewer than its warm threads, or one the watcher
    /// starts if the threads take no job within [`STALL`]. Never blocks.
    pub fn submit(&self, job: Job) {
        let threads = &self.threads;
        // The threads hold the receiving side until the pool is dropped.
        let _ = self.jobs.send(job);
        // Counted after the send: two jobs submitted at once cannot both
        // count on the same idle thread (`Threads::work` is the other side).
        if !threads.short_of_idle() {
            return;
        }
        if threads.alive.load(Ordering::Acquire) < threads.warm {
            return spawn(threads);
        }
        threads.wake_watcher();
    }
}

/// The watcher: woken when jobs found no idle thread, it looks every
/// [`STALL`] while jobs wait, and gives each a thread when the threads took
/// none since the last look. It ends with the pool.
fn watch(woken: &Receiver<()>, threads: &Weak<Threads>) {
    while woken.recv().is_ok() {
        let Some(threads) = threads.upgrade() else {
            return;
        };
        // Threads started at the last look: the job each takes first is
        // not progress of the threads that were there.
        let mut started = 0;
        loop {
            let taken = threads.taken.load(Ordering::Acquire);
            thread::sleep(STALL);
            let waiting = threads.queue.len();
            if waiting == 0 {
                break;
            }
            let progress = threads.taken.load(Ordering::Acquire) - taken;
            started = if progress <= started {
                grow(&threads, waiting)
            } else {
                0
            };
        }
    }
}

/// Starts a thread for each waiting job no idle thread will take, at most
/// as many as are alive: a stalled look at most doubles the pool, so a
/// burst of quick jobs behind a thread the machine did not run for a
/// moment does not get a thread each, while jobs that all block get their
/// threads in a few looks. Returns how many it started.
fn grow(threads: &Arc<Threads>, waiting: usize) -> u64 {
    let idle = threads.idle.load(Ordering::Acquire);
    let alive = threads.alive.load(Ordering::Acquire);
    let wanted = waiting.saturating_sub(idle).min(alive.max(1));
    for _ in 0..wanted {
        spawn(threads);
    }
    wanted as u64
}

/// Starts a thread, counted idle from the start: it is about to take a
/// job. Out of threads, the job waits for a thread there is.
fn spawn(threads: &Arc<Threads>) {
    threads.alive.fetch_add(1, Ordering::AcqRel);
    threads.idle.fetch_add(1, Ordering::AcqRel);
    let of_it = Arc::clone(threads);
    let spawned = thread::Builder::new()
        .name("mcp-worker".into())
        .spawn(move || Threads::work(&of_it));
    if spawned.is_err() {
        threads.alive.fetch_sub(1, Ordering::AcqRel);
        threads.idle.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Threads {
    /// A thread's life: jobs until it has waited [`IDLE_EXIT`] for one
    /// (a thread beyond the warm ones) or the pool is dropped.
    fn work(self: &Arc<Self>) {
        loop {
            match self.next_job() {
                Ok(job) => {
                    self.taken.fetch_add(1, Ordering::AcqRel);
                    self.not_idle();
                    // A panic is caught here rather than let end the
                    // thread: a thread counted alive that is gone would
                    // stay counted for good. (A connection's job has turned
                    // its handler's panic into a reply already, `work::call`.)
                    let _ = catch_unwind(AssertUnwindSafe(job));
                    self.idle.fetch_add(1, Ordering::SeqCst);
                }
                // One thread fewer, unless it is a warm one: it stays.
                Err(RecvTimeoutError::Timeout) => {
                    let above_warm = |n: usize| (n > self.warm).then(|| n - 1);
                    let alive = &self.alive;
                    if (alive.fetch_update(Ordering::AcqRel, Ordering::Acquire, above_warm)).is_ok()
                    {
                        return self.not_idle();
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.alive.fetch_sub(1, Ordering::AcqRel);
                    self.idle.fetch_sub(1, Ordering::SeqCst);
                    return;
                }
            }
        }
    }

    /// This thread stops counting as idle (it took a job, or it exits). A
    /// job submitted while it still counted may have counted on it: if no
    /// idle thread is left for the jobs waiting, the watcher looks.
    fn not_idle(self: &Arc<Self>) {
        self.idle.fetch_sub(1, Ordering::SeqCst);
        if self.short_of_idle() {
            self.wake_watcher();
        }
    }

    /// Whether fewer threads are idle than jobs wait: each waiting job
    /// takes one idle thread.
    fn short_of_idle(&self) -> bool {
        self.idle.load(Ordering::SeqCst) < self.queue.len()
    }

    /// Has the watcher look (started the first time); without one, a
    /// waiting job gets a thread now.
    fn wake_watcher(self: &Arc<Self>) {
        let watcher = self.watcher.get_or_init(|| {
            let (wake, woken) = crossbeam_channel::bounded(1);
            // Not an `Arc`: the watcher ends once the threads are gone,
            // and with them its waker.
            let threads = Arc::downgrade(self);
            let started = thread::Builder::new()
                .name("mcp-pool-watch".into())
                .spawn(move || watch(&woken, &threads));
            started.ok().map(|_| wake)
        });
        match watcher {
            // Full: a look is due already.
            Some(wake) => drop(wake.try_send(())),
            None => spawn(self),
        }
    }

    /// The next job: spinning first if asked and no other thread spins,
    /// then asleep until one comes or [`IDLE_EXIT`] passed.
    fn next_job(&self) -> Result<Job, RecvTimeoutError> {
        if let Ok(job) = self.queue.try_recv() {
            return Ok(job);
        }
        let spins = !self.spin.is_zero()
            && (self.spinning)
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        if spins {
            let job = spin_recv(&self.queue, self.spin);
            self.spinning.store(false, Ordering::Release);
            if let Some(job) = job {
                return Ok(job);
            }
        }
        self.queue.recv_timeout(IDLE_EXIT)
    }
}

/// Takes a job as soon as one comes within `spin`, yielding the CPU
/// between looks: not a busy loop, so a thread with work on this CPU runs
/// first (spinning without yielding cost a third of the throughput under
/// load, BENCHMARKS.md).
fn spin_recv(queue: &Receiver<Job>, spin: Duration) -> Option<Job> {
    let started = Instant::now();
    loop {
        match queue.try_recv() {
            Ok(job) => return Some(job),
            // The pool is gone: however long the spin, it ends now.
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if started.elapsed() >= spin {
            return None;
        }
        thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_behind_blocked_threads_get_threads_of_their_own() {
        let pool = Pool::new(1, Duration::ZERO);
        let (started, starts) = crossbeam_channel::unbounded();
        let (release, gate) = crossbeam_channel::unbounded::<()>();
        for i in 0..3 {
            let started = started.clone();
            let gate = gate.clone();
            pool.submit(Box::new(move || {
                started.send(i).unwrap();
                gate.recv().unwrap();
            }));
        }
        // All three run at once, although one thread was warm: the
        // watcher saw the one thread take nothing more.
        let mut seen: Vec<i32> = (0..3)
            .map(|_| starts.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        seen.sort();
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(pool.threads.alive.load(Ordering::Acquire), 3);
        for _ in 0..3 {
            release.send(()).unwrap();
        }
        // Once they are idle, the next job takes one of them.
        while pool.threads.idle.load(Ordering::Acquire) < 3 {
            thread::yield_now();
        }
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(Box::new(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(pool.threads.alive.load(Ordering::Acquire), 3);
    }

    #[test]
    fn a_job_that_panics_leaves_the_counts_true() {
        // The connection's jobs catch their handlers' panics (`work::call`),
        // but not a panic in what follows (the reply's encoding, the
        // finish): a thread that unwinds must not stay counted alive, or
        // the pool keeps one warm thread fewer than it says, for good.
        let pool = Pool::new(1, Duration::ZERO);
        let (panicking, panics) = crossbeam_channel::bounded(1);
        pool.submit(Box::new(move || {
            panicking.send(()).unwrap();
            panic!("a job that panics (this panic is the test's)");
        }));
        panics.recv_timeout(Duration::from_secs(5)).unwrap();
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(Box::new(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let counts = || {
            let alive = pool.threads.alive.load(Ordering::Acquire);
            let idle = pool.threads.idle.load(Ordering::Acquire);
            (alive, idle)
        };
        // Every thread counted alive is idle again (the watcher may have
        // started a second one while the first unwound).
        while counts().0 != counts().1 {
            assert!(
                Instant::now() < deadline,
                "(alive, idle) {:?}: a thread counted that is gone",
                counts()
            );
            thread::yield_now();
        }
    }

    #[test]
    fn jobs_submitted_at_once_each_get_a_thread_when_the_others_block() {
        // Jobs submitted from several threads at once (readers of several
        // connections, workers starting queued requests), one idle thread
        // for them: each must start while the others block, however the
        // submits and the idle thread's taking interleave. (Counting the
        // idle threads before the send let two submits count the same one,
        // and the second job waited, with no watcher looking, until the
        // first returned.)
        let started_at = Instant::now();
        let mut rounds = 0;
        while started_at.elapsed() < Duration::from_secs(2) {
            rounds += 1;
            let pool = Arc::new(Pool::new(1, Duration::ZERO));
            let (done, finished) = crossbeam_channel::bounded(1);
            pool.submit(Box::new(move || done.send(()).unwrap()));
            finished.recv().unwrap();
            while pool.threads.idle.load(Ordering::Acquire) < 1 {
                thread::yield_now();
            }
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
                        pool.submit(Box::new(move || {
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
        pool.submit(Box::new(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        let threads = Arc::clone(&pool.threads);
        // Spinning now, for ever if nothing told it the pool is gone.
        while !threads.spinning.load(Ordering::Acquire) {
            thread::yield_now();
        }
        drop(pool);
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads.alive.load(Ordering::Acquire) > 0 {
            assert!(
                Instant::now() < deadline,
                "the spinning thread outlived its pool"
            );
            thread::yield_now();
        }
    }

    #[test]
    fn quick_jobs_do_not_grow_the_pool() {
        let pool = Pool::new(1, Duration::ZERO);
        let (done, finished) = crossbeam_channel::unbounded();
        for _ in 0..10_000 {
            let done = done.clone();
            pool.submit(Box::new(move || done.send(()).unwrap()));
        }
        for _ in 0..10_000 {
            finished.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        // The warm thread kept taking jobs: nothing like a thread per job
        // (a loaded machine may stall it now and then).
        assert!(pool.threads.alive.load(Ordering::Acquire) < 100);
    }

    #[test]
    fn a_stalled_moment_does_not_give_each_queued_job_a_thread() {
        let pool = Pool::new(1, Duration::ZERO);
        // The one warm thread is held for 5 looks while 10,000 quick jobs
        // queue behind it: as if the machine did not run it for a while.
        let (release, held) = crossbeam_channel::bounded::<()>(0);
        pool.submit(Box::new(move || {
            let _ = held.recv();
        }));
        let (done, finished) = crossbeam_channel::unbounded();
        for _ in 0..10_000 {
            let done = done.clone();
            pool.submit(Box::new(move || done.send(()).unwrap()));
        }
        thread::sleep(STALL * 5);
        drop(release);
        for _ in 0..10_000 {
            finished.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        // The second thread ran the queue; unbounded growth gave 10,001.
        let alive = pool.threads.alive.load(Ordering::Acquire);
        assert!(alive < 100, "{alive} threads for 10,000 quick jobs");
    }
}
