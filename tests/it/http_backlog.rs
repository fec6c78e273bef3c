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
