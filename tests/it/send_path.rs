//! The send path under a hostile review (issue 42 and issue 44 item 1):
//! who sends a connection's lines, and what may wait behind a send
//! (ARCHITECTURE.md, "Who sends, and when"). Each test is a claim about
//! `ConnHandle::act`, `Shared::send` and `ConnHandle::shut_down`, on a
//! server over an in-memory transport whose output the test controls.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde_json::{Value, json};

use crate::support::{Peer, WAIT, call, cancel, request, server_meta};

/// The write timeout of the servers whose tests wait for a client to be
/// let go (`ServerBuilder::write_timeout`; 10 s by default).
const LET_GO: Duration = Duration::from_secs(3);

/// A client slower than a handler that streams: it takes a write only
/// once more of the handler's lines wait behind it (the handler says
/// `produced` once each line is in the output; the writes say how many
/// reached the client), once the handler stopped (`ended`), or after
/// [`SlowClient::PATIENCE`]. So every send finds more waiting behind it
/// for as long as the handler streams, whatever the machine's speed. Its
/// first write says so on `entered`.
struct SlowClient {
    out: mcp_stdio::MemoryWriter,
    entered: Option<Sender<()>>,
    produced: Receiver<()>,
    /// Lines the handler wrote into the output, as told so far.
    told: usize,
    /// Its lines that reached the client.
    taken: usize,
    ended: Arc<AtomicBool>,
}

impl SlowClient {
    /// The longest a write waits for the handler: far longer than the
    /// handler takes to write a line, far shorter than the test's wait.
    const PATIENCE: Duration = Duration::from_secs(2);
}

impl Write for SlowClient {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Some(entered) = self.entered.take() {
            let _ = entered.send(());
        }
        let text = String::from_utf8_lossy(bytes);
        self.taken += text.matches("notifications/progress").count();
        let deadline = std::time::Instant::now() + Self::PATIENCE;
        while self.told <= self.taken
            && !self.ended.load(Ordering::Acquire)
            && std::time::Instant::now() < deadline
        {
            if self.produced.recv_timeout(Duration::from_millis(1)).is_ok() {
                self.told += 1;
            }
        }
        self.out.write(bytes)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Claim: the thread that finds the output quiet and sends becomes the
/// sender of every line the others write while it sends
/// (`Shared::send` loops "until nothing is left"), however long they go
/// on writing. When that thread is the reader (`SendFirst::read` calls
/// `send_deferred`) and a handler streams progress faster than the client
/// reads, the reader never comes back to its input: the client's
/// `notifications/cancelled` is never read, and the stream never ends.
#[test]
fn a_steady_stream_of_notifications_does_not_keep_the_reader_from_its_input() {
    let (started_tx, started) = crossbeam_channel::unbounded::<()>();
    let (go_tx, go) = crossbeam_channel::unbounded::<()>();
    let (cancelled_tx, cancelled) = crossbeam_channel::unbounded::<u64>();
    let (produced_tx, produced) = crossbeam_channel::unbounded::<()>();
    let ended = Arc::new(AtomicBool::new(false));
    // Set when the test is over, so that a stream the reader never cancels
    // ends anyway and the test binary is not left with a spinning handler.
    let abandon = Arc::new(AtomicBool::new(false));
    let server = {
        let abandon = Arc::clone(&abandon);
        let ended = Arc::clone(&ended);
        Server::builder("steady-stream", "1.0.0")
            .tool(
                Tool::new("stream", "Progress until cancelled."),
                move |ctx, _: Value| {
                    started_tx.send(()).unwrap();
                    // Quiet until the test says go, then as fast as it can.
                    while go.recv_timeout(Duration::from_millis(2)).is_err() {
                        if ctx.is_cancelled() || abandon.load(Ordering::Relaxed) {
                            return Ok(CallToolResult::text("never went"));
                        }
                    }
                    let mut sent = 0u64;
                    while !ctx.is_cancelled() && !abandon.load(Ordering::Relaxed) {
                        sent += 1;
                        ctx.progress(sent as f64, None, Some("streaming"));
                        let _ = produced_tx.send(());
                    }
                    ended.store(true, Ordering::Release);
                    let _ = cancelled_tx.send(sent);
                    Ok(CallToolResult::text("stopped"))
                },
            )
            .build()
    };
    let (to_server, server_in) = mcp_stdio::memory_pipe();
    let (server_out, from_server) = mcp_stdio::memory_pipe();
    let (entered_tx, entered) = crossbeam_channel::bounded(1);
    let output = SlowClient {
        out: server_out,
        entered: Some(entered_tx),
        produced,
        told: 0,
        taken: 0,
        ended,
    };
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(Transport::new(server_in, output)))
    };
    let mut peer = Peer::over(
        Transport::new(from_server, to_server),
        Some(serving),
        server_meta(&server),
    );
    let mut stream = call(1, "stream", json!({}));
    stream["params"]["_meta"]["progressToken"] = json!("p");
    peer.send(&stream);
    started.recv_timeout(WAIT).expect("the stream started");
    // An inline request: the reader holds its reply back and sends it
    // before its next read, on a quiet output. It is the sender now.
    peer.send(&request(2, "server/discover", json!({})));
    entered
        .recv_timeout(WAIT)
        .expect("the reader sends the discover reply");
    // The stream goes (its lines are left to the reader, which sends).
    go_tx.send(()).unwrap();
    peer.send(&cancel(1));
    let observed = cancelled.recv_timeout(WAIT);
    abandon.store(true, Ordering::Relaxed);
    observed.expect(
        "the cancellation was not read within 10 s: the reader stayed the sender of the stream's progress",
    );
    let (rest, res) = peer.finish();
    res.unwrap();
    assert!(
        rest.iter().any(|line| line["id"] == json!(2)),
        "discover answered"
    );
    assert!(
        rest.iter().all(|line| line["id"] != json!(1)),
        "a cancelled call gets nothing"
    );
}

