//! The worker pool: named threads that run pooled handlers, shared by
//! every connection of a server.
//!
//! A job gets a thread at once: an idle one if there is one, else a new
//! one. So a slow handler never holds up another, and the number of
//! threads follows the number of handlers running (each connection caps
//! those at `max_running`, see `in_flight`). `workers` threads stay once
//! started; the others exit after [`IDLE_EXIT`] without work.
//!
//! A thread out of jobs may spin (yielding the CPU) for a moment before it
//! sleeps, when the application asked for it
//! ([`ServerBuilder::spin_before_sleep`](crate::ServerBuilder::spin_before_sleep)):
//! the next job of a client that calls one tool after another then costs
//! no wake-up. Off by default, since a library must not burn its host's
//! CPU unasked; one thread spins at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

/// How long a thread beyond the warm ones waits for work before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// One pooled request: its handler, its reply, and the bookkeeping after.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The pool: a queue of jobs and the threads that take them.
pub(crate) struct Pool {
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    threads: Arc<Threads>,
}

/// What the pool's threads are doing, counted by the threads themselves.
struct Threads {
    alive: AtomicUsize,
    /// Waiting for a job and not yet claimed by one (see [`Pool::submit`]).
    idle: AtomicUsize,
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
                warm: warm.max(1),
                spinning: AtomicBool::new(false),
                spin,
                spawned: AtomicUsize::new(0),
            }),
        }
    }

    /// Runs `job` on a thread of its own: it claims an idle thread, or
    /// starts one. Never blocks.
    pub fn submit(&self, job: Job) {
        let claimed = self
            .threads
            .idle
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        // The threads hold the receiving side until the pool is dropped.
        let _ = self.jobs.send(job);
        if !claimed {
            self.spawn();
        }
    }

    fn spawn(&self) {
        let queue = self.queue.clone();
        let threads = Arc::clone(&self.threads);
        let n = threads.spawned.fetch_add(1, Ordering::Relaxed) + 1;
        threads.alive.fetch_add(1, Ordering::AcqRel);
        let spawned = thread::Builder::new()
            .name(format!("mcp-worker-{n}"))
            .spawn(move || worker(&queue, &threads));
        if spawned.is_err() {
            // Out of threads: the job waits for a thread there is.
            self.threads.alive.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn worker(queue: &Receiver<Job>, threads: &Threads) {
    loop {
        match threads.next_job(queue) {
            Ok(job) => {
                job();
                threads.idle.fetch_add(1, Ordering::AcqRel);
            }
            Err(RecvTimeoutError::Timeout) => {
                // Leave only if no job claimed this thread meanwhile, and
                // the warm ones stay.
                if threads.alive.load(Ordering::Acquire) > threads.warm
                    && threads
                        .idle
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                        .is_ok()
                {
                    threads.alive.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                threads.alive.fetch_sub(1, Ordering::AcqRel);
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
    fn each_job_gets_a_thread_of_its_own_and_warm_threads_are_reused() {
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
        // All three run at once: none waits behind a blocked one.
        let mut seen: Vec<i32> = (0..3)
            .map(|_| starts.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        seen.sort();
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(pool.threads.alive.load(Ordering::Acquire), 3);
        for _ in 0..3 {
            release.send(()).unwrap();
        }
        // Once they are idle, the next job reuses one of them.
        while pool.threads.idle.load(Ordering::Acquire) < 3 {
            thread::yield_now();
        }
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(Box::new(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(pool.threads.alive.load(Ordering::Acquire), 3);
    }
}
