//! `subscriptions/listen` (spec 2026-07-28 basic/patterns/subscriptions,
//! basic/patterns/cancellation, basic/transports/stdio): validation, the
//! acknowledgment, filters, delivery, cancellation, graceful closure,
//! ordering under load and fan-out.
//!
//! Every check of "nothing else was sent" is a barrier: a request whose
//! reply must be the very next line, or `Peer::finish`, which shows
//! everything the server still wrote.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use mcp_stdio::types::{
    CallToolResult, GetPromptResult, Prompt, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role, SubscriptionFilter, Tool,
};
use mcp_stdio::{RequestId, Server};
use serde_json::{Value, json};

use crate::support::{Blocker, Peer, WAIT, call, cancel, error, request, server_meta, text_result};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
const TOOLS: &str = "notifications/tools/list_changed";
const PROMPTS: &str = "notifications/prompts/list_changed";
const RESOURCES: &str = "notifications/resources/list_changed";

/// A `subscriptions/listen` request with the standard `_meta`.
fn listen(id: impl Into<Value>, notifications: Value) -> Value {
    request(
        id,
        "subscriptions/listen",
        json!({ "notifications": notifications }),
    )
}

/// `notifications/subscriptions/acknowledged` for subscription `id`.
fn ack(id: impl Into<Value>, notifications: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "_meta": { SUBSCRIPTION_ID: id.into() },
            "notifications": notifications
        }
    })
}

/// A list-changed notification delivered to subscription `id`.
fn changed(id: impl Into<Value>, method: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": method,
        "params": { "_meta": { SUBSCRIPTION_ID: id.into() } }
    })
}

/// `notifications/resources/updated` for `uri`, delivered to subscription
/// `id`.
fn updated(id: impl Into<Value>, uri: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": { "_meta": { SUBSCRIPTION_ID: id.into() }, "uri": uri }
    })
}

/// The final result that ends subscription `id` gracefully; `server_meta`
/// is the server's result `_meta`.
fn closed(server_meta: &Value, id: impl Into<Value>) -> Value {
    let id = id.into();
    let mut meta = server_meta.clone();
    meta[SUBSCRIPTION_ID] = id.clone();
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": { "resultType": "complete", "_meta": meta }
    })
}

/// Opens a subscription and asserts that its acknowledgment is the next
/// line.
fn open(peer: &mut Peer, id: impl Into<Value>, filter: Value, accepted: Value) {
    let id = id.into();
    peer.send(&listen(id.clone(), filter));
    assert_eq!(peer.recv(), ack(id, accepted));
}

/// Sends a `server/discover` and asserts that its reply is the very next
/// line: everything sent or published before it has been handled, and
/// nothing else was written in between.
fn barrier(peer: &mut Peer, id: impl Into<Value>) {
    let id = id.into();
    let resp = peer.ask(&request(id.clone(), "server/discover", json!({})));
    assert!(
        is_barrier_reply(&resp, &id),
        "expected the barrier reply: {resp}"
    );
}

fn is_barrier_reply(resp: &Value, id: &Value) -> bool {
    let Some(map) = resp.as_object() else {
        return false;
    };
    let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys == ["id", "jsonrpc", "result"]
        && resp["id"] == *id
        && resp["result"]["resultType"] == "complete"
        && resp["result"]["supportedVersions"] == json!(["2026-07-28"])
}

/// Reads `expected.len()` messages and asserts they are exactly `expected`,
/// in any order (for lines whose relative order the spec leaves open, such
/// as a tool's reply and the notification it caused).
fn recv_unordered(peer: &Peer, expected: Vec<Value>) {
    let got: Vec<Value> = expected.iter().map(|_| peer.recv()).collect();
    assert_same_messages(got, expected);
}

fn assert_same_messages(mut got: Vec<Value>, mut expected: Vec<Value>) {
    let key = |v: &Value| v.to_string();
    got.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(got, expected);
}

/// The message the server gives for a filter that does not read as a
/// `SubscriptionFilter` (it parses the filter as the client sent it).
fn filter_error(notifications: &Value) -> String {
    let text = serde_json::to_string(notifications).unwrap();
    let e = serde_json::from_str::<SubscriptionFilter>(&text).unwrap_err();
    format!("invalid params: invalid notifications filter: {e}")
}

fn echo_tool() -> Tool {
    Tool::new("echo", "Returns its text unchanged.")
}

fn echo(
    _ctx: &mcp_stdio::RequestContext,
    args: Value,
) -> Result<CallToolResult, mcp_stdio::ErrorObject> {
    Ok(CallToolResult::text(args.to_string()))
}

/// A server with one tool and nothing else.
fn tools_only() -> Server {
    Server::builder("tools-only", "1.0.0")
        .inline_tool(echo_tool(), echo)
        .build()
}

fn text_resource(uri: &str) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::text(uri, "text")])
}

fn hello_prompt() -> GetPromptResult {
    GetPromptResult::new(vec![PromptMessage::text(Role::User, "hello")])
}

/// The filter that asks for everything, `uris` included.
fn everything_filter(uris: &[&str]) -> Value {
    json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourcesListChanged": true,
        "resourceSubscriptions": uris
    })
}

// --- 1. Validation -------------------------------------------------------

#[test]
fn listen_is_validated_like_every_request() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let filter = json!({ "toolsListChanged": true });
    let missing = |id: i64, key: &str| {
        error(
            id,
            -32602,
            &format!("invalid params: missing _meta[\"{key}\"]"),
        )
    };

    // No `_meta`, and no params at all.
    assert_eq!(
        peer.ask(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": { "notifications": filter }
        })),
        missing(1, "io.modelcontextprotocol/protocolVersion")
    );
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen" })),
        missing(2, "io.modelcontextprotocol/protocolVersion")
    );
    // `_meta` without client capabilities.
    assert_eq!(
        peer.ask(&json!({
            "jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen",
            "params": {
                "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" },
                "notifications": filter
            }
        })),
        missing(3, "io.modelcontextprotocol/clientCapabilities")
    );
    // A version the server does not speak.
    assert_eq!(
        peer.ask(&json!({
            "jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2025-11-25",
                    "io.modelcontextprotocol/clientCapabilities": {}
                },
                "notifications": filter
            }
        })),
        json!({
            "jsonrpc": "2.0",
            "id": 4,
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": { "supported": ["2026-07-28"], "requested": "2025-11-25" }
            }
        })
    );
    // No filter: the schema requires `notifications`.
    assert_eq!(
        peer.ask(&request(5, "subscriptions/listen", json!({}))),
        error(5, -32602, "invalid params: missing notifications")
    );

    // Filters of the wrong shape.
    let bad = [
        json!({ "toolsListChanged": "yes" }),
        json!({ "resourceSubscriptions": "x" }),
        json!({ "resourceSubscriptions": [1] }),
        json!({ "resourceSubscriptions": ["ok", null] }),
        json!({ "promptsListChanged": 1 }),
        json!({ "resourcesListChanged": [] }),
        json!(null),
        json!("toolsListChanged"),
        json!(true),
    ];
    for (n, notifications) in bad.iter().enumerate() {
        let id = 10 + n as i64;
        assert_eq!(
            peer.ask(&listen(id, notifications.clone())),
            error(id, -32602, &filter_error(notifications)),
            "filter {notifications}"
        );
    }
    // One message spelled out.
    assert_eq!(
        filter_error(&bad[0]),
        "invalid params: invalid notifications filter: invalid type: string \"yes\", expected a boolean at line 1 column 25"
    );

    // None of them opened a subscription: an event reaches nobody (and id 1
    // is taken again below).
    notifier.tools_list_changed();
    barrier(&mut peer, "b1");

    // `null` members are the same as absent ones, as everywhere else.
    assert_eq!(
        peer.ask(&listen(
            "nulls",
            json!({
                "toolsListChanged": null,
                "promptsListChanged": true,
                "resourcesListChanged": null,
                "resourceSubscriptions": null
            })
        )),
        ack("nulls", json!({ "promptsListChanged": true }))
    );
    // (Its cancellation is handled before the listen below: `finish` shows
    // no final result for it.)
    peer.send(&cancel("nulls"));

    // Unknown members, of the filter and of params, are ignored; request
    // metadata asking for progress and logs changes nothing (a listen runs
    // no handler, and request-scoped notifications never go on its stream).
    let mut req = request(
        1,
        "subscriptions/listen",
        json!({
            "notifications": {
                "toolsListChanged": true,
                "futureFilter": { "x": 1 },
                "promptsListChanged": true
            },
            "futureParam": [1, 2]
        }),
    );
    req["params"]["_meta"]["progressToken"] = json!("p");
    req["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    peer.send(&req);
    assert_eq!(
        peer.recv(),
        ack(
            1,
            json!({ "toolsListChanged": true, "promptsListChanged": true })
        )
    );
    // The listen gets no reply while it is open.
    barrier(&mut peer, "b2");
    peer.assert_silent_for(Duration::from_millis(30));
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), 1)]);
}

