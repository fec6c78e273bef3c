//! The bounded shutdown against clients that read slowly, late, or not at
//! all: a client that reads everything gets every reply and `Ok`; one that
//! takes nothing is given up on in bounded time (review-44sd).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_stdio::Server;
use mcp_stdio::types::{CallToolResult, Tool};
use serde_json::{Value, json};

use crate::support::{WAIT, call};

/// The write timeout of the servers whose clients read steadily while a
/// publisher waits (`ServerBuilder::write_timeout`; 10 s by default): each
/// test reads for several of them.
const LET_GO: Duration = Duration::from_secs(3);

/// What the client has read of the server's output so far.
type Read = Arc<Mutex<Vec<u8>>>;

/// A client that reads the server's output `chunk` bytes at a time, one
/// read every `every`, once `gate` lets it begin (a channel the test
/// closes; the client reads nothing before).
struct Trickle {
    chunk: usize,
    every: Duration,
    gate: Option<crossbeam_channel::Receiver<()>>,
    read: Read,
}

impl Write for Trickle {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Some(gate) = self.gate.take() {
            let _ = gate.recv();
        }
        // The client's pace: it reads a chunk, then does something else.
        std::thread::sleep(self.every);
        let n = bytes.len().min(self.chunk);
        self.read.lock().unwrap().extend_from_slice(&bytes[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The write timeout of the servers whose tests want a client that takes
/// too little given up on at the end of serving soon (10 s by default).
const PATIENCE: Duration = Duration::from_secs(1);

/// A server with a tool `big` whose reply carries `size` bytes of text,
/// grace period `grace` and write timeout `write_timeout`.
fn big_server(grace: Duration, write_timeout: Duration) -> Server {
    Server::builder("slow-client", "1.0.0")
        .shutdown_grace(grace)
        .write_timeout(write_timeout)
        .tool(
            Tool::new("big", "Replies with `size` bytes."),
            |_ctx, args: Value| {
                let size = args["size"].as_u64().unwrap_or(0) as usize;
                Ok(CallToolResult::text("x".repeat(size)))
            },
        )
        .build()
}

/// Serves `server` to `output`, sends `calls` calls of `big` with `size`
/// bytes each, then closes the input (end of input); returns how long
/// `serve` took after the input closed, and what it returned.
fn serve_calls_then_eof(
    server: &Server,
    output: impl Write + Send + 'static,
    calls: usize,
    size: usize,
) -> (Duration, Result<(), mcp_stdio::Error>) {
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (served_tx, served) = crossbeam_channel::bounded(1);
    {
        let server = server.clone();
        std::thread::spawn(move || {
            let _ = served_tx.send(server.serve(mcp_stdio::Transport::new(server_in, output)));
        });
    }
    for id in 0..calls {
        let line = serde_json::to_string(&call(id, "big", json!({ "size": size }))).unwrap();
        to_server.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
    drop(to_server);
    let closed = Instant::now();
    let served = served
        .recv_timeout(Duration::from_secs(60))
        .expect("serve returned within a minute");
    (closed.elapsed(), served)
}

/// The ids of the replies in what the client read (complete lines only),
/// and how many results among them.
fn replies(read: &Read) -> (Vec<i64>, usize) {
    let read = read.lock().unwrap();
    let mut ids = Vec::new();
    let mut results = 0;
    for line in read.split(|&b| b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let Some(id) = message["id"].as_i64() {
            ids.push(id);
            results += usize::from(message.get("result").is_some());
        }
    }
    ids.sort_unstable();
    (ids, results)
}

/// A client that reads slowly but steadily (64 KiB every 100 ms) with
/// 2 MiB of replies waiting at the end of input, grace `grace`, write
/// timeout [`PATIENCE`]: it reads everything, so it gets every reply and
/// `serve` returns `Ok`.
fn a_steady_reader_gets_every_reply(grace: Duration) {
    let read = Read::default();
    let output = Trickle {
        chunk: 64 * 1024,
        every: Duration::from_millis(100),
        gate: None,
        read: Arc::clone(&read),
    };
    let (took, served) = serve_calls_then_eof(&big_server(grace, PATIENCE), output, 16, 128 * 1024);
    let (ids, _) = replies(&read);
    assert_eq!(
        ids,
        (0..16).collect::<Vec<_>>(),
        "serve returned {served:?} after {took:?}"
    );
    served.unwrap_or_else(|e| panic!("serve returned {e} after {took:?}"));
}

/// Claim: a slow but steady reader is not cut at shutdown (grace 0).
#[test]
fn a_steady_slow_reader_gets_every_reply_with_no_grace() {
    a_steady_reader_gets_every_reply(Duration::ZERO);
}

/// Claim: the same with a grace period of 100 ms.
#[test]
fn a_steady_slow_reader_gets_every_reply_with_a_short_grace() {
    a_steady_reader_gets_every_reply(Duration::from_millis(100));
}

/// A client that reads nothing until `late` after the end of input, then
/// reads fast; what `serve` returned, and the replies it read by the end.
fn a_late_reader(late: Duration) -> (Result<(), mcp_stdio::Error>, Vec<i64>) {
    let read = Read::default();
    let (open, gate) = crossbeam_channel::bounded::<()>(0);
    let output = Trickle {
        chunk: 1 << 20,
        every: Duration::ZERO,
        gate: Some(gate),
        read: Arc::clone(&read),
    };
    let server = big_server(Duration::from_millis(100), PATIENCE);
    let opener = std::thread::spawn(move || {
        std::thread::sleep(late);
        drop(open);
    });
    let (_, served) = serve_calls_then_eof(&server, output, 4, 1024);
    opener.join().unwrap();
    // The write given up on may still end once the gate opened.
    let deadline = Instant::now() + WAIT;
    while replies(&read).0.len() < 4 && Instant::now() < deadline && served.is_ok() {
        std::thread::sleep(Duration::from_millis(10));
    }
    (served, replies(&read).0)
}

/// Claim: a client that starts reading well before the write timeout ends
/// (500 ms after the end of input; grace 100 ms, write timeout 1 s) gets
/// every reply and `Ok`.
#[test]
fn a_client_that_starts_reading_before_the_write_timeout_ends_gets_every_reply() {
    let (served, ids) = a_late_reader(Duration::from_millis(500));
    assert_eq!(ids, [0, 1, 2, 3], "{served:?}");
    served.unwrap();
}

/// Claim: a client that starts reading only after the write timeout ended
/// (3 s after the end of input) is given up on: `TimedOut`.
#[test]
fn a_client_that_starts_reading_after_the_write_timeout_is_given_up_on() {
    let (served, _) = a_late_reader(Duration::from_secs(3));
    let Err(mcp_stdio::Error::Io(e)) = served else {
        panic!("{served:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
}

/// A client that takes a page of the last output now and then (4 KiB
/// every 300 ms, 13 KiB a second) is given up on once it took less than
/// 16 KiB in the write timeout (a second, with a grace period of 500 ms
/// for the replies to be written): while the shutdown
/// counted each byte it was given a second again after every page, and
/// held `serve` for as long as its megabyte lasted (80 s).
#[test]
fn a_client_that_takes_a_page_now_and_then_does_not_hold_the_shutdown() {
    let read = Read::default();
    let output = Trickle {
        chunk: 4096,
        every: Duration::from_millis(300),
        gate: None,
        read: Arc::clone(&read),
    };
    let server = big_server(Duration::from_millis(500), PATIENCE);
    let (took, served) = serve_calls_then_eof(&server, output, 4, 256 * 1024);
    let Err(mcp_stdio::Error::Io(e)) = &served else {
        panic!("serve returned {served:?} after {took:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(
        took < Duration::from_secs(10),
        "serve returned after {took:?}, the client having read {} KiB",
        read.lock().unwrap().len() / 1024
    );
}

/// Claim: `shutdown_grace(Duration::MAX)` waits as long as it takes, with
/// no panic on the clock, and a client that reads gets its reply.
#[test]
fn a_grace_period_too_long_for_the_clock_still_ends_serve() {
    let read = Read::default();
    let output = Trickle {
        chunk: 1 << 20,
        every: Duration::ZERO,
        gate: None,
        read: Arc::clone(&read),
    };
    let (_, served) = serve_calls_then_eof(&big_server(Duration::MAX, PATIENCE), output, 3, 10);
    served.unwrap();
    assert_eq!(replies(&read).0, [0, 1, 2]);
}

/// Serves `server` to a client that reads 64 KiB every 20 ms, opens a
/// subscription (id 1000), sends 60 calls of `big` with 64 KiB each (more
/// than the backlog: the reader comes to wait for room, sending itself),
/// stops the server with the input still open once `ran` calls began,
/// and checks that every request got exactly one reply (its result, or
/// `-32603`; the subscription its final result) and `serve` returned `Ok`.
fn a_stop_answers_each_request_once_to_a_slow_reader(server: &Server) {
    let read = Read::default();
    let output = Trickle {
        chunk: 64 * 1024,
        every: Duration::from_millis(20),
        gate: None,
        read: Arc::clone(&read),
    };
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (served_tx, served) = crossbeam_channel::bounded(1);
    {
        let server = server.clone();
        std::thread::spawn(move || {
            let _ = served_tx.send(server.serve(mcp_stdio::Transport::new(server_in, output)));
        });
    }
    let listen = crate::support::request(
        1000,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    let mut lines = vec![serde_json::to_string(&listen).unwrap()];
    for id in 0..60 {
        let call = call(id, "big", json!({ "size": 64 * 1024 }));
        lines.push(serde_json::to_string(&call).unwrap());
    }
    for line in lines {
        to_server.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
    // Some replies are out (the reader is past the burst's start).
    let deadline = Instant::now() + WAIT;
    while replies(&read).0.len() < 3 {
        assert!(Instant::now() < deadline, "no replies");
        std::thread::sleep(Duration::from_millis(5));
    }
    server.stop_handle().stop();
    let served = served.recv_timeout(Duration::from_secs(60));
    drop(to_server);
    let served = served.expect("serve returned within a minute");
    let (ids, _) = replies(&read);
    let mut expected: Vec<i64> = (0..60).collect();
    expected.push(1000);
    assert_eq!(ids, expected, "serve returned {served:?}");
    served.unwrap();
}

/// Claim: a stop with a subscription open, pooled calls in flight and
/// the reader waiting for room answers every request once to a client
/// that reads slowly but everything.
#[test]
fn a_stop_answers_each_request_once_to_a_slow_reader_with_no_grace() {
    let server = big_server(Duration::ZERO, PATIENCE);
    a_stop_answers_each_request_once_to_a_slow_reader(&server);
}

/// Claim: the same with one worker and a grace period of 100 ms.
#[test]
fn a_stop_answers_each_request_once_to_a_slow_reader_with_one_worker() {
    let server = Server::builder("slow-client", "1.0.0")
        .shutdown_grace(Duration::from_millis(100))
        .write_timeout(PATIENCE)
        .workers(1)
        .tool(
            Tool::new("big", "Replies with `size` bytes."),
            |_ctx, args: Value| {
                let size = args["size"].as_u64().unwrap_or(0) as usize;
                Ok(CallToolResult::text("x".repeat(size)))
            },
        )
        .build();
    a_stop_answers_each_request_once_to_a_slow_reader(&server);
}

/// The pause of a publisher that publishes as long as a test runs:
/// 5,000 changes a second (about 500 KB/s), far more than the slow
/// clients here read. A publisher of the same change never waits behind
/// a client that is behind (each subscription keeps the latest), so one
/// that did not pause spun a CPU for the whole test (12 s of CPU in one).
fn pace() {
    std::thread::sleep(Duration::from_micros(200));
}

/// Claim (review of c66b5f8, the let-go of a client that takes none of
/// its output while a publisher waits): a client that reads steadily, if
/// slowly, is never let go. On a real pipe it was: a blocking `write(2)`
/// of a send returns only once the pipe took all of it, so
/// `Output::progress` did not move while the client read the first
/// megabyte of a send at 64 KiB/s, and 10 s into it the client was let go
/// (`Trickle` above returns after each chunk; a pipe does not).
#[test]
fn a_steady_slow_reader_on_a_pipe_is_not_let_go_while_events_are_published() {
    use std::io::Read as _;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let server = Server::builder("slow-client", "1.0.0")
        .write_timeout(LET_GO)
        .tool(
            Tool::new("t", "A tool, so that its list may change."),
            |_ctx, _: Value| Ok(CallToolResult::text("t")),
        )
        .build();
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (mut from_server, server_out) = std::io::pipe().unwrap();
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(mcp_stdio::Transport::new(server_in, server_out)))
    };
    // The client reads 4 KiB every 125 ms (32 KiB/s) until told to read
    // fast; it counts what it read, and sees the end.
    let read = Arc::new(AtomicUsize::new(0));
    let fast = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicBool::new(false));
    let (acked, ack) = crossbeam_channel::bounded(1);
    let reader = {
        let (read, fast, ended) = (Arc::clone(&read), Arc::clone(&fast), Arc::clone(&ended));
        std::thread::spawn(move || {
            let mut buf = vec![0; 4096];
            let mut first = Vec::new();
            loop {
                let n = from_server.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    ended.store(true, Ordering::SeqCst);
                    return;
                }
                if first.len() < 4096 {
                    first.extend_from_slice(&buf[..n]);
                    if first.contains(&b'\n') {
                        let _ = acked.try_send(());
                    }
                }
                read.fetch_add(n, Ordering::SeqCst);
                if !fast.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(125));
                }
            }
        })
    };
    let listen = crate::support::request(
        "l",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    to_server
        .write_all(format!("{listen}\n").as_bytes())
        .unwrap();
    ack.recv_timeout(WAIT).expect("the listen's acknowledgment");
    // The application publishes (about 100 bytes an event) far faster than
    // the client reads (`pace`): past the first megabyte each change is
    // held back, the latest.
    let publishing = Arc::new(AtomicBool::new(true));
    let publisher = {
        let (notifier, publishing) = (server.notifier(), Arc::clone(&publishing));
        std::thread::spawn(move || {
            while publishing.load(Ordering::SeqCst) {
                notifier.tools_list_changed();
                pace();
            }
        })
    };
    // Reading 384 KiB at 32 KiB/s takes 12 s, four write timeouts: a send
    // of more than the 96 KiB the client reads in one is sure to come (one
    // takes all that waits, and past the backlog more than a megabyte
    // waits).
    let deadline = Instant::now() + 6 * WAIT;
    while read.load(Ordering::SeqCst) < 384 * 1024
        && !ended.load(Ordering::SeqCst)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (got, gone) = (read.load(Ordering::SeqCst), ended.load(Ordering::SeqCst));
    publishing.store(false, Ordering::SeqCst);
    fast.store(true, Ordering::SeqCst);
    publisher.join().unwrap();
    drop(to_server);
    let served = serving.join().unwrap();
    reader.join().unwrap();
    assert!(
        !gone && got >= 384 * 1024,
        "a client reading 32 KiB/s read {} KiB (the end seen: {gone}): {served:?}",
        got / 1024
    );
    served.unwrap();
}

/// A client on a Unix socket that reads 8 KiB every 100 ms (80 KiB/s) is
/// not let go while a publisher waits on it: its clock (`Output::idle`)
/// moves with each `write(2)` of at most 16 KiB the socket takes.
#[test]
fn a_steady_reader_on_a_unix_socket_is_not_let_go_while_events_are_published() {
    use std::io::Read as _;
    use std::os::unix::net::UnixStream;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let server = Server::builder("slow-client", "1.0.0")
        .write_timeout(LET_GO)
        .tool(
            Tool::new("t", "A tool, so that its list may change."),
            |_ctx, _: Value| Ok(CallToolResult::text("t")),
        )
        .build();
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (mut from_server, server_out) = UnixStream::pair().unwrap();
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(mcp_stdio::Transport::new(server_in, server_out)))
    };
    let read = Arc::new(AtomicUsize::new(0));
    let fast = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicBool::new(false));
    let (acked, ack) = crossbeam_channel::bounded(1);
    let reader = {
        let (read, fast, ended) = (Arc::clone(&read), Arc::clone(&fast), Arc::clone(&ended));
        std::thread::spawn(move || {
            let mut buf = vec![0; 8192];
            let mut first = Vec::new();
            loop {
                let n = from_server.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    ended.store(true, Ordering::SeqCst);
                    return;
                }
                if first.len() < 8192 {
                    first.extend_from_slice(&buf[..n]);
                    if first.contains(&b'\n') {
                        let _ = acked.try_send(());
                    }
                }
                read.fetch_add(n, Ordering::SeqCst);
                if !fast.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        })
    };
    let listen = crate::support::request(
        "l",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    to_server
        .write_all(format!("{listen}\n").as_bytes())
        .unwrap();
    ack.recv_timeout(WAIT).expect("the listen's acknowledgment");
    let publishing = Arc::new(AtomicBool::new(true));
    let publisher = {
        let (notifier, publishing) = (server.notifier(), Arc::clone(&publishing));
        std::thread::spawn(move || {
            while publishing.load(Ordering::SeqCst) {
                notifier.tools_list_changed();
                pace();
            }
        })
    };
    // 768 KiB at 80 KiB/s: about 10 s, three write timeouts.
    let deadline = Instant::now() + 6 * WAIT;
    while read.load(Ordering::SeqCst) < 768 * 1024
        && !ended.load(Ordering::SeqCst)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (got, gone) = (read.load(Ordering::SeqCst), ended.load(Ordering::SeqCst));
    publishing.store(false, Ordering::SeqCst);
    fast.store(true, Ordering::SeqCst);
    publisher.join().unwrap();
    drop(to_server);
    let served = serving.join().unwrap();
    reader.join().unwrap();
    assert!(
        !gone && got >= 768 * 1024,
        "a client reading 80 KiB/s read {} KiB (the end seen: {gone}): {served:?}",
        got / 1024
    );
    served.unwrap();
}

/// A client on a real pipe that reads 4 KiB every 100 ms (40 KiB/s,
/// never stopping) with up to 512 KiB of replies waiting at the end of
/// input, grace 1 s, write timeout 1 s (the shutdown's patience was the
/// grace period, at least 1 s, until the tenth session): a `write(2)` of 64 KiB to the pipe
/// returns only every 1.6 s, so `Output::progress` stood still for longer
/// than the patience while the client read, and `serve` gave it up
/// (`TimedOut`). Each call is answered once, with its reply or, when it
/// had not run by the end of the grace period (a loaded machine: the
/// backlog holds the last ones back), with `-32603`: a CI run read half
/// of it that way.
///
/// The client reads on a clock (a read every 100 ms from its start),
/// not 100 ms after each read: on a loaded machine every sleep and read
/// comes late, and a client that sleeps after each read falls below
/// 40 KiB/s, towards the 16 KiB per write timeout it may not fall
/// under. A read that comes late is followed by the next at once, one
/// at most (never more than 4 KiB ahead of the clock).
#[test]
fn a_steady_reader_on_a_pipe_gets_every_reply_with_a_short_write_timeout() {
    use std::io::Read as _;
    let (mut from_server, server_out) = std::io::pipe().unwrap();
    let read = Read::default();
    let reader = {
        let read = Arc::clone(&read);
        std::thread::spawn(move || {
            let mut buf = vec![0; 4096];
            let tick = Duration::from_millis(100);
            let mut next = Instant::now();
            loop {
                let n = from_server.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    return;
                }
                read.lock().unwrap().extend_from_slice(&buf[..n]);
                next += tick;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else if now - next > tick {
                    next = now - tick;
                }
            }
        })
    };
    let (took, served) = serve_calls_then_eof(
        &big_server(Duration::from_secs(1), PATIENCE),
        server_out,
        4,
        128 * 1024,
    );
    reader.join().unwrap();
    // The `-32603` answers come in the in-flight map's order.
    let (mut ids, _) = replies(&read);
    ids.sort_unstable();
    let bytes = read.lock().unwrap().len();
    assert!(
        bytes > 128 * 1024,
        "a client reading 40 KiB/s read {} KiB; serve returned {served:?} after {took:?}",
        bytes / 1024
    );
    assert_eq!(
        ids,
        [0, 1, 2, 3],
        "serve returned {served:?} after {took:?}"
    );
    served.unwrap_or_else(|e| panic!("serve returned {e} after {took:?}"));
}

/// Serves a client on a real pipe that reads a page (4 KiB) every `every`
/// while the application publishes far faster than it reads (`pace`); returns
/// what `serve` returned, within `within`, and what the client read.
fn a_page_reader_on_a_pipe(
    server: &Server,
    every: Duration,
    within: Duration,
) -> (Option<Result<(), mcp_stdio::Error>>, usize) {
    use std::io::Read as _;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (mut from_server, server_out) = std::io::pipe().unwrap();
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(mcp_stdio::Transport::new(server_in, server_out)))
    };
    let read = Arc::new(AtomicUsize::new(0));
    let fast = Arc::new(AtomicBool::new(false));
    let (acked, ack) = crossbeam_channel::bounded(1);
    let reader = {
        let (read, fast) = (Arc::clone(&read), Arc::clone(&fast));
        std::thread::spawn(move || {
            let mut buf = vec![0; 4096];
            loop {
                let n = from_server.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    return;
                }
                if buf[..n].contains(&b'\n') {
                    let _ = acked.try_send(());
                }
                read.fetch_add(n, Ordering::SeqCst);
                // Its pause, cut short once the test lets it read fast.
                let until = Instant::now() + every;
                while !fast.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        })
    };
    let listen = crate::support::request(
        "l",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    to_server
        .write_all(format!("{listen}\n").as_bytes())
        .unwrap();
    ack.recv_timeout(WAIT).expect("the listen's acknowledgment");
    let publishing = Arc::new(AtomicBool::new(true));
    let publisher = {
        let (notifier, publishing) = (server.notifier(), Arc::clone(&publishing));
        std::thread::spawn(move || {
            while publishing.load(Ordering::SeqCst) {
                notifier.tools_list_changed();
                pace();
            }
        })
    };
    let deadline = Instant::now() + within;
    while !serving.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let served = serving.is_finished().then(|| serving.join().unwrap());
    let got = read.load(Ordering::SeqCst);
    publishing.store(false, Ordering::SeqCst);
    fast.store(true, Ordering::SeqCst);
    publisher.join().unwrap();
    drop(to_server);
    reader.join().unwrap();
    (served, got)
}

