//! `notifications/cancelled` and the cancellation map
//! (spec 2026-07-28 basic/patterns/cancellation, basic/transports/stdio).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_stdio::Server;
use mcp_stdio::types::{CallToolResult, Tool};
use serde_json::{Value, json};

use crate::support::{Blocker, Peer, call, cancel, request, text_result};

fn blocked(builder: mcp_stdio::ServerBuilder) -> (Server, Blocker) {
    let (builder, blocker) = Blocker::install(builder);
    (builder.build(), blocker)
}

fn server_with_blocker() -> (Server, Blocker) {
    blocked(Server::builder("cancel-test", "1.0.0"))
}

// req: cancellation:no-message-after-cancel
#[test]
fn a_cancelled_request_gets_no_reply_and_no_notification() {
    let (server, blocker) = server_with_blocker();
    let mut peer = Peer::start(&server);
    let mut req = call(1, "block", json!({}));
    req["params"]["_meta"]["progressToken"] = json!("p1");
    req["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    peer.send(&req);
    assert_eq!(blocker.wait_started(), json!(1));
    peer.send(&cancel(1));
    assert_eq!(blocker.wait_cancel_observed(), json!(1));
    // The handler has tried to send progress, a log message and a reply by
    // now. The next thing on the wire is the answer to a later request...
    let discover = peer.ask(&request(2, "server/discover", json!({})));
    assert_eq!(discover["id"], json!(2));
    // ...and nothing else ever comes.
    peer.finish_quietly();
}

#[test]
fn string_and_integer_ids_are_different_requests() {
    let (server, blocker) = server_with_blocker();
    let mut peer = Peer::start(&server);
    peer.send(&call("7", "block", json!({})));
    assert_eq!(blocker.wait_started(), json!("7"));
    // Cancelling 7 does not touch "7".
    peer.send(&cancel(7));
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, "7", "released"));
    assert!(blocker.observed_cancel.is_empty());

    peer.send(&call(7, "block", json!({})));
    assert_eq!(blocker.wait_started(), json!(7));
    peer.send(&cancel("7"));
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, 7, "released"));
    peer.finish_quietly();
}

#[test]
fn unknown_finished_and_malformed_cancellations_are_ignored() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let echo = peer.ask(&call(1, "echo", json!({ "text": "a" })));
    assert_eq!(echo["id"], json!(1));
    // A finished request, an unknown one, and several malformed ones.
    peer.send(&cancel(1));
    peer.send(&cancel(999));
    peer.send_raw(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#);
    peer.send_raw(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#);
    peer.send_raw(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"a":1}}}"#,
    );
    peer.send_raw(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}"#,
    );
    let again = peer.ask(&call(2, "echo", json!({ "text": "b" })));
    assert_eq!(again, text_result(&peer, 2, "b"));
    peer.finish_quietly();
}

// req: cancellation:race-never-two-replies
#[test]
fn cancel_racing_the_reply_never_yields_two_replies() {
    // A pooled echo: its reply and the cancellation race on every call.
    let server = Server::builder("race", "1.0.0")
        .tool(Tool::new("echo", "Echo."), |_ctx, args: Value| {
            Ok(CallToolResult::text(
                args["text"].as_str().unwrap_or("").to_owned(),
            ))
        })
        .build();
    let mut peer = Peer::start(&server);
    let n = 500;
    for i in 0..n {
        peer.send(&call(i, "echo", json!({ "text": i.to_string() })));
        peer.send(&cancel(i));
    }
    let (lines, res) = peer.finish();
    res.unwrap();
    let mut seen = std::collections::HashSet::new();
    for line in &lines {
        let id = line["id"].as_i64().expect("only replies are written");
        assert!(seen.insert(id), "two replies for id {id}");
        assert_eq!(line["result"]["content"][0]["text"], json!(id.to_string()));
    }
    assert!(seen.len() <= n as usize);
}

