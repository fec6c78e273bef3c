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

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::sync::lock;

/// How long a worker waits for a message before it ends.
const IDLE: Duration = Duration::from_secs(30);

/// The most brief messages (not requests) carried at once (module docs).
const MAX_BRIEF: usize = 8;

/// The most brief messages waiting for a worker: past it one is refused
/// (a server that sends requests faster than it accepts their answers
/// would otherwise grow the queue without a bound).
const MAX_BRIEF_WAITING: usize = 4_096;

/// One message's work: its POST and its answer.
pub(super) type Job = Box<dyn FnOnce() + Send>;

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
        let carried = self.submit(Box::new(move || {
            let mut job = job;
            loop {
                job();
                let mut brief = lock(&workers.brief);
                match brief.waiting.pop_front() {
                    Some(next) => job = next,
                    None => {
                        brief.running -= 1;
                        return;
                    }
                }
            }
        }));
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
                    job();
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
        assert!(workers.submit(Box::new(move || {
            let _ = held.recv_timeout(Duration::from_secs(10));
            let _ = first_done.send("long");
        })));
        assert!(workers.submit(Box::new(move || {
            let _ = done_tx.send("short");
        })));
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok("short"));
        release.send(()).unwrap();
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok("long"));
        // Both idle now: the next two messages take them, none is started.
        workers.close();
        assert!(!workers.submit(Box::new(|| {})), "closed");
    }
}
