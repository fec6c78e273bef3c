//! One request in flight: its options (timeout, progress and log
//! callbacks) and [`PendingCall`], the handle that waits for its reply.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::value::RawValue;

use crate::client::link::{Delivery, Late, LateReply, Link};
use crate::error::Error;
use crate::jsonrpc::{RequestId, encode_notification};
use crate::types::{
    CreateTaskResult, LoggingLevel, LoggingMessageNotificationParams, ProgressNotificationParams,
    ResultType, method,
};

type ProgressFn = dyn FnMut(&ProgressNotificationParams) + Send;
type LogFn = dyn FnMut(&LoggingMessageNotificationParams) + Send;

/// Per-request settings: timeout, progress and log callbacks.
///
/// The callbacks run on the thread that waits for the reply; the progress
/// and log messages that come before it waits (a [`PendingCall`] not
/// waited for yet) wait for it, up to the line limit in bytes of JSON
/// ([`ClientBuilder::max_line_bytes`](crate::ClientBuilder::max_line_bytes),
/// 16 MiB by default): past it they are dropped, with one note, and the
/// reply still comes.
///
/// ```
/// use std::time::Duration;
/// let options = mcp_stdio::RequestOptions::new()
///     .timeout(Duration::from_secs(5))
///     .on_progress(|p| eprintln!("{}/{:?}", p.progress, p.total))
///     .reset_timeout_on_progress(Duration::from_secs(60));
/// ```
#[derive(Default)]
pub struct RequestOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) progress: Option<Box<ProgressFn>>,
    pub(crate) reset_on_progress: Option<Duration>,
    pub(crate) log: Option<(LoggingLevel, Box<LogFn>)>,
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("reset_on_progress", &self.reset_on_progress)
            .field("log", &self.log.as_ref().map(|(level, _)| level))
            .finish()
    }
}

impl RequestOptions {
    /// Default options: the client's timeout, no callbacks.
    pub fn new() -> RequestOptions {
        RequestOptions::default()
    }

    /// How long to wait for the reply before cancelling the request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Asks for progress (the client sets a unique `progressToken`) and
    /// calls `callback` on the waiting thread for each notification.
    pub fn on_progress(
        mut self,
        callback: impl FnMut(&ProgressNotificationParams) + Send + 'static,
    ) -> Self {
        self.progress = Some(Box::new(callback));
        self
    }

    /// Restarts the timeout whenever progress arrives, but never waits
    /// longer than `max` in all, counted from the request's start, with or
    /// without progress (spec 2026-07-28 basic/patterns/cancellation,
    /// "Timeouts"). A `max` below the timeout cuts every wait at `max`.
    /// A call answered `input_required` is retried with this option and the
    /// timeout (not the callbacks): each retry is a request of its own, its
    /// `max` counted from its start.
    pub fn reset_timeout_on_progress(mut self, max: Duration) -> Self {
        self.reset_on_progress = Some(max);
        self
    }

    /// Asks for log messages at `level` and above
    /// (`io.modelcontextprotocol/logLevel`) and hands them to `callback` on
    /// the waiting thread.
    ///
    /// Only the messages the spec ties to this request arrive here: on a
    /// modern server, those that come while it is the only request in
    /// flight that asked for logs (stdio gives log messages no request
    /// id). A proxy's client, whose requests are many callers', gives
    /// them to no request: a server may log late, after the answer to the
    /// call that caused it, and no timing tells that from the lone
    /// request's own. The rest, and every message of a legacy server,
    /// whose logging is session-wide, go to
    /// [`ClientBuilder::on_log`](crate::ClientBuilder::on_log).
    pub fn log(
        mut self,
        level: LoggingLevel,
        callback: impl FnMut(&LoggingMessageNotificationParams) + Send + 'static,
    ) -> Self {
        self.log = Some((level, Box::new(callback)));
        self
    }
}

/// A request in flight. Wait for its reply, with or without a timeout, or
/// cancel it. Dropping it unanswered cancels it.
pub struct PendingCall {
    pub(crate) id: RequestId,
    pub(crate) link: Arc<Link>,
    pub(crate) rx: Receiver<Delivery>,
    pub(crate) options: RequestOptions,
    pub(crate) started: Instant,
    pub(crate) default_timeout: Duration,
    pub(crate) done: bool,
    /// What reads a reply that comes after the call was given up on
    /// ([`on_late_reply`](PendingCall::on_late_reply)); `None`: it is
    /// dropped.
    pub(crate) late: Option<LateReply>,
}

