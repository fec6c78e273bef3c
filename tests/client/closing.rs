//! `Client::close` (issue 47, items 3 and 4): once it returns, no server it
//! started runs and nothing waits, whatever it came in the middle of (a
//! restart whose server is still being probed) and whoever else holds the
//! server's output (a grandchild).

use super::*;
use std::sync::atomic::AtomicBool;

/// For `restarts-silent`: the file each start appends its lines to.
const STARTS_ENV: &str = "MCP_STDIO_CLIENT_TEST_STARTS";

/// `restarts-silent`: appends `start <pid>` to the file named by
/// `MCP_STDIO_CLIENT_TEST_STARTS`. Its first start is `dies-mid-request`;
/// every later one reads its input and answers nothing (a server that hangs
/// on the era probe), and at the end of its input appends `eof <pid>` and
/// exits.
pub fn fake_restarts_silent() -> ! {
    let path = std::env::var_os(STARTS_ENV).expect("the starts file");
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("the starts file opens");
    let pid = std::process::id();
    let _ = file.write_all(format!("start {pid}\n").as_bytes());
    let starts = std::fs::read_to_string(&path).unwrap_or_default();
    if starts.lines().filter(|l| l.starts_with("start ")).count() == 1 {
        fake_dies_mid_request();
    }
    let rx = incoming();
    while rx.recv().is_ok() {}
    let _ = file.write_all(format!("eof {pid}\n").as_bytes());
    std::process::exit(0);
}

/// `grandchild-holds-stdout`: starts `holds-stdout` (this binary) with its
/// own stdout, which the grandchild keeps open after this server exits;
/// answers `server/discover` (instructions `grandchild <pid>`),
/// acknowledges `subscriptions/listen` and never ends it, never answers
/// `tools/call`, and exits at the end of its input. With `escapes` the
/// grandchild leaves the server's process group, as a daemon does: what
/// `close` ends is the group, and these checks need a grandchild that
/// outlives it (`grandchild-in-group` is one that stays).
pub fn fake_grandchild_holds_stdout(escapes: bool) -> ! {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let mut command = Command::new(exe);
    if escapes {
        escape_group(&mut command);
    }
    let grandchild = command
        .env(SERVER_ENV, "holds-stdout")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the grandchild starts");
    let instructions = format!("grandchild {}", grandchild.id());
    each_request(|out, id, method, _| match method {
        "server/discover" => send(
            out,
            &reply(id, fake_discover("grandchild-holds-stdout", &instructions)),
        ),
        "subscriptions/listen" => {
            let meta = json!({ "io.modelcontextprotocol/subscriptionId": id });
            send(
                out,
                &json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": { "_meta": meta, "notifications": { "toolsListChanged": true } }
                }),
            );
        }
        _ => {}
    });
    std::process::exit(0);
}

