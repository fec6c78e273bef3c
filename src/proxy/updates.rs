//! The proxy's subscriptions to the server's resource updates (module docs
//! of [`crate::proxy`], **Subscriptions**): one per URI callers name, at
//! most [`MAX_SUBSCRIBED`], each update published to the proxy's callers.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread;

use crossbeam_channel::Select;

use crate::client::{Client, Subscription, SubscriptionEvent};
use crate::server::notifier::Notifier;
use crate::server::{Server, UriHold};
use crate::types::SubscriptionFilter;

use super::lock;

/// The most URIs the proxy subscribes to on the server (issue 47, item
/// 12: callers name URIs, and each is a subscription behind, kept while a
/// caller's subscription names it: a bound on what callers make it hold).
const MAX_SUBSCRIBED: usize = 1_000;

/// The proxy's subscriptions to the server's resource updates. An update
/// is taken from its subscription and published in one step, under that
/// subscription's lock, by the thread that publishes them all
/// ([`Updates::publish_loop`]) or by a request that just got its reply
/// ([`forward`]): so the update a call caused reaches the proxy's callers
/// before that call's reply, as it reached the proxy (the server writes it
/// first), even where a caller hears only on the call's own stream (a
/// legacy client over HTTP).
#[derive(Default)]
pub(super) struct Updates {
    subscriptions: Mutex<Vec<Arc<Mutex<Subscription>>>>,
    /// Wakes the publishing thread when a subscription is added; `None`
    /// until it runs.
    wake: Mutex<Option<crossbeam_channel::Sender<()>>>,
    /// The URIs subscribed to: one whose subscription ended leaves it
    /// ([`Updates::publish_loop`]).
    pub(super) subscribed: Arc<Subscribed>,
}

impl Updates {
    /// Publishes every update waiting in any of the subscriptions.
    pub(super) fn publish_waiting(&self, notifier: &Notifier) {
        let subscriptions = lock(&self.subscriptions).clone();
        for subscription in subscriptions {
            publish_from(&mut lock(&subscription), notifier);
        }
    }

    /// Adds `subscription`, published from here on by the one thread that
    /// publishes them all (started with the first). It, as taken: `None`
    /// when no thread could be started.
    fn add(
        self: &Arc<Updates>,
        subscription: Subscription,
        server: &Arc<Mutex<Option<Server>>>,
    ) -> Option<Arc<Mutex<Subscription>>> {
        let added = Arc::new(Mutex::new(subscription));
        lock(&self.subscriptions).push(Arc::clone(&added));
        let mut wake = lock(&self.wake);
        if let Some(wake) = wake.as_ref() {
            let _ = wake.send(());
            return Some(added);
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let (updates, server) = (Arc::clone(self), Arc::clone(server));
        let started = thread::Builder::new()
            .name("mcp-proxy-resources".into())
            .spawn(move || updates.publish_loop(&rx, &server));
        match started {
            Ok(_) => {
                *wake = Some(tx);
                Some(added)
            }
            Err(_) => {
                lock(&self.subscriptions).retain(|s| !Arc::ptr_eq(s, &added));
                None
            }
        }
    }

    /// Drops `subscription` (which cancels it at the server) and wakes the
    /// publishing thread, which waits on it no more.
    fn remove(&self, subscription: &Arc<Mutex<Subscription>>) {
        lock(&self.subscriptions).retain(|s| !Arc::ptr_eq(s, subscription));
        if let Some(wake) = lock(&self.wake).as_ref() {
            let _ = wake.send(());
        }
    }

    /// The publishing thread: waits for an update in any subscription (or
    /// a new subscription), and publishes what waits in the one that has
    /// some; a subscription that ended is dropped. It ends with the last
    /// subscription (the client closed): the next one starts it again
    /// ([`Updates::add`], which adds before it looks at `wake`; this
    /// thread looks at the subscriptions under `wake`'s lock).
    fn publish_loop(&self, wake: &crossbeam_channel::Receiver<()>, server: &Mutex<Option<Server>>) {
        loop {
            let subscriptions = lock(&self.subscriptions).clone();
            // Waited on without taking anything: what comes is taken under
            // the subscription's lock (see the type's docs).
            let deliveries: Vec<_> = (subscriptions.iter())
                .map(|subscription| lock(subscription).rx.clone())
                .collect();
            let mut ready = Select::new();
            ready.recv(wake);
            for delivery in &deliveries {
                ready.recv(delivery);
            }
            let index = ready.ready();
            if index == 0 {
                match wake.try_recv() {
                    Err(crossbeam_channel::TryRecvError::Disconnected) => return,
                    _ => continue,
                }
            }
            // Set once the server is built, before anyone subscribes.
            let Some(notifier) = lock(server).as_ref().map(Server::notifier) else {
                continue;
            };
            let subscription = &subscriptions[index - 1];
            if publish_from(&mut lock(subscription), &notifier) {
                lock(&self.subscriptions).retain(|s| !Arc::ptr_eq(s, subscription));
                // Its URI is no longer taken: the next caller of it
                // subscribes behind again, rather than be acknowledged
                // for updates that will never come. No other lock is
                // held here (`subscribe` holds this one while it adds).
                let accepted = lock(subscription).accepted().resource_subscriptions.clone();
                let mut uris = lock(&self.subscribed.uris);
                for uri in accepted.unwrap_or_default() {
                    if (uris.taken.get(&uri))
                        .is_some_and(|t| Arc::ptr_eq(&t.subscription, subscription))
                    {
                        uris.taken.remove(&uri);
                    }
                }
                drop(uris);
                let mut running = lock(&self.wake);
                if lock(&self.subscriptions).is_empty() {
                    *running = None;
                    return;
                }
            }
        }
    }
}

/// Publishes the updates waiting in `subscription` as it is called, not
/// those that come meanwhile: under a flood of updates its lock is held
/// for what was there, so a call's reply waits for the updates that came
/// before it and no others (`forward`), and the publishing thread lets go
/// between batches. `true` once the subscription ended.
pub(super) fn publish_from(subscription: &mut Subscription, notifier: &Notifier) -> bool {
    // At least one look, which sees an end that came with nothing waiting.
    for _ in 0..subscription.rx.len().max(1) {
        match subscription.try_recv() {
            Ok(Some(SubscriptionEvent::ResourceUpdated { uri })) => {
                notifier.resource_updated(&uri);
            }
            Ok(Some(_)) => {}
            Ok(None) => return false,
            Err(_) => return true,
        }
    }
    false
}

/// The URIs the proxy subscribed to on the server, and those it is asking
/// the server for now.
#[derive(Default)]
pub(super) struct Subscribed {
    uris: Mutex<SubscribedUris>,
    /// Told when an answer came.
    answered: Condvar,
}

#[derive(Default)]
struct SubscribedUris {
    taken: HashMap<String, Taken>,
    asking: HashSet<String>,
}

/// A URI the proxy subscribed to on the server.
struct Taken {
    /// The subscription behind.
    subscription: Arc<Mutex<Subscription>>,
    /// The hold every caller's subscription that names the URI keeps
    /// (`UriHold`, given by [`subscribe`]): once none does, no caller
    /// names it any more, and it may leave ([`SubscribedUris::sweep`]).
    held: Weak<Held>,
}

/// What a caller's subscription holds while it names a URI (see
/// [`Taken::held`]).
struct Held;

impl SubscribedUris {
    /// The hold on `uri`, taken (a new one if no caller holds it now).
    fn hold(&mut self, uri: &str) -> Option<UriHold> {
        let taken = self.taken.get_mut(uri)?;
        let held = taken.held.upgrade().unwrap_or_else(|| {
            let held = Arc::new(Held);
            taken.held = Arc::downgrade(&held);
            held
        });
        Some(UriHold::new(held))
    }

