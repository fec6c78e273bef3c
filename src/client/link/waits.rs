use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crossbeam_channel::Receiver;

use super::{
    Delivery, Forgotten, Late, Link, MAX_LATE, Pending, SubscriptionDelivery, SubscriptionSink,
};
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
        self.drop_expired_late();
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

    /// Forgets a request as [`forget`](Link::forget) does, but a reply
    /// that still comes before `late.until` is handed to `late.then`, and
    /// the request it returns is sent (by the reader, without waiting for
    /// its answer): for a `tools/call` that may have been answered with a
    /// task just as it was given up on, its answer crossing the
    /// cancellation on the wire (`PendingCall::on_late_reply`). Past
    /// `until` such a reply is dropped like any other, and the entry goes
    /// at the next request or give-up, or the link's end. At most
    /// [`MAX_LATE`] are kept: past it the one nearest its end is dropped.
    /// Returns whether the request was still waiting; if not, nothing is
    /// kept.
    pub fn forget_but_hear(&self, id: &RequestId, late: Late) -> bool {
        self.drop_expired_late();
        let mut pending = lock(&self.pending);
        let waiting = pending.remove(id).is_some();
        if waiting {
            // Under `pending`'s lock: the reader, which looks here once
            // `pending` has no such id, never misses it.
            let mut heard = lock(&self.late);
            if heard.len() >= MAX_LATE {
                let nearest = (heard.iter())
                    .min_by_key(|(_, l)| l.until)
                    .map(|(id, _)| id.clone());
                if let Some(nearest) = nearest {
                    heard.remove(&nearest);
                }
            }
            heard.insert(id.clone(), late);
        }
        waiting
    }

    /// Until when request `id`'s late reply is still heard
    /// ([`forget_but_hear`](Link::forget_but_hear)), if it is: an HTTP
    /// carrier reads the request's stream on until then.
    #[cfg(feature = "http")]
    pub(crate) fn hears_late_until(&self, id: &RequestId) -> Option<Instant> {
        let late = lock(&self.late);
        late.get(id)
            .map(|l| l.until)
            .filter(|&until| until > Instant::now())
    }

    /// Drops the late replies waited for past their end.
    fn drop_expired_late(&self) {
        let mut late = lock(&self.late);
        if !late.is_empty() {
            let now = Instant::now();
            late.retain(|_, l| l.until > now);
        }
    }

    /// How many requests wait for their answer.
    #[cfg(all(test, feature = "legacy"))]
    pub(crate) fn pending_len(&self) -> usize {
        lock(&self.pending).len()
    }

    /// How many given-up requests still have their late reply heard.
    #[cfg(all(test, feature = "server"))]
    pub(crate) fn late_len(&self) -> usize {
        lock(&self.late).len()
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
        // No reply comes any more.
        lock(&self.late).clear();
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
