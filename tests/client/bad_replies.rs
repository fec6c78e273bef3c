//! Answers a client cannot use: too large, malformed, or lists that are
//! not lists. Each fails the request it answers at once (never the
//! request timeout), with an error that says what was wrong, and the
//! client sends no cancellation for a request that was answered.

use super::*;

const MIB: usize = 1024 * 1024;

/// `huge-replies`: `tools/call` of `big` with `{"mib": n}` answers with a
/// text of `n` MiB, its `id` last as the TypeScript SDK writes it, in
/// 1 MiB writes; any other tool is echoed.
pub fn fake_huge_replies() -> ! {
    each_request(|out, id, method, msg| match method {
        "server/discover" => send(out, &reply(id, fake_discover("huge", "huge-replies fake"))),
        "tools/call" if tool_name(msg) == "big" => {
            let mib = msg
                .pointer("/params/arguments/mib")
                .and_then(Value::as_u64)
                .unwrap_or(1);
            let (head, tail) = huge_reply_parts(id);
            send_raw(out, head.as_bytes());
            let chunk = vec![b'x'; MIB];
            for _ in 0..mib {
                send_raw(out, &chunk);
            }
            send_raw(out, tail.as_bytes());
        }
        "tools/call" => send(out, &reply(id, text_result(&echo_text(msg)))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// What comes before and after the text of a `huge-replies` answer.
fn huge_reply_parts(id: &Value) -> (String, String) {
    let head = r#"{"result":{"resultType":"complete","content":[{"type":"text","text":""#;
    let tail = format!("\"}}]}},\"jsonrpc\":\"2.0\",\"id\":{id}}}\n");
    (head.to_owned(), tail)
}

/// The malformed answers of `malformed-replies`, by tool name: the line
/// (with `ID` for the request's id) and what the client's error must say.
const MALFORMED: &[(&str, &str, &str)] = &[
    (
        "jsonrpc-1.0",
        r#"{"jsonrpc":"1.0","id":ID,"result":{}}"#,
        r#"could not be read: it lacks "jsonrpc": "2.0""#,
    ),
    (
        "no-jsonrpc",
        r#"{"id":ID,"result":{}}"#,
        r#"could not be read: it lacks "jsonrpc": "2.0""#,
    ),
    (
        "result-and-error",
        r#"{"jsonrpc":"2.0","id":ID,"result":{},"error":{"code":-32603,"message":"m"}}"#,
        "is malformed: it has both a result and an error",
    ),
    (
        "neither",
        r#"{"jsonrpc":"2.0","id":ID}"#,
        "is malformed: it has neither a result nor an error",
    ),
    (
        "bad-error",
        r#"{"jsonrpc":"2.0","id":ID,"error":{"code":"oops","message":"m"}}"#,
        "is malformed: its error is not a JSON-RPC error object",
    ),
    (
        "lone-surrogate",
        r#"{"jsonrpc":"2.0","id":ID,"error":{"code":-32603,"message":"\ud800"}}"#,
        "is malformed: its error is not a JSON-RPC error object: unexpected end of hex escape",
    ),
    (
        "result-not-object",
        r#"{"jsonrpc":"2.0","id":ID,"result":5}"#,
        "is malformed: its result is not an object: 5",
    ),
    (
        "wrong-shape",
        r#"{"jsonrpc":"2.0","id":ID,"result":{"content":5}}"#,
        "the server's tools/call result is invalid: invalid type: integer `5`",
    ),
    (
        "lone-surrogate-in-result",
        r#"{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"\udc00"}]}}"#,
        "the server's tools/call result is invalid",
    ),
    (
        "not-json",
        // Brackets that do not match, but balance: the id can be read.
        r#"{"jsonrpc":"2.0","id":ID,"result":{"content":[}}}"#,
        "could not be read: it is not JSON-RPC",
    ),
];

/// `malformed-replies`: answers `tools/call` of each tool named in
/// [`MALFORMED`] with its line; echoes `echo`.
pub fn fake_malformed_replies() -> ! {
    each_request(|out, id, method, msg| match method {
        "server/discover" => send(out, &reply(id, fake_discover("malformed", "fake"))),
        "tools/call" => match MALFORMED.iter().find(|(name, ..)| *name == tool_name(msg)) {
            Some((_, line, _)) => {
                let line = line.replace("ID", &id.to_string());
                send_raw(out, format!("{line}\n").as_bytes());
            }
            None => send(out, &reply(id, text_result(&echo_text(msg)))),
        },
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// `bad-lists`: `tools/list` answers with `resultType: "banana"` (and with
/// `tools` of the wrong type for the cursor `wrong-type`);
/// `resources/list` without its `resources`; `prompts/list` pages
/// `A → B → A`, a cycle; `resources/templates/list` hands out a new
/// cursor on every page, forever.
pub fn fake_bad_lists() -> ! {
    each_request(|out, id, method, msg| {
        let cursor = msg.pointer("/params/cursor").and_then(Value::as_str);
        let template = json!({ "uriTemplate": "t://{x}", "name": "t" });
        let result = match (method, cursor) {
            ("server/discover", _) => {
                let mut discover = fake_discover("bad-lists", "fake");
                discover["capabilities"] = json!({ "tools": {}, "resources": {}, "prompts": {} });
                discover
            }
            ("tools/list", Some("wrong-type")) => json!({ "tools": { "echo": {} } }),
            ("tools/list", _) => {
                json!({ "resultType": "banana", "tools": [{ "name": "t", "inputSchema": { "type": "object" } }] })
            }
            ("resources/list", _) => json!({ "resultType": "complete" }),
            ("prompts/list", None) => json!({ "prompts": [{ "name": "p0" }], "nextCursor": "A" }),
            ("prompts/list", Some("A")) => {
                json!({ "prompts": [{ "name": "pA" }], "nextCursor": "B" })
            }
            ("prompts/list", Some(_)) => {
                json!({ "prompts": [{ "name": "pB" }], "nextCursor": "A" })
            }
            ("resources/templates/list", cursor) => {
                let n = cursor.and_then(|c| c.parse::<u64>().ok()).unwrap_or(0);
                json!({ "resourceTemplates": [template], "nextCursor": (n + 1).to_string() })
            }
            _ => {
                send(out, &error_reply(id, -32601, "Method not found", None));
                return;
            }
        };
        send(out, &reply(id, result));
    });
    std::process::exit(0);
}

/// Sends a `sampling/createMessage` request of 17 MiB, its id last.
pub fn send_huge_request(out: &mut impl Write, id: &str) {
    let head = r#"{"jsonrpc":"2.0","method":"sampling/createMessage","params":{"maxTokens":1,"messages":[{"role":"user","content":{"type":"text","text":""#;
    send_raw(out, head.as_bytes());
    let chunk = vec![b'x'; MIB];
    for _ in 0..17 {
        send_raw(out, &chunk);
    }
    send_raw(out, format!("\"}}}}]}},\"id\":\"{id}\"}}\n").as_bytes());
}

/// After the bad answers: the connection still serves, and the client
/// cancelled none of the requests they answered.
fn still_serving_and_nothing_cancelled(client: Client, wire: &Wire) -> Result<(), String> {
    expect_text(
        "echo after the bad answers",
        client.call_tool("echo", json!({ "text": "still fine" })),
        "still fine",
    )?;
    close_ok(client)?;
    let lines = wire.lines();
    check_client_wire(&lines)?;
    let cancelled: Vec<&Value> = lines
        .iter()
        .filter(|l| method_of(l) == Some("notifications/cancelled"))
        .map(|l| &l["params"]["requestId"])
        .collect();
    ensure!(
        cancelled.is_empty(),
        "the client cancelled requests the server had answered: {cancelled:?}"
    );
    Ok(())
}

pub fn huge_reply_fails_its_request_at_once() -> Result<String, String> {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = vm_hwm_kib()?;
    let wire = Wire::new("huge");
    let client = builder()
        .spawn(server_command("huge-replies", Some(&wire)))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let mut notes = Vec::new();
    for mib in [20, 100] {
        let started = Instant::now();
        let outcome = client.call_tool("big", json!({ "mib": mib }));
        let took = started.elapsed();
        // The line: head, the text, tail without its newline.
        let id = client_request_ids(&wire.lines(), "tools/call")
            .last()
            .cloned()
            .ok_or("no tools/call on the wire")?;
        let (head, tail) = huge_reply_parts(&id);
        let size = head.len() + mib * MIB + tail.len() - 1;
        match outcome {
            Err(Error::MessageTooLarge { size: got, limit }) => {
                ensure!(
                    got == size && limit == mcp_stdio::DEFAULT_MAX_LINE_BYTES,
                    "{mib} MiB: MessageTooLarge {{ size: {got}, limit: {limit} }}, want size {size} and the default limit"
                );
            }
            other => return Err(format!("{mib} MiB: {other:?}, want MessageTooLarge")),
        }
        ensure!(
            took < Duration::from_secs(10),
            "{mib} MiB: the failure took {took:?}: the request waited for its timeout"
        );
        notes.push(format!("{mib} MiB failed in {}", ms(took)));
    }
    let message = Error::MessageTooLarge { size: 5, limit: 4 }.to_string();
    ensure!(
        message == "the answer is a message of 5 bytes, over the maximum line length of 4 bytes",
        "the error says {message:?}"
    );
    still_serving_and_nothing_cancelled(client, &wire)?;
    let after = vm_hwm_kib()?;
    let growth = after.saturating_sub(before);
    ensure!(
        growth < 28 * 1024,
        "peak RSS grew by {growth} kB for a 100 MiB line: more than the 16 MiB limit and some slack"
    );
    Ok(format!("{}; VmHWM +{growth} kB", notes.join(", ")))
}

/// The ids of the requests of `method` the client wrote.
fn client_request_ids(lines: &[Value], method: &str) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| method_of(l) == Some(method))
        .map(|l| l["id"].clone())
        .collect()
}

pub fn a_legacy_servers_huge_request_is_answered() -> Result<String, String> {
    // The refusal is a note the test reads, not a line on its stderr.
    let (note_tx, notes) = crossbeam_channel::unbounded();
    let client = builder()
        .trace(move |note| {
            let _ = note_tx.send(note.to_owned());
        })
        .on_sampling(|_| {
            Err(Error::Protocol(
                "never asked: the request was too large".into(),
            ))
        })
        .spawn(server_command("legacy-asks", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let answers = legacy_asks_answers(&client, "huge-ask")?;
    let answer = &answers["s-huge"];
    ensure!(
        answer["id"] == "s-huge"
            && answer["error"]["code"] == -32600
            && answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("exceeds the maximum line length of 16777216 bytes")),
        "the client answered the server's huge request with {answer}"
    );
    close_ok(client)?;
    let notes: Vec<String> = notes.try_iter().collect();
    ensure!(
        notes.iter().any(|n| n.starts_with("refused a request of ")
            && n.ends_with("(id \"s-huge\"): longer than 16777216")),
        "no note of the refused request: {notes:?}"
    );
    Ok(String::new())
}

pub fn malformed_replies_fail_their_request_at_once() -> Result<String, String> {
    let wire = Wire::new("malformed");
    let client = builder()
        .spawn(server_command("malformed-replies", Some(&wire)))
        .map_err(|e| format!("connecting failed: {e}"))?;
    for (name, _, want) in MALFORMED {
        let started = Instant::now();
        let outcome = client.call_tool(name, json!({}));
        let took = started.elapsed();
        match outcome {
            Err(Error::Protocol(text)) => ensure!(
                text.contains(want),
                "{name}: the error says {text:?}, want it to contain {want:?}"
            ),
            other => return Err(format!("{name}: {other:?}, want a protocol error")),
        }
        ensure!(
            took < Duration::from_secs(10),
            "{name}: the failure took {took:?}: the request waited for its timeout"
        );
    }
    still_serving_and_nothing_cancelled(client, &wire)?;
    Ok(format!("{} malformed answers", MALFORMED.len()))
}

pub fn list_pages_are_checked_like_single_pages() -> Result<String, String> {
    let wire = Wire::new("lists");
    let client = builder()
        .max_pages(50)
        .spawn(server_command("bad-lists", Some(&wire)))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let protocol_error = |what: &str, res: Result<Vec<String>, Error>, want: &str| match res {
        Err(Error::Protocol(text)) if text.contains(want) => Ok(()),
        other => Err(format!(
            "{what}: {other:?}, want a protocol error saying {want:?}"
        )),
    };
    // An unknown resultType: the one page and every page alike.
    let banana = r#"unknown resultType "banana""#;
    protocol_error(
        "list_tools",
        client.list_tools(None).map(|_| Vec::new()),
        banana,
    )?;
    protocol_error(
        "tools()",
        client.tools().map(|t| t.map(|t| t.name)).collect(),
        banana,
    )?;
    protocol_error(
        "list_tools(wrong-type)",
        client.list_tools(Some("wrong-type")).map(|_| Vec::new()),
        "the server's tools/list result is invalid: invalid type: map",
    )?;
    // A page without its list is an error, not an empty page.
    protocol_error(
        "resources()",
        client.resources().map(|r| r.map(|r| r.uri)).collect(),
        "the server's resources/list result is invalid: missing field `resources`",
    )?;
    // A cursor seen before, not only the last one, is a cycle.
    let prompts: Vec<Result<String, Error>> = client.prompts().map(|p| p.map(|p| p.name)).collect();
    let names: Vec<&str> = prompts.iter().filter_map(|p| p.as_deref().ok()).collect();
    ensure!(
        names == ["p0", "pA"],
        "prompts before the cycle: {names:?} (all: {prompts:?})"
    );
    match prompts.last() {
        Some(Err(Error::Protocol(text))) if text.contains("\"A\"") && text.contains("cycle") => {}
        other => {
            return Err(format!(
                "prompts(): ends with {other:?}, want a cycle error"
            ));
        }
    }
    // A server that never stops paging stops at the cap.
    let templates: Vec<Result<String, Error>> = client
        .resource_templates()
        .map(|t| t.map(|t| t.name))
        .collect();
    let fetched = templates.iter().filter(|t| t.is_ok()).count();
    ensure!(
        fetched == 50,
        "{fetched} templates before the cap of 50 pages"
    );
    match templates.last() {
        Some(Err(Error::Protocol(text))) if text.contains("50 pages") => {}
        other => {
            return Err(format!(
                "resource_templates(): ends with {other:?}, want the cap"
            ));
        }
    }
    close_ok(client)?;
    let lines = wire.lines();
    let pages = client_request_ids(&lines, "resources/templates/list").len();
    ensure!(pages == 50, "{pages} template pages requested, want 50");
    Ok(String::new())
}
