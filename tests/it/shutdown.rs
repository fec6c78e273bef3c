//! End of input, stop, the grace period, and panics
//! (spec 2026-07-28 basic/transports/stdio, "Shutdown").

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stdio::Server;
use serde_json::json;

use crate::support::{Blocker, Peer, call, error, request, text_result};

#[test]
fn an_idle_server_returns_at_end_of_input() {
    let peer = Peer::start(&crate::everything::build());
    peer.finish_quietly();
}

#[test]
fn in_flight_work_finishes_after_end_of_input() {
    let (builder, blocker) = Blocker::install(Server::builder("drain", "1.0.0"));
    let mut peer = Peer::start(&builder.build());
    peer.send(&call(1, "block", json!({})));
    blocker.wait_started();
    peer.close_input();
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, 1, "released"));
    peer.finish_quietly();
}

#[test]
fn past_the_grace_period_work_is_cancelled_and_answered() {
    let (builder, blocker) = Blocker::install(
        Server::builder("grace", "1.0.0").shutdown_grace(Duration::from_millis(50)),
    );
    let mut peer = Peer::start(&builder.build());
    peer.send(&call("late", "block", json!({})));
    blocker.wait_started();
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(
        rest,
        [error(
            "late",
            -32603,
            "internal error: the server shut down before the request finished"
        )]
    );
    // The handler's token was tripped, so it stopped.
    assert_eq!(blocker.wait_cancel_observed(), json!("late"));
}

#[test]
fn stop_ends_serve_while_the_input_is_still_open() {
    let server = crate::everything::build();
    let stop = server.stop_handle();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&request(1, "server/discover", json!({})))["id"],
        json!(1)
    );
    stop.stop();
    // `finish` closes the input only after serve has returned: it waits for
    // the output to close, which serve does on its own.
    let (rest, res) = peer.finish();
    assert!(rest.is_empty());
    res.unwrap();
    // Stopping is final: serving again returns at once.
    Peer::start(&server).finish_quietly();
}

#[test]
fn after_stop_new_requests_are_refused_and_running_ones_finish() {
    let (builder, blocker) = Blocker::install(Server::builder("stop", "1.0.0"));
    let server = builder.build();
    let mut peer = Peer::start(&server);
    peer.send(&call(1, "block", json!({})));
    blocker.wait_started();
    server.stop_handle().stop();
    peer.send(&request(2, "server/discover", json!({})));
    assert_eq!(
        peer.recv(),
        error(2, -32603, "internal error: the server is shutting down")
    );
    blocker.release_one();
    assert_eq!(peer.recv(), text_result(&peer, 1, "released"));
    peer.finish_quietly();
}

// req: panics:recover
#[test]
fn a_panicking_handler_gets_an_internal_error_and_the_server_keeps_serving() {
    let mut peer = Peer::start(&crate::everything::build());
    assert_eq!(
        peer.ask(&call(1, "panic", json!({}))),
        error(
            1,
            -32603,
            "internal error: handler panicked: the panic fixture panicked"
        )
    );
    assert_eq!(
        peer.ask(&call(2, "echo", json!({ "text": "still here" }))),
        text_result(&peer, 2, "still here")
    );
    // Inline handlers are caught too.
    let server = Server::builder("inline-panic", "1.0.0")
        .inline_tool(
            mcp_stdio::types::Tool::new("boom", "Panics inline."),
            |_ctx,
             _: serde_json::Value|
             -> Result<mcp_stdio::types::CallToolResult, mcp_stdio::ErrorObject> {
                panic!("inline boom")
            },
        )
        .build();
    let mut inline = Peer::start(&server);
    assert_eq!(
        inline.ask(&call(1, "boom", json!({}))),
        error(1, -32603, "internal error: handler panicked: inline boom")
    );
    assert_eq!(
        inline.ask(&request(2, "server/discover", json!({})))["id"],
        json!(2)
    );
    inline.finish_quietly();
    peer.finish_quietly();
}

