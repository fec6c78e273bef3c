//! The client against a scripted peer over an in-memory transport: the
//! exact lines it writes, and how it reads what comes back.

use std::io::{BufRead, Write};
use std::thread;

use mcp_stdio::types::{ClientCapabilities, ElicitationCapability};
use mcp_stdio::{Client, Era, EraPolicy, Error, Outcome, Transport};
use serde_json::{Value, json};

/// The test's end: reads the client's lines, writes replies.
struct Script {
    reader: Box<dyn BufRead + Send>,
    writer: Box<dyn Write + Send>,
}

impl Script {
    fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.writer, "{msg}").unwrap();
        self.writer.flush().unwrap();
    }

    /// Writes `line` as it is, with a newline.
    fn send_raw(&mut self, line: &str) {
        writeln!(self.writer, "{line}").unwrap();
        self.writer.flush().unwrap();
    }

    /// The next line as it came; `None` at the end of the client's output.
    fn recv_raw(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    }
}

fn pair() -> (Transport, Script) {
    let (ours, theirs) = Transport::memory();
    let (reader, writer) = theirs.into_parts();
    (ours, Script { reader, writer })
}

fn discover_result() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": { "tools": {} },
        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "scripted", "version": "9" } }
    })
}

// req: client:probe-wire
#[test]
fn the_probe_and_every_modern_request_carry_the_protocol_meta() {
    let (transport, mut server) = pair();
    let peer = thread::spawn(move || {
        let probe = server.recv();
        assert_eq!(
            probe,
            json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "wire-test", "version": "1.2.3" },
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} }
            }}})
        );
        server.send(json!({ "jsonrpc": "2.0", "id": 1, "result": discover_result() }));
        let call = server.recv();
        assert_eq!(
            call,
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "echo", "arguments": { "text": "hi" },
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": { "name": "wire-test", "version": "1.2.3" },
                    "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} }
                }
            }})
        );
        // No resultType: complete (spec 2026-07-28 basic/index).
        server.send(json!({ "jsonrpc": "2.0", "id": 2, "result": { "content": [{ "type": "text", "text": "hi" }] } }));
        let call = server.recv();
        server.send(json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "resultType": "mystery", "content": [] } }));
        let call = server.recv();
        server.send(json!({ "jsonrpc": "2.0", "id": call["id"], "error": { "code": -32602, "message": "nope", "data": { "why": 1 } } }));
        server
    });
    let capabilities = ClientCapabilities {
        elicitation: Some(ElicitationCapability::default()),
        ..Default::default()
    };
    let client = Client::builder()
        .client_info("wire-test", "1.2.3")
        .capabilities(capabilities)
        .connect(transport)
        .unwrap();
    assert_eq!(
        client.era(),
        Era::Modern {
            version: "2026-07-28".into()
        }
    );
    assert_eq!(client.server_info().unwrap().name, "scripted");
    match client.call_tool("echo", json!({ "text": "hi" })).unwrap() {
        Outcome::Complete(result) => assert_eq!(result.content[0].as_text(), Some("hi")),
        other => panic!("{other:?}"),
    }
    // An unknown resultType is invalid.
    let err = client.call_tool("echo", json!({})).unwrap_err();
    assert!(
        matches!(&err, Error::Protocol(what) if what.contains("mystery")),
        "{err}"
    );
    // The peer's error keeps its code, message and data.
    match client.call_tool("echo", json!({})).unwrap_err() {
        Error::Rpc(e) => {
            assert_eq!(
                (e.code, e.message.as_str(), e.data),
                (-32602, "nope", Some(json!({ "why": 1 })))
            );
        }
        other => panic!("{other}"),
    }
    let _server = peer.join().unwrap();
}

#[cfg(feature = "legacy")]
#[test]
fn an_unknown_method_error_to_the_probe_means_legacy_and_initialize_follows() {
    let (transport, mut server) = pair();
    let peer = thread::spawn(move || {
        let probe = server.recv();
        assert_eq!(probe["method"], "server/discover");
        server.send(json!({ "jsonrpc": "2.0", "id": probe["id"], "error": { "code": -32601, "message": "Method not found" } }));
        let init = server.recv();
        assert_eq!(init["method"], "initialize");
        assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
        assert_eq!(init["params"]["clientInfo"]["name"], "mcp-stdio");
        server.send(json!({ "jsonrpc": "2.0", "id": init["id"], "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "old", "version": "1" }
        }}));
        assert_eq!(
            server.recv(),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized", "params": {} })
        );
        let call = server.recv();
        // Legacy requests carry no per-request protocol fields.
        assert_eq!(
            call["params"],
            json!({ "name": "echo", "arguments": { "text": "x" } })
        );
        server.send(json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    });
    let client = Client::connect(transport).unwrap();
    assert_eq!(
        client.era(),
        Era::Legacy {
            version: "2025-06-18".into()
        }
    );
    assert!(matches!(
        client.call_tool("echo", json!({ "text": "x" })).unwrap(),
        Outcome::Complete(_)
    ));
    peer.join().unwrap();
}

/// Without the `legacy` feature the client refuses a legacy server and
/// says why, instead of falling back to `initialize`.
#[cfg(not(feature = "legacy"))]
#[test]
fn without_the_legacy_feature_a_legacy_server_is_refused() {
    let (transport, mut server) = pair();
    let peer = thread::spawn(move || {
        let probe = server.recv();
        server.send(json!({ "jsonrpc": "2.0", "id": probe["id"], "error": { "code": -32601, "message": "Method not found" } }));
        server
    });
    let err = Client::connect(transport).unwrap_err();
    assert_eq!(
        err.to_string(),
        "protocol error: the server does not speak MCP 2026-07-28: it answered server/discover with Method not found (-32601) (a legacy server needs the `legacy` feature of mcp-stdio, which this build leaves out)"
    );
    drop(peer.join().unwrap());
}

