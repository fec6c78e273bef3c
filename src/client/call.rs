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
    LoggingLevel, LoggingMessageNotificationParams, ProgressNotificationParams, method,
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
    /// id; a proxy's client, whose requests are many callers', takes them
    /// only while this request has been the only one in flight since it
    /// was sent). The rest, and every message of a legacy server, whose
    /// logging is session-wide, go to
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
    /// rule is `Link::forget_but_hear`. For a proxy's `tools/call`, whose answer
    /// may be a task the server made just as the caller cancelled: that
    /// task gets its `tasks/cancel` (`proxy::forward`). `then` must not
    /// wait: it runs where every reply of the client is read.
    #[cfg(feature = "server")]
    pub(crate) fn on_late_reply(
        mut self,
        then: impl FnOnce(&RawValue) -> Option<(&'static str, serde_json::Value)> + Send + 'static,
    ) -> Self {
        self.late = Some(Box::new(then));
        self
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

impl Drop for PendingCall {
    fn drop(&mut self) {
        self.cancel_inner(Some("the caller stopped waiting"));
    }
}

#[cfg(test)]
mod tests {
    use std::thread;

    use super::*;
    use crate::client::ClientBuilder;
    use crate::client::link::over_pipes;

    /// The reader took the request out to deliver its reply just as the
    /// wait timed out: the caller gets the reply, and the server no
    /// `notifications/cancelled` for a request it answered.
    #[test]
    fn a_reply_that_arrives_as_the_wait_times_out_is_taken_not_cancelled() {
        let options = ClientBuilder::default().trace(|_| {});
        let (link, _server_writes, written) = over_pipes(&options);
        // Not registered: as if the reader had already taken it out of the
        // pending requests, its reply still on the way.
        let (tx, rx) = crossbeam_channel::unbounded();
        let call = PendingCall {
            id: link.next_id(),
            link: Arc::clone(&link),
            rx,
            options: RequestOptions::new(),
            started: Instant::now(),
            default_timeout: Duration::from_secs(60),
            done: false,
            late: None,
        };
        let late = thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            let reply = RawValue::from_string("{\"late\":true}".into()).unwrap();
            tx.send(Delivery::Reply(Ok(reply))).unwrap();
        });
        let reply = call.wait_timeout(Duration::from_millis(5));
        late.join().unwrap();
        assert_eq!(
            reply.map(|r| r.get().to_owned()).ok().as_deref(),
            Some("{\"late\":true}")
        );
        link.close_input();
        let written: Vec<_> = written.iter().collect();
        assert!(written.is_empty(), "sent to the server: {written:?}");
    }

    /// Claim (review-proxy11): `stop` says stop just as the reader has
    /// taken the request out to deliver its reply: `wait_unless` dropped
    /// that reply and said `Cancelled`. For the proxy's `tools/call` the
    /// reply is a task the server made, which nobody then cancels. The
    /// request is over, not cancelled: its reply is what the caller gets.
    #[test]
    fn a_reply_that_arrives_as_the_wait_is_stopped_is_taken_not_dropped() {
        let options = ClientBuilder::default().trace(|_| {});
        let (link, _server_writes, written) = over_pipes(&options);
        // Not registered: the reader already took it out; its reply waits.
        let (tx, rx) = crossbeam_channel::unbounded();
        let call = PendingCall {
            id: link.next_id(),
            link: Arc::clone(&link),
            rx,
            options: RequestOptions::new(),
            started: Instant::now(),
            default_timeout: Duration::from_secs(60),
            done: false,
            late: None,
        };
        let reply = RawValue::from_string("{\"task\":true}".into()).unwrap();
        tx.send(Delivery::Reply(Ok(reply))).unwrap();
        let reply = call.wait_unless(|| true);
        assert_eq!(
            reply.map(|r| r.get().to_owned()).ok().as_deref(),
            Some("{\"task\":true}")
        );
        link.close_input();
        let written: Vec<_> = written.iter().collect();
        assert!(written.is_empty(), "sent to the server: {written:?}");
    }

    /// A call registered on a link over pipes, as `start_request` makes it.
    fn registered(
        link: &Arc<Link>,
        options: RequestOptions,
        default_timeout: Duration,
    ) -> PendingCall {
        let id = link.next_id();
        let token = options.progress.is_some().then(|| id.clone());
        let rx = link.register(&id, token, false);
        PendingCall {
            id,
            link: Arc::clone(link),
            rx,
            options,
            started: Instant::now(),
            default_timeout,
            done: false,
            late: None,
        }
    }

    /// A reply that comes after the call was given up on, within its
    /// end, is handed to the closure `on_late_reply` set, and the request
    /// the closure returns is sent (review-proxy11: a proxy's `tools/call`
    /// answered with a task as the caller cancelled); one that comes past
    /// the end is dropped, nothing sent for it.
    #[cfg(feature = "server")]
    #[test]
    fn a_late_reply_is_heard_until_its_end_and_dropped_after() {
        use std::io::Write;
        let options = ClientBuilder::default().trace(|_| {});
        let (link, mut server_writes, written) = over_pipes(&options);
        let reply_to = |server_writes: &mut std::io::PipeWriter, id: &RequestId| {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"n\":{id}}}}}\n");
            server_writes.write_all(line.as_bytes()).unwrap();
        };
        let hear = |call: PendingCall| {
            call.on_late_reply(|reply| {
                let n: serde_json::Value = serde_json::from_str(reply.get()).ok()?;
                Some(("tasks/cancel", serde_json::json!({ "heard": n["n"] })))
            })
        };
        // Heard: given up on, then answered within its timeout.
        let options_60s = RequestOptions::new().timeout(Duration::from_secs(60));
        let heard = hear(registered(&link, options_60s, Duration::from_secs(60)));
        let heard_id = heard.id().clone();
        assert!(matches!(heard.wait_unless(|| true), Err(Error::Cancelled)));
        let cancelled = written.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(cancelled["method"], "notifications/cancelled");
        reply_to(&mut server_writes, &heard_id);
        let sent = written.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(sent["method"], "tasks/cancel", "{sent}");
        assert_eq!(sent["params"]["heard"], heard_id.to_value());
        // Past its end: dropped. A call answered after it shows the
        // reader went past it.
        let options_1ms = RequestOptions::new().timeout(Duration::from_millis(1));
        let late = hear(registered(&link, options_1ms, Duration::from_secs(60)));
        let late_id = late.id().clone();
        assert!(matches!(late.wait_unless(|| true), Err(Error::Cancelled)));
        let cancelled = written.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(cancelled["method"], "notifications/cancelled");
        thread::sleep(Duration::from_millis(20));
        reply_to(&mut server_writes, &late_id);
        let next = registered(&link, RequestOptions::new(), Duration::from_secs(60));
        let next_id = next.id().clone();
        reply_to(&mut server_writes, &next_id);
        assert!(next.wait().is_ok());
        link.close_input();
        let written: Vec<_> = written.iter().collect();
        assert!(
            written.is_empty(),
            "sent for a reply past its end: {written:?}"
        );
    }

    /// Claim (review-proxy12): a caller of the proxy that starts and
    /// cancels `tools/call`s in a loop, behind a server that (as the spec
    /// asks) does not answer a cancelled request, leaves one late entry
    /// per give-up in the link for the whole request timeout, each holding
    /// the caller's capabilities (the stamp of its `tasks/cancel`): the
    /// caller's in-flight limits free the request, not the entry, so the
    /// map grows with the give-up rate, without a bound.
    #[cfg(feature = "server")]
    #[test]
    fn given_up_calls_never_answered_hold_a_bounded_late_map() {
        let options = ClientBuilder::default().trace(|_| {});
        use std::io::Write;
        let (link, mut server_writes, written) = over_pipes(&options);
        let big = serde_json::json!({ "capabilities": "x".repeat(1024) });
        let mut last = None;
        for _ in 0..5_000 {
            let big = big.clone();
            let call = registered(&link, RequestOptions::new(), Duration::from_secs(60));
            last = Some(call.id().clone());
            call.on_late_reply(move |_| Some(("tasks/cancel", big)))
                .detach();
        }
        assert!(
            link.late_len() <= crate::client::link::MAX_LATE,
            "{} late entries held for 60 s",
            link.late_len()
        );
        // The newest is still heard: a reply crossing its give-up comes
        // soon after it.
        let last = last.unwrap();
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{last},\"result\":{{}}}}\n");
        server_writes.write_all(line.as_bytes()).unwrap();
        let sent = written.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(sent["method"], "tasks/cancel");
    }

    /// Claim (review-proxy12): a late reply that is an error, one that is
    /// not the shape the closure reads, and a second reply to the same id
    /// must send nothing, and the reader goes on (a later call is
    /// answered). Found false: the reader hands only a result to the
    /// closure, once.
    #[cfg(feature = "server")]
    #[test]
    fn a_late_error_a_garbled_late_reply_and_a_repeated_one_send_nothing() {
        use std::io::Write;
        let options = ClientBuilder::default().trace(|_| {});
        let (link, mut server_writes, written) = over_pipes(&options);
        let hear = |call: PendingCall| {
            call.on_late_reply(|reply| {
                let n: serde_json::Value = serde_json::from_str(reply.get()).ok()?;
                let n = n.get("n")?.as_u64()?;
                Some(("tasks/cancel", serde_json::json!({ "heard": n })))
            })
        };
        let mut ids = Vec::new();
        for _ in 0..3 {
            let call = hear(registered(
                &link,
                RequestOptions::new(),
                Duration::from_secs(60),
            ));
            ids.push(call.id().clone());
            call.detach();
        }
        let lines = [
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":-32800,\"message\":\"cancelled\"}}}}\n",
                ids[0]
            ),
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":\"not an object\"}}\n",
                ids[1]
            ),
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"n\":\"seven\"}}}}\n",
                ids[2]
            ),
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"n\":1}}}}\n",
                ids[0]
            ),
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"n\":2}}}}\n",
                ids[2]
            ),
            "{\"jsonrpc\":\"2.0\",\"id\":".to_owned() + "\n",
        ];
        for line in &lines {
            server_writes.write_all(line.as_bytes()).unwrap();
        }
        let next = registered(&link, RequestOptions::new(), Duration::from_secs(60));
        let next_id = next.id().clone();
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{next_id},\"result\":{{}}}}\n");
        server_writes.write_all(line.as_bytes()).unwrap();
        assert!(next.wait().is_ok(), "the reader died");
        assert_eq!(link.late_len(), 0);
        link.close_input();
        let written: Vec<_> = written.iter().collect();
        assert!(written.is_empty(), "sent for a late reply: {written:?}");
    }

    /// Claim (review-proxy12): the server behind stops reading its input
    /// and answers many given-up calls late; the request each late reply
    /// makes is sent from the reader thread, the only one draining the
    /// server's output: if that send waited for the full pipe, the reader
    /// would hang and no reply would be read again (a deadlock with a
    /// server that writes before it reads). Found false: the send queues,
    /// and past 16 MiB refuses, never blocks.
    #[cfg(feature = "server")]
    #[test]
    fn late_replies_from_a_server_that_does_not_read_never_block_the_reader() {
        use std::io::{BufReader, Write};
        let options = ClientBuilder::default().trace(|_| {});
        let (output, mut server_writes) = std::io::pipe().unwrap();
        // Its read end kept, never read: the pipe fills.
        let (_server_reads, input) = std::io::pipe().unwrap();
        let link = Link::start(
            Box::new(BufReader::new(output)),
            crate::client::link::ServerInput::stream(Box::new(input)),
            options.max_line_bytes,
            options.notes.clone(),
            None,
        )
        .unwrap();
        let big = "x".repeat(64 * 1024);
        let mut ids = Vec::new();
        for _ in 0..400 {
            let big = big.clone();
            let call = registered(&link, RequestOptions::new(), Duration::from_secs(60));
            ids.push(call.id().clone());
            call.on_late_reply(move |_| Some(("tasks/cancel", serde_json::json!({ "pad": big }))))
                .detach();
        }
        let next = registered(&link, RequestOptions::new(), Duration::from_secs(60));
        let next_id = next.id().clone();
        let writer = thread::spawn(move || {
            for id in ids.iter().chain([&next_id]) {
                let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n");
                server_writes.write_all(line.as_bytes()).unwrap();
            }
            server_writes
        });
        let answered = next.wait_timeout(Duration::from_secs(10));
        assert!(answered.is_ok(), "the reader hung: {answered:?}");
        drop(writer.join().unwrap());
    }

    /// Claim (review-proxy12): the reader runs a late reply's closure, and
    /// sends the request it returns, while it holds the link's `late` lock
    /// (the `if let` scrutinee's guard lives through its block). On a
    /// spawned server's pipe that send calls the application's wire hook
    /// on the reader thread; a hook that starts a request on the same
    /// link (`register` sweeps `late`) then waits on a lock its own thread
    /// holds: the reader hangs, and every call after it with it.
    #[cfg(all(unix, feature = "server"))]
    #[test]
    fn a_wire_hook_that_starts_a_request_as_a_late_reply_is_answered_does_not_hang_the_reader() {
        use std::io::{BufReader, Write};
        use std::sync::{OnceLock, Weak};
        let mut child = std::process::Command::new("sh")
            .args(["-c", "cat >/dev/null"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let (output, mut server_writes) = std::io::pipe().unwrap();
        let options = ClientBuilder::default();
        let hooked: Arc<OnceLock<Weak<Link>>> = Arc::default();
        let (started_tx, started) = crossbeam_channel::unbounded();
        let wire: crate::client::wire::Wire = {
            let hooked = Arc::clone(&hooked);
            Some(Arc::new(move |direction, line: &[u8]| {
                let cancel = String::from_utf8_lossy(line).contains("tasks/cancel");
                if matches!(direction, crate::client::wire::WireDirection::Sent) && cancel {
                    if let Some(link) = hooked.get().and_then(Weak::upgrade) {
                        let id = link.next_id();
                        let _rx = link.register(&id, None, false);
                        link.forget(&id);
                    }
                    let _ = started_tx.send(());
                }
            }))
        };
        let link = Link::start(
            Box::new(BufReader::new(output)),
            crate::client::link::ServerInput::pipe(stdin),
            options.max_line_bytes,
            options.notes.clone(),
            wire,
        )
        .unwrap();
        hooked.set(Arc::downgrade(&link)).unwrap();
        let call = registered(&link, RequestOptions::new(), Duration::from_secs(60));
        let id = call.id().clone();
        call.on_late_reply(|_| Some(("tasks/cancel", serde_json::json!({}))))
            .detach();
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n");
        server_writes.write_all(line.as_bytes()).unwrap();
        let next = registered(&link, RequestOptions::new(), Duration::from_secs(60));
        let next_id = next.id().clone();
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{next_id},\"result\":{{}}}}\n");
        server_writes.write_all(line.as_bytes()).unwrap();
        let hook_ran = started.recv_timeout(Duration::from_secs(5));
        let answered = next.wait_timeout(Duration::from_secs(5));
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            hook_ran.is_ok(),
            "the wire hook never finished for the late tasks/cancel"
        );
        assert!(answered.is_ok(), "the reader hung: {answered:?}");
    }

    /// Claim (review-proxy12): the late hook outlives the connection it
    /// was made on: after the link fails (the client closed, or its
    /// server died and a restart makes a new link, whose ids start again),
    /// an entry kept before, or a give-up after, could act on a reply
    /// that is not its own. Found false: the link's end clears the map,
    /// a give-up on a dead link keeps nothing, and a new link has a map
    /// of its own.
    #[cfg(feature = "server")]
    #[test]
    fn a_failed_link_keeps_no_late_entry() {
        let options = ClientBuilder::default().trace(|_| {});
        let (link, _server_writes, _written) = over_pipes(&options);
        let hear = |call: PendingCall| {
            call.on_late_reply(|_| Some(("tasks/cancel", serde_json::json!({}))))
        };
        hear(registered(
            &link,
            RequestOptions::new(),
            Duration::from_secs(60),
        ))
        .detach();
        let after = hear(registered(
            &link,
            RequestOptions::new(),
            Duration::from_secs(60),
        ));
        assert_eq!(link.late_len(), 1);
        link.fail_all();
        assert_eq!(link.late_len(), 0, "the link's end kept a late entry");
        after.detach();
        assert_eq!(link.late_len(), 0, "a give-up on a dead link kept one");
    }

    /// Issue 47, item 5: `wait_unless` waits like `wait`, so progress
    /// restarts its timeout when `reset_timeout_on_progress` asks for it
    /// (its deadline was fixed at the start: the call timed out after
    /// 1 s of five progress notifications 400 ms apart).
    #[test]
    fn wait_unless_restarts_the_timeout_on_progress() {
        use std::io::Write;
        let options = ClientBuilder::default().trace(|_| {});
        let (link, mut server_writes, _written) = over_pipes(&options);
        let (seen_tx, seen) = crossbeam_channel::unbounded();
        let options = RequestOptions::new()
            .timeout(Duration::from_secs(1))
            .reset_timeout_on_progress(Duration::from_secs(60))
            .on_progress(move |p| {
                let _ = seen_tx.send(p.progress);
            });
        let call = registered(&link, options, Duration::from_secs(60));
        let id = call.id().clone();
        let server = thread::spawn(move || {
            for n in 1..=5 {
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":{id},\"progress\":{n}}}}}\n"
                );
                server_writes.write_all(line.as_bytes()).unwrap();
                thread::sleep(Duration::from_millis(400));
            }
            let reply =
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"done\":true}}}}\n");
            server_writes.write_all(reply.as_bytes()).unwrap();
            server_writes
        });
        let started = Instant::now();
        let reply = call.wait_unless(|| false);
        let took = started.elapsed();
        let _server_writes = server.join().unwrap();
        assert_eq!(
            reply.map(|r| r.get().to_owned()).ok().as_deref(),
            Some("{\"done\":true}"),
            "after {took:?}"
        );
        assert_eq!(
            seen.try_iter().collect::<Vec<_>>(),
            [1.0, 2.0, 3.0, 4.0, 5.0]
        );
    }

    /// Issue 47, item 5: `reset_timeout_on_progress(max)` never waits past
    /// `max` in all, even when no progress comes and the timeout is longer
    /// (the first deadline was the timeout's: a call without progress
    /// waited 5 s past a `max` of 300 ms).
    #[test]
    fn reset_timeout_on_progress_caps_a_call_without_progress() {
        let options = ClientBuilder::default().trace(|_| {});
        let (link, _server_writes, written) = over_pipes(&options);
        let options = RequestOptions::new()
            .timeout(Duration::from_secs(5))
            .reset_timeout_on_progress(Duration::from_millis(300));
        let call = registered(&link, options, Duration::from_secs(60));
        let id = call.id().clone();
        let started = Instant::now();
        let outcome = call.wait();
        let took = started.elapsed();
        assert!(matches!(outcome, Err(Error::Timeout)), "{outcome:?}");
        assert!(took < Duration::from_secs(2), "timed out after {took:?}");
        let cancel = written.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(cancel["method"], "notifications/cancelled");
        assert_eq!(cancel["params"]["requestId"], id.to_value());
    }
}
