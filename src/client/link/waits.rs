use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam_channel::Receiver;

use super::{Delivery, Forgotten, Link, Pending, SubscriptionDelivery, SubscriptionSink};
#[cfg(feature = "legacy")]
use crate::client::input::InputHandlers;
use crate::jsonrpc::RequestId;
use crate::sync::lock;
#[cfg(feature = "legacy")]
use crate::types::SubscriptionFilter;

impl Link {
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
        let mut in_flight = lock(&self.pending);
        let pending = Pending {
            tx,
            progress_token,
            wants_logs,
            backlog: Arc::default(),
        };
        in_flight.insert(id.clone(), pending);
        drop(in_flight);
        // The reader may have gone between the check and the insert.
        if !self.is_alive() {
            self.fail_all();
        }
        rx
    }

    /// Forgets a request (answered, timed out or cancelled): a late reply
    /// is then dropped. Returns whether it was still waiting: `false` when
    /// the reader took it out to deliver its reply (or the link died).
    pub fn forget(&self, id: &RequestId) -> bool {
        lock(&self.pending).remove(id).is_some()
    }

    /// How many requests wait for their answer.
    #[cfg(all(test, feature = "legacy"))]
    pub(crate) fn pending_len(&self) -> usize {
        lock(&self.pending).len()
    }

    /// Registers a subscription's delivery channel before its listen
    /// request is sent (and again on the new connection after a restart).
    pub fn adopt_subscription(&self, id: &RequestId, sink: SubscriptionSink) {
        lock(&self.subscriptions).insert(id.clone(), sink);
        if !self.is_alive() {
            self.fail_all();
        }
    }

    /// Forgets a subscription; says whether it was still registered, and
    /// its accepted filter if it was a legacy one.
    pub fn forget_subscription(&self, id: &RequestId) -> Forgotten {
        let registered = lock(&self.subscriptions).remove(id).is_some();
        #[cfg(feature = "legacy")]
        if let Some(filter) = lock(&self.legacy).remove(id) {
            return Forgotten::Legacy(filter);
        }
        if registered {
            Forgotten::Tagged
        } else {
            Forgotten::Nothing
        }
    }

    #[cfg(feature = "legacy")]
    /// Registers a subscription emulated on a legacy server: untagged
    /// notifications that `filter` covers go to `tx`.
    pub fn adopt_legacy_subscription(
        &self,
        id: &RequestId,
        filter: SubscriptionFilter,
        sink: SubscriptionSink,
    ) {
        lock(&self.legacy).insert(id.clone(), filter);
        self.adopt_subscription(id, sink);
    }

    #[cfg(feature = "legacy")]
    /// Narrows a legacy subscription's filter to what was accepted.
    pub fn set_legacy_filter(&self, id: &RequestId, filter: SubscriptionFilter) {
        if let Some(slot) = lock(&self.legacy).get_mut(id) {
            *slot = filter;
        }
    }

    #[cfg(feature = "legacy")]
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
        #[cfg(feature = "legacy")]
        lock(&self.legacy).clear();
        let subs: Vec<_> = lock(&self.subscriptions).drain().map(|(_, s)| s).collect();
        let restarting = self.restartable.load(Ordering::Acquire);
        for s in subs {
            s.send(if restarting {
                SubscriptionDelivery::Reconnecting
            } else {
                SubscriptionDelivery::Disconnected
            });
        }
    }

    #[cfg(feature = "legacy")]
    /// Answers the server's requests from now on (a legacy connection).
    pub fn answer_server_requests(&self, handlers: InputHandlers) {
        *lock(&self.server_requests) = Some(handlers);
    }
}
