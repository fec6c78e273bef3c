//! What a handler inside a task reaches through its context
//! ([`TaskLink`]): asking the client for input mid-run, and its progress
//! message as the task's `statusMessage`.
//!
//! Keys are unique over the task's life (spec: never reused): a handler
//! that asks again under a key it used before gets it renamed on the wire
//! (`confirm~2`) and answered under its own name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::jsonrpc::ErrorObject;
use crate::key_hashes::KeyHashes;
use crate::server::mrtr;
use crate::server::request_meta::RequestMeta;
use crate::server::tasks::{Signal, Tasks, set_status, touch};
use crate::types::{InputRequests, InputResponses, TaskStatus};

/// How long a wait for answers sleeps at most before it looks at the
/// clock again (a task without a TTL waits until answered or cancelled).
const WAKE: Duration = Duration::from_secs(3600);

/// What a handler inside a task reaches through its context: the task,
/// and the answers the server routes to it.
pub(crate) struct TaskLink {
    tasks: Arc<Tasks>,
    pub task_id: String,
    signals: Receiver<Signal>,
    expires: Option<SystemTime>,
    /// Every key this task has put on the wire, as a hash
    /// (`KeyHashes`): a key is the handler's, and behind the proxy the
    /// server's, which may ask under a new long key at every poll.
    used: Mutex<KeyHashes>,
    /// One ask at a time: answers come through one channel.
    asking: Mutex<()>,
}

impl TaskLink {
    pub fn new(
        tasks: Arc<Tasks>,
        task_id: String,
        signals: Receiver<Signal>,
        expires: Option<SystemTime>,
    ) -> TaskLink {
        TaskLink {
            tasks,
            task_id,
            signals,
            expires,
            used: Mutex::new(KeyHashes::default()),
            asking: Mutex::new(()),
        }
    }

    /// Shows `requests` as the task's `inputRequests` and waits for every
    /// answer; the answers come back under the handler's keys. A request
    /// the client did not declare support for (in `meta`, the request that
    /// created the task) is never shown: `-32021` naming it, as outside a
    /// task (`mrtr::undeclared`).
    pub fn ask(
        &self,
        requests: InputRequests,
        meta: &RequestMeta,
    ) -> Result<InputResponses, ErrorObject> {
        let _one = self.asking.lock().unwrap_or_else(|e| e.into_inner());
        if requests.is_empty() {
            return Ok(InputResponses::new());
        }
        mrtr::undeclared(&requests, meta)?;
        // Each key as it goes on the wire, and the handler's own name for it.
        let mut outstanding: HashMap<String, String> = HashMap::new();
        let mut on_wire = InputRequests::new();
        {
            let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
            for (key, request) in requests {
                let mut wire = key.clone();
                let mut n = 1;
                while used.contains(&wire) {
                    n += 1;
                    wire = format!("{key}~{n}");
                }
                used.insert(&wire);
                outstanding.insert(wire.clone(), key);
                on_wire.insert(wire, request);
            }
        }
        let shown = self
            .tasks
            .change_durably(&self.task_id, self.expires, &mut |task| {
                task.input_requests = Some(on_wire.clone());
                set_status(task, TaskStatus::InputRequired, None);
            })?;
        if shown.is_none() {
            return Err(stopped());
        }
        // The answers wait in the store (`Tasks::update`); a signal says
        // when to look, and for a shared store the handler looks every
        // interval too, in case the message that announced them was lost.
        let look_every = self.tasks.store.watch_interval().unwrap_or(WAKE);
        // Nobody answering ends the wait too (`task_input_timeout`): a
        // client that never answers does not hold a running place for
        // good, TTL or not.
        let give_up = (self.tasks.config.input_timeout)
            .and_then(|timeout| Some((SystemTime::now().checked_add(timeout)?, timeout)));
        let mut answers = InputResponses::new();
        while !outstanding.is_empty() {
            let now = SystemTime::now();
            // Past the input timeout the questions are taken back, unless
            // `tasks/update` took the last answers since the last look and
            // resumed the task (the client was told so): then one more
            // look takes them from the store.
            let timed_out = give_up
                .filter(|(at, _)| *at <= now)
                .map(|(_, timeout)| timeout);
            if let Some(timeout) = timed_out {
                if self.withdraw() {
                    return Err(no_answer(timeout));
                }
            } else {
                let left = |at: SystemTime| at.duration_since(now).unwrap_or(Duration::ZERO);
                let wait = match self.expires {
                    Some(at) if at <= now => return Err(expired()),
                    Some(at) => left(at).min(look_every),
                    None => look_every,
                };
                let wait = give_up.map_or(wait, |(at, _)| wait.min(left(at)));
                match self.signals.recv_timeout(wait) {
                    Ok(Signal::Look) | Err(RecvTimeoutError::Timeout) => {}
                    Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => {
                        return Err(stopped());
                    }
                }
            }
            let wanted = |wire: &str| outstanding.contains_key(wire);
            match self.tasks.take_answers(&self.task_id, &wanted) {
                Ok(Some(got)) => {
                    for (wire, answer) in got {
                        if let Some(key) = outstanding.remove(&wire) {
                            answers.insert(key, answer);
                        }
                    }
                }
                Ok(None) => return Err(stopped()),
                // The store out of reach: the next look tries again.
                Err(_) => {}
            }
            if let Some(timeout) = timed_out
                && !outstanding.is_empty()
            {
                return Err(no_answer(timeout));
            }
        }
        Ok(answers)
    }

    /// Takes back the questions nobody answered: the task is `working`
    /// again without them (unless it ended), and published. Best effort:
    /// the task fails once its handler returns the error anyway. An
    /// answer to some that came in between stays unread (keys are never
    /// reused). Returns `false` only when the store says the task still
    /// runs and no longer asks: `tasks/update` took every answer since the
    /// last look (in one step with taking the questions back, so that one
    /// of the two comes first: an answer the client was told was taken is
    /// never thrown away).
    fn withdraw(&self) -> bool {
        let mut answered = false;
        let changed = self.tasks.change(&self.task_id, None, &mut |task| {
            answered = task.task.status != TaskStatus::InputRequired;
            if !answered {
                task.input_requests = None;
                set_status(task, TaskStatus::Working, None);
            }
        });
        !(answered && matches!(changed, Ok(Some(_))))
    }

    /// A progress message becomes the task's `statusMessage`.
    pub fn status_message(&self, message: &str) {
        let message = message.to_owned();
        // Best effort: a message lost to a store out of reach is replaced
        // by the next.
        let _ = self.tasks.transition(&self.task_id, &mut |task| {
            task.task.status_message = Some(message.clone());
            touch(task);
        });
    }
}

fn stopped() -> ErrorObject {
    ErrorObject::internal_error("the task was cancelled (or ended elsewhere)")
}

fn no_answer(timeout: Duration) -> ErrorObject {
    ErrorObject::internal_error(format!(
        "no answer to the task's input requests within {} ms (the server's task_input_timeout)",
        timeout.as_millis()
    ))
}

fn expired() -> ErrorObject {
    ErrorObject::internal_error("the task expired while it waited for input")
}
