//! "Batch sends" under a hostile review (issue 44 item 7): a pooled
//! request's finish on a byte stream, while other jobs wait on the pool,
//! leaves its reply to a send job queued behind them
//! (`Shared::send_unless_sending`, `Conn::send_queued`). Each test is a
//! claim about when that reply leaves, over a real Unix domain socket.

use std::io::BufReader;
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde_json::{Value, json};

use crate::support::{Peer, WAIT, call, request, server_meta};

/// How many blocking calls a test pipelines: fewer than `max_running`
/// (64), so each goes to the pool at once.
const HOLDS: usize = 150;

/// A socket path under the temp dir, removed again on drop.
struct SocketPath(PathBuf);

impl SocketPath {
    fn new(test: &str) -> SocketPath {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("mcp-stdio-{}-bs-{test}-{n}.sock", std::process::id());
        let path = std::env::temp_dir().join(name);
        let _ = std::fs::remove_file(&path);
        SocketPath(path)
    }
}

impl Drop for SocketPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

type Serving = JoinHandle<Result<(), mcp_stdio::Error>>;

/// Accepts connections on `path` for ever (the thread ends with the test
/// binary), serving each on its own thread.
fn listen(path: &SocketPath, server: &Server) -> crossbeam_channel::Receiver<Serving> {
    let listener = UnixListener::bind(&path.0).expect("bind");
    let (tx, handles) = crossbeam_channel::unbounded();
    let server = server.clone();
    std::thread::spawn(move || {
        while let Ok((stream, _)) = listener.accept() {
            let reader = stream.try_clone().expect("try_clone");
            let server = server.clone();
            let serving = std::thread::spawn(move || {
                server.serve(Transport::new(BufReader::new(reader), stream))
            });
            if tx.send(serving).is_err() {
                return;
            }
        }
    });
    handles
}

/// A client over a new connection, and a handle for `shutdown`.
fn connect(
    path: &SocketPath,
    handles: &crossbeam_channel::Receiver<Serving>,
    server: &Server,
) -> (Peer, UnixStream) {
    let stream = UnixStream::connect(&path.0).expect("connect");
    let control = stream.try_clone().expect("try_clone");
    let reader = stream.try_clone().expect("try_clone");
    let serving = handles.recv_timeout(WAIT).expect("accepted");
    let transport = Transport::new(BufReader::new(reader), stream);
    (
        Peer::over(transport, Some(serving), server_meta(server)),
        control,
    )
}

/// Ends a connection: end of input, every line left, and `serve`'s result.
fn finish(peer: Peer, control: UnixStream) -> Vec<Value> {
    control.shutdown(Shutdown::Write).expect("shutdown(Write)");
    let (rest, res) = peer.finish();
    res.expect("serve returned Ok");
    rest
}

/// The pipelined lines of `messages`, in one `write(2)`.
fn pipeline(peer: &mut Peer, messages: &[Value]) {
    let mut bytes = Vec::new();
    for message in messages {
        bytes.extend(serde_json::to_vec(message).unwrap());
        bytes.push(b'\n');
    }
    peer.write_raw(&bytes);
}

/// What the tools of [`holding_server`] tell the test.
struct Holds {
    /// Blocking calls whose handler started.
    started: Arc<AtomicUsize>,
    /// Closed to let every blocking call return.
    release: Mutex<Option<crossbeam_channel::Sender<()>>>,
    /// When the quick call's handler returned, and how many blocking
    /// calls had started then.
    quick_done: Arc<Mutex<Option<(Instant, usize)>>>,
    /// Told the quick call may return.
    go: crossbeam_channel::Sender<()>,
    /// Told once the quick call's handler started.
    quick_starts: crossbeam_channel::Receiver<()>,
}

