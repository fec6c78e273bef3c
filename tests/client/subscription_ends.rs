//! A subscription that has ended stays ended across restarts.

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
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://watched".into()]),
        ..SubscriptionFilter::default()
    };
    let mut sub = client
        .listen(filter)
        .map_err(|e| format!("listen failed: {e}"))?;
    next_event("before the tear-down", &mut sub)?;
    expect_text(
        "the tear-down",
        client.call_tool("teardown", json!({})),
        "torn down",
    )?;
    expect_end("after the tear-down", &mut sub, SubscriptionEnd::Closed)?;
    let outcome = client.call_tool("die", json!({}));
    ensure!(
        matches!(outcome, Err(Error::Disconnected)),
        "the call the server died on: {outcome:?}"
    );
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