// req: cancellation:waiting-never-starts
#[test]
fn a_request_cancelled_while_waiting_never_starts() {
    let (server, blocker) = blocked(Server::builder("queue", "1.0.0").workers(1).max_running(1));
    let mut peer = Peer::start(&server);
    peer.send(&call(1, "block", json!({})));
    assert_eq!(blocker.wait_started(), json!(1));
    // The pool is at its cap: request 2 waits, unstarted, and is cancelled.
    peer.send(&call(2, "block", json!({})));
    peer.send(&cancel(2));
    peer.send(&call(3, "block", json!({})));
    // A barrier: the owner handles lines in order, so once this is answered
    // 2 and 3 are queued and 2 is cancelled. Without it, 1 could finish
    // before 2 is even read, and 2 would start at once.
    let barrier = peer.ask(&request("barrier", "server/discover", json!({})));
    assert_eq!(barrier["id"], json!("barrier"), "{barrier}");
    assert!(barrier["result"].is_object(), "{barrier}");
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, 1, "released"));
    // Next to start is 3, never 2.
    assert_eq!(blocker.wait_started(), json!(3));
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, 3, "released"));
    assert!(blocker.started.is_empty());
    peer.finish_quietly();
}

#[test]
fn a_reused_id_after_cancel_is_a_new_request() {
    let starts = Arc::new(AtomicUsize::new(0));
    let counted = starts.clone();
    let (builder, blocker) = Blocker::install(Server::builder("reuse", "1.0.0"));
    let server = builder
        .tool(
            Tool::new("count", "Counts calls."),
            move |_ctx, _: Value| {
                Ok(CallToolResult::text(
                    counted.fetch_add(1, Ordering::SeqCst).to_string(),
                ))
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    peer.send(&call(1, "block", json!({})));
    blocker.wait_started();
    peer.send(&cancel(1));
    // The same id again, while the old handler may still be running.
    let fresh = peer.ask(&call(1, "count", json!({})));
    assert_eq!(fresh, text_result(&peer, 1, "0"));
    // The old handler's late reply is never taken for the new request's.
    blocker.wait_cancel_observed();
    peer.finish_quietly();
}

#[test]
fn an_id_in_flight_cannot_be_reused() {
    let (server, blocker) = server_with_blocker();
    let mut peer = Peer::start(&server);
    peer.send(&call(5, "block", json!({})));
    blocker.wait_started();
    let dup = peer.ask(&call(5, "block", json!({})));
    assert_eq!(dup["id"], json!(5));
    assert_eq!(dup["error"]["code"], json!(-32600));
    assert_eq!(
        dup["error"]["message"],
        json!("invalid request: request id 5 is already in use by a request in flight")
    );
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, 5, "released"));
    peer.finish_quietly();
}

#[test]
fn the_slow_fixture_observes_cancellation() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    peer.send(&call("s", "slow", json!({ "ms": 60_000 })));
    peer.send(&cancel("s"));
    // `stats` counts slow calls that saw their cancellation; poll it with
    // requests (each answer is an event, not a sleep).
    let mut observed = false;
    for i in 0..2000 {
        let stats = peer.ask(&call(i, "stats", json!({})));
        let text = stats["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let stats: Value = serde_json::from_str(&text).unwrap();
        if stats["slow_cancelled"] == json!(1) {
            observed = true;
            break;
        }
        std::thread::yield_now();
    }
    assert!(observed, "the slow call never saw its cancellation");
    peer.finish_quietly();
}

// A pooled handler's worker writes its reply itself (see
// `shared_output`): the owner must hear the request is done before the
// client can see the reply, or a client that reuses the id at once would
// be refused as "already in use".
#[test]
fn an_id_reused_the_moment_its_reply_arrives_is_a_new_request() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    for n in 0..2_000 {
        let reply = peer.ask(&call("again", "slow", json!({ "ms": n % 2 })));
        assert_eq!(reply["id"], "again", "{reply}");
        assert!(reply.get("error").is_none(), "round {n}: {reply}");
    }
    peer.finish_quietly();
}

// The handler wakes on its cancel token and returns at once, racing its
// reply against the cancellation: the blocker is closed before the token is
// tripped, so the reply is never written.
#[test]
fn a_handler_that_returns_the_moment_it_is_cancelled_is_not_answered() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    for n in 0..300 {
        peer.send(&call(format!("slow {n}"), "slow", json!({ "ms": 60_000 })));
        peer.send(&cancel(format!("slow {n}")));
        let reply = peer.ask(&call(n, "echo", json!({ "text": "next" })));
        assert_eq!(reply["id"], n, "round {n}: {reply}");
    }
    peer.finish_quietly();
}