/// A server with two pooled tools: `hold` blocks until the test releases
/// it (the client's reaction to a reply, here), `quick` returns once the
/// test says go.
fn holding_server() -> (Server, Holds) {
    let started = Arc::new(AtomicUsize::new(0));
    let (release, released) = crossbeam_channel::unbounded::<()>();
    let quick_done = Arc::new(Mutex::new(None));
    let (go, went) = crossbeam_channel::unbounded::<()>();
    let (quick_started, quick_starts) = crossbeam_channel::unbounded::<()>();
    let server = {
        let started = Arc::clone(&started);
        let quick_done = Arc::clone(&quick_done);
        let started_q = Arc::clone(&started);
        Server::builder("batch-sends", "1.0.0")
            .max_running(256)
            .tool(
                Tool::new("hold", "Blocks until released."),
                move |_ctx, _: Value| {
                    started.fetch_add(1, Ordering::SeqCst);
                    // Disconnected once the test releases; a timeout is a
                    // test that failed, which must not hang.
                    let _ = released.recv_timeout(WAIT);
                    Ok(CallToolResult::text("held"))
                },
            )
            .tool(
                Tool::new("quick", "Returns once told."),
                move |_ctx, _: Value| {
                    let _ = quick_started.send(());
                    went.recv_timeout(WAIT).expect("told to go");
                    let at_return = started_q.load(Ordering::SeqCst);
                    *quick_done.lock().unwrap() = Some((Instant::now(), at_return));
                    Ok(CallToolResult::text("quick"))
                },
            )
            .build()
    };
    let holds = Holds {
        started,
        release: Mutex::new(Some(release)),
        quick_done,
        go,
        quick_starts,
    };
    (server, holds)
}

impl Holds {
    fn release(&self) {
        self.release.lock().unwrap().take();
    }

    /// What the run saw, the quick call's reply just read; then releases
    /// the blocking calls.
    fn seen(&self) -> Seen {
        let at = Instant::now();
        let at_reply = self.started.load(Ordering::SeqCst);
        let (returned, at_return) = self.quick_done.lock().unwrap().expect("quick returned");
        self.release();
        Seen {
            at_return,
            at_reply,
            after: at - returned,
        }
    }
}

/// Reads until the reply to `id`; returns it and how many lines came
/// before it.
fn reply_to(peer: &Peer, id: u64) -> (Value, usize) {
    let mut before = 0;
    loop {
        let line = peer.recv();
        if line["id"] == json!(id) {
            return (line, before);
        }
        before += 1;
    }
}

/// Claim: a quick pooled call's reply leaves when its handler returns,
/// not after every blocking call pipelined behind it got a thread. The
/// blocking calls wait for the client's reaction to that very reply (the
/// test releases them once it has it), so a reply that never left would
/// hang them all. On `batch-sends` the finish found those calls waiting
/// on the pool and queued its send behind them: the reply left only once
/// each of them had started a thread.
#[test]
fn a_quick_reply_does_not_wait_for_the_blocking_calls_pipelined_behind_it() {
    with_room(|| {
        let (server, holds) = holding_server();
        let path = SocketPath::new("behind");
        let handles = listen(&path, &server);
        let (mut peer, control) = connect(&path, &handles, &server);
        let mut burst = vec![call(1, "quick", json!({}))];
        burst.extend((0..HOLDS as u64).map(|i| call(100 + i, "hold", json!({}))));
        burst.push(request(2, "server/discover", json!({})));
        pipeline(&mut peer, &burst);
        // The reader answers the inline discover once it dispatched every
        // line before it: the blocking calls are all on the pool, most of
        // them waiting for a thread. Then the quick call returns.
        reply_to(&peer, 2);
        holds.go.send(()).unwrap();
        let (reply, _) = reply_to(&peer, 1);
        let seen = holds.seen();
        assert_eq!(reply["result"]["content"][0]["text"], json!("quick"));
        let mut rest = finish(peer, control);
        rest.retain(|line| line.get("id").is_some());
        assert_eq!(rest.len(), HOLDS, "one reply for each hold: {rest:?}");
        seen
    });
}

