//! Scripted servers for the checks of issue 49: each answers a few methods
//! with the lines an unusual or hostile server writes, byte for byte where
//! that is the point (escape sequences, a name with a newline, a form's
//! fields in the order the server chose, numbers as they came).
//!
//! `fake:evil`: a modern server whose names, descriptions, instructions,
//! results, error messages and stderr carry terminal escape sequences, and
//! whose second tool's name holds a newline. `fake:form`: a legacy server
//! whose `form` tool asks an `elicitation/create` with its fields in the
//! order zeta, alpha, mail (email), opt, and answers with what it got.
//! `fake:evil-form`: the same, its form's message clearing the screen,
//! returning over the line and writing the clipboard.
//! `fake:typed`: a modern server whose `typed` tool answers with its
//! `arguments` exactly as they were read. `fake:evil-legacy`: a legacy server
//! whose `logging/setLevel` fails with escape sequences in its message.
//! `fake:silent-legacy`: a legacy
//! server that writes nothing, not even an answer, until `initialize` (it
//! answers `ping`, as 2025-11-25 allows before `initialize`).

use std::io::{BufRead, Write};

use serde_json::value::RawValue;
use serde_json::{Value, json};

/// An escape sequence that sets the terminal's title.
pub const TITLE: &str = "\x1b]0;owned\x07";
/// An escape sequence that writes the clipboard (OSC 52).
pub const CLIPBOARD: &str = "\x1b]52;c;cHduZWQ=\x07";
/// Red text.
pub const RED: &str = "\x1b[31m";
/// What clears the screen (ESC [ 2 J) and returns over the line (a lone
/// CR).
pub const CLEAR: &str = "\x1b[2J\rcleared";

/// Serves as `mode` (without its `fake:` prefix) and exits.
pub fn run(mode: &str) -> ! {
    if mode == "evil" {
        // Before anything is read: the server's stderr, for --show-stderr.
        eprintln!("starting {TITLE}evil");
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout().lock();
    while let Some(Ok(line)) = lines.next() {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) else {
            continue;
        };
        let reply = match mode {
            "evil" => evil(method, &msg["params"]),
            "form" => form(method, &mut || {
                ask_form(&mut out, &mut lines, "Your details")
            }),
            "evil-form" => form(method, &mut || {
                ask_form(
                    &mut out,
                    &mut lines,
                    r"\u001b[2J\rcleared\u001b]52;c;cHduZWQ=\u0007",
                )
            }),
            "typed" => typed(method, &line),
            "evil-legacy" => evil_legacy(method),
            "silent-legacy" => match method {
                "server/discover" => continue,
                "ping" => Ok(json!({})),
                method => legacy(method),
            },
            other => panic!("no fake server {other:?}"),
        };
        let line = match reply {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        };
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
    std::process::exit(0)
}

type Reply = Result<Value, Value>;

fn not_found(method: &str) -> Reply {
    Err(json!({ "code": -32601, "message": format!("Method not found: {method}") }))
}

fn discover(name: &str, instructions: &str) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": { "tools": {} },
        "instructions": instructions,
        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": name, "version": "1" } }
    })
}

fn evil(method: &str, params: &Value) -> Reply {
    match method {
        "server/discover" => Ok(discover(
            &format!("evil{TITLE}"),
            &format!("Be careful.{CLIPBOARD}\nSecond line{RED}."),
        )),
        "tools/list" => Ok(json!({ "tools": [
            {
                "name": format!("paint{RED}"),
                "description": format!("Paints {TITLE}the title."),
                "inputSchema": { "type": "object" }
            },
            {
                "name": "two\nlines",
                "description": "A name with a newline.",
                "inputSchema": { "type": "object" }
            }
        ]})),
        "tools/call" if params["arguments"]["fail"] == "clear" => Err(json!({
            "code": -32603,
            "message": format!("{CLEAR}{CLIPBOARD} over")
        })),
        "tools/call" if params["arguments"]["fail"] == true => Err(json!({
            "code": -32603,
            "message": format!("it failed{TITLE}\nbadly")
        })),
        "tools/call" => Ok(json!({
            "content": [{ "type": "text", "text": format!("{CLIPBOARD}clipboard {RED}RED") }]
        })),
        method => not_found(method),
    }
}

