//! The everything server over a real Unix domain socket: `Transport::new`
//! with a `UnixStream`'s two halves, end of input by `shutdown(Write)`, and
//! several connections served at once from one `Server`.

use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde_json::{Value, json};

use crate::support::{Peer, WAIT, call, cancel, request, server_meta};

/// A socket path under the temp dir, unique to this process and test,
/// removed again on drop (also when the test fails).
struct SocketPath(PathBuf);

impl SocketPath {
    fn new(test: &str) -> SocketPath {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("mcp-stdio-{}-{test}-{n}.sock", std::process::id());
        let path = std::env::temp_dir().join(name);
        // A leftover from a crashed run with a recycled pid.
        let _ = std::fs::remove_file(&path);
        SocketPath(path)
    }
}

impl Drop for SocketPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Removes the socket file, checking that it was there and is gone.
fn remove(path: SocketPath) {
    let file = path.0.clone();
    assert!(file.exists(), "the socket file should exist until removed");
    drop(path);
    assert!(!file.exists(), "the socket file should be gone");
}

/// Accepts `n` connections on a thread, serving each on its own thread;
/// returns the serving threads' handles in accept order.
fn accept_and_serve(
    listener: UnixListener,
    server: &Server,
    n: usize,
) -> crossbeam_channel::Receiver<JoinHandle<Result<(), mcp_stdio::Error>>> {
    let (tx, handles) = crossbeam_channel::unbounded();
    let server = server.clone();
    std::thread::spawn(move || {
        for _ in 0..n {
            let (stream, _) = listener.accept().expect("accept");
            let reader = stream.try_clone().expect("try_clone");
            let server = server.clone();
            let serving = std::thread::spawn(move || {
                server.serve(Transport::new(BufReader::new(reader), stream))
            });
            tx.send(serving).unwrap();
        }
    });
    handles
}

/// The client end: a `Peer` over the stream, plus a handle on the same
/// socket for `shutdown` and for reading after the peer is done.
fn connect(
    path: &SocketPath,
    handles: &crossbeam_channel::Receiver<JoinHandle<Result<(), mcp_stdio::Error>>>,
    server: &Server,
) -> (Peer, UnixStream) {
    let stream = UnixStream::connect(&path.0).expect("connect");
    let control = stream.try_clone().expect("try_clone");
    let reader = stream.try_clone().expect("try_clone");
    let serving = handles
        .recv_timeout(WAIT)
        .expect("the server should have accepted the connection");
    let transport = Transport::new(BufReader::new(reader), stream);
    (
        Peer::over(transport, Some(serving), server_meta(server)),
        control,
    )
}

/// Half-closes the client's side: the server reads end of file. Then
/// checks that the server wrote nothing more, that `serve` returned `Ok`
/// and that the server closed its end of the socket.
fn shut_down(peer: Peer, control: UnixStream) {
    control.shutdown(Shutdown::Write).expect("shutdown(Write)");
    let (rest, res) = peer.finish();
    assert_eq!(rest, Vec::<Value>::new(), "nothing more was expected");
    res.expect("serve should return Ok after end of input");
    // The server dropped both halves of its stream: reading our end now
    // yields end of file, not a timeout.
    control.set_read_timeout(Some(WAIT)).unwrap();
    let mut byte = [0u8; 1];
    match (&control).read(&mut byte) {
        Ok(0) => {}
        Ok(_) => panic!("the server wrote after serve returned"),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            panic!("the server did not close the socket")
        }
        Err(e) => panic!("reading the closed socket failed: {e}"),
    }
}

/// Text that exercises JSON escaping: quotes, backslashes, control
/// characters, non-ASCII, a U+2028.
const TRICKY: &str = "tab\t \"quoted\" back\\slash new\nline \u{1} é 日本 😀 \u{2028} </script>";

#[test]
fn discover_and_echo_over_a_unix_socket() {
    let server = crate::everything::build();
    let path = SocketPath::new("single");
    let listener = UnixListener::bind(&path.0).expect("bind");
    let handles = accept_and_serve(listener, &server, 1);
    let (mut peer, control) = connect(&path, &handles, &server);

    // The same requests over the in-memory transport, for the exact bytes
    // the server writes (the wire encoding must not depend on the stream).
    let mut reference = Peer::start(&server);
    let discover = request("discover-1", "server/discover", json!({}));
    let echo = call(2, "echo", json!({ "text": TRICKY }));

    peer.send(&discover);
    let line = peer.recv_line();
    reference.send(&discover);
    assert_eq!(
        line,
        reference.recv_line(),
        "discover bytes differ from the in-memory transport"
    );
    let resp: Value = serde_json::from_str(&line).unwrap();
    let expected = peer.result(
        "discover-1",
        json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {
                "tools": { "listChanged": true },
                "prompts": { "listChanged": true },
                "resources": { "subscribe": true, "listChanged": true },
                "completions": {},
                "logging": {},
                "extensions": { "io.modelcontextprotocol/tasks": {} }
            },
            "instructions": "Fixture server of mcp-stdio: every tool, resource and prompt is a test fixture.",
            "ttlMs": 0,
            "cacheScope": "private"
        }),
    );
    assert_eq!(resp, expected);

    peer.send(&echo);
    let line = peer.recv_line();
    reference.send(&echo);
    assert_eq!(
        line,
        reference.recv_line(),
        "echo bytes differ from the in-memory transport"
    );
    let resp: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        resp,
        peer.result(
            2,
            json!({ "content": [{ "type": "text", "text": TRICKY }] })
        )
    );
    assert_eq!(
        resp["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .as_bytes(),
        TRICKY.as_bytes()
    );
    reference.finish_quietly();

    shut_down(peer, control);
    remove(path);
}

