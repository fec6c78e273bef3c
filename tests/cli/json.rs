//! Issue 49, item 5: `--json` is JSON, all of it. Errors, progress, log
//! messages and notes are JSON objects on stderr, one a line, and nothing
//! the server did not send is printed without saying so.

use serde_json::Value;

use crate::{LEGACY, MODERN, Once, Run, Setup, cli, eof_setup};

pub const CHECKS: &[(&str, Once)] = &[
    ("json_errors_are_json", errors),
    ("json_usage_errors_are_json", usage_errors),
    (
        "json_progress_logs_and_the_wire_are_json",
        progress_and_logs,
    ),
    (
        "json_legacy_listen_says_the_client_made_its_acknowledgment",
        legacy_ack,
    ),
];

/// Every line of stderr, as JSON.
fn stderr_json(run: &Run) -> Result<Vec<Value>, String> {
    run.stderr
        .lines()
        .map(|line| serde_json::from_str(line).map_err(|e| format!("{e}: stderr line {line:?}")))
        .collect()
}

/// `--json call panic` left stdout empty and wrote text on stderr.
fn errors() -> Result<(), String> {
    let run = cli(MODERN, &["--json", "call", "panic"], "")?;
    run.expect_code(1)?.stdout_is("")?;
    let lines = stderr_json(&run)?;
    let [error] = lines.as_slice() else {
        return Err(format!("want one line on stderr: {lines:?}"));
    };
    let ok = error["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("the server answered tools/call panic with an error: "))
        && error["status"] == 1
        && error["rpcError"]["code"] == -32603;
    if !ok {
        return Err(format!("the error: {error}"));
    }
    Ok(())
}

fn usage_errors() -> Result<(), String> {
    let run = cli(MODERN, &["--json", "call", "echo", "text"], "")?;
    run.expect_code(2)?;
    let lines = stderr_json(&run)?;
    let [error] = lines.as_slice() else {
        return Err(format!("want one line on stderr: {lines:?}"));
    };
    if error["error"] != "an argument \"text\" is not key=value (nor a JSON object)"
        || error["status"] != 2
    {
        return Err(format!("the error: {error}"));
    }
    Ok(())
}

/// Progress and log messages were text (`progress 1/2 ...`, `log info ...`)
/// under `--json`; so was the wire.
fn progress_and_logs() -> Result<(), String> {
    let run = cli(MODERN, &["--json", "call", "progress", "steps=2"], "")?;
    run.expect_code(0)?;
    let lines = stderr_json(&run)?;
    let progress = lines
        .iter()
        .filter(|l| l["method"] == "notifications/progress")
        .count();
    if progress != 2 || lines[0]["params"]["progress"].as_f64() != Some(1.0) {
        return Err(format!("progress: {lines:?}"));
    }
    let run = cli(
        MODERN,
        &["--json", "call", "test_logging_tool", "--log-level", "info"],
        "",
    )?;
    run.expect_code(0)?;
    let lines = stderr_json(&run)?;
    if !lines
        .iter()
        .any(|l| l["method"] == "notifications/message" && l["params"]["data"] == "log message 1")
    {
        return Err(format!("logs: {lines:?}"));
    }
    let run = cli(MODERN, &["--json", "--wire", "call", "echo", "text=hi"], "")?;
    run.expect_code(0)?;
    let lines = stderr_json(&run)?;
    if !lines.iter().any(|l| {
        l["wire"] == "sent"
            && l["line"]
                .as_str()
                .is_some_and(|s| s.contains("\"server/discover\""))
    }) {
        return Err(format!("the wire: {lines:?}"));
    }
    Ok(())
}

/// The legacy era has no `subscriptions/listen`: the client subscribes with
/// `resources/subscribe` and makes the acknowledgment itself, which was
/// printed as if the server had sent it.
fn legacy_ack() -> Result<(), String> {
    let setup: Setup = eof_setup(LEGACY);
    let run = cli(
        setup,
        &["listen", "--tools", "--resource", "mem://counter", "--json"],
        "",
    )?;
    run.expect_code(0)?;
    let first = run.stdout.lines().next().unwrap_or_default();
    let ack: Value = serde_json::from_str(first).map_err(|e| format!("{e}: {first}"))?;
    if ack["method"] != "notifications/subscriptions/acknowledged"
        || ack["madeBy"] != "client"
        || ack["params"]["notifications"]["toolsListChanged"] != true
    {
        return Err(format!("the acknowledgment: {ack}"));
    }
    Ok(())
}
