//! The application's hooks panic (issue 47, item 6): the client goes on as
//! the server does when a handler panics. A panic in a hook on the reader
//! (`on_log`, the wire hook) skipped the reader's cleanup, so every waiter
//! hung; on the writer or the stderr thread it stopped the lines that
//! thread carries; in a legacy server's input handler it left the server's
//! request unanswered.

use super::*;

/// While it lives, the deliberate panics of these checks (their messages
/// start `deliberately: `) are kept off stderr, where they would read as
/// failures of the run; any other panic is reported as before.
struct QuietPanics {
    previous: Arc<PanicHook>,
}

/// What `std::panic::take_hook` returns.
type PanicHook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync>;

impl QuietPanics {
    fn new() -> QuietPanics {
        let previous = Arc::new(std::panic::take_hook());
        let report = Arc::clone(&previous);
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = (payload.downcast_ref::<&str>().copied())
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if !text.is_some_and(|t| t.starts_with("deliberately: ")) {
                report(info);
            }
        }));
        QuietPanics { previous }
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        let previous = Arc::clone(&self.previous);
        std::panic::set_hook(Box::new(move |info| previous(info)));
    }
}

/// Long enough for the calls that must be answered, short enough that the
/// code before the fix fails in seconds, not a minute.
const TIMEOUT: Duration = Duration::from_secs(3);

