//! Rules of the stdio transport that had code but no test (issue 29), and
//! the legacy server that crashes on the era probe (issue 25, item 4).
//!
//! Spec 2026-07-28 basic/transports/stdio: a client MUST NOT write a
//! JSON-RPC response to a modern server; a client SHOULD NOT assume that
//! the server's stderr output means an error.

use super::*;

/// `modern-asks`: a modern server that breaks the rule it has (it MUST NOT
/// send requests): `tools/call` of `ask` sends the client `ping`,
/// `roots/list` and `elicitation/create`, then answers `asked`. Any other
/// tool echoes.
pub fn fake_modern_asks() -> ! {
    each_request(|out, id, method, msg| match method {
        "server/discover" => send(out, &reply(id, fake_discover("modern-asks", "asks"))),
        "tools/call" if tool_name(msg) == "ask" => {
            let schema =
                json!({ "type": "object", "properties": { "name": { "type": "string" } } });
            let asks = [
                ("s-ping", "ping", json!({})),
                ("s-roots", "roots/list", json!({})),
                (
                    "s-elicit",
                    "elicitation/create",
                    json!({ "message": "Your name?", "requestedSchema": schema }),
                ),
            ];
            for (ask_id, method, params) in asks {
                send(
                    out,
                    &json!({ "jsonrpc": "2.0", "id": ask_id, "method": method, "params": params }),
                );
            }
            send(out, &reply(id, text_result("asked")));
        }
        "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// `noisy-stderr`: a modern server that writes alarming lines to stderr
/// when it starts and before every answer, and otherwise works.
pub fn fake_noisy_stderr() -> ! {
    eprintln!("ERROR: this is only a log line");
    eprintln!("Traceback (most recent call last): nothing failed");
    each_request(|out, id, method, msg| {
        eprintln!("error: handling {method}");
        match method {
            "server/discover" => send(out, &reply(id, fake_discover("noisy", "noisy"))),
            "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
            _ => send(out, &error_reply(id, -32601, "Method not found", None)),
        }
    });
    std::process::exit(0);
}

/// `legacy-dies-on-probe`: an initialize-era server that, like the Python
/// servers of older `mcp` 1.x releases, fails to validate a method it does
/// not know and exits. After `initialize` it echoes and answers `ping`.
pub fn fake_legacy_dies_on_probe() -> ! {
    each_request(|out, id, method, msg| match method {
        "initialize" => {
            let mut result = legacy_initialize_result(json!({ "tools": {} }));
            result["instructions"] = json!("legacy instructions");
            send(out, &reply(id, result));
        }
        "tools/call" => {
            let result = json!({ "content": [{ "type": "text", "text": echo_text(msg) }] });
            send(out, &reply(id, result));
        }
        "ping" => send(out, &reply(id, json!({}))),
        _ => {
            eprintln!("pydantic_core.ValidationError: 1 validation error for ClientRequest");
            std::process::exit(1);
        }
    });
    std::process::exit(0);
}

/// `legacy-silent-dies-on-initialize`: an initialize-era server that, like
/// `mcp-server-sqlite` (PyPI, on `mcp` 1.6), does not answer
/// `server/discover` at all, and then fails on the `initialize` that
/// follows it and exits. Spoken to with `initialize` first, it works:
/// it echoes and answers `ping`.
pub fn fake_legacy_silent_dies_on_initialize() -> ! {
    let mut probed = false;
    each_request(|out, id, method, msg| match method {
        "server/discover" => probed = true,
        "initialize" if probed => {
            eprintln!("anyio.BrokenResourceError: the session was left in a bad state");
            std::process::exit(1);
        }
        "initialize" => {
            let mut result = legacy_initialize_result(json!({ "tools": {} }));
            result["instructions"] = json!("legacy instructions");
            send(out, &reply(id, result));
        }
        "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
        "ping" => send(out, &reply(id, json!({}))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// Issue 43, item 5: a server that leaves the probe unanswered and dies on
/// the `initialize` that follows is spawned once more and spoken to with
/// `initialize` from the start. Before, the first start failed with
/// `ServerExited`: the respawn covered only a death while the probe was
/// pending.
pub fn legacy_silent_then_dies_respawned_with_initialize() -> Result<String, String> {
    let wire = Wire::new("silent-dies");
    let client = builder()
        .probe_timeout(Duration::from_millis(300))
        .spawn(server_command(
            "legacy-silent-dies-on-initialize",
            Some(&wire),
        ))
        .map_err(|e| format!("connecting failed: {e}"))?;
    ensure!(
        client.era()
            == Era::Legacy {
                version: LEGACY.into()
            },
        "era {:?}, want Legacy {LEGACY}",
        client.era()
    );
    expect_text(
        "tools/call after the respawn",
        client.call_tool("echo", json!({ "text": "again" })),
        "again",
    )?;
    close_ok(client)?;
    let lines = wire.lines();
    check_client_wire(&lines)?;
    let methods = methods(&lines);
    ensure!(
        methods
            == [
                "server/discover",
                "notifications/cancelled",
                "initialize",
                "initialize",
                "notifications/initialized",
                "tools/call"
            ],
        "the wire of both starts: {methods:?}"
    );
    Ok(String::new())
}

/// Spec 2026-07-28 basic/transports/stdio, "Sending messages": the client
/// MUST NOT write a JSON-RPC response, even to a server that sends it
/// requests (which a modern server must not), and even with handlers set
/// that would answer a legacy server.
pub fn modern_client_never_writes_a_response() -> Result<String, String> {
    let wire = Wire::new("modern-asks");
    let (note_tx, notes) = crossbeam_channel::unbounded();
    let client = builder()
        .on_roots(|| Ok(mcp_stdio::types::ListRootsResult::default()))
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .spawn(server_command("modern-asks", Some(&wire)))
        .map_err(|e| format!("connecting failed: {e}"))?;
    expect_text("ask", client.call_tool("ask", json!({})), "asked")?;
    // The server is read in order: once this answer is back, the three
    // requests before it were routed.
    expect_text(
        "echo after the asks",
        client.call_tool("echo", json!({ "text": "after" })),
        "after",
    )?;
    close_ok(client)?;
    let lines = wire.lines();
    check_client_wire(&lines)?;
    let methods = methods(&lines);
    ensure!(
        methods == ["server/discover", "tools/call", "tools/call"],
        "the client wrote {methods:?}, want the probe and two calls only"
    );
    let ignored: Vec<String> = notes
        .try_iter()
        .filter(|n| n.starts_with("ignored a request from the server"))
        .collect();
    ensure!(
        ignored.len() == 3,
        "want a note for each of the 3 requests ignored, got {ignored:?}"
    );
    Ok(String::new())
}

/// Spec 2026-07-28 basic/transports/stdio: a client SHOULD NOT assume that
/// stderr output means an error. Lines that look like failures reach the
/// stderr sink, and nothing else changes: no problem note, every call
/// answered, a clean close.
pub fn server_stderr_is_not_an_error() -> Result<String, String> {
    let (line_tx, lines) = crossbeam_channel::unbounded();
    let (note_tx, notes) = crossbeam_channel::unbounded();
    let client = builder()
        .stderr(move |line| {
            let _ = line_tx.send(line.to_owned());
        })
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .spawn(server_command("noisy-stderr", None))
        .map_err(|e| format!("connecting failed with stderr output: {e}"))?;
    ensure!(
        matches!(client.era(), Era::Modern { .. }),
        "era {:?}",
        client.era()
    );
    for text in ["one", "two"] {
        expect_text(
            "echo",
            client.call_tool("echo", json!({ "text": text })),
            text,
        )?;
    }
    let status = close_ok(client)?;
    ensure!(status.code() == Some(0), "exit status {status}");
    let want = [
        "ERROR: this is only a log line",
        "Traceback (most recent call last): nothing failed",
        "error: handling server/discover",
        "error: handling tools/call",
        "error: handling tools/call",
    ];
    let mut got = Vec::new();
    while got.len() < want.len() {
        match lines.recv_timeout(WAIT) {
            Ok(line) => got.push(line),
            Err(_) => break,
        }
    }
    ensure!(got == want, "the stderr sink got {got:?}, want {want:?}");
    let notes: Vec<String> = notes.try_iter().collect();
    ensure!(
        notes.is_empty(),
        "the trace heard of the server's stderr: {notes:?}"
    );
    Ok(String::new())
}

/// Issue 25, item 4: a server that exits right after the unanswered
/// `server/discover` probe is spawned once more and spoken to with
/// `initialize`, and the trace says so.
pub fn legacy_dies_on_probe_respawned_with_initialize() -> Result<String, String> {
    let (note_tx, notes) = crossbeam_channel::unbounded();
    let outcome = legacy_fallback(
        "legacy-dies-on-probe",
        builder().trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        }),
    )?;
    let notes: Vec<String> = notes.try_iter().collect();
    let want = "the server exited (exit status: 1) on the server/discover probe; its stderr ended with: pydantic_core.ValidationError: 1 validation error for ClientRequest: starting it again to speak initialize";
    ensure!(
        notes.iter().any(|n| n.starts_with(want)),
        "no note {want:?} among {notes:?}"
    );
    Ok(outcome)
}

/// Without the fallback (`EraPolicy::ModernOnly`), the same server is an
/// error that says it exited during start-up: no second start.
pub fn modern_only_does_not_respawn() -> Result<String, String> {
    let wire = Wire::new("dies-modern-only");
    let outcome = builder()
        .era(EraPolicy::ModernOnly)
        .spawn(server_command("legacy-dies-on-probe", Some(&wire)));
    ensure!(
        matches!(&outcome, Err(Error::ServerExited { status: Some(s), .. }) if s.code() == Some(1)),
        "want ServerExited with status 1, got {outcome:?}"
    );
    let methods = methods(&wire.lines());
    ensure!(methods == ["server/discover"], "the wire: {methods:?}");
    Ok(String::new())
}

/// `modern-32022-then-silent`: answers the first `server/discover` with
/// `-32022` naming the client's version, and no later one; answers
/// `initialize` as a legacy server, and echoes.
pub fn fake_modern_32022_then_silent() -> ! {
    fake_modern_32022_then(false)
}

/// `modern-32022-then-dies`: `modern-32022-then-silent`, but it exits
/// (status 1) on the second `server/discover` instead of ignoring it.
pub fn fake_modern_32022_then_dies() -> ! {
    fake_modern_32022_then(true)
}

fn fake_modern_32022_then(dies: bool) -> ! {
    let mut first_discover = true;
    each_request(|out, id, method, msg| match method {
        "server/discover" if std::mem::take(&mut first_discover) => send(
            out,
            &error_reply(
                id,
                -32022,
                "Unsupported protocol version",
                Some(json!({ "supported": [MODERN], "requested": "1999-01-01" })),
            ),
        ),
        "server/discover" if dies => std::process::exit(1),
        "server/discover" => {}
        "initialize" => send(
            out,
            &reply(id, legacy_initialize_result(json!({ "tools": {} }))),
        ),
        "tools/call" => {
            let result = json!({ "content": [{ "type": "text", "text": echo_text(msg) }] });
            send(out, &reply(id, result));
        }
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// Issue 47, item 5, as the review of it reads spec 2026-07-28
/// basic/transports/stdio ("Backward Compatibility": a `-32022` means a
/// modern server, "Do **not** fall back to `initialize`"): the retry with
/// the version the server named goes unanswered, and the connection fails
/// saying so, never `initialize`. (Merged as
/// `modern_32022_then_silence_falls_back_to_initialize`, which pinned the
/// fallback: the client connected as legacy after `initialize`.)
pub fn modern_32022_then_silence_fails_without_initialize() -> Result<String, String> {
    let wire = Wire::new("32022-then-silent");
    let outcome = builder()
        .trace(|_| {})
        .probe_timeout(Duration::from_millis(300))
        .spawn(server_command("modern-32022-then-silent", Some(&wire)));
    let text = match outcome {
        Ok(client) => {
            let era = client.era();
            let _ = client.close();
            return Err(format!("connected as {era:?}"));
        }
        Err(Error::Protocol(text)) => text,
        Err(other) => return Err(format!("want Error::Protocol, got {other:?}")),
    };
    for part in [
        "-32022",
        "no answer to server/discover within 0.3 s",
        "initialize",
    ] {
        ensure!(
            text.contains(part),
            "the error {text:?} does not say {part:?}"
        );
    }
    let methods = methods(&wire.lines());
    ensure!(
        methods
            == [
                "server/discover",
                "server/discover",
                "notifications/cancelled",
            ],
        "the wire: {methods:?}"
    );
    Ok(text)
}

/// The same when the server exits on the retry: a server that answered
/// `-32022` is modern, so its death on the second probe is not the death
/// of an older legacy server on an unknown method, and it is not started
/// again to be spoken to with `initialize` (the first probe's death is:
/// `legacy_dies_on_probe_respawned_with_initialize`). Before: started
/// again, and connected as legacy.
pub fn a_server_that_answered_32022_and_died_is_not_started_again() -> Result<String, String> {
    let wire = Wire::new("32022-then-dies");
    let outcome = builder()
        .trace(|_| {})
        .spawn(server_command("modern-32022-then-dies", Some(&wire)));
    let error = match outcome {
        Ok(client) => {
            let era = client.era();
            let _ = client.close();
            return Err(format!("connected as {era:?}"));
        }
        Err(e) => e,
    };
    let methods = methods(&wire.lines());
    ensure!(
        methods == ["server/discover", "server/discover"],
        "the wire: {methods:?} (error: {error})"
    );
    ensure!(
        matches!(&error, Error::ServerExited { status: Some(s), .. } if s.code() == Some(1))
            || matches!(&error, Error::Protocol(text) if text.contains("-32022")),
        "want the server's exit, or a refusal naming -32022, got {error:?}"
    );
    Ok(error.to_string())
}

/// `always-32022`: a modern server that answers every request with
/// `-32022`, naming `2026-07-28`, the version the client asks for, as the
/// one it supports.
pub fn fake_always_32022() -> ! {
    each_request(|out, id, _, msg| {
        let requested = msg
            .pointer("/params/_meta")
            .and_then(|m| m.get(VERSION_KEY))
            .cloned()
            .unwrap_or(Value::Null);
        send(
            out,
            &error_reply(
                id,
                -32022,
                "Unsupported protocol version",
                Some(json!({ "supported": [MODERN], "requested": requested })),
            ),
        );
    });
    std::process::exit(0);
}

/// Review of issue 47, item 5 (what the probe says): a server that
/// refuses the version it names as supported is refused, but the error
/// must say that, not "no protocol version in common", which is false: the
/// server named 2026-07-28 and the client speaks it (`era::probe` gives the
/// retry's `-32022` the message of an empty intersection).
pub fn a_second_32022_is_not_called_no_version_in_common() -> Result<String, String> {
    let outcome = builder()
        .trace(|_| {})
        .spawn(server_command("always-32022", None));
    let error = match outcome {
        Ok(client) => {
            let era = client.era();
            let _ = client.close();
            return Err(format!("connected, era {era:?}"));
        }
        Err(e) => e.to_string(),
    };
    ensure!(
        !error.contains("no protocol version in common"),
        "the error says {error:?}, though the server named {MODERN}, which this client speaks"
    );
    Ok(error)
}

/// Review of issue 47, item 5 (spec 2026-07-28 basic/transports/stdio,
/// "Backward Compatibility"): a server that answered the probe with
/// `-32022` is modern ("Do **not** fall back to `initialize`"), and "the
/// era determination is a property of the server" (basic/versioning). The
/// merge made the retry's silence mean legacy and changed `era.rs`'s doc
/// to say so (`modern_32022_then_silence_falls_back_to_initialize` pinned
/// it, now `modern_32022_then_silence_fails_without_initialize`); this
/// check reads the spec the other way: the connection fails, and
/// `initialize` is never sent to a server that said it is modern.
pub fn a_server_that_answered_32022_is_never_sent_initialize() -> Result<String, String> {
    let wire = Wire::new("32022-then-silent-no-initialize");
    let outcome = builder()
        .trace(|_| {})
        .probe_timeout(Duration::from_millis(300))
        .spawn(server_command("modern-32022-then-silent", Some(&wire)));
    let connected = match outcome {
        Ok(client) => {
            let era = client.era();
            let _ = client.close();
            Some(era)
        }
        Err(_) => None,
    };
    let methods = methods(&wire.lines());
    ensure!(
        !methods.iter().any(|m| m == "initialize"),
        "the client sent initialize after -32022 (connected: {connected:?}); the wire: {methods:?}"
    );
    ensure!(connected.is_none(), "connected as {connected:?}");
    Ok(String::new())
}

/// `asks-then-hangs`: a modern server whose `tools/call` answers
/// `input_required` (one `elicitation/create`, key `name`) and never
/// answers the retry that carries `inputResponses`.
pub fn fake_asks_then_hangs() -> ! {
    each_request(|out, id, method, msg| match method {
        "server/discover" => send(out, &reply(id, fake_discover("asks-then-hangs", "hangs"))),
        "tools/call" if msg.pointer("/params/inputResponses").is_some() => {}
        "tools/call" => {
            let elicit = json!({ "method": "elicitation/create", "params": {
                "mode": "form", "message": "Your name?",
                "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } } }
            }});
            send(
                out,
                &reply(
                    id,
                    json!({ "resultType": "input_required", "inputRequests": { "name": elicit } }),
                ),
            );
        }
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// Review of issue 47, item 5 (`RequestOptions::reset_timeout_on_progress`:
/// "never waits longer than `max` in all ... A `max` below the timeout
/// cuts every wait at `max`"): a call answered `input_required` is retried
/// with options of the timeout only (`Client::rounds`), so the retry's
/// wait is the timeout's, not cut at `max`. Here timeout 5 s, `max`
/// 300 ms, an elicitation handler that answers at once, and a retry never
/// answered: the call must give up within about `max`, not 5 s.
pub fn reset_timeout_on_progress_caps_the_retry_of_an_input_required_call() -> Result<String, String>
{
    let client = builder()
        .trace(|_| {})
        .on_elicitation(|_| {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("x"));
            Ok(ElicitResult::accept(content))
        })
        .spawn(server_command("asks-then-hangs", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let options = RequestOptions::new()
        .timeout(Duration::from_secs(5))
        .reset_timeout_on_progress(Duration::from_millis(300));
    let started = Instant::now();
    let outcome = client.call_tool_with("ask", json!({}), options);
    let took = started.elapsed();
    close_ok(client)?;
    ensure!(
        matches!(outcome, Err(Error::Timeout)),
        "the call: {outcome:?} after {took:?}"
    );
    ensure!(
        took < Duration::from_secs(2),
        "the call gave up after {took:?}, with max 300 ms and a timeout of 5 s"
    );
    Ok(format!("gave up after {}", ms(took)))
}
