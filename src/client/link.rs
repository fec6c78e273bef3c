//! One live connection to a server: a writer thread, a reader thread, and
//! the tables that route what the server sends to whoever waits for it.
//!
//! ```text
//! caller threads ──► writer channel ──► mcp-client-writer ──► server input
//! server output ──► mcp-client-reader ──► response        → pending[id]
//!                                       ──► subscriptionId  → subscriptions[id]
//!                                       ──► progress token  → pending[request of that token]
//!                                       ──► log message     → the one request that asked for logs,
//!                                                             else the client-level log callback
//! ```
//!
//! Nothing the server sends is lost without a word: a response that cannot
//! be read (malformed, or longer than the line limit) still fails the
//! request it answers at once, whenever its id can be read (see
//! `envelope_scan`), instead of leaving the caller to its timeout.
//!
//! Callers never block on the server's input: lines go through an unbounded
//! channel to the writer thread, so a timeout or a cancellation always
//! fires. Everything the reader routes is sent over channels; callbacks run
//! on the caller's thread, never on the reader.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use crossbeam_channel::{Receiver, Sender};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::client::input::InputHandlers;
use crate::client::legacy_listen::{self, LegacyFilters};
use crate::client::notes::{NoteLimiter, Notes};
use crate::client::server_requests;
use crate::envelope_scan::{Envelope, EnvelopeScan};
use crate::error::Error;
use crate::jsonrpc::{ErrorObject, RequestId, encode_error, encode_result};
use crate::transport::{Line, read_line};
use crate::types::{
    LoggingMessageNotificationParams, ProgressNotificationParams, SubscriptionFilter, meta_key,
    method,
};

/// What the reader delivers to a waiting request.
#[derive(Debug)]
pub(crate) enum Delivery {
    /// The final answer: a result object, the peer's error
    /// ([`Error::Rpc`]), or an answer that could not be read.
    Reply(Result<Box<RawValue>, Error>),
    /// A progress notification for this request.
    Progress(ProgressNotificationParams),
    /// A log message for this request.
    Log(LoggingMessageNotificationParams),
    /// The connection is gone.
    Disconnected,
}

/// What the reader delivers to a subscription.
#[derive(Debug)]
pub(crate) enum SubscriptionDelivery {
    /// A notification tagged with the subscription's id.
    Notification { method: String, params: Value },
    /// The listen request's final result (or an error answering it, or
    /// an answer that could not be read).
    Reply(Result<Box<RawValue>, Error>),
    /// The connection is gone.
    Disconnected,
    /// The connection is gone and the client is restarting the server; the
    /// listen will be sent again.
    Reconnecting,
    /// The server tore the subscription down with `notifications/cancelled`.
    TornDown,
}

struct Pending {
    tx: Sender<Delivery>,
    progress_token: Option<RequestId>,
    wants_logs: bool,
}

/// A live connection.
pub(crate) struct Link {
    /// `None` once the input was closed.
    writer: Mutex<Option<Sender<Vec<u8>>>>,
    pending: Mutex<HashMap<RequestId, Pending>>,
    subscriptions: Mutex<HashMap<RequestId, Sender<SubscriptionDelivery>>>,
    /// The subscriptions emulated on a legacy server, which get untagged
    /// notifications (see `legacy_listen`).
    legacy: Mutex<LegacyFilters>,
    alive: AtomicBool,
    /// Whether the client will restart the server when this link dies.
    pub restartable: AtomicBool,
    /// Set on a legacy connection: the handlers that answer the server's
    /// requests (see `server_requests`).
    server_requests: Mutex<Option<InputHandlers>>,
    /// Called once, by the reader, when the link dies.
    on_death: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    next_id: AtomicU64,
    notes: Notes,
}