/// Claim: a quick pooled call's reply on one connection does not wait for
/// the blocking calls another connection pipelined meanwhile (the pool is
/// the server's, shared by every connection).
#[test]
fn a_quick_reply_does_not_wait_for_another_connections_blocking_calls() {
    with_room(|| {
        let (server, holds) = holding_server();
        let path = SocketPath::new("other");
        let handles = listen(&path, &server);
        let (mut quick, quick_control) = connect(&path, &handles, &server);
        let (mut busy, busy_control) = connect(&path, &handles, &server);
        quick.send(&call(1, "quick", json!({})));
        let mut burst: Vec<Value> = (0..HOLDS as u64)
            .map(|i| call(100 + i, "hold", json!({})))
            .collect();
        burst.push(request(2, "server/discover", json!({})));
        // The quick call is running (its handler waits for go); then the
        // burst.
        holds
            .quick_starts
            .recv_timeout(WAIT)
            .expect("quick started");
        pipeline(&mut busy, &burst);
        // Every blocking call is on the pool once the inline discover after
        // them is answered.
        reply_to(&busy, 2);
        holds.go.send(()).unwrap();
        let (reply, _) = reply_to(&quick, 1);
        let seen = holds.seen();
        assert_eq!(reply["result"]["content"][0]["text"], json!("quick"));
        let rest = finish(quick, quick_control);
        assert!(
            rest.is_empty(),
            "nothing more on the quick connection: {rest:?}"
        );
        let mut rest = finish(busy, busy_control);
        rest.retain(|line| line.get("id").is_some());
        assert_eq!(rest.len(), HOLDS, "one reply for each hold");
        seen
    });
}

/// What a run of a quick call among blocking ones saw, the moment its
/// reply arrived: how many blocking calls had a thread when the quick
/// handler returned and when its reply came, and how long after the
/// return that was.
struct Seen {
    at_return: usize,
    at_reply: usize,
    after: std::time::Duration,
}

/// Fewer blocking calls than this without a thread when the quick handler
/// returns, and the run shows nothing: they may all start (tens of
/// microseconds each) between the reply's send and the test's look, on
/// the fixed code too (145 of 150 once under load, 310 µs).
const ROOM: usize = 40;

/// Runs `scenario` until one run shows the quick reply leaving before
/// every blocking call had a thread, with at least [`ROOM`] of them still
/// waiting when the quick handler returned (ten tries). On `batch-sends`
/// no run could: the reply waited for each of them to start a thread
/// (9 ms). A run of the fixed code can look like it once in a while under
/// load, when the test's thread is kept off the CPU between the reply and
/// its look long enough for every call to start (CI, with a lane
/// compiling beside four tests: 9.5 ms, 58 started at the return): so one
/// run that shows it is the proof, not every run. Five tries were not
/// enough once (CI run 50, the modern lane beside the check lane: four
/// runs with no room, all 150 started at the return, and one whose reply
/// came 20 ms late): ten.
fn with_room(scenario: impl Fn() -> Seen) {
    let mut runs = Vec::new();
    for _ in 0..10 {
        let Seen {
            at_return,
            at_reply,
            after,
        } = scenario();
        let run = format!(
            "quick reply {after:?} after its handler returned; holds started: {at_return} when \
             it returned, {at_reply} of {HOLDS} when the reply came"
        );
        eprintln!("{run}");
        if HOLDS - at_return >= ROOM && at_reply < HOLDS {
            return;
        }
        runs.push(run);
    }
    panic!(
        "in ten runs the quick reply never left before all {HOLDS} blocking calls had a thread \
         with {ROOM} of them waiting when it returned: {runs:#?}"
    );
}

/// A server whose pooled `noisy` call sends a progress notification and
/// then its reply.
fn noisy_server() -> Server {
    Server::builder("batch-sends-order", "1.0.0")
        // End of input waits for every call (under load, 2 s was not
        // always enough, and the calls left got -32603 and no progress).
        .shutdown_grace(WAIT)
        .tool(
            Tool::new("noisy", "Progress, then the reply."),
            |ctx, _: Value| {
                ctx.progress(1.0, None, Some("before the reply"));
                Ok(CallToolResult::text("noisy"))
            },
        )
        .build()
}

