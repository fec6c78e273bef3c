//! The Tasks extension on the client (`io.modelcontextprotocol/tasks`, spec
//! extensions/tasks): a `tools/call` the server answers with a task, and
//! [`TaskHandle`], which follows that task with `tasks/get`, answers its
//! input requests with `tasks/update`, and stops it with `tasks/cancel`.
//!
//! Polling, not notifications: a task's status may also come as
//! `notifications/tasks` on a subscription ([`Client::listen`] with
//! `taskIds`), but a server need not send any, and a subscription opened
//! after the task moved would miss the move. `tasks/get` always answers,
//! so waiting for a task is a poll loop at the server's `pollIntervalMs`.
//!
//! A task outlives the request that created it, and the connection too: its
//! id is all it takes to pick it up again ([`Client::task`]). So dropping a
//! handle cancels nothing; only a wait that gives up does (a timeout, input
//! the client cannot give, an answer it cannot read), because then nobody
//! is left to take the result. A task is never cancelled with
//! `notifications/cancelled` (spec extensions/tasks, "Task Cancellation"):
//! the requests of a task that are abandoned are forgotten without one, and
//! the task gets its `tasks/cancel`.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::client::Client;
use crate::client::call::RequestOptions;
use crate::client::reply::Reply;
use crate::client::shared::ClientInner;
use crate::error::Error;
use crate::jsonrpc::ErrorObject;
use crate::key_hashes::KeyHashes;
use crate::outcome::Outcome;
use crate::types::{
    CallToolResult, DetailedTask, GetTaskResult, InputRequest, InputResponse, InputResponses,
    JsonObject, ResultType, Task, TaskStatus, method,
};

/// How long to wait between two polls when the server names no interval.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest wait between polls, whatever the server asks for.
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// The longest wait between polls, whatever the server asks for: a longer
/// one would make a task that ends early look slow.
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(10);

/// How [`Client::start_tool_call`] came back: the server answered at once,
/// or it started a task.
///
/// ```no_run
/// use std::time::Duration;
/// use mcp_stdio::{Client, Outcome, RequestOptions, ToolCallStart};
///
/// let client = Client::builder()
///     .tasks(true)
///     .spawn(std::process::Command::new("my-mcp-server"))?;
/// let args = serde_json::json!({ "scene": "city" });
/// match client.start_tool_call("render", args, RequestOptions::new())? {
///     ToolCallStart::Immediate(Outcome::Complete(result)) => println!("{result:?}"),
///     ToolCallStart::Immediate(Outcome::InputRequired(asked)) => {
///         eprintln!("the tool needs input no handler gave: {asked:?}")
///     }
///     ToolCallStart::Task(task) => {
///         // Keep the id: it picks the task up again after a restart.
///         std::fs::write("render.task", task.id())?;
///         let result = task.wait_timeout(Duration::from_secs(600))?;
///         println!("{result:?}");
///     }
/// }
/// # Ok::<(), mcp_stdio::Error>(())
/// ```
#[derive(Debug)]
pub enum ToolCallStart {
    /// The server answered the call itself: the tool's result, or input
    /// the client's handlers could not give (as [`Client::call_tool`]
    /// returns them).
    Immediate(Outcome<CallToolResult>),
    /// The server runs the call as a task; the handle follows it.
    Task(TaskHandle),
}