/// The filter is a `SubscriptionFilter` object (schema.json); an array is
/// not one, even though a derived serde struct would read `[true]` as
/// `{"toolsListChanged": true}` by position.
#[test]
fn a_filter_that_is_an_array_is_invalid_params() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let arrays = [
        json!([]),
        json!([true]),
        json!([true, true, true, ["mem://counter"]]),
    ];
    for (n, notifications) in arrays.iter().enumerate() {
        let id = n as i64 + 1;
        let resp = peer.ask(&listen(id, notifications.clone()));
        assert_eq!(
            (&resp["id"], &resp["error"]["code"]),
            (&json!(id), &json!(-32602)),
            "filter {notifications} must be refused: {resp}"
        );
        let message = resp["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("invalid params: invalid notifications filter: "),
            "{resp}"
        );
        let mut keys: Vec<&String> = resp.as_object().unwrap().keys().collect();
        keys.sort_unstable();
        assert_eq!(keys, ["error", "id", "jsonrpc"], "{resp}");
    }
    // Nothing was opened.
    notifier.tools_list_changed();
    barrier(&mut peer, "b");
    peer.finish_quietly();
}

// --- 2. The acknowledgment -----------------------------------------------

#[test]
fn the_ack_echoes_what_a_full_server_accepts() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // The first message carrying the id is the ack (nothing else is in
    // flight, so it is the very next line), and it echoes every requested
    // type and URI.
    open(
        &mut peer,
        7,
        everything_filter(&["mem://counter", "test://static-text"]),
        everything_filter(&["mem://counter", "test://static-text"]),
    );
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), 7)]);
}

#[test]
fn a_tools_only_server_acknowledges_only_tools() {
    let server = tools_only();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        1,
        everything_filter(&["mem://a", "file:///b"]),
        json!({ "toolsListChanged": true }),
    );
    // What was not acknowledged is never delivered.
    notifier.prompts_list_changed();
    notifier.resources_list_changed();
    notifier.resource_updated("mem://a");
    notifier.resource_updated("file:///b");
    barrier(&mut peer, "b1");
    // What was is.
    notifier.tools_list_changed();
    assert_eq!(peer.recv(), changed(1, TOOLS));
    barrier(&mut peer, "b2");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), 1)]);
}

#[test]
fn false_flags_and_empty_lists_are_not_echoed() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        1,
        json!({
            "toolsListChanged": false,
            "promptsListChanged": true,
            "resourcesListChanged": false,
            "resourceSubscriptions": []
        }),
        json!({ "promptsListChanged": true }),
    );
    // Every flag false, or nothing asked: an empty accepted set.
    open(
        &mut peer,
        2,
        json!({
            "toolsListChanged": false,
            "promptsListChanged": false,
            "resourcesListChanged": false
        }),
        json!({}),
    );
    open(&mut peer, 3, json!({}), json!({}));
    open(
        &mut peer,
        4,
        json!({ "resourceSubscriptions": [] }),
        json!({}),
    );
    notifier.tools_list_changed();
    notifier.resources_list_changed();
    notifier.resource_updated("mem://counter");
    barrier(&mut peer, "b1");
    notifier.prompts_list_changed();
    assert_eq!(peer.recv(), changed(1, PROMPTS));
    barrier(&mut peer, "b2");
    // A subscription that accepted nothing is still open, and still ends
    // gracefully.
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(rest, [1, 2, 3, 4].map(|id| closed(&meta, id)).to_vec());
}

#[test]
fn a_server_without_resources_drops_resource_subscriptions() {
    let server = Server::builder("no-resources", "1.0.0")
        .inline_tool(echo_tool(), echo)
        .prompt(Prompt::new("p", "A prompt."), |_ctx, _| Ok(hello_prompt()))
        .build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        "r",
        everything_filter(&["mem://a"]),
        json!({ "toolsListChanged": true, "promptsListChanged": true }),
    );
    open(
        &mut peer,
        "only-resources",
        json!({ "resourcesListChanged": true, "resourceSubscriptions": ["mem://a"] }),
        json!({}),
    );
    notifier.resources_list_changed();
    notifier.resource_updated("mem://a");
    barrier(&mut peer, "b1");
    notifier.tools_list_changed();
    notifier.prompts_list_changed();
    assert_eq!(peer.recv(), changed("r", TOOLS));
    assert_eq!(peer.recv(), changed("r", PROMPTS));
    barrier(&mut peer, "b2");
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(rest, [closed(&meta, "r"), closed(&meta, "only-resources")]);
}

#[test]
fn a_server_without_features_accepts_nothing() {
    let server = Server::builder("minimal", "1.0.0").build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    open(&mut peer, 1, everything_filter(&["mem://a"]), json!({}));
    notifier.tools_list_changed();
    notifier.prompts_list_changed();
    notifier.resources_list_changed();
    notifier.resource_updated("mem://a");
    barrier(&mut peer, "b");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), 1)]);
}

#[test]
fn the_subscription_filter_hook_narrows_the_uris() {
    let (seen_tx, seen) = crossbeam_channel::unbounded();
    let server = Server::builder("filtered", "1.0.0")
        .inline_resource(Resource::new("mem://a", "a"), |_ctx, req| {
            Ok(text_resource(&req.uri))
        })
        .resource_subscription_filter(move |uri| {
            seen_tx.send(uri.to_owned()).unwrap();
            uri.starts_with("mem://")
        })
        .build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        1,
        json!({
            "resourcesListChanged": true,
            "resourceSubscriptions": ["mem://a", "file:///etc/passwd", "mem://b", "mem://a"]
        }),
        json!({ "resourcesListChanged": true, "resourceSubscriptions": ["mem://a", "mem://b"] }),
    );
    // The hook was asked about the requested URIs, in order (whether it is
    // asked about a duplicate again is the server's business).
    let asked: Vec<String> = seen.try_iter().collect();
    assert!((3..=4).contains(&asked.len()), "{asked:?}");
    assert_eq!(
        asked[..3],
        ["mem://a", "file:///etc/passwd", "mem://b"],
        "{asked:?}"
    );
    // A refused URI is never delivered; accepted ones are, once each.
    notifier.resource_updated("file:///etc/passwd");
    barrier(&mut peer, "b1");
    notifier.resource_updated("mem://a");
    notifier.resource_updated("mem://b");
    assert_eq!(peer.recv(), updated(1, "mem://a"));
    assert_eq!(peer.recv(), updated(1, "mem://b"));
    barrier(&mut peer, "b2");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), 1)]);
}

#[test]
fn duplicate_uris_are_acknowledged_and_delivered_once() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        1,
        json!({
            "resourceSubscriptions": ["mem://counter", "mem://counter", "test://x", "mem://counter"]
        }),
        json!({ "resourceSubscriptions": ["mem://counter", "test://x"] }),
    );
    // `bump` publishes an update of mem://counter: one notification.
    peer.send(&call(2, "bump", json!({})));
    recv_unordered(
        &peer,
        vec![text_result(&peer, 2, "1"), updated(1, "mem://counter")],
    );
    barrier(&mut peer, "b");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), 1)]);
}

// --- 3. Ids --------------------------------------------------------------

