//! A task's thread: it runs the tool's handler, gives it the client's
//! answers when it asks for input, and writes the task's terminal state.
//!
//! A handler asks in one of two ways, both of which block this thread
//! (never the owner, never a pool worker) until `tasks/update` delivers
//! every answer, the task is cancelled, or its TTL runs out:
//!
//! - it returns `Outcome::InputRequired`, as for a multi round-trip
//!   request: the task shows those requests, and once they are answered
//!   the handler runs again with every answer so far (and its
//!   `requestState`), exactly as a retry would;
//! - it calls [`RequestContext::ask`](crate::RequestContext::ask) mid-run
//!   and gets the answers back in place.
//!
//! Keys are unique over the task's life (spec: never reused): a handler
//! that asks again under a key it used before gets it renamed on the wire
//! (`confirm~2`) and answered under its own name.

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::Value;

use super::{Signal, Tasks, set_status, touch};
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::outcome::{Outcome, ToolOutcome};
use crate::server::Server;
use crate::server::cancel::CancelToken;
use crate::server::context::{RequestContext, Sink};
use crate::server::mrtr::Retry;
use crate::server::request_meta::RequestMeta;
use crate::types::{InputRequests, InputResponses, ResultType, TaskStatus};

/// The tool's handler with its arguments bound: run once per round.
pub(crate) type TaskWork = Box<dyn Fn(&RequestContext) -> Result<ToolOutcome, ErrorObject> + Send>;

/// How long a wait for answers sleeps at most before it looks at the
/// clock again (a task without a TTL waits until answered or cancelled).
const WAKE: Duration = Duration::from_secs(3600);

/// The most rounds a handler may ask for in one task: a handler that asks
/// for nothing but its own state again would otherwise spin forever.
const MAX_ROUNDS: usize = 1000;

/// What a handler inside a task reaches through its context: the task,
/// and the answers the server routes to it.
pub(crate) struct TaskLink {
    tasks: Arc<Tasks>,
    pub task_id: String,
    signals: Receiver<Signal>,
    expires: Option<SystemTime>,
    /// Every key this task has put on the wire.
    used: Mutex<HashSet<String>>,
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
            used: Mutex::new(HashSet::new()),
            asking: Mutex::new(()),
        }
    }

    /// Shows `requests` as the task's `inputRequests` and waits for every
    /// answer; the answers come back under the handler's keys.
    pub fn ask(&self, requests: InputRequests) -> Result<InputResponses, ErrorObject> {
        let _one = self.asking.lock().unwrap_or_else(|e| e.into_inner());
        if requests.is_empty() {
            return Ok(InputResponses::new());
        }
        // Wire key → the handler's key.
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
                used.insert(wire.clone());
                outstanding.insert(wire.clone(), key);
                on_wire.insert(wire, request);
            }
        }
        let shown = self.tasks.change(&self.task_id, &mut |task| {
            task.input_requests = Some(on_wire.clone());
            set_status(task, TaskStatus::InputRequired, None);
        });
        if shown.is_none() {
            return Err(stopped());
        }
        let mut answers = InputResponses::new();
        while !outstanding.is_empty() {
            let wait = match self.expires {
                Some(at) => match at.duration_since(SystemTime::now()) {
                    Ok(left) => left.min(WAKE),
                    Err(_) => return Err(expired()),
                },
                None => WAKE,
            };
            match self.signals.recv_timeout(wait) {
                Ok(Signal::Answers(got)) => {
                    for (wire, answer) in got {
                        if let Some(key) = outstanding.remove(&wire) {
                            answers.insert(key, answer);
                        }
                    }
                }
                Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => return Err(stopped()),
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        Ok(answers)
    }

    /// A progress message becomes the task's `statusMessage`.
    pub fn status_message(&self, message: &str) {
        let message = message.to_owned();
        self.tasks.transition(&self.task_id, &mut |task| {
            task.task.status_message = Some(message.clone());
            touch(task);
        });
    }
}

fn stopped() -> ErrorObject {
    ErrorObject::internal_error("the task was cancelled")
}

fn expired() -> ErrorObject {
    ErrorObject::internal_error("the task expired while it waited for input")
}

/// Starts the thread of a task that is stored already.
pub(super) fn spawn(
    link: Arc<TaskLink>,
    server: Server,
    id: RequestId,
    meta: RequestMeta,
    token: CancelToken,
    work: TaskWork,
    retry: Option<Retry>,
) -> Result<(), ErrorObject> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let name = format!("mcp-task-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let tasks = Arc::clone(&link.tasks);
    let task_id = link.task_id.clone();
    thread::Builder::new()
        .name(name)
        .spawn(move || {
            let outcome = run(&link, &server, &id, &meta, &token, &work, retry);
            tasks.finish(&task_id, outcome);
        })
        .map(drop)
        .map_err(|e| ErrorObject::internal_error(format!("could not start the task: {e}")))
}

/// The handler's rounds, until it completes or fails: the terminal
/// result as JSON, or the error.
fn run(
    link: &Arc<TaskLink>,
    server: &Server,
    id: &RequestId,
    meta: &RequestMeta,
    token: &CancelToken,
    work: &TaskWork,
    mut retry: Option<Retry>,
) -> Result<Value, ErrorObject> {
    for _ in 0..MAX_ROUNDS {
        let answers_so_far = retry.as_ref().map(|r| r.responses.clone());
        let ctx = RequestContext::new(
            id.clone(),
            meta.clone(),
            token.clone(),
            Sink::Task(Arc::clone(link)),
            server.clone(),
            retry.take(),
        );
        let round = catch_unwind(AssertUnwindSafe(|| work(&ctx)));
        drop(ctx);
        match round {
            Err(panic) => return Err(crate::server::work::panic_error(&*panic)),
            Ok(Err(error)) => return Err(error),
            Ok(Ok(Outcome::Complete(mut result))) => {
                result.result_type.get_or_insert(ResultType::Complete);
                return serde_json::to_value(result).map_err(|e| {
                    ErrorObject::internal_error(format!("the result does not serialize: {e}"))
                });
            }
            Ok(Ok(Outcome::InputRequired(asked))) => {
                let mut responses = answers_so_far.unwrap_or_default();
                responses.extend(link.ask(asked.input_requests.unwrap_or_default())?);
                retry = Some(Retry {
                    state: asked.request_state,
                    responses,
                });
            }
        }
    }
    Err(ErrorObject::internal_error(format!(
        "the handler asked for input more than {MAX_ROUNDS} times"
    )))
}
