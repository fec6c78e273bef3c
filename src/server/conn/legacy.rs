//! A connection's legacy (initialize-era) side: its session, the requests
//! only that era has, its untagged notifications, and the server's own
//! requests to the client (asks, see `legacy::input`) with their answers.
//!
//! A request waiting for the client's answers is parked: it keeps its pool
//! thread but gives its slot to the requests queued behind it. Why: if such
//! requests filled the slots, the queued ones would fill the queue, the
//! reader would stop, and the answers behind them in the input would never
//! be read. At most `max_running` requests may be parked; past that an ask
//! is refused and its request fails.

use std::sync::Arc;

use crossbeam_channel::Receiver;
use serde_json::json;
use serde_json::value::RawValue;

use super::{Ask, Conn};
use crate::jsonrpc::{ErrorObject, RequestId, encode_notification};
use crate::server::event::{AskFailed, AskReply, ServerEvent};
use crate::server::legacy::session::{LegacyRequest, LegacySession, initialize_result};
use crate::types::method;

impl Conn {
    /// The legacy session, if a client opened one.
    pub fn session(&self) -> Option<Arc<LegacySession>> {
        self.legacy.session.clone()
    }

    /// Serves this connection under `session` (Streamable HTTP: each POST
    /// is a connection, and its session comes from `Mcp-Session-Id`).
    #[cfg(feature = "http")]
    pub fn set_session(&mut self, session: Arc<LegacySession>) {
        self.legacy.session = Some(session);
    }

    /// `notifications/initialized`: list changes may go to the session.
    pub fn mark_initialized(&mut self) {
        if let Some(session) = &mut self.legacy.session {
            Arc::make_mut(session).initialized = true;
        }
    }

    /// Request `request` (sequence `seq`) asks the client with `line`, a
    /// request of the server's own with id `id`: written, and its answer
    /// will come on the returned channel. Refused for a request no longer
    /// in flight (cancelled: nothing more is sent for it), while shutting
    /// down, and past `max_running` parked requests.
    pub fn ask(
        &mut self,
        request: &RequestId,
        seq: u64,
        id: RequestId,
        line: &[u8],
    ) -> Result<Receiver<AskReply>, AskFailed> {
        if self.stopping || !self.in_flight.is_current(request, seq) {
            return Err(AskFailed::Closed);
        }
        let max = self.inner.config.max_running;
        if !self.in_flight.park(request, seq, max) {
            return Err(AskFailed::Refused(ErrorObject::internal_error(format!(
                "too many requests already wait for this client's answers (at most {max})"
            ))));
        }
        self.start_queued();
        let (reply, answer) = crossbeam_channel::bounded(1);
        let request = request.clone();
        self.legacy.asks.insert(
            id,
            Ask {
                reply,
                request,
                seq,
            },
        );
        self.write(line.to_vec());
        Ok(answer)
    }

    /// The asks `ids` will not be awaited any more (their request failed
    /// or was cancelled): each still open is cancelled at the client.
    pub fn withdraw(&mut self, ids: &[RequestId]) {
        for id in ids {
            if let Some(ask) = self.legacy.asks.remove(id) {
                self.in_flight.unpark(&ask.request, ask.seq);
                self.write_ask_cancelled(id);
            }
        }
    }

    /// Whether ask `id` awaits the client's answer here (Streamable HTTP:
    /// a legacy session looks for the POST that asked, see `http::sessions`).
    #[cfg(feature = "http")]
    pub fn is_asking(&self, id: &RequestId) -> bool {
        self.legacy.asks.contains_key(id)
    }

    /// A response from the client: the answer to an ask. Returns whether
    /// it answered one (the caller notes one that did not).
    pub fn answer(
        &mut self,
        id: Option<&RequestId>,
        reply: Result<Box<RawValue>, ErrorObject>,
    ) -> bool {
        let Some(ask) = id.and_then(|id| self.legacy.asks.remove(id)) else {
            return false;
        };
        self.in_flight.unpark(&ask.request, ask.seq);
        let _ = ask.reply.send(reply.map_err(AskFailed::Client));
        true
    }

    /// Request `seq` was cancelled: its open asks are cancelled at the
    /// client, and its handler, which waits for them, stops waiting.
    pub(super) fn withdraw_asks_of(&mut self, seq: u64) {
        let asks = self.legacy.asks.extract_if(|_, ask| ask.seq == seq);
        let ids: Vec<RequestId> = asks.map(|(id, _)| id).collect();
        for id in ids {
            self.write_ask_cancelled(&id);
        }
    }

    /// Request `seq` was answered: asks it left open are answered to
    /// nobody.
    pub(super) fn forget_asks_of(&mut self, seq: u64) {
        self.legacy.asks.retain(|_, ask| ask.seq != seq);
    }

    /// Shutting down: no answer will come, so the handlers waiting for one
    /// stop waiting (their asks fail) and hold their slots again.
    pub(super) fn drop_asks(&mut self) {
        self.legacy.asks.clear();
        self.in_flight.unpark_all();
    }

    fn write_ask_cancelled(&mut self, id: &RequestId) {
        let mut line = Vec::with_capacity(96);
        let params = json!({ "requestId": id, "reason": "the request was cancelled" });
        if encode_notification(&mut line, method::NOTIFICATION_CANCELLED, &params).is_ok() {
            self.write(line);
        }
    }

    /// The session's notifications go out on its GET stream (Streamable
    /// HTTP, see `http::sessions`), so none goes out here: a message is
    /// sent on one stream only.
    #[cfg(feature = "http")]
    pub fn notify_elsewhere(&mut self) {
        self.legacy.notified_elsewhere = true;
    }

    /// A request of the legacy session (see [`LegacySession::apply`]).
    pub fn legacy_request(&mut self, id: &RequestId, request: LegacyRequest) {
        let max = self.inner.config.max_subscriptions;
        let reply = match request {
            LegacyRequest::Initialize(session) => {
                let result = initialize_result(&self.inner, &session);
                self.legacy.session = Some(Arc::new(*session));
                Ok(result)
            }
            other => match &mut self.legacy.session {
                Some(session) => Arc::make_mut(session).apply(other, max),
                None => Ok(json!({})),
            },
        };
        let mut line = Vec::with_capacity(256);
        match reply {
            // Plain data into a Vec: encoding cannot fail.
            Ok(reply) => drop(crate::jsonrpc::encode_result(&mut line, id, &reply)),
            Err(error) => crate::jsonrpc::encode_error(&mut line, Some(id), &error),
        }
        self.write(line);
    }

    /// A published event for the legacy session, if it is one it hears of
    /// (and hears here).
    pub(super) fn publish_legacy(&mut self, event: &ServerEvent) {
        if self.legacy.notified_elsewhere {
            return;
        }
        if let Some(line) = self
            .legacy
            .session
            .as_ref()
            .and_then(|s| s.notification(event))
        {
            self.write(line.into_bytes());
        }
    }
}
