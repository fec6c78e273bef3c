//! Where the client's words go: log messages to the request the spec ties
//! them to, or to the client-level callback; nothing on stderr while all is
//! well; and `examples/client.rs`, whose output is for people.

use super::*;

/// `examples/client.rs`, run in-process: its `run` writes to any writer.
#[allow(dead_code)] // its `main` is not called here
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
pub fn fake_templates_32601() -> ! {
    each_request(|out, id, method, _| {
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
            _ => {
                send(out, &error_reply(id, -32601, "Method not found", None));
                return;
            }
        };
        send(out, &reply(id, result));
    });
    std::process::exit(0);
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