/// A task on the server that runs a tool call (Tasks extension): look at
/// it, answer its input requests, cancel it, or wait for its result.
///
/// A handle comes from [`Client::start_tool_call`] or, for a task started
/// earlier (by this client, or by one before a restart), from
/// [`Client::task`]. Dropping it does not cancel the task: the task lives
/// on the server until it ends or its time to live (`ttlMs`) passes.
///
/// Every request of a handle waits at most its timeout: the one of the
/// call that started the task, else the client's
/// [`request_timeout`](crate::ClientBuilder::request_timeout).
pub struct TaskHandle {
    inner: Arc<ClientInner>,
    id: String,
    timeout: Duration,
    created: Option<Task>,
    /// The last `pollIntervalMs` the server gave for this task.
    poll_interval_ms: Option<u64>,
    /// Each `inputRequests` key answered, as a hash (`KeyHashes`):
    /// never answered twice (spec extensions/tasks, "Task Update
    /// Requests": keys are unique over the task's lifetime, and the
    /// client tracks them, since the acknowledgment of an answer is
    /// eventually consistent and a later poll may still list its key),
    /// and a server that asks under a new long key at every poll costs
    /// the client 8 bytes an answer.
    answered: KeyHashes,
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .field("timeout", &self.timeout)
            .field("answered", &self.answered.len())
            .finish_non_exhaustive()
    }
}

/// How a task ended, as `tasks/get` reported it.
enum Ending {
    Completed(JsonObject),
    Failed(ErrorObject),
    Cancelled(Option<String>),
}

impl Client {
    /// `tools/call` that hands out the task, if the server starts one,
    /// instead of waiting for it as [`Client::call_tool_with`] does.
    ///
    /// Input the server asks for before it decides (multi round-trip
    /// requests) is answered as for [`Client::call_tool`]. A task needs
    /// the extension declared ([`ClientBuilder::tasks`](crate::ClientBuilder::tasks));
    /// without it, a server that answers with a task anyway gets an
    /// [`Error::Protocol`]. The handle's requests wait at most
    /// `options`' timeout, else the client's request timeout. See
    /// [`ToolCallStart`] for an example.
    ///
    /// A call the server does not answer within that timeout fails with
    /// [`Error::Timeout`] (the server is sent `notifications/cancelled`;
    /// over Streamable HTTP the call's stream is shut for sending, its
    /// cancellation, and read on for the answer), whatever comes after. A
    /// task the server still makes of it, its answer crossing the
    /// cancellation on the wire, is cancelled: an answer that comes within
    /// the timeout again, counted from the give-up, and names a task gets
    /// that task's `tasks/cancel` (not waited for), since nobody else ever
    /// learns its id. A server that notices a client's going only when a
    /// write to it fails (one that never reads the connection while it
    /// answers) hears that HTTP cancellation only when the stream is let
    /// go: at the answer, the stream's end, or that timeout again.
    pub fn start_tool_call(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<ToolCallStart, Error> {
        let timeout = options
            .timeout
            .unwrap_or(self.inner.options.request_timeout);
        let params = json!({ "name": name, "arguments": arguments });
        match self.rounds::<CallToolResult>(method::TOOLS_CALL, params, options)? {
            Reply::Outcome(outcome) => Ok(ToolCallStart::Immediate(outcome)),
            Reply::Task(created) if self.inner.declares_tasks() => {
                let mut task = TaskHandle::new(&self.inner, created.task.task_id.clone(), timeout);
                task.poll_interval_ms = created.task.poll_interval_ms;
                task.created = Some(created.task);
                Ok(ToolCallStart::Task(task))
            }
            Reply::Task(created) => Err(Error::Protocol(format!(
                "the server answered tools/call of {name} with task {}, but this client does not declare the tasks extension (ClientBuilder::tasks)",
                created.task.task_id
            ))),
        }
    }

    /// The task with this id, to pick it up again: started by this client,
    /// or by an earlier one before the client or the server restarted.
    ///
    /// The id is a plain string: keep it (in a file, a database) from
    /// [`TaskHandle::id`] when the task starts, so that a crash or restart
    /// does not lose the work (spec extensions/tasks, "Task Polling": a
    /// client SHOULD persist task ids). Nothing is sent until the handle
    /// is used; a server that does not know the id (it never did, or the
    /// task outlived its `ttlMs`) answers with an [`Error::Rpc`] then.
    ///
    /// ```no_run
    /// let client = mcp_stdio::Client::builder()
    ///     .tasks(true)
    ///     .spawn(std::process::Command::new("my-mcp-server"))?;
    /// let id = std::fs::read_to_string("render.task")?;
    /// let result = client.task(id.trim()).wait()?;
    /// println!("{result:?}");
    /// # Ok::<(), mcp_stdio::Error>(())
    /// ```
    pub fn task(&self, task_id: impl Into<String>) -> TaskHandle {
        TaskHandle::new(
            &self.inner,
            task_id.into(),
            self.inner.options.request_timeout,
        )
    }
}

impl TaskHandle {
    fn new(inner: &Arc<ClientInner>, id: String, timeout: Duration) -> TaskHandle {
        TaskHandle {
            inner: Arc::clone(inner),
            id,
            timeout,
            created: None,
            poll_interval_ms: None,
            answered: KeyHashes::default(),
        }
    }

