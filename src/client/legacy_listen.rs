//! [`Client::listen`](crate::Client::listen) against a legacy
//! (initialize-era) server, which has no `subscriptions/listen`: the
//! subscription is made of what that era offers instead.
//!
//! - `resourceSubscriptions` become one `resources/subscribe` per URI (spec
//!   2025-11-25 server/resources, "Subscriptions"), accepted when the server
//!   declares `resources.subscribe` and answers the request within the
//!   request timeout (one for them all); one not answered in time is
//!   cancelled and undone with `resources/unsubscribe`. Closing the
//!   subscription sends `resources/unsubscribe` for every URI no other open
//!   subscription still wants. Only the subscribes of `listen` wait for
//!   their answers; the others (re-sent after a restart, unsubscribes) are
//!   not registered, so a server that never answers them costs nothing.
//! - The list-changed flags are accepted when the server declares
//!   `listChanged` for that list: a legacy server then sends untagged
//!   `notifications/*/list_changed` to the whole connection.
//!
//! Untagged notifications reach every legacy subscription whose accepted
//! filter covers them (`Link::route_notification`). The acknowledgment is
//! the client's own: there is no listen request, and the subscription's id
//! is a client-side id that never goes on the wire.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::{Value, json};

use crate::client::link::{Delivery, Held, Link, SubscriptionDelivery, SubscriptionSink};
use crate::jsonrpc::{RequestId, encode_notification, encode_request};
use crate::types::{ServerCapabilities, SubscriptionFilter, method};

/// The legacy era's per-URI subscription requests.
const SUBSCRIBE: &str = "resources/subscribe";
const UNSUBSCRIBE: &str = "resources/unsubscribe";

/// The part of `filter` a legacy server with `caps` can deliver, before any
/// `resources/subscribe` is answered.
pub(crate) fn deliverable(
    caps: &ServerCapabilities,
    filter: &SubscriptionFilter,
) -> SubscriptionFilter {
    let asked = |flag: Option<bool>, declared: Option<bool>| {
        (flag == Some(true) && declared == Some(true)).then_some(true)
    };
    let resources = caps.resources.as_ref();
    let subscribable = resources.and_then(|r| r.subscribe) == Some(true);
    SubscriptionFilter {
        tools_list_changed: asked(
            filter.tools_list_changed,
            caps.tools.as_ref().and_then(|t| t.list_changed),
        ),
        prompts_list_changed: asked(
            filter.prompts_list_changed,
            caps.prompts.as_ref().and_then(|p| p.list_changed),
        ),
        resources_list_changed: asked(
            filter.resources_list_changed,
            resources.and_then(|r| r.list_changed),
        ),
        resource_subscriptions: filter
            .resource_subscriptions
            .clone()
            .filter(|uris| subscribable && !uris.is_empty()),
        // A legacy server has no tasks.
        task_ids: None,
    }
}

/// Opens a legacy subscription on `link` under the client-side `id`:
/// registers it first (so no notification is missed), then subscribes to
/// each URI and waits up to `timeout` for the answers, all together.
/// Returns what was accepted; a URI the server refused or did not answer
/// is left out. A subscribe not answered in time is forgotten, cancelled,
/// and undone with `resources/unsubscribe` unless another open
/// subscription wants its URI: a late acceptance must not leave the
/// server sending updates nobody asked for.
pub(crate) fn open(
    link: &Link,
    caps: &ServerCapabilities,
    id: &RequestId,
    filter: &SubscriptionFilter,
    tx: SubscriptionSink,
    timeout: Duration,
) -> SubscriptionFilter {
    let mut accepted = deliverable(caps, filter);
    link.adopt_legacy_subscription(id, accepted.clone(), tx);
    let Some(uris) = accepted.resource_subscriptions.take() else {
        return accepted;
    };
    let asked: Vec<_> = uris
        .into_iter()
        .map(|uri| {
            let asked = ask(link, SUBSCRIBE, &uri);
            (uri, asked)
        })
        .collect();
    let deadline = crate::deadline::from_now(timeout);
    let (mut kept, mut given_up) = (Vec::new(), Vec::new());
    for (uri, asked) in asked {
        let Some((request, rx)) = asked else {
            continue;
        };
        match answer(link, &request, &rx, deadline) {
            Some(true) => kept.push(uri),
            Some(false) => {}
            None => given_up.push(uri),
        }
    }
    accepted.resource_subscriptions = (!kept.is_empty()).then_some(kept);
    // This subscription no longer wants what it gave up on: set first, so
    // that `legacy_uri_wanted` asks only the others.
    link.set_legacy_filter(id, accepted.clone());
    for uri in given_up {
        if !link.legacy_uri_wanted(&uri) {
            tell(link, UNSUBSCRIBE, &uri);
        }
    }
    accepted
}

