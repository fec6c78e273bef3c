//! A server started through a wrapper (`npx pkg`, `uvx pkg`, `sh -c`,
//! `docker run`): the process the client spawns is not the server, which is
//! its child. `close`, and a start that fails, end the whole tree, not the
//! wrapper alone: a grandchild that ignores the end of its input (or
//! SIGTERM) must not outlive them.
//!
//! The wrapper here is `sh -c`, which runs this binary as a fake server in
//! the background with the shell's own input, and waits for it; the fake
//! is the client's grandchild.

use super::*;

/// How long a grandchild may take to be gone after `close` returned
/// (SIGKILL is not waited for, and an orphan is reaped by init).
const GONE: Duration = Duration::from_secs(2);

/// `sh -c` as the server: `head`, then this binary in `mode` in the
/// background, its input the shell's (a non-interactive shell gives a
/// background job `/dev/null` otherwise; fd 3 carries the input past
/// that), its pid written to `pid_file` when there is one, then `wait`
/// (the shell reads nothing and exits when the fake does, or when a
/// signal ends it).
fn wrapped(mode: &str, head: &str, pid_file: Option<&Wire>) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut command = Command::new("sh");
    let script = format!(
        r#"{head} exec 3<&0; "$0" <&3 3<&- & {} wait"#,
        if pid_file.is_some() {
            r#"echo $! > "$1";"#
        } else {
            ""
        }
    );
    command.arg("-c").arg(script).arg(exe).env(SERVER_ENV, mode);
    if let Some(file) = pid_file {
        command.arg(&file.path);
    }
    Ok(command)
}

/// Waits up to [`GONE`] for `pid` to be gone (a zombie counts: its
/// parent's to reap); one still running is this test's to end, and fails
/// it.
fn gone(pid: u32, what: &str, after: &str) -> Result<(), String> {
    let deadline = Instant::now() + GONE;
    loop {
        match process_state(pid) {
            None | Some('Z') => return Ok(()),
            Some(state) if Instant::now() >= deadline => {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                return Err(format!(
                    "{what} (pid {pid}) still runs {} after {after} (state {state})",
                    ms(GONE)
                ));
            }
            Some(_) => thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Closes a client of a wrapped server whose pid is in its instructions
/// (`pid <n>`), and sees that server gone.
fn close_and_see_gone(client: Client, what: &str) -> Result<String, String> {
    let pid = fake_pid(&client)?;
    let started = Instant::now();
    let closed = client.close();
    let took = started.elapsed();
    gone(pid, what, "close returned")?;
    ensure!(closed.is_ok(), "close failed: {closed:?}");
    Ok(format!("close took {}", ms(took)))
}

/// The server under `sh -c` ignores the end of its input (the wrapper
/// waits for it): after the grace, SIGTERM must reach it, not only the
/// wrapper. Before, the wrapper alone was sent SIGTERM, died, and the
/// server ran on, orphaned.
pub fn close_ends_the_server_a_wrapper_started() -> Result<String, String> {
    let client = builder()
        .trace(|_| {})
        .close_grace(Duration::from_millis(200))
        .spawn(wrapped("ignores-eof", "", None)?)
        .map_err(|e| format!("connecting failed: {e}"))?;
    close_and_see_gone(client, "the server under the wrapper")
}

/// The same, with a wrapper and a server that ignore SIGTERM: SIGKILL
/// must reach the server too.
pub fn close_kills_the_server_a_wrapper_started_that_ignores_sigterm() -> Result<String, String> {
    let client = builder()
        .trace(|_| {})
        .close_grace(Duration::from_millis(200))
        .spawn(wrapped("ignores-sigterm", r#"trap "" TERM;"#, None)?)
        .map_err(|e| format!("connecting failed: {e}"))?;
    close_and_see_gone(
        client,
        "the server under the wrapper, which ignores SIGTERM,",
    )
}

/// A server that exits at the end of its input, but leaves a child of its
/// own running (which holds its stdout and ignores everything): `close`
/// saw the server exit and returned, and the child ran on.
pub fn close_ends_what_the_server_left_running_when_it_exited() -> Result<String, String> {
    let client = builder()
        .trace(|_| {})
        .close_grace(Duration::from_millis(200))
        .spawn(server_command("grandchild-in-group", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let grandchild: u32 = client
        .instructions()
        .and_then(|i| i.strip_prefix("grandchild ")?.parse().ok())
        .ok_or("no grandchild pid in the instructions")?;
    let closed = client.close();
    gone(grandchild, "the server's child", "close returned")?;
    ensure!(closed.is_ok(), "close failed: {closed:?}");
    Ok(String::new())
}

/// A start that fails (the server under the wrapper never reads its
/// input) stops what it spawned: the wrapper, and the server under it.
pub fn a_failed_start_ends_the_server_a_wrapper_started() -> Result<String, String> {
    let pid_file = Wire::new("pid");
    let started = builder()
        .trace(|_| {})
        .close_grace(Duration::from_millis(200))
        .start_timeout(Duration::from_millis(500))
        .spawn(wrapped("holds-stdout", "", Some(&pid_file))?);
    ensure!(
        started.is_err(),
        "a server that reads nothing connected: {started:?}"
    );
    let text = std::fs::read_to_string(&pid_file.path).unwrap_or_default();
    let pid: u32 = text
        .trim()
        .parse()
        .map_err(|_| format!("the wrapper wrote no pid: {text:?}"))?;
    gone(pid, "the server under the wrapper", "the start failed")?;
    Ok(String::new())
}

/// The process group of `pid` (`/proc/PID/stat`, Linux).
fn process_group(pid: &str) -> Result<u32, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    let fields = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    fields
        .split_whitespace()
        .nth(2)
        .and_then(|pgrp| pgrp.parse().ok())
        .ok_or_else(|| format!("no process group in {stat:?}"))
}

/// Guard: a spawned server leads a process group of its own by default,
/// and stays in the application's with `own_process_group(false)` (whose
/// `close` then signals it alone).
pub fn a_spawned_server_leads_a_process_group_of_its_own_unless_told_not_to()
-> Result<String, String> {
    let ours = process_group("self")?;
    for own in [true, false] {
        let client = builder()
            .trace(|_| {})
            .close_grace(Duration::from_millis(200))
            .own_process_group(own)
            .spawn(server_command("ignores-eof", None))
            .map_err(|e| format!("connecting failed: {e}"))?;
        let pid = fake_pid(&client)?;
        let group = process_group(&pid.to_string());
        let closed = client.close();
        let want = if own { pid } else { ours };
        ensure!(
            group == Ok(want),
            "own_process_group({own}): the server (pid {pid}) is in group {group:?}, want {want} (this process's: {ours})"
        );
        ensure!(closed.is_ok(), "close failed: {closed:?}");
        no_zombie(pid)?;
    }
    Ok(String::new())
}