/// Claim: `StopHandle::stop` stops each connection with
/// `act(Sending::Now, ..)`, which sends what the stop wrote (a
/// subscription's final result) from the caller's thread. A client that
/// does not read then holds the caller of `stop` in a `write(2)`, and the
/// connections after it in the server's list are never stopped.
#[test]
fn stop_returns_and_stops_every_connection_while_one_client_does_not_read() {
    let server = crate::everything::build();
    let (mut stalled, held) = Peer::start_stalling(&server);
    stalled.send(&request(
        1,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    ));
    assert_eq!(
        stalled.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    let other = Peer::start(&server);
    // The first client stops reading.
    let not_reading = held.lock().unwrap();
    let (stopped_tx, stopped) = crossbeam_channel::bounded(1);
    let stop = server.stop_handle();
    std::thread::spawn(move || {
        stop.stop();
        let _ = stopped_tx.send(());
    });
    let returned = stopped.recv_timeout(WAIT).is_ok();
    let other_closed = other.wait_output_closed(WAIT);
    drop(not_reading);
    assert!(
        returned,
        "StopHandle::stop did not return within 10 s: it waits for a client that does not read"
    );
    assert_eq!(
        other_closed,
        Some(vec![]),
        "the other connection was stopped (its output closed, its input still open)"
    );
    let (rest, res) = stalled.finish();
    res.unwrap();
    assert_eq!(rest.len(), 1, "the subscription's final result: {rest:?}");
    let (rest, res) = other.finish();
    assert!(rest.is_empty());
    res.unwrap();
}

/// Claim: `ConnHandle::shut_down` looks for "no send in progress, nothing
/// waiting" under the lock, lets it go, and takes it again to close the
/// output. A legacy session's list change published in between
/// (`Conn::publish_legacy` writes whatever the connection's state) takes
/// the writer out to send it: `close` then finds no writer, `serve`
/// returns, and the send puts the writer back into a closed output, where
/// it stays (the reader, blocked on the open input, keeps the connection):
/// the client never sees the output end.
///
/// A storm: each round stops a server whose legacy session hears a
/// stream of list changes, and requires the output to end.
#[cfg(feature = "legacy")]
#[test]
fn after_stop_the_output_ends_while_list_changes_are_published() {
    // About one round in a hundred hits the window on the code reviewed
    // (2 to 4 of 300, three runs on two busy cores).
    const ROUNDS: usize = 400;
    for round in 0..ROUNDS {
        let server = crate::everything::build();
        let mut peer = Peer::start(&server);
        peer.send(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "storm", "version": "1" }
            }
        }));
        // The handshake in one round trip (the reader takes the lines in
        // order): the ping is a barrier, `initialized` took effect.
        peer.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        peer.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }));
        assert_eq!(peer.recv()["id"], json!(0));
        assert_eq!(peer.recv()["id"], json!(1));
        let done = Arc::new(AtomicBool::new(false));
        let publisher = {
            let (notifier, done) = (server.notifier(), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    notifier.tools_list_changed();
                }
            })
        };
        server.stop_handle().stop();
        let closed = peer.wait_output_closed(Duration::from_secs(2));
        done.store(true, Ordering::Relaxed);
        publisher.join().unwrap();
        assert!(
            closed.is_some(),
            "round {round}: the output stayed open after stop (a list change took the writer out between shut_down's last look and its close)"
        );
    }
}

/// Claim: every `act` waits while more than half the buffer waits behind
/// a send in progress (`Output::backlogged`), also one that wrote nothing.
/// With a reply stuck on a client that stopped reading and a second large
/// reply behind it, the reader cannot begin a request or cancel one: each
/// waits for the client to read. (Issue 44 item 1 counted a client that
/// stops reading blocking "cancellations included" as the defect;
/// `a_reply_larger_than_the_buffer_stuck_on_a_slow_client_holds_up_no_other_request`
/// has one stuck reply and nothing behind it, so it never has a backlog.)
#[test]
fn a_backlog_behind_a_client_that_does_not_read_holds_up_no_request_that_writes_nothing() {
    let (builder, blocker) =
        crate::support::Blocker::install(Server::builder("backlog", "1.0.0").tool(
            Tool::new("pecho", "Pooled echo."),
            |_ctx, args: Value| {
                Ok(CallToolResult::text(
                    args["text"].as_str().unwrap_or("").to_owned(),
                ))
            },
        ));
    let (mut peer, held) = Peer::start_stalling(&builder.build());
    let large = "x".repeat(64 * 1024);
    let not_reading = held.lock().unwrap();
    peer.send(&call(1, "pecho", json!({ "text": large })));
    peer.send(&call(2, "pecho", json!({ "text": large })));
    // One worker sends its reply and waits for the client; the other's
    // reply waits behind it. (Were the second not written yet, the test
    // would show nothing: this pause can hide the defect, never fail a
    // server without it.)
    std::thread::sleep(Duration::from_millis(200));
    peer.send(&call(3, "block", json!({})));
    let started = blocker.started.recv_timeout(WAIT).ok();
    peer.send(&cancel(3));
    let observed = started
        .as_ref()
        .and_then(|_| blocker.observed_cancel.recv_timeout(WAIT).ok());
    drop(not_reading);
    assert_eq!(
        started,
        Some(json!(3)),
        "a pooled request began while the client did not read"
    );
    assert_eq!(
        observed,
        Some(json!(3)),
        "its cancellation took effect while the client did not read"
    );
    let mut ids: Vec<Value> = (0..2).map(|_| peer.recv()["id"].clone()).collect();
    ids.sort_by_key(Value::to_string);
    assert_eq!(ids, [json!(1), json!(2)]);
    peer.finish_quietly();
}

