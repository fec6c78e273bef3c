//! The task side of [`ServerBuilder`]: task tools, the store, the bounds.

use std::sync::Arc;
use std::time::Duration;

use super::{TaskMode, TaskStore};
use crate::ServerBuilder;
use crate::jsonrpc::ErrorObject;
use crate::outcome::{Outcome, ToolOutcome};
use crate::server::arguments::{ToolArguments, advertised};
use crate::server::context::RequestContext;
use crate::server::handlers::{typed_gate, typed_tool};
use crate::types::Tool;

impl ServerBuilder {
    /// Registers a tool that may run as a task (Tasks extension,
    /// `io.modelcontextprotocol/tasks`): a request that declares the
    /// extension gets a task handle at once (`resultType: "task"`), and
    /// the handler runs on a thread of its own while the client polls
    /// `tasks/get`. `mode` says what a request that does not declare it
    /// gets ([`TaskMode`]).
    ///
    /// The handler and its arguments are as for [`ServerBuilder::tool`]
    /// (the advertised `inputSchema` included). The arguments are read
    /// before a task is created: when they do not fit, the call is
    /// answered at once with the `isError: true` result that says why,
    /// and no task exists (a model corrects its call sooner than it polls
    /// a failed task). Inside a
    /// task its result becomes the task's `result` (status `completed`,
    /// `isError` results included), an `Err` or a panic its `error`
    /// (status `failed`). It polls [`RequestContext::is_cancelled`] for
    /// `tasks/cancel`; a progress message becomes the task's
    /// `statusMessage`; it asks for input by returning
    /// [`Outcome::InputRequired`] (it then runs again with the answers)
    /// or with [`RequestContext::ask`], which blocks until `tasks/update`
    /// brings them.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_stdio::{Server, TaskMode};
    /// use mcp_stdio::types::{CallToolResult, Tool};
    ///
    /// let server = Server::builder("builds", "1.0.0")
    ///     .task_tool(
    ///         Tool::new("build", "Builds the project (takes minutes)."),
    ///         TaskMode::Optional,
    ///         |ctx, _args: serde_json::Value| {
    ///             for step in 1..=3 {
    ///                 if ctx.wait_cancelled(Duration::from_millis(10)) {
    ///                     return Ok(CallToolResult::error_text("cancelled"));
    ///                 }
    ///                 ctx.progress(step as f64, Some(3.0), Some(&format!("step {step} of 3")));
    ///             }
    ///             Ok(CallToolResult::text("built"))
    ///         },
    ///     )
    ///     .build();
    /// ```
    pub fn task_tool<T, R, F>(self, tool: Tool, mode: TaskMode, handler: F) -> Self
    where
        T: ToolArguments,
        R: Into<ToolOutcome>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let go_ahead = |_: &RequestContext, _: &T| Ok(Outcome::Complete(()));
        self.task_tool_with_gate(tool, mode, go_ahead, handler)
    }

    /// [`ServerBuilder::task_tool`] with a gate: before a task is created,
    /// `gate` runs with the arguments (on the worker pool) and decides.
    /// It returns `Outcome::Complete(())` to go ahead, or
    /// `Outcome::InputRequired` to ask the client first, answered as an
    /// ordinary multi round-trip request (no task yet; the retry runs the
    /// gate again). The answers it gathered are in the handler's
    /// [`RequestContext::input_responses`] inside the task. An `Err` is
    /// the call's error. Arguments that do not fit `T` never reach the
    /// gate: the call's answer is the `isError: true` result that says
    /// why, as for [`ServerBuilder::task_tool`].
    ///
    /// This is how a tool asks what it needs to know before it commits to
    /// long work (the spec's "MRTR before task creation").
    pub fn task_tool_with_gate<T, G, R, F>(
        mut self,
        tool: Tool,
        mode: TaskMode,
        gate: G,
        handler: F,
    ) -> Self
    where
        T: ToolArguments,
        G: Fn(&RequestContext, &T) -> Result<Outcome<()>, ErrorObject> + Send + Sync + 'static,
        R: Into<ToolOutcome>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool);
        let gate = Some(typed_gate(gate));
        self.registry
            .add_task_tool(tool, typed_tool(handler), false, mode, gate);
        self
    }

    /// Where tasks are kept (default: a [`MemoryTaskStore`](crate::MemoryTaskStore)
    /// of 1024 tasks and 64 MiB). See [`TaskStore`] for what a store must guarantee.
    pub fn task_store(mut self, store: impl TaskStore + 'static) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// How long a task stays readable after it was created, its `ttlMs`
    /// (default one hour; `None`: unlimited, until the store evicts it).
    /// A task still running when it expires is forgotten: `tasks/get`
    /// answers `-32602`, a handler waiting for input gets an error, and
    /// one at work is cancelled ([`RequestContext::is_cancelled`]).
    /// Without a TTL, a task waiting for input still ends when nobody
    /// answers ([`ServerBuilder::task_input_timeout`]).
    pub fn task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.task_config.ttl = ttl.map(|t| t.max(Duration::from_millis(1)));
        self
    }

    /// How long a task waits for the answers to its input requests (one
    /// round: an [`Outcome::InputRequired`] or a [`RequestContext::ask`])
    /// before it gives up (default one hour, the default TTL): the wait
    /// fails with `-32603` saying no answer came, which fails the task
    /// unless the handler does otherwise with it. `None`: until the task's
    /// TTL, and without a TTL until answered or cancelled.
    ///
    /// A task waiting for input keeps its place among the running ones
    /// ([`ServerBuilder::max_running_tasks`]: its thread waits): this is
    /// what ends the wait of a client that never answers, so that with
    /// [`task_ttl(None)`](ServerBuilder::task_ttl) such a client does not
    /// hold every place for good. Within it, a client that does not answer
    /// holds a place each for that long.
    pub fn task_input_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.task_config.input_timeout = timeout.map(|t| t.max(Duration::from_millis(1)));
        self
    }

    /// The `pollIntervalMs` suggested to clients (default 200 ms).
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_config.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// How many tasks may run at once (default 64): past it, a request
    /// that would create a task gets `-32603` saying so, with
    /// `data.limit`. A task waiting for input counts: its wait ends with
    /// its answers, its TTL or [`ServerBuilder::task_input_timeout`].
    pub fn max_running_tasks(mut self, n: usize) -> Self {
        self.task_config.max_running = n.max(1);
        self
    }

    /// The largest result a task keeps, as JSON (default 4 MiB): a larger
    /// one fails the task with `-32603`. The same bound holds for the
    /// error a failed task keeps: a larger one is replaced by that
    /// `-32603`. The default store holds 64 MiB of results and errors
    /// ([`MemoryTaskStore::max_bytes`](crate::MemoryTaskStore::max_bytes)).
    pub fn max_task_result_bytes(mut self, n: usize) -> Self {
        self.task_config.max_result_bytes = n;
        self
    }
}
