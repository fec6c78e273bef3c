//! `proxy::serve_as` behind a spawned server that dies before it
//! acknowledges the proxy's listen (`follow_list_changes`, which waits
//! for the restart with `Client::wait_restarted` and listens again): the
//! wait ends with the restarts or the client, and the listen is not sent
//! without end.

use super::proxy_setup::{
    LineByLine, caller_of, events, proxy_in_front, record, restarting, start_noted,
};
use super::*;
use std::io::BufReader;

/// The everything server, its input read a line at a time; each start
/// appends `{"event":"started"}` to the wire file, and each listen it
/// reads `{"event":"listen"}`. `exits-at-every-listen` exits (status 9) as
/// it reads a `subscriptions/listen`, before the server sees it;
/// `exits-at-first-listen` does so on its first start only, and every
/// later start refuses the listen (`-32601`: it reaches the server as a
/// method it does not know).
pub fn fake_exits_at_listen(every_time: bool) -> ! {
    let (path, first) = start_noted();
    let exit = every_time || first;
    let reader = LineByLine::new(move |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line).into_owned();
        if text.contains("\"subscriptions/listen\"") {
            record(&path, "listen");
            if exit {
                std::process::exit(9);
            }
            *line = text
                .replace("\"subscriptions/listen\"", "\"subscriptions/unknown\"")
                .into_bytes();
        }
        Ok(())
    });
    let server = everything::build();
    let _ = server.serve(Transport::new(BufReader::new(reader), std::io::stdout()));
    std::process::exit(0)
}

/// The threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

/// A builder of the client behind the proxy whose notes go to the
/// receiver returned with it (`ClientBuilder::trace`).
fn noting() -> (ClientBuilder, Receiver<String>) {
    let (note_tx, notes) = crossbeam_channel::unbounded::<String>();
    let client = builder().trace(move |note| {
        let _ = note_tx.send(note.to_owned());
    });
    (client, notes)
}

/// This binary as the server `mode`, run by a script that removes itself
/// as it starts: its first start runs, and every restart fails to spawn
/// (its program is gone).
fn vanishing_server(mode: &str, wire: &Wire) -> Result<Command, String> {
    use std::os::unix::fs::PermissionsExt;
    let script = wire.path.with_extension("sh");
    let exe = std::env::current_exe().map_err(|e| format!("no exe: {e}"))?;
    std::fs::write(
        &script,
        format!("#!/bin/sh\nrm -f -- \"$0\"\nexec '{}'\n", exe.display()),
    )
    .map_err(|e| format!("the script: {e}"))?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("the script's mode: {e}"))?;
    let mut command = Command::new(&script);
    command.env(SERVER_ENV, mode).env(WIRE_ENV, &wire.path);
    Ok(command)
}

/// Waits (up to `WAIT`) for a note that contains `what`: when it came, or
/// `missing` if it never did.
fn note_comes(notes: &Receiver<String>, what: &str, missing: &str) -> Result<Instant, String> {
    let deadline = Instant::now() + WAIT;
    loop {
        match notes.recv_deadline(deadline) {
            Ok(note) if note.contains(what) => break Ok(Instant::now()),
            Ok(_) => {}
            Err(_) => return Err(missing.into()),
        }
    }
}

