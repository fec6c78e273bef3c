//! Sending requests: the raw `request` family, and a typed method for
//! everything a server offers.
//!
//! Every modern request is stamped with `_meta`: the protocol version, the
//! client's identity and the capabilities it was configured with (spec
//! 2026-07-28 basic/index, "Per-request protocol fields"). Legacy requests
//! carry none of those.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::client::call::{PendingCall, RequestOptions};
use crate::client::pages::Pages;
use crate::client::reply::{Reply, parse_reply};
use crate::client::tasks::ToolCallStart;
use crate::client::{Client, Era};
use crate::error::Error;
use crate::outcome::{Outcome, PromptArguments};
use crate::types::{
    CallToolResult, CompleteRequestParams, CompleteResult, DiscoverResult, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool, method,
};

impl Client {
    /// Sends a request and waits for its result (the default timeout, no
    /// callbacks). `params` is a JSON object or `null`; the client adds the
    /// protocol `_meta`.
    pub fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.request_with(method, params, RequestOptions::new())
    }

    /// Sends a request with per-request options and waits for its result.
    pub fn request_with(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<Value, Error> {
        let raw = self.start_request(method, params, options)?.wait()?;
        Ok(serde_json::from_str(raw.get())?)
    }

    /// Sends a request and returns at once with a handle to wait for it or
    /// cancel it.
    ///
    /// Sending never blocks. A server that does not read its input holds
    /// at most 16 MiB of the client's lines: past that, a request fails
    /// at once with [`Error::Io`] ("the server has not read the N bytes
    /// queued for its input ..."), as every request method does.
    pub fn start_request(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<PendingCall, Error> {
        self.inner.start_request(method, params, options)
    }

    /// Sends a request the way the typed methods do, and returns its final
    /// result exactly as the server sent it: for a caller that passes
    /// results on (a proxy, a `--json` output) or reads fields this crate
    /// does not model.
    ///
    /// An `input_required` result is answered with the client's input
    /// handlers ([`ClientBuilder::on_elicitation`](crate::ClientBuilder::on_elicitation)
    /// and friends) and the request retried, up to the round limit; input
    /// no handler can give is returned as [`Outcome::InputRequired`]. The
    /// options (timeout, progress, logs) are those of the first round; the
    /// retries keep the timeout. A task (`resultType: "task"`) is an error
    /// here, as in every typed method but `tools/call` with
    /// [`ClientBuilder::tasks`](crate::ClientBuilder::tasks) on; a task made
    /// of a `tools/call` here is cancelled (`tasks/cancel`, not waited
    /// for), since its id is handed to nobody: use
    /// [`Client::start_tool_call`] to get it.
    ///
    /// ```no_run
    /// # let client = mcp_stdio::Client::spawn(std::process::Command::new("my-mcp-server"))?;
    /// use mcp_stdio::{Outcome, RequestOptions};
    /// use serde_json::json;
    ///
    /// let params = json!({ "name": "echo", "arguments": { "text": "hi" } });
    /// if let Outcome::Complete(raw) = client.request_outcome("tools/call", params, RequestOptions::new())? {
    ///     println!("{}", raw.get()); // {"content":[{"type":"text","text":"hi"}],...}
    /// }
    /// # Ok::<(), mcp_stdio::Error>(())
    /// ```
    pub fn request_outcome(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<Outcome<Box<RawValue>>, Error> {
        self.outcome(method, params, options)
    }

    /// A typed request whose result may be `input_required`; a task is an
    /// error here (only `tools/call` may start one: see `start_tool_call`).
    ///
    /// An `input_required` result whose every request has a handler is
    /// answered and the request retried, up to the round limit; otherwise
    /// it is returned to the caller.
    fn outcome<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<Outcome<T>, Error> {
        match self.rounds(method, params, options)? {
            Reply::Outcome(outcome) => Ok(outcome),
            // Spec extensions/tasks: only a `tools/call` may be answered
            // with a task. One made of a `tools/call` (`request_outcome`)
            // is cancelled, not waited for: nobody here hands its id on.
            Reply::Task(created) if method == method::TOOLS_CALL => {
                if !self.inner.declares_tasks() {
                    return Err(Error::Protocol(format!(
                        "the server answered tools/call with task {}, but this client does not declare the tasks extension (ClientBuilder::tasks)",
                        created.task.task_id
                    )));
                }
                let params = json!({ "taskId": created.task.task_id });
                if let Ok(call) =
                    self.start_request(method::TASKS_CANCEL, params, RequestOptions::new())
                {
                    call.detach();
                }
                Err(Error::Protocol(
                    "the server answered tools/call with a task, which request_outcome does not follow: the task was cancelled (tasks/cancel); Client::start_tool_call hands tasks out".into(),
                ))
            }
            Reply::Task(_) => Err(Error::Protocol(format!(
                "the server answered {method} with a task (resultType \"task\"), which only tools/call may start"
            ))),
        }
    }

    /// The rounds of a request that may be `input_required`: answered with
    /// the application's handlers and retried, up to the round limit, until
    /// a final result, a task, or input no handler can give. A round of a
    /// `tools/call` that declares the Tasks extension and is given up on
    /// (its timeout) still hears its answer for that timeout again: a task
    /// made of it gets its `tasks/cancel` (`PendingCall::cancel_late_task`).
    pub(crate) fn rounds<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<Reply<T>, Error> {
        let (timeout, reset_on_progress) = (options.timeout, options.reset_on_progress);
        let mut params = params;
        let mut options = Some(options);
        let max_rounds = self.inner.options.max_input_rounds;
        // A `tools/call` that declares the extension may be answered with
        // a task: one whose answer comes after the call was given up on is
        // cancelled, for nobody else learns its id.
        let cancel_late_task = match method == method::TOOLS_CALL && self.inner.declares_tasks() {
            true => Some(self.stamp(json!({}))?),
            false => None,
        };
        for round in 0.. {
            // Callbacks belong to the first round; retries keep the
            // timeout and `reset_timeout_on_progress`'s `max` (each round is
            // a request of its own, its `max` counted from its start).
            let opts = options.take().unwrap_or_else(|| RequestOptions {
                timeout,
                reset_on_progress,
                ..RequestOptions::default()
            });
            let mut call = self.start_request(method, params.clone(), opts)?;
            if let Some(cancel) = &cancel_late_task {
                call = call.cancel_late_task(cancel.clone());
            }
            let raw = call.wait()?;
            let reply = parse_reply::<T>(&raw).map_err(|e| match e {
                Error::Json(e) => {
                    Error::Protocol(format!("the server's {method} result is invalid: {e}"))
                }
                other => other,
            })?;
            let result = match reply {
                Reply::Outcome(Outcome::InputRequired(result)) => result,
                done => return Ok(done),
            };
            if !self.inner.options.input.can_answer(&result) {
                return Ok(Reply::Outcome(Outcome::InputRequired(result)));
            }
            // Checked before the handlers run: nobody is asked a question
            // whose answer could not be sent.
            if round + 1 >= max_rounds {
                return Err(Error::Protocol(format!(
                    "{method} still needed input after {max_rounds} rounds"
                )));
            }
            let Some(responses) = self.inner.options.input.answer(&result)? else {
                return Ok(Reply::Outcome(Outcome::InputRequired(result)));
            };
            let Value::Object(map) = &mut params else {
                return Err(Error::Protocol(
                    "request params must be a JSON object".into(),
                ));
            };
            map.insert("inputResponses".into(), Value::Object(responses));
            match result.request_state {
                Some(state) => map.insert("requestState".into(), Value::String(state)),
                None => map.remove("requestState"),
            };
        }
        unreachable!("the loop returns")
    }

    /// A typed request that must complete in one round trip.
    fn complete_only<T: DeserializeOwned>(&self, method: &str, params: Value) -> Result<T, Error> {
        match self.outcome(method, params, RequestOptions::new())? {
            Outcome::Complete(result) => Ok(result),
            Outcome::InputRequired(_) => Err(Error::Protocol(format!(
                "the server answered {method} with input_required, which that method does not allow"
            ))),
        }
    }

    /// `server/discover` (modern servers).
    pub fn discover(&self) -> Result<DiscoverResult, Error> {
        if let Era::Legacy { .. } = self.era() {
            return Err(Error::Protocol(
                "server/discover is not part of the legacy era this server speaks".into(),
            ));
        }
        self.complete_only(method::SERVER_DISCOVER, json!({}))
    }

    /// `ping` (legacy servers; modern servers have no ping).
    pub fn ping(&self) -> Result<(), Error> {
        if let Era::Modern { .. } = self.era() {
            return Err(Error::Protocol(
                "ping was removed in the modern era; use server/discover".into(),
            ));
        }
        self.request("ping", json!({})).map(|_| ())
    }

    /// `logging/setLevel` (legacy servers): asks for the session's log
    /// messages at `level` and above, which then reach
    /// [`ClientBuilder::on_log`](crate::ClientBuilder::on_log). A modern
    /// server takes the level per request instead ([`RequestOptions::log`]).
    pub fn set_log_level(&self, level: LoggingLevel) -> Result<(), Error> {
        if let Era::Modern { .. } = self.era() {
            return Err(Error::Protocol(
                "logging/setLevel was removed in the modern era; use RequestOptions::log".into(),
            ));
        }
        self.request("logging/setLevel", json!({ "level": level }))
            .map(|_| ())
    }

    /// One page of `tools/list`.
    pub fn list_tools(&self, cursor: Option<&str>) -> Result<ListToolsResult, Error> {
        self.complete_only(method::TOOLS_LIST, cursor_params(cursor))
    }

    /// Every tool, following `nextCursor` page by page.
    pub fn tools(&self) -> Pages<'_, Tool> {
        Pages::new(self, method::TOOLS_LIST, |client, cursor| {
            let page = client.list_tools(cursor)?;
            Ok((page.tools, page.next_cursor))
        })
    }

    /// `tools/call`, the short path: the tool's result. Input the server
    /// asks for is answered by the client's handlers
    /// ([`ClientBuilder::on_elicitation`](crate::ClientBuilder::on_elicitation)
    /// and the like), which retry by themselves; a request for input none of
    /// them gave is an [`Error::Protocol`] saying what was asked. A tool
    /// that ran and failed is still `Ok`, with
    /// [`is_error`](CallToolResult::is_error) set and its text for the model.
    ///
    /// ```no_run
    /// # let client = mcp_stdio::Client::spawn(std::process::Command::new("my-mcp-server"))?;
    /// let text = client.call("echo", serde_json::json!({ "text": "hi" }))?.text_content();
    /// # Ok::<(), mcp_stdio::Error>(())
    /// ```
    ///
    /// The rest of the API is the same call with more to it:
    /// [`call_tool`](Client::call_tool) hands back the server's request for
    /// input as an [`Outcome`], [`call_tool_with`](Client::call_tool_with)
    /// takes a timeout and callbacks, [`call_tool_as`](Client::call_tool_as)
    /// reads structured content.
    pub fn call(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call_tool(name, arguments)?.into_result()
    }

    /// `tools/call`: the tool's result, or the server's request for more
    /// input that the client's handlers could not give.
    ///
    /// With [`ClientBuilder::tasks`](crate::ClientBuilder::tasks) on, a
    /// server may answer with a task: the call then follows it to its end
    /// (see [`TaskHandle::wait`](crate::TaskHandle::wait)), within the
    /// request timeout counted again from the task's creation; a task
    /// that may take longer wants [`Client::call_tool_with`] and a longer
    /// [`RequestOptions::timeout`], or [`Client::start_tool_call`].
    pub fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Outcome<CallToolResult>, Error> {
        self.call_tool_with(name, arguments, RequestOptions::new())
    }

    /// `tools/call` for a tool with structured output: its
    /// `structuredContent` read into `T` (typically a type mirroring the
    /// tool's `outputSchema`).
    ///
    /// Errors say what went wrong: the tool ran and failed (`isError`; the
    /// message carries its text), the result has no `structuredContent`,
    /// or it does not fit `T` (serde's message) are [`Error::Protocol`];
    /// a request for input no handler of this client could answer is one
    /// too.
    pub fn call_tool_as<T: DeserializeOwned>(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<T, Error> {
        let result = self.call(name, arguments)?;
        if result.is_error() {
            return Err(Error::Protocol(format!(
                "tool {name} failed: {}",
                result.text_content().replace('\n', " ")
            )));
        }
        let Some(structured) = result.structured_content else {
            return Err(Error::Protocol(format!(
                "tool {name} returned no structuredContent"
            )));
        };
        serde_json::from_value(structured).map_err(|e| {
            Error::Protocol(format!(
                "the structuredContent of tool {name} does not fit the expected type: {e}"
            ))
        })
    }

    /// `tools/call` with per-request options (timeout, progress, logs).
    ///
    /// A server may answer with a task instead of the result (Tasks
    /// extension, when the client declares it: [`ClientBuilder::tasks`](crate::ClientBuilder::tasks)).
    /// The call then follows the task to its end as [`TaskHandle::wait`](crate::TaskHandle::wait)
    /// does, and returns what the tool returned as if it had answered at
    /// once; the timeout bounds the call's round trips and, from its
    /// creation, the task as a whole. [`Client::start_tool_call`] hands out
    /// the task instead.
    pub fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<Outcome<CallToolResult>, Error> {
        match self.start_tool_call(name, arguments, options)? {
            ToolCallStart::Immediate(outcome) => Ok(outcome),
            ToolCallStart::Task(task) => task.wait().map(Outcome::Complete),
        }
    }

    /// One page of `resources/list`.
    pub fn list_resources(&self, cursor: Option<&str>) -> Result<ListResourcesResult, Error> {
        self.complete_only(method::RESOURCES_LIST, cursor_params(cursor))
    }

    /// Every resource, page by page.
    pub fn resources(&self) -> Pages<'_, Resource> {
        Pages::new(self, method::RESOURCES_LIST, |client, cursor| {
            let page = client.list_resources(cursor)?;
            Ok((page.resources, page.next_cursor))
        })
    }

    /// One page of `resources/templates/list`.
    pub fn list_resource_templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        self.complete_only(method::RESOURCES_TEMPLATES_LIST, cursor_params(cursor))
    }

    /// Every resource template, page by page.
    pub fn resource_templates(&self) -> Pages<'_, ResourceTemplate> {
        Pages::new(self, method::RESOURCES_TEMPLATES_LIST, |client, cursor| {
            let page = client.list_resource_templates(cursor)?;
            Ok((page.resource_templates, page.next_cursor))
        })
    }

    /// `resources/read`.
    pub fn read_resource(&self, uri: &str) -> Result<Outcome<ReadResourceResult>, Error> {
        self.outcome(
            method::RESOURCES_READ,
            json!({ "uri": uri }),
            RequestOptions::new(),
        )
    }

    /// One page of `prompts/list`.
    pub fn list_prompts(&self, cursor: Option<&str>) -> Result<ListPromptsResult, Error> {
        self.complete_only(method::PROMPTS_LIST, cursor_params(cursor))
    }

    /// Every prompt, page by page.
    pub fn prompts(&self) -> Pages<'_, Prompt> {
        Pages::new(self, method::PROMPTS_LIST, |client, cursor| {
            let page = client.list_prompts(cursor)?;
            Ok((page.prompts, page.next_cursor))
        })
    }

    /// `prompts/get`.
    pub fn get_prompt(
        &self,
        name: &str,
        arguments: PromptArguments,
    ) -> Result<Outcome<GetPromptResult>, Error> {
        self.outcome(
            method::PROMPTS_GET,
            json!({ "name": name, "arguments": arguments }),
            RequestOptions::new(),
        )
    }

    /// `completion/complete`.
    pub fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult, Error> {
        self.complete_only(method::COMPLETION_COMPLETE, serde_json::to_value(params)?)
    }
}

fn cursor_params(cursor: Option<&str>) -> Value {
    match cursor {
        Some(cursor) => json!({ "cursor": cursor }),
        None => json!({}),
    }
}