/// Claim: what a pooled handler writes before its reply reaches the
/// client before it, and every request of a pipelined burst gets exactly
/// one reply, although the finishes of the burst leave their replies to
/// a queued send; and a burst whose input ends at once is answered in
/// full before the connection closes (the shutdown sends what a queued
/// send had not yet taken).
#[test]
fn a_pipelined_burst_keeps_its_order_and_every_reply_through_end_of_input() {
    let server = noisy_server();
    let path = SocketPath::new("order");
    let handles = listen(&path, &server);
    for round in 0..20 {
        let (mut peer, control) = connect(&path, &handles, &server);
        let burst: Vec<Value> = (0..64u64)
            .map(|i| {
                let mut line = call(i, "noisy", json!({}));
                line["params"]["_meta"]["progressToken"] = json!(i);
                line
            })
            .collect();
        pipeline(&mut peer, &burst);
        // End of input at once: the shutdown races the queued sends.
        let lines = finish(peer, control);
        let mut progress_at = vec![None; 64];
        let mut replies = vec![0; 64];
        for (at, line) in lines.iter().enumerate() {
            if line["method"] == json!("notifications/progress") {
                let i = line["params"]["progressToken"].as_u64().unwrap() as usize;
                progress_at[i] = Some(at);
            } else {
                let i = line["id"].as_u64().expect("a reply") as usize;
                replies[i] += 1;
                assert_eq!(
                    line["result"]["content"][0]["text"],
                    json!("noisy"),
                    "round {round}: {line}"
                );
                assert!(
                    progress_at[i].is_some(),
                    "round {round}: the reply to {i} came before its progress"
                );
            }
        }
        assert_eq!(replies, vec![1; 64], "round {round}: one reply each");
    }
}

/// Claim (core review 8): nothing of a pipelined burst waits for the next
/// line. Each round writes pooled and inline calls mixed with lines that
/// get no reply (a cancellation of no request, a blank line, a line of
/// spaces, a bare `\r`), then nothing more, its input left open; every
/// call's reply arrives all the same. With one worker and with the
/// default pool, on one connection and on two at once.
#[test]
fn every_reply_of_a_burst_followed_by_silence_arrives() {
    for workers in [1, 8] {
        let server = Server::builder("burst-silence", "1.0.0")
            .workers(workers)
            .tool(Tool::new("pooled", "Pooled."), |_ctx, _: Value| {
                Ok(CallToolResult::text("pooled"))
            })
            .inline_tool(Tool::new("inline", "Inline."), |_ctx, _: Value| {
                Ok(CallToolResult::text("inline"))
            })
            .build();
        let peers: Vec<Peer> = (0..2).map(|_| Peer::start(&server)).collect();
        let rounds: Vec<_> = peers
            .into_iter()
            .map(|mut peer| {
                std::thread::spawn(move || {
                    for round in 0..200u64 {
                        let mut burst = Vec::new();
                        let size = 1 + round % 7;
                        for i in 0..size {
                            let tool = if (round + i) % 3 == 0 { "inline" } else { "pooled" };
                            let id = round * 100 + i;
                            burst.extend(serde_json::to_vec(&call(id, tool, json!({}))).unwrap());
                            burst.extend(match (round + i) % 4 {
                                0 => &b"\n"[..],
                                1 => b"\r\n\n",
                                2 => b"\n   \n",
                                _ => b"\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"none\"}}\n",
                            });
                        }
                        peer.write_raw(&burst);
                        let mut seen = Vec::new();
                        for _ in 0..size {
                            let reply = peer.try_recv(WAIT).unwrap_or_else(|| {
                                panic!("round {round}: only {seen:?} of {size} replies arrived, the input open and silent")
                            });
                            seen.push(reply["id"].as_u64().unwrap());
                        }
                        seen.sort_unstable();
                        let want: Vec<u64> = (0..size).map(|i| round * 100 + i).collect();
                        assert_eq!(seen, want, "round {round}");
                    }
                    peer.finish_quietly();
                })
            })
            .collect();
        for round in rounds {
            round.join().unwrap();
        }
    }
}