/// Waits until `deadline` for the answer to the `resources/subscribe`
/// `request`: `Some(true)` accepted, `Some(false)` refused (or the link is
/// gone), `None` not answered in time, and then forgotten and cancelled
/// (spec 2025-11-25 basic/utilities/cancellation), so that no entry is
/// left waiting for an answer that may never come.
fn answer(
    link: &Link,
    request: &RequestId,
    rx: &Receiver<Delivery>,
    mut deadline: Instant,
) -> Option<bool> {
    loop {
        match rx.recv_deadline(deadline) {
            Ok(Delivery::Reply(reply)) => return Some(reply.is_ok()),
            // Nothing asked for these.
            Ok(Delivery::Progress(..) | Delivery::Log(..)) => {}
            Ok(Delivery::Disconnected) | Err(RecvTimeoutError::Disconnected) => {
                return Some(false);
            }
            Err(RecvTimeoutError::Timeout) if link.forget(request) => {
                let mut line = Vec::new();
                let params = json!({ "requestId": request, "reason": "timed out" });
                if encode_notification(&mut line, method::NOTIFICATION_CANCELLED, &params).is_ok() {
                    // A dead connection needs no cancellation.
                    let _ = link.send(line);
                }
                return None;
            }
            // Answered as it timed out: the reader took it out, and its
            // answer (or the link's end) is on its way.
            Err(RecvTimeoutError::Timeout) => deadline = crate::deadline::from_now(Duration::MAX),
        }
    }
}

/// Re-opens a subscription on a restarted legacy server without waiting:
/// the handle learns what was accepted from a `Resubscribed` event, as it
/// would from a modern server's new acknowledgment.
pub(crate) fn reopen(
    link: &Link,
    caps: &ServerCapabilities,
    id: &RequestId,
    filter: &SubscriptionFilter,
    tx: SubscriptionSink,
) {
    let accepted = deliverable(caps, filter);
    for uri in accepted.resource_subscriptions.iter().flatten() {
        tell(link, SUBSCRIBE, uri);
    }
    let ack = json!({ "notifications": accepted });
    link.adopt_legacy_subscription(id, accepted, tx.clone());
    tx.send(SubscriptionDelivery::Notification {
        method: method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED.to_owned(),
        params: ack,
        _held: Held::none(),
    });
}

/// Closes a legacy subscription whose accepted filter was `filter`:
/// unsubscribes from each of its URIs that no open subscription still
/// wants. The answers are not awaited.
pub(crate) fn close(link: &Link, filter: &SubscriptionFilter) {
    for uri in filter.resource_subscriptions.iter().flatten() {
        if !link.legacy_uri_wanted(uri) {
            tell(link, UNSUBSCRIBE, uri);
        }
    }
}

/// Whether `method` is a change notification a subscription may want.
pub(crate) fn is_change(method: &str) -> bool {
    matches!(
        method,
        method::NOTIFICATION_TOOLS_LIST_CHANGED
            | method::NOTIFICATION_PROMPTS_LIST_CHANGED
            | method::NOTIFICATION_RESOURCES_LIST_CHANGED
            | method::NOTIFICATION_RESOURCES_UPDATED
    )
}

