//! A legacy (initialize-era) server's own requests and cancellations, and
//! its `resources/subscribe` (issue 47, items 2 and 7): a server that
//! cancels its own request ends no subscription, a flood of its requests
//! costs a bounded number of threads, and a subscribe the client stopped
//! waiting for is undone.

use super::*;

/// `legacy-requests`: an initialize-era server with `resources.subscribe`
/// and `logging`. It keeps the URIs subscribed; a `resources/subscribe`
/// of a `slow://` URI is taken (cancellations are ignored), but answered
/// only when a line other than a `resources/subscribe` or a
/// `notifications/cancelled` arrives (after the client stopped waiting).
/// Tools:
/// - `subscribed`: the URIs subscribed now, sorted, as JSON text;
/// - `bump`: `notifications/resources/updated` for each URI subscribed;
/// - `cancel-own` (`arguments.id`): sends `ping` under that id, then
///   `notifications/cancelled` for it (its own request), then answers;
/// - `flood-asks` (`arguments.n`): sends `n` `elicitation/create`, then
///   `ping` `p-last`; when the answer to `p-last` comes, it sends the log
///   message `routed` and notes how many answers came before it; once
///   every answer came (20 s at most) it answers with the counts as JSON
///   text: `{"before": {"results", "errors"}, "results", "errors",
///   "codes"}`.
pub fn fake_legacy_requests() -> ! {
    let rx = incoming();
    let mut out = std::io::stdout().lock();
    let mut subscribed = BTreeSet::<String>::new();
    let mut held: Vec<Value> = Vec::new();
    while let Ok(msg) = rx.recv() {
        if !matches!(
            method_of(&msg),
            Some("resources/subscribe" | "notifications/cancelled")
        ) {
            for id in held.drain(..) {
                send(&mut out, &reply(&id, json!({})));
            }
        }
        let (Some(id), Some(method)) = (msg.get("id"), method_of(&msg)) else {
            continue;
        };
        let uri = msg["params"]["uri"].as_str().unwrap_or_default().to_owned();
        match method {
            "initialize" => {
                let capabilities = json!({
                    "tools": {},
                    "resources": { "subscribe": true },
                    "logging": {}
                });
                send(&mut out, &reply(id, legacy_initialize_result(capabilities)));
            }
            "resources/subscribe" => {
                subscribed.insert(uri.clone());
                if uri.starts_with("slow://") {
                    held.push(id.clone());
                } else {
                    send(&mut out, &reply(id, json!({})));
                }
            }
            "resources/unsubscribe" => {
                subscribed.remove(&uri);
                send(&mut out, &reply(id, json!({})));
            }
            "tools/call" if tool_name(&msg) == "subscribed" => {
                let list: Vec<&String> = subscribed.iter().collect();
                send(&mut out, &reply(id, text_result(&json!(list).to_string())));
            }
            "tools/call" if tool_name(&msg) == "bump" => {
                for uri in &subscribed {
                    let params = json!({ "uri": uri });
                    send(
                        &mut out,
                        &json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params }),
                    );
                }
                send(&mut out, &reply(id, text_result("bumped")));
            }
            "tools/call" if tool_name(&msg) == "cancel-own" => {
                let own = msg["params"]["arguments"]["id"].clone();
                send(
                    &mut out,
                    &json!({ "jsonrpc": "2.0", "id": own, "method": "ping" }),
                );
                let params = json!({ "requestId": own, "reason": "the server changed its mind" });
                send(
                    &mut out,
                    &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": params }),
                );
                send(&mut out, &reply(id, text_result("cancelled")));
            }
            "tools/call" if tool_name(&msg) == "flood-asks" => {
                let n = msg["params"]["arguments"]["n"].as_u64().unwrap_or(10);
                let summary = flood_asks(&mut out, &rx, n);
                send(&mut out, &reply(id, text_result(&summary.to_string())));
            }
            "tools/call" => send(&mut out, &reply(id, text_result(&echo_text(&msg)))),
            _ => send(&mut out, &error_reply(id, -32601, "Method not found", None)),
        }
    }
    std::process::exit(0);
}

