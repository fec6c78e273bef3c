//! The pool without a watcher and the send path's backpressure under a
//! hostile review (issue 44 item 2, review-44bp): a pooled request's
//! finish never waits for another thread's `write(2)`
//! (`Shared::send_unless_sending`), so the reader's wait for room
//! (`Conn::backed_up`) and the queue's (`Conn::start_queued`) are what hold
//! a client that does not read. Each test is a claim about what ends that
//! wait, on a server over an in-memory transport whose output the test
//! controls.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde_json::{Value, json};

use crate::support::{Peer, WAIT, call};

/// A server whose tool `big` answers `bytes` bytes (64 KiB unless the
/// arguments say) and counts its runs in `ran`.
fn big_server(ran: &Arc<AtomicUsize>) -> Server {
    big_server_with(Server::builder("backpressure", "1.0.0"), ran)
}

/// [`big_server`], built from `builder`.
fn big_server_with(builder: mcp_stdio::ServerBuilder, ran: &Arc<AtomicUsize>) -> Server {
    let ran = Arc::clone(ran);
    builder
        .tool(
            Tool::new("big", "Answers `bytes` bytes."),
            move |_ctx, args: Value| {
                ran.fetch_add(1, Ordering::AcqRel);
                let bytes = args["bytes"].as_u64().unwrap_or(64 * 1024) as usize;
                Ok(CallToolResult::text("x".repeat(bytes)))
            },
        )
        .build()
}

/// Waits until `ran` is at least `least` and has not moved for 300 ms: the
/// reader stopped reading (it waits for room), and the handlers it began
/// are done. Fails after [`WAIT`].
fn wait_until_settled(ran: &AtomicUsize, least: usize) -> usize {
    let deadline = Instant::now() + WAIT;
    let mut last = (ran.load(Ordering::Acquire), Instant::now());
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = ran.load(Ordering::Acquire);
        if now != last.0 {
            last = (now, Instant::now());
        } else if now >= least && last.1.elapsed() > Duration::from_millis(300) {
            return now;
        }
        assert!(Instant::now() < deadline, "{now} ran, never settled");
    }
}

/// Serves `server` to `output` on a thread of its own and writes 400 calls
/// of `big` (64 KiB each) into its input; returns the input, still open,
/// and where `serve`'s result arrives.
fn serve_and_call_big(
    server: &Server,
    output: impl Write + Send + 'static,
) -> (
    Box<dyn Write + Send>,
    crossbeam_channel::Receiver<Result<(), mcp_stdio::Error>>,
) {
    let (to_server, server_in) = mcp_stdio::memory_pipe();
    let (served_tx, served) = crossbeam_channel::bounded(1);
    {
        let server = server.clone();
        std::thread::spawn(move || {
            let _ = served_tx.send(server.serve(Transport::new(server_in, output)));
        });
    }
    let mut input: Box<dyn Write + Send> = Box::new(to_server);
    for id in 0..400 {
        let line = serde_json::to_string(&call(id, "big", json!({}))).unwrap();
        input.write_all(line.as_bytes()).unwrap();
        input.write_all(b"\n").unwrap();
    }
    input.flush().unwrap();
    (input, served)
}

/// An output that takes nothing while `held` is locked, then fails every
/// write: the client went away while the server's replies waited for it.
struct GoesAway {
    held: Arc<Mutex<()>>,
}

impl Write for GoesAway {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        let _gone = self.held.lock().unwrap();
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
}

/// Claim: the reader waiting for room (more than a megabyte behind the
/// send in progress) is woken when that send fails (`Output::attach`
/// drops what waits, so `Conn::backed_up` is false), and serving ends.
#[test]
fn a_client_that_goes_away_while_the_reader_waits_for_room_ends_serving() {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = big_server(&ran);
    let held = Arc::new(Mutex::new(()));
    let gone = held.lock().unwrap();
    let output = GoesAway {
        held: Arc::clone(&held),
    };
    let (input, served) = serve_and_call_big(&server, output);
    let answered = wait_until_settled(&ran, 17);
    assert!(answered < 400, "the reader never waited: {answered} ran");
    drop(gone);
    drop(input);
    let served = served.recv_timeout(WAIT);
    assert!(
        served.is_ok(),
        "serve did not return within 10 s of the client going away ({} of 400 ran)",
        ran.load(Ordering::Acquire)
    );
}

