//! The reader's side of a [`Link`]: what becomes of each line the server
//! writes.
//!
//! A response goes to the request (or subscription) it answers, a tagged
//! notification to its subscription, progress to the request whose token
//! it names, a log message to the request the spec ties it to or else to
//! the client, a legacy server's request to the input handlers. Nothing is
//! lost without a word: a response that cannot be read (malformed, or
//! longer than the line limit) still fails the request it answers at once,
//! whenever its id can be read (see `envelope_scan`), instead of leaving
//! the caller to its timeout; anything else that cannot be used is noted
//! as a problem.

use std::io::BufRead;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Delivery, Held, Link, Pending, SubscriptionDelivery, SubscriptionSink};
#[cfg(feature = "legacy")]
use crate::client::legacy_listen;
use crate::client::wire::WireDirection;
use crate::envelope_scan::{Envelope, EnvelopeScan};
use crate::error::Error;
use crate::jsonrpc::{ErrorObject, RequestId, encode_error};
use crate::note_limiter::NoteLimiter;
use crate::sync::lock;
use crate::transport::{Line, read_line, too_long_error};
#[cfg(feature = "legacy")]
use crate::types::SubscriptionFilter;
use crate::types::{
    LoggingMessageNotificationParams, ProgressNotificationParams, meta_key, method,
};