/// `flood-asks` of [`fake_legacy_requests`].
fn flood_asks(out: &mut StdoutLock<'static>, rx: &Receiver<Value>, n: u64) -> Value {
    let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
    let mut lines = Vec::new();
    for k in 0..n {
        let ask = json!({ "jsonrpc": "2.0", "id": format!("e-{k}"), "method": "elicitation/create",
            "params": { "message": "Your name?", "requestedSchema": schema } });
        serde_json::to_writer(&mut lines, &ask).unwrap();
        lines.push(b'\n');
    }
    send_raw(out, &lines);
    send(
        out,
        &json!({ "jsonrpc": "2.0", "id": "p-last", "method": "ping" }),
    );
    let (mut results, mut errors) = (0, 0);
    let mut before = Value::Null;
    let mut codes = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while results + errors < n {
        let Ok(answer) = rx.recv_deadline(deadline) else {
            break;
        };
        match answer["id"].as_str() {
            Some("p-last") => {
                before = json!({ "results": results, "errors": errors });
                let params = json!({ "level": "info", "data": "routed" });
                send(
                    out,
                    &json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": params }),
                );
            }
            Some(id) if id.starts_with("e-") && answer.get("result").is_some() => results += 1,
            Some(id) if id.starts_with("e-") => {
                errors += 1;
                codes.insert(answer["error"]["code"].as_i64().unwrap_or(0));
            }
            _ => {}
        }
    }
    json!({ "before": before, "results": results, "errors": errors, "codes": codes })
}

fn legacy_client(wire: Option<&Wire>, builder: ClientBuilder) -> Result<Client, String> {
    let client = builder
        .era(EraPolicy::LegacyOnly)
        .spawn(server_command("legacy-requests", wire))
        .map_err(|e| format!("connecting failed: {e}"))?;
    ensure!(
        matches!(client.era(), Era::Legacy { .. }),
        "era {:?}",
        client.era()
    );
    Ok(client)
}

/// Item 2. Spec 2025-11-25 basic/utilities/cancellation: a cancellation
/// names a request "previously issued in the same direction", so a legacy
/// server's `notifications/cancelled` names one of its own requests, never
/// a subscription, whose id is the client's own and never on the wire.
pub fn a_legacy_servers_own_cancellation_ends_no_subscription() -> Result<String, String> {
    let client = legacy_client(None, builder().trace(|_| {}))?;
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://a".into()]),
        ..SubscriptionFilter::default()
    };
    let mut sub = client
        .listen(filter)
        .map_err(|e| format!("listen failed: {e}"))?;
    let own = serde_json::to_value(sub.id()).map_err(|e| e.to_string())?;
    expect_text(
        "cancel-own",
        client.call_tool("cancel-own", json!({ "id": own })),
        "cancelled",
    )?;
    expect_text("bump", client.call_tool("bump", json!({})), "bumped")?;
    let event = match sub.try_recv() {
        Ok(Some(event)) => event,
        other => {
            return Err(format!(
                "after the server cancelled its own request {own}, the subscription {own} gave {other:?}"
            ));
        }
    };
    ensure!(
        event
            == SubscriptionEvent::ResourceUpdated {
                uri: "mem://a".into()
            },
        "the event after the bump: {event:?}"
    );
    drop(sub);
    close_ok(client)?;
    Ok(String::new())
}

