//! The Tasks extension on the server (`io.modelcontextprotocol/tasks`,
//! FIXTURES.md part C): a `tools/call` answered with a task handle, its
//! work on a thread of its own, and `tasks/get`, `tasks/update`,
//! `tasks/cancel` and `notifications/tasks`.
//!
//! The pieces:
//!
//! - [`Tasks`], shared by every connection of a server: the store, the
//!   tasks whose worker runs in this process (`live`), the bounds.
//! - `store.rs`: [`TaskStore`] and the default [`MemoryTaskStore`].
//! - `redis_store.rs` (feature `redis`): `RedisTaskStore`, with its
//!   connection pool (`redis_pool.rs`), its value in Redis and lease rule
//!   (`redis_record.rs`) and its lease renewal (`redis_lease.rs`).
//! - `worker.rs`: a task's thread; it runs the tool's handler, round after
//!   round when the handler asks for input, and writes the terminal state.
//! - `watch.rs`: what the tasks running here hear from elsewhere: the
//!   feed's messages, and the watch thread of a shared store.
//!
//! Every change of a task goes through [`TaskStore::update`] with a
//! closure that keeps the rules: a terminal status is final (so a worker
//! that finishes after `tasks/cancel` changes nothing), answers leave
//! `inputRequests` for the stored task's `answers` before `tasks/update`
//! is acknowledged (the handler takes them from there), and
//! `lastUpdatedAt` moves with the status. Each status change is published
//! to the subscriptions that follow the task.
//!
//! Past one process, what reaches a handler from elsewhere (answers, a
//! stop) is announced by a message on the change feed, and is in the store
//! whatever becomes of the message: for a shared store the server reads
//! the tasks it runs again every [`TaskStore::watch_interval`], when the
//! feed reconnects, and on each message (`Tasks::watch`, `watch.rs`), and the
//! store's sweep ends the tasks whose runner went away.

mod builder;
pub(crate) mod link;
#[cfg(feature = "redis")]
mod redis_lease;
#[cfg(feature = "redis")]
pub(crate) mod redis_pool;
#[cfg(feature = "redis")]
mod redis_record;
#[cfg(feature = "redis")]
pub(crate) mod redis_store;
mod store;
mod watch;
pub(crate) mod worker;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime};

use crossbeam_channel::{Receiver, Sender};
use serde_json::{Value, json};

pub use store::{MemoryTaskStore, StoredTask, TaskStore};

use crate::jsonrpc::ErrorObject;
use crate::server::cancel::CancelToken;
use crate::server::change_feed::Change;
use crate::server::connections::Connections;
use crate::server::encode;
use crate::server::event::{ServerEvent, TaskUpdate};
use crate::server::mrtr::InputKind;
use crate::server::request_meta::Owner;
use crate::types::{
    DetailedTask, InputResponses, JsonObject, TASKS_EXTENSION, Task, TaskStatus, iso8601,
    parse_iso8601,
};

/// How a tool answers a `tools/call` whose request declares the Tasks
/// extension (FIXTURES.md C2; the extension has no per-tool field on the
/// wire: the server alone decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMode {
    /// Always synchronous: a plain `CallToolResult`.
    Never,
    /// A task when the request declares the extension; synchronous
    /// otherwise.
    Optional,
    /// A task when the request declares the extension; `-32021` naming
    /// the extension otherwise, before the handler runs.
    Required,
}

/// The bounds and defaults of a server's tasks, set through
/// [`ServerBuilder`](crate::ServerBuilder).
#[derive(Debug, Clone)]
pub(crate) struct TaskConfig {
    /// `ttlMs`: how long a task stays readable after it was created
    /// (`None`: unlimited, until the store evicts it).
    pub ttl: Option<Duration>,
    /// `pollIntervalMs`.
    pub poll_interval: Duration,
    /// Tasks whose worker runs at once; past it, creation is refused.
    pub max_running: usize,
    /// The largest result (as JSON) a task keeps; a larger one fails the
    /// task with `-32603`. A larger error is replaced by that `-32603`.
    pub max_result_bytes: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Duration::from_millis(200),
            max_running: 64,
            max_result_bytes: 4 << 20,
        }
    }
}

