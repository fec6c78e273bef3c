//! Races of subscriptions with a server's death and restart.

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::era::{Era, ServerFacts};
use crate::client::link::{Link, SubscriptionSink, over_pipes};
use crate::client::shared::ClientInner;
use crate::client::{Client, ClientBuilder, RestartPolicy, SubscriptionEnd, restart};
use crate::sync::lock;
use crate::types::{ServerCapabilities, SubscriptionFilter};

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
            legacy_reason: None,
        }),
        child: Mutex::new(None),
        stderr_tail: Mutex::new(None),
        command: command.map(Mutex::new),
        subscriptions: Mutex::new(HashMap::new()),
        next_subscription: AtomicU64::new(0),
        restarts: Mutex::new(0),
        closing: AtomicBool::new(false),
        given_up: AtomicBool::new(false),
        restart: Mutex::default(),
        restart_wake: std::sync::Condvar::new(),
        options,
    })
}

/// One round: two subscriptions acknowledged on a link that dies; a
/// restart installs the next link and re-sends them (step 4 of
/// `restart::start_again`) while a thread drops one of them. Returns
/// what is wrong with the new link's wire, if anything.
fn drop_during_a_restart() -> Option<String> {
    let options = ClientBuilder::default().trace(|_| {});
    let (old, old_output, _old_input) = over_pipes(&options);
    let (new, new_output, new_input) = over_pipes(&options);
    let inner = client_inner(&old, None, options);
    let client = Client {
        inner: Arc::clone(&inner),
        closed: true,
    };
    // As `Client::listen` does once the old server acknowledged.
    let open = || {
        let id = old.next_id();
        let (tx, rx) = SubscriptionSink::channel();
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
    let (link, server_writes, _written) = over_pipes(&options);
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
    let (tx, rx) = SubscriptionSink::channel();
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
