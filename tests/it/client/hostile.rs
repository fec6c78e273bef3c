//! A careless or hostile server, from the client's side (review client15):
//! what it writes must not crash the client, stall its reader, fail or
//! answer the wrong call, or flood the application's stderr with notes.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mcp_stdio::types::SubscriptionFilter;
use mcp_stdio::{Client, Error, RequestOptions, SubscriptionEvent};
use serde_json::{Value, json};

use super::{Script, discover_result, pair};

/// A client over a scripted server that answered the probe, and the
/// notes of its trace.
fn connected(
    peer: impl FnOnce(Script) + Send + 'static,
) -> (Client, Arc<Mutex<Vec<String>>>, thread::JoinHandle<()>) {
    let (transport, mut server) = pair();
    let peer = thread::spawn(move || {
        let probe = server.recv();
        server.send(json!({ "jsonrpc": "2.0", "id": probe["id"], "result": discover_result() }));
        peer(server);
    });
    let notes = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&notes);
    let client = Client::builder()
        .request_timeout(Duration::from_secs(10))
        .trace(move |note| kept.lock().unwrap().push(note.to_owned()))
        .connect(transport)
        .expect("the scripted server answered the probe");
    (client, notes, peer)
}

fn result(id: &Value, text: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": { "content": [{ "type": "text", "text": text }] } })
}

