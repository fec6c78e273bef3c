//! `listen`: the acknowledged filter, then one event a line, until the
//! server's final result, Ctrl-C, or the reader of our output going away.
//! A server that offers none of what was asked (it acknowledges nothing,
//! or declares nothing and does not serve `subscriptions/listen`) is told
//! apart from a failure: what it offers, and exit 0. One that offers
//! resource subscriptions but accepts none of the URIs asked for said no
//! to them: a failure (exit 1) that names them.

use std::time::Duration;

use mcp_stdio::types::{ServerCapabilities, SubscriptionFilter};
use mcp_stdio::{Era, Error, SubscriptionEnd, SubscriptionEvent, error_code};
use serde_json::json;

use super::Ctx;
use crate::output::print;
use crate::{Failure, status};

pub fn listen(ctx: &Ctx<'_>, filter: &SubscriptionFilter) -> Result<u8, Failure> {
    let json = ctx.opts.json;
    let offers = offered(&ctx.client.server_capabilities());
    let mut sub = match ctx.client.listen(filter.clone()) {
        Ok(sub) => sub,
        // A server that declares nothing to listen to need not serve the
        // method (fastmcp 4.2.3 and supergateway answer `-32601`): an
        // answer, not a failure.
        Err(Error::Rpc(e)) if e.code == error_code::METHOD_NOT_FOUND && offers.is_empty() => {
            return Ok(nothing(json, &offers));
        }
        Err(e) => return Err(ctx.failure(e, "subscriptions/listen")),
    };
    let accepted = sub.accepted().clone();
    if accepted == SubscriptionFilter::default() {
        // Nothing asked for can ever come: waiting would wait for nothing.
        let refused = sub.not_accepted().resource_subscriptions;
        sub.cancel();
        if let Some(uris) = refused.filter(|uris| !uris.is_empty())
            && offers.contains(&SUBSCRIPTIONS)
        {
            return Err(Failure {
                status: status::SERVER_FAILURE,
                message: format!(
                    "the server accepted no subscription to {}: it offers resource subscriptions, but not to {}",
                    uris.join(", "),
                    if uris.len() == 1 {
                        "that URI"
                    } else {
                        "those URIs"
                    }
                ),
                server_gone: false,
                rpc: None,
            });
        }
        return Ok(nothing(json, &offers));
    }
    let legacy = matches!(ctx.client.era(), Era::Legacy { .. });
    if json {
        let mut ack = json!({
            "method": "notifications/subscriptions/acknowledged",
            "params": { "notifications": accepted },
        });
        if legacy {
            // A legacy server has no `subscriptions/listen`: the client
            // subscribed with `resources/subscribe` and made this itself,
            // which is said, not passed off as the server's.
            ack["madeBy"] = json!("client");
        }
        print(&ack.to_string());
    } else {
        print(&format!("listening: {}", describe_filter(&accepted)));
    }
    let refused = sub.not_accepted();
    if refused != SubscriptionFilter::default() {
        ctx.stderr
            .line(&format!("not accepted: {}", describe_filter(&refused)));
    }
    loop {
        let next = match &ctx.signals {
            Some(signals) => {
                // The subscription has no channel to select on: wait in
                // short slices, looking for a signal between them.
                match sub.recv_timeout(Duration::from_millis(100)) {
                    Ok(None) if signals.try_recv().is_ok() => {
                        sub.cancel();
                        end_line(json, "cancelled", "cancelled (interrupted)");
                        return Ok(status::INTERRUPTED);
                    }
                    Ok(None) => continue,
                    Ok(Some(event)) => Ok(event),
                    Err(end) => Err(end),
                }
            }
            None => sub.recv(),
        };
        match next {
            Ok(event) => {
                if !print(&event_line(&event, json)) {
                    // Nobody reads our output any more (`| head`).
                    sub.cancel();
                    return Ok(0);
                }
            }
            Err(SubscriptionEnd::Closed) => {
                end_line(json, "closed", "closed by the server");
                return Ok(0);
            }
            // A legacy server has no final result: the connection ending is
            // how its subscriptions end.
            Err(SubscriptionEnd::Disconnected) if legacy => {
                end_line(
                    json,
                    "closed",
                    "closed by the server (it ended the connection)",
                );
                return Ok(0);
            }
            Err(SubscriptionEnd::Disconnected) => {
                return Err(Failure::connection(
                    "the connection closed before the server's final result for subscriptions/listen",
                ));
            }
            // The events came faster than they were printed (our output
            // is read slowly) for longer than the client holds them.
            Err(SubscriptionEnd::Overflowed) => {
                return Err(Failure::connection(
                    "the server's events came faster than they were printed, and the client cancelled the subscription once more than 16 MiB of them waited",
                ));
            }
            Err(other) => {
                return Err(Failure::connection(format!(
                    "the subscription ended ({other:?})"
                )));
            }
        }
    }
}