    /// The task's id, as the server chose it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task as the server created it (its `CreateTaskResult`); `None`
    /// for a handle from [`Client::task`].
    pub fn created(&self) -> Option<&Task> {
        self.created.as_ref()
    }

    /// The task as it is now: one `tasks/get`. Its status, and what the
    /// status carries: the input requests, the result or the error.
    ///
    /// An answer of the wrong shape (a payload that does not go with the
    /// status, another task's id) is an [`Error::Protocol`].
    pub fn get(&self) -> Result<DetailedTask, Error> {
        self.fetch(deadline_after(self.timeout))
    }

    /// Answers some of the task's input requests (`tasks/update`), by the
    /// keys of its `inputRequests`; [`TaskHandle::wait`] will not answer
    /// those keys again.
    ///
    /// ```no_run
    /// # fn answer(task: &mut mcp_stdio::TaskHandle) -> Result<(), mcp_stdio::Error> {
    /// use mcp_stdio::types::{ElicitResult, InputResponse, InputResponses};
    ///
    /// let detailed = task.get()?;
    /// let mut responses = InputResponses::new();
    /// for key in detailed.input_requests.iter().flatten().map(|(key, _)| key) {
    ///     let answer = ElicitResult::decline();
    ///     responses.insert(key.clone(), InputResponse(serde_json::to_value(answer)?));
    /// }
    /// task.update(responses)?;
    /// # Ok(()) }
    /// ```
    pub fn update(&mut self, responses: InputResponses) -> Result<(), Error> {
        self.send_update(responses, deadline_after(self.timeout))
    }

    /// Asks the server to cancel the task (`tasks/cancel`) and waits for
    /// its acknowledgement. Cancelling is cooperative: the task may still
    /// end otherwise if its work was done first.
    pub fn cancel(&self) -> Result<(), Error> {
        let params = json!({ "taskId": self.id });
        self.request(method::TASKS_CANCEL, params, deadline_after(self.timeout))
            .map(drop)
    }

    /// Waits for the task's result, up to the handle's timeout.
    ///
    /// Polls `tasks/get` at the interval the server asks for (kept between
    /// 10 ms and 10 s; 1 s when it names none), and answers the task's
    /// input requests with the client's handlers
    /// ([`on_elicitation`](crate::ClientBuilder::on_elicitation) and its
    /// kin), each key once, through `tasks/update`. Time spent in those
    /// handlers does not count against the timeout.
    ///
    /// The task's end decides the answer: `completed` gives the tool's
    /// result (one with `isError` included), `failed` the server's error as
    /// [`Error::Rpc`], `cancelled` [`Error::TaskCancelled`]. A wait that
    /// gives up cancels the task (`tasks/cancel`) before it returns: on
    /// timeout ([`Error::Timeout`]), on input no handler can give (an
    /// [`Error::Protocol`] naming the keys and methods), on a handler's
    /// error, on an answer of the wrong shape. [`Client::close`] ends it at
    /// once, between two polls too, with [`Error::Disconnected`], and
    /// cancels nothing (the task goes on at the server, and a new client
    /// can pick it up by its id, [`Client::task`]).
    pub fn wait(self) -> Result<CallToolResult, Error> {
        let timeout = self.timeout;
        self.wait_timeout(timeout)
    }