/// Claim (review s9 of 0f941d1, whose CHANGELOG entry says "a stdio or
/// socket client that reads a page of the server's output every few
/// seconds no longer holds every publisher of the server at its pace"):
/// on a real pipe such a client is let go, the write timeout after a send
/// began, as it was before that change. A blocking `write(2)` of 16 KiB
/// (`output::WRITE_AT_MOST`) returns only once the pipe took all of it,
/// four pages: the clock moved once per 16 KiB before the change too (on
/// 0496557, the let-go a fixed 10 s, a client reading a page every 5 s
/// this way was let go after 20 s, 16 KiB read). Only a writer that
/// returns after part of a `write` (an in-memory one, `SlowLoris` in
/// send_path.rs) held the publishers so. Here a page a second against a
/// write timeout of 3 s.
#[test]
fn a_client_on_a_real_pipe_that_reads_a_page_a_second_is_let_go_while_events_are_published() {
    let server = Server::builder("slow-client", "1.0.0")
        .write_timeout(LET_GO)
        .tool(
            Tool::new("t", "A tool, so that its list may change."),
            |_ctx, _: Value| Ok(CallToolResult::text("t")),
        )
        .build();
    let (served, got) = a_page_reader_on_a_pipe(&server, Duration::from_secs(1), 3 * WAIT);
    let Some(Err(mcp_stdio::Error::Io(e))) = served else {
        panic!(
            "a client reading a page a second, {} KiB read, was not let go in 30 s: {served:?}",
            got / 1024
        );
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
}

/// A client that reads 4 KiB of `from_server` every `every` (never
/// stopping) while `server` writes `calls` replies of 128 KiB to
/// `server_out` at the end of input; asserts that it got every reply and
/// `serve` returned `Ok`.
fn a_steady_reader_on(
    mut from_server: impl std::io::Read + Send + 'static,
    server_out: impl Write + Send + 'static,
    every: Duration,
    server: &Server,
    calls: usize,
) {
    let read = Read::default();
    let reader = {
        let read = Arc::clone(&read);
        std::thread::spawn(move || {
            let mut buf = vec![0; 4096];
            loop {
                let n = from_server.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    return;
                }
                read.lock().unwrap().extend_from_slice(&buf[..n]);
                std::thread::sleep(every);
            }
        })
    };
    let (took, served) = serve_calls_then_eof(server, server_out, calls, 128 * 1024);
    reader.join().unwrap();
    let bytes = read.lock().unwrap().len();
    let (ids, _) = replies(&read);
    let rate = 4.0 / every.as_secs_f64();
    assert_eq!(
        ids,
        (0..calls as i64).collect::<Vec<_>>(),
        "a client reading {rate:.0} KiB/s read {} KiB; serve returned {served:?} after {took:?}",
        bytes / 1024
    );
    served.unwrap_or_else(|e| panic!("serve returned {e} after {took:?}"));
}

