//! [`Subscription`]: the client's end of a `subscriptions/listen` stream, a
//! blocking iterator of events that ends closed or disconnected.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};

use crate::client::link::{Forgotten, Link, SubscriptionDelivery, SubscriptionSink};
use crate::client::shared::{ClientInner, stamp_for};
use crate::jsonrpc::RequestId;
use crate::sync::lock;
use crate::types::{DetailedTask, SubscriptionFilter, method};

/// One notification delivered on a subscription.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SubscriptionEvent {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated` for `uri`.
    ResourceUpdated {
        /// The resource that changed.
        uri: String,
    },
    /// The server was restarted and the subscription re-established; the
    /// server may have accepted a different filter this time.
    Resubscribed {
        /// What the new server accepted.
        accepted: SubscriptionFilter,
    },
    /// `notifications/tasks` (Tasks extension; listen with `taskIds`): the
    /// task as `tasks/get` would return it now (boxed: it is far larger
    /// than every other event).
    TaskStatus(Box<DetailedTask>),
    /// A notification of a kind this crate does not know, tagged with this
    /// subscription's id (or one of a known kind that could not be read).
    Other {
        /// Its method.
        method: String,
        /// Its params.
        params: serde_json::Value,
    },
}

/// How a subscription ended. More ways may come: match it with a `_`
/// arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubscriptionEnd {
    /// The server ended it: it answered the listen request (the graceful
    /// end), or tore it down with `notifications/cancelled`.
    Closed,
    /// The connection dropped without that answer (over HTTP: the
    /// listen's stream ended or broke before it, as when the server was
    /// killed behind a load balancer).
    Disconnected,
    /// The application did not read its events: more of them waited than
    /// the client holds for one subscription (the line limit,
    /// [`ClientBuilder::max_line_bytes`](crate::ClientBuilder::max_line_bytes),
    /// 16 MiB by default, counted in bytes of JSON), so the client
    /// cancelled it at the server (`notifications/cancelled`; on a legacy
    /// server, `resources/unsubscribe` for its resources) and noted it. It
    /// comes after every event it held; open a new subscription to go on.
    Overflowed,
}

