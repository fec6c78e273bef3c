//! What a client slow to read costs over Streamable HTTP
//! (`server::http::body`): a request's own lines wait for it and all
//! arrive, in order, with the connection usable after them; a listener
//! that falls behind the events it asked for is let go, and holds up no
//! publisher.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use mcp_stdio::HttpOptions;
use serde_json::{Value, json};

use crate::http::{body, events, everything, mirrored, start};
use crate::support::WAIT;

/// One POST on `socket`, kept alive.
fn send(socket: &mut TcpStream, headers: &[(String, String)], body: &str) {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        socket.peer_addr().unwrap(),
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    socket.write_all(request.as_bytes()).unwrap();
}

/// Reads one JSON response with a `Content-Length` body.
fn read_json(reader: &mut BufReader<TcpStream>) -> Value {
    let mut length = None;
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the connection closed"
        );
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse::<usize>().unwrap());
        }
    }
    let mut bytes = vec![0; length.expect("a JSON response has a Content-Length")];
    reader.read_exact(&mut bytes).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// A 16 MiB reply, far past the socket's buffers and what a stream holds
/// unsent, to a client that reads nothing for a while: the writer waits
/// for the client, the reply arrives whole, and the next request on the
/// connection is answered after it (nothing of the first lands in the
/// second's response).
#[test]
fn a_large_reply_to_a_client_that_reads_late_arrives_whole_and_the_connection_goes_on() {
    let http = everything();
    let mut socket = TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let bytes = 16 << 20;
    let call = body(
        1,
        "tools/call",
        json!({ "name": "big", "arguments": { "bytes": bytes } }),
    );
    send(&mut socket, &mirrored("tools/call", Some("big")), &call);
    thread::sleep(Duration::from_millis(300));
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    let reply = read_json(&mut reader);
    assert_eq!(reply["id"], 1);
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), bytes);
    let echo = body(
        2,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "after" } }),
    );
    send(&mut socket, &mirrored("tools/call", Some("echo")), &echo);
    let reply = read_json(&mut reader);
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["content"][0]["text"], "after");
}

/// A handler's progress to a client that reads nothing for a while: 20,000
/// notifications (about 3 MiB, past what a stream holds unsent) wait for
/// it, none is dropped, and the reply comes after them.
#[test]
fn progress_to_a_client_that_reads_late_is_delayed_not_lost() {
    let http = everything();
    let steps = 20_000;
    let mut call: Value = serde_json::from_str(&body(
        3,
        "tools/call",
        json!({ "name": "progress", "arguments": { "steps": steps } }),
    ))
    .unwrap();
    call["params"]["_meta"]["progressToken"] = json!("p");
    let mut socket = TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let mut headers = mirrored("tools/call", Some("progress"));
    headers.push(("Connection".into(), "close".into()));
    send(&mut socket, &headers, &call.to_string());
    thread::sleep(Duration::from_millis(300));
    let mut response = Vec::new();
    socket.read_to_end(&mut response).unwrap();
    let events = events(&String::from_utf8(response).unwrap());
    assert_eq!(events.len(), steps + 1);
    for (step, event) in events[..steps].iter().enumerate() {
        assert_eq!(event["params"]["progress"], json!((step + 1) as f64));
    }
    assert_eq!(events[steps]["result"]["content"][0]["text"], "done");
}