/// A task just created, for its worker (`worker::start`).
pub(crate) struct Created {
    /// Its seed state, the reply to the `tools/call`.
    pub task: Task,
    /// Where the server's answers and stop reach the worker.
    pub signals: Receiver<Signal>,
    pub token: CancelToken,
    pub expires: Option<SystemTime>,
}

/// What the server sends a task's worker.
pub(crate) enum Signal {
    /// Answers are in the store for it: take them ([`Tasks::take_answers`]).
    Look,
    /// The task ended (`tasks/cancel`, or failed elsewhere): stop.
    Stop,
}

/// A task whose worker runs in this process.
struct Live {
    token: CancelToken,
    signals: Sender<Signal>,
    /// When the task expires: its worker's writes are tried until then.
    expires: Option<SystemTime>,
    /// Whether the store holds it (its `create` returned): until then a
    /// read finds nothing, which says nothing about the task
    /// (`Tasks::look_at`).
    stored: bool,
}

/// Where a note for the server's operator goes (the server's trace; named
/// here so that `tasks` does not name the server).
pub(crate) type Trace = dyn Fn(&str) + Send + Sync;

/// What wakes the watch thread (`Tasks::watch`, `watch.rs`).
enum Look {
    /// Read this task again: a message about it came.
    Task(String),
    /// Read every task this process runs again, and sweep: the feed was
    /// cut and is back.
    All,
}

/// How many signals may wait for a task's handler (see `Tasks::create`).
const SIGNALS_WAITING: usize = 4;

/// How long a worker's own write is tried again, for a task without a TTL,
/// while the store fails ([`Tasks::change_durably`]).
const GIVE_UP_WITHOUT_TTL: Duration = Duration::from_secs(3600);

/// How many messages may wait for the watch thread; past it they are
/// dropped, and its next round reads every task anyway.
const LOOKS_WAITING: usize = 1024;

/// How many tasks followed by listens a server remembers for a resync of
/// its feed ([`Tasks::tell_listens`]); past it the first followed are
/// forgotten.
const FOLLOWED_KEPT: usize = 4096;

/// A server's tasks: the store, the workers running, the bounds.
pub(crate) struct Tasks {
    pub store: Arc<dyn TaskStore>,
    pub config: TaskConfig,
    live: Mutex<HashMap<String, Live>>,
    connections: Arc<Connections>,
    /// Held from a status change in the store until it is published, so
    /// that status notifications go out in the order of the changes (a
    /// `cancelled` never overtaken by the `input_required` before it).
    order: Mutex<()>,
    /// Wakes the watch thread, when it runs (a shared store).
    looks: Mutex<Option<Sender<Look>>>,
    /// Set when the feed was cut off and is back: the watch thread's next
    /// round tells the listens what they missed ([`Tasks::tell_listens`]).
    resync: AtomicBool,
    /// The tasks the listens of this server follow (with a feed only), in
    /// the order they were first followed.
    followed: Mutex<Vec<String>>,
    /// The server's trace, for what no client can be told (a result that
    /// could not be stored).
    trace: Arc<Trace>,
}

/// What `-32021` says a request needs for the task methods.
pub(crate) fn extension_required() -> ErrorObject {
    ErrorObject::missing_required_client_capability(json!({
        "extensions": { TASKS_EXTENSION: {} }
    }))
}

/// `-32602` for a task id the store does not have.
fn unknown_task(task_id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "Failed to retrieve task: no task {task_id:?} (unknown, or expired)"
    ))
}

