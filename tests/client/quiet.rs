//! Where the client's words go: log messages to the request the spec ties
//! them to, or to the client-level callback; nothing on stderr while all is
//! well; and `examples/client.rs`, whose output is for people.

use super::*;

/// `examples/client.rs`: its `run` writes to any writer, and its `main`
/// runs as the `client-example` mode.
#[path = "../../examples/client.rs"]
mod client_example;

/// `legacy-logs` and `modern-logs`: `tools/call` of `hold` is held until a
/// second one arrives; then three `notifications/message` go out while
/// both are in flight, and both are answered. `logging/setLevel` answers
/// `{}`.
pub fn fake_session_logs(legacy: bool) -> ! {
    let mut held: Vec<Value> = Vec::new();
    each_request(|out, id, method, msg| match method {
        "server/discover" if !legacy => send(out, &reply(id, fake_discover("logs", "fake"))),
        "initialize" if legacy => {
            let result = legacy_initialize_result(json!({ "tools": {}, "logging": {} }));
            send(out, &reply(id, result));
        }
        "logging/setLevel" if legacy => send(out, &reply(id, json!({}))),
        "tools/call" if tool_name(msg) == "hold" => {
            held.push(id.clone());
            if held.len() == 2 {
                for n in 1..=3 {
                    let params = json!({ "level": "warning", "logger": "session", "data": format!("log {n}") });
                    send(
                        out,
                        &json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": params }),
                    );
                }
                for id in held.drain(..) {
                    send(out, &reply(&id, text_result("held")));
                }
            }
        }
        "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// `templates-32601`: a modern server that declares tools, resources and
/// prompts, and answers `resources/templates/list` with `-32601`.
/// `noisy-templates`: the same, but before each answer it writes a line
/// that is not JSON and a request (which a modern server may not send),
/// and before the first a line over the client's default limit: each is a
/// problem the client notes.
pub fn fake_templates_32601(noisy: bool) -> ! {
    let mut first = true;
    each_request(|out, id, method, msg| {
        if noisy {
            if std::mem::take(&mut first) {
                let mut long = vec![b' '; mcp_stdio::DEFAULT_MAX_LINE_BYTES + 1];
                long.push(b'\n');
                send_raw(out, &long);
            }
            send_raw(out, b"this line is not JSON at all\n");
            send(
                out,
                &json!({ "jsonrpc": "2.0", "id": "from-the-server", "method": "ping" }),
            );
        }
        let result = match method {
            "server/discover" => {
                let mut discover = fake_discover("templates-32601", "Lists things.\nSecond line.");
                discover["capabilities"] = json!({ "tools": {}, "resources": {}, "prompts": {} });
                discover
            }
            "tools/list" => json!({ "tools": [{
                "name": "echo",
                "description": "\n  Echoes its text.\nMore about echo.",
                "inputSchema": { "type": "object" }
            }] }),
            "resources/list" => {
                json!({ "resources": [{ "uri": "mem://a", "name": "a", "description": "A resource." }] })
            }
            "prompts/list" => json!({ "prompts": [{ "name": "greet" }] }),
            "tools/call" => text_result(&echo_text(msg)),
            _ => {
                send(out, &error_reply(id, -32601, "Method not found", None));
                return;
            }
        };
        send(out, &reply(id, result));
    });
    std::process::exit(0);
}

/// `dies-mid-run`: a modern server that declares tools, resources and
/// prompts, answers `tools/list`, and exits with status 4 on
/// `resources/list`, writing why to stderr first.
pub fn fake_dies_mid_run() -> ! {
    each_request(|out, id, method, _msg| match method {
        "server/discover" => {
            let mut discover = fake_discover("dies-mid-run", "Dies.");
            discover["capabilities"] = json!({ "tools": {}, "resources": {}, "prompts": {} });
            send(out, &reply(id, discover));
        }
        "tools/list" => send(
            out,
            &reply(
                id,
                json!({ "tools": [{ "name": "echo", "inputSchema": { "type": "object" } }] }),
            ),
        ),
        "resources/list" => {
            eprintln!("fatal: the resource index is corrupt");
            std::process::exit(4);
        }
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// Issue 43, item 7 (README: "one line on stderr" for a failure):
/// `examples/client.rs` against a server that dies in the middle of its
/// run says so once, with the exit status and the server's last stderr
/// line, and lists nothing more. Before, it printed the death, then "the
/// connection closed" for each list after it, and the client's default
/// note said the server exited once more.
pub fn client_example_reports_a_death_mid_run_once() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let output = server_command("client-example", None)
        .arg("env")
        .arg(format!("{SERVER_ENV}=dies-mid-run"))
        .arg(exe)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running the client example failed: {e}"))?;
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    ensure!(
        output.status.code() == Some(1),
        "the example exited {}: stdout {out:?}, stderr {err:?}",
        output.status
    );
    ensure!(
        out.starts_with("era: modern") && out.contains("tools:\n  echo\nresources:\n"),
        "the example's stdout: {out:?}"
    );
    ensure!(
        err.lines().count() == 1
            && err.starts_with("client: resources/list: ")
            && err.contains("exit status: 4")
            && err.contains("fatal: the resource index is corrupt"),
        "want one line on stderr saying how the server died, got {err:?}"
    );
    Ok(String::new())
}

/// `dies-at-start`: writes five lines to stderr and exits with status 3,
/// before reading anything.
pub fn fake_dies_at_start() -> ! {
    for n in 1..=5 {
        eprintln!("line {n}");
    }
    std::process::exit(3);
}

/// `quiet-client`: this process as a client with every default, against
/// a legacy server that logs session-wide, a server that needs the legacy
/// fallback, and the everything server. It prints `done`; its stderr must
/// stay empty.
pub fn run_quiet_client() -> ! {
    let outcome = (|| -> Result<(), Error> {
        let legacy = Client::spawn(server_command("legacy-logs", None))?;
        legacy.set_log_level(LoggingLevel::Debug)?;
        thread::scope(|s| {
            let calls: Vec<_> = (0..2)
                .map(|_| s.spawn(|| legacy.call_tool("hold", json!({}))))
                .collect();
            calls
                .into_iter()
                .try_for_each(|c| c.join().unwrap().map(drop))
        })?;
        legacy.close()?;
        Client::spawn(server_command("legacy-32601", None))?.close()?;
        let everything = Client::spawn(server_command("everything", None))?;
        for tool in everything.tools() {
            tool?;
        }
        everything.call_tool("echo", json!({ "text": "hi" }))?;
        everything.close()?;
        Ok(())
    })();
    match outcome {
        Ok(()) => {
            println!("done");
            std::process::exit(0);
        }
        Err(e) => {
            println!("failed: {e}");
            std::process::exit(1);
        }
    }
}

/// `client-stderr-locked` and `client-stderr-full`: this process as a
/// client with every default against `noisy-templates`, while its stderr
/// cannot take a line: the main thread holds `std::io::stderr().lock()`
/// for the whole run, or stderr is a pipe nobody reads, filled to the
/// brim before the client starts. Each note the client has to make would
/// block; replies must still be routed. Prints `done` when every call was
/// answered.
pub fn run_client_with_stalled_stderr(locked: bool) -> ! {
    let _held = locked.then(|| std::io::stderr().lock());
    if let Err(e) = (!locked).then(fill_stderr).unwrap_or(Ok(())) {
        println!("failed: filling stderr: {e}");
        std::process::exit(1);
    }
    let outcome = (|| -> Result<(), Error> {
        let client = Client::builder()
            .request_timeout(Duration::from_secs(20))
            .spawn(server_command("noisy-templates", None))?;
        for tool in client.tools() {
            tool?;
        }
        for n in 0..3 {
            let text = format!("call {n}");
            let echoed = client.call("echo", json!({ "text": text }))?.text_content();
            if echoed != text {
                return Err(Error::Protocol(format!("echo answered {echoed:?}")));
            }
        }
        client.close()?;
        Ok(())
    })();
    match outcome {
        Ok(()) => println!("done"),
        Err(e) => println!("failed: {e}"),
    }
    // Exits with the note thread still blocked on stderr.
    std::process::exit(0);
}

/// Writes to stderr until its pipe is full, then makes it blocking again:
/// the next write to it blocks until someone reads.
fn fill_stderr() -> std::io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(std::io::stderr(), FcntlArg::F_GETFL)?);
    fcntl(
        std::io::stderr(),
        FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK),
    )?;
    let chunk = [b'x'; 4096];
    let filled = loop {
        match std::io::stderr().write(&chunk) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    fcntl(std::io::stderr(), FcntlArg::F_SETFL(flags))?;
    filled
}

/// Runs `mode` (a client) with its stderr piped and never read, and waits
/// at most `WAIT` for it to print `done`.
fn stalled_stderr_client(mode: &str) -> Result<String, String> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = server_command(mode, None)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the client failed: {e}"))?;
    // Held open and never read, until the client is done.
    let stderr = child.stderr.take();
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        // The receiver is gone only if the check timed out.
        let _ = tx.send(text);
    });
    let started = Instant::now();
    let out = rx.recv_timeout(WAIT);
    let took = started.elapsed();
    if out.is_err() {
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the client: {e}"))?;
    drop(stderr);
    let out = out.map_err(|_| {
        format!(
            "the client stalled: no answer within {WAIT:?} while its stderr could not be written"
        )
    })?;
    ensure!(
        out == "done\n" && status.success(),
        "the client printed {out:?} and exited with {status}"
    );
    Ok(format!("done in {}", ms(took)))
}

pub fn notes_never_stall_the_client_when_stderr_is_locked() -> Result<String, String> {
    stalled_stderr_client("client-stderr-locked")
}

pub fn notes_never_stall_the_client_when_stderr_is_a_full_pipe() -> Result<String, String> {
    stalled_stderr_client("client-stderr-full")
}

/// `client-example`: `examples/client.rs`'s `main`, with this process's
/// arguments.
pub fn run_client_example() -> ! {
    let code = client_example::main();
    std::process::exit(if code == std::process::ExitCode::SUCCESS {
        0
    } else {
        1
    });
}

pub fn client_example_is_not_stalled_by_a_noisy_server() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // The example spawns the server it is given: this binary again, as the
    // noisy fake (`env` sets the mode over the example's own).
    let output = server_command("client-example", None)
        .arg("env")
        .arg(format!("{SERVER_ENV}=noisy-templates"))
        .arg(exe)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running the client example failed: {e}"))?;
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    ensure!(
        output.status.success()
            && out.starts_with("era: modern")
            && out.ends_with("server exited: exit status: 0\n"),
        "the example: {}, stdout {out:?}, stderr {err:?}",
        output.status
    );
    // What the client noted went to stderr, one line each.
    ensure!(
        err.contains("mcp-stdio client: skipped a line of 16777217 bytes from the server")
            && err.contains("mcp-stdio client: skipped a line from the server: it is not JSON-RPC")
            && err.lines().all(|l| l.starts_with("mcp-stdio client: ")),
        "the example's stderr: {err:?}"
    );
    Ok(String::new())
}

