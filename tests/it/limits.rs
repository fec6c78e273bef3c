//! What a client cannot make the server do, however it behaves: hold every
//! worker while the server waits for its answers, open subscriptions
//! without end, name a million URIs in one, or make a handler's
//! notifications pile up in memory while it does not read them.

use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde_json::{Value, json};

use crate::support::{Peer, WAIT, call, request};

#[cfg(feature = "legacy")]
fn legacy(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// Opens a legacy session that declares elicitation.
#[cfg(feature = "legacy")]
fn open_legacy_session(peer: &mut Peer) {
    let init = legacy(
        0,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "elicitation": {} },
            "clientInfo": { "name": "limits-test", "version": "0.1.0" }
        }),
    );
    assert_eq!(peer.ask(&init)["id"], json!(0));
    peer.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
}

/// The ids of the next `n` messages, which must be responses.
fn recv_ids(peer: &Peer, n: usize) -> Vec<Value> {
    let mut ids: Vec<Value> = (0..n)
        .map(|_| {
            let resp = peer.recv();
            assert!(resp.get("method").is_none(), "a response, not {resp}");
            resp["id"].clone()
        })
        .collect();
    ids.sort_by_key(Value::to_string);
    ids
}

// Every request gets its reply even when requests that wait for the
// client's answers fill the pool: a request with open asks gives its place
// back, so the requests queued behind it run, the reader reads on, and the
// answers are read.
#[cfg(feature = "legacy")]
#[test]
fn requests_waiting_for_the_clients_answers_do_not_stop_the_server() {
    let server = crate::everything::build_with(|b| b.max_running(2).queue_limit(2));
    let mut peer = Peer::start(&server);
    open_legacy_session(&mut peer);
    let asks: Vec<Value> = (1..=2)
        .map(|id| {
            peer.send(&legacy(
                id,
                "tools/call",
                json!({ "name": "ask", "arguments": {} }),
            ));
            let ask = peer.recv();
            assert_eq!(ask["method"], json!("elicitation/create"), "{ask}");
            ask["id"].clone()
        })
        .collect();
    // Both places among `max_running` are taken by requests that wait; a
    // third would have to wait for a place, and with the read-ahead full
    // the answers below could never be read.
    for id in 10..14 {
        peer.send(&legacy(
            id,
            "tools/call",
            json!({ "name": "slow", "arguments": { "ms": 0 } }),
        ));
    }
    peer.send(&legacy(20, "ping", json!({})));
    assert_eq!(
        recv_ids(&peer, 5),
        [json!(10), json!(11), json!(12), json!(13), json!(20)]
    );
    for ask in &asks {
        let answer = json!({ "action": "accept", "content": { "name": "Ann" } });
        peer.send(&json!({ "jsonrpc": "2.0", "id": ask, "result": answer }));
    }
    assert_eq!(recv_ids(&peer, 2), [json!(1), json!(2)]);
    // At most `max_running` requests may wait for answers at once: past
    // that an ask is refused, and its request fails at once.
    let asks: Vec<Value> = (30..32)
        .map(|id| {
            peer.send(&legacy(
                id,
                "tools/call",
                json!({ "name": "ask", "arguments": {} }),
            ));
            peer.recv()["id"].clone()
        })
        .collect();
    let resp = peer.ask(&legacy(
        32,
        "tools/call",
        json!({ "name": "ask", "arguments": {} }),
    ));
    assert_eq!(resp["id"], json!(32), "{resp}");
    assert_eq!(resp["error"]["code"], json!(-32603), "{resp}");
    let message = resp["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("too many requests already wait for this client's answers (at most 2)"),
        "{resp}"
    );
    for ask in &asks {
        let answer = json!({ "action": "decline" });
        peer.send(&json!({ "jsonrpc": "2.0", "id": ask, "result": answer }));
    }
    assert_eq!(recv_ids(&peer, 2), [json!(30), json!(31)]);
    peer.finish_quietly();
}

#[test]
fn open_subscriptions_are_capped_per_connection() {
    let server = crate::everything::build_with(|b| b.max_subscriptions(3));
    let mut peer = Peer::start(&server);
    let listen = |id: i64| {
        request(
            id,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        )
    };
    for id in 1..=3 {
        let ack = peer.ask(&listen(id));
        assert_eq!(
            ack["method"],
            json!("notifications/subscriptions/acknowledged")
        );
    }
    let resp = peer.ask(&listen(4));
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 4, "error": {
            "code": -32603,
            "message": "internal error: too many open subscriptions on this connection (at most 3): cancel one first",
            "data": { "limit": 3 }
        }})
    );
    // Cancelling one makes room.
    peer.send(&crate::support::cancel(2));
    let ack = peer.ask(&listen(5));
    assert_eq!(
        ack["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    peer.close_input();
    assert_eq!(recv_ids(&peer, 3), [json!(1), json!(3), json!(5)]);
}

#[test]
fn one_subscription_names_a_bounded_number_of_uris() {
    let server = crate::everything::build_with(|b| b.max_subscription_uris(100));
    let mut peer = Peer::start(&server);
    let uris = |n: usize| (0..n).map(|i| format!("mem://u{i}")).collect::<Vec<_>>();
    // Duplicates are accepted once.
    let mut named = uris(60);
    named.extend(uris(40));
    let ack = peer.ask(&request(
        1,
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": named } }),
    ));
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!(uris(60))
    );
    let resp = peer.ask(&request(
        2,
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": uris(101) } }),
    ));
    assert_eq!(resp["error"]["code"], json!(-32602), "{resp}");
    assert_eq!(resp["error"]["data"], json!({ "limit": 100 }), "{resp}");
    peer.close_input();
    assert_eq!(recv_ids(&peer, 1), [json!(1)]);
}