    /// The URIs no caller's subscription names any more leave, their
    /// subscriptions behind given to `updates` to drop (which cancels them
    /// at the server).
    fn sweep(&mut self, updates: &Updates) {
        let gone: Vec<String> = (self.taken.iter())
            .filter(|(_, taken)| taken.held.strong_count() == 0)
            .map(|(uri, _)| uri.clone())
            .collect();
        for uri in gone {
            if let Some(taken) = self.taken.remove(&uri) {
                updates.remove(&taken.subscription);
            }
        }
    }

    fn full(&self) -> bool {
        self.taken.len() + self.asking.len() >= MAX_SUBSCRIBED
    }
}

/// Subscribes to `uri` on the server, once, before the caller's own
/// subscription is acknowledged (so that nothing the caller does after its
/// acknowledgment is missed); the proxy's publishing thread then publishes
/// each update to its listeners (see [`Updates`]). Returns a hold on
/// `uri` if the server acknowledged it (now, or when the proxy first
/// subscribed), which the caller's subscription keeps while it names
/// `uri`: the caller's acknowledgment names no more (spec 2026-07-28
/// basic/patterns/subscriptions: it lists what will be delivered); nor is
/// a URI past [`MAX_SUBSCRIBED`] (those subscribed and those being asked)
/// taken, once the URIs no caller holds any more have left
/// ([`SubscribedUris::sweep`], at each new URI: their subscriptions behind
/// are cancelled). A second caller of a URI being asked waits for that answer
/// rather than be acknowledged before it; no lock is held while the
/// server is asked, so callers of other URIs do not wait behind it.
pub(super) fn subscribe(
    client: &Arc<Client>,
    subscribed: &Subscribed,
    server: &Arc<Mutex<Option<Server>>>,
    updates: &Arc<Updates>,
    uri: &str,
) -> Option<UriHold> {
    {
        let mut uris = lock(&subscribed.uris);
        while uris.asking.contains(uri) {
            uris = (subscribed.answered.wait(uris)).unwrap_or_else(PoisonError::into_inner);
        }
        if let Some(hold) = uris.hold(uri) {
            return Some(hold);
        }
        // A new URI: those no caller names any more leave first.
        uris.sweep(updates);
        if uris.full() {
            return None;
        }
        uris.asking.insert(uri.to_owned());
    }
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec![uri.to_owned()]),
        ..SubscriptionFilter::default()
    };
    // Refused, or failed: tried again by the next caller that asks. One
    // refused is dropped, which cancels it at the server.
    let subscription = client.listen(filter).ok().filter(|subscription| {
        let accepted = subscription.accepted().resource_subscriptions.as_deref();
        accepted.unwrap_or_default().iter().any(|u| u == uri)
    });
    // Published from here on by the proxy's one publishing thread, before
    // a second caller of `uri` is told it is taken; added under the URIs'
    // lock, so that a subscription that ends at once leaves `taken` only
    // after it was put there.
    {
        let mut uris = lock(&subscribed.uris);
        let taken = subscription.and_then(|subscription| updates.add(subscription, server));
        uris.asking.remove(uri);
        let hold = taken.map(|subscription| {
            let held = Arc::new(Held);
            let taken = Taken {
                subscription,
                held: Arc::downgrade(&held),
            };
            uris.taken.insert(uri.to_owned(), taken);
            UriHold::new(held)
        });
        drop(uris);
        subscribed.answered.notify_all();
        hold
    }
}