#[test]
fn string_and_integer_ids_are_distinct_subscriptions() {
    let server = tools_only();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let tools = json!({ "toolsListChanged": true });
    let accepted = json!({ "toolsListChanged": true });
    open(&mut peer, "1", tools.clone(), accepted.clone());
    open(&mut peer, 1, tools.clone(), accepted.clone());
    // Both open at once, each tagged exactly with its own id.
    notifier.tools_list_changed();
    recv_unordered(&peer, vec![changed("1", TOOLS), changed(1, TOOLS)]);
    // Each id is taken while its subscription is open.
    assert_eq!(
        peer.ask(&listen(1, tools.clone())),
        error(
            1,
            -32600,
            "invalid request: request id 1 is already in use by a request in flight"
        )
    );
    assert_eq!(
        peer.ask(&listen("1", tools.clone())),
        error(
            "1",
            -32600,
            "invalid request: request id \"1\" is already in use by a request in flight"
        )
    );
    // Cancelling the string id leaves the integer one.
    peer.send(&cancel("1"));
    barrier(&mut peer, "b1");
    notifier.tools_list_changed();
    assert_eq!(peer.recv(), changed(1, TOOLS));
    barrier(&mut peer, "b2");
    // Closing the integer id leaves nothing.
    notifier.close_subscription(&RequestId::from(1));
    assert_eq!(peer.recv(), closed(&server_meta(&server), 1));
    notifier.tools_list_changed();
    barrier(&mut peer, "b3");

    // Other ids, exactly as sent.
    let ids = [
        json!(0),
        json!(-1),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(""),
        json!("0"),
        json!("订阅 \"quoted\" \\ \u{1}"),
    ];
    for id in &ids {
        open(&mut peer, id.clone(), tools.clone(), accepted.clone());
    }
    notifier.tools_list_changed();
    recv_unordered(
        &peer,
        ids.iter().map(|id| changed(id.clone(), TOOLS)).collect(),
    );
    barrier(&mut peer, "b4");
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(
        rest,
        ids.iter()
            .map(|id| closed(&meta, id.clone()))
            .collect::<Vec<_>>()
    );
}

// --- 4. Filters ----------------------------------------------------------

#[test]
fn each_event_reaches_exactly_the_subscriptions_that_asked() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);

    // The trigger tools publish to nobody while nothing listens.
    let trigger_reply = |peer: &Peer, tool: &str, id: i64| {
        let text = match tool {
            "test_trigger_tool_change" => "Tool list change published.",
            _ => "Prompt list change published.",
        };
        text_result(peer, id, text)
    };
    for (id, tool) in [
        (1, "test_trigger_tool_change"),
        (2, "test_trigger_prompt_change"),
    ] {
        assert_eq!(
            peer.ask(&call(id, tool, json!({}))),
            trigger_reply(&peer, tool, id)
        );
        barrier(&mut peer, format!("after {tool}"));
    }

    open(
        &mut peer,
        "tools",
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    );
    open(
        &mut peer,
        "prompts",
        json!({ "promptsListChanged": true }),
        json!({ "promptsListChanged": true }),
    );
    open(
        &mut peer,
        "counter",
        json!({ "resourceSubscriptions": ["mem://counter"] }),
        json!({ "resourceSubscriptions": ["mem://counter"] }),
    );
    open(
        &mut peer,
        4,
        json!({ "resourcesListChanged": true }),
        json!({ "resourcesListChanged": true }),
    );
    open(
        &mut peer,
        "static",
        json!({ "resourceSubscriptions": ["test://static-text"] }),
        json!({ "resourceSubscriptions": ["test://static-text"] }),
    );
    open(
        &mut peer,
        "all",
        everything_filter(&["mem://counter"]),
        everything_filter(&["mem://counter"]),
    );

    peer.send(&call(10, "test_trigger_tool_change", json!({})));
    recv_unordered(
        &peer,
        vec![
            trigger_reply(&peer, "test_trigger_tool_change", 10),
            changed("tools", TOOLS),
            changed("all", TOOLS),
        ],
    );
    barrier(&mut peer, "b10");

    peer.send(&call(11, "test_trigger_prompt_change", json!({})));
    recv_unordered(
        &peer,
        vec![
            trigger_reply(&peer, "test_trigger_prompt_change", 11),
            changed("prompts", PROMPTS),
            changed("all", PROMPTS),
        ],
    );
    barrier(&mut peer, "b11");

    peer.send(&call(12, "bump", json!({})));
    recv_unordered(
        &peer,
        vec![
            text_result(&peer, 12, "1"),
            updated("counter", "mem://counter"),
            updated("all", "mem://counter"),
        ],
    );
    barrier(&mut peer, "b12");

    // Adding and removing a tool from a handler announces a tools change.
    peer.send(&call(13, "toggle_tool", json!({})));
    recv_unordered(
        &peer,
        vec![
            text_result(&peer, 13, "added ephemeral"),
            changed("tools", TOOLS),
            changed("all", TOOLS),
        ],
    );
    barrier(&mut peer, "b13");
    peer.send(&call(14, "toggle_tool", json!({})));
    recv_unordered(
        &peer,
        vec![
            text_result(&peer, 14, "removed ephemeral"),
            changed("tools", TOOLS),
            changed("all", TOOLS),
        ],
    );
    barrier(&mut peer, "b14");

    // From the application, outside any request.
    notifier.resource_updated("mem://not-subscribed");
    barrier(&mut peer, "b15");
    notifier.resource_updated("test://static-text");
    assert_eq!(peer.recv(), updated("static", "test://static-text"));
    barrier(&mut peer, "b16");
    notifier.resources_list_changed();
    recv_unordered(
        &peer,
        vec![changed(4, RESOURCES), changed("all", RESOURCES)],
    );
    barrier(&mut peer, "b17");

    // Tools that change nothing announce nothing.
    assert_eq!(
        peer.ask(&call(18, "echo", json!({ "text": "x" }))),
        text_result(&peer, 18, "x")
    );
    barrier(&mut peer, "b18");

    // Nothing else was ever sent to any of them: at end of input each gets
    // its final result, oldest first, and that is all.
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    let ids = [
        json!("tools"),
        json!("prompts"),
        json!("counter"),
        json!(4),
        json!("static"),
        json!("all"),
    ];
    assert_eq!(
        rest,
        ids.iter()
            .map(|id| closed(&meta, id.clone()))
            .collect::<Vec<_>>()
    );
}

// --- 5. The acknowledgment comes first -----------------------------------

#[test]
fn events_before_the_ack_are_not_delivered_and_events_after_it_are() {
    let server = tools_only();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    // The connection is being served (the notifier reaches it).
    barrier(&mut peer, "ready");
    for round in 0..200i64 {
        // Published before the listen is even sent: no subscription yet.
        notifier.tools_list_changed();
        peer.send(&listen(round, json!({ "toolsListChanged": true })));
        assert_eq!(
            peer.recv(),
            ack(round, json!({ "toolsListChanged": true })),
            "round {round}"
        );
        // Published right after the ack was read: always delivered.
        notifier.tools_list_changed();
        assert_eq!(peer.recv(), changed(round, TOOLS), "round {round}");
        // Once the cancel is handled, the next round starts with nothing
        // open.
        peer.send(&cancel(round));
        barrier(&mut peer, format!("cancelled {round}"));
    }
    barrier(&mut peer, "done");
    peer.finish_quietly();
}

// --- 6. Cancellation -----------------------------------------------------

#[test]
fn cancel_stops_delivery_without_a_final_result_and_frees_the_id() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let tools = json!({ "toolsListChanged": true });
    open(&mut peer, 1, tools.clone(), tools.clone());
    open(&mut peer, "x", tools.clone(), tools.clone());
    peer.send(&cancel(1));
    // The barrier proves the cancellation was handled: the cancelled listen
    // gets no final result and no `notifications/cancelled`.
    barrier(&mut peer, "b1");
    notifier.tools_list_changed();
    assert_eq!(peer.recv(), changed("x", TOOLS));
    barrier(&mut peer, "b2");
    // The same id opens a new subscription, with its own filter.
    open(
        &mut peer,
        1,
        json!({ "promptsListChanged": true }),
        json!({ "promptsListChanged": true }),
    );
    notifier.tools_list_changed();
    assert_eq!(peer.recv(), changed("x", TOOLS));
    notifier.prompts_list_changed();
    assert_eq!(peer.recv(), changed(1, PROMPTS));
    barrier(&mut peer, "b3");
    // Cancellations of unknown ids, of `"1"` (not `1`), and malformed ones
    // are ignored.
    peer.send(&cancel(99));
    peer.send(&cancel("1"));
    peer.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {} }));
    peer.send(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": null }
    }));
    peer.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled" }));
    barrier(&mut peer, "b4");
    notifier.prompts_list_changed();
    assert_eq!(peer.recv(), changed(1, PROMPTS));
    barrier(&mut peer, "b5");
    // Cancelling twice is harmless.
    peer.send(&cancel("x"));
    peer.send(&cancel("x"));
    barrier(&mut peer, "b6");
    notifier.tools_list_changed();
    barrier(&mut peer, "b7");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), 1)]);
}

