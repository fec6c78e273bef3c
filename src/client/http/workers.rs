//! The threads that carry an HTTP client's messages: each takes one
//! message, POSTs it and reads its answer to the end, handing each message
//! of it to the link (`link::Inbox`), then takes the next.
//!
//! A message goes to an idle worker, or to a new one when none is idle: a
//! request's stream may last as long as a subscription, and no message
//! waits behind another. A worker idle for [`IDLE`] ends. So a call costs
//! no thread of its own, and crosses threads twice: from its caller to a
//! worker, and back with its answer (the caller's channel).
//!
//! Counting: `idle` is the number of idle workers no queued message counts
//! on. A message that finds it above zero takes one of them (`idle - 1`);
//! otherwise it starts a worker of its own. A worker that is done counts
//! itself idle again; one that waited [`IDLE`] for nothing ends only if it
//! is not counted on (`idle > 0`), under the same lock: every queued
//! message always has a worker that will take it.
//!
//! A request gets a worker at once, however many run. A message that is
//! not one (a notification, an answer to the server's request: its POST
//! waits for the server's `202` up to `ACCEPT_TIMEOUT`) is brief, and the
//! server chooses how many come (a `ping` on its GET stream is an answer
//! to POST): at most [`MAX_BRIEF`] of them are carried at once, and the
//! rest wait in order for one of those workers (`submit_brief`; at most
//! [`MAX_BRIEF_WAITING`], past which one is refused), so a server that
//! sends many requests starts a bounded number of threads.
//!
//! A job that panics is caught where the worker runs it ([`Job::run`]):
//! its own `panicked` part then fails what it carried (the request's
//! caller is answered at once, rather than left to its timeout), and the
//! worker, its count and the brief messages' slots stay as they were.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::client::notes::panic_text;
use crate::sync::lock;

/// How long a worker waits for a message before it ends.
const IDLE: Duration = Duration::from_secs(30);

/// The most brief messages (not requests) carried at once (module docs).
const MAX_BRIEF: usize = 8;

/// The most brief messages waiting for a worker: past it one is refused
/// (a server that sends requests faster than it accepts their answers
/// would otherwise grow the queue without a bound).
const MAX_BRIEF_WAITING: usize = 4_096;

/// One message's work (its POST and its answer), and what is done instead
/// when that work panics.
pub(super) struct Job {
    work: Box<dyn FnOnce() + Send>,
    /// Called with the panic's message when `work` panicked: fails what
    /// it carried.
    panicked: Box<dyn FnOnce(&str) + Send>,
}

impl Job {
    /// `work`, and `panicked` for when it panics (given the panic's
    /// message).
    pub fn new(
        work: impl FnOnce() + Send + 'static,
        panicked: impl FnOnce(&str) + Send + 'static,
    ) -> Job {
        Job {
            work: Box::new(work),
            panicked: Box::new(panicked),
        }
    }

    /// Runs the work on this thread. A panic in it is caught, as the
    /// server catches a handler's, and `panicked` told: a panicking
    /// message must not end its worker (whose count and brief slot would
    /// be lost) nor leave its caller waiting for an answer that cannot
    /// come. A panic in `panicked` itself is caught too.
    fn run(self) {
        let Job { work, panicked } = self;
        if let Err(panic) = catch_unwind(AssertUnwindSafe(work)) {
            let what = panic_text(&*panic);
            let _ = catch_unwind(AssertUnwindSafe(|| panicked(&what)));
        }
    }
}

/// The workers of one client.
pub(super) struct Workers {
    /// Where messages wait for a worker; `None` once the client closed.
    queue: Mutex<Option<Sender<Job>>>,
    jobs: Receiver<Job>,
    /// Idle workers that no queued message counts on (module docs).
    idle: Mutex<usize>,
    /// The brief messages waiting for one of the [`MAX_BRIEF`] workers
    /// that carry them, and how many of those run.
    brief: Mutex<Brief>,
}

#[derive(Default)]
struct Brief {
    waiting: VecDeque<Job>,
    running: usize,
}

impl Workers {
    pub fn new() -> Arc<Workers> {
        let (queue, jobs) = crossbeam_channel::unbounded();
        Arc::new(Workers {
            queue: Mutex::new(Some(queue)),
            jobs,
            idle: Mutex::new(0),
            brief: Mutex::default(),
        })
    }

