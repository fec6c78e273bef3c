//! The server as a child process: spawning it with piped standard streams,
//! forwarding its stderr, and shutting it down the way the spec says
//! (spec 2026-07-28 basic/transports/stdio, "Shutdown"): close its input,
//! wait, then SIGTERM, wait, then SIGKILL.
//!
//! Why a process group: a server is often started through a wrapper
//! (`npx pkg`, `uvx pkg`, `sh -c '...'`, `docker run`), and the process
//! the client spawns is then not the server but its parent. Signalled
//! alone, the wrapper dies and the real server, which may ignore the end
//! of its input, runs on, orphaned. On Unix the server is spawned in a
//! process group of its own (unless `ClientBuilder::own_process_group`
//! says no), and the shutdown is the group's: after its input closes the
//! whole group is given the grace to exit, then the group gets SIGTERM,
//! the grace again, then SIGKILL (the Python SDK's `stdio_client` does
//! the same with a session of its own and `killpg`). A process that
//! leaves the group (a daemon's `setsid`) is out of reach, by design. A
//! member that died but is not reaped yet keeps the group alive: where
//! orphans go to a process that does not reap them (a container without
//! an init), the waits run out their grace.
//!
//! The group's id is its leader's pid, the server's, which the client
//! reaps: POSIX keeps a process group's id from being reused while the
//! group has a member, and the group is signalled only while a look just
//! before found one (`group_lives`), so a signal meant for a group that
//! has emptied reaches no other process unless the id was taken again
//! within those milliseconds, which needs the system's pids to wrap. So
//! the leader is reaped by the shutdown alone: a server whose death is
//! noted before it is left a zombie, which holds the group's id (Linux;
//! elsewhere it is reaped then, and a group it left behind that empties
//! later frees the id before `close` signals it).

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
///
/// With `own_group`, on Unix, the server leads a process group of its own
/// (`CommandExt::process_group(0)`, which replaces a group set on
/// `command`), and [`shut_down`] and [`terminate_then_kill`] end the
/// group: everything the server started that stayed in it. What that
/// costs: the terminal's Ctrl-C (and Ctrl-\, Ctrl-Z) goes to the
/// foreground process group, which the server is no longer in, so it
/// reaches the application alone, which ends the server (by `close`, or
/// by the end of the server's input when the application exits); and a
/// server that opens the terminal (`/dev/tty`) to read from it is stopped
/// as a background job is (SIGTTIN). Its standard streams are pipes, so
/// no server that speaks MCP on them reads the terminal through them.
pub(crate) fn spawn(
    command: &mut Command,
    own_group: bool,
    sink: Arc<StderrSink>,
    notes: Notes,
) -> std::io::Result<Spawned> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if own_group {
            command.process_group(0);
        }
    }
    #[cfg(not(unix))]
    let _ = own_group;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            let program = command.get_program().to_string_lossy();
            // A `pre_exec` hook that calls `setsid` fails in a group
            // leader (the group of its own, set before the hook runs): EPERM.
            let hint = if own_group && e.raw_os_error() == Some(1) {
                " (if the command's pre_exec calls setsid, turn ClientBuilder::own_process_group off)"
            } else {
                ""
            };
            std::io::Error::new(e.kind(), format!("could not start {program:?}: {e}{hint}"))
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

/// Waits for `child` to exit, up to `timeout`, without reaping it where
/// the system can (Linux: `waitid` with `WNOWAIT`): a dead server is
/// reaped by the shutdown that ends its process group, and until then
/// its zombie holds the group's id. Reaped when its death was noted, its
/// pid was free for any process to take while the client stayed open,
/// and `close` signalled the group of whatever took it (review client16;
/// `tests/client`
/// `tree::close_of_a_dead_server_spares_the_group_that_took_its_pid`).
pub(crate) fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = crate::deadline::from_now(timeout);
    let mut pause = Duration::from_millis(1);
    loop {
        match peek(child) {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => return None,
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Whether `child` exited, and how, leaving it unreaped.
#[cfg(any(
    target_os = "android",
    all(target_os = "linux", not(target_env = "uclibc"))
))]
fn peek(child: &mut Child) -> std::io::Result<Option<ExitStatus>> {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    use nix::unistd::Pid;
    use std::os::unix::process::ExitStatusExt;
    let Ok(pid) = i32::try_from(child.id()) else {
        return child.try_wait();
    };
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(Pid::from_raw(pid)), flags) {
        Ok(WaitStatus::Exited(_, code)) => Ok(Some(ExitStatus::from_raw((code & 0xff) << 8))),
        Ok(WaitStatus::Signaled(_, signal, core)) => Ok(Some(ExitStatus::from_raw(
            signal as i32 | if core { 0x80 } else { 0 },
        ))),
        Ok(_) => Ok(None),
        // Reaped already (ECHILD): std keeps its status.
        Err(_) => child.try_wait(),
    }
}

/// Elsewhere the child is reaped.
#[cfg(not(any(
    target_os = "android",
    all(target_os = "linux", not(target_env = "uclibc"))
)))]
fn peek(child: &mut Child) -> std::io::Result<Option<ExitStatus>> {
    child.try_wait()
}