    /// [`TaskHandle::wait`] with a timeout of its own.
    pub fn wait_timeout(mut self, timeout: Duration) -> Result<CallToolResult, Error> {
        let mut deadline = deadline_after(timeout);
        let ending = match self.follow(&mut deadline) {
            Ok(ending) => ending,
            // Closing: nothing more goes to the server (the link may still
            // be open while `close` ends a restart).
            Err(e)
                if self
                    .inner
                    .closing
                    .load(std::sync::atomic::Ordering::Acquire) =>
            {
                return Err(e);
            }
            Err(e) => {
                self.cancel_quietly();
                return Err(e);
            }
        };
        match ending {
            Ending::Completed(result) => {
                serde_json::from_value(Value::Object(result)).map_err(|e| {
                    Error::Protocol(format!(
                        "the result of task {} is not a tool result: {e}",
                        self.id
                    ))
                })
            }
            Ending::Failed(error) => Err(Error::Rpc(error)),
            Ending::Cancelled(status_message) => Err(Error::TaskCancelled {
                task_id: self.id,
                status_message,
            }),
        }
    }

    /// Polls until the task ends, answering its input on the way; an error
    /// means the wait gave up.
    fn follow(&mut self, deadline: &mut Instant) -> Result<Ending, Error> {
        loop {
            let task = self.fetch(*deadline)?;
            // Spec extensions/tasks: pollIntervalMs MAY change over the
            // task's life; the latest one counts.
            if task.task.poll_interval_ms.is_some() {
                self.poll_interval_ms = task.task.poll_interval_ms;
            }
            match task.task.status {
                TaskStatus::Completed => {
                    return Ok(Ending::Completed(task.result.unwrap_or_default()));
                }
                TaskStatus::Failed => {
                    let error = task
                        .error
                        .unwrap_or_else(|| ErrorObject::internal_error("the task failed"));
                    return Ok(Ending::Failed(error));
                }
                TaskStatus::Cancelled => return Ok(Ending::Cancelled(task.task.status_message)),
                TaskStatus::InputRequired => {
                    // Spec extensions/tasks: `inputRequests` lists every
                    // outstanding request on each poll, those already
                    // answered included until the server has taken the
                    // answer; each key is answered once.
                    let asked: Vec<(String, InputRequest)> = task
                        .input_requests
                        .into_iter()
                        .flatten()
                        .filter(|(key, _)| !self.answered.contains(key))
                        .collect();
                    if !asked.is_empty() {
                        let started = Instant::now();
                        let responses = self.answer(&asked)?;
                        // The application's handlers (a user filling in a
                        // form) are not the server's delay.
                        *deadline = deadline.checked_add(started.elapsed()).unwrap_or(*deadline);
                        self.send_update(responses, *deadline)?;
                        // Poll again at once: the answers may have moved
                        // the task on.
                        continue;
                    }
                }
                TaskStatus::Working => {}
            }
            // A close ends the pause (it may be 10 s): the next poll would
            // only find the connection gone.
            let pause = poll_interval(self.poll_interval_ms);
            let left = deadline.saturating_duration_since(Instant::now());
            if !self.inner.pause_unless_closed(left.min(pause)) {
                return Err(Error::Disconnected);
            }
            if left <= pause {
                return Err(Error::Timeout);
            }
        }
    }

