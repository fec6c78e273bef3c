//! What the client holds for a server that writes or takes without end
//! (issue 47, items 1 and 7): its stderr lines, and the lines waiting for
//! a server that does not read its input, are bounded, measured on this
//! process's peak resident set (`VmHWM`).

use super::*;

const MIB: usize = 1024 * 1024;

/// `stderr-flood`: a modern server whose `tools/call` of `flood` writes
/// `arguments.mib` MiB of `x` to its stderr without a newline, then a
/// newline and the line `end of flood`, and answers `flooded`. Any other
/// tool echoes.
pub fn fake_stderr_flood() -> ! {
    each_request(|out, id, method, msg| match method {
        "server/discover" => send(out, &reply(id, fake_discover("stderr-flood", "floods"))),
        "tools/call" if tool_name(msg) == "flood" => {
            let mib = msg
                .pointer("/params/arguments/mib")
                .and_then(Value::as_u64)
                .unwrap_or(1);
            let mut err = std::io::stderr().lock();
            let chunk = vec![b'x'; MIB];
            for _ in 0..mib {
                if err.write_all(&chunk).is_err() {
                    std::process::exit(0);
                }
            }
            let _ = err.write_all(b"\nend of flood\n");
            drop(err);
            send(out, &reply(id, text_result("flooded")));
        }
        "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// Item 1: a server that writes 100 MiB to its stderr without a newline
/// costs the client no more than a bounded part of that line: the sink
/// gets its start, cut, and then the lines after it.
pub fn a_server_flooding_stderr_without_newlines_costs_a_bounded_line() -> Result<String, String> {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = vm_hwm_kib()?;
    let (line_tx, lines) = crossbeam_channel::unbounded::<(usize, String)>();
    let client = builder()
        .stderr(move |line| {
            let end: String = line
                .chars()
                .rev()
                .take(80)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let _ = line_tx.send((line.len(), end));
        })
        .spawn(server_command("stderr-flood", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    expect_text(
        "flood",
        client.call_tool("flood", json!({ "mib": 100 })),
        "flooded",
    )?;
    let (long, long_end) = lines
        .recv_timeout(WAIT)
        .map_err(|_| "the sink got no line for the flood".to_owned())?;
    let (_, next) = lines
        .recv_timeout(WAIT)
        .map_err(|_| "the sink got no line after the flood".to_owned())?;
    close_ok(client)?;
    let after = vm_hwm_kib()?;
    let growth = after.saturating_sub(before);
    ensure!(
        growth < 16 * 1024,
        "peak RSS grew by {growth} kB for a 100 MiB stderr line (the line was {long} bytes)"
    );
    ensure!(
        long <= 64 * 1024 + 100,
        "the sink was handed {long} bytes of one stderr line"
    );
    ensure!(
        long_end.ends_with("[cut: 104857600 bytes in all]"),
        "the cut line ends {long_end:?}"
    );
    ensure!(next == "end of flood", "the line after the flood: {next:?}");
    Ok(format!("VmHWM +{growth} kB; the sink got {long} bytes"))
}

/// Item 7: a server that stops reading its input holds at most a bounded
/// queue of the client's lines; past it, a request fails at once, saying
/// why, instead of piling up in memory.
pub fn a_server_that_does_not_read_holds_a_bounded_queue() -> Result<String, String> {
    let client = builder()
        .close_grace(Duration::from_millis(200))
        .spawn(server_command("stops-reading", None))
        .map_err(|e| format!("spawn: {e}"))?;
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = vm_hwm_kib()?;
    let big = "x".repeat(MIB);
    let mut calls = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..100 {
        let params = json!({ "name": "echo", "arguments": { "text": big } });
        match client.start_request("tools/call", params, RequestOptions::new()) {
            Ok(call) => calls.push(call),
            Err(e) => refused.push(e.to_string()),
        }
    }
    let after = vm_hwm_kib()?;
    let growth = after.saturating_sub(before);
    let queued = calls.len();
    drop(calls);
    let _ = client.close();
    ensure!(
        growth < 48 * 1024,
        "peak RSS grew by {growth} kB for 100 requests of 1 MiB the server never read ({queued} taken, {} refused)",
        refused.len()
    );
    ensure!(!refused.is_empty(), "all {queued} requests were queued");
    let want = "i/o failed: the server has not read";
    ensure!(
        refused.iter().all(|e| e.starts_with(want)),
        "a refusal says {:?}, want it to start {want:?}",
        refused[0]
    );
    Ok(format!(
        "VmHWM +{growth} kB; {queued} queued, {} refused: {}",
        refused.len(),
        refused[0]
    ))
}

/// `big-logs`: a modern server whose `tools/call` of `logs` sends
/// `arguments.n` log messages (`notifications/message`, for no request),
/// each with a string of `arguments.mib` MiB as its data, then answers
/// `logged`. Any other tool echoes.
pub fn fake_big_logs() -> ! {
    each_request(|out, id, method, msg| match method {
        "server/discover" => send(out, &reply(id, fake_discover("big-logs", "logs"))),
        "tools/call" if tool_name(msg) == "logs" => {
            let arg = |name: &str| {
                msg.pointer(&format!("/params/arguments/{name}"))
                    .and_then(Value::as_u64)
                    .unwrap_or(1) as usize
            };
            // Written as text: encoding megabytes with serde_json in a
            // debug build takes seconds.
            let data = "x".repeat(arg("mib") * MIB);
            for k in 0..arg("n") {
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"{k} {data}\"}}}}\n"
                );
                send_raw(out, line.as_bytes());
            }
            send(out, &reply(id, text_result("logged")));
        }
        "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// Review of issue 47 (a queue measured in items where bytes matter): the
/// notes waiting for a trace hook that is stuck (or slow, or stderr, the
/// default, when it is a full pipe nobody reads) are bounded in number
/// (256), not in size, and a server's log message for no request becomes
/// a note of its whole data. So log messages of 4 MiB, each a line the
/// client accepts, are held whole while the hook is stuck, and
/// up to 256 times the line limit (16 MiB), 4 GiB, in all. A note is for a
/// person: a bounded start of the data is enough. (24 of 4 MiB here.)
pub fn a_stuck_trace_holds_a_bounded_size_of_server_logs() -> Result<String, String> {
    let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
    let client = builder()
        // Megabytes of JSON take seconds to read in a debug build.
        .request_timeout(Duration::from_secs(60))
        .trace(move |_| {
            // Stuck until the check lets go (drops the sender), as a hook
            // writing to a full pipe is.
            let _ = release.recv_timeout(Duration::from_secs(60));
        })
        .spawn(server_command("big-logs", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = vm_hwm_kib()?;
    // The log messages come before the answer: every one was read and
    // noted when the call returns.
    let outcome = client.call_tool("logs", json!({ "n": 24, "mib": 4 }));
    let after = vm_hwm_kib()?;
    drop(release_tx);
    expect_text("logs", outcome, "logged")?;
    close_ok(client)?;
    let growth = after.saturating_sub(before);
    ensure!(
        growth < 48 * 1024,
        "peak RSS grew by {growth} kB while 24 server log messages of 4 MiB waited for a stuck trace hook"
    );
    Ok(format!("VmHWM +{growth} kB"))
}

/// `floods-subscription`: a modern server that acknowledges every
/// `subscriptions/listen` (accepting what it asks) and whose `tools/call`
/// of `publish` sends, to each open listen, `arguments.n`
/// `notifications/tools/list_changed` tagged with its id, each carrying
/// `arguments.kib` KiB in its `_meta`, then answers `published`.
pub fn fake_floods_subscription() -> ! {
    let mut listens: Vec<Value> = Vec::new();
    each_request(|out, id, method, msg| match method {
        "server/discover" => send(
            out,
            &reply(id, fake_discover("floods-subscription", "floods")),
        ),
        "subscriptions/listen" => {
            listens.push(id.clone());
            let accepted = msg
                .pointer("/params/notifications")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let meta = json!({ "io.modelcontextprotocol/subscriptionId": id });
            send(
                out,
                &json!({ "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": { "_meta": meta, "notifications": accepted } }),
            );
        }
        "tools/call" if tool_name(msg) == "publish" => {
            let arg = |name: &str| {
                msg.pointer(&format!("/params/arguments/{name}"))
                    .and_then(Value::as_u64)
                    .unwrap_or(1) as usize
            };
            // Written as text: encoding megabytes with serde_json in a
            // debug build takes seconds.
            let padding = "x".repeat(arg("kib") * 1024);
            for listen in &listens {
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{{\"_meta\":{{\"io.modelcontextprotocol/subscriptionId\":{listen},\"example.com/padding\":\"{padding}\"}}}}}}\n"
                );
                for _ in 0..arg("n") {
                    send_raw(out, line.as_bytes());
                }
            }
            send(out, &reply(id, text_result("published")));
        }
        "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// Review of issue 47, item 7 (README: "What a server can make the client
/// hold is bounded"): a subscription's events wait in an unbounded channel
/// until the application takes them, each with the notification's whole
/// params, so a server that publishes faster than the application reads
/// makes the client hold without end. 96 notifications of 1 MiB for a
/// subscription not read: 96 MiB, and as much more as the server sends.
/// (A request's progress and log messages wait the same way until its
/// caller waits.)
pub fn a_subscription_not_read_holds_a_bounded_backlog() -> Result<String, String> {
    let client = builder()
        // Megabytes of JSON take seconds to read in a debug build.
        .request_timeout(Duration::from_secs(60))
        .trace(|_| {})
        .spawn(server_command("floods-subscription", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let sub = client
        .listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        })
        .map_err(|e| format!("listen failed: {e}"))?;
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = vm_hwm_kib()?;
    // The notifications come before the answer: every one was routed when
    // the call returns.
    let outcome = client.call_tool("publish", json!({ "n": 96, "kib": 1024 }));
    let after = vm_hwm_kib()?;
    drop(sub);
    expect_text("publish", outcome, "published")?;
    close_ok(client)?;
    let growth = after.saturating_sub(before);
    ensure!(
        growth < 48 * 1024,
        "peak RSS grew by {growth} kB for 96 notifications of 1 MiB to a subscription nobody read"
    );
    Ok(format!("VmHWM +{growth} kB"))
}

/// The review's finding 2, at a bound small enough to count: with
/// `max_line_bytes` at 64 KiB, 40 notifications of 4 KiB for a subscription
/// nobody reads. Past the bound (the line limit, in bytes of JSON
/// waiting) the subscription is cancelled at the server
/// (`notifications/cancelled` naming its listen) and ends
/// [`SubscriptionEnd::Overflowed`] after the events it holds, with one
/// note saying why.
pub fn an_unread_subscription_past_its_bound_is_cancelled_and_ends_overflowed()
-> Result<String, String> {
    let wire = Wire::new("floods-subscription");
    let (note_tx, notes) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .max_line_bytes(64 * 1024)
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .spawn(server_command("floods-subscription", Some(&wire)))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let mut sub = client
        .listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        })
        .map_err(|e| format!("listen failed: {e}"))?;
    let listen_id = sub.id().to_value();
    // The notifications come before the answer: every one was routed when
    // the call returns.
    let outcome = client.call_tool("publish", json!({ "n": 40, "kib": 4 }));
    expect_text("publish", outcome, "published")?;
    let mut events = 0;
    let end = loop {
        match sub.try_recv() {
            Ok(Some(SubscriptionEvent::ToolsListChanged)) => events += 1,
            Ok(Some(other)) => return Err(format!("an event of another kind: {other:?}")),
            Ok(None) => break None,
            Err(end) => break Some(end),
        }
    };
    // One more call: the cancellation was written before it.
    expect_text(
        "echo",
        client.call_tool("echo", json!({ "text": "x" })),
        "x",
    )?;
    close_ok(client)?;
    let cancels: Vec<Value> = wire
        .lines()
        .into_iter()
        .filter(|l| method_of(l) == Some("notifications/cancelled"))
        .collect();
    let noted: Vec<String> = notes
        .try_iter()
        .filter(|n| n.contains("did not read"))
        .collect();
    ensure!(
        (1..40).contains(&events),
        "the subscription delivered {events} of 40 events of 4 KiB with a bound of 64 KiB"
    );
    ensure!(
        end == Some(SubscriptionEnd::Overflowed),
        "after {events} events the subscription's end is {end:?}"
    );
    ensure!(
        cancels.len() == 1 && cancels[0]["params"]["requestId"] == listen_id,
        "the cancellations written: {cancels:?}; want one for the listen {listen_id}"
    );
    ensure!(noted.len() == 1, "the notes about it: {noted:?}");
    Ok(format!("{events} events held; {}", noted[0]))
}

/// `floods-progress`: a modern server whose `tools/call` of `progress`
/// sends `arguments.n` progress notifications (with the request's
/// `progressToken`) and `arguments.n` log messages, each carrying
/// `arguments.kib` KiB of text, then answers `progressed`. Any other tool
/// echoes. Requests are served one at a time, in order.
pub fn fake_floods_progress() -> ! {
    each_request(|out, id, method, msg| match method {
        "server/discover" => send(
            out,
            &reply(id, fake_discover("floods-progress", "floods progress")),
        ),
        "tools/call" if tool_name(msg) == "progress" => {
            let arg = |name: &str| {
                msg.pointer(&format!("/params/arguments/{name}"))
                    .and_then(Value::as_u64)
                    .unwrap_or(1) as usize
            };
            let token = msg
                .pointer("/params/_meta/progressToken")
                .cloned()
                .unwrap_or(Value::Null);
            let padding = "x".repeat(arg("kib") * 1024);
            for k in 0..arg("n") {
                send(
                    out,
                    &json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                        "params": { "progressToken": token, "progress": k, "message": padding } }),
                );
            }
            for k in 0..arg("n") {
                send(
                    out,
                    &json!({ "jsonrpc": "2.0", "method": "notifications/message",
                        "params": { "level": "info", "data": format!("{k} {padding}") } }),
                );
            }
            send(out, &reply(id, text_result("progressed")));
        }
        "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// The review's finding 2 for a request: its progress and log messages
/// wait for its caller in the same unbounded way until the caller waits.
/// With `max_line_bytes` at 64 KiB, a call whose caller does not wait yet
/// gets 40 progress notifications and 40 log messages of 4 KiB: those past
/// the bound (the line limit, in bytes of JSON waiting) are dropped, with
/// one note, and the call still gets its reply.
pub fn progress_and_logs_a_caller_does_not_take_are_bounded() -> Result<String, String> {
    let (note_tx, notes) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .max_line_bytes(64 * 1024)
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .spawn(server_command("floods-progress", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let progress = Arc::new(AtomicUsize::new(0));
    let logs = Arc::new(AtomicUsize::new(0));
    let (seen_progress, seen_logs) = (Arc::clone(&progress), Arc::clone(&logs));
    let options = RequestOptions::new()
        .on_progress(move |_| {
            seen_progress.fetch_add(1, Ordering::Relaxed);
        })
        .log(LoggingLevel::Info, move |_| {
            seen_logs.fetch_add(1, Ordering::Relaxed);
        });
    let call = client
        .start_request(
            "tools/call",
            json!({ "name": "progress", "arguments": { "n": 40, "kib": 4 } }),
            options,
        )
        .map_err(|e| format!("the call failed to start: {e}"))?;
    // Answered after every notification of the first: all were routed
    // when it returns, while the first call's caller did not wait.
    expect_text(
        "echo",
        client.call_tool("echo", json!({ "text": "x" })),
        "x",
    )?;
    let reply = call.wait().map(|raw| raw.get().to_owned());
    close_ok(client)?;
    let (progress, logs) = (
        progress.load(Ordering::Relaxed),
        logs.load(Ordering::Relaxed),
    );
    let noted: Vec<String> = notes.try_iter().filter(|n| n.contains("dropped")).collect();
    ensure!(
        reply.as_deref().is_ok_and(|r| r.contains("progressed")),
        "the call's reply: {reply:?}"
    );
    ensure!(
        (1..80).contains(&(progress + logs)),
        "the caller got {progress} progress notifications and {logs} log messages of 40 each, 4 KiB each, with a bound of 64 KiB"
    );
    ensure!(noted.len() == 1, "the notes about it: {noted:?}");
    Ok(format!(
        "{progress} progress and {logs} logs taken; {}",
        noted[0]
    ))
}

/// The review of issue 47 noticed: a line the client sends without a
/// caller to tell (a `notifications/cancelled`, a legacy server's answer)
/// was dropped without a word when the queue for a server that does not
/// read its input was full. It is noted, saying what was not sent and why.
pub fn a_cancellation_the_full_queue_refuses_is_noted() -> Result<String, String> {
    let (note_tx, notes) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .close_grace(Duration::from_millis(200))
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .spawn(server_command("stops-reading", None))
        .map_err(|e| format!("spawn: {e}"))?;
    let mut calls = Vec::new();
    // Requests of 1 MiB, then 64 KiB, 4 KiB and 256 bytes, each until one
    // is refused: at most about 1 KiB is left in the queue.
    for kib in [1024, 64, 4, 0] {
        let text = "x".repeat((kib * 1024).max(256));
        loop {
            let params = json!({ "name": "echo", "arguments": { "text": text } });
            match client.start_request("tools/call", params, RequestOptions::new()) {
                Ok(call) => calls.push(call),
                Err(_) => break,
            }
        }
    }
    let Some(call) = calls.pop() else {
        return Err("no request was queued".into());
    };
    let id = call.id().clone();
    // A reason of 4 KiB: more than what is left.
    call.cancel(Some(&"r".repeat(4096)));
    let _ = client.close();
    drop(calls);
    let want = format!("notifications/cancelled for request {id}");
    let noted: Vec<String> = notes.try_iter().filter(|n| n.contains(&want)).collect();
    ensure!(
        noted.len() == 1 && noted[0].contains("has not read"),
        "the notes about the cancellation of {id}: {noted:?}"
    );
    Ok(noted[0].clone())
}

/// `endless-pages`: answers `tools/list` with one tool and a `nextCursor`
/// of 1 MiB, another at every page, without end.
pub fn fake_endless_pages() -> ! {
    let mut page = 0u64;
    each_request(|out, id, method, _msg| match method {
        "server/discover" => send(out, &reply(id, fake_discover("endless-pages", "Pages."))),
        "tools/list" => {
            page += 1;
            let cursor = format!("{page}-{}", "c".repeat(1024 * 1024));
            let tools = json!([{ "name": "t", "inputSchema": { "type": "object" } }]);
            send(
                out,
                &reply(id, json!({ "tools": tools, "nextCursor": cursor })),
            );
        }
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// Review client15: a list iterator keeps the cursors it followed, to tell
/// a cycle; a server whose every page names a new cursor of a megabyte
/// (the line limit allows 16) must not make the client hold each of them
/// until `max_pages`: 64 pages of such cursors cost the client no more
/// than a few of them.
pub fn a_list_of_endless_huge_cursors_holds_a_bounded_size() -> Result<String, String> {
    let client = builder()
        .request_timeout(Duration::from_secs(60))
        .max_pages(64)
        .trace(|_| {})
        .spawn(server_command("endless-pages", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = vm_hwm_kib()?;
    let mut tools = client.tools();
    let (mut items, mut end) = (0, None);
    for tool in tools.by_ref() {
        match tool {
            Ok(_) => items += 1,
            Err(e) => end = Some(e),
        }
    }
    let after = vm_hwm_kib()?;
    drop(tools);
    close_ok(client)?;
    ensure!(
        items == 64
            && end
                .as_ref()
                .is_some_and(|e| e.to_string().contains("64 pages")),
        "{items} tools, then {end:?}"
    );
    let growth = after.saturating_sub(before);
    ensure!(
        growth < 24 * 1024,
        "peak RSS grew by {growth} kB for 64 pages with cursors of 1 MiB"
    );
    Ok(format!("VmHWM +{growth} kB"))
}