// --- 7. Graceful closure -------------------------------------------------

#[test]
fn end_of_input_closes_every_subscription_oldest_first() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        3,
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    );
    open(&mut peer, "two", json!({}), json!({}));
    open(
        &mut peer,
        1,
        json!({ "resourceSubscriptions": ["mem://counter"] }),
        json!({ "resourceSubscriptions": ["mem://counter"] }),
    );
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(
        rest,
        [closed(&meta, 3), closed(&meta, "two"), closed(&meta, 1)]
    );
}

#[test]
fn end_of_input_closes_subscriptions_at_once_while_work_drains() {
    let (builder, blocker) = Blocker::install(Server::builder("drain", "1.0.0"));
    let server = builder.build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        "s",
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    );
    peer.send(&call("work", "block", json!({})));
    assert_eq!(blocker.wait_started(), json!("work"));
    peer.close_input();
    // The subscription ends right away; the request keeps its grace period.
    assert_eq!(peer.recv(), closed(&peer.server_meta, "s"));
    notifier.tools_list_changed();
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, "work", "released"));
    peer.finish_quietly();
}

#[test]
fn stop_closes_every_subscription() {
    let server = crate::everything::build();
    let stop = server.stop_handle();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        1,
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    );
    open(
        &mut peer,
        "b",
        json!({ "promptsListChanged": true }),
        json!({ "promptsListChanged": true }),
    );
    stop.stop();
    assert_eq!(peer.recv(), closed(&peer.server_meta, 1));
    assert_eq!(peer.recv(), closed(&peer.server_meta, "b"));
    notifier.tools_list_changed();
    notifier.prompts_list_changed();
    // Serve returned: the output is closed with nothing more on it.
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, Vec::<Value>::new());
}

#[test]
fn the_end_listen_fixture_closes_every_subscription() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let tools = json!({ "toolsListChanged": true });
    open(&mut peer, "a", tools.clone(), tools.clone());
    open(
        &mut peer,
        2,
        json!({ "promptsListChanged": true }),
        json!({ "promptsListChanged": true }),
    );
    peer.send(&call(10, "end_listen", json!({})));
    let lines: Vec<Value> = (0..3).map(|_| peer.recv()).collect();
    // The tool's reply, and the final results oldest first.
    let (reply, finals): (Vec<Value>, Vec<Value>) =
        lines.into_iter().partition(|m| m["id"] == json!(10));
    assert_eq!(
        reply,
        [text_result(&peer, 10, "closing every subscription")]
    );
    assert_eq!(
        finals,
        [closed(&peer.server_meta, "a"), closed(&peer.server_meta, 2)]
    );
    // After closure, events reach nobody.
    notifier.tools_list_changed();
    notifier.prompts_list_changed();
    barrier(&mut peer, "b1");
    // With nothing open, end_listen closes nothing.
    assert_eq!(
        peer.ask(&call(11, "end_listen", json!({}))),
        text_result(&peer, 11, "closing every subscription")
    );
    barrier(&mut peer, "b2");
    // The ids are free again.
    open(&mut peer, "a", tools.clone(), tools.clone());
    notifier.tools_list_changed();
    assert_eq!(peer.recv(), changed("a", TOOLS));
    barrier(&mut peer, "b3");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), "a")]);
}

#[test]
fn close_subscription_closes_only_that_one() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let tools = json!({ "toolsListChanged": true });
    open(&mut peer, 1, tools.clone(), tools.clone());
    open(&mut peer, 2, tools.clone(), tools.clone());
    open(&mut peer, "1", tools.clone(), tools.clone());
    notifier.close_subscription(&RequestId::from(1));
    assert_eq!(peer.recv(), closed(&peer.server_meta, 1));
    // Unknown ids close nothing, and neither does closing 1 again.
    notifier.close_subscription(&RequestId::from(77));
    notifier.close_subscription(&RequestId::from("2"));
    notifier.close_subscription(&RequestId::from(1));
    barrier(&mut peer, "b1");
    notifier.tools_list_changed();
    recv_unordered(&peer, vec![changed(2, TOOLS), changed("1", TOOLS)]);
    barrier(&mut peer, "b2");
    // A closed id may be used again.
    open(&mut peer, 1, tools.clone(), tools.clone());
    barrier(&mut peer, "b3");
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(
        rest,
        [closed(&meta, 2), closed(&meta, "1"), closed(&meta, 1)]
    );
}

#[test]
fn an_open_listen_id_is_in_use() {
    let (builder, blocker) = Blocker::install(Server::builder("dup", "1.0.0"));
    let server = builder.build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let tools = json!({ "toolsListChanged": true });
    let in_use = |id: Value| {
        let shown = id.to_string();
        error(
            id,
            -32600,
            &format!(
                "invalid request: request id {shown} is already in use by a request in flight"
            ),
        )
    };
    open(&mut peer, 1, tools.clone(), tools.clone());
    // A second listen with the same id is refused, and the first keeps its
    // own filter.
    assert_eq!(
        peer.ask(&listen(1, json!({ "promptsListChanged": true }))),
        in_use(json!(1))
    );
    // So is any other request with that id.
    assert_eq!(peer.ask(&call(1, "block", json!({}))), in_use(json!(1)));
    assert!(blocker.started.is_empty(), "the refused call never started");
    notifier.tools_list_changed();
    assert_eq!(peer.recv(), changed(1, TOOLS));
    barrier(&mut peer, "b1");
    // A listen may not take the id of a request in flight either.
    peer.send(&call("busy", "block", json!({})));
    assert_eq!(blocker.wait_started(), json!("busy"));
    assert_eq!(
        peer.ask(&listen("busy", tools.clone())),
        in_use(json!("busy"))
    );
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, "busy", "released"));
    // Once answered, the id is free.
    open(&mut peer, "busy", tools.clone(), tools.clone());
    notifier.tools_list_changed();
    recv_unordered(&peer, vec![changed(1, TOOLS), changed("busy", TOOLS)]);
    barrier(&mut peer, "b2");
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(rest, [closed(&meta, 1), closed(&meta, "busy")]);
}

// --- 8. Ordering under load ----------------------------------------------

/// The subscription id a message carries, if any: in `_meta` of a
/// notification, or as the id of a final result.
fn subscription_of(message: &Value) -> Option<Value> {
    if let Some(id) = message["params"]["_meta"].get(SUBSCRIPTION_ID) {
        return Some(id.clone());
    }
    message["result"]["_meta"].get(SUBSCRIPTION_ID).cloned()
}