/// Claim: a pooled request's finish no longer waits for the client (a
/// pool thread waiting behind another's send would look blocked, and the
/// pool would start threads for it: issue 44 item 2), so a client that
/// writes calls and reads nothing gets every reply written into memory, as
/// fast as the handlers run. It does not: the reader reads no further once
/// more than a megabyte waits behind the send in progress
/// (`Conn::backed_up`), so what waits is that and the replies of the
/// requests running when it stopped (64 slots). (Before, each finish waited
/// for the client, and the pool's watcher gave every request read a thread
/// of its own: the same 400 replies, held by 400 threads.)
#[test]
fn a_client_that_writes_calls_and_reads_nothing_gets_a_bounded_backlog() {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = {
        let ran = Arc::clone(&ran);
        Server::builder("backlog", "1.0.0")
            .tool(
                Tool::new("big", "Answers 64 KiB."),
                move |_ctx, _: Value| {
                    ran.fetch_add(1, Ordering::AcqRel);
                    Ok(CallToolResult::text("x".repeat(64 * 1024)))
                },
            )
            .build()
    };
    let (mut peer, held) = Peer::start_stalling(&server);
    let not_reading = held.lock().unwrap();
    for id in 0..400 {
        peer.send(&call(id, "big", json!({})));
    }
    std::thread::sleep(Duration::from_millis(500));
    let answered = ran.load(Ordering::Acquire);
    drop(not_reading);
    // 16 replies of 64 KiB make the megabyte; 64 ran on; a few are written
    // while the reader comes to its wait. Before the first send began, at
    // most that many; the send, stuck, took every reply waiting when it
    // began (under load, all of them: the backlog counts what waits, not
    // what a send holds), and as many again may follow before the backlog
    // is full again. (`16 + 64 + 8` failed once under load.)
    assert!(
        answered <= 2 * (16 + 64) + 8,
        "{answered} of 400 calls answered into memory while the client read nothing"
    );
    let mut ids: Vec<u64> = (0..400)
        .map(|_| peer.recv()["id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..400).collect::<Vec<_>>());
    peer.finish_quietly();
}

/// Claim (found wrong, kept: no test had a line past the maximum behind a
/// reply): a reply held by the reader waits while the reader reads a next
/// line longer than the maximum, which it reads to its end before it acts
/// on it. It does not: every read of that line goes through
/// `SendFirst::read`, which sends first.
#[test]
fn a_reply_goes_out_while_the_next_line_grows_past_the_maximum() {
    let server = crate::everything::build_with(|builder| builder.max_line_bytes(64 * 1024));
    let mut peer = Peer::start(&server);
    let mut burst = serde_json::to_vec(&request(1, "server/discover", json!({}))).unwrap();
    burst.push(b'\n');
    burst.extend_from_slice(&[b'x'; 256 * 1024]);
    peer.write_raw(&burst);
    assert_eq!(
        peer.recv()["id"],
        json!(1),
        "answered before the long line ends"
    );
    // The long line ends; what comes next is answered too.
    peer.write_raw(b"\n");
    peer.send(&request(2, "server/discover", json!({})));
    let too_long = peer.recv();
    assert_eq!(
        (&too_long["id"], &too_long["error"]["code"]),
        (&Value::Null, &json!(-32600)),
        "the long line: {too_long}"
    );
    assert_eq!(peer.recv()["id"], json!(2));
    peer.finish_quietly();
}

/// Claim (review-44): a legacy request's ask is written and sent
/// (`Asks::ask`: `act(Sending::Now, ..)`) while its thread holds the
/// connection's asks, the lock the reader takes for every cancellation
/// and every answer from the client (`Asks::cancel`, `Asks::answer`).
/// So a client that stops reading holds the reader as soon as an ask goes
/// out: a cancellation, and every line after it, waits for the client to
/// read, where "a client slow to read holds no lock: a cancellation takes
/// effect" (ARCHITECTURE.md) says it does not.
///
/// The cancellation and a modern pooled call are written together, so the
/// reader holds both without another read (a read would send first, and
/// wait behind the stuck `write(2)` as every send does).
#[cfg(feature = "legacy")]
#[test]
fn a_cancellation_takes_effect_while_an_ask_waits_for_a_client_that_does_not_read() {
    let mut blocker = None;
    let server = crate::everything::build_with(|builder| {
        let (builder, installed) = crate::support::Blocker::install(builder);
        blocker = Some(installed);
        builder
    });
    let blocker = blocker.unwrap();
    let (mut peer, held, entered) = Peer::start_stalling_told(&server);
    peer.send(&json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {} },
            "clientInfo": { "name": "review-44", "version": "1" }
        }
    }));
    assert_eq!(peer.recv()["id"], json!("init"));
    peer.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    while entered.try_recv().is_ok() {}
    // The client stops reading; the legacy call asks it for a name.
    let not_reading = held.lock().unwrap();
    peer.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "ask", "arguments": {} } }));
    entered
        .recv_timeout(WAIT)
        .expect("the ask's write began, and waits for the client");
    let mut lines = serde_json::to_vec(&cancel(1)).unwrap();
    lines.push(b'\n');
    lines.extend(serde_json::to_vec(&call(2, "block", json!({}))).unwrap());
    lines.push(b'\n');
    peer.write_raw(&lines);
    let started = blocker.started.recv_timeout(WAIT).ok();
    drop(not_reading);
    assert_eq!(
        started,
        Some(json!(2)),
        "the call after the cancellation did not begin within 10 s while the client did not read: the reader waits for the asks' lock, held through the ask's write(2)"
    );
    let ask = peer.recv();
    assert_eq!(ask["method"], json!("elicitation/create"), "{ask}");
    let withdrawn = peer.recv();
    assert_eq!(
        (&withdrawn["method"], &withdrawn["params"]["requestId"]),
        (&json!("notifications/cancelled"), &ask["id"]),
        "{withdrawn}"
    );
    blocker.release_one();
    assert_eq!(peer.recv()["id"], json!(2));
    peer.finish_quietly();
}

/// A client that takes nothing until the test lets go (`held`), then
/// fails every write: it went away while writes waited for it.
struct GoneAway {
    held: Arc<std::sync::Mutex<()>>,
    entered: Sender<()>,
}