/// Item 7: a legacy server that sends a thousand requests at once gets a
/// bounded number answered by the application's handlers at a time (one
/// thread each); the rest are refused at once with an error, before the
/// reader reads on, instead of a thread each.
pub fn a_flood_of_legacy_server_requests_takes_bounded_threads() -> Result<String, String> {
    let (entered_tx, entered) = crossbeam_channel::unbounded::<()>();
    let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
    let (routed_tx, routed) = crossbeam_channel::unbounded::<()>();
    let client = legacy_client(
        None,
        builder()
            .trace(|_| {})
            .on_elicitation(move |_| {
                let _ = entered_tx.send(());
                // Until the test lets go (closes the channel).
                let _ = release.recv();
                let mut content = serde_json::Map::new();
                content.insert("name".into(), json!("x"));
                Ok(ElicitResult::accept(content))
            })
            .on_log(move |log| {
                if log.data == json!("routed") {
                    let _ = routed_tx.send(());
                }
            }),
    )?;
    let threads_before = thread_count()?;
    let summary = thread::scope(|s| {
        let call = s.spawn(|| client.call_tool("flood-asks", json!({ "n": 1000 })));
        // Every request was read and routed when the ping after them was
        // answered: the handlers that took one still block.
        let routed = routed.recv_timeout(WAIT);
        let threads = thread_count();
        drop(release_tx);
        let outcome = call.join().expect("the call's thread");
        (routed, threads, outcome)
    });
    let (routed, threads, outcome) = summary;
    routed.map_err(|_| "the server never heard the answer to its ping".to_owned())?;
    let threads = threads?;
    let text = match outcome {
        Ok(Outcome::Complete(result)) => text_of(&result).unwrap_or_default().to_owned(),
        other => return Err(format!("flood-asks: {other:?}")),
    };
    close_ok(client)?;
    // Every handler that took a request has returned: the server had all
    // the answers.
    let handled = entered.try_iter().count();
    let counts: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
    let grew = threads.saturating_sub(threads_before);
    ensure!(
        grew <= 40 && handled <= 32,
        "{grew} more threads while the handlers blocked, {handled} requests handled; the server counted {counts}"
    );
    ensure!(
        counts["results"] == json!(handled) && counts["errors"] == json!(1000 - handled),
        "{handled} handlers entered, the server counted {counts}"
    );
    ensure!(
        counts["before"] == json!({ "results": 0, "errors": 1000 - handled })
            && counts["codes"] == json!([-32603]),
        "the refusals: {counts}"
    );
    Ok(format!(
        "{handled} answered by handlers, +{grew} threads; {counts}"
    ))
}

/// Item 7: a legacy `resources/subscribe` the client stops waiting for (it
/// is left out of what the subscription accepted) is forgotten and undone
/// with `resources/unsubscribe`, so a late acceptance leaves the server
/// sending nothing nobody wants; the URIs are waited for together, not one
/// request timeout each.
pub fn a_legacy_subscribe_that_times_out_is_undone() -> Result<String, String> {
    let wire = Wire::new("legacy-slow-subscribe");
    let timeout = Duration::from_millis(300);
    let client = legacy_client(
        Some(&wire),
        builder().trace(|_| {}).request_timeout(timeout),
    )?;
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec![
            "mem://a".into(),
            "slow://x".into(),
            "slow://y".into(),
            "slow://z".into(),
        ]),
        ..SubscriptionFilter::default()
    };
    let started = Instant::now();
    let sub = client
        .listen(filter)
        .map_err(|e| format!("listen failed: {e}"))?;
    let took = started.elapsed();
    let accepted = sub.accepted().resource_subscriptions.clone();
    let left = match client.call_tool("subscribed", json!({})) {
        Ok(Outcome::Complete(result)) => text_of(&result).unwrap_or_default().to_owned(),
        other => return Err(format!("subscribed: {other:?}")),
    };
    drop(sub);
    close_ok(client)?;
    ensure!(
        accepted == Some(vec!["mem://a".to_owned()]),
        "accepted {accepted:?}"
    );
    ensure!(
        left == r#"["mem://a"]"#,
        "subscribed at the server after the listen: {left} (the wire: {:?})",
        methods(&wire.lines())
    );
    ensure!(
        took < timeout * 2,
        "the listen took {took:?} for three URIs unanswered within {timeout:?}"
    );
    Ok(format!("the listen took {}", ms(took)))
}

/// This process's thread count, from /proc.
fn thread_count() -> Result<usize, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("reading /proc/self/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| "no Threads in /proc/self/status".to_owned())
}