/// A listener that reads nothing while 300 updates of a 64 KiB URI are
/// published (19 MiB): every publish returns at once, the listener's
/// stream is cut once it falls 256 KiB behind (long before the write
/// timeout of a minute), and a new listener is served.
#[test]
fn a_listener_that_falls_behind_is_let_go_at_once_and_holds_up_no_publisher() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let http = start(
        server,
        HttpOptions::new().write_timeout(Duration::from_secs(60)),
    );
    let uri = format!("mem://{}", "z".repeat(64 * 1024));
    let listen = body(
        1,
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": [uri] } }),
    );
    let mut stuck = TcpStream::connect(http.addr).unwrap();
    stuck.set_read_timeout(Some(WAIT)).unwrap();
    send(&mut stuck, &mirrored("subscriptions/listen", None), &listen);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("acknowledged") {
        let n = stuck.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
    let mut longest = Duration::ZERO;
    for _ in 0..300 {
        let one = Instant::now();
        notifier.resource_updated(&uri);
        longest = longest.max(one.elapsed());
    }
    assert!(
        longest < Duration::from_secs(5),
        "a publish waited {longest:?} for a listener that reads nothing"
    );
    // The stream was cut: reading what was sent ends, long before the
    // write timeout.
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = stuck.read_to_end(&mut rest);
    assert!(
        started.elapsed() < WAIT,
        "the stream of a listener behind stayed open"
    );
    // A listener that reads is served, and hears the next update.
    let mut fresh = TcpStream::connect(http.addr).unwrap();
    fresh.set_read_timeout(Some(WAIT)).unwrap();
    send(&mut fresh, &mirrored("subscriptions/listen", None), &listen);
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("acknowledged") {
        let n = fresh.read(&mut buf).unwrap();
        assert!(n > 0, "the new stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
    notifier.resource_updated(&uri);
    while !String::from_utf8_lossy(&seen).contains("notifications/resources/updated") {
        let n = fresh.read(&mut buf).unwrap();
        assert!(n > 0, "the new stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
}

/// A legacy POST in `session` with `body` (`Connection: close`, taking an
/// event stream); the socket, to read its stream as it comes or not at all.
#[cfg(feature = "legacy")]
fn open_legacy(addr: std::net::SocketAddr, session: &str, body: &Value) -> TcpStream {
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let mut headers = crate::http_legacy::headers(Some(session), true);
    headers.push(("Connection".into(), "close".into()));
    send(&mut socket, &headers, &body.to_string());
    socket
}

/// `session` subscribes to `uri` (a JSON POST, answered before it returns).
#[cfg(feature = "legacy")]
fn subscribe_legacy(addr: std::net::SocketAddr, session: &str, uri: &str) {
    let subscribe = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": { "uri": uri } });
    let response = crate::http::post(
        addr,
        &crate::http_legacy::headers(Some(session), false),
        &subscribe.to_string(),
    );
    assert_eq!(crate::http::status(&response), 200, "{response}");
}

/// Waits until `socket` has bytes to read (peeking, nothing taken): the
/// server began writing its response.
#[cfg(feature = "legacy")]
fn wait_for_bytes(socket: &TcpStream) {
    let mut buf = [0u8; 16];
    let n = socket.peek(&mut buf).expect("the response began");
    assert!(n > 0, "the connection closed before its response");
}

/// Review 47b, claim 1: a publisher still waits on a client that stopped
/// reading, when the stream it publishes to is a legacy POST whose own
/// reply is being written. `body.rs` `LineWriter::line` writes a
/// request's own line past `UNSENT_LIMIT` itself (`write_unsent`, bounded
/// by the write timeout only), on the thread that sends the connection's
/// output (`conn/handle.rs` `send_written`: one send at a time, the others
/// wait for it); the session's update (`sessions.rs` `Listener::publish`,
/// `conn.act(Sending::Now, ..)`) then waits in `send_written` for that send
/// to end. Here: a 16 MiB reply to a legacy POST that reads nothing, and
/// the session subscribed to `mem://counter`: on main one
/// `resource_updated` waited 4.8 s, the write timeout (5 s).
#[cfg(feature = "legacy")]
#[test]
fn a_publish_waits_for_no_legacy_post_whose_own_reply_is_stuck() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let timeout = Duration::from_secs(5);
    let http = start(server, HttpOptions::new().write_timeout(timeout));
    let session = crate::http_legacy::initialize(http.addr, json!({}));
    subscribe_legacy(http.addr, &session, "mem://counter");
    let big = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "big", "arguments": { "bytes": 16 << 20 } } });
    let stuck = open_legacy(http.addr, &session, &big);
    wait_for_bytes(&stuck);
    let started = Instant::now();
    let mut longest = Duration::ZERO;
    while started.elapsed() < Duration::from_secs(2) {
        let one = Instant::now();
        notifier.resource_updated("mem://counter");
        longest = longest.max(one.elapsed());
    }
    assert!(
        longest < Duration::from_secs(1),
        "one publish waited {longest:?} for a legacy POST that reads nothing (write timeout {timeout:?})"
    );
    drop(stuck);
}