impl fmt::Debug for PendingCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCall")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl PendingCall {
    /// The request's JSON-RPC id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Waits for the reply, up to the request's timeout; on timeout the
    /// request is cancelled and `Error::Timeout` returned. With
    /// [`RequestOptions::reset_timeout_on_progress`], each progress
    /// notification restarts the timeout, and the wait never goes past
    /// that option's `max` from the request's start.
    pub fn wait(mut self) -> Result<Box<RawValue>, Error> {
        let timeout = self.options.timeout.unwrap_or(self.default_timeout);
        self.wait_for(timeout, false, None)
    }

    /// Waits like [`wait`](PendingCall::wait), with `timeout` instead of the
    /// request's.
    pub fn wait_timeout(mut self, timeout: Duration) -> Result<Box<RawValue>, Error> {
        self.wait_for(timeout, false, None)
    }

    /// Waits like [`wait`](PendingCall::wait) (the same timeout, restarted
    /// by progress when asked), and gives up when `stop` says so (asked
    /// every 20 ms): the request is then cancelled (the server gets
    /// `notifications/cancelled`) and the wait ends with
    /// [`Error::Cancelled`]. For a caller whose own caller may go away
    /// meanwhile: a proxy whose client cancelled, a UI whose user pressed
    /// stop.
    pub fn wait_unless(mut self, stop: impl Fn() -> bool) -> Result<Box<RawValue>, Error> {
        let timeout = self.options.timeout.unwrap_or(self.default_timeout);
        self.wait_for(timeout, false, Some(&stop))
    }

    /// Cancels the request: the server is sent `notifications/cancelled`,
    /// and a reply that still comes is dropped.
    pub fn cancel(mut self, reason: Option<&str>) {
        self.cancel_inner(reason);
    }

    /// Waits up to `timeout` (`None`: the request's, as
    /// [`wait`](PendingCall::wait)) and, with `stop`, until it says stop, as
    /// [`wait_unless`](PendingCall::wait_unless); but gives up by
    /// forgetting the request without `notifications/cancelled`: for the
    /// requests of a task (`tasks/*`), which end with `tasks/cancel`
    /// instead (spec extensions/tasks, "Task Cancellation").
    pub(crate) fn wait_quietly(
        mut self,
        timeout: Option<Duration>,
        stop: Option<&dyn Fn() -> bool>,
    ) -> Result<Box<RawValue>, Error> {
        let timeout = timeout
            .or(self.options.timeout)
            .unwrap_or(self.default_timeout);
        let res = self.wait_for(timeout, true, stop);
        self.detach_inner();
        res
    }

    /// Keeps hearing the reply after the call is given up on (stopped,
    /// timed out, cancelled or dropped unanswered): a result that still
    /// comes within the request's timeout, counted from the give-up, is
    /// handed to `then` on the client's reader thread, and the request
    /// `then` returns (its method, and its params as they go: stamped,
    /// `Client::stamp`) is sent there, its answer not waited for. Past
    /// that end the reply is dropped as any other, and so is one whose
    /// entry went to keep a link's late entries within `MAX_LATE`; the
    /// rule is `Link::forget_but_hear`. For a `tools/call`, whose answer
    /// may be a task the server made just as the call was given up on
    /// ([`cancel_late_task`](PendingCall::cancel_late_task)). `then` must
    /// not wait: it runs where every reply of the client is read.
    pub(crate) fn on_late_reply(
        mut self,
        then: impl FnOnce(&RawValue) -> Option<(&'static str, serde_json::Value)> + Send + 'static,
    ) -> Self {
        self.late = Some(Box::new(then));
        self
    }

    /// [`on_late_reply`](PendingCall::on_late_reply) for a `tools/call`
    /// that may be answered with a task (its request declared the Tasks
    /// extension): a late answer that is a task (`CreateTaskResult`) gets
    /// its `tasks/cancel`, with `params` (stamped, `Client::stamp`) and the
    /// task's id, not waited for. Nobody else ever learns that id, so the
    /// task would otherwise run on the server with nobody to poll it or
    /// take its result. Any other late answer is dropped.
    pub(crate) fn cancel_late_task(self, params: serde_json::Value) -> Self {
        self.on_late_reply(move |reply| cancel_made_task(reply, params))
    }

    /// Stops waiting without a word to the server: the reply, whenever it
    /// comes, is dropped. For a request whose answer changes nothing
    /// (the `tasks/cancel` of a call that already gave up).
    pub(crate) fn detach(mut self) {
        self.detach_inner();
    }

    fn detach_inner(&mut self) {
        if !self.done {
            self.done = true;
            self.forget();
        }
    }

    /// Forgets the request at the link, or keeps its late reply heard
    /// ([`on_late_reply`](PendingCall::on_late_reply)); whether it was
    /// still waiting for its reply.
    fn forget(&mut self) -> bool {
        match self.late.take() {
            Some(then) => {
                let timeout = self.options.timeout.unwrap_or(self.default_timeout);
                let until = crate::deadline::from_now(timeout);
                self.link.forget_but_hear(&self.id, Late { until, then })
            }
            None => self.link.forget(&self.id),
        }
    }

    /// The one waiting loop. The deadline is `timeout` from now, restarted
    /// by each progress notification when `reset_timeout_on_progress` is
    /// set, and never past that option's `max` from the request's start
    /// (spec 2026-07-28 basic/patterns/cancellation, "Timeouts": a client
    /// MAY reset its timeout on progress, and SHOULD always enforce a
    /// maximum). With `stop`, it is asked every 20 ms, and a `true` ends the
    /// wait with [`Error::Cancelled`]. Giving up (on `stop` or timeout)
    /// sends `notifications/cancelled` unless `quiet`; a request the
    /// reader already took out to deliver its reply is over, not given up
    /// on: its reply is returned.
    fn wait_for(
        &mut self,
        timeout: Duration,
        quiet: bool,
        stop: Option<&dyn Fn() -> bool>,
    ) -> Result<Box<RawValue>, Error> {
        let mut stop = stop;
        let limit =
            (self.options.reset_on_progress).map(|max| crate::deadline::after(self.started, max));
        let capped = |deadline: Instant| limit.map_or(deadline, |limit| deadline.min(limit));
        let mut deadline = capped(crate::deadline::from_now(timeout));
        loop {
            if stop.is_some_and(|stop| stop()) {
                if self.give_up(quiet, "cancelled") {
                    return Err(Error::Cancelled);
                }
                // Answered as it was stopped: the reader took the request
                // out, and its reply (or the link's end) is on its way.
                stop = None;
                deadline = crate::deadline::after(Instant::now(), Duration::MAX);
                continue;
            }
            let until = match stop {
                Some(_) => deadline.min(crate::deadline::from_now(Duration::from_millis(20))),
                None => deadline,
            };
            match self.rx.recv_deadline(until) {
                Ok(Delivery::Reply(reply)) => {
                    self.done = true;
                    return reply;
                }
                Ok(Delivery::Progress(progress, _held)) => {
                    if let Some(callback) = &mut self.options.progress {
                        callback(&progress);
                    }
                    if limit.is_some() {
                        deadline = capped(crate::deadline::from_now(timeout));
                    }
                }
                Ok(Delivery::Log(log, _held)) => {
                    if let Some((_, callback)) = &mut self.options.log {
                        callback(&log);
                    }
                }
                Ok(Delivery::Disconnected) | Err(RecvTimeoutError::Disconnected) => {
                    self.done = true;
                    return Err(Error::Disconnected);
                }
                // A slice of the wait between two looks at `stop`.
                Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(RecvTimeoutError::Timeout) => {
                    if self.give_up(quiet, "timed out") {
                        return Err(Error::Timeout);
                    }
                    // Answered as it timed out: the reader took the request
                    // out, and its reply (or the link's end) is on its way.
                    deadline = crate::deadline::after(Instant::now(), Duration::MAX);
                }
            }
        }
    }

    /// Gives the request up: forgets it, with `notifications/cancelled`
    /// unless `quiet`; returns whether it was still waiting for its reply.
    fn give_up(&mut self, quiet: bool, reason: &str) -> bool {
        if !quiet {
            return self.cancel_inner(Some(reason));
        }
        if self.done {
            return false;
        }
        self.done = true;
        self.forget()
    }

    /// Sends `notifications/cancelled` for the request if it is still
    /// waiting for its reply; returns whether it was.
    fn cancel_inner(&mut self, reason: Option<&str>) -> bool {
        if self.done {
            return false;
        }
        self.done = true;
        if !self.forget() {
            // Answered (the reader took it out) or the link is gone: a
            // cancellation would name a request that is over.
            return false;
        }
        let mut line = Vec::new();
        let mut params = serde_json::json!({ "requestId": self.id });
        if let Some(reason) = reason {
            params["reason"] = reason.into();
        }
        if encode_notification(&mut line, method::NOTIFICATION_CANCELLED, &params).is_ok() {
            // A dead connection needs no cancellation.
            let _ = self.link.send(line);
        }
        true
    }
}

/// The `tasks/cancel` for the task a late answer to a `tools/call` names
/// (`params`, stamped, with its id), if it names one; run on the client's
/// reader ([`PendingCall::cancel_late_task`]).
fn cancel_made_task(
    reply: &RawValue,
    mut params: serde_json::Value,
) -> Option<(&'static str, serde_json::Value)> {
    let created: CreateTaskResult = serde_json::from_str(reply.get()).ok()?;
    if created.result_type != Some(ResultType::Task) {
        return None;
    }
    params["taskId"] = created.task.task_id.into();
    Some((method::TASKS_CANCEL, params))
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        self.cancel_inner(Some("the caller stopped waiting"));
    }
}

#[cfg(test)]
mod tests;
