//! Issue 49, item 3: `--timeout` bounds the whole command, start-up
//! included, and a server that is slow to start is not taken for a legacy
//! one: the era probe waits while the server has not read it (a first
//! `npx` or `uvx` run fetches packages before the server runs), and a
//! fallback to the legacy era on silence is said in a note.

use std::time::{Duration, Instant};

use crate::{Once, SERVER_ENV, Setup, cli, me, run};

pub const CHECKS: &[(&str, Once)] = &[
    ("timeout_bounds_the_start", timeout_bounds_the_start),
    ("legacy_timeout_names_initialize_only", legacy_timeout),
    ("a_modern_server_slow_to_start_is_modern", slow_start),
    ("a_fallback_on_silence_is_noted", silent_fallback_noted),
    (
        "a_server_that_read_and_exited_is_not_waited_on",
        read_and_exited,
    ),
];

/// `mcp-stdio --timeout 1 info -- sleep 30` took 8 s: a fixed 5 s probe,
/// then `initialize` with its own timeout.
fn timeout_bounds_the_start() -> Result<(), String> {
    let started = Instant::now();
    let args = ["--timeout", "1", "info", "--", "sleep", "30"].map(String::from);
    let run = run(&args, &[], "")?;
    let took = started.elapsed();
    run.expect_code(3)?
        .one_error_line("the server did not answer while starting")?
        .one_error_line("within 1 s")?;
    if took > Duration::from_secs(4) {
        return Err(format!("--timeout 1 took {took:?}"));
    }
    Ok(())
}

/// `--era legacy` sends no `server/discover`, and its timeout says so.
fn legacy_timeout() -> Result<(), String> {
    let args = [
        "--era",
        "legacy",
        "--timeout",
        "1",
        "info",
        "--",
        "sleep",
        "30",
    ]
    .map(String::from);
    let run = run(&args, &[], "")?;
    run.expect_code(3)?
        .one_error_line("no answer to initialize within 1 s")?;
    if run.stderr.contains("server/discover") {
        return Err(format!("names a probe it did not send: {}", run.stderr));
    }
    Ok(())
}

/// A modern server that starts after 6 s (more than the probe's 5 s) was
/// spoken to as legacy.
fn slow_start() -> Result<(), String> {
    let script = "sleep 6; exec \"$0\"";
    let args = ["info", "--", "sh", "-c", script, &me()].map(String::from);
    run(&args, &[(SERVER_ENV, "everything")], "")?
        .expect_code(0)?
        .stdout_has("era:          modern (2026-07-28)\n")?
        .stderr_has("mcp-stdio: note: the server has not read its input yet: still starting")?;
    Ok(())
}

/// A legacy server that reads `server/discover` and says nothing is spoken
/// to with `initialize` after the probe's 5 s, and the command line says
/// so (before, silently: only `--wire` showed the client's note).
fn silent_fallback_noted() -> Result<(), String> {
    let setup = Setup {
        mode: "fake:silent-legacy",
        era: "auto",
    };
    let run = cli(setup, &["info"], "")?;
    run.expect_code(0)?
        .stdout_has("era:          legacy (2025-11-25, initialize: no answer to server/discover within 5 s)\n")?
        .stderr_has("mcp-stdio: note: speaking the legacy era (initialize): no answer to server/discover within 5 s (--era modern or --era legacy chooses)")?;
    Ok(())
}

/// A server that reads its first line and exits, a child of it holding
/// its output open (a wrapper that died): its end is not seen on the
/// output, and the probe, then the `initialize` of the second start that
/// follows a death on the probe, were waited on to the end of `--timeout`
/// (8.5 s of `--timeout 8`, found by hand on the review's
/// `sleep 10 & exit 3`, when the probe's write came after the exit).
fn read_and_exited() -> Result<(), String> {
    let started = Instant::now();
    let script = "read line; sleep 10 & exit 3";
    let args = ["--timeout", "8", "info", "--", "sh", "-c", script].map(String::from);
    let run = run(&args, &[], "")?;
    let took = started.elapsed();
    run.expect_code(3)?
        .one_error_line("the server exited during start-up (exit status: 3)")?;
    if took > Duration::from_secs(4) {
        return Err(format!("a server that exited was waited on for {took:?}"));
    }
    Ok(())
}
