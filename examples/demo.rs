//! A guided tour of the protocol: runs the everything fixture server in
//! this process over an in-memory transport, sends it a short session, and
//! prints every line that crosses the wire (`→` to the server, `←` back).
//!
//! ```text
//! cargo run --release --example demo
//! ```
//!
//! To talk to a server process instead, pipe JSON lines into
//! `cargo run --release --example everything` (see the README).

#[path = "everything/conformance.rs"]
mod conformance;
#[path = "everything/fixtures.rs"]
mod fixtures;
#[path = "everything/server.rs"]
mod server;

use std::io::{BufRead, Write};

use mcp_stdio::Transport;
use serde_json::{Value, json};

fn main() {
    let (client, server_end) = Transport::memory();
    let server = server::build();
    let serving = std::thread::spawn(move || server.serve(server_end));
    let (mut from_server, mut to_server) = client.into_parts();

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "demo", "version": "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let with_meta = |extra: Value| {
        let mut params = json!({ "_meta": meta.clone() });
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        params
    };
    let steps: Vec<(&str, Value, usize)> = vec![
        (
            "Discover the server: versions, capabilities, identity.",
            json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":with_meta(json!({}))}),
            1,
        ),
        (
            "Call a tool.",
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":with_meta(json!({"name":"echo","arguments":{"text":"hello, MCP"}}))}),
            1,
        ),
        (
            "Structured output.",
            json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":with_meta(json!({"name":"add","arguments":{"a":2,"b":40}}))}),
            1,
        ),
        (
            "Progress: the request carries a progressToken, so notifications come first.",
            json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"progressToken":"p4","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"progress","arguments":{"steps":2}}}),
            3,
        ),
        (
            "A tool that fails is still a result (isError), visible to the model.",
            json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":with_meta(json!({"name":"fail"}))}),
            1,
        ),
        (
            "Read a resource.",
            json!({"jsonrpc":"2.0","id":6,"method":"resources/read","params":with_meta(json!({"uri":"mem://counter"}))}),
            1,
        ),
        (
            "Get a prompt.",
            json!({"jsonrpc":"2.0","id":7,"method":"prompts/get","params":with_meta(json!({"name":"greet","arguments":{"name":"Ada"}}))}),
            1,
        ),
        (
            "Protocol errors: an unknown tool, and a request without _meta.",
            json!({"jsonrpc":"2.0","id":8,"method":"tools/call","params":with_meta(json!({"name":"nope"}))}),
            1,
        ),
        (
            "",
            json!({"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}),
            1,
        ),
        (
            "An unsupported protocol version.",
            json!({"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}),
            1,
        ),
    ];
    let mut line = String::new();
    for (title, req, replies) in steps {
        if !title.is_empty() {
            println!("\n# {title}");
        }
        let text = serde_json::to_string(&req).unwrap();
        println!("→ {text}");
        writeln!(to_server, "{text}").unwrap();
        for _ in 0..replies {
            line.clear();
            from_server.read_line(&mut line).unwrap();
            print!("← {line}");
        }
    }

    println!("\n# Cancellation: a slow call is cancelled; it never gets a reply.");
    let slow = json!({"jsonrpc":"2.0","id":11,"method":"tools/call","params":with_meta(json!({"name":"slow","arguments":{"ms":60000}}))});
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11,"reason":"user pressed stop"}});
    for msg in [slow, cancel] {
        let text = serde_json::to_string(&msg).unwrap();
        println!("→ {text}");
        writeln!(to_server, "{text}").unwrap();
    }

    println!("\n# End of input: the server finishes and returns.");
    drop(to_server);
    let mut rest = String::new();
    while from_server.read_line(&mut rest).unwrap() > 0 {}
    assert!(rest.is_empty(), "nothing more was expected, got {rest}");
    println!("serve returned {:?}", serving.join().unwrap());
}
