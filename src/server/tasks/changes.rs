//! Every change of a task's state after its creation: the worker's end,
//! a transition (a new status, the questions of a round), a worker's
//! own writes tried again while the store fails, and the bounds of what
//! a task keeps (its result, its error).

use std::thread;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::{GIVE_UP_WITHOUT_TTL, StoredTask, Tasks, new_task_id, outcome_unknown, set_status};
use crate::jsonrpc::ErrorObject;
use crate::server::encode;
use crate::types::{DetailedTask, JsonObject, TaskStatus};

impl Tasks {
    /// The worker's end: the terminal state, unless the task is terminal
    /// already (cancelled). The worker is no longer live after it.
    ///
    /// A store out of reach (Redis restarting) does not lose the result:
    /// the write is tried again, the lease still renewed, until it is
    /// written, the task ended otherwise, or it expired; a try that finds
    /// an earlier one applied (its reply was lost) stands, and the status
    /// is published. What could not be kept is said on the server's trace.
    pub fn end(&self, task_id: &str, outcome: Result<Value, ErrorObject>) {
        let outcome = outcome
            .and_then(|result| self.bounded(result))
            .map_err(|error| self.bounded_error(error));
        let expires = self.live().get(task_id).and_then(|live| live.expires);
        let written = self.change_durably(task_id, expires, &mut |task| {
            task.input_requests = None;
            match &outcome {
                Ok(result) => {
                    task.result = Some(result.clone());
                    set_status(task, TaskStatus::Completed, None);
                }
                Err(error) => {
                    task.error = Some(error.clone());
                    let message = Some(format!("Failed: {}", error.message));
                    set_status(task, TaskStatus::Failed, message);
                }
            }
        });
        match written {
            Ok(Some(_)) => {}
            Ok(None) => {
                // Cancelled is the client's word; anything else (failed by
                // the lease rule, gone) dropped what the handler finished.
                let now = self.store.get(task_id);
                let status = now
                    .as_ref()
                    .ok()
                    .and_then(|t| t.as_ref())
                    .map(|t| t.task.task.status);
                if status != Some(TaskStatus::Cancelled) {
                    (self.trace)(&format!(
                        "task {task_id}: its handler finished, but the task had ended already ({}): what it finished was not kept",
                        status.map_or("gone", TaskStatus::as_str)
                    ));
                }
            }
            Err(e) if outcome_unknown(&e) => (self.trace)(&format!(
                "task {task_id}: its handler finished, and the task store cannot tell whether it kept what it finished: {}",
                e.message
            )),
            Err(e) => (self.trace)(&format!(
                "task {task_id}: its handler finished, but the task store could not keep it before the task expired: {}",
                e.message
            )),
        }
        self.live().remove(task_id);
        self.store.worker_ended(task_id);
    }

    /// A result the task may keep: an object, and no larger than
    /// `max_result_bytes` as JSON.
    fn bounded(&self, result: Value) -> Result<JsonObject, ErrorObject> {
        let Value::Object(result) = result else {
            return Err(ErrorObject::internal_error(
                "the result is not a JSON object",
            ));
        };
        let size = encode::to_vec(&result).map_or(usize::MAX, |v| v.len());
        let max = self.config.max_result_bytes;
        if size > max {
            return Err(ErrorObject::internal_error(format!(
                "the result is {size} bytes, more than the {max} a task may keep"
            ))
            .with_data(json!({ "limit": max })));
        }
        Ok(result)
    }

    /// An error the task may keep: one no larger than `max_result_bytes`
    /// as JSON, as for a result; a larger one (a handler's message that
    /// echoes what it was given) becomes the `-32603` that says so.
    fn bounded_error(&self, error: ErrorObject) -> ErrorObject {
        let size = encode::to_vec(&error).map_or(usize::MAX, |v| v.len());
        let max = self.config.max_result_bytes;
        if size <= max {
            return error;
        }
        ErrorObject::internal_error(format!(
            "the error is {size} bytes, more than the {max} a task may keep"
        ))
        .with_data(json!({ "limit": max }))
    }

    /// Applies `change` to a task that has not ended (a new status, a
    /// status message). Returns the task after the change, or `None` when
    /// it is gone or has ended. Nothing is published: see
    /// [`Tasks::change`].
    pub fn transition(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut DetailedTask),
    ) -> Result<Option<DetailedTask>, ErrorObject> {
        self.transition_as(task_id, None, change)
    }

    /// [`Tasks::transition`], as one try of the change named `write`
    /// ([`TaskStore::update_as`](super::TaskStore::update_as)) when there is one. A store that finds
    /// `write` applied by an earlier try returns the task without calling
    /// the closure: that try's change stands, as if made now.
    fn transition_as(
        &self,
        task_id: &str,
        write: Option<&str>,
        change: &mut dyn FnMut(&mut DetailedTask),
    ) -> Result<Option<DetailedTask>, ErrorObject> {
        // `None` until the store calls the step (see above).
        let mut changed = None;
        let mut step = |stored: &mut StoredTask| {
            let running = !stored.task.task.status.is_terminal();
            changed = Some(running);
            if running {
                change(&mut stored.task);
                if stored.task.task.status.is_terminal() {
                    stored.answers.clear();
                }
            }
        };
        let after = match write {
            Some(write) => self.store.update_as(task_id, write, &mut step)?,
            None => self.store.update(task_id, &mut step)?,
        };
        Ok(after
            .filter(|_| changed.unwrap_or(true))
            .map(|after| after.task))
    }

    /// [`Tasks::transition`] as one try of the change named `write`, then
    /// the task's new state published, in order with every other status
    /// change (see `order`).
    pub(super) fn change(
        &self,
        task_id: &str,
        write: Option<&str>,
        change: &mut dyn FnMut(&mut DetailedTask),
    ) -> Result<Option<DetailedTask>, ErrorObject> {
        let _order = self.ordered();
        let after = self.transition_as(task_id, write, change)?;
        if let Some(after) = &after {
            self.publish(after);
        }
        Ok(after)
    }

    /// [`Tasks::change`] for a worker's own step (its questions, its end),
    /// tried again while the store fails (every 100 ms, then up to every
    /// second) until it is written, the task ended or is gone, or `expires`
    /// passed (an hour for a task without a TTL): then the last error.
    /// Every try carries one write id ([`TaskStore::update_as`](super::TaskStore::update_as)): a try
    /// after one whose reply was lost finds it applied, and it stands. A
    /// store that cannot tell whether it was (`outcome_unknown`) is not
    /// tried again.
    pub fn change_durably(
        &self,
        task_id: &str,
        expires: Option<SystemTime>,
        change: &mut dyn FnMut(&mut DetailedTask),
    ) -> Result<Option<DetailedTask>, ErrorObject> {
        let until = expires.unwrap_or_else(|| SystemTime::now() + GIVE_UP_WITHOUT_TTL);
        let write = new_task_id()?;
        let mut pause = Duration::from_millis(100);
        loop {
            match self.change(task_id, Some(&write), change) {
                Err(e) if !outcome_unknown(&e) && SystemTime::now() + pause < until => {
                    thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                done => return done,
            }
        }
    }
}