/// A client that closes its end of the output ends serving as end of input
/// does (`Ok`: a `main` returning `serve`'s result exits 0, not with a
/// broken pipe); an output that fails otherwise is an error.
#[test]
fn serve_returns_ok_when_the_client_closes_the_output_and_an_error_when_it_fails() {
    let (ours, theirs) = mcp_stdio::Transport::memory();
    let server = crate::everything::build();
    let serving = std::thread::spawn(move || server.serve(theirs));
    let (reader, mut writer) = ours.into_parts();
    drop(reader);
    let line = serde_json::to_string(&request(1, "server/discover", json!({}))).unwrap();
    std::io::Write::write_all(&mut writer, format!("{line}\n").as_bytes()).unwrap();
    let res = serving.join().unwrap();
    assert!(res.is_ok(), "{res:?}");

    /// An output whose every write fails (a full disk, say).
    struct Failing;
    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other(
                "no space left (on purpose, in a test)",
            ))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let server = crate::everything::build();
    let serving =
        std::thread::spawn(move || server.serve(mcp_stdio::Transport::new(server_in, Failing)));
    std::io::Write::write_all(&mut to_server, format!("{line}\n").as_bytes()).unwrap();
    let res = serving.join().unwrap();
    assert!(
        matches!(&res, Err(mcp_stdio::Error::Io(e)) if e.to_string().contains("no space")),
        "{res:?}"
    );
}

