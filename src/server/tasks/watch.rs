//! How the tasks this process runs hear what happened elsewhere: the
//! messages other replicas send through the change feed, and the watch
//! thread that reads those tasks again for a store other processes share
//! (so that a lost message costs time, never an answer or a stop), and
//! sweeps the store for tasks whose runner went away.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;

use crate::server::change_feed::Change;
use crate::server::tasks::{LOOKS_WAITING, Look, Signal, Tasks};

impl Tasks {
    /// Takes the task signals other replicas send through the server's
    /// change feed, for the handlers running here. A message only says
    /// where to look: what the handler does comes from the store (so a
    /// forged one changes nothing). `TaskStop` and a reconnection go to the
    /// watch thread, which reads the store (never the feed's own thread,
    /// which a slow Redis would hold); without one (a store only this
    /// process uses), the task is read here. After a reconnection the
    /// listens here are also told the statuses they may have missed
    /// ([`Tasks::tell_listens`]).
    pub fn hear_replicas(self: &Arc<Self>) {
        let tasks = Arc::downgrade(self);
        self.connections
            .replicas
            .on_task_signal(Box::new(move |change| {
                let Some(tasks) = tasks.upgrade() else {
                    return;
                };
                match change {
                    Change::TaskAnswers { task_id } => {
                        tasks.signal_here(&task_id, Signal::Look);
                    }
                    Change::TaskStop { task_id } => tasks.look(Look::Task(task_id)),
                    Change::Reconnected => {
                        // Set before the look: a look dropped for a full
                        // queue still finds it at the next round.
                        tasks.resync.store(true, Ordering::Release);
                        tasks.look(Look::All);
                    }
                    _ => {}
                }
            }));
    }

    /// Has the watch thread read tasks again; without one, reads here.
    fn look(&self, look: Look) {
        let looks = self.looks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(looks) = looks.as_ref() {
            // Full: its next round reads every task anyway.
            let _ = looks.try_send(look);
            return;
        }
        drop(looks);
        match look {
            Look::Task(task_id) => self.look_at(&task_id),
            Look::All => self.look_at_all(),
        }
        if self.resync.swap(false, Ordering::AcqRel) {
            self.tell_listens();
        }
    }

    /// Starts the watch thread, for a store other processes share
    /// ([`TaskStore::watch_interval`]): every interval, and at each
    /// message, it sweeps the store (publishing and stopping what the
    /// sweep ended) and reads again the tasks this process runs, stopping
    /// the handlers of those that ended elsewhere and waking those whose
    /// answers wait in the store; after a reconnection of the feed, it
    /// tells the listens what they missed first. It ends with the server.
    pub fn watch(self: &Arc<Self>) {
        let Some(every) = self.store.watch_interval() else {
            return;
        };
        let every = every.max(Duration::from_millis(1));
        let (looks, heard) = crossbeam_channel::bounded(LOOKS_WAITING);
        let tasks = Arc::downgrade(self);
        let spawned = thread::Builder::new()
            .name("mcp-task-watch".into())
            .spawn(move || {
                let mut next = Instant::now() + every;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    let heard = heard.recv_timeout(wait);
                    let Some(tasks) = tasks.upgrade() else {
                        return;
                    };
                    match heard {
                        Ok(Look::Task(task_id)) => tasks.look_at(&task_id),
                        Ok(Look::All) => next = Instant::now(),
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                    if tasks.resync.swap(false, Ordering::AcqRel) {
                        tasks.tell_listens();
                    }
                    if Instant::now() >= next {
                        tasks.look_at_all();
                        next = Instant::now() + every;
                    }
                }
            });
        if spawned.is_ok() {
            *self.looks.lock().unwrap_or_else(|e| e.into_inner()) = Some(looks);
        }
    }

    /// Sweeps the store (each task it ended is published, and its handler
    /// stopped if it runs here), then reads every task running here again.
    fn look_at_all(&self) {
        // Redis out of reach: the next round sweeps.
        if let Ok(ended) = self.store.sweep() {
            for task in ended {
                let task_id = task.task.task.task_id.clone();
                let order = self.ordered();
                self.publish(&task.task);
                drop(order);
                self.stop_here(&task_id);
            }
        }
        let running: Vec<String> = self.live().keys().cloned().collect();
        for task_id in running {
            self.look_at(&task_id);
        }
    }

    /// Reads `task_id` again if its handler runs here: stopped when the
    /// task ended or is gone, woken when answers wait for it. A task the
    /// store does not hold yet (counted as running before its `create` is
    /// called, which has not returned) is not read: that read would find
    /// nothing, and stop a handler nobody cancelled. Once `create` has
    /// returned, every read finds the task (durably created), so a read
    /// that finds nothing means it is gone.
    fn look_at(&self, task_id: &str) {
        if !self.live().get(task_id).is_some_and(|live| live.stored) {
            return;
        }
        match self.store.get(task_id) {
            Ok(None) => drop(self.stop_here(task_id)),
            Ok(Some(seen)) if seen.task.task.status.is_terminal() => {
                self.stop_here(task_id);
            }
            Ok(Some(seen)) if !seen.answers.is_empty() => {
                self.signal_here(task_id, Signal::Look);
            }
            // Running, or the store out of reach: the next round looks.
            _ => {}
        }
    }
}