/// Review 47b, claim 2: a session's update is routed to a response that is
/// complete but still being written, and dropped there, while another
/// stream of the session could carry it. `body.rs` `Body::takes_events`
/// asks `!is_done()`, and `is_done` is now false while bytes wait or are
/// being written (`unsent`, `writing`), so `sessions.rs`
/// `Listener::publish` picks a POST whose JSON reply (`Mode::Done`) is on
/// its way as the session's newest stream that takes events; `State::line`
/// then drops the update (`Mode::Done`). Here: a session with an `ask`
/// POST open (its stream waits for the elicitation's answer) and a newer
/// POST whose 16 MiB reply the client does not read yet: on main the
/// update never reached the `ask` stream (nothing in 8 s, the publisher
/// back after 4 s); before eacb106 it went there (by reading: `is_done`
/// was `mode == Done`).
#[cfg(feature = "legacy")]
#[test]
fn an_update_is_not_routed_to_a_finished_reply_still_being_written() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    // Short: on main the publisher also waits (claim 1), two of them.
    let http = start(
        server,
        HttpOptions::new().write_timeout(Duration::from_secs(2)),
    );
    let session = crate::http_legacy::initialize(http.addr, json!({ "elicitation": {} }));
    subscribe_legacy(http.addr, &session, "mem://counter");
    let mut asking = open_legacy(http.addr, &session, &crate::http_legacy::call(3, "ask"));
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("elicitation/create") {
        let n = asking.read(&mut buf).unwrap();
        assert!(n > 0, "the ask's stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
    let big = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": { "name": "big", "arguments": { "bytes": 16 << 20 } } });
    let stuck = open_legacy(http.addr, &session, &big);
    // The big reply has begun: its POST is open, its reply complete and
    // being written.
    wait_for_bytes(&stuck);
    // On a thread of its own: on main it also waits (claim 1).
    let publisher = thread::spawn(move || notifier.resource_updated("mem://counter"));
    asking
        .set_read_timeout(Some(Duration::from_secs(8)))
        .unwrap();
    while !String::from_utf8_lossy(&seen).contains("notifications/resources/updated") {
        match asking.read(&mut buf) {
            Ok(n @ 1..) => seen.extend_from_slice(&buf[..n]),
            other => panic!(
                "the update never reached the session's open stream ({other:?}): {}",
                String::from_utf8_lossy(&seen)
            ),
        }
    }
    drop(stuck);
    publisher.join().unwrap();
}

/// Review 47b, claim 3: a legacy client that reads its call's stream, only
/// slower than the call writes it, loses the call's reply when an update
/// of the session comes. `body.rs` `LineWriter::line` lets the client go
/// when `unsent` is past `UNSENT_LIMIT` after an event, but `unsent` holds
/// the request's own lines too (its progress fills it up to the limit, by
/// design: they wait for room there), so an event may tip it over;
/// `client_lost` then detaches a legacy POST (`outlives_client`) and the
/// reply goes nowhere. Here: 200,000 progress notifications (20 MB, far
/// past the sockets' buffers) read 4 KiB at a time with a 1 ms pause, and
/// an update of a 64 KiB URI the session subscribed to every 100 ms
/// (650 kB/s, a fraction of what the client reads, on a quiet machine): on main the stream
/// ended without the reply, after 152,905 and 83,685 of the 200,000
/// notifications (two runs); with no update published all 200,000 and
/// the reply arrived. (Lead: the limit now counts events alone, and a
/// handler's notifications wait for the events before them; the updates
/// come every 250 ms, not 100, as every 100 ms the test's client, reading
/// about 1 MB/s on a loaded machine, gave 65% of what it read to them and
/// fell behind the events themselves, which lets a client go.)
#[cfg(feature = "legacy")]
#[test]
fn a_legacy_call_read_slowly_keeps_its_reply_when_updates_come() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = crate::everything::build();
    let notifier = server.notifier();
    let http = start(
        server,
        HttpOptions::new().write_timeout(Duration::from_secs(10)),
    );
    let uri = format!("mem://{}", "y".repeat(64 * 1024));
    let session = crate::http_legacy::initialize(http.addr, json!({}));
    subscribe_legacy(http.addr, &session, &uri);
    let steps = 200_000;
    let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "progress", "arguments": { "steps": steps },
            "_meta": { "progressToken": "p" } } });
    let mut socket = open_legacy(http.addr, &session, &call);
    wait_for_bytes(&socket);
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut published = 0;
            while !stop.load(Ordering::Relaxed) && published < 2000 {
                notifier.resource_updated(&uri);
                published += 1;
                thread::sleep(Duration::from_millis(250));
            }
            published
        })
    };
    let mut response = Vec::new();
    let mut buf = vec![0u8; 4 * 1024];
    loop {
        match socket.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
            Err(e) => panic!("reading the stream: {e}"),
        }
        thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);
    let published = publisher.join().unwrap();
    let text = String::from_utf8_lossy(&response);
    let events: Vec<Value> = (text.lines())
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect();
    let progress = (events.iter())
        .filter(|e| e["method"] == "notifications/progress")
        .count();
    let updates = (events.iter())
        .filter(|e| e["method"] == "notifications/resources/updated")
        .count();
    assert_eq!(
        events.last().map(|e| e["id"].clone()),
        Some(json!(3)),
        "the stream ended without the reply, after {progress} of {steps} progress \
         notifications and {updates} of {published} updates"
    );
}
