//! Subscriptions across a server's death and restart: one that has ended
//! stays ended, and a `close` during a restart ends the live ones.

use super::*;

/// A subscription the server tore down is over: a later restart must not
/// send its listen again (the handle, still held, would never read the
/// new stream, and would never cancel it either: its end is recorded).
pub fn a_restart_does_not_reopen_an_ended_subscription() -> Result<String, String> {
    let wire = Wire::new("ended-sub");
    let client = builder()
        .trace(|_| {})
        .restart(RestartPolicy {
            max_restarts: 1,
            backoff: Duration::from_millis(10),
        })
        .spawn(server_command("dies-mid-request", Some(&wire)))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let first_pid = fake_pid(&client)?;
    let mut sub = watch_resource(&client)?;
    next_event("before the tear-down", &mut sub)?;
    expect_text(
        "the tear-down",
        client.call_tool("teardown", json!({})),
        "torn down",
    )?;
    expect_end("after the tear-down", &mut sub, SubscriptionEnd::Closed)?;
    die(&client)?;
    // Wait for the restarted server to answer.
    let deadline = Instant::now() + WAIT;
    loop {
        let pid = fake_pid(&client)?;
        if pid != first_pid
            && expect_text(
                "echo",
                client.call_tool("echo", json!({ "text": "again" })),
                "again",
            )
            .is_ok()
        {
            break;
        }
        ensure!(Instant::now() < deadline, "the server was not restarted");
        thread::sleep(Duration::from_millis(10));
    }
    let methods = methods(&wire.lines());
    let listens = methods
        .iter()
        .filter(|m| *m == "subscriptions/listen")
        .count();
    drop(sub);
    client.close().map_err(|e| format!("close failed: {e}"))?;
    ensure!(
        listens == 1,
        "the ended subscription was sent again on the restarted server: {methods:?}"
    );
    Ok(String::new())
}

/// A `close` that comes while a dead server waits for its restart ends every
/// live subscription `Disconnected`, as running out of restarts does:
/// nothing else will ever reach it. A `TaskHandle` kept past the close (as
/// an application that persists its tasks may) keeps the client's shared
/// state alive, so the end cannot come from that state being dropped.
pub fn close_during_a_restart_ends_subscriptions() -> Result<String, String> {
    let (note_tx, notes) = crossbeam_channel::unbounded::<String>();
    let client = builder()
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .restart(RestartPolicy {
            max_restarts: 1,
            // Long enough for `close` to come before the restart.
            backoff: Duration::from_millis(500),
        })
        .spawn(server_command("dies-mid-request", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let mut sub = watch_resource(&client)?;
    let event = next_event("before the death", &mut sub)?;
    ensure!(
        matches!(event, SubscriptionEvent::ResourceUpdated { .. }),
        "before the death: {event:?}"
    );
    let kept = client.task("kept-past-close");
    die(&client)?;
    // The death is noted once the subscription was told `Reconnecting` and
    // the restart decided on: `close` then comes during the backoff.
    let deadline = Instant::now() + WAIT;
    loop {
        match notes.recv_deadline(deadline) {
            Ok(note) if note.contains("the server exited") => break,
            Ok(_) => {}
            Err(_) => return Err("the death was never noted".into()),
        }
    }
    // The restart thread starts just after that note: let it begin its
    // backoff (the test passes on fixed code whatever this timing; on the
    // old code it only decides which of the two ways the end was lost).
    thread::sleep(Duration::from_millis(100));
    client.close().map_err(|e| format!("close failed: {e}"))?;
    let end = sub.recv_timeout(Duration::from_secs(3));
    drop(kept);
    ensure!(
        end == Err(SubscriptionEnd::Disconnected),
        "after close during the restart: {end:?}, want Err(Disconnected)"
    );
    Ok(String::new())
}

/// A subscription to the fake's watched resource.
fn watch_resource(client: &Client) -> Result<mcp_stdio::Subscription, String> {
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://watched".into()]),
        ..SubscriptionFilter::default()
    };
    client
        .listen(filter)
        .map_err(|e| format!("listen failed: {e}"))
}

/// Has the fake server die in the middle of a call.
fn die(client: &Client) -> Result<(), String> {
    let outcome = client.call_tool("die", json!({}));
    ensure!(
        matches!(outcome, Err(Error::Disconnected)),
        "the call the server died on: {outcome:?}"
    );
    Ok(())
}