#[test]
fn the_ack_comes_first_and_nothing_follows_a_cancel_under_a_storm() {
    const PUBLISHERS: usize = 4;
    // Events each publisher sends per tick; two ticks a round.
    const BURST: usize = 100;
    const SUBSCRIPTIONS: usize = 50;
    let server = tools_only();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    barrier(&mut peer, "ready");

    // Each tick sets every publisher off on a burst that races with the
    // lines the test just sent. (An unpaced loop would only flood the inbox
    // ahead of the test's lines, so nothing would race with anything.)
    let (ticks, publishers): (Vec<_>, Vec<_>) = (0..PUBLISHERS)
        .map(|_| {
            let (tick, ticked) = crossbeam_channel::unbounded::<()>();
            let notifier = notifier.clone();
            let publisher = std::thread::spawn(move || {
                let mut sent = 0;
                for () in ticked {
                    for _ in 0..BURST {
                        notifier.tools_list_changed();
                        sent += 1;
                    }
                }
                sent
            });
            (tick, publisher)
        })
        .unzip();
    let tick = || {
        for t in &ticks {
            t.send(()).unwrap();
        }
    };

    let tools = json!({ "toolsListChanged": true });
    let mut lines: Vec<Value> = Vec::new();
    // Reads until `stop` matches a line; returns its index.
    let read_until = |peer: &Peer, lines: &mut Vec<Value>, stop: &dyn Fn(&Value) -> bool| {
        loop {
            let message = peer.recv();
            let hit = stop(&message);
            lines.push(message);
            if hit {
                return lines.len() - 1;
            }
        }
    };
    let ids: Vec<Value> = (0..SUBSCRIPTIONS)
        .map(|i| {
            if i % 2 == 0 {
                json!(i)
            } else {
                json!(format!("s{i}"))
            }
        })
        .collect();
    // The index of the barrier reply that follows each subscription's
    // cancel, and whether the test published right after its ack.
    let mut cancelled_before: HashMap<String, usize> = HashMap::new();
    let mut published_after_ack: HashSet<String> = HashSet::new();
    let mut open_ids: Vec<Value> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        peer.send(&listen(id.clone(), tools.clone()));
        tick();
        let mut to_cancel = Vec::new();
        if i % 5 == 0 {
            // Cancelled straight away, before its ack was even read.
            to_cancel.push(id.clone());
        } else {
            let want = ack(id.clone(), tools.clone());
            read_until(&peer, &mut lines, &|m| *m == want);
            notifier.tools_list_changed();
            published_after_ack.insert(id.to_string());
            open_ids.push(id.clone());
            // Keep up to three open at once; cancel the oldest beyond that.
            if open_ids.len() > 3 {
                to_cancel.push(open_ids.remove(0));
            }
        }
        if i == SUBSCRIPTIONS - 1 {
            to_cancel.append(&mut open_ids);
        }
        for id in &to_cancel {
            peer.send(&cancel(id.clone()));
        }
        tick();
        let barrier_id = json!(format!("barrier-{i}"));
        peer.send(&request(barrier_id.clone(), "server/discover", json!({})));
        let at = read_until(&peer, &mut lines, &|m| is_barrier_reply(m, &barrier_id));
        for id in to_cancel {
            cancelled_before.insert(id.to_string(), at);
        }
    }
    drop(ticks);
    let published: usize = publishers.into_iter().map(|p| p.join().unwrap()).sum();
    assert_eq!(published, PUBLISHERS * BURST * 2 * SUBSCRIPTIONS);
    barrier(&mut peer, "after-storm");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(
        rest,
        Vec::<Value>::new(),
        "every subscription was cancelled"
    );

    // Every line is an ack, a tools change or a barrier reply; none is a
    // final result or a `notifications/cancelled`.
    let mut first: HashMap<String, usize> = HashMap::new();
    let mut last: HashMap<String, usize> = HashMap::new();
    let mut acks: HashMap<String, usize> = HashMap::new();
    let mut events: HashMap<String, usize> = HashMap::new();
    for (n, message) in lines.iter().enumerate() {
        match subscription_of(message) {
            Some(id) => {
                let key = id.to_string();
                first.entry(key.clone()).or_insert(n);
                last.insert(key.clone(), n);
                if *message == ack(id.clone(), tools.clone()) {
                    *acks.entry(key.clone()).or_default() += 1;
                    assert_eq!(
                        first[&key], n,
                        "the ack of {key} is the first line with its id"
                    );
                } else {
                    assert_eq!(*message, changed(id, TOOLS), "line {n}");
                    *events.entry(key).or_default() += 1;
                }
            }
            None => {
                let id = &message["id"];
                assert!(
                    id.as_str().is_some_and(|s| s.starts_with("barrier-"))
                        && is_barrier_reply(message, id),
                    "unexpected line {n}: {message}"
                );
            }
        }
    }
    for id in &ids {
        let key = id.to_string();
        assert_eq!(acks.get(&key), Some(&1), "{key} was acknowledged once");
        let barrier = cancelled_before[&key];
        assert!(
            last[&key] < barrier,
            "{key}: a line at {} after its cancel was handled (barrier at {barrier})",
            last[&key]
        );
        if published_after_ack.contains(&key) {
            assert!(
                events.get(&key).copied().unwrap_or(0) >= 1,
                "{key}: an event published after its ack was not delivered"
            );
        }
    }
    eprintln!(
        "storm: {published} events from {PUBLISHERS} threads, {} lines for {SUBSCRIPTIONS} subscriptions",
        lines.len()
    );
}

// --- 9. Fan-out ----------------------------------------------------------

#[test]
fn one_event_fans_out_to_ten_thousand_subscriptions() {
    const N: i64 = 10_000;
    let server = tools_only();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let tools = json!({ "toolsListChanged": true });
    let started = Instant::now();
    let mut batch = Vec::new();
    for id in 0..N {
        serde_json::to_writer(&mut batch, &listen(id, tools.clone())).unwrap();
        batch.push(b'\n');
    }
    batch.pop();
    peer.send_raw(&batch);
    let mut acked = HashSet::new();
    for _ in 0..N {
        let message = peer.recv();
        let id = message["params"]["_meta"][SUBSCRIPTION_ID].clone();
        assert_eq!(message, ack(id.clone(), tools.clone()));
        assert!(acked.insert(id.as_i64().unwrap()), "two acks for {id}");
    }
    let opened = started.elapsed();

    let published = Instant::now();
    notifier.tools_list_changed();
    let mut delivered = HashSet::new();
    for _ in 0..N {
        let message = peer.recv();
        let id = message["params"]["_meta"][SUBSCRIPTION_ID].clone();
        assert_eq!(message, changed(id.clone(), TOOLS));
        assert!(delivered.insert(id.as_i64().unwrap()), "{id} got it twice");
    }
    let fanned_out = published.elapsed();
    let all: HashSet<i64> = (0..N).collect();
    assert_eq!(acked, all);
    assert_eq!(delivered, all);
    eprintln!(
        "fan-out: {N} listens opened and acknowledged in {opened:?}; one event delivered to all {N} in {fanned_out:?}"
    );
    barrier(&mut peer, "b");
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(rest, (0..N).map(|id| closed(&meta, id)).collect::<Vec<_>>());
}

// --- 10. Registry changes while serving ----------------------------------

#[test]
fn registry_changes_while_serving_are_announced() {
    let server = Server::builder("dynamic", "1.0.0")
        .inline_tool(echo_tool(), echo)
        .prompt(Prompt::new("base", "Always there."), |_ctx, _| {
            Ok(hello_prompt())
        })
        .inline_resource(Resource::new("mem://base", "base"), |_ctx, req| {
            Ok(text_resource(&req.uri))
        })
        .build();
    let mut peer = Peer::start(&server);
    let flag = |name: &str| json!({ name: true });
    open(
        &mut peer,
        "tools",
        flag("toolsListChanged"),
        flag("toolsListChanged"),
    );
    open(
        &mut peer,
        "prompts",
        flag("promptsListChanged"),
        flag("promptsListChanged"),
    );
    open(
        &mut peer,
        "resources",
        flag("resourcesListChanged"),
        flag("resourcesListChanged"),
    );
    // Updates of a URI are not list changes.
    open(
        &mut peer,
        "uri",
        json!({ "resourceSubscriptions": ["mem://late", "mem://base"] }),
        json!({ "resourceSubscriptions": ["mem://late", "mem://base"] }),
    );
    open(
        &mut peer,
        "all",
        everything_filter(&[]),
        json!({
            "toolsListChanged": true,
            "promptsListChanged": true,
            "resourcesListChanged": true
        }),
    );
    let mut step = 0;
    let mut expect = |peer: &mut Peer, announced: Option<&str>| {
        if let Some(method) = announced {
            let who = match method {
                TOOLS => "tools",
                PROMPTS => "prompts",
                _ => "resources",
            };
            recv_unordered(peer, vec![changed(who, method), changed("all", method)]);
        }
        // Nothing else: not for "uri", and nothing for a no-op.
        step += 1;
        barrier(peer, format!("step {step}"));
    };

    server.add_tool(Tool::new("late", "Added."), echo);
    expect(&mut peer, Some(TOOLS));
    // Replacing is a change too.
    server.add_tool(Tool::new("late", "Replaced."), echo);
    expect(&mut peer, Some(TOOLS));
    assert!(server.remove_tool("late"));
    expect(&mut peer, Some(TOOLS));
    assert!(!server.remove_tool("late"));
    expect(&mut peer, None);
    assert!(!server.remove_tool("never-there"));
    expect(&mut peer, None);

    server.add_prompt(Prompt::new("late", "Added."), |_ctx, _| Ok(hello_prompt()));
    expect(&mut peer, Some(PROMPTS));
    assert!(server.remove_prompt("late"));
    expect(&mut peer, Some(PROMPTS));
    assert!(!server.remove_prompt("late"));
    expect(&mut peer, None);

    server.add_resource(Resource::new("mem://late", "late"), |_ctx, req| {
        Ok(text_resource(&req.uri))
    });
    expect(&mut peer, Some(RESOURCES));
    assert!(server.remove_resource("mem://late"));
    expect(&mut peer, Some(RESOURCES));
    assert!(!server.remove_resource("mem://late"));
    expect(&mut peer, None);
    assert!(server.remove_resource("mem://base"));
    expect(&mut peer, Some(RESOURCES));

    server.add_resource_template(ResourceTemplate::new("mem://t/{x}", "t"), |_ctx, req| {
        Ok(text_resource(&req.uri))
    });
    expect(&mut peer, Some(RESOURCES));
    assert!(server.remove_resource_template("mem://t/{x}"));
    expect(&mut peer, Some(RESOURCES));
    assert!(!server.remove_resource_template("mem://t/{x}"));
    expect(&mut peer, None);

    // The changes are real.
    assert_eq!(
        peer.ask(&request(1, "resources/list", json!({})))["result"]["resources"],
        json!([])
    );
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(
        rest,
        ["tools", "prompts", "resources", "uri", "all"]
            .map(|id| closed(&meta, id))
            .to_vec()
    );
}