/// After the child's stdin was closed: waits `grace` for it to exit (with
/// `group`, for its whole process group: what a wrapper's server does at
/// the end of its input, or what a server left running when it exited),
/// then SIGTERM and waits `grace` again, then SIGKILL. Always reaps the
/// child.
pub(crate) fn shut_down(
    child: &mut Child,
    grace: Duration,
    group: bool,
) -> std::io::Result<ExitStatus> {
    let pgid = group_id(child, group);
    let mut status = None;
    let deadline = crate::deadline::from_now(grace);
    match (wait_gone(child, &mut status, pgid, deadline), status) {
        (true, Some(status)) => Ok(status),
        _ => escalate(child, status, pgid, grace),
    }
}

/// SIGTERM, waits `grace`, then SIGKILL (to the child's process group
/// with `group`): for a child that will not see its input close (it never
/// read it). Always reaps the child.
pub(crate) fn terminate_then_kill(
    child: &mut Child,
    grace: Duration,
    group: bool,
) -> std::io::Result<ExitStatus> {
    let pgid = group_id(child, group);
    escalate(child, None, pgid, grace)
}

/// SIGTERM to the group `pgid` (else to the child, unless it exited:
/// `status`), waits `grace` for them, then SIGKILL.
fn escalate(
    child: &mut Child,
    mut status: Option<ExitStatus>,
    pgid: Option<i32>,
    grace: Duration,
) -> std::io::Result<ExitStatus> {
    terminate(child, status.is_none(), pgid);
    let deadline = crate::deadline::from_now(grace);
    if !wait_gone(child, &mut status, pgid, deadline)
        && let Some(pgid) = pgid
    {
        // Before the leader is reaped, when it still runs: its pid holds
        // the group's id.
        kill_group(pgid);
    }
    match status {
        Some(status) => Ok(status),
        None => {
            let _ = child.kill();
            child.wait()
        }
    }
}

/// Polls until `deadline` for `child` to exit (its status kept in
/// `status`, which may hold it already) and, with `pgid`, for its process
/// group to be empty too; says whether both came. std has no blocking
/// wait with a timeout: the poll backs off to 20 ms, which bounds how
/// late an exit is seen.
fn wait_gone(
    child: &mut Child,
    status: &mut Option<ExitStatus>,
    pgid: Option<i32>,
    deadline: Instant,
) -> bool {
    let mut pause = Duration::from_millis(1);
    loop {
        if status.is_none() {
            match child.try_wait() {
                Ok(found) => *status = found,
                Err(_) => return false,
            }
        }
        if status.is_some() && !pgid.is_some_and(group_lives) {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The process group `child` leads, when it was spawned with one of its
/// own (on Unix).
fn group_id(child: &Child, group: bool) -> Option<i32> {
    #[cfg(unix)]
    {
        // A group id of 1 or less means something else to killpg(2).
        (i32::try_from(child.id()).ok()).filter(|&pgid| group && pgid > 1)
    }
    #[cfg(not(unix))]
    {
        let _ = (child, group);
        None
    }
}

/// SIGTERM to the group `pgid`, or, without a group or when it has no
/// member left (the server moved itself out of it), to the child, unless
/// it exited (`runs`): its pid may be another process's then.
#[cfg(unix)]
fn terminate(child: &Child, runs: bool, pgid: Option<i32>) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if pgid.is_some_and(|pgid| signal_group(pgid, Signal::SIGTERM)) {
        return;
    }
    if let (true, Ok(pid)) = (runs, i32::try_from(child.id())) {
        // The child may have exited in between; then there is nothing to do.
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

#[cfg(not(unix))]
fn terminate(_child: &Child, _runs: bool, _pgid: Option<i32>) {
    // No SIGTERM outside Unix: the escalation goes straight to kill.
}

/// SIGKILL to the process group `pgid`.
#[cfg(unix)]
fn kill_group(pgid: i32) {
    // A group that emptied meanwhile has nothing to kill.
    let _ = signal_group(pgid, nix::sys::signal::Signal::SIGKILL);
}

#[cfg(not(unix))]
fn kill_group(_pgid: i32) {}

/// Sends `signal` to the process group `pgid`; says whether it had a
/// member to send it to.
#[cfg(unix)]
fn signal_group(pgid: i32, signal: nix::sys::signal::Signal) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::killpg;
    use nix::unistd::Pid;
    // EPERM: members this process may not signal (another user's, after a
    // setuid program), which still live.
    !matches!(killpg(Pid::from_raw(pgid), signal), Err(Errno::ESRCH))
}

/// Whether the process group `pgid` has a member left (a zombie not yet
/// reaped counts). Only ESRCH says it has none; EPERM is members this
/// process may not signal.
#[cfg(unix)]
fn group_lives(pgid: i32) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::killpg;
    use nix::unistd::Pid;
    !matches!(killpg(Pid::from_raw(pgid), None), Err(Errno::ESRCH))
}

#[cfg(not(unix))]
fn group_lives(_pgid: i32) -> bool {
    false
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
