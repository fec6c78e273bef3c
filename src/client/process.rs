//! The server as a child process: spawning it with piped standard streams,
//! forwarding its stderr, and shutting it down the way the spec says
//! (spec 2026-07-28 basic/transports/stdio, "Shutdown"): close its input,
//! wait, then SIGTERM, wait, then SIGKILL.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

/// Where the lines a server writes to its stderr go.
pub(crate) type StderrSink = dyn Fn(&str) + Send + Sync;

/// A spawned server and its pipes.
pub(crate) struct Spawned {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    /// The last lines of its stderr, to say why it failed to start.
    pub stderr_tail: StderrTail,
}

/// How many of the last stderr lines [`StderrTail`] keeps.
const TAIL_LINES: usize = 10;

/// The last lines a server wrote to its stderr.
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Disconnected once the stderr thread has read everything.
    ended: Receiver<()>,
}

impl StderrTail {
    /// The last lines, oldest first, once the server's stderr ended (or
    /// after `patience`: a grandchild may hold the pipe open).
    pub fn lines(&self, patience: Duration) -> Vec<String> {
        let _ = self.ended.recv_timeout(patience);
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().cloned().collect()
    }
}

/// Spawns `command` with piped stdin, stdout and stderr; a thread hands
/// each stderr line to `sink` and keeps the last few.
pub(crate) fn spawn(command: &mut Command, sink: Arc<StderrSink>) -> std::io::Result<Spawned> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            let program = command.get_program().to_string_lossy();
            std::io::Error::new(e.kind(), format!("could not start {program:?}: {e}"))
        })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(std::io::Error::other("the child's pipes were not set up"));
    };
    let lines = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
    // Nothing is ever sent: the receiver sees the end when the thread drops
    // its sender.
    let (end, ended) = crossbeam_channel::bounded::<()>(0);
    let tail = Arc::clone(&lines);
    thread::Builder::new()
        .name("mcp-client-stderr".into())
        .spawn(move || {
            let _end = end;
            // Ends when the child closes its stderr (it exits). Lines that
            // are not UTF-8 are shown lossily rather than ending the loop.
            let mut reader = BufReader::new(stderr);
            let mut buf = Vec::new();
            while let Ok(n @ 1..) = reader.read_until(b'\n', &mut buf) {
                let text = String::from_utf8_lossy(&buf[..n]);
                let line = text.trim_end_matches(['\n', '\r']);
                sink(line);
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                if tail.len() == TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line.to_owned());
                drop(tail);
                buf.clear();
            }
        })?;
    Ok(Spawned {
        child,
        stdin,
        stdout,
        stderr_tail: StderrTail { lines, ended },
    })
}

/// Waits for `child` to exit, up to `timeout`.
pub(crate) fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = crate::deadline::from_now(timeout);
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
