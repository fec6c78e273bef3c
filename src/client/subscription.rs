//! [`Subscription`]: the client's end of a `subscriptions/listen` stream, a
//! blocking iterator of events that ends closed or disconnected.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};

use crate::client::link::{Forgotten, Link, SubscriptionDelivery};
use crate::client::shared::{ClientInner, stamp_for};
use crate::jsonrpc::{RequestId, encode_notification};
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

/// How a subscription ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionEnd {
    /// The server ended it: it answered the listen request (the graceful
    /// end), or tore it down with `notifications/cancelled`.
    Closed,
    /// The connection dropped without that answer.
    Disconnected,
}

/// A live `subscriptions/listen` stream.
///
/// [`Subscription::recv`] blocks for the next event; the iterator yields
/// events until the subscription ends, and [`Subscription::end`] then says
/// how. Cancelling or dropping it sends `notifications/cancelled` for the
/// listen id.
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
            Forgotten::Tagged => send_cancelled(&link, &id),
        }
    }

    /// Turns a delivery into an event, or records the end.
    fn take(&mut self, delivery: SubscriptionDelivery) -> Option<SubscriptionEvent> {
        match delivery {
            SubscriptionDelivery::Notification { method, params }
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
            SubscriptionDelivery::Notification { method, params } => Some(event_of(method, params)),
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

/// Cancels the listen `id` at the server (`notifications/cancelled`).
fn send_cancelled(link: &Link, id: &RequestId) {
    let mut line = Vec::new();
    let params = serde_json::json!({ "requestId": id });
    if encode_notification(&mut line, method::NOTIFICATION_CANCELLED, &params).is_ok() {
        // A dead connection needs no cancellation.
        let _ = link.send(line);
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
        let (tx, rx) = crossbeam_channel::unbounded();
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
        if !link.send(line) {
            link.forget_subscription(&id);
            return Err(Error::Disconnected);
        }
        // Spec 2026-07-28 basic/patterns/subscriptions: the ack is the first
        // message carrying this subscription's id.
        let deadline = crate::deadline::from_now(self.inner.options.request_timeout);
        let accepted = loop {
            match rx.recv_deadline(deadline) {
                Ok(SubscriptionDelivery::Notification { method: m, params })
                    if m == method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED =>
                {
                    break params
                        .get("notifications")
                        .and_then(|n| serde_json::from_value::<SubscriptionFilter>(n.clone()).ok())
                        .unwrap_or_default();
                }
                Ok(SubscriptionDelivery::Notification { method: m, .. }) => {
                    self.inner.options.notes.problem(&format!(
                        "the server sent {m} for subscription {id} before acknowledging it"
                    ));
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
                Ok(SubscriptionDelivery::Disconnected | SubscriptionDelivery::Reconnecting)
                | Err(RecvTimeoutError::Disconnected) => return Err(Error::Disconnected),
                Err(RecvTimeoutError::Timeout) => {
                    // A listen the client stops waiting for is cancelled
                    // (basic/patterns/cancellation), or a late acknowledgment
                    // would leave it open at the server for good.
                    if let Forgotten::Tagged = link.forget_subscription(&id) {
                        send_cancelled(&link, &id);
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
        tx: crossbeam_channel::Sender<SubscriptionDelivery>,
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
                let _ = live.tx.send(SubscriptionDelivery::Disconnected);
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
mod tests {
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader};
    use std::process::Command;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Barrier, Mutex};
    use std::time::{Duration, Instant};

    use crossbeam_channel::Receiver;
    use serde_json::Value;

    use crate::client::era::{Era, ServerFacts};
    use crate::client::link::{Link, ServerInput};
    use crate::client::shared::ClientInner;
    use crate::client::{Client, ClientBuilder, RestartPolicy, SubscriptionEnd, restart};
    use crate::sync::lock;
    use crate::types::{ServerCapabilities, SubscriptionFilter};

    /// A link over pipes: the server's output stays open until the
    /// returned writer is dropped; each line the client writes comes out
    /// of the receiver, which ends once the client's input is closed.
    fn link(options: &ClientBuilder) -> (Arc<Link>, std::io::PipeWriter, Receiver<Value>) {
        let (output, server_writes) = std::io::pipe().expect("a pipe");
        let (server_reads, input) = std::io::pipe().expect("a pipe");
        let link = Link::start(
            Box::new(BufReader::new(output)),
            ServerInput::stream(Box::new(input)),
            options.max_line_bytes,
            options.notes.clone(),
            None,
        )
        .expect("a link");
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(server_reads).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(serde_json::from_str(&line).unwrap_or(Value::Null));
            }
        });
        (link, server_writes, rx)
    }

    /// The client's shared state over `link`, restarting with `command`.
    fn client_inner(
        link: &Arc<Link>,
        command: Option<Command>,
        options: ClientBuilder,
    ) -> Arc<ClientInner> {
        Arc::new(ClientInner {
            link: Arc::new(Mutex::new(Arc::clone(link))),
            facts: Mutex::new(ServerFacts {
                era: Era::Modern {
                    version: crate::version::SUPPORTED_VERSIONS[0].into(),
                },
                capabilities: ServerCapabilities::default(),
                info: None,
                instructions: None,
                discover: None,
            }),
            child: Mutex::new(None),
            stderr_tail: Mutex::new(None),
            command: command.map(Mutex::new),
            subscriptions: Mutex::new(HashMap::new()),
            next_subscription: AtomicU64::new(0),
            restarts: Mutex::new(0),
            closing: AtomicBool::new(false),
            given_up: AtomicBool::new(false),
            options,
        })
    }

    /// One round: two subscriptions acknowledged on a link that dies; a
    /// restart installs the next link and re-sends them (step 4 of
    /// `restart::start_again`) while a thread drops one of them. Returns
    /// what is wrong with the new link's wire, if anything.
    fn drop_during_a_restart() -> Option<String> {
        let options = ClientBuilder::default().trace(|_| {});
        let (old, old_output, _old_input) = link(&options);
        let (new, new_output, new_input) = link(&options);
        let inner = client_inner(&old, None, options);
        let client = Client {
            inner: Arc::clone(&inner),
            closed: true,
        };
        // As `Client::listen` does once the old server acknowledged.
        let open = || {
            let id = old.next_id();
            let (tx, rx) = crossbeam_channel::unbounded();
            old.adopt_subscription(&id, tx.clone());
            let filter = SubscriptionFilter::default();
            client.track(&old, id, filter.clone(), filter, tx, rx)
        };
        let dropped = open();
        let kept = open();
        // The old server dies; restarts remain.
        old.restartable.store(true, Ordering::Release);
        drop(old_output);
        while old.is_alive() {
            std::thread::yield_now();
        }
        let barrier = Arc::new(Barrier::new(2));
        let dropper = {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                drop(dropped);
            })
        };
        barrier.wait();
        {
            let subs = lock(&inner.subscriptions);
            *lock(&inner.link) = Arc::clone(&new);
            for sub in subs.values() {
                restart::relisten(&inner, &new, sub);
            }
        }
        dropper.join().expect("the dropper");
        let kept_id = kept.id().to_value();
        new.close_input();
        let lines: Vec<Value> = new_input.iter().collect();
        drop((kept, client, new_output));
        let of = |method: &str| -> Vec<Value> {
            (lines.iter())
                .filter(|l| l["method"] == method)
                .map(|l| {
                    let id = &l["id"];
                    if id.is_null() {
                        l["params"]["requestId"].clone()
                    } else {
                        id.clone()
                    }
                })
                .collect()
        };
        let listens = of("subscriptions/listen");
        let cancels = of("notifications/cancelled");
        if cancels.contains(&kept_id) {
            return Some(format!(
                "the kept subscription ({kept_id}) was cancelled: {lines:?}"
            ));
        }
        if let Some(stray) = cancels.iter().find(|c| !listens.contains(c)) {
            return Some(format!(
                "a cancellation for {stray}, never sent on this link: {lines:?}"
            ));
        }
        if let Some(open) = listens
            .iter()
            .find(|l| **l != kept_id && !cancels.contains(l))
        {
            return Some(format!(
                "the dropped subscription's listen ({open}) was re-sent and never cancelled: {lines:?}"
            ));
        }
        None
    }

    #[test]
    fn a_subscription_dropped_during_a_restart_cancels_its_own_listen_only() {
        let deadline = Instant::now() + Duration::from_secs(3);
        let (mut rounds, mut wrong) = (0, Vec::new());
        while Instant::now() < deadline {
            rounds += 1;
            wrong.extend(drop_during_a_restart());
        }
        assert!(
            wrong.is_empty(),
            "{} of {rounds} rounds went wrong; the first: {}",
            wrong.len(),
            wrong[0]
        );
    }

    /// `Client::listen` has its acknowledgment when the server dies, and
    /// the restarts fail and run out (`give_up`) before it records the
    /// subscription (`track`): the subscription must still end
    /// `Disconnected`, not wait forever after `Reconnecting`.
    #[test]
    fn a_listen_acknowledged_just_before_the_restarts_ran_out_ends() {
        let options = ClientBuilder::default()
            .trace(|_| {})
            .restart(RestartPolicy {
                max_restarts: 1,
                backoff: Duration::ZERO,
            });
        let (output, server_writes) = std::io::pipe().expect("a pipe");
        let (_server_reads, input) = std::io::pipe().expect("a pipe");
        let link = Link::start(
            Box::new(BufReader::new(output)),
            ServerInput::stream(Box::new(input)),
            options.max_line_bytes,
            options.notes.clone(),
            None,
        )
        .expect("a link");
        // Every restart fails at once.
        let command = Command::new("/nonexistent/mcp-server");
        let inner = client_inner(&link, Some(command), options);
        restart::watch(&inner, &link);
        let client = Client {
            inner: Arc::clone(&inner),
            closed: true,
        };
        // `listen`: the listen is registered, sent and acknowledged ...
        let id = link.next_id();
        let (tx, rx) = crossbeam_channel::unbounded();
        link.adopt_subscription(&id, tx.clone());
        // ... then the server dies, the one restart fails, and the client
        // gives up (the restart thread holds the client until it is done) ...
        drop(server_writes);
        let deadline = Instant::now() + Duration::from_secs(5);
        while (link.is_alive()
            || *crate::sync::lock(&inner.restarts) == 0
            || Arc::strong_count(&inner) > 2)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(Arc::strong_count(&inner), 2, "the restart did not end");
        // ... before `listen` records the subscription.
        let filter = SubscriptionFilter::default();
        let mut sub = client.track(&link, id, filter.clone(), filter, tx, rx);
        let end = sub.recv_timeout(Duration::from_secs(1));
        assert_eq!(end, Err(SubscriptionEnd::Disconnected));
    }
}