/// A live `subscriptions/listen` stream.
///
/// [`Subscription::recv`] blocks for the next event; the iterator yields
/// events until the subscription ends, and [`Subscription::end`] then says
/// how. Cancelling or dropping it sends `notifications/cancelled` for the
/// listen id.
///
/// Events wait for the application without blocking the client's reader,
/// up to the line limit in bytes
/// ([`ClientBuilder::max_line_bytes`](crate::ClientBuilder::max_line_bytes),
/// 16 MiB by default); a subscription left unread past that ends
/// [`SubscriptionEnd::Overflowed`].
pub struct Subscription {
    pub(crate) id: Arc<Mutex<RequestId>>,
    pub(crate) link: Arc<Mutex<Arc<Link>>>,
    pub(crate) rx: Receiver<SubscriptionDelivery>,
    pub(crate) requested: SubscriptionFilter,
    pub(crate) accepted: SubscriptionFilter,
    pub(crate) end: Option<SubscriptionEnd>,
    /// Its entry among the client's live subscriptions (which a restart
    /// sends again), until it is let go.
    pub(crate) registry: Option<(Weak<ClientInner>, u64)>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id())
            .field("accepted", &self.accepted)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The id of the listen request, which tags every notification.
    pub fn id(&self) -> RequestId {
        self.id.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What the server agreed to send (its acknowledgment).
    pub fn accepted(&self) -> &SubscriptionFilter {
        &self.accepted
    }

    /// What was asked for but not accepted.
    pub fn not_accepted(&self) -> SubscriptionFilter {
        let req = &self.requested;
        let acc = &self.accepted;
        let flag = |asked: Option<bool>, got: Option<bool>| {
            (asked == Some(true) && got != Some(true)).then_some(true)
        };
        let missing = |asked: &Option<Vec<String>>, got: &Option<Vec<String>>| {
            let left: Vec<String> = asked
                .iter()
                .flatten()
                .filter(|item| !got.iter().flatten().any(|a| a == *item))
                .cloned()
                .collect();
            (!left.is_empty()).then_some(left)
        };
        SubscriptionFilter {
            tools_list_changed: flag(req.tools_list_changed, acc.tools_list_changed),
            prompts_list_changed: flag(req.prompts_list_changed, acc.prompts_list_changed),
            resources_list_changed: flag(req.resources_list_changed, acc.resources_list_changed),
            resource_subscriptions: missing(
                &req.resource_subscriptions,
                &acc.resource_subscriptions,
            ),
            task_ids: missing(&req.task_ids, &acc.task_ids),
        }
    }

    /// How the subscription ended, once it has.
    pub fn end(&self) -> Option<SubscriptionEnd> {
        self.end
    }

    /// Blocks for the next event, or says how the subscription ended.
    pub fn recv(&mut self) -> Result<SubscriptionEvent, SubscriptionEnd> {
        loop {
            if let Some(end) = self.end {
                return Err(end);
            }
            let delivery = self.rx.recv().unwrap_or(SubscriptionDelivery::Disconnected);
            if let Some(event) = self.take(delivery) {
                return Ok(event);
            }
        }
    }

    /// Waits up to `timeout` for the next event (`Ok(None)`: none came).
    pub fn recv_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<SubscriptionEvent>, SubscriptionEnd> {
        let deadline = crate::deadline::from_now(timeout);
        loop {
            if let Some(end) = self.end {
                return Err(end);
            }
            let delivery = match self.rx.recv_deadline(deadline) {
                Ok(delivery) => delivery,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => SubscriptionDelivery::Disconnected,
            };
            if let Some(event) = self.take(delivery) {
                return Ok(Some(event));
            }
        }
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Result<Option<SubscriptionEvent>, SubscriptionEnd> {
        loop {
            if let Some(end) = self.end {
                return Err(end);
            }
            let delivery = match self.rx.try_recv() {
                Ok(delivery) => delivery,
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => SubscriptionDelivery::Disconnected,
            };
            if let Some(event) = self.take(delivery) {
                return Ok(Some(event));
            }
        }
    }

    /// Ends the subscription from this side: sends `notifications/cancelled`
    /// for the listen id. No final result follows.
    pub fn cancel(mut self) {
        self.cancel_inner();
    }

    fn cancel_inner(&mut self) {
        if self.end.is_some() {
            return;
        }
        self.end = Some(SubscriptionEnd::Closed);
        self.release();
    }

    /// Lets the subscription go, once it ended: out of the client's
    /// registry first, so that no restart sends it again (a restart
    /// re-sends under the registry's lock, and installs the link it
    /// re-sends on under it too, so the id and link read next are the
    /// ones it was last sent with); then off that link. A listen still
    /// open there is cancelled (`notifications/cancelled`; a legacy one
    /// unsubscribed); one the server ended, or a dead link, needs nothing.
    fn release(&mut self) {
        let registry =
            (self.registry.take()).and_then(|(inner, key)| Some((inner.upgrade()?, key)));
        let subs = registry.as_ref().map(|(inner, key)| {
            let mut subs = lock(&inner.subscriptions);
            subs.remove(key);
            subs
        });
        // Read under the registry's lock: no restart is half-way through
        // installing a link and re-sending on it.
        let id = self.id();
        let link = Arc::clone(&lock(&self.link));
        drop(subs);
        match link.forget_subscription(&id) {
            Forgotten::Nothing => {}
            // Emulated on a legacy server: nothing was sent to cancel.
            #[cfg(feature = "legacy")]
            Forgotten::Legacy(filter) => crate::client::legacy_listen::close(&link, &filter),
            Forgotten::Tagged => link.send_cancelled(&id, None),
        }
    }

    /// Turns a delivery into an event, or records the end.
    fn take(&mut self, delivery: SubscriptionDelivery) -> Option<SubscriptionEvent> {
        match delivery {
            SubscriptionDelivery::Notification { method, params, .. }
                if method == method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED =>
            {
                // A second ack: the client restarted the server and sent
                // the listen again.
                let accepted: SubscriptionFilter = params
                    .get("notifications")
                    .and_then(|n| serde_json::from_value(n.clone()).ok())
                    .unwrap_or_default();
                self.accepted = accepted.clone();
                Some(SubscriptionEvent::Resubscribed { accepted })
            }
            SubscriptionDelivery::Notification { method, params, .. } => {
                Some(event_of(method, params))
            }
            // Over HTTP, a stream that broke before its answer (the
            // server killed behind a load balancer) is answered by the
            // client itself: the connection dropped.
            #[cfg(feature = "http")]
            SubscriptionDelivery::Reply(Err(error)) if crate::client::http::no_answer(&error) => {
                self.end = Some(SubscriptionEnd::Disconnected);
                self.release();
                None
            }
            SubscriptionDelivery::Reply(_) | SubscriptionDelivery::TornDown => {
                self.end = Some(SubscriptionEnd::Closed);
                self.release();
                None
            }
            SubscriptionDelivery::Disconnected => {
                self.end = Some(SubscriptionEnd::Disconnected);
                self.release();
                None
            }
            // The reader forgot it on its link and cancelled it there.
            SubscriptionDelivery::Overflowed => {
                self.end = Some(SubscriptionEnd::Overflowed);
                self.release();
                None
            }
            // The connection dropped and the client is restarting the
            // server: the subscription carries on.
            SubscriptionDelivery::Reconnecting => None,
        }
    }
}

impl Iterator for Subscription {
    type Item = SubscriptionEvent;

    /// The next event; `None` once the subscription ended (see
    /// [`Subscription::end`]).
    fn next(&mut self) -> Option<SubscriptionEvent> {
        self.recv().ok()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.cancel_inner();
    }
}

/// The event a tagged notification stands for.
pub(crate) fn event_of(method: String, params: serde_json::Value) -> SubscriptionEvent {
    match method.as_str() {
        method::NOTIFICATION_TOOLS_LIST_CHANGED => SubscriptionEvent::ToolsListChanged,
        method::NOTIFICATION_PROMPTS_LIST_CHANGED => SubscriptionEvent::PromptsListChanged,
        method::NOTIFICATION_RESOURCES_LIST_CHANGED => SubscriptionEvent::ResourcesListChanged,
        method::NOTIFICATION_RESOURCES_UPDATED => {
            match params.get("uri").and_then(|u| u.as_str()) {
                Some(uri) => SubscriptionEvent::ResourceUpdated {
                    uri: uri.to_owned(),
                },
                None => SubscriptionEvent::Other { method, params },
            }
        }
        method::NOTIFICATION_TASKS => {
            match serde_json::from_value::<DetailedTask>(params.clone()) {
                Ok(task) if task.shape_problem().is_none() => {
                    SubscriptionEvent::TaskStatus(Box::new(task))
                }
                _ => SubscriptionEvent::Other { method, params },
            }
        }
        _ => SubscriptionEvent::Other { method, params },
    }
}

impl crate::client::Client {
    /// Opens a subscription: sends `subscriptions/listen` with `filter` and
    /// blocks until the server acknowledges it (or refuses, or the request
    /// timeout passes).
    ///
    /// On a legacy (initialize-era) server the same handle is built from
    /// that era's pieces: `resources/subscribe` for each URI and the
    /// server's untagged list-changed notifications, as far as its
    /// capabilities declare them; [`Subscription::accepted`] says what was
    /// accepted, and dropping the handle unsubscribes.
    pub fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, crate::Error> {
        use crate::error::Error;
        let link = self.link();
        let id = link.next_id();
        let (tx, rx) = SubscriptionSink::channel();
        #[cfg(feature = "legacy")]
        if let crate::client::Era::Legacy { .. } = self.era() {
            if !link.is_alive() {
                return Err(Error::Disconnected);
            }
            // A connection that ends while the subscription is opened ends
            // the subscription after what it delivered (a legacy server has
            // no acknowledgment to wait for), as a modern subscription the
            // server acknowledged and then closed.
            let accepted = crate::client::legacy_listen::open(
                &link,
                &self.server_capabilities(),
                &id,
                &filter,
                tx.clone(),
                self.inner.options.request_timeout,
            );
            return Ok(self.track(&link, id, filter, accepted, tx, rx));
        }
        let params = serde_json::json!({ "notifications": filter });
        let params = stamp_for(&self.inner, params, &id, None, false)?;
        let line = crate::jsonrpc::encode_request(&id, method::SUBSCRIPTIONS_LISTEN, &params)?;
        link.adopt_subscription(&id, tx.clone());
        if let Err(e) = link.try_send(line) {
            link.forget_subscription(&id);
            return Err(e);
        }
        // Spec 2026-07-28 basic/patterns/subscriptions: the ack is the first
        // message carrying this subscription's id.
        let deadline = crate::deadline::from_now(self.inner.options.request_timeout);
        // A server may send any number of events before the ack: their
        // notes are rate-limited, as every note a server's output causes.
        let mut early = crate::note_limiter::NoteLimiter::default();
        let accepted = loop {
            match rx.recv_deadline(deadline) {
                Ok(SubscriptionDelivery::Notification {
                    method: m, params, ..
                }) if m == method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED => {
                    break params
                        .get("notifications")
                        .and_then(|n| serde_json::from_value::<SubscriptionFilter>(n.clone()).ok())
                        .unwrap_or_default();
                }
                Ok(SubscriptionDelivery::Notification { method: m, .. }) => {
                    early.problem(
                        &self.inner.options.notes,
                        &format!(
                            "the server sent {m} for subscription {id} before acknowledging it"
                        ),
                    );
                }
                Ok(SubscriptionDelivery::Reply(Err(error))) => return Err(error),
                Ok(SubscriptionDelivery::Reply(Ok(_))) => {
                    return Err(Error::Protocol(
                        "the server ended the subscription before acknowledging it".into(),
                    ));
                }
                Ok(SubscriptionDelivery::TornDown) => {
                    return Err(Error::Protocol(
                        "the server tore the subscription down before acknowledging it".into(),
                    ));
                }
                // The reader cancelled it: more than the line limit came
                // before the ack, faster than this loop dropped it.
                Ok(SubscriptionDelivery::Overflowed) => {
                    return Err(Error::Protocol(format!(
                        "the server sent more than the line limit of notifications for subscription {id} before acknowledging it"
                    )));
                }
                Ok(SubscriptionDelivery::Disconnected | SubscriptionDelivery::Reconnecting)
                | Err(RecvTimeoutError::Disconnected) => return Err(Error::Disconnected),
                Err(RecvTimeoutError::Timeout) => {
                    // A listen the client stops waiting for is cancelled
                    // (basic/patterns/cancellation), or a late acknowledgment
                    // would leave it open at the server for good.
                    if let Forgotten::Tagged = link.forget_subscription(&id) {
                        link.send_cancelled(&id, None);
                    }
                    return Err(Error::Timeout);
                }
            }
        };
        Ok(self.track(&link, id, filter, accepted, tx, rx))
    }

    /// Records a live subscription (for restarts) and makes its handle.
    ///
    /// A restart may have replaced `opened`, the link the listen was
    /// acknowledged on, and re-sent the live subscriptions before this one
    /// was among them: then it is sent again here, on the current link.
    /// The check and the insert happen under the subscriptions' lock,
    /// which the restart holds while it installs a link and re-sends, so
    /// the listen is re-sent exactly once, by one or the other.
    fn track(
        &self,
        opened: &Arc<Link>,
        id: RequestId,
        filter: SubscriptionFilter,
        accepted: SubscriptionFilter,
        tx: SubscriptionSink,
        rx: Receiver<SubscriptionDelivery>,
    ) -> Subscription {
        use crate::client::shared::LiveSubscription;
        let shared_id = Arc::new(Mutex::new(id));
        let key = self
            .inner
            .next_subscription
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let live = LiveSubscription {
            id: Arc::clone(&shared_id),
            filter: filter.clone(),
            tx,
        };
        {
            let mut subs = lock(&self.inner.subscriptions);
            if self
                .inner
                .given_up
                .load(std::sync::atomic::Ordering::Acquire)
            {
                // The link it was opened on died, and the restarts ran
                // out before it was recorded here: it ends now, after
                // what it delivered (it heard `Reconnecting`).
                live.tx.send(SubscriptionDelivery::Disconnected);
            } else {
                let current = self.link();
                if !Arc::ptr_eq(&current, opened) {
                    crate::client::restart::relisten(&self.inner, &current, &live);
                }
                subs.insert(key, live);
            }
        }
        Subscription {
            id: shared_id,
            link: Arc::clone(&self.inner.link),
            rx,
            requested: filter,
            accepted,
            end: None,
            registry: Some((Arc::downgrade(&self.inner), key)),
        }
    }
}

#[cfg(test)]
mod tests;