impl Write for GoneAway {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        let _ = self.entered.send(());
        let _gone = self.held.lock().unwrap();
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
}

/// Claim (review-44, found wrong): a writer waits for its own lines only
/// while they can still go out (`Shared::send_written`); a send that fails
/// counts every line written as taken (`Output::attach`), so the writers
/// waiting behind it return. A pooled handler's progress goes into a
/// `write(2)` that the client never takes and that then fails; a second
/// handler writes its progress behind it (after that send took the first
/// line) just before the failure: both come back, and `serve` ends. The
/// second line is behind the failed send in about half the rounds (it
/// races the failure, which is the test's to let go), so the rounds.
#[test]
fn writers_waiting_behind_a_send_that_fails_return() {
    for round in 0..20 {
        writers_behind_a_failed_send(round);
    }
}

fn writers_behind_a_failed_send(round: usize) {
    let (returned_tx, returned) = crossbeam_channel::unbounded();
    let (ready_tx, ready) = crossbeam_channel::unbounded::<()>();
    let (go, go_rx) = crossbeam_channel::unbounded::<()>();
    let server = Server::builder("gone-away", "1.0.0")
        .tool(
            Tool::new(
                "chatty",
                "Progress (the second call on the test's word), then done.",
            ),
            move |ctx, _: Value| {
                if ctx.id().to_value() == json!(2) {
                    ready_tx.send(()).unwrap();
                    go_rx.recv_timeout(WAIT).unwrap();
                }
                ctx.progress(1.0, None, Some("one"));
                returned_tx.send(ctx.id().to_value()).unwrap();
                Ok(CallToolResult::text("done"))
            },
        )
        .build();
    let (to_server, server_in) = mcp_stdio::memory_pipe();
    // Nothing reaches the client: its end of the output ends at once.
    let (nothing, from_server) = mcp_stdio::memory_pipe();
    drop(nothing);
    let held = Arc::new(std::sync::Mutex::new(()));
    let (entered_tx, entered) = crossbeam_channel::unbounded();
    let output = GoneAway {
        held: Arc::clone(&held),
        entered: entered_tx,
    };
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(Transport::new(server_in, output)))
    };
    let mut peer = Peer::over(
        Transport::new(from_server, to_server),
        Some(serving),
        server_meta(&server),
    );
    let chatty = |id: i64| {
        let mut chatty = call(id, "chatty", json!({}));
        chatty["params"]["_meta"]["progressToken"] = json!(id);
        chatty
    };
    let gone = held.lock().unwrap();
    peer.send(&chatty(1));
    entered
        .recv_timeout(WAIT)
        .expect("the first progress line's write began");
    peer.send(&chatty(2));
    ready.recv_timeout(WAIT).expect("the second call runs");
    go.send(()).unwrap();
    drop(gone);
    let mut back: Vec<Value> = (0..2)
        .filter_map(|_| returned.recv_timeout(WAIT).ok())
        .collect();
    back.sort_by_key(Value::to_string);
    assert_eq!(
        back,
        [json!(1), json!(2)],
        "round {round}: both handlers came back"
    );
    let (rest, res) = peer.finish();
    assert!(rest.is_empty());
    res.expect("a broken pipe ends serving as end of input does");
}

/// Claim (core review 8): a client that subscribes and then never reads
/// holds up no other connection. Here a tool of another connection
/// publishes a list change: its handler wrote the event into the stalled
/// connection's output and waited there for a client that never reads, so
/// the other connection got neither the event nor the tool's reply.
#[test]
fn a_client_that_never_reads_holds_up_no_other_connections_publish() {
    let server = Server::builder("publish", "1.0.0")
        .tool(
            Tool::new("change", "Publishes a tool list change."),
            |ctx, _: Value| {
                ctx.notifier().tools_list_changed();
                Ok(CallToolResult::text("changed"))
            },
        )
        .build();
    let listen = |id: &str| {
        request(
            id,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        )
    };
    let (mut stalled, held) = Peer::start_stalling(&server);
    stalled.send(&listen("x"));
    assert_eq!(
        stalled.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    let mut other = Peer::start(&server);
    other.send(&listen("y"));
    assert_eq!(
        other.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    // The first client stops reading, for good.
    let not_reading = held.lock().unwrap();
    other.send(&call(1, "change", json!({})));
    let got: Vec<Value> = std::iter::from_fn(|| other.try_recv(WAIT))
        .take(2)
        .collect();
    drop(not_reading);
    assert_eq!(
        got.len(),
        2,
        "the other connection got {got:?}, not its event and its reply, within 10 s"
    );
    let (_, res) = stalled.finish();
    res.unwrap();
    let (_, res) = other.finish();
    res.unwrap();
}

/// Claim (review of the publisher's send, b8e4e83): a client that
/// subscribed and stopped reading holds up no other connection's publisher
/// however long it stays away, not only for its first megabyte of events.
/// A server that publishes on its own (a clock, a watched file: one event a
/// second is a megabyte in a few hours) fills the stalled connection's
/// backlog; from then on every publisher waited on that client, the
/// application's own thread and a tool of another connection alike, and
/// that tool's reply never came. Now a client that takes none of its
/// output for the write timeout (10 s, here [`LET_GO`]) while more than a
/// megabyte waits is let go
/// (`Conn::let_go`): its `serve` returns `TimedOut`, saying why, and the
/// publishers go on. (Since events about the same things are held back,
/// the latest each, behind a client that is behind, a publisher waits for
/// it only once more than a megabyte is held: here its 1,000
/// subscriptions each hold a change of the tools list,
/// `Peer::listen_past_the_backlog`.)
#[test]
fn a_client_that_never_reads_holds_up_no_other_connections_publish_after_a_megabyte_of_events() {
    const EVENTS: usize = 40;
    let server = Server::builder("publish", "1.0.0")
        .write_timeout(LET_GO)
        .tool(
            Tool::new("change", "Publishes a tool list change."),
            |ctx, _: Value| {
                ctx.notifier().tools_list_changed();
                Ok(CallToolResult::text("changed"))
            },
        )
        .build();
    let listen = |id: &str| {
        request(
            id,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        )
    };
    let (mut stalled, held) = Peer::start_stalling(&server);
    stalled.listen_past_the_backlog();
    let mut other = Peer::start(&server);
    other.send(&listen("y"));
    assert_eq!(
        other.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    let not_reading = held.lock().unwrap();
    // The application's own publisher: 40 changes, each more than the
    // backlog for the first client, which reads nothing.
    let (ticked, ticks) = crossbeam_channel::unbounded();
    let ticker = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for _ in 0..EVENTS {
                notifier.tools_list_changed();
                let _ = ticked.send(());
            }
        })
    };
    // The other client reads everything it is sent: all of it, once the
    // stalled client is let go (the write timeout after the publisher
    // began to wait).
    let deadline = Instant::now() + 3 * WAIT;
    let mut events = 0;
    while events < EVENTS
        && other
            .try_recv(deadline.saturating_duration_since(Instant::now()))
            .is_some()
    {
        events += 1;
    }
    let published = ticks.try_iter().count();
    other.send(&call(1, "change", json!({})));
    let reply =
        std::iter::from_fn(|| other.try_recv(WAIT)).find(|m| m.get("id") == Some(&json!(1)));
    ticker.join().unwrap();
    assert!(
        reply.is_some(),
        "the other connection got {events} of {EVENTS} events (the application's thread published {published}) and no reply to its call within 40 s"
    );
    assert_eq!(events, EVENTS, "the other connection missed events");
    let (_, res) = other.finish();
    res.unwrap();
    drop(not_reading);
    let (_, res) = stalled.finish();
    let error = res.expect_err("the stalled client was let go").to_string();
    assert!(
        error.contains("took less than 16 KiB of the server's output in 3s"),
        "{error}"
    );
}

