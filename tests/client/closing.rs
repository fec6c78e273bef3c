//! `Client::close` (issue 47, items 3 and 4): once it returns, no server it
//! started runs and nothing waits, whatever it came in the middle of (a
//! restart whose server is still being probed) and whoever else holds the
//! server's output (a grandchild).

use super::*;

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
/// `tools/call`, and exits at the end of its input.
pub fn fake_grandchild_holds_stdout() -> ! {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let grandchild = Command::new(exe)
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
