//! The task methods a client calls, and their owner checks: a task
//! created for a `tools/call`, `tasks/get`, `tasks/update` (the answers
//! a handler waits for) and `tasks/cancel`; and the signals that reach a
//! handler running here.

use std::time::SystemTime;

use serde_json::json;

use super::{
    Created, Live, SIGNALS_WAITING, Signal, StoredTask, Tasks, new_task_id, set_status, touch,
    unknown_task, wire_ms,
};
use crate::jsonrpc::ErrorObject;
use crate::server::cancel::CancelToken;
use crate::server::change_feed::Change;
use crate::server::mrtr::InputKind;
use crate::server::request_meta::Owner;
use crate::types::{DetailedTask, InputResponses, Task, TaskStatus, iso8601};

impl Tasks {
    /// Creates a task bound to `owner`, whom the token of the request that
    /// creates it stands for (see [`Tasks::read_by`]): it is stored
    /// (durably created: any `get` finds it from here on) and counted
    /// among the running ones. Its worker is started by the caller
    /// (`worker::start`) with what this returns.
    pub fn create(&self, owner: Option<Owner>) -> Result<Created, ErrorObject> {
        let task_id = new_task_id()?;
        // A few signals at most wait: a handler that is not asking for
        // input reads none, and the watch says `Look` every interval while
        // answers wait in the store. A signal that finds it full is not
        // needed: the handler's next look reads the store, which says
        // everything a signal would (answers, or that the task ended).
        let (signals, inbox) = crossbeam_channel::bounded(SIGNALS_WAITING);
        let now = SystemTime::now();
        let expires = self.config.ttl.and_then(|t| now.checked_add(t));
        // Trips by itself at the TTL, when the task is forgotten: nobody
        // could cancel it then (for its handler and its helpers alike).
        let token = CancelToken::expiring(expires);
        {
            // The slot is taken before the store is called (never under
            // this lock), so that the bound holds under a burst.
            let mut live = self.live();
            let max = self.config.max_running;
            if live.len() >= max {
                return Err(ErrorObject::internal_error(format!(
                    "too many running tasks (at most {max}): try again when one has finished"
                ))
                .with_data(json!({ "limit": max })));
            }
            let entry = Live {
                token: token.clone(),
                signals,
                expires,
                stored: false,
            };
            live.insert(task_id.clone(), entry);
        }
        let stamp = iso8601(now);
        let task = Task {
            task_id: task_id.clone(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: stamp.clone(),
            last_updated_at: stamp,
            ttl_ms: self.config.ttl.map(wire_ms),
            poll_interval_ms: Some(wire_ms(self.config.poll_interval)),
        };
        let stored = StoredTask {
            task: DetailedTask::new(task.clone()),
            answers: InputResponses::new(),
            expires,
            owner,
        };
        if let Err(e) = self.store.create(stored.clone()) {
            self.live().remove(&task_id);
            return Err(e);
        }
        if let Some(live) = self.live().get_mut(&task_id) {
            live.stored = true;
        }
        Ok(Created {
            task,
            signals: inbox,
            token,
            expires: stored.expires,
        })
    }

    /// Task `task_id` as a request whose token stands for `caller` may
    /// see it: `None` when the store does not have it, or when it is bound
    /// to another owner ([`Owner::admits`]): a task of someone else is
    /// unknown, as one that never was (the same `-32602`, no oracle).
    /// Every read on behalf of a client goes through here (`tasks/get`,
    /// a listen's `taskIds`), every change through [`Tasks::update_by`].
    pub(super) fn read_by(
        &self,
        task_id: &str,
        caller: Option<&Owner>,
    ) -> Result<Option<StoredTask>, ErrorObject> {
        let stored = self.store.get(task_id)?;
        Ok(stored.filter(|stored| Owner::admits(stored.owner.as_ref(), caller)))
    }

    /// [`TaskStore::update`](super::TaskStore::update) on behalf of a request whose token stands
    /// for `caller`: `change` is applied only when the task's owner admits
    /// it ([`Owner::admits`], checked on the state the store hands the
    /// closure, in the same atomic step); otherwise nothing changes (a
    /// store that writes only what changed writes nothing) and the answer
    /// is `None`, as for a task the store does not have.
    fn update_by(
        &self,
        task_id: &str,
        caller: Option<&Owner>,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        let mut admitted = false;
        let after = self.store.update(task_id, &mut |stored| {
            admitted = Owner::admits(stored.owner.as_ref(), caller);
            if admitted {
                change(stored);
            }
        })?;
        Ok(after.filter(|_| admitted))
    }

    /// `tasks/get` by a request whose token stands for `caller`.
    pub fn get(&self, task_id: &str, caller: Option<&Owner>) -> Result<DetailedTask, ErrorObject> {
        match self.read_by(task_id, caller)? {
            Some(stored) => Ok(stored.task),
            None => Err(unknown_task(task_id)),
        }
    }

    /// `tasks/update`: the answers to outstanding keys leave
    /// `inputRequests` now for the stored task's `answers` (the task
    /// resumes once none is left), and its handler is told to take them;
    /// any other key is ignored. An answer that does not fit the question
    /// its key names (an elicitation answered with `5`) is `-32602`, and
    /// nothing of that update is taken (as for a retry, `Sealer::open`). A
    /// task that took answers is published, still waiting for the rest too
    /// (`inputRequests` changed). A retry of the store's write after a lost
    /// reply does not apply it twice (`TaskStore::update`), and the answers
    /// wait in the store for a handler whose message was lost. By a
    /// request whose token stands for `caller` ([`Tasks::update_by`]).
    pub fn update(
        &self,
        task_id: &str,
        caller: Option<&Owner>,
        responses: InputResponses,
    ) -> Result<(), ErrorObject> {
        let order = self.ordered();
        let mut accepted = false;
        let mut resumed = false;
        let mut misfit = None;
        let after = self.update_by(task_id, caller, &mut |stored| {
            accepted = false;
            resumed = false;
            let StoredTask { task, answers, .. } = stored;
            if task.task.status != TaskStatus::InputRequired {
                return;
            }
            let Some(outstanding) = task.input_requests.as_mut() else {
                return;
            };
            misfit = responses
                .iter()
                .find(|(key, answer)| {
                    let kind = outstanding.get(*key).and_then(InputKind::of);
                    kind.is_some_and(|kind| !kind.accepts(answer))
                })
                .map(|(key, _)| key.clone());
            if misfit.is_some() {
                return;
            }
            for (key, answer) in &responses {
                if outstanding.remove(key).is_some() {
                    answers.insert(key.clone(), answer.clone());
                    accepted = true;
                }
            }
            if outstanding.is_empty() {
                task.input_requests = None;
                set_status(task, TaskStatus::Working, None);
                resumed = true;
            } else if accepted {
                // Still waiting, for fewer answers: a change `tasks/get`
                // shows, so it moves `lastUpdatedAt` and is published.
                touch(task);
            }
        })?;
        let Some(after) = after else {
            return Err(unknown_task(task_id));
        };
        if let Some(key) = misfit {
            return Err(ErrorObject::invalid_params(format!(
                "inputResponses[{key:?}] does not answer the input request it names: nothing was taken"
            )));
        }
        // Published before the worker takes the answers: its own next
        // change (say, `completed`) can then only come after this one.
        if accepted || resumed {
            self.publish(&after.task);
        }
        drop(order);
        if accepted && !self.signal_here(task_id, Signal::Look) {
            // Its handler may run on another replica.
            let answers = Change::TaskAnswers {
                task_id: task_id.to_owned(),
            };
            self.connections.replicas.send(&answers);
        }
        Ok(())
    }

    /// The answers the handler of `task_id` waits for under `wanted` (keys
    /// on the wire), taken out of the store: `None` when the task ended or
    /// is gone. Taken at most once for each key (a handler ignores a key it
    /// no longer waits for), so that when the store cannot say whether the
    /// write took, the answers read are handed over all the same.
    pub fn take_answers(
        &self,
        task_id: &str,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<Option<InputResponses>, ErrorObject> {
        // A read first: most looks find nothing, and a read writes nothing.
        let Some(seen) = self.store.get(task_id)? else {
            return Ok(None);
        };
        if seen.task.task.status.is_terminal() {
            return Ok(None);
        }
        if !seen.answers.keys().any(|key| wanted(key)) {
            return Ok(Some(InputResponses::new()));
        }
        let mut taken = InputResponses::new();
        let mut ended = false;
        let after = self.store.update(task_id, &mut |stored| {
            taken.clear();
            ended = stored.task.task.status.is_terminal();
            if ended {
                return;
            }
            stored.answers.retain(|key, answer| {
                let take = wanted(key);
                if take {
                    taken.insert(key.clone(), answer.clone());
                }
                !take
            });
        });
        match after {
            Ok(None) => Ok(None),
            Ok(Some(_)) if ended => Ok(None),
            Ok(Some(_)) => Ok(Some(taken)),
            Err(_) if !taken.is_empty() && !ended => Ok(Some(taken)),
            Err(e) => Err(e),
        }
    }

    /// `tasks/cancel`: a task that has not finished is `cancelled` now and
    /// its worker told to stop (here, or through the feed: that replica
    /// reads the task and stops its handler if the store says so); a
    /// finished one is left as it is. By a request whose token stands for
    /// `caller` ([`Tasks::update_by`]).
    pub fn cancel(&self, task_id: &str, caller: Option<&Owner>) -> Result<(), ErrorObject> {
        let order = self.ordered();
        let mut changed = false;
        let after = self.update_by(task_id, caller, &mut |stored| {
            changed = !stored.task.task.status.is_terminal();
            if changed {
                stored.task.input_requests = None;
                stored.answers.clear();
                let message = Some("Cancelled by the client".to_owned());
                set_status(&mut stored.task, TaskStatus::Cancelled, message);
            }
        })?;
        let Some(after) = after else {
            return Err(unknown_task(task_id));
        };
        if changed {
            self.publish(&after.task);
        }
        drop(order);
        let here = self.stop_here(task_id);
        if changed && !here {
            // Its handler may run on another replica.
            let stop = Change::TaskStop {
                task_id: task_id.to_owned(),
            };
            self.connections.replicas.send(&stop);
        }
        Ok(())
    }

    /// Stops the handler of `task_id` if it runs here; whether it does.
    pub(super) fn stop_here(&self, task_id: &str) -> bool {
        let live = self.live();
        let Some(live) = live.get(task_id) else {
            return false;
        };
        live.token.cancel();
        // Full: the signals waiting wake it, and the store says it ended.
        let _ = live.signals.try_send(Signal::Stop);
        true
    }

    /// Sends `signal` to the handler of `task_id` if it runs here; whether
    /// it does.
    pub(super) fn signal_here(&self, task_id: &str, signal: Signal) -> bool {
        let live = self.live();
        let Some(live) = live.get(task_id) else {
            return false;
        };
        // Full: a look is on its way already.
        let _ = live.signals.try_send(signal);
        true
    }
}