impl Link {
    /// The reader thread: routes every line the server writes until its
    /// output ends, then fails everything still waiting.
    ///
    /// It stops at the first line read once the link is dead
    /// (`Link::fail_all`: `Client::close`, or a restart's probe that a
    /// close ended): after `close` returns, what the server's output still
    /// carries (a grandchild of the server holds it and writes) reaches no
    /// hook of the application's and starts no thread. A line read just
    /// before `close` failed the link is routed, into a link that delivers
    /// nothing more.
    pub(super) fn read_loop(self: Arc<Link>, mut reader: Box<dyn BufRead + Send>, max_line: usize) {
        let mut buf = Vec::new();
        let mut notes = NoteLimiter::default();
        loop {
            let line = read_line(&mut *reader, &mut buf, max_line);
            if !self.is_alive() {
                break;
            }
            match line {
                Ok(Line::Message) => {
                    if let Some(wire) = &self.wire {
                        // A panic in it is caught: the line is still routed.
                        let _ = self
                            .notes
                            .guard("wire", || wire(WireDirection::Received, &buf));
                    }
                    self.route(&buf, &mut notes);
                }
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
        self.died();
    }

    /// Routes one line from the server (read by the reader thread, or by a
    /// carrier's, `carrier::Inbox`).
    pub(super) fn route(self: &Arc<Link>, line: &[u8], notes: &mut NoteLimiter) {
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
        if !msg.jsonrpc.is_some_and(crate::jsonrpc::is_version_2) {
            return self.unreadable(line, "it lacks \"jsonrpc\": \"2.0\"", notes);
        }
        let id = msg.id.and_then(|raw| RequestId::from_json(raw.get()));
        match (msg.method, id) {
            (Some(method), Some(id)) => self.server_request(id, method, msg.params, notes),
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
                self.route_reply(id, reply, notes);
            }
            (None, None) => notes.problem(
                &self.notes,
                "skipped a message from the server with neither method nor usable id",
            ),
        }
    }

    /// A request from the server. Spec 2026-07-28 basic/transports/stdio:
    /// a modern server MUST NOT send requests; a legacy one may, and is
    /// answered.
    #[cfg_attr(not(feature = "legacy"), allow(unused_variables))]
    fn server_request(
        self: &Arc<Link>,
        id: RequestId,
        method: String,
        params: Option<&RawValue>,
        notes: &mut NoteLimiter,
    ) {
        match lock(&self.server_requests).clone() {
            // Spec 2025-11-25 basic/utilities/ping: answered promptly, here,
            // without a thread.
            #[cfg(feature = "legacy")]
            Some(_) if method == "ping" => {
                let mut line = Vec::new();
                let _ = crate::jsonrpc::encode_result(&mut line, &id, &serde_json::json!({}));
                self.send(line);
            }
            #[cfg(feature = "legacy")]
            Some(handlers) => {
                let params = params.map_or("{}", RawValue::get).to_owned();
                self.answer_request(handlers, id, method, params);
            }
            _ => notes.problem(
                &self.notes,
                &format!("ignored a request from the server ({method}, id {id}): servers send no requests over stdio"),
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
            Some(id) if envelope.is_response() => self.route_reply(id, Err(too_large), notes),
            // A legacy server's request: it waits for an answer, so it
            // gets an error, as a server answers a request it cannot read.
            Some(id) if envelope.has_method && self.is_legacy() => {
                let mut line = Vec::new();
                encode_error(&mut line, Some(&id), &too_long_error(len, max_line));
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
                notes,
            ),
            _ => notes.problem(
                &self.notes,
                &format!("skipped a line from the server: {problem}"),
            ),
        }
    }

    /// Hands a reply to the request or subscription it answers. A reply
    /// to a request that timed out or was cancelled is dropped silently
    /// (spec 2026-07-28 basic/patterns/cancellation), unless its caller
    /// still wants to hear it ([`Link::forget_but_hear`]: then, before its
    /// end, a result goes to the caller's closure, and the request that
    /// returns is sent here, not waited for); one with an id this
    /// client never sent is dropped with a note, since the request it was
    /// meant for would otherwise only time out, unexplained.
    fn route_reply(
        &self,
        id: RequestId,
        reply: Result<Box<RawValue>, Error>,
        notes: &mut NoteLimiter,
    ) {
        let waiting = lock(&self.pending).remove(&id);
        // Taken out in a statement of its own: the closure runs, and its
        // request is sent (through the application's wire hook, which may
        // start a request, and a request sweeps `late`), without the lock.
        let late = match waiting {
            Some(_) => None,
            None => lock(&self.late).remove(&id),
        };
        if let Some(p) = waiting {
            let _ = p.tx.send(Delivery::Reply(reply));
        } else if let Some(late) = late {
            if let Ok(result) = reply
                && std::time::Instant::now() < late.until
                && let Some((method, params)) = (late.then)(&result)
            {
                let id = self.next_id();
                if let Ok(line) = crate::jsonrpc::encode_request(&id, method, &params) {
                    // Its answer, not waited for, is dropped (a request
                    // this client sent).
                    self.send(line);
                }
            }
        } else if let Some(sink) = self.listen_answered(&id) {
            sink.send(SubscriptionDelivery::Reply(reply));
        } else if !self.sent(&id) {
            notes.problem(
                &self.notes,
                &format!(
                    "skipped a response with id {id} from the server: this client sent no request with that id (a response carries its request's id exactly, a number as a number)"
                ),
            );
        }
    }

    /// The subscription a response with `id` ends: a `subscriptions/listen`
    /// still open, taken out. Never a legacy subscription: its id is the
    /// client's own and never went on the wire, and a legacy server has no
    /// response that ends it (a stray one under that id, or a guess at the
    /// client's numbering, is dropped as any answer to no request is).
    fn listen_answered(&self, id: &RequestId) -> Option<SubscriptionSink> {
        // The order `deliver_untagged` takes them in.
        #[cfg(feature = "legacy")]
        let legacy = lock(&self.legacy);
        #[cfg(feature = "legacy")]
        if legacy.contains_key(id) {
            return None;
        }
        lock(&self.subscriptions).remove(id)
    }

    /// Routes a notification from the server: a subscription's tear-down,
    /// a notification tagged with a subscription's id, an untagged change
    /// for legacy subscriptions, progress, or a log message. What waits for
    /// the application is counted in the bytes of `params`, its JSON text.
    fn route_notification(&self, method: &str, params: &str, notes: &mut NoteLimiter) {
        let bytes = params.len();
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
            return self.tear_down(&value);
        }
        // A legacy server tags nothing (2025-11-25 has no subscription
        // ids): its subscriptions are the client's own, under ids that
        // never went on the wire, and a tag that names one (a guess at the
        // client's numbering) must not reach it past its filter, nor
        // acknowledge it. Its notifications are all taken untagged.
        if !self.is_legacy()
            && let Some(sub_id) = subscription_id(&value)
        {
            return self.deliver_tagged(method, sub_id, value, bytes, notes);
        }
        #[cfg(feature = "legacy")]
        if self.deliver_untagged(method, &value, bytes, notes) {
            return;
        }
        match method {
            method::NOTIFICATION_PROGRESS => self.route_progress(value, bytes),
            method::NOTIFICATION_MESSAGE => {
                let Ok(log) = serde_json::from_value::<LoggingMessageNotificationParams>(value)
                else {
                    return;
                };
                self.route_log(log, bytes);
            }
            _ => {}
        }
    }

    /// A `notifications/cancelled` from the server. Spec 2026-07-28
    /// basic/patterns/cancellation: a modern server sends this only to tear
    /// down a subscription stream. A legacy server cancels one of its own
    /// requests (spec 2025-11-25 basic/utilities/cancellation: a
    /// cancellation names a request "previously issued in the same
    /// direction"), never a subscription: those are the client's own, under
    /// ids that never go on the wire, which the server's ids may equal.
    fn tear_down(&self, params: &Value) {
        let Some(id) = params.get("requestId").and_then(RequestId::from_value) else {
            return;
        };
        if self.is_legacy() {
            #[cfg(feature = "legacy")]
            self.cancel_answer(&id);
            return;
        }
        if let Some(sink) = lock(&self.subscriptions).remove(&id) {
            sink.send(SubscriptionDelivery::TornDown);
        }
    }

    /// Hands a notification tagged with `sub_id` to its subscription, or
    /// ends it if the application left more than the line limit of its
    /// events unread ([`Link::overflowed`]).
    fn deliver_tagged(
        &self,
        method: &str,
        sub_id: RequestId,
        params: Value,
        bytes: usize,
        notes: &mut NoteLimiter,
    ) {
        let mut subs = lock(&self.subscriptions);
        let Some(sink) = subs.get_mut(&sub_id) else {
            // A notification sent before the server read the
            // cancellation of its subscription: routine.
            return self.notes.info(&format!(
                "dropped {method} for unknown subscription {sub_id}"
            ));
        };
        // A listen is acknowledged once on a connection (spec 2026-07-28
        // basic/patterns/subscriptions: the ack is the first message that
        // carries its id). A second restarted nothing: delivered, it would
        // read as `Resubscribed` (a restart sent the listen again, on a
        // new connection) and replace what was accepted.
        if method == method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED {
            if sink.acknowledged {
                drop(subs);
                return notes.problem(
                    &self.notes,
                    &format!(
                        "skipped a second acknowledgment of subscription {sub_id} from the server"
                    ),
                );
            }
            sink.acknowledged = true;
        }
        if sink.notify(method, params, bytes, self.max_line) {
            return;
        }
        subs.remove(&sub_id);
        drop(subs);
        // Spec 2026-07-28 basic/patterns/subscriptions, "Cancellation": the
        // client cancels a subscription with `notifications/cancelled`
        // referencing the `subscriptions/listen` request id.
        self.send_cancelled(
            &sub_id,
            Some("the client's application did not read its events"),
        );
        self.overflowed(&sub_id, "it was cancelled at the server", notes);
    }

    /// Notes a subscription that ended because the application did not
    /// read its events.
    fn overflowed(&self, sub_id: &RequestId, how: &str, notes: &mut NoteLimiter) {
        notes.problem(
            &self.notes,
            &format!(
                "ended subscription {sub_id}: the application did not read its events, and more than {} bytes of them waited (the line limit, max_line_bytes); {how}",
                self.max_line
            ),
        );
    }

    /// Hands a `notifications/progress` to the request whose token it
    /// names; anything else is dropped.
    fn route_progress(&self, params: Value, bytes: usize) {
        let Ok(progress) = serde_json::from_value::<ProgressNotificationParams>(params) else {
            return;
        };
        let pending = lock(&self.pending);
        let target = pending
            .iter()
            .find(|(_, p)| p.progress_token.as_ref() == Some(&progress.progress_token));
        if let Some((id, p)) = target {
            self.deliver(id, p, bytes, |held| Delivery::Progress(progress, held));
        }
    }

    /// Hands a progress or log message of `bytes` to the request `id`,
    /// unless more than the line limit of them wait for its caller already
    /// (it has not waited yet, or its callbacks are slow): then it is
    /// dropped, and the first one dropped is noted. The reader never waits
    /// for a caller.
    fn deliver(
        &self,
        id: &RequestId,
        pending: &Pending,
        bytes: usize,
        delivery: impl FnOnce(Held) -> Delivery,
    ) {
        match pending.backlog.hold(bytes, self.max_line) {
            Some(held) => {
                let _ = pending.tx.send(delivery(held));
            }
            None if pending.backlog.first_overflow() => self.notes.problem(&format!(
                "dropped progress and log messages for request {id}: its caller did not take them, and more than {} bytes of them waited (the line limit, max_line_bytes); more are dropped while that many wait",
                self.max_line
            )),
            None => {}
        }
    }

    /// Routes a `notifications/message`: to a request's log callback only
    /// when the spec ties the message to it, else to the client.
    ///
    /// Modern era (spec 2026-07-28 server/utilities/logging): a server
    /// sends log messages only for a request that set
    /// `io.modelcontextprotocol/logLevel`, and stdio carries no request id
    /// for them, so a message belongs to the request that asked for logs
    /// when exactly one in flight did. Not when the client's requests are
    /// many callers' (a proxy's, `Notes::many_callers`): a server may log
    /// where it was not asked, beside another request or late, after the
    /// answer to the call that caused it (issue 47, item 12; review-47h),
    /// and no rule of timing tells such a message from the one request's
    /// own; one caller must never read another's, so there a message
    /// belongs to no request. Legacy era: the level is set for the whole
    /// session (`logging/setLevel`), and messages belong to no request.
    /// Everything else goes to the client-level callback
    /// (`ClientBuilder::on_log`), or to the trace as information.
    fn route_log(&self, log: LoggingMessageNotificationParams, bytes: usize) {
        if !self.is_legacy() && !self.notes.many_callers() {
            let pending = lock(&self.pending);
            let mut asking = pending.iter().filter(|(_, p)| p.wants_logs);
            if let (Some((id, p)), None) = (asking.next(), asking.next()) {
                return self.deliver(id, p, bytes, |held| Delivery::Log(log, held));
            }
        }
        self.notes.log(&log);
    }

    #[cfg(feature = "legacy")]
    /// Hands an untagged change notification to every legacy subscription
    /// that wants it; `false` if it is not a change notification. A
    /// subscription whose events the application left unread past the line
    /// limit ends, and its URIs no other subscription wants are
    /// unsubscribed (a legacy server has no cancellation of it).
    fn deliver_untagged(
        &self,
        method: &str,
        params: &Value,
        bytes: usize,
        notes: &mut NoteLimiter,
    ) -> bool {
        if !legacy_listen::is_change(method) {
            return false;
        }
        let mut legacy = lock(&self.legacy);
        let mut subs = lock(&self.subscriptions);
        let mut overflowed = Vec::new();
        for (id, filter) in legacy.iter() {
            let Some(sink) = subs.get(id) else { continue };
            if legacy_listen::wants(filter, method, params)
                && !sink.notify(method, params.clone(), bytes, self.max_line)
            {
                overflowed.push(id.clone());
            }
        }
        // Forgotten under the locks, unsubscribed after them:
        // `legacy_listen::close` asks which URIs the others still want.
        let ended: Vec<(RequestId, SubscriptionFilter)> = overflowed
            .into_iter()
            .filter_map(|id| {
                subs.remove(&id);
                legacy.remove(&id).map(|filter| (id, filter))
            })
            .collect();
        drop((legacy, subs));
        for (id, filter) in ended {
            legacy_listen::close(self, &filter);
            let how = "its resources no other subscription wants were unsubscribed";
            self.overflowed(&id, how, notes);
        }
        true
    }
}

/// The subscription a notification is tagged with
/// (`_meta.io.modelcontextprotocol/subscriptionId`), if any.
fn subscription_id(params: &Value) -> Option<RequestId> {
    params
        .get("_meta")
        .and_then(|m| m.get(meta_key::SUBSCRIPTION_ID))
        .and_then(RequestId::from_value)
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