    /// Runs the client's handlers for these input requests; an error names
    /// the requests no handler can answer.
    fn answer(&self, asked: &[(String, InputRequest)]) -> Result<InputResponses, Error> {
        let handlers = &self.inner.options.input;
        // Checked before any handler runs: nobody is asked a question whose
        // answer could not be sent.
        let missing: Vec<String> = asked
            .iter()
            .filter(|(_, request)| !handlers.handles(request))
            .map(|(key, request)| format!("{key} ({})", request.method()))
            .collect();
        if !missing.is_empty() {
            return Err(Error::Protocol(format!(
                "task {} asked for input this client has no handler for: {}; the task is cancelled",
                self.id,
                missing.join(", ")
            )));
        }
        let mut responses = InputResponses::new();
        for (key, request) in asked {
            if let Some(answer) = handlers.answer_one(request) {
                responses.insert(key.clone(), InputResponse(answer?));
            }
        }
        Ok(responses)
    }

    /// Sends `tasks/update` with these answers and waits for the
    /// acknowledgement; their keys count as answered from now on.
    fn send_update(&mut self, responses: InputResponses, deadline: Instant) -> Result<(), Error> {
        for key in responses.keys() {
            self.answered.insert(key);
        }
        let params = json!({ "taskId": self.id, "inputResponses": responses });
        self.request(method::TASKS_UPDATE, params, deadline)
            .map(drop)
    }

    /// One `tasks/get`, its answer checked: a `DetailedTask` of the task
    /// asked for, whose payload goes with its status.
    fn fetch(&self, deadline: Instant) -> Result<DetailedTask, Error> {
        let params = json!({ "taskId": self.id });
        let raw = self.request(method::TASKS_GET, params, deadline)?;
        let id = &self.id;
        let got: GetTaskResult = serde_json::from_str(raw.get()).map_err(|e| {
            Error::Protocol(format!(
                "the server's tasks/get result for task {id} is invalid: {e}"
            ))
        })?;
        match &got.result_type {
            // Spec extensions/tasks: `complete` whatever the task's status.
            // `task` is tolerated: the spec's own examples of failed and
            // completed tasks carry it.
            None | Some(ResultType::Complete | ResultType::Task) => {}
            Some(other) => {
                return Err(Error::Protocol(format!(
                    "the server's tasks/get result for task {id} has resultType {:?}, not \"complete\"",
                    other.as_str()
                )));
            }
        }
        if got.task.task.task_id != *id {
            return Err(Error::Protocol(format!(
                "the server answered tasks/get for task {id} with task {}",
                got.task.task.task_id
            )));
        }
        if let Some(problem) = got.task.shape_problem() {
            return Err(Error::Protocol(format!(
                "the server's tasks/get result for task {id} is malformed: {problem}"
            )));
        }
        Ok(got.task)
    }

    /// Sends one request of this task and waits for its result until the
    /// deadline; on timeout the request is forgotten without
    /// `notifications/cancelled` (the task's own cancellation stands for it).
    fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Box<RawValue>, Error> {
        if !self.inner.declares_tasks() {
            return Err(Error::Protocol(format!(
                "{method} for task {}: this client does not declare the tasks extension (ClientBuilder::tasks)",
                self.id
            )));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout);
        }
        self.inner
            .start_request(method, params, RequestOptions::new())?
            .wait_quietly(Some(left), None)
    }

    /// Sends `tasks/cancel` without waiting for the acknowledgement: the
    /// wait that gives up returns at once.
    fn cancel_quietly(&self) {
        if !self.inner.declares_tasks() {
            return;
        }
        let params = json!({ "taskId": self.id });
        // A connection that is gone cancels nothing; nothing to report.
        if let Ok(call) =
            self.inner
                .start_request(method::TASKS_CANCEL, params, RequestOptions::new())
        {
            call.detach();
        }
    }
}

/// The wait between two polls: the server's `pollIntervalMs`, kept within
/// bounds, or the default.
fn poll_interval(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL_INTERVAL, |ms| {
        Duration::from_millis(ms).clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
    })
}

/// `timeout` from now; a timeout too large for the clock waits a century.
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

#[cfg(test)]
mod tests;
