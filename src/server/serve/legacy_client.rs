//! The owner's side of a legacy client: the requests of its session
//! (`initialize`, `logging/setLevel`, `resources/subscribe`), the untagged
//! notifications it gets, and the server's own requests to it (asks, see
//! `legacy::input`), routed to the handlers that wait for their answers.
//!
//! A request waiting for the client's answers is parked: it keeps its
//! worker thread but gives its place among `max_running` to the requests
//! queued behind it. Why: if such requests filled the pool, the queued ones
//! would fill the read-ahead, the reader would stop, and the answers behind
//! them in the input would never be read. At most `max_running` requests
//! may be parked; past that an ask is refused and its request fails.

use crossbeam_channel::Sender;
use serde_json::json;
use serde_json::value::RawValue;

use super::Owner;
use crate::jsonrpc::{ErrorObject, RequestId, encode_notification};
use crate::server::event::{AskFailed, AskReply, ServerEvent};
use crate::server::legacy::{self, LegacyRequest};
use crate::types::method;

impl Owner {
    /// A handler asks the client: the ask is written and its answer
    /// awaited, unless the server is stopping or too many requests wait.
    pub(super) fn on_ask(
        &mut self,
        id: RequestId,
        line: Vec<u8>,
        reply: Sender<AskReply>,
        seq: u64,
        stopping: bool,
    ) {
        let max = self.inner.config.max_running;
        if stopping {
            // Dropping `reply` fails the request.
        } else if self.parked.len() >= max && !self.parked.contains_key(&seq) {
            let error = ErrorObject::internal_error(format!(
                "too many requests already wait for this client's answers (at most {max})"
            ));
            let _ = reply.send(Err(AskFailed::Refused(error)));
        } else {
            self.asks.insert(id, (reply, seq));
            self.park(seq);
            self.write(&line);
        }
    }

    /// The request that made an ask was cancelled: cancel the ask at the
    /// client.
    pub(super) fn on_ask_withdrawn(&mut self, id: RequestId) {
        let Some((_, seq)) = self.asks.remove(&id) else {
            return;
        };
        self.unpark(seq);
        let mut line = Vec::with_capacity(96);
        let params = json!({ "requestId": id, "reason": "the request was cancelled" });
        if encode_notification(&mut line, method::NOTIFICATION_CANCELLED, &params).is_ok() {
            self.write(&line);
        }
    }

    /// A response from the client: the answer to an ask, or to nothing.
    pub(super) fn on_response(
        &mut self,
        id: Option<RequestId>,
        reply: Result<Box<RawValue>, ErrorObject>,
    ) {
        match id.as_ref().and_then(|id| self.asks.remove(id)) {
            Some((waiting, seq)) => {
                self.unpark(seq);
                let _ = waiting.send(reply.map_err(AskFailed::Client));
            }
            None => {
                let id = id.map_or_else(|| "null".to_owned(), |id| id.to_string());
                self.inner.trace(&format!(
                    "ignoring a response (id {id}) from the client: it answers no request of this server"
                ));
            }
        }
    }

    /// Request `seq` finished: asks it left open (one was refused) are
    /// answered to nobody.
    pub(super) fn forget_asks_of(&mut self, seq: u64) {
        if self.parked.remove(&seq).is_some() {
            self.running += 1;
            self.asks.retain(|_, (_, asker)| *asker != seq);
        }
    }

    /// Stopping: no answer will come, so the handlers waiting for one
    /// finish now (their asks fail).
    pub(super) fn drop_asks(&mut self) {
        self.asks.clear();
        self.running += self.parked.len();
        self.parked.clear();
    }

    /// Request `seq` asked the client: with its first open ask it gives
    /// its place among `max_running` to a waiting request.
    fn park(&mut self, seq: u64) {
        let open = self.parked.entry(seq).or_insert(0);
        *open += 1;
        if *open == 1 {
            self.running -= 1;
            self.start_waiting();
        }
    }

    /// An ask of request `seq` was answered or withdrawn: with its last
    /// one it counts as running again (for a moment past `max_running`).
    fn unpark(&mut self, seq: u64) {
        if let Some(open) = self.parked.get_mut(&seq) {
            *open -= 1;
            if *open == 0 {
                self.parked.remove(&seq);
                self.running += 1;
            }
        }
    }

    /// A request of the legacy session: `initialize` opens it (again),
    /// `ping` is answered, the others change it.
    pub(super) fn on_legacy(&mut self, id: &RequestId, request: LegacyRequest) {
        let reply = match request {
            LegacyRequest::Ping => json!({}),
            LegacyRequest::Initialize(session) => {
                let result = legacy::initialize_result(&self.inner, &session);
                self.legacy = Some(*session);
                result
            }
            LegacyRequest::SetLevel(level) => {
                if let Some(session) = &mut self.legacy {
                    session.log_level = Some(level);
                }
                serde_json::json!({})
            }
            LegacyRequest::Subscribe(uri) => {
                let max = self.inner.config.max_subscriptions;
                if !self.inner.accepts_uri(&uri) {
                    // 2025-11-25 server/resources, "Error Handling".
                    let error = ErrorObject::new(-32002, "Resource not found")
                        .with_data(json!({ "uri": uri }));
                    return self.write_error_line(Some(id), &error);
                }
                if let Some(session) = &mut self.legacy {
                    if session.subscribed.len() >= max && !session.subscribed.contains(&uri) {
                        let error = ErrorObject::internal_error(format!(
                            "too many resource subscriptions on this connection (at most {max}): unsubscribe from one first"
                        ))
                        .with_data(json!({ "limit": max }));
                        return self.write_error_line(Some(id), &error);
                    }
                    session.subscribed.insert(uri);
                }
                serde_json::json!({})
            }
            LegacyRequest::Unsubscribe(uri) => {
                if let Some(session) = &mut self.legacy {
                    session.subscribed.remove(&uri);
                }
                serde_json::json!({})
            }
        };
        let mut line = Vec::with_capacity(256);
        // Plain data into a Vec: encoding cannot fail.
        let _ = crate::jsonrpc::encode_result(&mut line, id, &reply);
        self.write(&line);
    }

    /// A published event for the legacy session: resource updates for the
    /// URIs it subscribed to, list changes once it is initialized (without
    /// a subscription id; 2025-11-25 has none).
    pub(super) fn publish_legacy(&mut self, event: &ServerEvent) {
        let Some(session) = &self.legacy else {
            return;
        };
        let line = match event {
            ServerEvent::ResourceUpdated(uri) if session.subscribed.contains(&**uri) => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::NOTIFICATION_RESOURCES_UPDATED, "params": { "uri": &**uri } })
            }
            ServerEvent::ToolsListChanged if session.initialized => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::NOTIFICATION_TOOLS_LIST_CHANGED })
            }
            ServerEvent::PromptsListChanged if session.initialized => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::NOTIFICATION_PROMPTS_LIST_CHANGED })
            }
            ServerEvent::ResourcesListChanged if session.initialized => {
                serde_json::json!({ "jsonrpc": "2.0", "method": method::NOTIFICATION_RESOURCES_LIST_CHANGED })
            }
            _ => return,
        };
        let line = line.to_string();
        self.write(line.as_bytes());
    }
}