/// A subscription's events that come before its acknowledgment are
/// dropped (spec 2026-07-28 basic/patterns/subscriptions: the ack comes
/// first) with a note each; a server that sends thousands of them must not
/// write thousands of notes, which go to the application's stderr when it
/// set no trace: they are rate-limited, as every other note a server's
/// output causes (`NoteLimiter`, at most 10 a second).
#[test]
fn events_before_a_subscriptions_acknowledgment_are_noted_at_a_bounded_rate() {
    const EARLY: usize = 200;
    let (client, notes, peer) = connected(|mut server| {
        let listen = server.recv();
        let id = listen["id"].clone();
        let tagged = json!({ "_meta": { "io.modelcontextprotocol/subscriptionId": id } });
        for _ in 0..EARLY {
            server.send(json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": tagged }));
        }
        let mut ack = tagged.clone();
        ack["notifications"] = json!({ "toolsListChanged": true });
        server.send(json!({ "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack }));
        // Open until the client closes.
        let _ = server.recv_raw();
    });
    let started = Instant::now();
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..SubscriptionFilter::default()
    };
    let subscription = client.listen(filter).expect("acknowledged");
    let seconds = started.elapsed().as_secs() as usize + 1;
    drop(subscription);
    client.close().unwrap();
    peer.join().unwrap();
    let early = (notes.lock().unwrap().iter())
        .filter(|note| note.contains("before acknowledging"))
        .count();
    assert!(
        early <= 11 * (seconds + 1),
        "{early} notes for {EARLY} early events in about {seconds} s"
    );
}

/// Claim found false (kept as a guard): a reply nested 100,000 arrays
/// deep overflows no stack (serde_json's recursion limit, and the
/// envelope scan keeps no stack); the call fails at once, and the next one
/// is answered.
#[test]
fn a_reply_nested_100000_deep_fails_its_call_and_the_client_goes_on() {
    let (client, _notes, peer) = connected(|mut server| {
        let call = server.recv();
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":{deep}}}}}"#,
            call["id"]
        );
        server.send_raw(&line);
        let call = server.recv();
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":1,"message":"m","data":{deep}}}}}"#,
            call["id"]
        );
        server.send_raw(&line);
        let call = server.recv();
        server.send(result(&call["id"], "fine"));
        let _ = server.recv_raw();
    });
    let started = Instant::now();
    let first = client.call("deep", json!({}));
    assert!(
        matches!(first, Err(Error::Protocol(_) | Error::Json(_))),
        "{first:?}"
    );
    let second = client.call("deep-error", json!({}));
    assert!(
        matches!(second, Err(Error::Protocol(_) | Error::Json(_))),
        "{second:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "not at once");
    let third = client.call("after", json!({})).unwrap();
    assert_eq!(third.text_content(), "fine");
    client.close().unwrap();
    peer.join().unwrap();
}

/// Claim found false (kept as a guard): an id is matched exactly. A reply
/// whose id is the string `"2"` answers no request `2`, a server's request
/// under a pending request's id is no reply to it (a modern server sends
/// no requests: it is ignored), and a second reply to an answered request
/// answers the next one with nothing: each call gets its own reply.
#[test]
fn only_a_reply_with_the_requests_id_exactly_answers_it() {
    let (client, notes, peer) = connected(|mut server| {
        let call = server.recv();
        let id = call["id"].clone();
        let text_id = Value::String(id.to_string());
        server.send(result(&text_id, "wrong: a string id"));
        server.send(json!({ "jsonrpc": "2.0", "id": id, "method": "roots/list" }));
        server.send(json!({ "jsonrpc": "2.0", "id": id.as_i64().unwrap() + 1, "result": {} }));
        server.send(result(&id, "right"));
        server.send(result(&id, "wrong: a second reply"));
        let call = server.recv();
        server.send(result(&call["id"], "next"));
        let _ = server.recv_raw();
    });
    let first = client.call("one", json!({})).unwrap();
    assert_eq!(first.text_content(), "right");
    let second = client.call("two", json!({})).unwrap();
    assert_eq!(second.text_content(), "next");
    client.close().unwrap();
    peer.join().unwrap();
    let notes = notes.lock().unwrap();
    assert!(
        notes.iter().any(|n| n.contains("a number as a number")),
        "the string id was noted: {notes:?}"
    );
}

/// Claim found false (kept as a guard): a flood of what the client cannot
/// use (progress for tokens it never gave, task status with no
/// subscription, replies to ids it never sent, requests to it, log
/// messages) neither stalls the reader nor floods the trace: the call's
/// reply after it is delivered, and the notes are rate-limited.
#[test]
fn a_flood_of_unusable_messages_leaves_the_reader_answering() {
    const FLOOD: usize = 5_000;
    let (client, notes, peer) = connected(|mut server| {
        let call = server.recv();
        for n in 0..FLOOD {
            let junk = match n % 5 {
                0 => {
                    json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": n, "progress": 1 } })
                }
                1 => {
                    json!({ "jsonrpc": "2.0", "method": "notifications/tasks", "params": { "taskId": "t", "status": "working" } })
                }
                2 => json!({ "jsonrpc": "2.0", "id": 1_000_000 + n, "result": {} }),
                3 => {
                    json!({ "jsonrpc": "2.0", "id": n, "method": "sampling/createMessage", "params": {} })
                }
                _ => {
                    json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "data": n } })
                }
            };
            server.send(junk);
        }
        server.send(result(&call["id"], "through"));
        let _ = server.recv_raw();
    });
    let started = Instant::now();
    let answer = client.call("after-the-flood", json!({})).unwrap();
    assert_eq!(answer.text_content(), "through");
    let seconds = started.elapsed().as_secs() as usize + 1;
    client.close().unwrap();
    peer.join().unwrap();
    let problems = (notes.lock().unwrap().iter())
        .filter(|n| n.contains("skipped a response") || n.contains("ignored a request"))
        .count();
    assert!(
        problems <= 11 * (seconds + 1),
        "{problems} notes for {FLOOD} messages in about {seconds} s"
    );
}