/// `on_log` panics on one message: the reader notes it and goes on, so the
/// calls in flight are answered and the next message is delivered.
pub fn a_panicking_on_log_hook_stops_nothing() -> Result<String, String> {
    let _quiet = QuietPanics::new();
    let (log_tx, logs) = crossbeam_channel::unbounded::<Value>();
    let (note_tx, notes) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .request_timeout(TIMEOUT)
        .era(EraPolicy::LegacyOnly)
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .on_log(move |log| {
            if log.data == json!("log 2") {
                panic!("deliberately: the application's on_log panics");
            }
            let _ = log_tx.send(log.data.clone());
        })
        .spawn(server_command("legacy-logs", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    client
        .set_log_level(LoggingLevel::Debug)
        .map_err(|e| format!("setLevel: {e}"))?;
    let outcomes = thread::scope(|s| {
        let calls: Vec<_> = (0..2)
            .map(|_| s.spawn(|| client.call_tool("hold", json!({}))))
            .collect();
        calls
            .into_iter()
            .map(|c| c.join().expect("the call's thread"))
            .collect::<Vec<_>>()
    });
    for outcome in outcomes {
        expect_text("hold", outcome, "held")?;
    }
    close_ok(client)?;
    let logs: Vec<Value> = logs.try_iter().collect();
    ensure!(
        logs == [json!("log 1"), json!("log 3")],
        "on_log got {logs:?}"
    );
    let notes: Vec<String> = notes.try_iter().collect();
    let want = "the on_log hook panicked (deliberately: the application's on_log panics)";
    ensure!(
        notes.iter().any(|n| n.starts_with(want)),
        "no note {want:?} among {notes:?}"
    );
    Ok(String::new())
}

/// The wire hook panics on a line read (on the reader) and on a line
/// written (on the caller's thread or the writer's): the line is still
/// routed or written, and each call is answered.
pub fn a_panicking_wire_hook_stops_nothing() -> Result<String, String> {
    let _quiet = QuietPanics::new();
    let (note_tx, notes) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .request_timeout(TIMEOUT)
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .wire(|direction, line| {
            let line = String::from_utf8_lossy(line);
            match direction {
                WireDirection::Received if line.contains("boom-in") => {
                    panic!("deliberately: boom on a read")
                }
                WireDirection::Sent if line.contains("boom-out") => {
                    panic!("deliberately: boom on a write")
                }
                _ => {}
            }
        })
        .spawn(server_command("modern-logs", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    for text in ["boom-in", "boom-out", "after"] {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            client.call_tool("echo", json!({ "text": text }))
        }))
        .map_err(|_| format!("echo {text}: the hook's panic reached the caller"))?;
        expect_text(text, outcome, text)?;
    }
    close_ok(client)?;
    let notes: Vec<String> = notes.try_iter().collect();
    for want in [
        "the wire hook panicked (deliberately: boom on a read)",
        "the wire hook panicked (deliberately: boom on a write)",
    ] {
        ensure!(
            notes.iter().any(|n| n.starts_with(want)),
            "no note {want:?} among {notes:?}"
        );
    }
    Ok(String::new())
}

/// The stderr sink panics on the first line: the server's stderr is still
/// read (else the server blocks once the pipe is full), and it answers.
pub fn a_panicking_stderr_sink_stops_nothing() -> Result<String, String> {
    let _quiet = QuietPanics::new();
    let (line_tx, lines) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .request_timeout(TIMEOUT)
        .trace(|_| {})
        .stderr(move |line| {
            if line.starts_with("xxx") {
                panic!("deliberately: the application's stderr sink panics");
            }
            let _ = line_tx.send(line.to_owned());
        })
        .spawn(server_command("stderr-flood", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    // 1 MiB: far more than a pipe holds.
    expect_text(
        "flood",
        client.call_tool("flood", json!({ "mib": 1 })),
        "flooded",
    )?;
    let next = lines.recv_timeout(WAIT);
    close_ok(client)?;
    ensure!(
        next.as_deref() == Ok("end of flood"),
        "the line after the one the sink panicked on: {next:?}"
    );
    Ok(String::new())
}

/// An input handler panics on a legacy server's request: the server gets
/// `-32603` for it, as a client gets for a server handler's panic, and its
/// other requests are answered.
pub fn a_panicking_input_handler_answers_an_error() -> Result<String, String> {
    let _quiet = QuietPanics::new();
    let client = builder()
        .request_timeout(TIMEOUT * 5)
        .era(EraPolicy::LegacyOnly)
        .trace(|_| {})
        .on_elicitation(|_| panic!("deliberately: the application's elicitation handler panics"))
        .spawn(server_command("legacy-asks", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let started = Instant::now();
    let answers = legacy_asks_answers(&client, "ask")?;
    let took = started.elapsed();
    close_ok(client)?;
    ensure!(
        answers["s-elicit"]["error"]["code"] == json!(-32603)
            && answers["s-elicit"]["error"]["message"]
                == json!(
                    "internal error: handler panicked: deliberately: the application's elicitation handler panics"
                ),
        "elicitation/create: {} (after {took:?})",
        answers["s-elicit"]
    );
    ensure!(
        answers["s-ping"]["result"] == json!({}),
        "ping: {}",
        answers["s-ping"]
    );
    Ok(String::new())
}

/// Review of issue 47, item 6: the trace hook (`ClientBuilder::trace`) is
/// an application hook on a thread of the client's (the note thread) too,
/// and the only one not called through `Notes::guard`: its panic on one
/// note ends the note thread, and every later note, problems included, is
/// dropped without a word for the rest of the session. Here it panics on
/// the note of the first of three server log messages (notes, as no
/// request asked for them and no `on_log` is set); the third must still
/// reach it.
pub fn a_panicking_trace_hook_loses_no_later_note() -> Result<String, String> {
    let _quiet = QuietPanics::new();
    let (note_tx, notes) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .request_timeout(TIMEOUT)
        .trace(move |note| {
            if note.contains("log 1") {
                panic!("deliberately: the application's trace hook panics");
            }
            let _ = note_tx.send(note.to_owned());
        })
        .spawn(server_command("modern-logs", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let outcomes = thread::scope(|s| {
        let calls: Vec<_> = (0..2)
            .map(|_| s.spawn(|| client.call_tool("hold", json!({}))))
            .collect();
        calls
            .into_iter()
            .map(|c| c.join().expect("the call's thread"))
            .collect::<Vec<_>>()
    });
    for outcome in outcomes {
        expect_text("hold", outcome, "held")?;
    }
    let mut seen = Vec::new();
    let deadline = Instant::now() + WAIT;
    let third = loop {
        match notes.recv_deadline(deadline) {
            Ok(note) if note.contains("log 3") => break Some(note),
            Ok(note) => seen.push(note),
            Err(_) => break None,
        }
    };
    close_ok(client)?;
    ensure!(
        third.is_some(),
        "the note of the third log message never reached the trace within {WAIT:?} after the hook panicked on the first; it got {seen:?}"
    );
    Ok(String::new())
}