/// Claim (review of the publisher's send, b8e4e83): a publisher waiting
/// for a client that stopped reading (more than the backlog behind it)
/// goes on once that connection ends: a stop gives the client the write
/// timeout to take its last output (3 s here, from the last 16 KiB it
/// took), closes the output, and the waiting publisher is woken and finds
/// nothing waiting (`Shared::send_in_background` waits on the
/// connection's condvar, which `ConnHandle::shut_down` signals). The
/// client's 1,000 subscriptions make one change more than a megabyte
/// (`Peer::listen_past_the_backlog`): changes of the same things are
/// otherwise held back, the latest each, and never make a publisher wait.
#[test]
fn a_publisher_waiting_for_a_client_that_never_reads_goes_on_once_a_stop_ends_it() {
    let server = Server::builder("publish", "1.0.0")
        .enable_tools()
        .shutdown_grace(Duration::from_millis(100))
        .write_timeout(Duration::from_secs(3))
        .build();
    let (mut stalled, held) = Peer::start_stalling(&server);
    stalled.listen_past_the_backlog();
    let not_reading = held.lock().unwrap();
    // Each change is more than a megabyte for the 1,000 subscriptions: the
    // first is written, the second held, the third waits (at most about 2
    // MiB are written before the publisher waits: the backlog, and a send
    // that began late under load with a megabyte in it).
    const EVENTS: usize = 10;
    let (ticked, ticks) = crossbeam_channel::unbounded();
    let ticker = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for _ in 0..EVENTS {
                notifier.tools_list_changed();
                let _ = ticked.send(());
            }
        })
    };
    // The publisher waits once the backlog is full.
    let mut published = 0;
    while ticks.recv_timeout(Duration::from_millis(500)).is_ok() {
        published += 1;
    }
    assert!(published < EVENTS, "the publisher never waited");
    server.stop_handle().stop();
    let rest = std::iter::from_fn(|| ticks.recv_timeout(WAIT).ok())
        .take(EVENTS - published)
        .count();
    assert_eq!(
        published + rest,
        EVENTS,
        "the publisher still waits after the stop"
    );
    ticker.join().unwrap();
    drop(not_reading);
    // The stop wrote what was held (`Conn::close_subscriptions`), and the
    // publisher went on at once, before the client was given up (the
    // write timeout after the stop): the client, reading again now, may
    // still get all of it.
    let (_, res) = stalled.finish();
    match res {
        Ok(()) => {}
        Err(mcp_stdio::Error::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => {}
        Err(e) => panic!("serve returned {e}"),
    }
}