/// Two `hold` calls in flight at once, each with a log callback when
/// `asks[i]`; returns what each callback got.
fn two_holds(client: &Client, asks: [bool; 2]) -> Result<[Vec<String>; 2], String> {
    let got: [Seen; 2] = Default::default();
    thread::scope(|s| {
        let calls: Vec<_> = (0..2)
            .map(|i| {
                let sink = Arc::clone(&got[i]);
                let mut options = RequestOptions::new();
                if asks[i] {
                    options = options.log(LoggingLevel::Debug, move |m| {
                        sink.lock().unwrap().push(m.data.to_string());
                    });
                }
                s.spawn(move || client.call_tool_with("hold", json!({}), options))
            })
            .collect();
        calls
            .into_iter()
            .try_for_each(|call| expect_text("hold", call.join().unwrap(), "held").map(drop))
    })?;
    Ok(got.map(|g| g.lock().unwrap().clone()))
}

/// What a log callback saw: each message's `data`, as JSON text.
type Seen = Arc<Mutex<Vec<String>>>;

/// A client whose `on_log` collects into the returned list.
fn collecting_logs(mode: &str, wire: &Wire) -> Result<(Client, Seen), String> {
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&logs);
    let client = builder()
        .on_log(move |m| sink.lock().unwrap().push(m.data.to_string()))
        .spawn(server_command(mode, Some(wire)))
        .map_err(|e| format!("connecting failed: {e}"))?;
    Ok((client, logs))
}