#[test]
fn two_connections_at_once_from_one_server() {
    let server = crate::everything::build();
    let path = SocketPath::new("pair");
    let listener = UnixListener::bind(&path.0).expect("bind");
    let handles = accept_and_serve(listener, &server, 2);
    let (mut a, a_control) = connect(&path, &handles, &server);
    let (mut b, b_control) = connect(&path, &handles, &server);
    let text = |peer: &Peer, id: Value, text: &str| {
        peer.result(id, json!({ "content": [{ "type": "text", "text": text }] }))
    };

    // A long call in flight on A under id 1...
    a.send(&call(1, "slow", json!({ "ms": 60_000 })));
    // ...does not hold up B, and B may use id 1 too: ids are per connection.
    assert_eq!(
        b.ask(&call(1, "echo", json!({ "text": "from b" }))),
        text(&b, json!(1), "from b")
    );
    assert_eq!(
        b.ask(&request(2, "server/discover", json!({})))["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    // A is served alongside its own slow call.
    assert_eq!(
        a.ask(&call(2, "echo", json!({ "text": "from a" }))),
        text(&a, json!(2), "from a")
    );
    // Cancelling A's call is answered by nothing (spec: no reply to a
    // cancelled request), and touches nothing on B.
    a.send(&cancel(1));
    assert_eq!(
        a.ask(&call(3, "echo", json!({ "text": "a again" }))),
        text(&a, json!(3), "a again")
    );

    // Closing A ends A's serve only; B keeps being served.
    shut_down(a, a_control);
    assert_eq!(
        b.ask(&call(3, "echo", json!({ "text": "b after a" }))),
        text(&b, json!(3), "b after a")
    );
    shut_down(b, b_control);
    remove(path);
}

/// `builder` with a pooled tool `big` (a 4 MiB reply, larger than a
/// socket takes in a `write(2)`) and a pooled echo `pecho`.
fn big_and_echo(builder: mcp_stdio::ServerBuilder) -> Server {
    let big = "x".repeat(4 << 20);
    builder
        .tool(Tool::new("big", "A 4 MiB reply."), move |_ctx, _: Value| {
            Ok(CallToolResult::text(big.clone()))
        })
        .tool(Tool::new("pecho", "Pooled echo."), |_ctx, args: Value| {
            Ok(CallToolResult::text(
                args["text"].as_str().unwrap_or("").to_owned(),
            ))
        })
        .build()
}

#[test]
fn a_client_that_stops_reading_does_not_hold_up_another_connection() {
    // A reply's send waits for its client (the backpressure); a worker
    // held there must not be what another connection's requests wait
    // for. One warm worker, a reply larger than the socket takes, a
    // client that never reads it.
    let server = big_and_echo(Server::builder("stuck-reader", "1.0.0").workers(1));
    let path = SocketPath::new("stuck");
    let listener = UnixListener::bind(&path.0).expect("bind");
    let handles = accept_and_serve(listener, &server, 2);
    // A: asks for the big reply, then reads nothing.
    let mut stuck = UnixStream::connect(&path.0).expect("connect");
    let _serving_a = handles.recv_timeout(WAIT).expect("accept A");
    let mut line = serde_json::to_vec(&call(1, "big", json!({}))).unwrap();
    line.push(b'\n');
    stuck.write_all(&line).expect("A's request");
    let (mut b, b_control) = connect(&path, &handles, &server);
    // A's reply has begun: its worker is in the send, which the socket's
    // buffer (far less than 4 MiB) leaves blocked once this byte is read.
    stuck.set_read_timeout(Some(WAIT)).unwrap();
    let mut first = [0u8; 1];
    stuck
        .read_exact(&mut first)
        .expect("the start of A's reply");
    b.send(&call(1, "pecho", json!({ "text": "from b" })));
    let answer = b.try_recv(WAIT);
    // A goes away: its worker's send fails and the worker is free again.
    drop(stuck);
    assert_eq!(
        answer,
        Some(b.result(
            1,
            json!({ "content": [{ "type": "text", "text": "from b" }] })
        )),
        "B's request waited behind A's stuck reply"
    );
    shut_down(b, b_control);
    remove(path);
}

#[test]
fn handlers_and_cancellation_run_while_the_client_does_not_read() {
    // One connection, two warm workers: one in a handler that blocks, the
    // other sending a reply its client does not read. A request read
    // meanwhile still starts, and a cancellation still reaches the
    // blocked handler: only the replies wait for the client.
    let big = "x".repeat(4 << 20);
    let builder = Server::builder("not-reading", "1.0.0")
        .workers(2)
        .tool(Tool::new("big", "A 4 MiB reply."), move |_ctx, _: Value| {
            Ok(CallToolResult::text(big.clone()))
        });
    let (builder, blocker) = crate::support::Blocker::install(builder);
    let server = builder.build();
    let path = SocketPath::new("not-reading");
    let listener = UnixListener::bind(&path.0).expect("bind");
    let handles = accept_and_serve(listener, &server, 1);
    let stream = UnixStream::connect(&path.0).expect("connect");
    let mut reading = stream.try_clone().expect("try_clone");
    let serving = handles.recv_timeout(WAIT).expect("accept");
    let send = |message: &Value| {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        (&stream).write_all(&line).expect("a request");
    };
    send(&call(1, "block", json!({})));
    assert_eq!(blocker.wait_started(), json!(1));
    send(&call(2, "big", json!({})));
    reading.set_read_timeout(Some(WAIT)).unwrap();
    let mut first = [0u8; 1];
    reading
        .read_exact(&mut first)
        .expect("the start of 2's reply");
    // 2's worker is held in its send now; the client reads no more.
    send(&call(3, "block", json!({})));
    let third = blocker.started.recv_timeout(WAIT);
    send(&cancel(1));
    let cancelled = blocker.observed_cancel.recv_timeout(WAIT);
    // The client goes: the send fails, and serving ends.
    drop(reading);
    drop(stream);
    blocker.release_one();
    let _ = serving.join();
    assert_eq!(cancelled.ok(), Some(json!(1)), "1 never saw its cancel");
    assert_eq!(third.ok(), Some(json!(3)), "3 never started");
    remove(path);
}

/// How many threads this process has (the test binary: other tests run
/// beside this one, so only for a report run alone).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, Iterator::count)
}

/// Claim (review-44sd): a client that ends its input and then reads
/// nothing, with a reply larger than the socket takes in a `write(2)`,
/// is given up on: `serve` returns `TimedOut` within the grace period and
/// twice the write timeout (100 ms + 2 s here); meanwhile another connection of
/// the same server is served at full speed; and once the client reads,
/// the write given up on ends and the server's end is closed (the client
/// reads end of file).
#[test]
fn a_client_given_up_on_sees_the_end_once_it_reads_and_holds_up_no_other_connection() {
    let server = big_and_echo(
        Server::builder("given-up", "1.0.0")
            .shutdown_grace(std::time::Duration::from_millis(100))
            .write_timeout(std::time::Duration::from_secs(1)),
    );
    let path = SocketPath::new("given-up");
    let listener = UnixListener::bind(&path.0).expect("bind");
    let handles = accept_and_serve(listener, &server, 2);
    let before = threads();
    let mut stuck = UnixStream::connect(&path.0).expect("connect");
    let serving_a = handles.recv_timeout(WAIT).expect("accept A");
    let mut line = serde_json::to_vec(&call(1, "big", json!({}))).unwrap();
    line.push(b'\n');
    stuck.write_all(&line).expect("A's request");
    stuck.set_read_timeout(Some(WAIT)).unwrap();
    let mut first = [0u8; 1];
    stuck
        .read_exact(&mut first)
        .expect("the start of A's reply");
    stuck.shutdown(Shutdown::Write).expect("A's end of input");
    let ended = std::time::Instant::now();
    let (mut b, b_control) = connect(&path, &handles, &server);
    for n in 0..50 {
        let text = format!("from b {n}");
        b.send(&call(n, "pecho", json!({ "text": text })));
        let answer = b.try_recv(WAIT);
        assert_eq!(
            answer,
            Some(b.result(n, json!({ "content": [{ "type": "text", "text": text }] }))),
        );
    }
    let b_took = ended.elapsed();
    let served = serving_a.join().expect("serve of A panicked");
    let a_took = ended.elapsed();
    let Err(mcp_stdio::Error::Io(e)) = served else {
        panic!("{served:?}");
    };
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    assert!(
        a_took < std::time::Duration::from_secs(4),
        "A's serve took {a_took:?}"
    );
    assert!(
        b_took < std::time::Duration::from_secs(2),
        "B's 50 calls took {b_took:?}"
    );
    let stuck_threads = threads();
    // A reads: the write given up on ends, and its writer is dropped.
    let mut rest = Vec::new();
    stuck.read_to_end(&mut rest).expect("A reads to the end");
    assert!(rest.len() + 1 > 4 << 20, "A read {} bytes", rest.len() + 1);
    assert_eq!(
        rest.last(),
        Some(&b'\n'),
        "the reply in progress was sent whole"
    );
    eprintln!(
        "threads: {before} before A, {stuck_threads} with A given up on, {} after A read; \
         A's serve took {a_took:?}, B's 50 calls {b_took:?}",
        threads()
    );
    shut_down(b, b_control);
    remove(path);
}