/// Whether a legacy subscription with `filter` wants an untagged
/// notification.
pub(crate) fn wants(filter: &SubscriptionFilter, method: &str, params: &Value) -> bool {
    match method {
        method::NOTIFICATION_TOOLS_LIST_CHANGED => filter.tools_list_changed == Some(true),
        method::NOTIFICATION_PROMPTS_LIST_CHANGED => filter.prompts_list_changed == Some(true),
        method::NOTIFICATION_RESOURCES_LIST_CHANGED => filter.resources_list_changed == Some(true),
        method::NOTIFICATION_RESOURCES_UPDATED => {
            let uri = params.get("uri").and_then(Value::as_str);
            filter
                .resource_subscriptions
                .iter()
                .flatten()
                .any(|wanted| Some(wanted.as_str()) == uri)
        }
        _ => false,
    }
}

/// Sends `resources/subscribe` or `resources/unsubscribe` for `uri` and
/// registers it: its id, and the receiver of its answer (`None`: the
/// connection is gone). The caller must take the answer or forget it.
fn ask(link: &Link, method: &str, uri: &str) -> Option<(RequestId, Receiver<Delivery>)> {
    let id = link.next_id();
    let line = encode_request(&id, method, &json!({ "uri": uri })).ok()?;
    let rx = link.register(&id, None, false);
    if link.send(line) {
        Some((id, rx))
    } else {
        link.forget(&id);
        None
    }
}

/// Sends `resources/subscribe` or `resources/unsubscribe` for `uri`
/// without waiting for its answer: nothing is registered, and the reader
/// drops the answer, whenever it comes, as that of a request this client
/// sent and no longer waits for.
fn tell(link: &Link, method: &str, uri: &str) {
    let id = link.next_id();
    if let Ok(line) = encode_request(&id, method, &json!({ "uri": uri })) {
        // A dead connection: the restart, if any, subscribes again.
        let _ = link.send(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientBuilder;
    use crate::client::link::{Forgotten, over_pipes};

    /// Issue 47, item 7: a server that answers no `resources/subscribe` or
    /// `resources/unsubscribe` leaves nothing waiting in the link's
    /// pending requests, however many subscriptions open and close (each
    /// unanswered one stayed there for the connection's life), and a
    /// subscribe given up on is cancelled and undone.
    #[test]
    fn unanswered_subscribes_and_unsubscribes_leave_nothing_pending() {
        let options = ClientBuilder::default().trace(|_| {});
        let (link, _server_writes, written) = over_pipes(&options);
        let caps: ServerCapabilities =
            serde_json::from_value(json!({ "resources": { "subscribe": true } })).unwrap();
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec!["a://1".into(), "a://2".into()]),
            ..SubscriptionFilter::default()
        };
        let (tx, _rx) = SubscriptionSink::channel();
        let id = link.next_id();
        let accepted = open(
            &link,
            &caps,
            &id,
            &filter,
            tx.clone(),
            Duration::from_millis(100),
        );
        assert_eq!(accepted.resource_subscriptions, None);
        assert_eq!(link.pending_len(), 0, "after open");
        let id = link.next_id();
        reopen(&link, &caps, &id, &filter, tx);
        assert_eq!(link.pending_len(), 0, "after reopen");
        let Forgotten::Legacy(filter) = link.forget_subscription(&id) else {
            panic!("not a legacy subscription");
        };
        close(&link, &filter);
        assert_eq!(link.pending_len(), 0, "after close");
        link.close_input();
        let lines: Vec<String> = written
            .iter()
            .map(|line| {
                let what = line["params"]["uri"]
                    .as_str()
                    .map_or_else(|| format!("{}", line["params"]["requestId"]), str::to_owned);
                format!("{} {what}", line["method"].as_str().unwrap_or("?"))
            })
            .collect();
        assert_eq!(
            lines,
            [
                "resources/subscribe a://1",
                "resources/subscribe a://2",
                "notifications/cancelled 2",
                "notifications/cancelled 3",
                "resources/unsubscribe a://1",
                "resources/unsubscribe a://2",
                "resources/subscribe a://1",
                "resources/subscribe a://2",
                "resources/unsubscribe a://1",
                "resources/unsubscribe a://2",
            ]
        );
    }
}