/// Claim: a stop while the reader waits for room and the client does not
/// read ends the connection once the client reads again: every request
/// the server began gets exactly one reply (its result, or `-32603`), and
/// the output closes.
#[test]
fn a_stop_while_the_reader_waits_for_room_answers_each_request_once() {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = big_server(&ran);
    let (mut peer, held) = Peer::start_stalling(&server);
    let not_reading = held.lock().unwrap();
    for id in 0..400 {
        peer.send(&call(id, "big", json!({})));
    }
    let answered = wait_until_settled(&ran, 17);
    server.stop_handle().stop();
    drop(not_reading);
    let lines = peer
        .wait_output_closed(WAIT)
        .expect("the output closed after the stop");
    let mut ids = Vec::new();
    for line in &lines {
        let reply: Value = serde_json::from_str(line).unwrap();
        let ok = reply.get("result").is_some() || reply["error"]["code"] == json!(-32603);
        assert!(
            ok,
            "neither a result nor -32603: {}",
            &line[..200.min(line.len())]
        );
        ids.push(reply["id"].as_u64().unwrap());
    }
    let replies = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), replies, "a request answered twice");
    assert!(
        replies >= answered,
        "{replies} replies for {answered} requests that ran"
    );
    peer.finish().1.unwrap();
}

/// Claim: a single reply larger than the backlog, written behind a send
/// that waits for the client, stops the reader and holds back the queue;
/// once the client reads, it goes out and every request after it runs and
/// is answered (`Conn::sent` starts the queued ones).
#[test]
fn after_a_reply_larger_than_the_backlog_every_request_is_answered() {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = big_server(&ran);
    let (mut peer, held, entered) = Peer::start_stalling_told(&server);
    let not_reading = held.lock().unwrap();
    peer.send(&call(0, "big", json!({})));
    entered
        .recv_timeout(WAIT)
        .expect("the first reply's write began");
    peer.send(&call(1, "big", json!({ "bytes": 3 * 1024 * 1024 })));
    wait_until_settled(&ran, 2);
    for id in 2..100 {
        peer.send(&call(id, "big", json!({ "bytes": 10 })));
    }
    drop(not_reading);
    let mut ids: Vec<u64> = (0..100)
        .map(|_| peer.recv()["id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..100).collect::<Vec<_>>());
    peer.finish_quietly();
}

/// Claim: pooled handlers that send progress to a client that does not
/// read are held (each waits for the `write(2)` in progress: `Outlet::notify`
/// sends `Sending::Now`), so what waits in memory is a line or so each,
/// not what they would write.
#[test]
fn handlers_streaming_progress_to_a_client_that_does_not_read_are_held() {
    let produced = Arc::new(AtomicUsize::new(0));
    let server = {
        let produced = Arc::clone(&produced);
        Server::builder("stream", "1.0.0")
            .tool(
                Tool::new("stream", "1,000 progress lines."),
                move |ctx, _: Value| {
                    for n in 0..1000 {
                        ctx.progress(n as f64, None, Some("streaming"));
                        produced.fetch_add(1, Ordering::AcqRel);
                    }
                    Ok(CallToolResult::text("done"))
                },
            )
            .build()
    };
    let (mut peer, held) = Peer::start_stalling(&server);
    let not_reading = held.lock().unwrap();
    for id in 0..4 {
        let mut stream = call(id, "stream", json!({}));
        stream["params"]["_meta"]["progressToken"] = json!(id);
        peer.send(&stream);
    }
    let written = wait_until_settled(&produced, 0);
    drop(not_reading);
    assert!(
        written <= 4 * 2,
        "{written} progress lines written while the client read nothing"
    );
    let mut results = 0;
    while results < 4 {
        if peer.recv().get("result").is_some() {
            results += 1;
        }
    }
    peer.finish_quietly();
}

/// Claim: the queue for slots is first come, first served also when a
/// request waits in it for the backlog rather than for a slot
/// (`Conn::may_start`): a request read after it does not start before
/// it. The request read once the backlog went out waits for the queue
/// to start first. Rounds: the reader reads the next line either after
/// it sent the backlog itself (then the queued one has started) or after
/// the pool's send took it (then a slot is free, the backlog gone, and
/// the queued one waits for that send to end).
#[test]
fn a_request_queued_behind_the_backlog_starts_before_those_read_after_it() {
    let mut overtaken = 0;
    for _ in 0..30 {
        overtaken += usize::from(queued_behind_the_backlog_overtaken());
    }
    assert_eq!(
        overtaken, 0,
        "in {overtaken} of 30 rounds a later request started first"
    );
}

/// One round: returns whether request 3 started before request 2, which
/// was queued behind the backlog.
fn queued_behind_the_backlog_overtaken() -> bool {
    let ran = Arc::new(AtomicUsize::new(0));
    let order = Arc::new(Mutex::new(Vec::new()));
    let server = {
        let (ran, order) = (Arc::clone(&ran), Arc::clone(&order));
        // One slot: a handler's start is its request's start, in the
        // order the queue gave them out.
        Server::builder("order", "1.0.0")
            .max_running(1)
            .tool(
                Tool::new("big", "Answers `bytes` bytes."),
                move |_ctx, args: Value| {
                    ran.fetch_add(1, Ordering::AcqRel);
                    let bytes = args["bytes"].as_u64().unwrap_or(64 * 1024) as usize;
                    Ok(CallToolResult::text("x".repeat(bytes)))
                },
            )
            .tool(
                Tool::new("order", "Says when it started."),
                move |ctx, _: Value| {
                    order.lock().unwrap().push(ctx.id().to_value());
                    Ok(CallToolResult::text("started"))
                },
            )
            .build()
    };
    let (mut peer, held, entered) = Peer::start_stalling_told(&server);
    let not_reading = held.lock().unwrap();
    peer.send(&call(0, "big", json!({})));
    entered
        .recv_timeout(WAIT)
        .expect("the first reply's write began");
    peer.send(&call(1, "big", json!({ "bytes": 2 * 1024 * 1024 })));
    wait_until_settled(&ran, 2);
    peer.send(&call(2, "order", json!({})));
    peer.send(&call(3, "order", json!({})));
    drop(not_reading);
    let mut ids: Vec<u64> = (0..4)
        .map(|_| peer.recv()["id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2, 3]);
    peer.finish_quietly();
    let order = order.lock().unwrap().clone();
    order == [json!(3), json!(2)]
}

/// A client that reads, but slowly: each write waits a moment, longer
/// every seventh, so that pooled replies keep finding a send in progress.
struct Sluggish {
    out: mcp_stdio::MemoryWriter,
    writes: usize,
}

impl Write for Sluggish {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.writes += 1;
        let pause = if self.writes.is_multiple_of(7) {
            300
        } else {
            20
        };
        std::thread::sleep(Duration::from_micros(pause));
        self.out.write(bytes)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Claim: no reply is left behind (a pooled finish that finds a send in
/// progress leaves its reply to it, `Shared::send_unless_sending`; that
/// send's end hands what waits to the pool, `Shared::send_waiting`), and
/// none is sent twice, also when the input ends while they race and the
/// shutdown (`ConnHandle::shut_down`) takes its turn among the sends.
/// Rounds of 500 pipelined pooled calls of mixed sizes to a client that
/// reads slowly; the input ends right after the last.
#[test]
fn every_pooled_reply_arrives_once_to_a_slow_client_also_as_the_input_ends() {
    let server = Server::builder("storm", "1.0.0")
        .tool(
            Tool::new("sized", "Answers `bytes` bytes."),
            |_ctx, args: Value| {
                let bytes = args["bytes"].as_u64().unwrap_or(10) as usize;
                Ok(CallToolResult::text("y".repeat(bytes)))
            },
        )
        .build();
    for round in 0..10 {
        let (to_server, server_in) = mcp_stdio::memory_pipe();
        let (server_out, from_server) = mcp_stdio::memory_pipe();
        let output = Sluggish {
            out: server_out,
            writes: 0,
        };
        let serving = {
            let server = server.clone();
            std::thread::spawn(move || server.serve(Transport::new(server_in, output)))
        };
        let mut peer = Peer::over(
            Transport::new(from_server, to_server),
            Some(serving),
            crate::support::server_meta(&server),
        );
        for id in 0..500u64 {
            let bytes = match id % 10 {
                0 => 20_000,
                1 => 200_000,
                _ => 100,
            };
            peer.send(&call(id, "sized", json!({ "bytes": bytes })));
        }
        let (rest, served) = peer.finish();
        served.unwrap();
        let mut ids: Vec<u64> = rest.iter().map(|r| r["id"].as_u64().unwrap()).collect();
        let replies = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), replies, "round {round}: a reply sent twice");
        assert_eq!(
            ids,
            (0..500).collect::<Vec<_>>(),
            "round {round}: replies missing"
        );
    }
}

/// An output that takes nothing until `held` is let go; says on `dropped`
/// when the server dropped it.
struct TakesNothing {
    held: Arc<Mutex<()>>,
    dropped: crossbeam_channel::Sender<()>,
}

impl Drop for TakesNothing {
    fn drop(&mut self) {
        let _ = self.dropped.send(());
    }
}

impl Write for TakesNothing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let _held = self.held.lock().unwrap();
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Claim (review-44sd): a stop while the reader waits for room (it sends
/// itself: `ConnHandle::wait_until` without a deadline) and the client
/// never reads does not hold `serve`: it returns `TimedOut` within the
/// grace period and twice the write timeout (100 ms + 2 s). What it leaves
/// behind ends once the client reads: the send given up on ends and drops
/// the writer, and the reader lets go of the input.
#[test]
fn a_stop_while_the_reader_waits_for_room_and_the_client_never_reads_ends_serve() {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = big_server_with(
        Server::builder("backpressure", "1.0.0")
            .shutdown_grace(Duration::from_millis(100))
            .write_timeout(Duration::from_secs(1)),
        &ran,
    );
    let held = Arc::new(Mutex::new(()));
    let not_reading = held.lock().unwrap();
    let (dropped, writer_dropped) = crossbeam_channel::bounded(1);
    let output = TakesNothing {
        held: Arc::clone(&held),
        dropped,
    };
    let (mut input, served) = serve_and_call_big(&server, output);
    let answered = wait_until_settled(&ran, 17);
    assert!(answered < 400, "the reader never waited: {answered} ran");
    let stopped = Instant::now();
    server.stop_handle().stop();
    let served = served.recv_timeout(WAIT);
    let took = stopped.elapsed();
    drop(not_reading);
    let served = served.unwrap_or_else(|_| panic!("serve still waits after {took:?}"));
    let Err(mcp_stdio::Error::Io(e)) = served else {
        panic!("{served:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(took < Duration::from_secs(6), "serve took {took:?}");
    writer_dropped
        .recv_timeout(WAIT)
        .expect("the writer was dropped once its write returned");
    // The reader reads the next line, sees the shutdown and ends: the
    // input's reading end is dropped.
    let deadline = Instant::now() + WAIT;
    while input.write_all(b"{}\n").is_ok() {
        assert!(
            Instant::now() < deadline,
            "the reader still holds the input"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Claim (core review 8): the same at the end of input instead of a stop.
/// The reader waits for room, sending itself, in a `write(2)` the client
/// never takes: it never reads the end of input, and `serve` waited for
/// ever (the same root as
/// `shutdown::the_end_of_input_ends_serve_while_the_client_never_reads_an_inline_reply`,
/// and the same fix in the tenth session: the thread in `serve` lets the
/// client go).
#[test]
fn the_end_of_input_while_the_reader_waits_for_room_and_the_client_never_reads_ends_serve() {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = big_server_with(
        Server::builder("backpressure", "1.0.0")
            .shutdown_grace(Duration::from_millis(100))
            .write_timeout(Duration::from_secs(1)),
        &ran,
    );
    let held = Arc::new(Mutex::new(()));
    let not_reading = held.lock().unwrap();
    let (dropped, _writer_dropped) = crossbeam_channel::bounded(1);
    let output = TakesNothing {
        held: Arc::clone(&held),
        dropped,
    };
    let (input, served) = serve_and_call_big(&server, output);
    let answered = wait_until_settled(&ran, 17);
    assert!(answered < 400, "the reader never waited: {answered} ran");
    let ended = Instant::now();
    drop(input);
    let served = served.recv_timeout(WAIT);
    let took = ended.elapsed();
    drop(not_reading);
    assert!(
        served.is_ok(),
        "serve still waits {took:?} after the end of input"
    );
}
