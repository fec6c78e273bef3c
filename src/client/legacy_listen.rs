//! [`Client::listen`](crate::Client::listen) against a legacy
//! (initialize-era) server, which has no `subscriptions/listen`: the
//! subscription is made of what that era offers instead.
//!
//! - `resourceSubscriptions` become one `resources/subscribe` per URI (spec
//!   2025-11-25 server/resources, "Subscriptions"), accepted when the server
//!   declares `resources.subscribe` and answers the request; closing the
//!   subscription sends `resources/unsubscribe` for every URI no other open
//!   subscription still wants.
//! - The list-changed flags are accepted when the server declares
//!   `listChanged` for that list: a legacy server then sends untagged
//!   `notifications/*/list_changed` to the whole connection.
//!
//! Untagged notifications reach every legacy subscription whose accepted
//! filter covers them (`Link::route_notification`). The acknowledgment is
//! the client's own: there is no listen request, and the subscription's id
//! is a client-side id that never goes on the wire.

use std::time::Duration;

use crossbeam_channel::Sender;
use serde_json::{Value, json};

use crate::client::link::{Delivery, Link, SubscriptionDelivery};
use crate::jsonrpc::RequestId;
use crate::jsonrpc::encode_request;
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
/// each URI and waits up to `timeout` for each answer. Returns what was
/// accepted; a URI the server refused or did not answer is left out.
pub(crate) fn open(
    link: &Link,
    caps: &ServerCapabilities,
    id: &RequestId,
    filter: &SubscriptionFilter,
    tx: Sender<SubscriptionDelivery>,
    timeout: Duration,
) -> SubscriptionFilter {
    let mut accepted = deliverable(caps, filter);
    link.adopt_legacy_subscription(id, accepted.clone(), tx);
    if let Some(uris) = accepted.resource_subscriptions.take() {
        let answers: Vec<_> = uris
            .into_iter()
            .map(|uri| {
                let rx = send_resource_request(link, SUBSCRIBE, &uri);
                (uri, rx)
            })
            .collect();
        let kept: Vec<String> = answers
            .into_iter()
            .filter(|(_, rx)| {
                matches!(
                    rx.as_ref().map(|rx| rx.recv_timeout(timeout)),
                    Some(Ok(Delivery::Reply(Ok(_))))
                )
            })
            .map(|(uri, _)| uri)
            .collect();
        accepted.resource_subscriptions = (!kept.is_empty()).then_some(kept);
        link.set_legacy_filter(id, accepted.clone());
    }
    accepted
}

/// Re-opens a subscription on a restarted legacy server without waiting:
/// the handle learns what was accepted from a `Resubscribed` event, as it
/// would from a modern server's new acknowledgment.
pub(crate) fn reopen(
    link: &Link,
    caps: &ServerCapabilities,
    id: &RequestId,
    filter: &SubscriptionFilter,
    tx: Sender<SubscriptionDelivery>,
) {
    let accepted = deliverable(caps, filter);
    for uri in accepted.resource_subscriptions.iter().flatten() {
        // The answer is not awaited: its receiver is dropped.
        let _ = send_resource_request(link, SUBSCRIBE, uri);
    }
    let ack = json!({ "notifications": accepted });
    link.adopt_legacy_subscription(id, accepted, tx.clone());
    let _ = tx.send(SubscriptionDelivery::Notification {
        method: method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED.to_owned(),
        params: ack,
    });
}

/// Closes a legacy subscription whose accepted filter was `filter`:
/// unsubscribes from each of its URIs that no open subscription still
/// wants. The answers are not awaited.
pub(crate) fn close(link: &Link, filter: &SubscriptionFilter) {
    for uri in filter.resource_subscriptions.iter().flatten() {
        if !link.legacy_uri_wanted(uri) {
            let _ = send_resource_request(link, UNSUBSCRIBE, uri);
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

/// Sends `resources/subscribe` or `resources/unsubscribe` for `uri`; the
/// receiver gets the answer (`None`: the connection is gone).
fn send_resource_request(
    link: &Link,
    method: &str,
    uri: &str,
) -> Option<crossbeam_channel::Receiver<Delivery>> {
    let id = link.next_id();
    let line = encode_request(&id, method, &json!({ "uri": uri })).ok()?;
    let rx = link.register(&id, None, false);
    link.send(line).then_some(rx)
}