#[test]
fn a_pooled_handler_publishes_through_its_context() {
    let server = Server::builder("pooled", "1.0.0")
        .tool(
            Tool::new("publish", "Publishes two changes."),
            |ctx, _: Value| {
                ctx.notifier().resource_updated("mem://x");
                ctx.notifier().prompts_list_changed();
                Ok(CallToolResult::text("published"))
            },
        )
        .prompt(Prompt::new("p", "A prompt."), |_ctx, _| Ok(hello_prompt()))
        .inline_resource(Resource::new("mem://x", "x"), |_ctx, req| {
            Ok(text_resource(&req.uri))
        })
        .build();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        "x",
        json!({ "resourceSubscriptions": ["mem://x"] }),
        json!({ "resourceSubscriptions": ["mem://x"] }),
    );
    open(
        &mut peer,
        "p",
        json!({ "promptsListChanged": true }),
        json!({ "promptsListChanged": true }),
    );
    peer.send(&call(1, "publish", json!({})));
    recv_unordered(
        &peer,
        vec![
            text_result(&peer, 1, "published"),
            updated("x", "mem://x"),
            changed("p", PROMPTS),
        ],
    );
    barrier(&mut peer, "b");
    let (rest, res) = peer.finish();
    res.unwrap();
    let meta = server_meta(&server);
    assert_eq!(rest, [closed(&meta, "x"), closed(&meta, "p")]);
}

// --- 11. The removed RPCs ------------------------------------------------

#[test]
fn resources_subscribe_and_unsubscribe_are_gone() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    for (id, method) in [(1, "resources/subscribe"), (2, "resources/unsubscribe")] {
        assert_eq!(
            peer.ask(&request(id, method, json!({ "uri": "mem://counter" }))),
            error(id, -32601, &format!("method not found: {method}"))
        );
    }
    // `resources/subscribe` subscribed nothing.
    assert_eq!(
        peer.ask(&call(3, "bump", json!({}))),
        text_result(&peer, 3, "1")
    );
    barrier(&mut peer, "b1");
    // And `resources/unsubscribe` does not end a listen's subscription.
    let counter = json!({ "resourceSubscriptions": ["mem://counter"] });
    open(&mut peer, "l", counter.clone(), counter.clone());
    assert_eq!(
        peer.ask(&request(
            4,
            "resources/unsubscribe",
            json!({ "uri": "mem://counter" })
        )),
        error(4, -32601, "method not found: resources/unsubscribe")
    );
    peer.send(&call(5, "bump", json!({})));
    recv_unordered(
        &peer,
        vec![text_result(&peer, 5, "2"), updated("l", "mem://counter")],
    );
    barrier(&mut peer, "b2");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), "l")]);
}

// --- Several connections -------------------------------------------------

#[test]
fn each_connection_has_its_own_subscriptions() {
    let server = tools_only();
    let notifier = server.notifier();
    let mut a = Peer::start(&server);
    let mut b = Peer::start(&server);
    let tools = json!({ "toolsListChanged": true });
    // The same id on two connections: two subscriptions.
    open(&mut a, 1, tools.clone(), tools.clone());
    open(&mut b, 1, tools.clone(), tools.clone());
    notifier.tools_list_changed();
    assert_eq!(a.recv(), changed(1, TOOLS));
    assert_eq!(b.recv(), changed(1, TOOLS));
    // Cancelling on one leaves the other.
    a.send(&cancel(1));
    barrier(&mut a, "a1");
    notifier.tools_list_changed();
    assert_eq!(b.recv(), changed(1, TOOLS));
    barrier(&mut a, "a2");
    barrier(&mut b, "b1");
    a.finish_quietly();
    let (rest, res) = b.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&server_meta(&server), 1)]);
}

// req: subscriptions:inline-publish-is-immediate
#[test]
fn what_an_inline_handler_publishes_takes_effect_before_the_next_line_is_read() {
    let server = crate::everything::build();
    let meta = server_meta(&server);
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        "old",
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    );
    // One write: end every listen, then open a new one. The new listen must
    // survive: `end_listen` took effect before it was read.
    peer.send(&call(1, "end_listen", json!({})));
    peer.send(&listen("new", json!({ "toolsListChanged": true })));
    assert_eq!(peer.recv(), closed(&meta, "old"));
    assert_eq!(
        peer.recv(),
        text_result(&peer, 1, "closing every subscription")
    );
    assert_eq!(peer.recv(), ack("new", json!({ "toolsListChanged": true })));
    // An inline publication comes before the reply of the call that made it.
    peer.send(&call(2, "test_trigger_tool_change", json!({})));
    assert_eq!(peer.recv(), changed("new", TOOLS));
    assert_eq!(
        peer.recv(),
        text_result(&peer, 2, "Tool list change published.")
    );
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&meta, "new")]);
}

// req: subscriptions:publish-backpressure
// A publisher does not write to a client itself (core review 8: one that
// stopped reading held up every later connection's events and the
// publishing handler's reply, `send_path::a_client_that_never_reads_holds_up_no_other_connections_publish`),
// and behind a client that is behind it waits for nothing while the same
// things change: once more than a megabyte waits to be sent, each
// subscription keeps the latest event about each thing (review s9: a
// client that took 16 KiB in each write timeout held every publisher at
// its pace). What piles up behind a client that reads nothing is bounded,
// and once it reads it gets every event written and then the latest.
#[test]
fn a_publisher_of_the_same_change_never_waits_for_a_client_that_stopped_reading() {
    let server = Server::builder("backpressure", "1.0.0")
        .enable_tools()
        .build();
    let (mut peer, held) = Peer::start_stalling(&server);
    open(
        &mut peer,
        "s",
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    );
    let line = serde_json::to_vec(&changed("s", TOOLS)).unwrap().len() + 1;
    // Four megabytes of events.
    let events = 4 * 1024 * 1024 / line;
    let reading = held.lock().unwrap();
    let publisher = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for _ in 0..events {
                notifier.tools_list_changed();
            }
        })
    };
    let deadline = Instant::now() + WAIT;
    while !publisher.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        publisher.is_finished(),
        "the publisher waited for a client that reads nothing"
    );
    drop(reading);
    // A megabyte waits, the event that went past it, and what the send in
    // progress took: the events published before the pool's thread took
    // the send (on a loaded machine up to a megabyte more), then the one
    // held. So at most two megabytes, and one more.
    let meta = peer.server_meta.clone();
    let (rest, res) = peer.finish();
    res.unwrap();
    let (last, got) = rest.split_last().unwrap();
    assert_eq!(*last, closed(&meta, "s"));
    assert!(
        got.len() * line <= 2 * 1024 * 1024 + 64 * 1024 + line,
        "{} events of {line} bytes waited behind a client that reads nothing",
        got.len()
    );
    assert!(got.len() < events, "every event waited for the client");
    assert!(got.iter().all(|event| *event == changed("s", TOOLS)));
}