#[test]
fn modern_only_names_what_a_legacy_server_said() {
    let (transport, mut server) = pair();
    let peer = thread::spawn(move || {
        let probe = server.recv();
        server.send(json!({ "jsonrpc": "2.0", "id": probe["id"], "error": { "code": -32602, "message": "Server not initialized" } }));
        server
    });
    let err = Client::builder()
        .era(EraPolicy::ModernOnly)
        .connect(transport)
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("Server not initialized") && text.contains("-32602"),
        "{text}"
    );
    drop(peer.join().unwrap());
}

#[test]
fn the_client_against_the_everything_server_in_memory() {
    let (ours, theirs) = Transport::memory();
    let server = crate::everything::build();
    let serving = thread::spawn(move || server.serve(theirs));
    let client = Client::connect(ours).unwrap();
    let names: Vec<String> = client.tools().map(|t| t.unwrap().name).collect();
    assert!(names.contains(&"echo".to_owned()) && names.contains(&"bump".to_owned()));
    match client
        .call_tool("echo", json!({ "text": "memory" }))
        .unwrap()
    {
        Outcome::Complete(result) => assert_eq!(result.content[0].as_text(), Some("memory")),
        other => panic!("{other:?}"),
    }
    assert_eq!(client.close().unwrap(), None);
    serving.join().unwrap().unwrap();
}

// req: mrtr:client-retries
#[test]
fn the_client_answers_input_requests_and_retries_round_after_round() {
    use mcp_stdio::types::{ElicitResult, ListRootsResult, Root};
    let (ours, theirs) = Transport::memory();
    let server = crate::everything::build();
    let serving = thread::spawn(move || server.serve(theirs));
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = asked.clone();
    let client = Client::builder()
        .on_elicitation(move |params| {
            let message = match params {
                mcp_stdio::types::ElicitRequestParams::Form(form) => form.message.clone(),
                mcp_stdio::types::ElicitRequestParams::Url(url) => url.message.clone(),
            };
            log.lock().unwrap().push(message.clone());
            let mut content = serde_json::Map::new();
            let field = if message.contains("colour") {
                "colour"
            } else {
                "name"
            };
            content.insert(
                field.into(),
                json!(if field == "colour" { "green" } else { "Ada" }),
            );
            Ok(ElicitResult::accept(content))
        })
        .on_roots(|| {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///w".into(),
                    name: None,
                    meta: None,
                }],
            })
        })
        // Declared by hand, with no handler: such input requests come back
        // to the caller.
        .capabilities(ClientCapabilities {
            sampling: Some(Default::default()),
            ..Default::default()
        })
        .connect(ours)
        .unwrap();
    match client
        .call_tool("test_input_required_result_multi_round", json!({}))
        .unwrap()
    {
        Outcome::Complete(result) => {
            assert_eq!(result.content[0].as_text(), Some("Ada likes green"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        *asked.lock().unwrap(),
        ["What is your name?", "Favourite colour?"]
    );
    match client
        .call_tool("test_input_required_result_list_roots", json!({}))
        .unwrap()
    {
        Outcome::Complete(result) => {
            assert_eq!(result.content[0].as_text(), Some("Roots: file:///w"))
        }
        other => panic!("{other:?}"),
    }
    // Declared but no sampling handler: the caller gets the input request back.
    match client
        .call_tool("test_input_required_result_sampling", json!({}))
        .unwrap()
    {
        Outcome::InputRequired(result) => {
            assert!(
                result
                    .input_requests
                    .unwrap()
                    .contains_key("capital_question")
            );
        }
        other => panic!("{other:?}"),
    }
    client.close().unwrap();
    serving.join().unwrap().unwrap();
}

/// The client's timeouts and grace periods at their longest ("no limit"):
/// no panic (`Instant + Duration::MAX` overflows), and everything works.
#[test]
fn a_client_with_every_timeout_at_its_longest_neither_panics_nor_hangs() {
    use mcp_stdio::RequestOptions;
    use mcp_stdio::types::SubscriptionFilter;
    use std::time::Duration;
    let (ours, theirs) = Transport::memory();
    let server = crate::everything::build();
    let serving = thread::spawn(move || server.serve(theirs));
    let client = Client::builder()
        .probe_timeout(Duration::MAX)
        .request_timeout(Duration::MAX)
        .close_grace(Duration::MAX)
        .connect(ours)
        .unwrap();
    let steps = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = steps.clone();
    let options = RequestOptions::new()
        .timeout(Duration::MAX)
        .reset_timeout_on_progress(Duration::MAX)
        .on_progress(move |_| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
    let result = client
        .request_with(
            "tools/call",
            json!({ "name": "progress", "arguments": { "steps": 3 } }),
            options,
        )
        .unwrap();
    assert_eq!(result["content"][0]["text"], "done", "{result}");
    assert_eq!(steps.load(std::sync::atomic::Ordering::Relaxed), 3);
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://counter".into()]),
        ..SubscriptionFilter::default()
    };
    let mut updates = client.listen(filter).unwrap();
    client.call("bump", json!({})).unwrap();
    assert!(updates.recv_timeout(Duration::MAX).unwrap().is_some());
    updates.cancel();
    assert_eq!(client.close().unwrap(), None);
    serving.join().unwrap().unwrap();
}

mod hostile;