/// Starts a grandchild in a process group of its own: out of reach of
/// `close`, which ends the server's group.
fn escape_group(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

/// `holds-stdout`: not a server; sleeps a minute, holding the stdout it
/// inherited.
pub fn run_holds_stdout() -> ! {
    thread::sleep(Duration::from_secs(60));
    std::process::exit(0);
}

/// Item 3: a `close` while a restarted server is still being probed stops
/// that server (a closed input first, as the spec's shutdown says) and
/// ends every live subscription before it returns; before, `close` found
/// no child (the restart held it), returned at once, and the new server
/// ran on until its probe timed out, with the subscription still waiting.
pub fn close_during_a_restarts_probe_stops_the_new_server() -> Result<String, String> {
    let starts = Wire::new("starts");
    let wire = Wire::new("restarts-silent");
    let mut command = server_command("restarts-silent", Some(&wire));
    command.env(STARTS_ENV, &starts.path);
    let client = builder()
        .trace(|_| {})
        .probe_timeout(Duration::from_secs(30))
        .restart(RestartPolicy {
            max_restarts: 1,
            backoff: Duration::from_millis(10),
        })
        .spawn(command)
        .map_err(|e| format!("connecting failed: {e}"))?;
    let mut sub = client
        .listen(SubscriptionFilter {
            resource_subscriptions: Some(vec!["mem://watched".into()]),
            ..SubscriptionFilter::default()
        })
        .map_err(|e| format!("listen failed: {e}"))?;
    next_event("before the death", &mut sub)?;
    let outcome = client.call_tool("die", json!({}));
    ensure!(
        matches!(outcome, Err(Error::Disconnected)),
        "the call the server died on: {outcome:?}"
    );
    // The restarted server got its probe, which it never answers.
    let deadline = Instant::now() + WAIT;
    let second = loop {
        let text = std::fs::read_to_string(&starts.path).unwrap_or_default();
        let pids: Vec<u32> = text
            .lines()
            .filter_map(|l| l.strip_prefix("start ")?.parse().ok())
            .collect();
        let probes = methods(&wire.lines())
            .iter()
            .filter(|m| *m == "server/discover")
            .count();
        if let (2, Some(pid)) = (probes, pids.get(1)) {
            break *pid;
        }
        ensure!(
            Instant::now() < deadline,
            "the server was not restarted and probed: {text:?}"
        );
        thread::sleep(Duration::from_millis(10));
    };
    let started = Instant::now();
    let closed = client.close();
    let took = started.elapsed();
    let end = sub.try_recv();
    let state = process_state(second);
    let text = std::fs::read_to_string(&starts.path).unwrap_or_default();
    drop(sub);
    ensure!(closed.is_ok(), "close failed: {closed:?}");
    ensure!(
        end == Err(SubscriptionEnd::Disconnected),
        "the subscription after close returned: {end:?}, want Err(Disconnected)"
    );
    ensure!(
        matches!(state, None | Some('Z')),
        "the restarted server (pid {second}) still runs after close returned (state {state:?})"
    );
    ensure!(
        text.contains(&format!("eof {second}")),
        "the restarted server never saw its input end: {text:?}"
    );
    Ok(format!("close took {}", ms(took)))
}

/// Item 4: once `close` returns, nothing waits, even when a grandchild of
/// the server holds its output open (so the reader never sees its end): a
/// call in flight ends `Disconnected` and a subscription the server never
/// ended ends `Disconnected`; before, the call waited out its timeout and
/// the subscription for ever.
pub fn close_fails_every_waiter_though_a_grandchild_holds_stdout() -> Result<String, String> {
    let client = builder()
        .trace(|_| {})
        .close_grace(Duration::from_millis(500))
        .spawn(server_command("grandchild-holds-stdout", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let grandchild: u32 = client
        .instructions()
        .and_then(|i| i.strip_prefix("grandchild ")?.parse().ok())
        .ok_or("no grandchild pid in the instructions")?;
    let outcome = (|| {
        let mut sub = client
            .listen(SubscriptionFilter {
                tools_list_changed: Some(true),
                ..SubscriptionFilter::default()
            })
            .map_err(|e| format!("listen failed: {e}"))?;
        let call = client
            .start_request(
                "tools/call",
                json!({ "name": "hang", "arguments": {} }),
                RequestOptions::new(),
            )
            .map_err(|e| format!("the call failed to start: {e}"))?;
        let (done_tx, done) = crossbeam_channel::bounded(1);
        thread::spawn(move || {
            let _ = done_tx.send(call.wait());
        });
        client.close().map_err(|e| format!("close failed: {e}"))?;
        let closed = Instant::now();
        let call = done.recv_timeout(Duration::from_secs(2));
        let waited = closed.elapsed();
        let end = sub.recv_timeout(Duration::from_secs(2));
        ensure!(
            matches!(call, Ok(Err(Error::Disconnected))),
            "the call in flight, {waited:?} after close returned: {call:?}, want Ok(Err(Disconnected))"
        );
        ensure!(
            end == Err(SubscriptionEnd::Disconnected),
            "the subscription after close: {end:?}, want Err(Disconnected)"
        );
        Ok(format!(
            "the call ended {} after close returned",
            ms(waited)
        ))
    })();
    // The grandchild is this test's to end.
    let _ = Command::new("kill")
        .arg("-9")
        .arg(grandchild.to_string())
        .status();
    outcome
}

/// For `asks-when-told`: the file whose existence tells it to write.
const TOLD_ENV: &str = "MCP_STDIO_CLIENT_TEST_TOLD";

/// `legacy-grandchild-asks-late`: an initialize-era server with `logging`
/// that starts `asks-when-told` (this binary) with its own stdout, which
/// the grandchild keeps open after this server exits; its instructions
/// are `grandchild <pid>`. Exits at the end of its input.
pub fn fake_legacy_grandchild_asks_late() -> ! {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let mut command = Command::new(exe);
    // Out of the server's group: it outlives `close`.
    escape_group(&mut command);
    let grandchild = command
        .env(SERVER_ENV, "asks-when-told")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the grandchild starts");
    let instructions = format!("grandchild {}", grandchild.id());
    each_request(|out, id, method, _| match method {
        "initialize" => {
            let mut result = legacy_initialize_result(json!({ "tools": {}, "logging": {} }));
            result["instructions"] = json!(instructions);
            send(out, &reply(id, result));
        }
        "ping" => send(out, &reply(id, json!({}))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// `asks-when-told`: not a server; once the file named by
/// `MCP_STDIO_CLIENT_TEST_TOLD` exists (a minute at most), writes to the
/// stdout it inherited what a legacy server may write at any time: an
/// `elicitation/create` request (`late-ask`) and a log message
/// (`late log`), then exits.
pub fn run_asks_when_told() -> ! {
    let told = std::env::var_os(TOLD_ENV).expect("the file to wait for");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::path::Path::new(&told).exists() {
        if Instant::now() > deadline {
            std::process::exit(0);
        }
        thread::sleep(Duration::from_millis(10));
    }
    let mut out = std::io::stdout().lock();
    let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
    send(
        &mut out,
        &json!({ "jsonrpc": "2.0", "id": "late-ask", "method": "elicitation/create",
            "params": { "message": "Your name?", "requestedSchema": schema } }),
    );
    let params = json!({ "level": "warning", "data": "late log" });
    send(
        &mut out,
        &json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": params }),
    );
    std::process::exit(0);
}

/// Review of issue 47, item 4 (`Client::close`: "once it returns, nothing
/// waits and nothing it started runs"): a grandchild of the server holds
/// its output, and writes to it after `close` returned. The link's reader,
/// given up on but still reading, routes those lines as if nothing had
/// closed: the application's `on_elicitation` handler is asked a question
/// (on a thread the client starts after it closed) and its `on_log` hook
/// gets a message. Once `close` returns, the client calls no hook of the
/// application's.
pub fn no_application_hook_runs_after_close_returns() -> Result<String, String> {
    let told = Wire::new("told");
    let mut command = server_command("legacy-grandchild-asks-late", None);
    command.env(TOLD_ENV, &told.path);
    let (hook_tx, hooks) = crossbeam_channel::unbounded::<String>();
    let elicit_tx = hook_tx.clone();
    let client = builder()
        .trace(|_| {})
        .era(EraPolicy::LegacyOnly)
        .close_grace(Duration::from_millis(300))
        .on_elicitation(move |_| {
            let _ = elicit_tx.send("on_elicitation".to_owned());
            Ok(ElicitResult::decline())
        })
        .on_log(move |log| {
            let _ = hook_tx.send(format!("on_log ({})", log.data));
        })
        .spawn(command)
        .map_err(|e| format!("connecting failed: {e}"))?;
    let grandchild: u32 = client
        .instructions()
        .and_then(|i| i.strip_prefix("grandchild ")?.parse().ok())
        .ok_or("no grandchild pid in the instructions")?;
    let outcome = (|| {
        let closed = client.close();
        ensure!(closed.is_ok(), "close failed: {closed:?}");
        let _ = hooks.try_iter().count();
        std::fs::write(&told.path, "now").map_err(|e| format!("telling the grandchild: {e}"))?;
        // The grandchild wrote its lines once it has exited.
        let deadline = Instant::now() + WAIT;
        while !matches!(process_state(grandchild), None | Some('Z')) {
            ensure!(
                Instant::now() < deadline,
                "the grandchild (pid {grandchild}) did not write and exit"
            );
            thread::sleep(Duration::from_millis(10));
        }
        // A hook the reader still calls comes at once; none is the answer.
        let mut late: Vec<String> = hooks
            .recv_timeout(Duration::from_secs(2))
            .into_iter()
            .collect();
        late.extend(hooks.try_iter());
        ensure!(
            late.is_empty(),
            "after close returned, the client called the application's {late:?}"
        );
        Ok(String::new())
    })();
    let _ = std::fs::remove_file(&told.path);
    // The grandchild is this test's to end, should it still run.
    let _ = Command::new("kill")
        .arg("-9")
        .arg(grandchild.to_string())
        .status();
    outcome
}

/// Review of issue 47, items 3 and 4 (`Drop for Client`: "bounded by three
/// times the close grace"): a wire hook that blocks on a line a caller
/// writes itself (here the `notifications/cancelled` of a dropped call)
/// holds the link's sending lock (`Link::try_send` keeps it while
/// `Input::send` calls the hook), and `close` takes that lock to close the
/// server's input (`Link::close_input`), so `close` waits as long as the
/// hook, with no bound. A hook on the reader that blocks does not hold
/// `close` (it waits the close grace for the reader, then goes on).
pub fn close_is_bounded_while_a_wire_hook_blocks_another_threads_write() -> Result<String, String> {
    let (entered_tx, entered) = crossbeam_channel::unbounded::<Option<String>>();
    let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
    let client = builder()
        .trace(|_| {})
        .close_grace(Duration::from_millis(200))
        .wire(move |direction, line| {
            let cancel = String::from_utf8_lossy(line).contains("notifications/cancelled");
            if direction == WireDirection::Sent && cancel {
                let _ = entered_tx.send(thread::current().name().map(str::to_owned));
                // Until the check lets go (drops the sender).
                let _ = release.recv_timeout(Duration::from_secs(60));
            }
        })
        .spawn(server_command("modern-logs", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    // `hold` is never answered alone.
    let call = client
        .start_request(
            "tools/call",
            json!({ "name": "hold", "arguments": {} }),
            RequestOptions::new(),
        )
        .map_err(|e| format!("the call failed to start: {e}"))?;
    let canceller = thread::Builder::new()
        .name("canceller".into())
        .spawn(move || call.cancel(None))
        .map_err(|e| e.to_string())?;
    let who = entered.recv_timeout(WAIT);
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let closer = thread::spawn(move || {
        let started = Instant::now();
        let closed = client.close().map(|_| ());
        let _ = done_tx.send(started.elapsed());
        closed
    });
    let waited = done.recv_timeout(Duration::from_secs(5));
    drop(release_tx);
    let _ = canceller.join();
    let closed = closer.join().map_err(|_| "close panicked".to_owned())?;
    ensure!(
        who == Ok(Some("canceller".to_owned())),
        "the hook saw the cancellation on {who:?}, not on the thread that wrote it"
    );
    ensure!(
        waited.is_ok(),
        "close had not returned 5 s after it began (close grace 200 ms): it waited for a wire hook blocked on another thread's write"
    );
    closed.map_err(|e| format!("close failed: {e}"))?;
    Ok(format!("close took {}", ms(waited.unwrap_or_default())))
}

/// `recorded-dies-mid-request`: `dies-mid-request`, after appending
/// `start <pid>` to the file named by `MCP_STDIO_CLIENT_TEST_STARTS`.
pub fn fake_recorded_dies_mid_request() -> ! {
    let path = std::env::var_os(STARTS_ENV).expect("the starts file");
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("the starts file opens");
    let _ = file.write_all(format!("start {}\n", std::process::id()).as_bytes());
    drop(file);
    fake_dies_mid_request();
}

/// Review of issue 47, item 3, at every moment of a restart rather than
/// one: the server dies on a call, and `close` comes 0 to 39 ms later
/// (the pause only spreads the moments: the reap, the backoff, the spawn,
/// the probe, the install, the re-sent listen). Whenever it comes, once it
/// returns every server started was reaped (none runs, none is a zombie
/// left to the test process) and the subscription ended. It passes: the
/// reading that `close` can miss a restart's server at some moment is
/// wrong, here at least.
pub fn close_at_any_moment_of_a_restart_leaves_no_server() -> Result<String, String> {
    let mut phases = BTreeSet::new();
    for pause_ms in 0..40u64 {
        let starts = Wire::new("any-moment-starts");
        let mut command = server_command("recorded-dies-mid-request", None);
        command.env(STARTS_ENV, &starts.path);
        let client = builder()
            .trace(|_| {})
            .close_grace(Duration::from_secs(2))
            .restart(RestartPolicy {
                max_restarts: 2,
                backoff: Duration::from_millis(5),
            })
            .spawn(command)
            .map_err(|e| format!("connecting failed: {e}"))?;
        let mut sub = client
            .listen(SubscriptionFilter {
                tools_list_changed: Some(true),
                ..SubscriptionFilter::default()
            })
            .map_err(|e| format!("listen failed: {e}"))?;
        let outcome = client.call_tool("die", json!({}));
        ensure!(
            matches!(outcome, Err(Error::Disconnected)),
            "the call the server died on: {outcome:?}"
        );
        thread::sleep(Duration::from_millis(pause_ms));
        let started = Instant::now();
        let closed = client.close();
        let took = started.elapsed();
        // Whether the restart had installed its server when close came.
        let mut resubscribed = false;
        let end = loop {
            match sub.try_recv() {
                Ok(Some(SubscriptionEvent::Resubscribed { .. })) => resubscribed = true,
                Ok(Some(_)) => {}
                other => break other,
            }
        };
        phases.insert(resubscribed);
        let text = std::fs::read_to_string(&starts.path).unwrap_or_default();
        let _ = std::fs::remove_file(&starts.path);
        ensure!(
            closed.is_ok(),
            "after {pause_ms} ms: close failed: {closed:?}"
        );
        ensure!(
            took < Duration::from_secs(5),
            "after {pause_ms} ms: close took {took:?}"
        );
        ensure!(
            matches!(
                end,
                Err(SubscriptionEnd::Disconnected | SubscriptionEnd::Closed)
            ),
            "after {pause_ms} ms: the subscription after close: {end:?}"
        );
        for pid in text
            .lines()
            .filter_map(|l| l.strip_prefix("start ")?.parse::<u32>().ok())
        {
            let state = process_state(pid);
            ensure!(
                state.is_none(),
                "after {pause_ms} ms: server {pid} is in state {state:?} once close returned (starts: {text:?})"
            );
        }
    }
    Ok(format!(
        "close came before and after the restart installed its server: {}",
        phases.len() == 2
    ))
}

/// Review of issue 47, item 4, with the reader held by the application
/// rather than by a grandchild: an `on_log` hook blocks on the first of
/// the server's log messages, so the replies behind it are never routed.
/// `close` gives the reader the close grace, then fails both calls and
/// returns. It passes: a hook that blocks the reader does not hold
/// `close`, and nothing waits once it returned.
pub fn close_is_bounded_while_an_on_log_hook_blocks_the_reader() -> Result<String, String> {
    let (entered_tx, entered) = crossbeam_channel::unbounded::<()>();
    let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
    let client = builder()
        .trace(|_| {})
        .close_grace(Duration::from_millis(200))
        .on_log(move |_| {
            let _ = entered_tx.send(());
            // Until the check lets go (drops the sender).
            let _ = release.recv_timeout(Duration::from_secs(60));
        })
        .spawn(server_command("modern-logs", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    // Two `hold`s: the server sends its log messages, then answers both.
    let mut calls = Vec::new();
    for _ in 0..2 {
        let call = client
            .start_request(
                "tools/call",
                json!({ "name": "hold", "arguments": {} }),
                RequestOptions::new(),
            )
            .map_err(|e| format!("a call failed to start: {e}"))?;
        calls.push(call);
    }
    let blocked = entered.recv_timeout(WAIT);
    let (done_tx, done) = crossbeam_channel::bounded(2);
    for call in calls {
        let done_tx = done_tx.clone();
        thread::spawn(move || {
            let _ = done_tx.send(call.wait().map(|_| ()));
        });
    }
    let started = Instant::now();
    let closed = client.close();
    let took = started.elapsed();
    let ends: Vec<_> = (0..2)
        .map(|_| done.recv_timeout(Duration::from_secs(2)))
        .collect();
    drop(release_tx);
    ensure!(blocked.is_ok(), "the on_log hook was never called");
    ensure!(closed.is_ok(), "close failed: {closed:?}");
    ensure!(
        took < Duration::from_secs(2),
        "close took {took:?} (close grace 200 ms) while on_log blocked the reader"
    );
    ensure!(
        ends.iter()
            .all(|end| matches!(end, Ok(Err(Error::Disconnected)))),
        "the calls whose replies the reader never routed, after close: {ends:?}"
    );
    Ok(format!("close took {}", ms(took)))
}

/// `last-words`: answers `server/discover`, and at the end of its input
/// writes `last words` to its stderr and exits.
pub fn fake_last_words() -> ! {
    each_request(|out, id, method, _| {
        if method == "server/discover" {
            send(out, &reply(id, fake_discover("last-words", "")));
        }
    });
    eprintln!("last words");
    std::process::exit(0);
}

/// `Client::close` says that once it returns nothing it started runs: the
/// thread that hands the server's stderr to the application's hook is one
/// of those. A server writes a line to its stderr as it exits, and the hook
/// takes 300 ms with it; before, `close` returned once the server had
/// exited and its stdout ended, the hook still running, and a program that
/// exited after `close` (the command line's `--show-stderr`) lost the line.
pub fn close_waits_for_the_servers_last_stderr_line() -> Result<String, String> {
    let (line_tx, lines) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .stderr(move |line| {
            thread::sleep(Duration::from_millis(300));
            let _ = line_tx.send(line.to_owned());
        })
        .spawn(server_command("last-words", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    close_ok(client)?;
    match lines.try_recv() {
        Ok(line) if line == "last words" => {
            Ok("the hook had the last line before close returned".into())
        }
        Ok(line) => Err(format!("the hook had {line:?}, not the last words")),
        Err(_) => Err("close returned before the stderr hook had the server's last line".into()),
    }
}

/// `grandchild-writes-stderr`: starts a grandchild (`writes-stderr`) that
/// writes on this server's stderr after it exits; answers
/// `server/discover` (instructions `grandchild <pid>`) and exits at the
/// end of its input.
pub fn fake_grandchild_writes_stderr() -> ! {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let mut command = Command::new(exe);
    // Out of the server's group: it outlives `close`.
    escape_group(&mut command);
    let grandchild = command
        .env(SERVER_ENV, "writes-stderr")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the grandchild starts");
    let instructions = format!("grandchild {}", grandchild.id());
    each_request(|out, id, method, _| {
        if method == "server/discover" {
            send(
                out,
                &reply(id, fake_discover("grandchild-writes-stderr", &instructions)),
            );
        }
    });
    std::process::exit(0);
}

/// `writes-stderr`: not a server; writes `tick N` on its stderr every
/// 50 ms for 20 s.
pub fn run_writes_stderr() -> ! {
    for n in 0..400 {
        eprintln!("tick {n}");
        thread::sleep(Duration::from_millis(50));
    }
    std::process::exit(0);
}

/// Claim (review-46c2): `Client::close` says that once it returns
/// "nothing it started runs" and that what the output carries after it
/// (a grandchild that goes on writing) reaches no hook of the
/// application's (src/client/mod.rs `Client::close`,
/// `ClientInner::close`); but the stderr thread
/// (src/client/process.rs `spawn`) is only waited for up to the close
/// grace, then left running, and hands every later line of a grandchild
/// that holds the server's stderr to the `stderr` hook, for as long as
/// the grandchild writes. Seen on main: "the stderr hook ran 6 times in
/// the 300 ms after close returned".
pub fn no_stderr_hook_runs_after_close_though_a_grandchild_writes_on() -> Result<String, String> {
    let closed = Arc::new(AtomicBool::new(false));
    let after = Arc::new(AtomicUsize::new(0));
    let (seen_closed, counted) = (Arc::clone(&closed), Arc::clone(&after));
    let client = builder()
        .close_grace(Duration::from_millis(300))
        .stderr(move |_| {
            if seen_closed.load(Ordering::SeqCst) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        })
        .spawn(server_command("grandchild-writes-stderr", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let grandchild = client
        .instructions()
        .and_then(|i| i.strip_prefix("grandchild ").map(str::to_owned))
        .ok_or("the server named no grandchild")?;
    let _ = client.close();
    closed.store(true, Ordering::SeqCst);
    thread::sleep(Duration::from_millis(300));
    let _ = Command::new("kill").args(["-9", &grandchild]).status();
    let ran = after.load(Ordering::SeqCst);
    ensure!(
        ran == 0,
        "the stderr hook ran {ran} times in the 300 ms after close returned"
    );
    Ok(String::new())
}
