//! The server as a child process: spawning it with piped standard streams,
//! forwarding its stderr, and shutting it down the way the spec says
//! (spec 2026-07-28 basic/transports/stdio, "Shutdown"): close its input,
//! wait, then SIGTERM, wait, then SIGKILL.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::client::notes::Notes;

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

/// The most of one stderr line the client keeps: its start goes to the
/// sink and the tail, cut, and the rest is read and dropped. Stderr is for
/// people; a line longer than this is a dump or a runaway, and the client's
/// memory for it must not depend on what the server writes.
pub(crate) const STDERR_LINE_BYTES: usize = 64 * 1024;

/// The last lines a server wrote to its stderr.
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Disconnected once the stderr thread has read everything.
    ended: Receiver<()>,
    /// Whether the stderr thread may still call the sink.
    pub gate: Arc<SinkGate>,
}

/// The stderr sink's gate: shut by `close`, after which the stderr thread
/// (still reading what a grandchild of the server writes) calls the sink
/// no more.
#[derive(Default)]
pub(crate) struct SinkGate {
    state: Mutex<GateState>,
    /// Signalled when a call of the sink returns.
    returned: Condvar,
}

#[derive(Default)]
struct GateState {
    shut: bool,
    calling: bool,
}

impl SinkGate {
    /// Runs `call` unless the gate is shut; says whether it ran.
    fn pass(&self, call: impl FnOnce()) -> bool {
        {
            let mut state = self.lock();
            if state.shut {
                return false;
            }
            state.calling = true;
        }
        call();
        self.lock().calling = false;
        self.returned.notify_all();
        true
    }

    /// Shuts the gate: no call of the sink begins after this returns; one
    /// under way is waited for until `deadline` (a sink that blocks
    /// returns in its own time).
    pub fn shut(&self, deadline: Instant) {
        let mut state = self.lock();
        state.shut = true;
        while state.calling {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = match self.returned.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl StderrTail {
    /// The last lines, oldest first, once the server's stderr ended (or
    /// after `patience`: a grandchild may hold the pipe open).
    pub fn lines(&self, patience: Duration) -> Vec<String> {
        let _ = self.ended.recv_timeout(patience);
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().cloned().collect()
    }

    /// Disconnected once the stderr thread has handed every line to its
    /// sink and ended (to wait on without a lock held).
    pub fn ended(&self) -> Receiver<()> {
        self.ended.clone()
    }
}

/// Spawns `command` with piped stdin, stdout and stderr; a thread hands
/// each stderr line to `sink` and keeps the last few, each cut at
/// [`STDERR_LINE_BYTES`]. A panic in `sink` is noted and caught: the thread
/// goes on reading, or the server would block on a full pipe.
pub(crate) fn spawn(
    command: &mut Command,
    sink: Arc<StderrSink>,
    notes: Notes,
) -> std::io::Result<Spawned> {
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
    let gate = Arc::new(SinkGate::default());
    let sink_gate = Arc::clone(&gate);
    thread::Builder::new()
        .name("mcp-client-stderr".into())
        .spawn(move || {
            let _end = end;
            // Ends when the child closes its stderr (it exits). Lines that
            // are not UTF-8 are shown lossily rather than ending the loop.
            let mut reader = BufReader::new(stderr);
            let mut buf = Vec::new();
            while let Some(len) = read_bounded_line(&mut reader, &mut buf, STDERR_LINE_BYTES) {
                let text = String::from_utf8_lossy(&buf);
                let mut line = text.trim_end_matches('\r').to_owned();
                if len > buf.len() {
                    line.push_str(&format!(" … [cut: {len} bytes in all]"));
                }
                sink_gate.pass(|| {
                    let _ = notes.guard("stderr", || sink(&line));
                });
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                if tail.len() == TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
                drop(tail);
                buf.clear();
            }
        })?;
    Ok(Spawned {
        child,
        stdin,
        stdout,
        stderr_tail: StderrTail { lines, ended, gate },
    })
}

/// Reads one line into `buf` (empty on entry), keeping at most `max` of its
/// bytes and dropping the rest as it is read, so that a line without end
/// costs no more than `max`. Returns the line's whole length without its
/// newline; `None` at the end of the stream (or a read error) with nothing
/// read.
fn read_bounded_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> Option<usize> {
    let (mut len, mut read) = (0, false);
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => &[],
        };
        if available.is_empty() {
            return read.then_some(len);
        }
        read = true;
        let newline = memchr::memchr(b'\n', available);
        let line = newline.unwrap_or(available.len());
        let keep = line.min(max.saturating_sub(buf.len()));
        buf.extend_from_slice(&available[..keep]);
        len += line;
        reader.consume(line + usize::from(newline.is_some()));
        if newline.is_some() {
            return Some(len);
        }
    }
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
    terminate_then_kill(child, grace)
}

/// SIGTERM, waits `grace`, then SIGKILL: for a child that will not see its
/// input close (it never read it). Always reaps the child.
pub(crate) fn terminate_then_kill(
    child: &mut Child,
    grace: Duration,
) -> std::io::Result<ExitStatus> {
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

#[cfg(test)]
mod tests {
    use super::read_bounded_line;

    #[test]
    fn a_line_past_the_bound_keeps_its_start_and_says_its_length() {
        let input = b"short\r\nxxxxxxxxxxyyyy\nend without newline";
        // A reader of 3 bytes at a time: lines span several reads.
        let mut reader = std::io::BufReader::with_capacity(3, &input[..]);
        let mut buf = Vec::new();
        let mut lines = Vec::new();
        while let Some(len) = read_bounded_line(&mut reader, &mut buf, 10) {
            lines.push((String::from_utf8(std::mem::take(&mut buf)).unwrap(), len));
        }
        assert_eq!(
            lines,
            [
                ("short\r".to_owned(), 6),
                ("xxxxxxxxxx".to_owned(), 14),
                ("end withou".to_owned(), 19),
            ]
        );
    }
}