/// A server of `big` with the default grace period (2 s) and write
/// timeout (10 s).
fn big_server_with_the_defaults() -> Server {
    big_server(Duration::from_secs(2), Duration::from_secs(10))
}

/// Claim (review s9b's finding, fixed in the tenth session): a client on a
/// Unix socket (what Node's `child_process` gives a server as its stdout:
/// a socketpair) that reads 4 KiB every 100 ms (40 KiB/s) with 384 KiB of
/// replies waiting at the end of input, with the default grace period and
/// write timeout, gets every reply. A blocking `write(2)` to a Unix socket
/// whose buffer is full returns only once the client has drained it to a
/// quarter of `SO_SNDBUF` (about 160 KiB read, every 4 s at 40 KiB/s),
/// however small the `write(2)`: the client's clock (`Output::idle`)
/// stands still for seconds while the client reads. The shutdown's
/// patience was the grace period (2 s), and the client was given up on;
/// it is the write timeout now, so the least rate kept on a socket is
/// about 160 KiB per write timeout, 16 KiB/s at the default.
#[test]
fn a_steady_reader_on_a_unix_socket_gets_every_reply_with_the_default_write_timeout() {
    let (from_server, server_out) = std::os::unix::net::UnixStream::pair().unwrap();
    let every = Duration::from_millis(100);
    a_steady_reader_on(
        from_server,
        server_out,
        every,
        &big_server_with_the_defaults(),
        3,
    );
}

