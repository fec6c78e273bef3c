//! The worker pool: named threads that run pooled handlers, shared by
//! every connection of a server.
//!
//! A job takes an idle thread if there is one. The first `workers`
//! threads start as jobs need them and stay; past them, a job that finds
//! no idle thread waits until the pool's watcher has looked again
//! ([`STALL`] later): if no thread took a job meanwhile (every one is busy
//! with a handler that blocks), each waiting job gets a thread of its own.
//! So a slow handler holds up the others for at most [`STALL`], while a
//! burst of quick calls, which keeps the threads taking jobs, does not
//! grow the pool (a thread per job in flight cost a third more CPU and a
//! megabyte more memory under load, BENCHMARKS.md). Threads beyond the
//! warm ones exit after [`IDLE_EXIT`] without work. The watcher is a
//! thread that sleeps; it starts the first time the warm threads are all
//! busy.
//!
//! A thread out of jobs may spin (yielding the CPU) for a moment before it
//! sleeps, when the application asked for it (`spin_before_sleep`): the
//! next job of a client that calls one tool after another then costs no
//! wake-up. Off by default, since a library must not burn its host's CPU
//! unasked; one thread spins at a time.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

/// How long a thread beyond the warm ones waits for work before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// How long jobs may wait behind threads that take none before the pool
/// grows (see the module docs).
const STALL: Duration = Duration::from_millis(1);

/// One pooled request: its handler, its reply, and the bookkeeping after.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The pool: a queue of jobs and the threads that take them.
pub(crate) struct Pool {
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    threads: Arc<Threads>,
    /// Wakes the watcher, once started.
    watcher: Mutex<Option<Sender<()>>>,
}

/// What the pool's threads are doing, counted by the threads themselves.
struct Threads {
    alive: AtomicUsize,
    /// Waiting for a job (spinning or asleep).
    idle: AtomicUsize,
    /// Jobs taken so far: whether the threads make progress.
    taken: AtomicU64,
    /// Threads that stay however long they wait.
    warm: usize,
    /// A thread is spinning: the others sleep at once.
    spinning: AtomicBool,
    /// How long a thread out of jobs spins; zero: it sleeps at once.
    spin: Duration,
    /// For the threads' names.
    spawned: AtomicUsize,
}

impl Pool {
    /// A pool that keeps up to `warm` threads (started as jobs come), whose
    /// threads spin for `spin` before they sleep.
    pub fn new(warm: usize, spin: Duration) -> Pool {
        let (jobs, queue) = crossbeam_channel::unbounded();
        Pool {
            jobs,
            queue,
            threads: Arc::new(Threads {
                alive: AtomicUsize::new(0),
                idle: AtomicUsize::new(0),
                taken: AtomicU64::new(0),
                warm: warm.max(1),
                spinning: AtomicBool::new(false),
                spin,
                spawned: AtomicUsize::new(0),
            }),
            watcher: Mutex::new(None),
        }
    }

    /// Hands `job` to the pool: an idle thread takes it, or a new one
    /// while the pool has fewer than its warm threads, or one the watcher
    /// starts if the threads take no job within [`STALL`]. Never blocks.
    pub fn submit(&self, job: Job) {
        // Each queued job will take one of the idle threads.
        let free = self.threads.idle.load(Ordering::Acquire) > self.jobs.len();
        // The threads hold the receiving side until the pool is dropped.
        let _ = self.jobs.send(job);
        if free {
            return;
        }
        if self.threads.alive.load(Ordering::Acquire) < self.threads.warm {
            spawn(&self.queue, &self.threads);
        } else {
            self.watch();
        }
    }

    /// Has the watcher look at the pool again in [`STALL`].
    fn watch(&self) {
        let mut watcher = self.watcher.lock().unwrap_or_else(PoisonError::into_inner);
        if watcher.is_none() {
            let (wake, woken) = crossbeam_channel::bounded(1);
            let queue = self.queue.clone();
            let threads = Arc::clone(&self.threads);
            let started = thread::Builder::new()
                .name("mcp-pool-watch".into())
                .spawn(move || watch(&woken, &queue, &threads));
            match started {
                Ok(_) => *watcher = Some(wake),
                // No watcher: the job gets a thread now.
                Err(_) => return spawn(&self.queue, &self.threads),
            }
        }
        if let Some(wake) = &*watcher {
            // Full: a look is due already.
            let _ = wake.try_send(());
        }
    }
}

/// The watcher: woken when jobs found no idle thread, it looks every
/// [`STALL`] while jobs wait, and gives each a thread when the threads took
/// none since the last look. It ends with the pool.
fn watch(woken: &Receiver<()>, queue: &Receiver<Job>, threads: &Arc<Threads>) {
    while woken.recv().is_ok() {
        loop {
            let taken = threads.taken.load(Ordering::Acquire);
            thread::sleep(STALL);
            let waiting = queue.len();
            if waiting == 0 {
                break;
            }
            if threads.taken.load(Ordering::Acquire) == taken {
                let idle = threads.idle.load(Ordering::Acquire);
                for _ in idle..waiting {
                    spawn(queue, threads);
                }
            }
        }
    }
}

fn spawn(queue: &Receiver<Job>, threads: &Arc<Threads>) {
    let queue = queue.clone();
    let threads_of_it = Arc::clone(threads);
    let n = threads.spawned.fetch_add(1, Ordering::Relaxed) + 1;
    // Counted idle from the start: it is about to take a job.
    threads.alive.fetch_add(1, Ordering::AcqRel);
    threads.idle.fetch_add(1, Ordering::AcqRel);
    let spawned = thread::Builder::new()
        .name(format!("mcp-worker-{n}"))
        .spawn(move || worker(&queue, &threads_of_it));
    if spawned.is_err() {
        // Out of threads: the job waits for a thread there is.
        threads.alive.fetch_sub(1, Ordering::AcqRel);
        threads.idle.fetch_sub(1, Ordering::AcqRel);
    }
}

fn worker(queue: &Receiver<Job>, threads: &Threads) {
    loop {
        match threads.next_job(queue) {
            Ok(job) => {
                threads.idle.fetch_sub(1, Ordering::AcqRel);
                threads.taken.fetch_add(1, Ordering::AcqRel);
                job();
                threads.idle.fetch_add(1, Ordering::AcqRel);
            }
            Err(RecvTimeoutError::Timeout) => {
                let left = threads
                    .alive
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                        (n > threads.warm).then(|| n - 1)
                    })
                    .is_ok();
                if left {
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
    /// The next job: spinning first if asked and no other thread spins,
    /// then asleep until one comes or [`IDLE_EXIT`] passed.
    fn next_job(&self, queue: &Receiver<Job>) -> Result<Job, RecvTimeoutError> {
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

/// Takes a job as soon as one comes within `spin`, yielding the CPU
/// between looks: not a busy loop, so a thread with work on this CPU runs
/// first (spinning without yielding cost a third of the throughput under
/// load, BENCHMARKS.md).
fn spin_recv(queue: &Receiver<Job>, spin: Duration) -> Option<Job> {
    let started = Instant::now();
    loop {
        if let Ok(job) = queue.try_recv() {
            return Some(job);
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
}