#[cfg(feature = "legacy")]
#[test]
fn legacy_resource_subscriptions_are_filtered_and_capped() {
    let server = crate::everything::build_with(|b| {
        b.max_subscriptions(2)
            .resource_subscription_filter(|uri| !uri.starts_with("secret://"))
    });
    let mut peer = Peer::start(&server);
    open_legacy_session(&mut peer);
    let subscribe = |id: i64, uri: &str| legacy(id, "resources/subscribe", json!({ "uri": uri }));
    let resp = peer.ask(&subscribe(1, "secret://x"));
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 1, "error": {
            "code": -32002, "message": "Resource not found", "data": { "uri": "secret://x" }
        }})
    );
    for (id, uri) in [(2, "mem://a"), (3, "mem://b"), (4, "mem://a")] {
        assert_eq!(peer.ask(&subscribe(id, uri))["result"], json!({}));
    }
    let resp = peer.ask(&subscribe(5, "mem://c"));
    assert_eq!(resp["error"]["code"], json!(-32603), "{resp}");
    assert_eq!(resp["error"]["data"], json!({ "limit": 2 }), "{resp}");
    peer.finish_quietly();
}

// A client that stops reading stdout blocks the writes, and nothing grows
// without limit (ARCHITECTURE.md, "Who sends, and when"). A pooled handler writes its notifications
// itself: it waits in the write once the pipe and the output buffer are
// full.
#[test]
fn a_handlers_notifications_wait_for_a_client_that_does_not_read() {
    const STEPS: usize = 50_000;
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    let server = Server::builder("chatty", "1.0.0")
        .tool(
            Tool::new("chatty", "Reports progress many times."),
            move |ctx, _: Value| {
                for step in 1..=STEPS {
                    ctx.progress(
                        step as f64,
                        None,
                        Some("a step of a long job, with a message"),
                    );
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                Ok(CallToolResult::text("done"))
            },
        )
        .build();
    // A real pipe: the server's writes block once it is full.
    let (from_server, to_client) = std::io::pipe().unwrap();
    let (from_client, mut to_server) = std::io::pipe().unwrap();
    let serving = std::thread::spawn(move || {
        server.serve(Transport::new(BufReader::new(from_client), to_client))
    });
    let mut call = call(1, "chatty", json!({}));
    call["params"]["_meta"]["progressToken"] = json!("p");
    writeln!(to_server, "{call}").unwrap();
    // Nothing is read: the handler gets only as far as the pipe and the
    // output buffer allow (64 KiB and 8 KiB: a few hundred lines), then
    // stops until the client reads.
    let deadline = std::time::Instant::now() + WAIT;
    let mut stalled = 0;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = sent.load(Ordering::Relaxed);
        if now > 0 && now == stalled {
            break;
        }
        stalled = now;
        assert!(std::time::Instant::now() < deadline, "{now} and counting");
    }
    assert!(
        (100..10_000).contains(&stalled),
        "{stalled} notifications sent to a client that reads nothing"
    );
    // Reading lets it finish; every notification arrives, in order.
    let mut lines = BufReader::new(from_server).lines();
    for step in 1..=STEPS {
        let line: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(line["params"]["progress"], json!(step as f64), "{line}");
    }
    let reply: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(reply["id"], json!(1), "{reply}");
    drop(to_server);
    serving.join().unwrap().unwrap();
}

/// A server built with every limit at zero, or at its largest: no panic,
/// no hang, and every request still gets exactly one reply (an error where
/// a limit of zero allows nothing).
#[test]
fn extreme_settings_neither_panic_nor_hang() {
    let tool = || Tool::new("hello", "Says hello.");
    let zeros = Server::builder("zeros", "1.0.0")
        .workers(0)
        .max_running(0)
        .queue_limit(0)
        .queue_bytes(0)
        .max_subscriptions(0)
        .max_subscription_uris(0)
        .shutdown_grace(Duration::ZERO)
        .page_size(0)
        .request_state_ttl(Duration::ZERO)
        .task_poll_interval(Duration::ZERO)
        .max_running_tasks(0)
        .max_task_result_bytes(0)
        .ask_timeout(Duration::ZERO)
        .tool(tool(), |_ctx, _: Value| Ok(CallToolResult::text("hello")))
        .build();
    let largest = Server::builder("largest", "1.0.0")
        .workers(usize::MAX)
        .max_running(usize::MAX)
        .queue_limit(usize::MAX)
        .queue_bytes(usize::MAX)
        .max_line_bytes(usize::MAX)
        .max_subscriptions(usize::MAX)
        .max_subscription_uris(usize::MAX)
        .shutdown_grace(Duration::MAX)
        .page_size(usize::MAX)
        .request_state_ttl(Duration::MAX)
        .task_poll_interval(Duration::MAX)
        .max_running_tasks(usize::MAX)
        .max_task_result_bytes(usize::MAX)
        .spin_before_sleep(Duration::MAX)
        .ask_timeout(Duration::MAX)
        .release_memory_when_idle(true)
        .tool(tool(), |_ctx, _: Value| Ok(CallToolResult::text("hello")))
        .build();
    for server in [zeros, largest] {
        let mut peer = Peer::start(&server);
        let requests = [
            call(1, "hello", json!({})),
            request(2, "tools/list", json!({})),
            request(
                3,
                "subscriptions/listen",
                json!({ "notifications": { "toolsListChanged": true } }),
            ),
            call(4, "hello", json!({})),
        ];
        for req in &requests {
            peer.send(req);
        }
        let (rest, res) = peer.finish();
        res.expect("serve returned cleanly");
        let mut ids: Vec<i64> = rest.iter().filter_map(|m| m["id"].as_i64()).collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2, 3, 4], "one reply each: {rest:?}");
    }
}