/// Claim: a client on a real pipe that reads 4 KiB every 200 ms
/// (20 KiB/s) with the default grace period and write timeout gets every
/// reply: each `write(2)` of 16 KiB returns once it read 16 KiB, every
/// 0.8 s, well within the write timeout.
#[test]
fn a_steady_reader_at_20_kib_a_second_on_a_pipe_gets_every_reply_with_the_defaults() {
    let (from_server, server_out) = std::io::pipe().unwrap();
    let every = Duration::from_millis(200);
    a_steady_reader_on(
        from_server,
        server_out,
        every,
        &big_server_with_the_defaults(),
        2,
    );
}

/// The CPU time a thread of this process used so far (user and system),
/// from `/proc/self/task/TID/stat`, in clock ticks (100 a second).
fn cpu_ticks(tid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Claim (review s10): an idle server (nothing pending, nothing sent) with
/// the least write timeout (1 ms) does not spin: `serve`'s thread, which
/// looks at the client's clock every write timeout while no send is in
/// progress, woke 1,000 times a second for as long as the client stayed
/// (11 ticks of CPU in 2 s, a debug build).
#[test]
fn an_idle_server_with_the_least_write_timeout_does_not_spin() {
    let server = Server::builder("idle", "1.0.0")
        .write_timeout(Duration::ZERO)
        .build();
    let (ours, theirs) = mcp_stdio::Transport::memory();
    let (tid_tx, tid) = crossbeam_channel::bounded(1);
    let serving = std::thread::spawn(move || {
        let me = std::fs::read_link("/proc/thread-self").unwrap();
        let me = me.file_name().unwrap().to_string_lossy().into_owned();
        tid_tx.send(me).unwrap();
        server.serve(theirs)
    });
    let tid = tid.recv().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (before, at) = (cpu_ticks(&tid), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(&tid) - before;
    let elapsed = at.elapsed();
    drop(ours);
    serving.join().unwrap().unwrap();
    assert!(
        used <= 2,
        "serve's thread used {used} ticks of CPU in {elapsed:?}"
    );
}

/// Claim (review s10): a write timeout and a grace period too long for the
/// clock (`Duration::MAX`: never let go) serve a client and end at end of
/// input, with no overflow on the clock (`serve`'s look at the client's
/// clock, the grace period's, the shutdown's patience).
#[test]
fn a_write_timeout_too_long_for_the_clock_serves_and_ends() {
    let server = big_server(Duration::MAX, Duration::MAX);
    let mut peer = crate::support::Peer::start(&server);
    peer.send(&call(1, "big", json!({ "size": 100_000 })));
    let reply = peer.recv();
    assert_eq!(reply["id"], json!(1), "{reply}");
    let (rest, served) = peer.finish();
    assert!(rest.is_empty(), "{rest:?}");
    served.unwrap();
}

/// Claim (review s10): a client that reads a real pipe steadily, at about
/// 100 KiB a second (six times the least rate kept at a write timeout of
/// 1 s), gets a reply of 400 KiB while its input stays open, when the
/// application handed `serve` its output in a `BufWriter` of 256 KiB. The
/// client's clock (`Output::idle`) moves as the writer's `write` returns,
/// and a `BufWriter` that is full hands the pipe all of its 256 KiB in one
/// `write`: the clock stands still for 2 s while the client reads, and
/// since `serve`'s thread asks the rule with no publisher waiting it lets
/// such a client go (before, only a publisher waiting past a megabyte did).
#[test]
#[ignore = "open finding (review s10): Transport::new asks for an unbuffered writer; the client read all of the reply, yet serve returned TimedOut"]
fn a_steady_reader_behind_a_large_buf_writer_is_not_let_go() {
    use std::io::Read as _;

    let server = big_server(Duration::from_millis(100), Duration::from_secs(1));
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (mut from_server, server_out) = std::io::pipe().unwrap();
    let serving = {
        let server = server.clone();
        let output = std::io::BufWriter::with_capacity(256 * 1024, server_out);
        std::thread::spawn(move || server.serve(mcp_stdio::Transport::new(server_in, output)))
    };
    let reader = std::thread::spawn(move || {
        let mut read = Vec::new();
        let mut buf = vec![0; 16 * 1024];
        loop {
            let n = from_server.read(&mut buf).unwrap_or(0);
            if n == 0 {
                return read;
            }
            read.extend_from_slice(&buf[..n]);
            if read.ends_with(b"\n") {
                return read;
            }
            std::thread::sleep(Duration::from_millis(150));
        }
    });
    let line = serde_json::to_string(&call(1, "big", json!({ "size": 400 * 1024 }))).unwrap();
    to_server.write_all(format!("{line}\n").as_bytes()).unwrap();
    let read = reader.join().unwrap();
    drop(to_server);
    let served = serving.join().unwrap();
    let reply: Result<Value, _> = serde_json::from_slice(&read);
    assert!(
        reply.is_ok_and(|reply| reply["id"] == json!(1)),
        "the client read {} KiB of the reply; serve returned {served:?}",
        read.len() / 1024
    );
    served.unwrap();
}

/// A client that takes `chunk` bytes every `every`, and says when the
/// server let go of its writer (dropped it).
struct Loris {
    chunk: usize,
    every: Duration,
    taken: Arc<std::sync::atomic::AtomicUsize>,
    dropped: Option<crossbeam_channel::Sender<()>>,
}

impl Write for Loris {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        std::thread::sleep(self.every);
        let n = bytes.len().min(self.chunk);
        self.taken.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Loris {
    fn drop(&mut self) {
        if let Some(dropped) = self.dropped.take() {
            let _ = dropped.send(());
        }
    }
}

/// Claim (review s10): a client let go (`Conn::let_go`: "nothing more is
/// written") is written no more than the piece in progress. A client that
/// asks for a reply of 2 MiB and takes it at 20 KiB a second (1 KiB every
/// 50 ms, less than 16 KiB in the write timeout of 300 ms) is let go, and
/// `serve` returns `TimedOut`; but the send in progress went on writing the
/// rest of its buffers at the client's pace, 100 s, holding a worker
/// thread and the 2 MiB for it: an attacker's connections each keep one so
/// after `serve` gave them up. Left open (the tenth session): a client
/// that never reads at all holds its send's thread for good anyway (a
/// blocked `write(2)` on a `Box<dyn Write>` cannot be interrupted), and a
/// send cut short leaves the client half a line; the review's fix (the
/// send goes on only while the client keeps taking 16 KiB per write
/// timeout after the let-go: two more atomics in `output::Took`) was not
/// taken for a trickler's sake alone.
#[test]
#[ignore = "open finding of review s10: a send to a client let go goes on at the client's pace"]
fn a_client_let_go_is_written_no_more_than_the_piece_in_progress() {
    let server = big_server(Duration::from_millis(100), Duration::from_millis(300));
    let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (dropped_tx, dropped) = crossbeam_channel::bounded(1);
    let output = Loris {
        chunk: 1024,
        every: Duration::from_millis(50),
        taken: Arc::clone(&taken),
        dropped: Some(dropped_tx),
    };
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(mcp_stdio::Transport::new(server_in, output)))
    };
    let line = serde_json::to_string(&call(1, "big", json!({ "size": 2 << 20 }))).unwrap();
    to_server.write_all(format!("{line}\n").as_bytes()).unwrap();
    let deadline = Instant::now() + WAIT;
    while !serving.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(serving.is_finished(), "serve did not let the client go");
    let served = serving.join().unwrap();
    let Err(mcp_stdio::Error::Io(e)) = &served else {
        panic!("{served:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    let at_the_end = taken.load(std::sync::atomic::Ordering::SeqCst);
    let let_go = dropped.recv_timeout(Duration::from_secs(3));
    let after = taken.load(std::sync::atomic::Ordering::SeqCst) - at_the_end;
    assert!(
        let_go.is_ok(),
        "the writer of a client let go is still in use 3 s after serve returned ({} KiB written since)",
        after / 1024
    );
    assert!(
        after <= 16 * 1024,
        "{after} bytes written after serve returned"
    );
    drop(to_server);
}

/// A client that takes one byte a millisecond until the test says stop
/// (then its writes fail): far less than 16 KiB in a write timeout of a
/// second, in writes that each take something.
struct Dribble {
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Write for Dribble {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        std::thread::sleep(Duration::from_millis(1));
        Ok(bytes.len().min(1))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Claim (review s11): a client cannot keep its clock alive with writes
/// that each take a byte: the clock counts bytes, not writes, so a client
/// taking 1 KiB a second of a 64 KiB reply (input left open) is let go in
/// about the write timeout, and `serve` returns `TimedOut`.
#[test]
fn a_client_that_takes_a_byte_per_write_is_let_go_in_the_write_timeout() {
    let server = big_server(Duration::from_millis(100), Duration::from_secs(1));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let output = Dribble {
        stop: Arc::clone(&stop),
    };
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (served_tx, served) = crossbeam_channel::bounded(1);
    {
        let server = server.clone();
        std::thread::spawn(move || {
            let _ = served_tx.send(server.serve(mcp_stdio::Transport::new(server_in, output)));
        });
    }
    let line = serde_json::to_string(&call(1, "big", json!({ "size": 64 * 1024 }))).unwrap();
    to_server.write_all(format!("{line}\n").as_bytes()).unwrap();
    let at = Instant::now();
    let served = served.recv_timeout(WAIT);
    let took = at.elapsed();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    drop(to_server);
    let Ok(Err(mcp_stdio::Error::Io(e))) = served else {
        panic!("{served:?} after {took:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(took < Duration::from_secs(4), "serve took {took:?}");
}

/// Claim (review s11): `serve`'s threads do not spin through the grace
/// period with the least write timeout (1 ms), several connections at
/// once: each looks at its client's clock at most every 20 ms
/// (`serve::LOOK_AT_MOST_EVERY`), in the grace period as while it waits
/// for the end.
#[test]
fn serve_threads_in_the_grace_period_with_the_least_write_timeout_do_not_spin() {
    let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
    let server = Server::builder("grace", "1.0.0")
        .shutdown_grace(Duration::from_secs(30))
        .write_timeout(Duration::ZERO)
        .tool(
            Tool::new("hold", "Runs until released."),
            move |_ctx, _: Value| {
                let _ = release.recv();
                Ok(CallToolResult::text("released"))
            },
        )
        .build();
    let mut serving = Vec::new();
    let mut tids = Vec::new();
    for _ in 0..3 {
        let (mut to_server, server_in) = mcp_stdio::memory_pipe();
        let (tid_tx, tid) = crossbeam_channel::bounded(1);
        let server = server.clone();
        serving.push(std::thread::spawn(move || {
            let me = std::fs::read_link("/proc/thread-self").unwrap();
            let me = me.file_name().unwrap().to_string_lossy().into_owned();
            tid_tx.send(me).unwrap();
            server.serve(mcp_stdio::Transport::new(server_in, std::io::sink()))
        }));
        tids.push(tid.recv().unwrap());
        let line = serde_json::to_string(&call(1, "hold", json!({}))).unwrap();
        to_server.write_all(format!("{line}\n").as_bytes()).unwrap();
        // End of input: the call runs on in the grace period.
        drop(to_server);
    }
    std::thread::sleep(Duration::from_millis(300));
    let before: Vec<u64> = tids.iter().map(|tid| cpu_ticks(tid)).collect();
    let at = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let used: u64 = tids.iter().map(|tid| cpu_ticks(tid)).sum::<u64>() - before.iter().sum::<u64>();
    let elapsed = at.elapsed();
    let still = serving.iter().filter(|s| !s.is_finished()).count();
    drop(release_tx);
    for serving in serving {
        serving.join().unwrap().unwrap();
    }
    assert_eq!(still, 3, "serve returned before its call was released");
    assert!(
        used <= 4,
        "3 serve threads used {used} ticks of CPU in {elapsed:?} of the grace period"
    );
}