/// Claim found false (kept as a guard): a call whose reply never comes
/// times out on time though the server writes without pause (progress
/// for its token, which does not restart the timeout unless asked).
#[test]
fn a_call_times_out_while_the_server_writes_progress_for_it() {
    let (client, _notes, peer) = connected(|mut server| {
        let call = server.recv();
        let token = call["params"]["_meta"]["progressToken"].clone();
        let started = Instant::now();
        let progress = json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": token, "progress": 1 } });
        // Until the client closes (a write fails) or 5 s.
        while started.elapsed() < Duration::from_secs(5)
            && writeln!(server.writer, "{progress}").is_ok()
        {
            thread::sleep(Duration::from_millis(1));
        }
    });
    let started = Instant::now();
    let call = client.call_tool_with(
        "slow",
        json!({}),
        RequestOptions::new()
            .timeout(Duration::from_millis(500))
            .on_progress(|_| {}),
    );
    assert!(matches!(call, Err(Error::Timeout)), "{call:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    client.close().unwrap();
    peer.join().unwrap();
}

/// [`SubscriptionEvent::Resubscribed`] says the server was restarted and
/// the subscription sent again. A server that acknowledges the same listen
/// twice (careless, or widening what it claims to deliver) restarted
/// nothing: the second ack is no event, and changes no `accepted`.
#[test]
fn a_second_acknowledgment_of_the_same_listen_is_no_resubscription() {
    let (client, _notes, peer) = connected(|mut server| {
        let listen = server.recv();
        let tagged = json!({ "_meta": { "io.modelcontextprotocol/subscriptionId": listen["id"] } });
        let ack = |notifications: Value| {
            let mut params = tagged.clone();
            params["notifications"] = notifications;
            json!({ "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": params })
        };
        server.send(ack(json!({ "toolsListChanged": true })));
        server.send(ack(
            json!({ "toolsListChanged": true, "promptsListChanged": true }),
        ));
        server.send(json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": tagged }));
        let _ = server.recv_raw();
    });
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..SubscriptionFilter::default()
    };
    let mut subscription = client.listen(filter.clone()).expect("acknowledged");
    let first = subscription.recv_timeout(Duration::from_secs(10));
    assert!(
        matches!(first, Ok(Some(SubscriptionEvent::ToolsListChanged))),
        "the first event: {first:?}"
    );
    assert_eq!(subscription.accepted(), &filter);
    drop(subscription);
    client.close().unwrap();
    peer.join().unwrap();
}

/// Claim found false (kept as a guard): a client dropped while another
/// thread waits on one of its calls (a server that never answers, the
/// wait's timeout far off) ends that wait with [`Error::Disconnected`]
/// within the close, not at the timeout.
#[test]
fn dropping_the_client_ends_a_wait_on_another_thread() {
    let (client, _notes, peer) = connected(|mut server| {
        let _call = server.recv();
        // Never answered; open until the client's input ends.
        while server.recv_raw().is_some() {}
    });
    let call = client
        .start_request(
            "tools/call",
            json!({ "name": "never", "arguments": {} }),
            RequestOptions::new().timeout(Duration::from_secs(60)),
        )
        .unwrap();
    let waiting = thread::spawn(move || {
        let started = Instant::now();
        (call.wait(), started.elapsed())
    });
    thread::sleep(Duration::from_millis(50));
    drop(client);
    let (outcome, waited) = waiting.join().unwrap();
    assert!(matches!(outcome, Err(Error::Disconnected)), "{outcome:?}");
    assert!(waited < Duration::from_secs(10), "waited {waited:?}");
    peer.join().unwrap();
}

/// Claim found false (review fixes15a, kept as a guard): the list
/// iterators keep a keyed hash of each cursor they followed, to tell a
/// cycle. A server that names the same cursor text in two listings (a
/// stateless cursor, `"page2"` each time) makes no cycle: each listing is
/// an iterator of its own, and both reach their end.
#[test]
fn the_same_cursor_in_two_listings_is_no_cycle() {
    let (client, _notes, peer) = connected(|mut server| {
        for _ in 0..2 {
            for page in ["first", "second"] {
                let list = server.recv();
                assert_eq!(list["method"], "tools/list", "{list}");
                let tool = json!({ "name": page, "inputSchema": { "type": "object" } });
                let mut result = json!({ "tools": [tool] });
                if page == "first" {
                    result["nextCursor"] = json!("page2");
                } else {
                    assert_eq!(list["params"]["cursor"], "page2", "{list}");
                }
                server.send(json!({ "jsonrpc": "2.0", "id": list["id"], "result": result }));
            }
        }
        let _ = server.recv_raw();
    });
    for listing in 0..2 {
        let names: Result<Vec<String>, Error> =
            client.tools().map(|tool| tool.map(|t| t.name)).collect();
        assert_eq!(
            names.as_deref().map_err(ToString::to_string),
            Ok(&["first".to_owned(), "second".to_owned()][..]),
            "listing {listing}"
        );
    }
    client.close().unwrap();
    peer.join().unwrap();
}