    /// Hands `job`, a brief message (module docs), to a worker when fewer
    /// than [`MAX_BRIEF`] carry such messages; otherwise it waits for one
    /// of them, which takes the waiting in order when its own is done.
    /// `false`: not taken (the client closed, no thread could be started,
    /// or [`MAX_BRIEF_WAITING`] wait already).
    pub fn submit_brief(self: &Arc<Workers>, job: Job) -> bool {
        if lock(&self.queue).is_none() {
            return false;
        }
        {
            let mut brief = lock(&self.brief);
            if brief.running >= MAX_BRIEF {
                if brief.waiting.len() >= MAX_BRIEF_WAITING {
                    return false;
                }
                brief.waiting.push_back(job);
                return true;
            }
            brief.running += 1;
        }
        let workers = Arc::clone(self);
        // Each job runs caught (`Job::run`): this loop always ends by
        // giving its slot back.
        let carried = self.submit(Job::new(
            move || {
                let mut job = job;
                loop {
                    job.run();
                    let mut brief = lock(&workers.brief);
                    match brief.waiting.pop_front() {
                        Some(next) => job = next,
                        None => {
                            brief.running -= 1;
                            return;
                        }
                    }
                }
            },
            |_| {},
        ));
        if !carried {
            lock(&self.brief).running -= 1;
        }
        carried
    }

    /// Hands `job` to an idle worker, or to a new one. `false`: not taken
    /// (the client closed, or no thread could be started).
    pub fn submit(self: &Arc<Workers>, job: Job) -> bool {
        let Some(queue) = lock(&self.queue).clone() else {
            return false;
        };
        let counted_on = {
            let mut idle = lock(&self.idle);
            let counted_on = *idle > 0;
            *idle -= usize::from(counted_on);
            counted_on
        };
        if !counted_on {
            let workers = Arc::clone(self);
            let started = thread::Builder::new()
                .name("mcp-client-http".into())
                .spawn(move || workers.work());
            if started.is_err() {
                return false;
            }
        }
        // The receiver lives as long as `self`: sending cannot fail.
        queue.send(job).is_ok()
    }

    /// No message is taken any more: idle workers end, and the others once
    /// their message is done; brief messages still waiting are dropped.
    pub fn close(&self) {
        lock(&self.queue).take();
        // Dropped outside the lock (a job may hold the last of what owns
        // these workers).
        let waiting = std::mem::take(&mut lock(&self.brief).waiting);
        drop(waiting);
    }

    /// A worker: messages until it waited [`IDLE`] for nothing while not
    /// counted on, or the client closed.
    fn work(self: Arc<Workers>) {
        loop {
            match self.jobs.recv_timeout(IDLE) {
                Ok(job) => {
                    job.run();
                    *lock(&self.idle) += 1;
                }
                Err(RecvTimeoutError::Timeout) => {
                    let mut idle = lock(&self.idle);
                    if *idle > 0 {
                        *idle -= 1;
                        return;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::bounded;

    /// A message never waits behind another: the first holds its worker
    /// until the second is done, which must have found a worker of its own.
    #[test]
    fn a_message_never_waits_behind_a_long_one() {
        let workers = Workers::new();
        let (release, held) = bounded::<()>(0);
        let (done_tx, done) = bounded::<&str>(2);
        let first_done = done_tx.clone();
        assert!(workers.submit(Job::new(
            move || {
                let _ = held.recv_timeout(Duration::from_secs(10));
                let _ = first_done.send("long");
            },
            |_| {}
        )));
        assert!(workers.submit(Job::new(
            move || {
                let _ = done_tx.send("short");
            },
            |_| {}
        )));
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok("short"));
        release.send(()).unwrap();
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok("long"));
        // Both idle now: the next two messages take them, none is started.
        workers.close();
        assert!(!workers.submit(Job::new(|| {}, |_| {})), "closed");
    }

    /// A job that panics is failed at once through its own `panicked`,
    /// with the panic's message, and takes nothing with it: more brief
    /// messages panic than there are brief slots, and the next one still
    /// runs (each panic gave its slot back).
    #[test]
    fn a_panicking_job_is_failed_at_once_and_gives_its_slot_back() {
        let workers = Workers::new();
        let (failed_tx, failed) = bounded::<String>(MAX_BRIEF + 1);
        for n in 0..=MAX_BRIEF {
            let failed_tx = failed_tx.clone();
            assert!(workers.submit_brief(Job::new(
                move || panic!("job {n} panicked"),
                move |what| {
                    let _ = failed_tx.send(what.to_owned());
                },
            )));
            let what = failed.recv_timeout(Duration::from_secs(10));
            assert_eq!(what.as_deref(), Ok(&*format!("job {n} panicked")));
        }
        let (done_tx, done) = bounded::<()>(1);
        assert!(workers.submit_brief(Job::new(
            move || {
                let _ = done_tx.send(());
            },
            |_| {}
        )));
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok(()));
        workers.close();
    }
}