#[test]
fn a_writer_that_panics_fails_the_output_and_serve_returns() {
    /// An output whose every write panics (an application's own writer).
    struct Panicking;
    impl std::io::Write for Panicking {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            panic!("this writer panics (on purpose, in a test)");
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let (mut to_server, server_in) = mcp_stdio::memory_pipe();
    let server = crate::everything::build();
    let serving =
        std::thread::spawn(move || server.serve(mcp_stdio::Transport::new(server_in, Panicking)));
    for id in 1..=3 {
        let line = serde_json::to_string(&request(id, "server/discover", json!({}))).unwrap();
        std::io::Write::write_all(&mut to_server, format!("{line}\n").as_bytes()).unwrap();
    }
    // The input stays open: serving ends because the output failed.
    let res = serving.join().unwrap();
    let Err(mcp_stdio::Error::Io(e)) = res else {
        panic!("{res:?}");
    };
    assert_eq!(e.to_string(), "the output's writer panicked");
    drop(to_server);
}

#[test]
fn after_stop_a_reader_blocked_on_a_full_queue_lets_go_of_the_input() {
    use std::io::Write;
    let (builder, blocker) = Blocker::install(
        Server::builder("full", "1.0.0")
            .workers(1)
            .max_running(1)
            .queue_limit(1)
            .shutdown_grace(std::time::Duration::from_millis(50)),
    );
    let server = builder.build();
    let (ours, theirs) = mcp_stdio::Transport::memory();
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(theirs))
    };
    let (reader, mut input) = ours.into_parts();
    let mut line = serde_json::to_vec(&call(1, "block", json!({}))).unwrap();
    line.push(b'\n');
    input.write_all(&line).unwrap();
    blocker.wait_started();
    // Request 2 waits for the one worker and holds the only credit; the
    // reader, with request 3 in hand, may be waiting for a credit when the
    // stop comes (or may not have read them yet: either way it must let go).
    for id in 2..4 {
        let mut line = serde_json::to_vec(&call(id, "block", json!({}))).unwrap();
        line.push(b'\n');
        input.write_all(&line).unwrap();
    }
    server.stop_handle().stop();
    // Past the grace period the owner gives up on what is left and returns.
    serving.join().unwrap().unwrap();
    drop(reader);
    // The reader thread notices the owner is gone and drops the input:
    // writing to it then fails. Bounded: a stuck reader fails the test.
    let deadline = std::time::Instant::now() + crate::support::WAIT;
    loop {
        if input.write_all(b"{}\n").is_err() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the reader still holds the input"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// An output that takes nothing until the test ends: a client that keeps
/// the server's output open and never reads it.
struct NeverRead {
    entered: crossbeam_channel::Sender<()>,
    never: Arc<Mutex<()>>,
}

impl std::io::Write for NeverRead {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        let _ = self.entered.send(());
        let _never = self.never.lock().unwrap();
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `serve` returned, once it did.
type Served = crossbeam_channel::Receiver<Result<(), mcp_stdio::Error>>;

/// Serves `server` to a client that never reads: a [`NeverRead`] output
/// held by `never`, which the caller locks. Returns the server's input,
/// what `serve` returns, and a channel told as each write of the server's
/// begins.
fn serve_to_a_client_that_never_reads(
    server: &Server,
    never: &Arc<Mutex<()>>,
) -> (
    mcp_stdio::MemoryWriter,
    Served,
    crossbeam_channel::Receiver<()>,
) {
    let (entered, in_write) = crossbeam_channel::unbounded();
    let output = NeverRead {
        entered,
        never: Arc::clone(never),
    };
    let (to_server, server_in) = mcp_stdio::memory_pipe();
    let (served_tx, served) = crossbeam_channel::bounded(1);
    let server = server.clone();
    std::thread::spawn(move || {
        let _ = served_tx.send(server.serve(mcp_stdio::Transport::new(server_in, output)));
    });
    (to_server, served, in_write)
}

/// Serves a server with a 100 ms grace period and a write timeout of 1 s
/// to a client that never reads,
/// sends it a call and waits until the call's reply is in a `write(2)` that
/// will not end; then ends serving with `end` and says how long `serve`
/// took to return after it, and what it returned.
fn end_while_the_client_never_reads(
    end: impl FnOnce(&Server, Box<dyn std::io::Write + Send>),
) -> (Duration, Result<(), mcp_stdio::Error>) {
    end_while_the_client_never_reads_a_reply(false, end)
}

/// [`end_while_the_client_never_reads`], the call's tool an inline one
/// (its reply in a `write(2)` of the reader) if `inline`.
fn end_while_the_client_never_reads_a_reply(
    inline: bool,
    end: impl FnOnce(&Server, Box<dyn std::io::Write + Send>),
) -> (Duration, Result<(), mcp_stdio::Error>) {
    let tool = mcp_stdio::types::Tool::new("hello", "Says hello.");
    let hello = |_ctx: &mcp_stdio::RequestContext, _: serde_json::Value| {
        Ok(mcp_stdio::types::CallToolResult::text("hello"))
    };
    let builder = Server::builder("stuck", "1.0.0")
        .shutdown_grace(Duration::from_millis(100))
        .write_timeout(Duration::from_secs(1));
    let server = if inline {
        builder.inline_tool(tool, hello)
    } else {
        builder.tool(tool, hello)
    }
    .build();
    let never = Arc::new(Mutex::new(()));
    let held = never.lock().unwrap();
    let (mut to_server, served, in_write) = serve_to_a_client_that_never_reads(&server, &never);
    let line = serde_json::to_string(&call(1, "hello", json!({}))).unwrap();
    std::io::Write::write_all(&mut to_server, format!("{line}\n").as_bytes()).unwrap();
    in_write
        .recv_timeout(crate::support::WAIT)
        .expect("the reply's write began");
    let ended = std::time::Instant::now();
    end(&server, Box::new(to_server));
    let served = served.recv_timeout(crate::support::WAIT);
    let took = ended.elapsed();
    // The write blocked in the server ends (with a broken pipe) once the
    // test is over.
    drop(held);
    let served =
        served.unwrap_or_else(|_| panic!("serve still waits for the client after {took:?}"));
    (took, served)
}

/// Claim (a leftover of issue 44's sixth session): a stop while the client
/// keeps the output open and takes nothing ends `serve` all the same, once
/// the grace period is over and the output has had the write timeout to
/// take what is left; `serve` says the client took nothing.
#[test]
fn a_stop_ends_serve_while_the_client_never_reads() {
    let (took, served) = end_while_the_client_never_reads(|server, input| {
        server.stop_handle().stop();
        // The input stays open until serve has returned.
        std::mem::forget(input);
    });
    assert!(took < Duration::from_secs(6), "serve took {took:?}");
    let Err(mcp_stdio::Error::Io(e)) = served else {
        panic!("{served:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
}

/// Claim: the same at the end of input.
#[test]
fn the_end_of_input_ends_serve_while_the_client_never_reads() {
    let (took, served) = end_while_the_client_never_reads(|_, input| drop(input));
    assert!(took < Duration::from_secs(6), "serve took {took:?}");
    assert!(served.is_err(), "{served:?}");
}

/// Claim (core review 8): a thread that waits for another's `write(2)` to
/// send its own lines is let go once the shutdown gives the client up:
/// its lines were dropped with the output. Here the reader is in a
/// `write(2)` the client never takes (an inline reply), a pooled handler's
/// progress waits behind it, and a stop gives the client up; the handler
/// waited for ever (until the client read), its pool thread with it.
#[test]
fn a_handler_waiting_behind_a_send_given_up_on_at_shutdown_is_let_go() {
    let (gate_tx, gate) = crossbeam_channel::bounded::<()>(1);
    let (notified_tx, notified) = crossbeam_channel::bounded::<()>(1);
    let server = Server::builder("stuck", "1.0.0")
        .shutdown_grace(Duration::from_millis(100))
        .write_timeout(Duration::from_secs(1))
        .inline_tool(
            mcp_stdio::types::Tool::new("quick", "Answers on the reader."),
            |_ctx, _: serde_json::Value| Ok(mcp_stdio::types::CallToolResult::text("quick")),
        )
        .tool(
            mcp_stdio::types::Tool::new("progress", "Reports progress when let go."),
            move |ctx, _: serde_json::Value| {
                let _ = gate.recv();
                ctx.progress(1.0, None, Some("half way"));
                let _ = notified_tx.send(());
                Ok(mcp_stdio::types::CallToolResult::text("done"))
            },
        )
        .build();
    let never = Arc::new(Mutex::new(()));
    let held = never.lock().unwrap();
    let (mut to_server, served, in_write) = serve_to_a_client_that_never_reads(&server, &never);
    let mut pooled = call(2, "progress", json!({}));
    pooled["params"]["_meta"]["progressToken"] = json!("p");
    let lines = format!(
        "{}\n{}\n",
        serde_json::to_string(&call(1, "quick", json!({}))).unwrap(),
        serde_json::to_string(&pooled).unwrap()
    );
    std::io::Write::write_all(&mut to_server, lines.as_bytes()).unwrap();
    // The reader sends the inline reply before it reads again: the only
    // write, and it never ends.
    in_write
        .recv_timeout(crate::support::WAIT)
        .expect("the inline reply's write began");
    // The handler's progress now waits behind that write.
    gate_tx.send(()).unwrap();
    server.stop_handle().stop();
    let served = served.recv_timeout(crate::support::WAIT);
    let let_go = notified.recv_timeout(Duration::from_secs(5));
    drop(held);
    let Ok(Err(mcp_stdio::Error::Io(e))) = served else {
        panic!("{served:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(
        let_go.is_ok(),
        "the handler still waits to send its progress after serve gave the client up"
    );
}

/// Claim (core review 8, fixed in the tenth session): the same when the
/// reply the client never takes is an inline tool's, in a `write(2)` of
/// the reader. The reader sends what it holds before it reads again, so
/// it never reads the end of input, and `serve`, which learns of it only
/// from the reader, waited for ever (until a stop); now the thread in
/// `serve` lets the client go once it took less than 16 KiB of the send
/// in the write timeout (`ConnHandle::let_go_if_stalled`).
#[test]
fn the_end_of_input_ends_serve_while_the_client_never_reads_an_inline_reply() {
    let (took, served) = end_while_the_client_never_reads_a_reply(true, |_, input| drop(input));
    assert!(took < Duration::from_secs(6), "serve took {took:?}");
    assert!(served.is_err(), "{served:?}");
}

/// Claim (core review 8): a stop from inside an inline handler, with a
/// call pipelined behind it and the input left open, answers the inline
/// call, answers the other at most once (`-32603`, if the reader gets to
/// it before the output closes), and ends serving.
#[test]
fn a_stop_from_an_inline_handler_answers_each_call_once_and_ends_serving() {
    let server = Server::builder("halt", "1.0.0")
        .shutdown_grace(Duration::from_millis(100))
        .inline_tool(
            mcp_stdio::types::Tool::new("halt", "Stops the server."),
            |ctx, _: serde_json::Value| {
                ctx.server().stop_handle().stop();
                Ok(mcp_stdio::types::CallToolResult::text("halted"))
            },
        )
        .tool(
            mcp_stdio::types::Tool::new("hello", "Says hello."),
            |_ctx, _: serde_json::Value| Ok(mcp_stdio::types::CallToolResult::text("hello")),
        )
        .build();
    let mut peer = Peer::start(&server);
    let burst = format!(
        "{}\n{}\n",
        serde_json::to_string(&call(1, "halt", json!({}))).unwrap(),
        serde_json::to_string(&call(2, "hello", json!({}))).unwrap()
    );
    peer.write_raw(burst.as_bytes());
    let lines = peer
        .wait_output_closed(crate::support::WAIT)
        .expect("the output closed after the stop");
    let replies: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(replies[0], text_result(&peer, 1, "halted"));
    // The call read after the stop is refused, unless the output closed
    // first: then, like a line still in the pipe, it is never read.
    assert!(replies.len() <= 2, "{replies:?}");
    if let Some(refused) = replies.get(1) {
        assert_eq!(refused["id"], json!(2));
        assert_eq!(refused["error"]["code"], json!(-32603), "{replies:?}");
    }
    let (rest, res) = peer.finish();
    assert!(rest.is_empty());
    res.unwrap();
}

/// Claim (review s10): the rule for a client too slow to keep holds in the
/// grace period too. A pooled handler's progress is in a `write(2)` that
/// the client never takes, and the client closes its input: the request
/// never settles (its handler is held in that `write(2)`), and `serve`'s
/// thread, which asks the rule only while it waits for the end, waited
/// the whole grace period (5 s here) before the write timeout (300 ms)
/// counted at all.
#[test]
fn a_client_too_slow_to_keep_is_let_go_within_the_grace_period() {
    let (took, served) = progress_to_a_client_that_never_reads_then_eof(Duration::from_secs(5));
    let Ok(Err(mcp_stdio::Error::Io(e))) = served else {
        panic!("{served:?} after {took:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(
        took < Duration::from_secs(3),
        "serve took {took:?}: the grace period passed before the write timeout counted"
    );
}

/// Claim (review s10): the same with a grace period too long for the clock
/// (`Duration::MAX`, "as long as the handlers take"): the handler is held
/// by the client, not by its work, and `serve` waited for ever.
#[test]
fn a_client_too_slow_to_keep_is_let_go_within_a_grace_period_too_long_for_the_clock() {
    let (took, served) = progress_to_a_client_that_never_reads_then_eof(Duration::MAX);
    let Ok(Err(mcp_stdio::Error::Io(e))) = served else {
        panic!("{served:?} after {took:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
}

/// Serves a pooled tool whose progress goes into a `write(2)` that the
/// client never takes (write timeout 300 ms, grace period `grace`), closes
/// the input once it is there, and says how long `serve` took after that,
/// and what it returned (an error if it did not within
/// [`crate::support::WAIT`]).
fn progress_to_a_client_that_never_reads_then_eof(
    grace: Duration,
) -> (
    Duration,
    Result<Result<(), mcp_stdio::Error>, crossbeam_channel::RecvTimeoutError>,
) {
    let server = Server::builder("stuck", "1.0.0")
        .shutdown_grace(grace)
        .write_timeout(Duration::from_millis(300))
        .tool(
            mcp_stdio::types::Tool::new("progress", "Reports progress."),
            |ctx, _: serde_json::Value| {
                ctx.progress(1.0, None, Some("half way"));
                Ok(mcp_stdio::types::CallToolResult::text("done"))
            },
        )
        .build();
    let never = Arc::new(Mutex::new(()));
    let held = never.lock().unwrap();
    let (mut to_server, served, in_write) = serve_to_a_client_that_never_reads(&server, &never);
    let mut pooled = call(1, "progress", json!({}));
    pooled["params"]["_meta"]["progressToken"] = json!("p");
    let line = serde_json::to_string(&pooled).unwrap();
    std::io::Write::write_all(&mut to_server, format!("{line}\n").as_bytes()).unwrap();
    in_write
        .recv_timeout(crate::support::WAIT)
        .expect("the progress's write began");
    let ended = std::time::Instant::now();
    drop(to_server);
    let served = served.recv_timeout(crate::support::WAIT);
    let took = ended.elapsed();
    drop(held);
    (took, served)
}

/// Claim (review s11): a stop during the grace period, with the input
/// left open, does not hold `serve` while a handler is held in a
/// `write(2)` the client never takes: the rule for a client too slow to
/// keep still lets it go in the write timeout (300 ms), well inside the
/// grace period (5 s), and `serve` returns `TimedOut`.
#[test]
fn a_stop_during_the_grace_period_while_a_send_is_stuck_ends_serve_in_the_write_timeout() {
    let server = Server::builder("stuck", "1.0.0")
        .shutdown_grace(Duration::from_secs(5))
        .write_timeout(Duration::from_millis(300))
        .tool(
            mcp_stdio::types::Tool::new("progress", "Reports progress."),
            |ctx, _: serde_json::Value| {
                ctx.progress(1.0, None, Some("half way"));
                Ok(mcp_stdio::types::CallToolResult::text("done"))
            },
        )
        .build();
    let never = Arc::new(Mutex::new(()));
    let held = never.lock().unwrap();
    let (mut to_server, served, in_write) = serve_to_a_client_that_never_reads(&server, &never);
    let mut pooled = call(1, "progress", json!({}));
    pooled["params"]["_meta"]["progressToken"] = json!("p");
    let line = serde_json::to_string(&pooled).unwrap();
    std::io::Write::write_all(&mut to_server, format!("{line}\n").as_bytes()).unwrap();
    in_write
        .recv_timeout(crate::support::WAIT)
        .expect("the progress's write began");
    let stopped = std::time::Instant::now();
    server.stop_handle().stop();
    // A second stop in the grace period changes nothing.
    server.stop_handle().stop();
    let served = served.recv_timeout(crate::support::WAIT);
    let took = stopped.elapsed();
    drop(held);
    drop(to_server);
    let Ok(Err(mcp_stdio::Error::Io(e))) = served else {
        panic!("{served:?} after {took:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(took < Duration::from_secs(3), "serve took {took:?}");
}
