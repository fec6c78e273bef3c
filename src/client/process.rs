//! The server as a child process: spawning it with piped standard streams,
//! forwarding its stderr, and shutting it down the way the spec says
//! (spec 2026-07-28 basic/transports/stdio, "Shutdown"): close its input,
//! wait, then SIGTERM, wait, then SIGKILL.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Where the lines a server writes to its stderr go.
pub(crate) type StderrSink = dyn Fn(&str) + Send + Sync;

/// A spawned server and its pipes.
pub(crate) struct Spawned {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
}

/// Spawns `command` with piped stdin, stdout and stderr; a thread hands
/// each stderr line to `sink`.
pub(crate) fn spawn(command: &mut Command, sink: Arc<StderrSink>) -> std::io::Result<Spawned> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(std::io::Error::other("the child's pipes were not set up"));
    };
    thread::Builder::new()
        .name("mcp-client-stderr".into())
        .spawn(move || {
            // Ends when the child closes its stderr (it exits).
            for line in BufReader::new(stderr).lines() {
                match line {
                    Ok(line) => sink(&line),
                    Err(_) => break,
                }
            }
        })?;
    Ok(Spawned {
        child,
        stdin,
        stdout,
    })
}

/// Waits for `child` to exit, up to `timeout`.
pub(crate) fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => return None,
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        // std has no blocking wait with a timeout: poll, backing off to
        // 20 ms, which bounds how late an exit is seen.
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// After the child's stdin was closed: waits `grace`, then SIGTERM and
/// waits `grace` again, then SIGKILL. Always reaps the child.
pub(crate) fn shut_down(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    if let Some(status) = wait_timeout(child, grace) {
        return Ok(status);
    }
    terminate(child);
    if let Some(status) = wait_timeout(child, grace) {
        return Ok(status);
    }
    let _ = child.kill();
    child.wait()
}

#[cfg(unix)]
fn terminate(child: &Child) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if let Ok(pid) = i32::try_from(child.id()) {
        // The child may have exited in between; then there is nothing to do.
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

#[cfg(not(unix))]
fn terminate(_child: &Child) {
    // No SIGTERM outside Unix: the escalation goes straight to kill.
}