impl Link {
    /// Starts the reader and writer threads over a byte-stream pair.
    pub fn start(
        reader: Box<dyn BufRead + Send>,
        writer: Box<dyn Write + Send>,
        max_line: usize,
        notes: Notes,
    ) -> std::io::Result<Arc<Link>> {
        let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
        let link = Arc::new(Link {
            writer: Mutex::new(Some(tx)),
            pending: Mutex::new(HashMap::new()),
            subscriptions: Mutex::new(HashMap::new()),
            legacy: Mutex::new(LegacyFilters::new()),
            alive: AtomicBool::new(true),
            restartable: AtomicBool::new(false),
            server_requests: Mutex::new(None),
            on_death: Mutex::new(None),
            next_id: AtomicU64::new(1),
            notes,
        });
        thread::Builder::new()
            .name("mcp-client-writer".into())
            .spawn(move || write_loop(writer, rx))?;
        let reading = Arc::clone(&link);
        thread::Builder::new()
            .name("mcp-client-reader".into())
            .spawn(move || reading.read_loop(reader, max_line))?;
        Ok(link)
    }

    /// A fresh id, unique among this connection's requests.
    pub fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed) as i64)
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Queues one line for the server. Fails only when the connection is
    /// gone.
    pub fn send(&self, line: Vec<u8>) -> bool {
        self.is_alive()
            && lock(&self.writer)
                .as_ref()
                .is_some_and(|w| w.send(line).is_ok())
    }

    /// Closes the server's input once everything queued is written: the
    /// writer thread drops its end.
    pub fn close_input(&self) {
        lock(&self.writer).take();
    }

    /// Registers a request before it is sent, so no reply can be missed.
    pub fn register(
        &self,
        id: &RequestId,
        progress_token: Option<RequestId>,
        wants_logs: bool,
    ) -> Receiver<Delivery> {
        let (tx, rx) = crossbeam_channel::unbounded();
        if !self.is_alive() {
            let _ = tx.send(Delivery::Disconnected);
            return rx;
        }
        let pending = Pending {
            tx,
            progress_token,
            wants_logs,
        };
        lock(&self.pending).insert(id.clone(), pending);
        // The reader may have gone between the check and the insert.
        if !self.is_alive() {
            self.fail_all();
        }
        rx
    }

    /// Forgets a request (answered, timed out or cancelled): a late reply
    /// is then dropped.
    pub fn forget(&self, id: &RequestId) {
        lock(&self.pending).remove(id);
    }

    /// Registers a subscription's delivery channel before its listen
    /// request is sent (and again on the new connection after a restart).
    pub fn adopt_subscription(&self, id: &RequestId, tx: Sender<SubscriptionDelivery>) {
        lock(&self.subscriptions).insert(id.clone(), tx);
        if !self.is_alive() {
            self.fail_all();
        }
    }

    /// Forgets a subscription; returns its accepted filter if it was a
    /// legacy one.
    pub fn forget_subscription(&self, id: &RequestId) -> Option<SubscriptionFilter> {
        lock(&self.subscriptions).remove(id);
        lock(&self.legacy).remove(id)
    }

    /// Registers a subscription emulated on a legacy server: untagged
    /// notifications that `filter` covers go to `tx`.
    pub fn adopt_legacy_subscription(
        &self,
        id: &RequestId,
        filter: SubscriptionFilter,
        tx: Sender<SubscriptionDelivery>,
    ) {
        lock(&self.legacy).insert(id.clone(), filter);
        self.adopt_subscription(id, tx);
    }

    /// Narrows a legacy subscription's filter to what was accepted.
    pub fn set_legacy_filter(&self, id: &RequestId, filter: SubscriptionFilter) {
        if let Some(slot) = lock(&self.legacy).get_mut(id) {
            *slot = filter;
        }
    }

    /// Whether an open legacy subscription still wants updates of `uri`.
    pub fn legacy_uri_wanted(&self, uri: &str) -> bool {
        lock(&self.legacy)
            .values()
            .any(|f| f.resource_subscriptions.iter().flatten().any(|u| u == uri))
    }

    /// Marks the connection dead and fails everything waiting on it.
    pub fn fail_all(&self) {
        self.alive.store(false, Ordering::Release);
        let pending: Vec<Pending> = lock(&self.pending).drain().map(|(_, p)| p).collect();
        for p in pending {
            let _ = p.tx.send(Delivery::Disconnected);
        }
        lock(&self.legacy).clear();
        let subs: Vec<_> = lock(&self.subscriptions).drain().map(|(_, s)| s).collect();
        let restarting = self.restartable.load(Ordering::Acquire);
        for s in subs {
            let _ = s.send(if restarting {
                SubscriptionDelivery::Reconnecting
            } else {
                SubscriptionDelivery::Disconnected
            });
        }
    }

    /// Answers the server's requests from now on (a legacy connection).
    pub fn answer_server_requests(&self, handlers: InputHandlers) {
        *lock(&self.server_requests) = Some(handlers);
    }

    /// Whether this is a legacy (`initialize`) connection: only those
    /// answer the server's requests.
    fn is_legacy(&self) -> bool {
        lock(&self.server_requests).is_some()
    }

    /// Answers a legacy server's request on a thread of its own: a handler
    /// may block on a user, and the reader must go on reading.
    fn answer_request(
        self: &Arc<Link>,
        handlers: InputHandlers,
        id: RequestId,
        request: String,
        params: String,
    ) {
        let link = Arc::clone(self);
        let answering = thread::Builder::new()
            .name("mcp-client-answer".into())
            .spawn(move || {
                let mut line = Vec::new();
                match server_requests::answer(&handlers, &request, &params) {
                    Ok(result) => {
                        let _ = encode_result(&mut line, &id, &result);
                    }
                    Err(error) => encode_error(&mut line, Some(&id), &error),
                }
                link.send(line);
            });
        if answering.is_err() {
            self.notes
                .problem("could not start a thread to answer the server's request");
        }
    }

    /// Sets what the reader calls when the link dies.
    pub fn on_death(&self, callback: Box<dyn FnOnce() + Send>) {
        *lock(&self.on_death) = Some(callback);
    }

    fn read_loop(self: Arc<Link>, mut reader: Box<dyn BufRead + Send>, max_line: usize) {
        let mut buf = Vec::new();
        let mut notes = NoteLimiter::default();
        loop {
            match read_line(&mut *reader, &mut buf, max_line) {
                Ok(Line::Message) => self.route(&buf, &mut notes),
                Ok(Line::TooLong { len, envelope }) => {
                    self.too_long(len, max_line, envelope, &mut notes);
                }
                Ok(Line::Eof) | Err(_) => break,
            }
            if buf.capacity() > 64 * 1024 {
                buf = Vec::new();
            }
        }
        self.fail_all();
        if let Some(callback) = lock(&self.on_death).take() {
            callback();
        }
    }

    /// Routes one line from the server.
    fn route(self: &Arc<Link>, line: &[u8], notes: &mut NoteLimiter) {
        #[derive(Deserialize)]
        struct Message<'a> {
            #[serde(default, borrow)]
            jsonrpc: Option<&'a RawValue>,
            #[serde(default, borrow)]
            id: Option<&'a RawValue>,
            #[serde(default)]
            method: Option<String>,
            #[serde(default, borrow)]
            params: Option<&'a RawValue>,
            #[serde(default, borrow)]
            result: Option<&'a RawValue>,
            #[serde(default, borrow)]
            error: Option<&'a RawValue>,
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|e| format!("it is not UTF-8: {e}"))
            .and_then(|text| {
                serde_json::from_str::<Message<'_>>(text)
                    .map_err(|e| format!("it is not JSON-RPC: {e}"))
            });
        let msg = match parsed {
            Ok(msg) => msg,
            Err(problem) => return self.unreadable(line, &problem, notes),
        };
        if !msg.jsonrpc.is_some_and(crate::incoming::is_version_2) {
            return self.unreadable(line, "it lacks \"jsonrpc\": \"2.0\"", notes);
        }
        let id = msg.id.and_then(|raw| RequestId::from_json(raw.get()));
        match (msg.method, id) {
            (Some(method), Some(id)) => {
                // Spec 2026-07-28 basic/transports/stdio: a modern server
                // MUST NOT send requests; a legacy one may, and is answered.
                match lock(&self.server_requests).clone() {
                    Some(handlers) => {
                        let params = msg.params.map_or("{}", RawValue::get).to_owned();
                        self.answer_request(handlers, id, method, params);
                    }
                    None => notes.problem(
                        &self.notes,
                        &format!("ignored a request from the server ({method}, id {id}): servers send no requests over stdio"),
                    ),
                }
            }
            (Some(method), None) => {
                let params = msg.params.map(RawValue::get).unwrap_or("{}");
                self.route_notification(&method, params, notes);
            }
            (None, Some(id)) => {
                let reply = read_reply(msg.result, msg.error).unwrap_or_else(|problem| {
                    Err(Error::Protocol(format!(
                        "the server's response to request {id} is malformed: {problem}"
                    )))
                });
                self.route_reply(id, reply);
            }
            (None, None) => notes.problem(
                &self.notes,
                "skipped a message from the server with neither method nor usable id",
            ),
        }
    }

    /// A line longer than the limit, dropped unread: what its envelope
    /// says it was still gets its answer.
    fn too_long(&self, len: usize, max_line: usize, envelope: Envelope, notes: &mut NoteLimiter) {
        let too_large = Error::MessageTooLarge {
            size: len,
            limit: max_line,
        };
        match envelope.id {
            // The answer to a request: that request fails now, and is not
            // cancelled (it was answered).
            Some(id) if envelope.is_response() => self.route_reply(id, Err(too_large)),
            // A legacy server's request: it waits for an answer, so it
            // gets an error, as a server answers a request it cannot read.
            Some(id) if envelope.has_method && self.is_legacy() => {
                let mut line = Vec::new();
                let error = ErrorObject::invalid_request(format!(
                    "message of {len} bytes exceeds the maximum line length of {max_line} bytes"
                ));
                encode_error(&mut line, Some(&id), &error);
                self.send(line);
                notes.problem(
                    &self.notes,
                    &format!("refused a request of {len} bytes from the server (id {id}): longer than {max_line}"),
                );
            }
            _ => notes.problem(
                &self.notes,
                &format!("skipped a line of {len} bytes from the server: longer than {max_line}"),
            ),
        }
    }

    /// A line that is not a JSON-RPC message. If it is still a response
    /// whose id can be read, the request it answers fails now with what
    /// was wrong; anything else is noted and skipped.
    fn unreadable(&self, line: &[u8], problem: &str, notes: &mut NoteLimiter) {
        let mut scan = EnvelopeScan::new();
        scan.feed(line);
        let envelope = scan.finish();
        match envelope.id {
            Some(id) if envelope.is_response() => self.route_reply(
                id.clone(),
                Err(Error::Protocol(format!(
                    "the server's response to request {id} could not be read: {problem}"
                ))),
            ),
            _ => notes.problem(
                &self.notes,
                &format!("skipped a line from the server: {problem}"),
            ),
        }
    }

    /// Hands a reply to the request or subscription it answers. A reply
    /// to a request that timed out or was cancelled is dropped silently
    /// (spec 2026-07-28 basic/patterns/cancellation); ids this client never
    /// sent land there too.
    fn route_reply(&self, id: RequestId, reply: Result<Box<RawValue>, Error>) {
        if let Some(p) = lock(&self.pending).remove(&id) {
            let _ = p.tx.send(Delivery::Reply(reply));
        } else if let Some(tx) = lock(&self.subscriptions).remove(&id) {
            let _ = tx.send(SubscriptionDelivery::Reply(reply));
        }
    }

    fn route_notification(&self, method: &str, params: &str, notes: &mut NoteLimiter) {
        let value: Value = match serde_json::from_str(params) {
            Ok(value) => value,
            Err(e) => {
                return notes.problem(
                    &self.notes,
                    &format!("skipped {method} from the server: its params are not JSON: {e}"),
                );
            }
        };
        if method == method::NOTIFICATION_CANCELLED {
            // Spec 2026-07-28 basic/patterns/cancellation: a server sends
            // this only to tear down a subscription stream.
            let id = value.get("requestId").and_then(RequestId::from_value);
            if let Some(tx) = id.and_then(|id| lock(&self.subscriptions).remove(&id)) {
                let _ = tx.send(SubscriptionDelivery::TornDown);
            }
            return;
        }
        if let Some(sub_id) = value
            .get("_meta")
            .and_then(|m| m.get(meta_key::SUBSCRIPTION_ID))
            .and_then(RequestId::from_value)
        {
            let subs = lock(&self.subscriptions);
            match subs.get(&sub_id) {
                Some(tx) => {
                    let _ = tx.send(SubscriptionDelivery::Notification {
                        method: method.to_owned(),
                        params: value,
                    });
                }
                // A notification sent before the server read the
                // cancellation of its subscription: routine.
                None => self.notes.info(&format!(
                    "dropped {method} for unknown subscription {sub_id}"
                )),
            }
            return;
        }
        if self.deliver_untagged(method, &value) {
            return;
        }
        match method {
            method::NOTIFICATION_PROGRESS => {
                let Ok(progress) = serde_json::from_value::<ProgressNotificationParams>(value)
                else {
                    return;
                };
                let pending = lock(&self.pending);
                let target = pending
                    .values()
                    .find(|p| p.progress_token.as_ref() == Some(&progress.progress_token));
                if let Some(p) = target {
                    let _ = p.tx.send(Delivery::Progress(progress));
                }
            }
            method::NOTIFICATION_MESSAGE => {
                let Ok(log) = serde_json::from_value::<LoggingMessageNotificationParams>(value)
                else {
                    return;
                };
                self.route_log(log);
            }
            _ => {}
        }
    }
}