const SESSION_LOGS: [&str; 3] = [r#""log 1""#, r#""log 2""#, r#""log 3""#];

/// The fake's three log messages reached `on_log` and no request's
/// callback.
fn logs_went_to_on_log(per_request: [Vec<String>; 2], logs: &Seen) -> Result<(), String> {
    ensure!(
        per_request.iter().all(Vec::is_empty),
        "request callbacks got log messages that are not theirs: {per_request:?}"
    );
    ensure!(
        *logs.lock().unwrap() == SESSION_LOGS,
        "on_log got {:?}",
        logs.lock().unwrap()
    );
    Ok(())
}

pub fn legacy_session_logs_go_to_on_log() -> Result<String, String> {
    let wire = Wire::new("legacy-logs");
    let (client, logs) = collecting_logs("legacy-logs", &wire)?;
    client
        .set_log_level(LoggingLevel::Info)
        .map_err(|e| format!("set_log_level failed: {e}"))?;
    // Both requests ask for logs: neither gets the session's.
    logs_went_to_on_log(two_holds(&client, [true, true])?, &logs)?;
    close_ok(client)?;
    let lines = wire.lines();
    let set_level = lines
        .iter()
        .find(|l| method_of(l) == Some("logging/setLevel"))
        .ok_or("no logging/setLevel on the wire")?;
    ensure!(
        set_level["params"] == json!({ "level": "info" }),
        "logging/setLevel params {}",
        set_level["params"]
    );
    Ok(String::new())
}

pub fn modern_logs_go_to_the_one_request_that_asked() -> Result<String, String> {
    let wire = Wire::new("modern-logs");
    let (client, logs) = collecting_logs("modern-logs", &wire)?;
    // One of the two asked for logs: the messages are its own.
    let per_request = two_holds(&client, [true, false])?;
    ensure!(
        per_request[0] == SESSION_LOGS && per_request[1].is_empty(),
        "request callbacks got {per_request:?}"
    );
    ensure!(
        logs.lock().unwrap().is_empty(),
        "on_log got {:?}",
        logs.lock().unwrap()
    );
    // Both asked: stdio cannot tell whose they are, so the client takes
    // them.
    logs_went_to_on_log(two_holds(&client, [true, true])?, &logs)?;
    ensure!(
        client.set_log_level(LoggingLevel::Info).is_err(),
        "set_log_level on a modern server"
    );
    close_ok(client)?;
    Ok(String::new())
}

pub fn default_client_is_quiet_on_stderr() -> Result<String, String> {
    let output = server_command("quiet-client", None)
        .output()
        .map_err(|e| format!("running the quiet client failed: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        output.status.success() && stdout == "done\n",
        "the quiet client: {} {stdout:?} (stderr {stderr:?})",
        output.status
    );
    ensure!(
        stderr.is_empty(),
        "the default client wrote to stderr: {stderr:?}"
    );
    Ok(String::new())
}

pub fn client_example_prints_what_it_can() -> Result<String, String> {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = client_example::run(server_command("templates-32601", None), &mut out, &mut err);
    let (out, err) = (String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
    let want = "\
era: modern (2026-07-28)
server: templates-32601 0.0.1
instructions: Lists things.
capabilities: prompts, resources, tools
tools:
  echo - Echoes its text.
resources:
  mem://a - A resource.
resource templates:
  (not served: Method not found)
prompts:
  greet
server exited: exit status: 0
";
    ensure!(
        code == 0 && out == want && err.is_empty(),
        "exit {code}, stdout:\n{out}\nwant:\n{want}\nstderr: {err:?}"
    );

    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = client_example::run(server_command("dies-at-start", None), &mut out, &mut err);
    let (out, err) = (String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
    let want = "client: the server exited during start-up (exit status: 3); its stderr ended with: line 3 | line 4 | line 5\n";
    ensure!(
        code == 1 && out.is_empty() && err == want,
        "exit {code}, stdout {out:?}, stderr {err:?}, want stderr {want:?}"
    );
    Ok(String::new())
}

/// Terminal control sequences a hostile server writes where the client
/// repeats it: a window title, and a clear screen.
const ESCAPES: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J";

/// `writes-escapes`: answers the probe; at the first `tools/call` sends
/// the client a request whose method is [`ESCAPES`] (a modern server
/// sends none: the client notes it as a problem, method and all), writes
/// them to its stderr, and exits (the client's note of the death quotes
/// the last lines of its stderr).
pub fn fake_writes_escapes() -> ! {
    each_request(|out, id, method, _msg| match method {
        "server/discover" => send(out, &reply(id, fake_discover("writes-escapes", "Escapes."))),
        "tools/call" => {
            send(
                out,
                &json!({ "jsonrpc": "2.0", "id": 1, "method": ESCAPES }),
            );
            eprintln!("{ESCAPES}");
            // The note of the request comes before the death's.
            thread::sleep(Duration::from_millis(200));
            std::process::exit(5);
        }
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// `client-hears-escapes`: this process as a client with every default
/// against `writes-escapes`; prints `done`.
pub fn run_client_hearing_escapes() -> ! {
    let outcome = (|| -> Result<(), Error> {
        let client = Client::spawn(server_command("writes-escapes", None))?;
        let _ = client.call_tool("x", json!({}));
        let _ = client.close();
        Ok(())
    })();
    match outcome {
        Ok(()) => println!("done"),
        Err(e) => println!("failed: {e}"),
    }
    std::process::exit(0);
}

/// Review client15: the default client writes its problem notes to the
/// application's stderr, a terminal as often as not, and some quote what
/// the server wrote (a method name, the last lines of its stderr). A
/// server's control characters must not reach that terminal as they are:
/// they could retitle the window, clear the screen, or forge lines.
pub fn default_notes_carry_no_control_characters_of_the_server() -> Result<String, String> {
    let output = server_command("client-hears-escapes", None)
        .output()
        .map_err(|e| format!("running the client failed: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        stdout == "done\n",
        "the client: {stdout:?} (stderr {stderr:?})"
    );
    ensure!(
        stderr.contains("owned"),
        "the notes quote the server's method and stderr: {stderr:?}"
    );
    ensure!(
        !stderr.chars().any(|c| c.is_control() && c != '\n'),
        "the client's stderr carries control characters: {stderr:?}"
    );
    Ok(String::new())
}