impl Tasks {
    pub fn new(
        store: Arc<dyn TaskStore>,
        config: TaskConfig,
        connections: Arc<Connections>,
        trace: Arc<Trace>,
    ) -> Tasks {
        Tasks {
            store,
            config,
            live: Mutex::new(HashMap::new()),
            connections,
            order: Mutex::new(()),
            looks: Mutex::new(None),
            resync: AtomicBool::new(false),
            followed: Mutex::new(Vec::new()),
            trace,
        }
    }

    /// Taken around each status change and its publication.
    fn ordered(&self) -> std::sync::MutexGuard<'_, ()> {
        self.order.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

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
        let token = CancelToken::new();
        let now = SystemTime::now();
        let expires = self.config.ttl.and_then(|t| now.checked_add(t));
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
    fn read_by(
        &self,
        task_id: &str,
        caller: Option<&Owner>,
    ) -> Result<Option<StoredTask>, ErrorObject> {
        let stored = self.store.get(task_id)?;
        Ok(stored.filter(|stored| Owner::admits(stored.owner.as_ref(), caller)))
    }

    /// [`TaskStore::update`] on behalf of a request whose token stands
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
    fn stop_here(&self, task_id: &str) -> bool {
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
    fn signal_here(&self, task_id: &str, signal: Signal) -> bool {
        let live = self.live();
        let Some(live) = live.get(task_id) else {
            return false;
        };
        // Full: a look is on its way already.
        let _ = live.signals.try_send(signal);
        true
    }

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
    /// ([`TaskStore::update_as`]) when there is one. A store that finds
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
    fn change(
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
    /// Every try carries one write id ([`TaskStore::update_as`]): a try
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

    /// Which of `task_ids` a listen by a request whose token stands for
    /// `caller` may follow: the ones the store knows and admits it to
    /// ([`Tasks::read_by`]).
    /// With a feed they are remembered, for [`Tasks::tell_listens`], and
    /// the status just read is delivered to the listens already open here
    /// (before this one is), unless one as new was: from then on no older
    /// status of the task is shown on this replica, however late it comes
    /// (a publisher that kept it through an outage, a message replayed to
    /// a replica started since), and the listens open before hear it now,
    /// since its own message, when it comes, is no longer new here.
    pub fn known(&self, task_ids: &[String], caller: Option<&Owner>) -> Vec<String> {
        let feed = self.connections.replicas.has_feed();
        let mut known: Vec<String> = Vec::new();
        for id in task_ids {
            if !known.contains(id)
                && let Ok(Some(stored)) = self.read_by(id, caller)
            {
                if feed {
                    self.deliver_here(&stored.task);
                }
                known.push(id.clone());
            }
        }
        if feed {
            let mut followed = self.followed();
            for id in &known {
                if !followed.contains(id) {
                    followed.push(id.clone());
                }
            }
            let over = followed.len().saturating_sub(FOLLOWED_KEPT);
            followed.drain(..over);
        }
        known
    }

    fn followed(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.followed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After the feed was cut off and is back (statuses sent meanwhile may
    /// be lost): each task the listens here follow is read again, and its
    /// status delivered to them, unless one at least as new was
    /// (`Replicas::deliver_status`: a listen hears what it missed, once).
    /// A task that ended or is gone is forgotten: nothing follows it.
    pub(crate) fn tell_listens(&self) {
        let followed = self.followed().clone();
        for task_id in followed {
            let over = match self.store.get(&task_id) {
                Ok(Some(stored)) => {
                    self.deliver_here(&stored.task);
                    stored.task.task.status.is_terminal()
                }
                Ok(None) => true,
                // Out of reach: the next reconnection tells it.
                Err(_) => false,
            };
            if over {
                self.followed().retain(|id| *id != task_id);
            }
        }
    }

    /// Sends the task's state to the subscriptions that follow it, here
    /// (unless a status as new was delivered here: a listen's opening, or
    /// a reconnection, may have read it from the store first) and on the
    /// other replicas, always: each of them drops what is not new there.
    pub fn publish(&self, task: &DetailedTask) {
        self.deliver_here(task);
        self.connections.replicas.send(&Change::TaskStatus {
            task: Box::new(task.clone()),
        });
    }

    /// Sends the task's state to the subscriptions of this server only.
    fn deliver_here(&self, task: &DetailedTask) {
        let Some(update) = TaskUpdate::of(task) else {
            return;
        };
        let connections = &self.connections;
        connections.replicas.deliver_status(task, || {
            connections.publish_here(ServerEvent::TaskStatus(Arc::new(update)));
        });
    }
}

/// Whether a store's error says it cannot tell whether a change was
/// applied ([`TaskStore::update_as`]): trying again would not tell either.
pub(crate) fn outcome_unknown(error: &ErrorObject) -> bool {
    error
        .data
        .as_ref()
        .is_some_and(|data| data["outcome"] == "unknown")
}

/// Sets a status (and its message), with `lastUpdatedAt` now.
pub(crate) fn set_status(task: &mut DetailedTask, status: TaskStatus, message: Option<String>) {
    task.task.status = status;
    task.task.status_message = message;
    touch(task);
}

/// Moves `lastUpdatedAt` to now, and at least one millisecond past its
/// last value, so that every change shows and a later change never looks
/// older (two changes within one millisecond, a clock stepped back, a
/// replica whose clock is behind the one that wrote last): listens across
/// replicas are shown a task's statuses in this order
/// (`Replicas::deliver_status`).
pub(crate) fn touch(task: &mut DetailedTask) {
    let now = SystemTime::now();
    let next = parse_iso8601(&task.task.last_updated_at)
        .and_then(|last| last.checked_add(Duration::from_millis(1)));
    task.task.last_updated_at = iso8601(next.map_or(now, |next| next.max(now)));
}

/// A duration as the extension's integer milliseconds: at least 1 (the
/// suite wants `ttlMs` and `pollIntervalMs` positive), at most 2^53 - 1
/// (the schema's integer bound).
fn wire_ms(duration: Duration) -> u64 {
    const MAX: u64 = (1 << 53) - 1;
    u64::try_from(duration.as_millis()).map_or(MAX, |ms| ms.clamp(1, MAX))
}

/// 128 bits from the operating system's random source, as 32 hex digits.
/// Never a weaker source: without one, no task is created.
fn new_task_id() -> Result<String, ErrorObject> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorObject::internal_error(format!("no random source for a task id: {e}")))?;
    let mut id = String::with_capacity(32);
    for b in bytes {
        let _ = write!(id, "{b:02x}");
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_128_random_bits_in_hex() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn every_change_moves_last_updated_at() {
        let mut task = DetailedTask::new(Task {
            task_id: "t".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: iso8601(SystemTime::now()),
            last_updated_at: iso8601(SystemTime::now() + Duration::from_millis(50)),
            ttl_ms: None,
            poll_interval_ms: None,
        });
        // A stamp a little ahead (a clock stepped back) still moves on.
        let ahead = task.task.last_updated_at.clone();
        touch(&mut task);
        assert!(task.task.last_updated_at > ahead);
        // So does one an hour ahead (written by a replica whose clock is).
        let hour = iso8601(SystemTime::now() + Duration::from_secs(3600));
        task.task.last_updated_at = hour.clone();
        touch(&mut task);
        assert!(
            task.task.last_updated_at > hour,
            "{}",
            task.task.last_updated_at
        );
        task.task.last_updated_at = iso8601(SystemTime::now());
        let before = task.task.last_updated_at.clone();
        set_status(&mut task, TaskStatus::InputRequired, None);
        set_status(&mut task, TaskStatus::Working, None);
        assert!(task.task.last_updated_at > before);
    }

    #[test]
    fn wire_milliseconds_are_positive_and_json_safe() {
        assert_eq!(wire_ms(Duration::ZERO), 1);
        assert_eq!(wire_ms(Duration::from_millis(200)), 200);
        assert_eq!(wire_ms(Duration::MAX), (1 << 53) - 1);
    }
}