/// Claim (review of the publisher's send, b8e4e83): a publisher's send,
/// queued on the pool, is taken although the pool's one thread is blocked
/// in a handler that waits for the client's reaction to the event (a
/// thread starts for it: `Pool::submit_send`), and on a server whose
/// handlers are all inline, which never started a pool thread before.
#[test]
fn a_published_event_reaches_the_client_while_the_pools_only_thread_blocks_or_before_any_started() {
    let listen = request(
        "l",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    // One thread, blocked in a handler until the client saw the event.
    let (builder, blocker) = crate::support::Blocker::install(
        Server::builder("publish", "1.0.0")
            .enable_tools()
            .workers(1),
    );
    let server = builder.build();
    let mut peer = Peer::start(&server);
    peer.send(&listen);
    assert_eq!(
        peer.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    peer.send(&call(1, "block", json!({})));
    blocker.wait_started();
    let notifier = server.notifier();
    std::thread::spawn(move || notifier.tools_list_changed())
        .join()
        .unwrap();
    let event = peer.try_recv(WAIT);
    blocker.release_one();
    assert_eq!(
        event.map(|e| e["method"].clone()),
        Some(json!("notifications/tools/list_changed")),
        "the event waited for the blocked handler"
    );
    assert_eq!(peer.recv()["id"], json!(1));
    // The listen's final result follows.
    let (_, res) = peer.finish();
    res.unwrap();
    // Inline handlers only: no pool thread ever ran.
    let server = Server::builder("inline", "1.0.0")
        .inline_tool(Tool::new("noop", "Does nothing."), |_ctx, _: Value| {
            Ok(CallToolResult::text("ok"))
        })
        .build();
    let mut peer = Peer::start(&server);
    peer.send(&listen);
    assert_eq!(
        peer.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    let notifier = server.notifier();
    std::thread::spawn(move || notifier.tools_list_changed())
        .join()
        .unwrap();
    assert_eq!(
        peer.try_recv(WAIT).map(|e| e["method"].clone()),
        Some(json!("notifications/tools/list_changed")),
        "the event waited for a pool thread that never started"
    );
    // The listen's final result follows.
    let (_, res) = peer.finish();
    res.unwrap();
}

/// Claim (review of the publisher's send, b8e4e83): publishers that never
/// stop, racing the end of input and a stop, neither keep `serve` from
/// returning nor lose the order of what it wrote: the listen's final
/// result is the last line, after every event, and nothing follows it.
#[test]
fn serve_ends_while_publishers_never_stop_and_the_final_result_comes_last() {
    for round in 0..20 {
        let server = Server::builder("publish", "1.0.0").enable_tools().build();
        let mut peer = Peer::start(&server);
        peer.send(&request(
            "l",
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        ));
        assert_eq!(
            peer.recv()["method"],
            json!("notifications/subscriptions/acknowledged")
        );
        let running = Arc::new(AtomicBool::new(true));
        let publishers: Vec<_> = (0..2)
            .map(|_| {
                let (notifier, running) = (server.notifier(), Arc::clone(&running));
                std::thread::spawn(move || {
                    while running.load(Ordering::Relaxed) {
                        notifier.tools_list_changed();
                    }
                })
            })
            .collect();
        // Some events first.
        for _ in 0..50 {
            assert_eq!(
                peer.recv()["method"],
                json!("notifications/tools/list_changed")
            );
        }
        if round % 2 == 1 {
            server.stop_handle().stop();
        }
        let (rest, res) = peer.finish();
        running.store(false, Ordering::Relaxed);
        publishers.into_iter().for_each(|p| p.join().unwrap());
        res.unwrap();
        let last = rest.last().expect("the listen's final result");
        assert_eq!(last["id"], json!("l"), "round {round}: {last}");
        assert!(
            rest[..rest.len() - 1]
                .iter()
                .all(|m| m["method"] == json!("notifications/tools/list_changed")),
            "round {round}: a line other than an event before the final result"
        );
    }
}

/// A client that takes a page of the server's output every
/// [`SlowLoris::EVERY`] once `slow` is set (all of it before): it never
/// stops reading for as long as the write timeout.
struct SlowLoris {
    out: mcp_stdio::MemoryWriter,
    slow: Arc<AtomicBool>,
}

impl SlowLoris {
    const EVERY: Duration = Duration::from_secs(1);
}

impl Write for SlowLoris {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if !self.slow.load(Ordering::SeqCst) {
            return self.out.write(bytes);
        }
        std::thread::sleep(Self::EVERY);
        self.out.write(&bytes[..bytes.len().min(4096)])
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Serves a subscriber whose output `slow_output` makes of the server's
/// (slow once told, by the flag it is given) beside another that reads
/// everything, then tells it to be slow and publishes `events` tool-list
/// changes: returns how many the other connection got within 30 s (it
/// ended cleanly), and the slow subscriber, told to read fast again.
fn events_beside_a_slow_subscriber<W: Write + Send + 'static>(
    server: &Server,
    slow_output: impl FnOnce(mcp_stdio::MemoryWriter, Arc<AtomicBool>) -> W,
    events: usize,
) -> (usize, Peer) {
    let listen = |id: &str| {
        request(
            id,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        )
    };
    let slow = Arc::new(AtomicBool::new(false));
    let (to_server, server_in) = mcp_stdio::memory_pipe();
    let (server_out, from_server) = mcp_stdio::memory_pipe();
    let output = slow_output(server_out, Arc::clone(&slow));
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(Transport::new(server_in, output)))
    };
    let mut slow_peer = Peer::over(
        Transport::new(from_server, to_server),
        Some(serving),
        server_meta(server),
    );
    slow_peer.send(&listen("x"));
    assert_eq!(
        slow_peer.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    let mut other = Peer::start(server);
    other.send(&listen("y"));
    assert_eq!(
        other.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    slow.store(true, Ordering::SeqCst);
    // About 100 bytes an event.
    let ticker = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for _ in 0..events {
                notifier.tools_list_changed();
            }
        })
    };
    let deadline = Instant::now() + 3 * WAIT;
    let mut got = 0;
    while got < events
        && other
            .try_recv(deadline.saturating_duration_since(Instant::now()))
            .is_some()
    {
        got += 1;
    }
    slow.store(false, Ordering::SeqCst);
    ticker.join().unwrap();
    let (_, res) = other.finish();
    res.unwrap();
    (got, slow_peer)
}

/// Claim (review of c66b5f8): a client that subscribed holds up no other
/// connection's events for long, whatever its pace. The let-go caught a
/// client that took not a byte for 10 s; one that took a page every 5 s
/// (800 bytes a second) was never let go, and past its first megabyte
/// every publisher of the server went at its pace: another connection
/// that read everything got 8,348 of 20,000 events in 30 s. Then the
/// let-go's clock moved only once a client took 16 KiB (`Took::add`),
/// and such a client was let go the write timeout after the publisher
/// began to wait on it (`slow_client::a_client_on_a_real_pipe_that_reads_a_page_a_second_is_let_go_while_events_are_published`
/// keeps that). Now no publisher waits on it: behind a client that is
/// behind, the changes of the tools list are held back, the latest
/// (`Conn::publish`). Here a page a second against a write timeout of 3 s.
#[test]
fn a_client_that_reads_a_page_every_few_seconds_holds_up_no_other_connections_events() {
    let server = Server::builder("publish", "1.0.0")
        .write_timeout(LET_GO)
        .tool(
            Tool::new("t", "A tool, so that its list may change."),
            |_ctx, _: Value| Ok(CallToolResult::text("t")),
        )
        .build();
    let (events, loris) =
        events_beside_a_slow_subscriber(&server, |out, slow| SlowLoris { out, slow }, 20_000);
    assert_eq!(
        events, 20_000,
        "the other connection got {events} of 20000 events within 30 s"
    );
    // Let go or not: whether 3 s passed while it read nothing of a send
    // is the machine's doing.
    let _ = loris.finish();
}

