//! The stdio link: the server as a child process in a process group of
//! its own, its stdout read line by line (each line bounded, a bounded
//! number and size read ahead), its stderr kept; every server it starts
//! is killed with its group when its session ends.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;

use super::driver::{Budget, Incoming, Link, MAX_LINE, READ_AHEAD_LINES, Session, Transcript};

/// The stderr lines kept (the last ones).
const STDERR_LINES: usize = 200;

/// Starts the server: a session over its stdin and stdout.
pub fn spawn(argv: &[String], transcript: &Transcript) -> Result<Session, String> {
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A group of its own: the whole tree is ended with the session,
    // and a terminal's Ctrl-C goes to this process only.
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "cannot start the server: {:?} was not found (is it installed, and on PATH?)",
            argv[0]
        ),
        _ => format!("cannot start the server {:?}: {e}", argv[0]),
    })?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    // Bounded: a server that floods its output waits for the checks
    // (and is killed with its session).
    let (tx, incoming) = crossbeam_channel::bounded(READ_AHEAD_LINES);
    let budget = Budget::new();
    let reader_budget = Arc::clone(&budget);
    std::thread::Builder::new()
        .name("check-stdout".into())
        .spawn(move || read_lines(stdout, &tx, &reader_budget))
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    let log = Arc::new(Mutex::new(StderrLog::default()));
    let sink = Arc::clone(&log);
    let evidence = transcript.clone();
    std::thread::Builder::new()
        .name("check-stderr".into())
        .spawn(move || read_stderr(stderr, &sink, &evidence))
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    transcript.note(&format!("started {}", argv.join(" ")));
    transcript.started(child.id());
    let mut session = Session::new(
        Box::new(StdioLink {
            child,
            stdin,
            transcript: transcript.clone(),
        }),
        incoming,
        budget,
        transcript,
        log,
    );
    session.starting = true;
    Ok(session)
}

/// The stdio link: the child and its input.
pub struct StdioLink {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Where its pid was noted for `Transcript::kill_servers`, forgotten
    /// once it is reaped.
    transcript: Transcript,
}

impl Link for StdioLink {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(std::io::Error::other("the server's input is closed"));
        };
        stdin.write_all(bytes)?;
        stdin.flush()
    }

    fn close_input(&mut self) {
        self.stdin = None;
    }

    fn child(&mut self) -> Option<&mut Child> {
        Some(&mut self.child)
    }
}

impl Drop for StdioLink {
    /// The server and whatever it started (its process group) are ended:
    /// a check never leaves a process behind.
    fn drop(&mut self) {
        self.stdin = None;
        kill_group(&mut self.child);
        // Forgotten before it is reaped: once reaped its pid may be
        // another process's, which a later `kill_servers` must not reach.
        self.transcript.forget(self.child.id());
        let _ = self.child.wait();
    }
}

/// SIGKILL to the child's process group (it was started in one of its
/// own), then to the child.
fn kill_group(child: &mut Child) {
    kill_pid_group(child.id());
    let _ = child.kill();
}

/// SIGKILL to the process group led by `pid`.
pub fn kill_pid_group(pid: u32) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        if let Ok(pid) = i32::try_from(pid) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// The stderr of a stdio server: its last lines, and whether any was not
/// UTF-8.
#[derive(Debug, Default)]
pub struct StderrLog {
    pub lines: VecDeque<String>,
    pub total: usize,
    pub not_utf8: usize,
}

/// Reads the server's stdout line by line (each cut at `MAX_LINE`, the
/// lines read ahead within `budget`) until its end.
fn read_lines(stdout: impl Read, tx: &Sender<Incoming>, budget: &Arc<Budget>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut line = Vec::new();
        let mut dropped = false;
        let ended = loop {
            let available = match reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break true,
            };
            if available.is_empty() {
                break true;
            }
            let (take, found) = match memchr::memchr(b'\n', available) {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            let room = MAX_LINE.saturating_sub(line.len());
            let keep = if found { take - 1 } else { take };
            line.extend_from_slice(&available[..keep.min(room)]);
            dropped |= keep > room;
            reader.consume(take);
            if found {
                break false;
            }
        };
        if !line.is_empty() || !ended {
            let Some(lease) = budget.lease(line.len()) else {
                return;
            };
            let incoming = if dropped {
                Incoming::Cut(line, lease)
            } else {
                Incoming::Line(line, lease)
            };
            if tx.send(incoming).is_err() {
                return;
            }
        }
        if ended {
            let _ = tx.send(Incoming::Eof);
            return;
        }
    }
}

/// Keeps the server's stderr: its last lines, counted, each in evidence.
fn read_stderr(stderr: impl Read, log: &Mutex<StderrLog>, evidence: &Transcript) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.by_ref().take(64 * 1024).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let utf8 = std::str::from_utf8(&line).is_ok();
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        evidence.push("stderr", &text);
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        log.total += 1;
        if !utf8 {
            log.not_utf8 += 1;
        }
        log.lines.push_back(text);
        if log.lines.len() > STDERR_LINES {
            log.lines.pop_front();
        }
    }
}