/// Waits until the proxy's lists thread has ended, once the first server
/// read its listen (the thread names itself once it runs).
fn lists_thread_ends(wire: &Wire, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    while events(wire, "listen") == 0 {
        ensure!(
            Instant::now() < deadline,
            "no listen reached the server within {within:?}"
        );
        thread::sleep(Duration::from_millis(10));
    }
    while threads_named("mcp-proxy-lists") > 0 {
        ensure!(
            Instant::now() < deadline,
            "the proxy's lists thread still runs after {within:?}"
        );
        thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// A `close` while the proxy's lists thread waits for a restart (the
/// server died as it read the listen, and the restart's backoff is a
/// minute) returns at once, and the lists thread ends with it.
pub fn close_while_the_proxy_waits_for_a_restart_returns_and_ends_its_thread()
-> Result<String, String> {
    let wire = Wire::new("proxy-close");
    let (client, notes) = noting();
    let client = client.restart(RestartPolicy {
        max_restarts: 3,
        backoff: Duration::from_secs(60),
    });
    let command = server_command("exits-at-every-listen", Some(&wire));
    let (client, proxy) = proxy_in_front(client, command)?;
    note_comes(
        &notes,
        "the server exited",
        "the death at the listen was never noted",
    )?;
    ensure!(
        threads_named("mcp-proxy-lists") == 1,
        "the lists thread ended before the restart: {} running",
        threads_named("mcp-proxy-lists")
    );
    let started = Instant::now();
    client
        .close_shared()
        .map_err(|e| format!("close failed: {e}"))?;
    let took = started.elapsed();
    ensure!(
        took < Duration::from_secs(5),
        "close took {took:?} while the proxy waited for a restart"
    );
    lists_thread_ends(&wire, Duration::from_secs(5))?;
    drop(proxy);
    ensure!(
        events(&wire, "started") == 1,
        "a server was started after close: {:?}",
        wire.lines()
    );
    Ok(String::new())
}

/// A server that dies at every listen is started again as often as the
/// policy says, no more; the proxy sends its listen once to each, and its
/// lists thread ends once the restarts are given up.
pub fn a_server_that_dies_at_every_listen_ends_the_proxy_thread_with_the_restarts()
-> Result<String, String> {
    let wire = Wire::new("proxy-dies");
    let client = restarting(2);
    let command = server_command("exits-at-every-listen", Some(&wire));
    let (client, proxy) = proxy_in_front(client, command)?;
    lists_thread_ends(&wire, Duration::from_secs(30))?;
    let (started, listens) = (events(&wire, "started"), events(&wire, "listen"));
    let _ = client.close_shared();
    drop(proxy);
    ensure!(
        started == 3 && listens == 3,
        "{started} starts and {listens} listens, want 3 of each"
    );
    Ok(String::new())
}

/// A restarted server that refuses the listen (`-32601`) is asked once:
/// the proxy lists it again and its lists thread ends, without sending
/// the listen over and over.
pub fn a_restarted_server_that_refuses_the_listen_is_asked_once() -> Result<String, String> {
    let wire = Wire::new("proxy-refuses");
    let client = restarting(3);
    let command = server_command("exits-at-first-listen", Some(&wire));
    let (client, proxy) = proxy_in_front(client, command)?;
    lists_thread_ends(&wire, Duration::from_secs(30))?;
    let (started, listens) = (events(&wire, "started"), events(&wire, "listen"));
    let methods = methods(&wire.lines());
    let _ = client.close_shared();
    drop(proxy);
    ensure!(
        started == 2 && listens == 2,
        "{started} starts and {listens} listens, want 2 of each: {methods:?}"
    );
    Ok(String::new())
}

/// A server whose restarts all fail to spawn (its program, a script that
/// removes itself as it starts, is gone): the restart gives up after its
/// attempts, and the proxy's lists thread, which waited for it, ends.
pub fn restarts_that_never_spawn_end_the_proxy_thread() -> Result<String, String> {
    let wire = Wire::new("proxy-gone");
    let command = vanishing_server("exits-at-every-listen", &wire)?;
    let (client, notes) = noting();
    let client = client.restart(RestartPolicy {
        max_restarts: 3,
        backoff: Duration::from_millis(10),
    });
    let (client, proxy) = proxy_in_front(client, command)?;
    lists_thread_ends(&wire, Duration::from_secs(30))?;
    // The notes are written by the client's note queue, on a thread of
    // its own: the last may come after the lists thread ended.
    let (mut failed, deadline) = (0, Instant::now() + Duration::from_secs(10));
    while failed < 3 {
        let Ok(note) = notes.recv_deadline(deadline) else {
            break;
        };
        failed += usize::from(note.contains("restarting the server failed"));
    }
    failed += (notes.try_iter())
        .filter(|n| n.contains("restarting the server failed"))
        .count();
    let started = events(&wire, "started");
    let _ = client.close_shared();
    drop(proxy);
    ensure!(
        started == 1 && failed == 3,
        "{started} starts and {failed} failed restarts, want 1 and 3"
    );
    Ok(String::new())
}

/// The everything server, each line it reads appended to the wire file
/// (after the `{"event":"started"}` of its start). On its first start it
/// exits (status 9) right after it wrote its answer to the first
/// `tasks/get`, an answer whose `pollIntervalMs` it makes 2 s: the client
/// behind the proxy restarts it while the proxy waits to poll again.
pub fn fake_exits_after_first_poll() -> ! {
    let (path, first) = start_noted();
    let watched = Arc::new(Mutex::new(None::<Value>));
    let reader = LineByLine::new(noting_lines(
        path.into(),
        first.then(|| Arc::clone(&watched)),
    ));
    // `pollIntervalMs` of the watched answer: 2 s unless the check says.
    let poll_ms = (std::env::var("MCP_STDIO_CLIENT_TEST_POLL_MS").ok())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(2000u64);
    let writer = ExitAfterPoll {
        watched: first.then_some(watched),
        poll_ms,
        line: Vec::new(),
    };
    let server = everything::build();
    let _ = server.serve(Transport::new(BufReader::new(reader), writer));
    std::process::exit(0)
}

/// A hook for `LineByLine` that appends each line to the wire file at
/// `path`, and notes the id of the first `tasks/get` in `watched`.
fn noting_lines(
    path: PathBuf,
    watched: Option<Arc<Mutex<Option<Value>>>>,
) -> impl FnMut(&mut Vec<u8>) -> std::io::Result<()> {
    move |line: &mut Vec<u8>| {
        let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
        file.write_all(line)?;
        if let Some(watched) = &watched {
            let msg: Value = serde_json::from_slice(line).unwrap_or_default();
            let mut watched = watched.lock().unwrap();
            if method_of(&msg) == Some("tasks/get") && watched.is_none() {
                *watched = Some(msg["id"].clone());
            }
        }
        Ok(())
    }
}

/// Writes the server's lines to stdout; the answer to the watched
/// `tasks/get` goes with `pollIntervalMs: 2000`, and then the process
/// exits.
struct ExitAfterPoll {
    watched: Option<Arc<Mutex<Option<Value>>>>,
    poll_ms: u64,
    line: Vec<u8>,
}

impl Write for ExitAfterPoll {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        while let Some(end) = self.line.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.line.drain(..=end).collect();
            let mut msg: Value = serde_json::from_slice(&line).unwrap_or_default();
            let watched = (self.watched.as_ref())
                .and_then(|w| w.lock().unwrap().clone())
                .is_some_and(|id| msg.get("id") == Some(&id) && msg.get("result").is_some());
            let mut out = std::io::stdout().lock();
            if watched {
                msg["result"]["pollIntervalMs"] = json!(self.poll_ms);
                writeln!(out, "{msg}")?;
                out.flush()?;
                std::process::exit(9);
            }
            out.write_all(&line)?;
            out.flush()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// Claim (late13): after the server behind the proxy restarted, the
/// proxy kept following its task there: it polled the new server with
/// the old server's task id (and sent it `tasks/cancel` for it), and the
/// caller's task failed with the new server's `-32602` passed on. A task
/// of the old server is gone with it: the proxy ends its own task
/// `failed`, saying the server behind restarted, and the new server never
/// sees the old id.
pub fn a_task_behind_a_restarted_server_fails_and_its_id_never_reaches_the_new_one()
-> Result<String, String> {
    use mcp_stdio::ToolCallStart;
    use mcp_stdio::types::TaskStatus;
    let wire = Wire::new("proxy-task-restart");
    let client = restarting(2);
    let command = server_command("exits-after-first-poll", Some(&wire));
    let (client, proxy) = proxy_in_front(client, command)?;
    let caller = caller_of(&proxy, builder().request_timeout(WAIT).tasks(true))?;
    let args = json!({ "seconds": 60, "label": "restart" });
    let started = caller.start_tool_call("slow_compute", args, RequestOptions::new());
    let Ok(ToolCallStart::Task(handle)) = started else {
        return Err(format!("want a task of the proxy's, got {started:?}"));
    };
    let ended = task_ends(&handle, WAIT)?;
    // A call after the task's end reaches the new server after anything
    // the proxy sent it for the task.
    let echoed = caller.call_tool("echo", json!({ "text": "after" }));
    let lines = wire.lines();
    let _ = client.close_shared();
    proxy.stop_handle().stop();
    ensure!(echoed.is_ok(), "echo after the restart: {echoed:?}");
    let starts: Vec<usize> = (lines.iter().enumerate())
        .filter(|(_, l)| l["event"] == json!("started"))
        .map(|(at, _)| at)
        .collect();
    ensure!(starts.len() == 2, "{} starts, want 2", starts.len());
    let old_id = (lines[..starts[1]].iter())
        .find(|l| method_of(l) == Some("tasks/get"))
        .and_then(|l| l["params"]["taskId"].as_str())
        .ok_or("the first server was never polled")?;
    let seen: Vec<&str> = (lines[starts[1]..].iter())
        .filter(|l| l.to_string().contains(old_id))
        .filter_map(method_of)
        .collect();
    ensure!(
        seen.is_empty(),
        "the restarted server was sent the old task id in {seen:?}"
    );
    let message = ended.error.as_ref().map(|e| e.message.as_str());
    ensure!(
        ended.task.status == TaskStatus::Failed
            && message.is_some_and(|m| m.contains("restarted") && !m.contains('\n')),
        "want a failed task saying the server behind restarted, got {:?}: {message:?}",
        ended.task.status
    );
    Ok(message.unwrap_or_default().to_owned())
}

/// The everything server; it exits (status 9) right after it wrote a
/// result that shows a task `input_required` (the answer to a
/// `tasks/get`): the proxy in front then asks its caller for that input
/// while the server behind is already gone.
pub fn fake_exits_after_input_required() -> ! {
    struct ExitAfterInput(Vec<u8>);
    impl Write for ExitAfterInput {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.extend_from_slice(buf);
            while let Some(end) = self.0.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.0.drain(..=end).collect();
                let msg: Value = serde_json::from_slice(&line).unwrap_or_default();
                let mut out = std::io::stdout().lock();
                out.write_all(&line)?;
                out.flush()?;
                if msg["result"].to_string().contains("\"input_required\"") {
                    std::process::exit(9);
                }
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            std::io::stdout().flush()
        }
    }
    let server = everything::build();
    let input = BufReader::new(std::io::stdin());
    let _ = server.serve(Transport::new(input, ExitAfterInput(Vec::new())));
    std::process::exit(0)
}

/// Waits until the caller's task (of the proxy's) ends; returns it.
fn task_ends(
    handle: &mcp_stdio::TaskHandle,
    within: Duration,
) -> Result<mcp_stdio::types::DetailedTask, String> {
    use mcp_stdio::types::TaskStatus;
    let deadline = Instant::now() + within;
    loop {
        let got = handle.get().map_err(|e| format!("tasks/get failed: {e}"))?;
        if !matches!(
            got.task.status,
            TaskStatus::Working | TaskStatus::InputRequired
        ) {
            return Ok(got);
        }
        ensure!(
            Instant::now() < deadline,
            "the caller's task was still {:?} after {within:?}",
            got.task.status
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Claim (review-late13): `proxy::gone` says "restarted" whenever the
/// dead link was restartable when it was armed, even when every restart
/// then failed and no server runs behind the proxy any more (the
/// CHANGELOG: "exited" when no restart follows).
pub fn a_task_behind_a_server_whose_restarts_fail_does_not_say_it_restarted()
-> Result<String, String> {
    use mcp_stdio::ToolCallStart;
    let wire = Wire::new("proxy-task-no-restart");
    let command = vanishing_server("exits-after-first-poll", &wire)?;
    let client = restarting(2);
    let (client, proxy) = proxy_in_front(client, command)?;
    let caller = caller_of(&proxy, builder().request_timeout(WAIT).tasks(true))?;
    let args = json!({ "seconds": 60, "label": "no-restart" });
    let started = caller.start_tool_call("slow_compute", args, RequestOptions::new());
    let Ok(ToolCallStart::Task(handle)) = started else {
        return Err(format!("want a task of the proxy's, got {started:?}"));
    };
    let ended = task_ends(&handle, WAIT);
    let _ = client.close_shared();
    proxy.stop_handle().stop();
    let ended = ended?;
    let message = ended.error.as_ref().map(|e| e.message.clone());
    ensure!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("exited") && !m.contains("restarted")),
        "no server was started again, yet the task says {message:?}"
    );
    Ok(message.unwrap_or_default())
}

/// Claim (review-late13): a server behind that dies while the proxy asks
/// its caller for a task's input (`ctx.ask` in `follow_task`) is not told
/// apart: the `tasks/update` that follows fails to start on the dead
/// link, and the task ends with "failed on tasks/update: ..." instead of
/// the one-line "exited while it ran this task".
pub fn a_task_behind_a_server_that_died_while_its_caller_answered_says_the_server_exited()
-> Result<String, String> {
    use mcp_stdio::ToolCallStart;
    use mcp_stdio::types::ElicitResult;
    let (client, notes) = noting();
    let command = server_command("exits-after-input-required", None);
    let (client, proxy) = proxy_in_front(client, command)?;
    // The caller answers only once the server behind exited.
    let answering = builder()
        .request_timeout(WAIT)
        .tasks(true)
        .on_elicitation(move |_| {
            let deadline = Instant::now() + WAIT;
            while let Ok(note) = notes.recv_deadline(deadline) {
                if note.contains("the server exited") || note.contains("closed its output") {
                    break;
                }
            }
            Ok(ElicitResult::decline())
        });
    let caller = caller_of(&proxy, answering)?;
    let args = json!({ "filename": "gone.txt" });
    let started = caller.start_tool_call("confirm_delete", args, RequestOptions::new());
    let Ok(ToolCallStart::Task(handle)) = started else {
        return Err(format!("want a task of the proxy's, got {started:?}"));
    };
    let waited = handle.wait();
    let _ = client.close_shared();
    proxy.stop_handle().stop();
    let message = match waited {
        Err(Error::Rpc(e)) => e.message,
        other => return Err(format!("want the task's error, got {other:?}")),
    };
    ensure!(
        message.contains("exited while it ran this task"),
        "the server behind exited, yet the task says: {message}"
    );
    Ok(message)
}

/// Claim (review-late13): the proxy sees the death of the server behind
/// only at its next poll of the task, up to the server's
/// `pollIntervalMs` later (10 s, the most the proxy keeps): meanwhile its
/// caller is told the task is `working`, on a server that is gone. It
/// ends within a moment of the death.
pub fn a_task_behind_a_server_that_died_ends_before_its_next_poll() -> Result<String, String> {
    use mcp_stdio::ToolCallStart;
    let wire = Wire::new("proxy-task-died");
    let mut command = server_command("exits-after-first-poll", Some(&wire));
    command.env("MCP_STDIO_CLIENT_TEST_POLL_MS", "10000");
    let (client, notes) = noting();
    let (client, proxy) = proxy_in_front(client, command)?;
    let caller = caller_of(&proxy, builder().request_timeout(WAIT).tasks(true))?;
    let args = json!({ "seconds": 60, "label": "died" });
    let started = caller.start_tool_call("slow_compute", args, RequestOptions::new());
    let Ok(ToolCallStart::Task(handle)) = started else {
        return Err(format!("want a task of the proxy's, got {started:?}"));
    };
    let died = note_comes(
        &notes,
        "the server exited",
        "the server behind never exited",
    )?;
    let ended = task_ends(&handle, WAIT);
    let took = died.elapsed();
    let _ = client.close_shared();
    proxy.stop_handle().stop();
    let ended = ended?;
    ensure!(
        took < Duration::from_secs(3),
        "the task ended {took:?} after the server behind exited: {:?}",
        ended.error.map(|e| e.message)
    );
    Ok(format!("ended {} after the death", ms(took)))
}