/// Nothing asked for is offered: says what the server offers; exit 0.
fn nothing(json: bool, offers: &[&str]) -> u8 {
    let offers = if offers.is_empty() {
        "no list changes and no resource subscriptions".to_owned()
    } else {
        offers.join(", ")
    };
    end_line(
        json,
        "nothing",
        &format!("nothing to listen to: the server offers {offers}"),
    );
    0
}

/// How [`offered`] names resource subscriptions.
const SUBSCRIPTIONS: &str = "resource subscriptions";

/// What a server's capabilities say it delivers to a listen.
fn offered(capabilities: &ServerCapabilities) -> Vec<&'static str> {
    let on = |flag: Option<bool>| flag == Some(true);
    let resources = capabilities.resources.as_ref();
    [
        (
            on(capabilities.tools.as_ref().and_then(|t| t.list_changed)),
            "tools",
        ),
        (
            on(capabilities.prompts.as_ref().and_then(|p| p.list_changed)),
            "prompts",
        ),
        (on(resources.and_then(|r| r.list_changed)), "resources"),
        (on(resources.and_then(|r| r.subscribe)), SUBSCRIPTIONS),
    ]
    .into_iter()
    .filter_map(|(on, what)| on.then_some(what))
    .collect()
}

fn end_line(json: bool, end: &str, text: &str) {
    if json {
        print(&json!({ "end": end }).to_string());
    } else {
        print(text);
    }
}

/// `tools, prompts, resources, resource mem://counter`.
fn describe_filter(filter: &SubscriptionFilter) -> String {
    let mut parts = Vec::new();
    let on = |flag: Option<bool>| flag == Some(true);
    if on(filter.tools_list_changed) {
        parts.push("tools".to_owned());
    }
    if on(filter.prompts_list_changed) {
        parts.push("prompts".to_owned());
    }
    if on(filter.resources_list_changed) {
        parts.push("resources".to_owned());
    }
    for uri in filter.resource_subscriptions.iter().flatten() {
        parts.push(format!("resource {}", crate::escape::line(uri)));
    }
    for task in filter.task_ids.iter().flatten() {
        parts.push(format!("task {}", crate::escape::line(task)));
    }
    if parts.is_empty() {
        "nothing".to_owned()
    } else {
        parts.join(", ")
    }
}

/// One event: its short name for people, its notification for `--json`.
fn event_line(event: &SubscriptionEvent, json: bool) -> String {
    let (method, params) = match event {
        SubscriptionEvent::ToolsListChanged => ("notifications/tools/list_changed", json!({})),
        SubscriptionEvent::PromptsListChanged => ("notifications/prompts/list_changed", json!({})),
        SubscriptionEvent::ResourcesListChanged => {
            ("notifications/resources/list_changed", json!({}))
        }
        SubscriptionEvent::ResourceUpdated { uri } => {
            ("notifications/resources/updated", json!({ "uri": uri }))
        }
        SubscriptionEvent::Resubscribed { accepted } => (
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": accepted }),
        ),
        SubscriptionEvent::TaskStatus(task) => ("notifications/tasks", json!(task)),
        SubscriptionEvent::Other { method, params } => (method.as_str(), params.clone()),
        _ => ("unknown", json!({})),
    };
    if json {
        return json!({ "method": method, "params": params }).to_string();
    }
    let short = method.strip_prefix("notifications/").unwrap_or(method);
    match event {
        SubscriptionEvent::ResourceUpdated { uri } => {
            format!("{short} {}", crate::escape::line(uri))
        }
        SubscriptionEvent::ToolsListChanged
        | SubscriptionEvent::PromptsListChanged
        | SubscriptionEvent::ResourcesListChanged => short.to_owned(),
        // The method is the server's, as its params are: one event, one
        // line (`escape`).
        _ => crate::escape::line(&format!("{short} {params}")).into_owned(),
    }
}