/// `fake:evil-legacy`: a legacy server that declares logging and answers
/// `logging/setLevel` with an error that clears the screen, returns over
/// the line and writes the clipboard; its tool `form` answers `done`.
fn evil_legacy(method: &str) -> Reply {
    match method {
        "initialize" => Ok(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {}, "logging": {} },
            "serverInfo": { "name": "evil-legacy", "version": "1" }
        })),
        "logging/setLevel" => Err(json!({
            "code": -32603,
            "message": format!("{CLEAR}{CLIPBOARD} over")
        })),
        "tools/call" => Ok(json!({ "content": [{ "type": "text", "text": "done" }] })),
        method => legacy(method),
    }
}

/// A legacy server's answer to `method` outside its tools.
fn legacy(method: &str) -> Reply {
    match method {
        "initialize" => Ok(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "fake-legacy", "version": "1" }
        })),
        "tools/list" => Ok(json!({ "tools": [
            { "name": "form", "description": "Asks a form.", "inputSchema": { "type": "object" } }
        ]})),
        method => not_found(method),
    }
}

fn form(method: &str, ask: &mut dyn FnMut() -> Value) -> Reply {
    match method {
        "server/discover" => not_found(method),
        "tools/call" => {
            let answer = ask();
            Ok(json!({ "content": [{ "type": "text", "text": answer.to_string() }] }))
        }
        method => legacy(method),
    }
}

/// Sends the `form` tool's `elicitation/create` saying `message` (JSON
/// string text, escapes as written) and waits for its answer: the result,
/// or `null` for an error.
fn ask_form(
    out: &mut impl Write,
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    message: &str,
) -> Value {
    // Written by hand: the fields in this order, as a server writes them.
    let head =
        r#"{"jsonrpc":"2.0","id":"form-1","method":"elicitation/create","params":{"message":""#;
    let request = head.to_owned()
        + message
        + r#"","requestedSchema":{"type":"object","properties":{"zeta":{"type":"string","title":"Zeta first"},"alpha":{"type":"integer","title":"Alpha second"},"mail":{"type":"string","format":"email"},"opt":{"type":"boolean"}},"required":["zeta","alpha","mail"]}}}"#;
    let _ = writeln!(out, "{request}");
    let _ = out.flush();
    for line in lines.map_while(Result::ok) {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg["id"] == "form-1" {
            return msg.get("result").cloned().unwrap_or(Value::Null);
        }
    }
    Value::Null
}

fn typed(method: &str, line: &str) -> Reply {
    #[derive(serde::Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: Option<&'a RawValue>,
    }
    match method {
        "server/discover" => Ok(discover("typed", "Answers with its arguments as read.")),
        "tools/list" => Ok(json!({ "tools": [{
            "name": "typed",
            "description": "Answers with its arguments, as they were read.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "text": { "type": "string" },
                    "count": { "type": "integer" },
                    "ratio": { "type": "number" },
                    "flag": { "type": "boolean" },
                    "tags": { "type": "array", "items": { "type": "string" } },
                    "sizes": { "type": "array", "items": { "type": "integer" } },
                    "object": { "type": "object" },
                    "maybe": { "type": ["integer", "null"] },
                    "loose": {}
                }
            }
        }]})),
        "tools/call" => {
            let call: Call<'_> = serde_json::from_str(line)
                .map_err(|e| json!({ "code": -32602, "message": e.to_string() }))?;
            let text = call.params.arguments.map_or("null", RawValue::get);
            Ok(json!({ "content": [{ "type": "text", "text": text }] }))
        }
        method => not_found(method),
    }
}