/// A server's output that takes everything until `stall` is set, then
/// nothing until the test drops the sender of `gate`.
struct Gated {
    out: mcp_stdio::MemoryWriter,
    stall: Arc<AtomicBool>,
    gate: Receiver<()>,
}

impl Write for Gated {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.stall.load(Ordering::SeqCst) {
            let _ = self.gate.recv();
        }
        self.out.write(bytes)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Claim (review of c66b5f8): a client let go while the reader waits for
/// room behind its output (it wrote calls whose replies fill the backlog,
/// and reads nothing) ends its `serve` all the same, with `TimedOut`: the
/// reader, maybe in a `write(2)` of its own that never returns, holds up
/// neither the shutdown nor the publisher.
#[test]
fn a_client_let_go_while_the_reader_waits_behind_its_output_ends_serve() {
    let server = Server::builder("publish", "1.0.0")
        .write_timeout(LET_GO)
        .tool(
            Tool::new("big", "Replies with 64 KiB."),
            |_ctx, _: Value| Ok(CallToolResult::text("x".repeat(64 * 1024))),
        )
        .build();
    let stall = Arc::new(AtomicBool::new(false));
    let (open, gate) = crossbeam_channel::bounded::<()>(0);
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (server_out, mut from_server) = mcp_stdio::memory_pipe();
    let output = Gated {
        out: server_out,
        stall: Arc::clone(&stall),
        gate,
    };
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(Transport::new(server_in, output)))
    };
    let listen = request(
        "x",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    writeln!(to_server, "{listen}").unwrap();
    let mut ack = String::new();
    std::io::BufRead::read_line(&mut from_server, &mut ack).unwrap();
    assert!(ack.contains("acknowledged"), "{ack}");
    stall.store(true, Ordering::SeqCst);
    // 40 replies of 64 KiB: more than the backlog; the reader waits.
    for id in 0..40 {
        writeln!(to_server, "{}", call(id, "big", json!({}))).unwrap();
    }
    let publishing = Arc::new(AtomicBool::new(true));
    let publisher = {
        let (notifier, publishing) = (server.notifier(), Arc::clone(&publishing));
        std::thread::spawn(move || {
            while publishing.load(Ordering::SeqCst) {
                notifier.tools_list_changed();
            }
        })
    };
    let deadline = Instant::now() + 3 * WAIT;
    while !serving.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let finished = serving.is_finished();
    publishing.store(false, Ordering::SeqCst);
    drop(open);
    publisher.join().unwrap();
    drop(to_server);
    assert!(finished, "serve did not return within 30 s");
    let Err(mcp_stdio::Error::Io(e)) = serving.join().unwrap() else {
        panic!("serve returned Ok");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(!e.to_string().contains('\n'), "one line: {e}");
}

/// Claim (tenth session): a client that stops reading with a reply in a
/// send is let go in the write timeout although nobody else waits on it:
/// no publisher, the input open, one pooled call whose reply the client
/// never takes. `serve` returns `TimedOut` saying why, and a later call on
/// the open input is not answered (serving it ended). Before, nothing
/// looked at the client's clock unless a publisher waited past the
/// backlog, and `serve` waited until the client read or a stop.
#[test]
fn a_client_that_stops_reading_is_let_go_in_the_write_timeout_though_nobody_waits_on_it() {
    let server = Server::builder("let-go", "1.0.0")
        .write_timeout(Duration::from_secs(1))
        .tool(
            Tool::new("big", "Replies with 64 KiB."),
            |_ctx, _: Value| Ok(CallToolResult::text("x".repeat(64 * 1024))),
        )
        .build();
    let stall = Arc::new(AtomicBool::new(true));
    let (open, gate) = crossbeam_channel::bounded::<()>(0);
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let (server_out, _from_server) = mcp_stdio::memory_pipe();
    let output = Gated {
        out: server_out,
        stall: Arc::clone(&stall),
        gate,
    };
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(Transport::new(server_in, output)))
    };
    writeln!(to_server, "{}", call(1, "big", json!({}))).unwrap();
    let began = Instant::now();
    while !serving.is_finished() && began.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = began.elapsed();
    let finished = serving.is_finished();
    drop(open);
    assert!(finished, "serve still waits on the client after {took:?}");
    let Err(mcp_stdio::Error::Io(e)) = serving.join().unwrap() else {
        panic!("serve returned Ok");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(e.to_string().contains("less than 16 KiB"), "{e}");
    assert!(took < Duration::from_secs(5), "serve took {took:?}");
    drop(to_server);
}

