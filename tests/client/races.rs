//! Races between a server's death, its restart, `close` and the
//! subscriptions a client keeps alive across restarts.

use super::*;

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
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://watched".into()]),
        ..SubscriptionFilter::default()
    };
    let mut sub = client
        .listen(filter)
        .map_err(|e| format!("listen failed: {e}"))?;
    let event = next_event("before the death", &mut sub)?;
    ensure!(
        matches!(event, SubscriptionEvent::ResourceUpdated { .. }),
        "before the death: {event:?}"
    );
    let kept = client.task("kept-past-close");
    let outcome = client.call_tool("die", json!({}));
    ensure!(
        matches!(outcome, Err(Error::Disconnected)),
        "the call the server died on: {outcome:?}"
    );
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