impl Link {
    /// Routes a `notifications/message`: to a request's log callback only
    /// when the spec ties the message to it, else to the client.
    ///
    /// Modern era (spec 2026-07-28 server/utilities/logging): a server
    /// sends log messages only for a request that set
    /// `io.modelcontextprotocol/logLevel`, and stdio carries no request id
    /// for them, so a message belongs to the request that asked for logs
    /// when exactly one in flight did. Legacy era: the level is set for the
    /// whole session (`logging/setLevel`), and messages belong to no
    /// request. Everything else goes to the client-level callback
    /// (`ClientBuilder::on_log`), or to the trace as information.
    fn route_log(&self, log: LoggingMessageNotificationParams) {
        if !self.is_legacy() {
            let pending = lock(&self.pending);
            let mut asking = pending.values().filter(|p| p.wants_logs);
            if let (Some(p), None) = (asking.next(), asking.next()) {
                let _ = p.tx.send(Delivery::Log(log));
                return;
            }
        }
        self.notes.log(&log);
    }

    /// Hands an untagged change notification to every legacy subscription
    /// that wants it; `false` if it is not a change notification.
    fn deliver_untagged(&self, method: &str, params: &Value) -> bool {
        if !legacy_listen::is_change(method) {
            return false;
        }
        let legacy = lock(&self.legacy);
        let subs = lock(&self.subscriptions);
        for (id, filter) in legacy.iter() {
            if let Some(tx) = subs
                .get(id)
                .filter(|_| legacy_listen::wants(filter, method, params))
            {
                let _ = tx.send(SubscriptionDelivery::Notification {
                    method: method.to_owned(),
                    params: params.clone(),
                });
            }
        }
        true
    }
}