// req: subscriptions:publish-backpressure
// What is held back for a client that is behind is bounded too: a
// publisher of events about more things than a megabyte holds waits for
// the client (and lets go of one too slow to keep:
// `send_path::a_client_that_never_reads_holds_up_no_other_connections_publish_after_a_megabyte_of_events`).
// Here 1,000 subscriptions hear each change of the tools list: one
// change writes more than a megabyte, the next is held, the one after
// waits.
#[test]
fn a_publisher_waits_once_a_megabyte_of_events_is_held_for_a_client_that_stopped_reading() {
    const LISTENS: usize = crate::support::LISTENS_PAST_THE_BACKLOG;
    let server = Server::builder("backpressure", "1.0.0")
        .enable_tools()
        .build();
    let (mut peer, held) = Peer::start_stalling(&server);
    peer.listen_past_the_backlog();
    let (published_tx, published) = crossbeam_channel::unbounded();
    let reading = held.lock().unwrap();
    let publisher = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for n in 0..4 {
                notifier.tools_list_changed();
                published_tx.send(n).unwrap();
            }
        })
    };
    // Until it stops: nothing published for half a second.
    let mut through = 0;
    while published.recv_timeout(Duration::from_millis(500)).is_ok() {
        through += 1;
    }
    assert!(
        through < 4,
        "four changes for 1,000 subscriptions piled up behind a client that reads nothing"
    );
    drop(reading);
    publisher.join().unwrap();
    assert_eq!(published.iter().count(), 4 - through);
    let (rest, res) = peer.finish();
    res.unwrap();
    // Each subscription heard the first change, and the last (the held
    // ones in between, the latest each): then its final result.
    let events = rest
        .iter()
        .filter(|line| line["method"] == json!(TOOLS))
        .count();
    assert!(
        (2 * LISTENS..=4 * LISTENS).contains(&events),
        "{events} events for {LISTENS} subscriptions"
    );
    assert_eq!(rest.len(), events + LISTENS);
}

/// Serves a client of `server` that subscribed to the tools, prompts and
/// resources lists (`"s"`) and then did what `before` sends (read before
/// the next step: a barrier follows it); the client stops reading, and
/// more than a megabyte of tool list changes waits behind it, so that
/// what is published now is held back (`Conn::publish`). Then `meanwhile`
/// runs, and the client reads again. Returns everything it got after the
/// barrier's reply.
fn behind_a_client_that_is_behind(
    server: &Server,
    before: impl FnOnce(&mut Peer),
    meanwhile: impl FnOnce(&mut Peer),
) -> Vec<Value> {
    let (mut peer, held, told) = Peer::start_stalling_told(server);
    let lists = json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourcesListChanged": true
    });
    open(&mut peer, "s", lists.clone(), lists);
    before(&mut peer);
    barrier(&mut peer, "b");
    let line = serde_json::to_vec(&changed("s", TOOLS)).unwrap().len() + 1;
    let not_reading = held.lock().unwrap();
    // A change, whose send stalls; then more than a megabyte of changes,
    // which wait behind it.
    while told.try_recv().is_ok() {}
    server.notifier().tools_list_changed();
    told.recv_timeout(WAIT).expect("the change's send began");
    for _ in 0..2 * 1024 * 1024 / line {
        server.notifier().tools_list_changed();
    }
    meanwhile(&mut peer);
    drop(not_reading);
    let (rest, res) = peer.finish();
    res.unwrap();
    rest
}

/// A server with a tool, a prompt and a resource, so that each list may
/// change; its tool `publish` waits until `go`, then publishes a change of
/// the prompts list, says so on `published`, and returns; its inline tool
/// `mark` says on `marked` that the reader came to it (every line before
/// it took effect).
fn lists_server(go: Receiver<()>, published: Sender<()>, marked: Sender<()>) -> Server {
    Server::builder("held", "1.0.0")
        .inline_tool(
            Tool::new("mark", "Says the reader came to it."),
            move |_ctx, _: Value| {
                let _ = marked.send(());
                Ok(CallToolResult::text("marked"))
            },
        )
        .tool(
            Tool::new("publish", "Waits, then publishes a prompts list change."),
            move |ctx, _: Value| {
                go.recv().unwrap();
                ctx.notifier().prompts_list_changed();
                published.send(()).unwrap();
                Ok(CallToolResult::text("published"))
            },
        )
        .prompt(Prompt::new("p", "A prompt."), |_ctx, _| Ok(hello_prompt()))
        .inline_resource(Resource::new("mem://x", "x"), |_ctx, req| {
            Ok(text_resource(&req.uri))
        })
        .build()
}

// req: subscriptions:held-events-cancelled
// Rule: a cancelled request gets nothing more, what was held back for it
// included (`SubscriptionTable::remove` drops it).
#[test]
fn a_cancelled_subscription_gets_nothing_that_was_held_back_for_it() {
    let (_, go) = crossbeam_channel::bounded(1);
    let (published, _) = crossbeam_channel::bounded(1);
    let (marked, was_marked) = crossbeam_channel::unbounded();
    let server = lists_server(go, published, marked);
    let rest = behind_a_client_that_is_behind(
        &server,
        |_| {},
        |peer| {
            server.notifier().resources_list_changed();
            peer.send(&cancel("s"));
            // The cancellation took effect while the client is behind:
            // else a send that ended meanwhile may have written the change.
            peer.send(&call(2, "mark", json!({})));
            was_marked.recv_timeout(WAIT).unwrap();
        },
    );
    assert!(
        !rest.iter().any(|line| *line == changed("s", RESOURCES)),
        "a change held back for a cancelled subscription went out"
    );
    assert!(rest.iter().any(|line| *line == changed("s", TOOLS)));
}

// req: subscriptions:held-events-order
// Rule: lines go out in the order of the changes that wrote them: what a
// handler publishes precedes its reply, held back or not (`Conn::write_reply`
// writes what is held first).
#[test]
fn what_a_handler_publishes_behind_a_client_that_is_behind_precedes_its_reply() {
    let (go_tx, go) = crossbeam_channel::bounded(1);
    let (published, was_published) = crossbeam_channel::bounded(1);
    let (marked, _) = crossbeam_channel::unbounded();
    let server = lists_server(go, published, marked);
    let rest = behind_a_client_that_is_behind(
        &server,
        // The call runs before the backlog, and waits.
        |peer| peer.send(&call(1, "publish", json!({}))),
        |_| {
            go_tx.send(()).unwrap();
            was_published.recv_timeout(WAIT).unwrap();
        },
    );
    let event = rest.iter().position(|line| *line == changed("s", PROMPTS));
    let reply = rest.iter().position(|line| line["id"] == json!(1));
    assert!(
        matches!((event, reply), (Some(event), Some(reply)) if event < reply),
        "the change at {event:?}, the reply at {reply:?} of {} lines",
        rest.len()
    );
}

// req: subscriptions:held-events-delivered
// Claim (review of 4dfeb6b, found wrong, kept as a guard): an event held
// back for a client that is behind is stranded once the client reads
// again and nothing more is written to it. It is not: the send that
// leaves no more than the backlog waiting writes what was held
// (`Conn::sent`), with no line written after it and no shutdown.
#[test]
fn what_was_held_back_reaches_a_client_that_reads_again_with_nothing_written_after_it() {
    let (_, go) = crossbeam_channel::bounded(1);
    let (published, _) = crossbeam_channel::bounded(1);
    let (marked, _) = crossbeam_channel::unbounded();
    let server = lists_server(go, published, marked);
    let (mut peer, held, told) = Peer::start_stalling_told(&server);
    let lists = json!({ "toolsListChanged": true, "resourcesListChanged": true });
    open(&mut peer, "s", lists.clone(), lists);
    let line = serde_json::to_vec(&changed("s", TOOLS)).unwrap().len() + 1;
    let not_reading = held.lock().unwrap();
    while told.try_recv().is_ok() {}
    server.notifier().tools_list_changed();
    told.recv_timeout(WAIT).expect("the change's send began");
    for _ in 0..2 * 1024 * 1024 / line {
        server.notifier().tools_list_changed();
    }
    // Held back: more than a megabyte waits.
    server.notifier().resources_list_changed();
    drop(not_reading);
    let deadline = Instant::now() + WAIT;
    let mut got = false;
    while let Some(line) = peer.try_recv(deadline.saturating_duration_since(Instant::now())) {
        if line == changed("s", RESOURCES) {
            got = true;
            break;
        }
    }
    assert!(got, "the change held back never went out");
    let (_, res) = peer.finish();
    res.unwrap();
}

