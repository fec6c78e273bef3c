//! Starting a server (issue 49, item 3): silence is counted only once the
//! server has read the probe, so a server still being installed (a first
//! `npx` or `uvx` run) is not taken for a legacy one; and
//! `ClientBuilder::start_timeout` bounds the whole start.

use std::process::Command;
use std::time::{Duration, Instant};

use mcp_stdio::{Era, Error};

use super::{MODERN, SERVER_ENV, builder, close_ok};

/// The everything server, started after `delay` by a shell that reads
/// nothing meanwhile.
fn late_everything(delay: &str) -> Command {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let mut command = Command::new("sh");
    command
        .args(["-c", &format!("sleep {delay}; exec \"$0\"")])
        .arg(exe)
        .env(SERVER_ENV, "everything");
    command
}

/// A modern server that reads its input 1 s after it was started, with a
/// probe timeout of 300 ms: modern (before: legacy, the probe's silence
/// counted from the moment it was sent).
pub fn a_server_slow_to_read_the_probe_is_modern() -> Result<String, String> {
    let client = builder()
        .probe_timeout(Duration::from_millis(300))
        .spawn(late_everything("1"))
        .map_err(|e| format!("connecting failed: {e}"))?;
    ensure!(
        client.era()
            == Era::Modern {
                version: MODERN.into()
            },
        "era {:?}, want modern",
        client.era()
    );
    close_ok(client)?;
    Ok("modern".into())
}

/// A server that never reads its input fails the start at the start
/// timeout, with `Error::Timeout`, and is stopped at once (it cannot see
/// its input close).
pub fn start_timeout_bounds_a_server_that_never_reads() -> Result<String, String> {
    let started = Instant::now();
    let outcome = builder()
        .start_timeout(Duration::from_millis(500))
        .spawn(late_everything("30"));
    let took = started.elapsed();
    match outcome {
        Err(Error::Timeout) => {}
        Err(other) => return Err(format!("want Error::Timeout, got {other:?}")),
        Ok(client) => return Err(format!("connected: {:?}", client.era())),
    }
    ensure!(
        took < Duration::from_secs(5),
        "a start bounded at 500 ms took {took:?}"
    );
    Ok(format!("{took:?}"))
}