fn write_loop(mut writer: Box<dyn Write + Send>, lines: Receiver<Vec<u8>>) {
    while let Ok(line) = lines.recv() {
        let mut ok = writer
            .write_all(&line)
            .and_then(|()| writer.write_all(b"\n"))
            .is_ok();
        // Write what is queued, then flush once.
        while ok {
            match lines.try_recv() {
                Ok(line) => {
                    ok = writer
                        .write_all(&line)
                        .and_then(|()| writer.write_all(b"\n"))
                        .is_ok();
                }
                Err(_) => break,
            }
        }
        if !ok || writer.flush().is_err() {
            return;
        }
    }
    // Every sender is gone: dropping the writer closes the server's input.
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads a response's outcome: a result object, or a JSON-RPC error
/// ([`Error::Rpc`]); `Err` says what makes it malformed.
fn read_reply(
    result: Option<&RawValue>,
    error: Option<&RawValue>,
) -> Result<Result<Box<RawValue>, Error>, String> {
    match (result, error) {
        // Spec 2026-07-28 basic/index: the result is an object.
        (Some(result), None) if result.get().starts_with('{') => Ok(Ok(result.to_owned())),
        (Some(result), None) => Err(format!(
            "its result is not an object: {}",
            result.get().chars().take(40).collect::<String>()
        )),
        (None, Some(error)) => match serde_json::from_str::<ErrorObject>(error.get()) {
            Ok(error) => Ok(Err(Error::Rpc(error))),
            Err(e) => Err(format!("its error is not a JSON-RPC error object: {e}")),
        },
        (Some(_), Some(_)) => Err("it has both a result and an error".into()),
        (None, None) => Err("it has neither a result nor an error".into()),
    }
}
