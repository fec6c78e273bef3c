//! The owner's side of the client's messages: a line from the reader
//! becomes a reply, a started job, an open subscription or a
//! cancellation. Jobs run inline on the owner or on the pool; past
//! `max_running` they wait in order, each holding its read-ahead credit
//! until it starts.

use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::{Owner, Waiting};
use crate::incoming::Incoming;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::Server;
use crate::server::cancel::CancelToken;
use crate::server::connections::inline;
use crate::server::context::{RequestContext, Sink};
use crate::server::dispatch::{Prepared, prepare};
use crate::server::event::PreparedLine;
use crate::server::in_flight::Entry;
use crate::server::pool::PoolJob;
use crate::server::shared_output::open_gate;
use crate::server::subscriptions::{Accepted, encode_ack};
use crate::server::work::{Job, run};
use crate::types::method;

impl Owner {
    /// One line from the reader, of `bytes` bytes. Its read-ahead credit
    /// goes back now, unless it became a request waiting for a slot.
    pub(super) fn on_line(&mut self, incoming: Incoming, bytes: usize) {
        let mut keep_credit = false;
        match incoming {
            Incoming::Request { id, method, params } => {
                keep_credit = self.on_request(id, &method, params, bytes);
            }
            Incoming::Notification { method, params } => {
                if method == method::NOTIFICATION_CANCELLED {
                    self.on_cancelled(params.as_deref().map(|p| p.get()));
                } else if method == "notifications/initialized" {
                    #[cfg(feature = "legacy")]
                    if let Some(session) = &mut self.legacy {
                        session.initialized = true;
                    }
                }
                // Spec 2026-07-28 basic/index: notifications are never
                // answered; unknown ones are ignored.
            }
            #[cfg(feature = "legacy")]
            Incoming::Response { id, reply } => self.on_response(id, reply),
            // Without the legacy era the server sends no requests of its own.
            #[cfg(not(feature = "legacy"))]
            Incoming::Response { id, .. } => {
                let id = id.map_or_else(|| "null".to_owned(), |id| id.to_string());
                self.inner.trace(&format!(
                    "ignoring a response (id {id}) from the client: it answers no request of this server"
                ));
            }
            Incoming::Invalid { id, error } => self.write_error_line(id.as_ref(), &error),
        }
        if !keep_credit {
            self.ahead.release(bytes);
        }
    }

    /// A request: refused while stopping or when its id is in use,
    /// otherwise prepared (see `dispatch`) and acted on. Returns whether
    /// it waits for a slot (and keeps its credit).
    fn on_request(
        &mut self,
        id: RequestId,
        method: &str,
        params: Option<Box<RawValue>>,
        bytes: usize,
    ) -> bool {
        if let Some(error) = self.refusal(&id) {
            self.write_error_line(Some(&id), &error);
            return false;
        }
        let prepared = self.prepare(method, params);
        self.act(id, prepared, bytes)
    }

    /// A request the reader prepared (see `direct`): acted on like one
    /// the owner prepared, unless a stop came in between.
    pub(super) fn on_prepared(&mut self, line: PreparedLine) {
        let PreparedLine {
            id,
            prepared,
            bytes,
        } = line;
        let keep_credit = match self.refusal(&id) {
            Some(error) => {
                self.write_error_line(Some(&id), &error);
                false
            }
            None => self.act(id, prepared, bytes),
        };
        if !keep_credit {
            self.ahead.release(bytes);
        }
    }

    /// Why a request with this id is refused before it is even prepared:
    /// the server is stopping, or the id is in use.
    pub(super) fn refusal(&mut self, id: &RequestId) -> Option<ErrorObject> {
        if self.deadline.is_some() || self.closed {
            return Some(ErrorObject::internal_error("the server is shutting down"));
        }
        if self.in_flight.is_busy(id) || self.subscriptions.contains(id) {
            return Some(ErrorObject::invalid_request(format!(
                "request id {id} is already in use by a request in flight"
            )));
        }
        None
    }