// req: subscriptions:publish-backpressure
// Finding (review of 4dfeb6b): what is held back is written before any
// other line (`Conn::write_held`), whatever waits already, and then a
// publisher that waited for it goes on: each pooled reply to a client
// that reads nothing let a publisher of events about many things (here
// 1,000 subscriptions, a megabyte a change) write another megabyte into
// memory, so that 64 replies (`max_running`) made 64 MiB of what the
// backlog bounded at about two. A publisher waits while more than the
// backlog is held, or more than twice the backlog waits to be sent.
#[test]
fn replies_that_write_what_was_held_let_no_publisher_pile_events_behind_a_client_that_reads_nothing()
 {
    const CALLS: usize = 8;
    const EVENTS: usize = 16;
    let (go_tx, go) = crossbeam_channel::unbounded::<()>();
    let (started_tx, started) = crossbeam_channel::unbounded::<()>();
    let server = Server::builder("held", "1.0.0")
        .tool(
            Tool::new("wait", "Waits until the test says go."),
            move |_ctx, _: Value| {
                started_tx.send(()).unwrap();
                go.recv().unwrap();
                Ok(CallToolResult::text("done"))
            },
        )
        .build();
    let (mut peer, held) = Peer::start_stalling(&server);
    peer.listen_past_the_backlog();
    for id in 0..CALLS {
        peer.send(&call(id, "wait", json!({})));
    }
    for _ in 0..CALLS {
        started.recv_timeout(WAIT).expect("a call started");
    }
    let not_reading = held.lock().unwrap();
    let (ticked, ticks) = crossbeam_channel::unbounded();
    let publisher = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for _ in 0..EVENTS {
                notifier.tools_list_changed();
                let _ = ticked.send(());
            }
        })
    };
    let quiet = || {
        let mut n = 0;
        while ticks.recv_timeout(Duration::from_millis(500)).is_ok() {
            n += 1;
        }
        n
    };
    let mut published = quiet();
    // Each call answers while the client reads nothing.
    for _ in 0..CALLS {
        go_tx.send(()).unwrap();
        published += quiet();
    }
    drop(not_reading);
    // The first change is written, the second held, the third waits; a
    // send that began late under load may take one more out with it.
    assert!(
        published <= 4,
        "{published} changes of a megabyte each went into memory behind a client that reads nothing ({CALLS} replies)"
    );
    publisher.join().unwrap();
    let (_, res) = peer.finish();
    res.unwrap();
}

// req: subscriptions:publish-backpressure
// What a publisher counts is events (`Conn::publisher_waits`): a reply
// of megabytes waiting for a client that reads nothing holds up no
// publisher of the same change (a rule that counted all that waits, as a
// first fix of the finding above did, made it wait for good here).
#[test]
fn a_large_reply_waiting_for_a_client_that_stopped_reading_holds_up_no_publisher_of_the_same_change()
 {
    let (returning_tx, returning) = crossbeam_channel::unbounded::<()>();
    let server = Server::builder("held", "1.0.0")
        // Not let go while the test holds it: a publisher that waits
        // waits past the test's deadline.
        .write_timeout(Duration::from_secs(60))
        .tool(Tool::new("big", "Answers 3 MiB."), move |_ctx, _: Value| {
            let _ = returning_tx.send(());
            Ok(CallToolResult::text("x".repeat(3 * 1024 * 1024)))
        })
        .build();
    let (mut peer, held, told) = Peer::start_stalling_told(&server);
    let tools = json!({ "toolsListChanged": true });
    open(&mut peer, "s", tools.clone(), tools);
    let not_reading = held.lock().unwrap();
    // A change, whose send stalls: what follows waits behind it.
    while told.try_recv().is_ok() {}
    server.notifier().tools_list_changed();
    told.recv_timeout(WAIT).expect("the change's send began");
    peer.send(&call(1, "big", json!({})));
    returning.recv_timeout(WAIT).expect("the call ran");
    let publisher = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for _ in 0..40_000 {
                notifier.tools_list_changed();
            }
        })
    };
    let deadline = Instant::now() + WAIT;
    while !publisher.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let finished = publisher.is_finished();
    drop(not_reading);
    assert!(
        finished,
        "the publisher waited behind a reply for a client that reads nothing"
    );
    publisher.join().unwrap();
    let (rest, res) = peer.finish();
    res.unwrap();
    assert!(rest.iter().any(|line| line["id"] == json!(1)));
}

// req: subscriptions:held-events-order
// Claim (review of 4dfeb6b, found wrong, kept as a guard): a
// subscription the server closes while events are held back for it gets
// its final result before them, or never gets them. `Conn::publish`
// writes what is held before the final result (`ServerEvent::Close`).
#[test]
fn a_subscription_closed_while_events_are_held_for_it_gets_them_before_its_final_result() {
    let (_, go) = crossbeam_channel::bounded(1);
    let (published, _) = crossbeam_channel::bounded(1);
    let (marked, _) = crossbeam_channel::unbounded();
    let server = lists_server(go, published, marked);
    let rest = behind_a_client_that_is_behind(
        &server,
        |_| {},
        |_| {
            server.notifier().resources_list_changed();
            server.notifier().close_subscription(&RequestId::from("s"));
        },
    );
    let meta = server_meta(&server);
    let event = rest
        .iter()
        .position(|line| *line == changed("s", RESOURCES));
    let last = rest.iter().position(|line| *line == closed(&meta, "s"));
    assert!(
        matches!((event, last), (Some(event), Some(last)) if event < last),
        "the change at {event:?}, the final result at {last:?} of {} lines",
        rest.len()
    );
    assert_eq!(last, Some(rest.len() - 1), "nothing after the final result");
}

// The gap the core review found (section 2j): what a pooled handler
// publishes from a thread of its own reaches the client before the
// handler's reply, as it does from the handler's thread.
#[test]
fn what_a_pooled_tool_publishes_from_a_helper_thread_arrives_before_its_reply() {
    let server = Server::builder("helper", "1.0.0")
        .tool(
            Tool::new(
                "publish_elsewhere",
                "Announces a change from a helper thread.",
            ),
            |ctx, _: Value| {
                let notifier = ctx.notifier();
                std::thread::scope(|scope| {
                    scope.spawn(|| notifier.tools_list_changed());
                });
                Ok(CallToolResult::text("published"))
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    let tools = json!({ "toolsListChanged": true });
    open(&mut peer, "s", tools.clone(), tools);
    for n in 0..50 {
        peer.send(&call(n, "publish_elsewhere", json!({})));
        assert_eq!(peer.recv(), changed("s", TOOLS), "round {n}");
        assert_eq!(peer.recv(), text_result(&peer, n, "published"), "round {n}");
    }
    let meta = peer.server_meta.clone();
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [closed(&meta, "s")]);
}

// What a handler publishes is written before `publish` returns, so it
// reaches the client before the handler's reply, as for an inline tool.
#[test]
fn what_a_pooled_tool_publishes_arrives_before_its_reply() {
    let server = Server::builder("publisher", "1.0.0")
        .tool(
            mcp_stdio::types::Tool::new("publish", "Announces a tool list change."),
            |ctx, _: Value| {
                ctx.notifier().tools_list_changed();
                Ok(mcp_stdio::types::CallToolResult::text("published"))
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    open(
        &mut peer,
        "L",
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    );
    for n in 0..50 {
        peer.send(&call(n, "publish", json!({})));
        let first = peer.recv();
        assert_eq!(
            first["method"], "notifications/tools/list_changed",
            "round {n}: {first}"
        );
        let second = peer.recv();
        assert_eq!(second["id"], n, "round {n}: {second}");
    }
    peer.send(&cancel("L"));
    peer.finish_quietly();
}

/// The reader starts a pooled request itself when the owner has no line in
/// hand (src/server/serve/direct.rs). Lines written together still take
/// effect in their order: a call behind a listen with the same id finds
/// the id in use, and a cancellation right behind a slow call ends it
/// without a reply.
#[test]
fn lines_written_together_take_effect_in_their_order() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let filter = json!({ "toolsListChanged": true });
    let lines = [
        listen("s", filter.clone()),
        call("s", "slow", json!({ "ms": 0 })),
        call("c", "slow", json!({ "ms": 60_000 })),
        cancel("c"),
        call("after", "slow", json!({ "ms": 0 })),
    ];
    let batch: Vec<String> = lines.iter().map(Value::to_string).collect();
    peer.send_raw(batch.join("\n").as_bytes());
    assert_eq!(peer.recv(), ack("s", filter));
    let refused = peer.recv();
    assert_eq!(refused["id"], json!("s"));
    assert_eq!(
        refused["error"]["message"],
        json!("invalid request: request id \"s\" is already in use by a request in flight")
    );
    assert_eq!(peer.recv(), text_result(&peer, "after", "done"));
    peer.assert_silent_for(Duration::from_millis(100));
    // A cancelled listen ends without a final result.
    peer.send(&cancel("s"));
    peer.finish_quietly();
}