/// Claim (review of c66b5f8): clients that stopped reading cost a
/// publisher the let-go's 10 s once, not once each. A publisher reaches
/// the connections in turn, and each one's 10 s begins only when the
/// publisher comes to wait on it: three clients that stopped reading
/// together hold every publisher of the server for 30 s, and a client
/// that opens connections that subscribe and read nothing holds them for
/// 10 s a connection. (Here the write timeout is [`LET_GO`]; each client
/// has 1,000 subscriptions, `Peer::listen_past_the_backlog`, so that
/// changes of the tools list held back for it make a publisher wait.)
#[test]
fn clients_that_stopped_reading_together_hold_a_publisher_the_let_go_once() {
    const EVENTS: usize = 20;
    let server = Server::builder("publish", "1.0.0")
        .write_timeout(LET_GO)
        .tool(
            Tool::new("change", "Publishes a tool list change."),
            |ctx, _: Value| {
                ctx.notifier().tools_list_changed();
                Ok(CallToolResult::text("changed"))
            },
        )
        .build();
    let listen = |id: &str| {
        request(
            id,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        )
    };
    let mut stalled = Vec::new();
    for _ in 0..3 {
        let (mut peer, held) = Peer::start_stalling(&server);
        peer.listen_past_the_backlog();
        stalled.push((peer, held));
    }
    let mut other = Peer::start(&server);
    other.send(&listen("y"));
    assert_eq!(
        other.recv()["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    let not_reading: Vec<_> = stalled
        .iter()
        .map(|(_, held)| held.lock().unwrap())
        .collect();
    let ticker = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for _ in 0..EVENTS {
                notifier.tools_list_changed();
            }
        })
    };
    // All of them let go the write timeout after the publisher began to
    // wait (and a few seconds' slack, less than two more timeouts): the
    // other client has every event.
    let deadline = Instant::now() + 2 * LET_GO + Duration::from_secs(1);
    let mut events = 0;
    while events < EVENTS
        && other
            .try_recv(deadline.saturating_duration_since(Instant::now()))
            .is_some()
    {
        events += 1;
    }
    ticker.join().unwrap();
    drop(not_reading);
    assert_eq!(
        events, EVENTS,
        "the other connection got {events} of {EVENTS} events within 7 s"
    );
    let (_, res) = other.finish();
    res.unwrap();
    for (peer, _) in stalled {
        let _ = peer.finish();
    }
}

/// A client that takes one piece of the server's output (16 KiB, the most
/// a send hands it at once) every `every` once `slow` is set, and all of
/// it before: the least the let-go's clock asks when `every` is just under
/// the write timeout.
struct JustInTime {
    out: mcp_stdio::MemoryWriter,
    slow: Arc<AtomicBool>,
    every: Duration,
}

impl Write for JustInTime {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.slow.load(Ordering::SeqCst) {
            // Its pause, cut short once the test lets it read again.
            let until = Instant::now() + self.every;
            while self.slow.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.out.write(&bytes[..bytes.len().min(16 * 1024)])
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Claim (review s9 of 0f941d1, "a client that reads a page every few
/// seconds is let go instead of holding every publisher of the server at
/// its pace"): a client that subscribed holds up no other connection's
/// events for long, whatever its pace. The let-go's clock moves once the
/// client took 16 KiB: a client that takes 16 KiB just before each write
/// timeout (here the default, 10 s: 16 KiB every 9 s, 1.8 KiB a second)
/// is never let go, and past its first megabyte every publisher of the
/// server goes at its pace, as one that took a page every 5 s did before.
/// Another connection that reads everything gets its events at 1.8 KiB a
/// second too, for as long as the slow client likes: 16,397 of 40,000
/// events in 30 s on main (b242734), and on 88454ed. Fixed (fifteenth
/// session): behind a client that is behind, each subscription keeps the
/// latest event about each thing (`Conn::publish`), and a publisher waits
/// only once more than a megabyte is held; all 40,000 in 2 s.
#[test]
fn a_client_that_takes_16_kib_just_before_each_write_timeout_holds_up_no_other_connections_events()
{
    const EVENTS: usize = 40_000;
    let server = Server::builder("publish", "1.0.0")
        .tool(
            Tool::new("t", "A tool, so that its list may change."),
            |_ctx, _: Value| Ok(CallToolResult::text("t")),
        )
        .build();
    let slow_output = |out, slow| JustInTime {
        out,
        slow,
        every: Duration::from_secs(9),
    };
    let (events, slowpoke) = events_beside_a_slow_subscriber(&server, slow_output, EVENTS);
    assert_eq!(
        events, EVENTS,
        "the other connection got {events} of {EVENTS} events within 30 s"
    );
    let _ = slowpoke.finish();
}

/// Claim (review s9): the write timeout has no upper bound to overflow
/// (`Shared::send_in_background` waits `write_timeout - idle`, the
/// shutdown `write_timeout - idle` too, and a condvar's wait of
/// `Duration::MAX` is a wait without end): a publisher waiting on a client
/// that never reads, under `Duration::MAX`, waits without panicking, a stop
/// does not give the client up (the shutdown's patience is the write
/// timeout since the tenth session: `Duration::MAX` asks the server never
/// to give a client up), and all goes on once the client reads again.
#[test]
fn a_write_timeout_of_duration_max_holds_a_publisher_until_the_client_reads_and_panics_nowhere() {
    // Each change more than a megabyte for the client's 1,000
    // subscriptions (`Peer::listen_past_the_backlog`): the first is
    // written, the second held, the third waits.
    const EVENTS: usize = 10;
    let server = Server::builder("publish", "1.0.0")
        .enable_tools()
        .write_timeout(Duration::MAX)
        .shutdown_grace(Duration::from_millis(100))
        .build();
    let (mut stalled, held) = Peer::start_stalling(&server);
    stalled.listen_past_the_backlog();
    let not_reading = held.lock().unwrap();
    let (ticked, ticks) = crossbeam_channel::unbounded();
    let ticker = {
        let notifier = server.notifier();
        std::thread::spawn(move || {
            for _ in 0..EVENTS {
                notifier.tools_list_changed();
                let _ = ticked.send(());
            }
        })
    };
    let mut published = 0;
    while ticks.recv_timeout(Duration::from_millis(500)).is_ok() {
        published += 1;
    }
    assert!(published < EVENTS, "the publisher never waited");
    server.stop_handle().stop();
    // The stop wrote what was held, and the publisher goes on: nothing
    // more is published to a connection that stopped. Past the grace
    // period and more, the client is still not given up.
    std::thread::sleep(Duration::from_secs(1));
    drop(not_reading);
    let rest = std::iter::from_fn(|| ticks.recv_timeout(WAIT).ok())
        .take(EVENTS - published)
        .count();
    assert_eq!(published + rest, EVENTS, "the publisher still waits");
    ticker.join().expect("the publisher panicked");
    let (_, res) = stalled.finish();
    res.expect("serve gave the client up");
}