    /// Validates a request and turns it into a job (see `dispatch`), for
    /// this connection's era.
    pub(super) fn prepare(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Prepared, ErrorObject> {
        #[cfg(feature = "legacy")]
        return prepare(&self.inner, method, params, self.legacy.as_ref());
        #[cfg(not(feature = "legacy"))]
        prepare(&self.inner, method, params)
    }

    /// Acts on a prepared request. Returns whether it waits for a slot
    /// (and keeps its credit).
    fn act(
        &mut self,
        id: RequestId,
        prepared: Result<Prepared, ErrorObject>,
        bytes: usize,
    ) -> bool {
        match prepared {
            Ok(Prepared::Run(job)) => return self.start(id, job, bytes),
            Ok(Prepared::Listen(accepted)) => self.open_subscription(id, accepted),
            #[cfg(feature = "legacy")]
            Ok(Prepared::Legacy(request)) => self.on_legacy(&id, request),
            Err(error) => self.write_error_line(Some(&id), &error),
        }
        false
    }

    /// `subscriptions/listen`: the acknowledgment, unless the connection
    /// holds its maximum of subscriptions already.
    fn open_subscription(&mut self, id: RequestId, accepted: Accepted) {
        let max = self.inner.config.max_subscriptions;
        if self.subscriptions.len() >= max {
            let error = ErrorObject::internal_error(format!(
                "too many open subscriptions on this connection (at most {max}): cancel one first"
            ))
            .with_data(json!({ "limit": max }));
            return self.write_error_line(Some(&id), &error);
        }
        // Spec 2026-07-28 basic/patterns/subscriptions: the ack is the
        // first message carrying this id. It is written in the same step
        // that makes the subscription visible to events.
        let mut line = Vec::with_capacity(160);
        encode_ack(&mut line, &id, &accepted);
        self.subscriptions.insert(id, accepted);
        self.write(&line);
    }

    /// Starts a job: inline on this thread, or on the pool (or queued when
    /// the pool is at its cap). Returns whether the job was queued, in which
    /// case it keeps its credit until it starts.
    pub(super) fn start(&mut self, id: RequestId, job: Job, bytes: usize) -> bool {
        if job.inline {
            self.run_inline(id, job);
            return false;
        }
        // The running count must be current before it decides between the
        // pool and the queue (finished requests do not wake the owner).
        self.collect_finished();
        let seq = self.next_seq;
        self.next_seq += 1;
        let token = CancelToken::new();
        let gate = open_gate();
        let sink = Sink::Pooled {
            output: Arc::clone(&self.output),
            gate: Arc::clone(&gate),
            #[cfg(feature = "legacy")]
            inbox: self.inbox_tx.clone(),
            #[cfg(feature = "legacy")]
            seq,
        };
        let ctx = RequestContext::new(
            id.clone(),
            job.meta,
            token.clone(),
            sink,
            self.server(),
            job.retry,
        );
        let waiting = self.running >= self.inner.config.max_running;
        self.in_flight.insert(
            id,
            Entry {
                seq,
                token,
                waiting,
                gate,
            },
        );
        if waiting {
            self.waiting.push_back(Waiting {
                ctx,
                seq,
                work: job.work,
                bytes,
            });
        } else {
            self.running += 1;
            self.submit(PoolJob {
                ctx,
                seq,
                work: job.work,
            });
        }
        waiting
    }

    /// Runs an inline job to completion on this thread, then writes what it
    /// sent and published and its reply.
    fn run_inline(&mut self, id: RequestId, job: Job) {
        let ctx = RequestContext::new(
            id,
            job.meta,
            self.inline_token.clone(),
            Sink::Local(Mutex::new(Vec::new())),
            self.server(),
            job.retry,
        );
        let (reply, published) = inline::run(self.key, || run(job.work, &ctx));
        if let Sink::Local(notes) = ctx.sink() {
            let notes = std::mem::take(&mut *notes.lock().unwrap_or_else(|e| e.into_inner()));
            for note in notes {
                self.write(&note);
            }
        }
        // What the handler published takes effect before its reply and
        // before anything the client sent after it.
        for event in &published {
            self.publish(event);
        }
        // Encoded straight into the output: no copy of a large result.
        self.write_reply(reply);
    }

    /// Starts waiting requests while there is room in the pool.
    pub(super) fn start_waiting(&mut self) {
        while self.running < self.inner.config.max_running {
            let Some(Waiting {
                ctx,
                seq,
                work,
                bytes,
            }) = self.waiting.pop_front()
            else {
                return;
            };
            if self.in_flight.start(ctx.id(), seq) {
                self.ahead.release(bytes);
                self.running += 1;
                self.submit(PoolJob { ctx, seq, work });
            }
        }
    }

    /// `notifications/cancelled`: malformed or unknown ones are ignored
    /// (spec 2026-07-28 basic/patterns/cancellation, "Error Handling").
    fn on_cancelled(&mut self, params: Option<&str>) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cancelled {
            request_id: RequestId,
        }
        let Some(Cancelled { request_id }) = params.and_then(|p| serde_json::from_str(p).ok())
        else {
            return;
        };
        if let Some(entry) = self.in_flight.remove(&request_id) {
            // From here on its worker writes nothing (see `shared_output`);
            // only then is the handler told.
            self.output.lock().close_gate(&entry.gate);
            entry.token.cancel();
            if entry.waiting
                && let Some(at) = self.waiting.iter().position(|w| w.seq == entry.seq)
                && let Some(waiting) = self.waiting.remove(at)
            {
                self.ahead.release(waiting.bytes);
            }
        } else {
            // A cancelled listen ends without a final result: from here on
            // nothing carries its subscription id.
            self.subscriptions.remove(&request_id);
        }
    }

    /// The server, for a handler's context.
    fn server(&self) -> Server {
        Server {
            inner: Arc::clone(&self.inner),
        }
    }
}
