//! A typed tool's arguments on the wire, for every typed registration and
//! both eras: arguments that do not fit are a tool execution error the
//! model can read (spec 2026-07-28 server/tools, "Error Handling";
//! 2025-11-25 the same), while an unknown tool and `arguments` that is not
//! an object stay `-32602`. With `schemars`, a typed registration
//! advertises its argument type's schema unless the tool has its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Outcome, Server, TaskMode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{Peer, call, error, request};
use crate::tasks::task_request;

/// An order, as the model must send it.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct Order {
    /// What to order.
    item: String,
    /// How many.
    quantity: u8,
    /// Where to deliver it.
    address: Address,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct Address {
    /// The city.
    city: String,
}

fn ordered(order: &Order) -> CallToolResult {
    let Order {
        item,
        quantity,
        address,
    } = order;
    CallToolResult::text(format!("{quantity} {item} to {}", address.city))
}

/// The typed registrations this file checks, by tool name.
const TYPED: &[&str] = &["pooled", "inline", "task", "gated"];

/// A server with one tool per typed registration, all reading an
/// [`Order`], and a count of the handler and gate runs.
fn server() -> (Server, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (pooled, inline, task, gate, gated) = (
        Arc::clone(&runs),
        Arc::clone(&runs),
        Arc::clone(&runs),
        Arc::clone(&runs),
        Arc::clone(&runs),
    );
    let builder = Server::builder("orders", "1.0.0")
        .tool(Tool::new("pooled", "Orders."), move |_ctx, args: Order| {
            pooled.fetch_add(1, Ordering::SeqCst);
            Ok(ordered(&args))
        })
        .inline_tool(Tool::new("inline", "Orders."), move |_ctx, args: Order| {
            inline.fetch_add(1, Ordering::SeqCst);
            Ok(ordered(&args))
        })
        .task_tool(
            Tool::new("task", "Orders, as a task."),
            TaskMode::Optional,
            move |_ctx, args: Order| {
                task.fetch_add(1, Ordering::SeqCst);
                Ok(ordered(&args))
            },
        )
        .task_tool_with_gate(
            Tool::new("gated", "Orders, as a task, once allowed."),
            TaskMode::Optional,
            move |_ctx, _args: &Order| {
                gate.fetch_add(1, Ordering::SeqCst);
                Ok(Outcome::Complete(()))
            },
            move |_ctx, args: Order| {
                gated.fetch_add(1, Ordering::SeqCst);
                Ok(ordered(&args))
            },
        )
        .tool(Tool::new("raw", "Takes anything."), |_ctx, args: Value| {
            Ok(CallToolResult::text(args.to_string()))
        })
        .tool(
            Tool::new("by_hand", "Its schema is its own.").input_schema(json!({
                "type": "object",
                "properties": { "item": { "type": "string" } }
            })),
            |_ctx, args: Order| Ok(ordered(&args)),
        );
    #[cfg(feature = "schemars")]
    let builder = builder.structured_tool(
        Tool::new("structured", "Orders, with a receipt."),
        |_ctx, args: Order| {
            Ok(Receipt {
                total: args.quantity,
            })
        },
    );
    (builder.build(), runs)
}

#[cfg(feature = "schemars")]
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Receipt {
    total: u8,
}

/// Arguments with a quantity that no `u8` holds.
fn too_many() -> Value {
    json!({ "item": "apples", "quantity": 300, "address": { "city": "Oslo" } })
}

/// What the model reads for [`too_many`].
const TOO_MANY: &str = "Invalid arguments: `quantity` must be an integer from 0 to 255, not the integer 300. Correct the arguments and call the tool again.";

/// Arguments whose nested object misses a field.
fn no_city() -> Value {
    json!({ "item": "apples", "quantity": 3, "address": {} })
}

/// What the model reads for [`no_city`].
const NO_CITY: &str = "Invalid arguments: the required field `address.city` is missing. Correct the arguments and call the tool again.";

/// The line of a modern result with `isError: true` and `text`, as the
/// server writes it.
fn modern_error_line(peer: &Peer, id: i64, text: &str) -> String {
    let text = serde_json::to_string(text).unwrap();
    let meta = serde_json::to_string(&peer.server_meta).unwrap();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":{text}}}],"isError":true,"resultType":"complete","_meta":{meta}}}}}"#
    )
}

#[test]
fn wrong_arguments_are_a_tool_error_for_every_typed_registration() {
    let (server, runs) = server();
    let mut peer = Peer::start(&server);
    let mut tools = TYPED.to_vec();
    if cfg!(feature = "schemars") {
        tools.push("structured");
    }
    let mut id = 0;
    for tool in tools {
        for (args, text) in [(too_many(), TOO_MANY), (no_city(), NO_CITY)] {
            id += 1;
            peer.send(&call(id, tool, args));
            assert_eq!(
                peer.recv_line(),
                modern_error_line(&peer, id, text),
                "{tool}"
            );
        }
    }
    // No handler ran.
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // Arguments that fit reach the handler.
    let fine = json!({ "item": "apples", "quantity": 3, "address": { "city": "Oslo" } });
    let resp = peer.ask(&call(100, "pooled", fine));
    assert_eq!(
        resp,
        peer.result(
            100,
            json!({ "content": [{ "type": "text", "text": "3 apples to Oslo" }] })
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    peer.finish_quietly();
}

/// A task tool reads its arguments before the task is created: a client
/// that declares the Tasks extension gets the tool error at once, with no
/// task to poll, and neither the gate nor the handler runs.
#[test]
fn wrong_arguments_to_a_task_tool_fail_before_the_task_is_created() {
    let (server, runs) = server();
    let mut peer = Peer::start(&server);
    for tool in ["task", "gated"] {
        let req = task_request(
            "tools/call",
            json!({ "name": tool, "arguments": too_many() }),
        );
        peer.send(&req);
        let id = req["id"].as_i64().unwrap();
        assert_eq!(peer.recv_line(), modern_error_line(&peer, id, TOO_MANY));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // Arguments that fit get a task handle, as the tool error above did not.
    let fine = json!({ "item": "apples", "quantity": 3, "address": { "city": "Oslo" } });
    let req = task_request("tools/call", json!({ "name": "task", "arguments": fine }));
    let resp = crate::tasks::reply(&mut peer, &req);
    crate::tasks::assert_create_result(&resp);
    peer.finish_quietly();
}

#[test]
fn an_unknown_tool_and_arguments_not_an_object_stay_invalid_params() {
    let (server, _) = server();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&call(1, "nope", too_many())),
        error(1, -32602, "invalid params: unknown tool: nope")
    );
    for (id, tool) in (2..).zip(TYPED) {
        assert_eq!(
            peer.ask(&call(id, tool, json!(["apples", 3]))),
            error(id, -32602, "invalid params: arguments must be an object")
        );
    }
    peer.finish_quietly();
}

/// The legacy era: the same result, without the modern stamps.
#[cfg(feature = "legacy")]
#[test]
fn wrong_arguments_are_a_tool_error_in_the_legacy_era() {
    let (server, runs) = server();
    let mut peer = Peer::start(&server);
    peer.send(&json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "legacy-test", "version": "0.1.0" }
        }
    }));
    let init = peer.recv();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    peer.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let legacy_call = |id: i64, tool: &str, args: Value| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": args }
        })
    };
    let mut id = 0;
    for tool in TYPED {
        id += 1;
        peer.send(&legacy_call(id, tool, too_many()));
        // Legacy replies are re-encoded (tests/it/legacy.rs): compared as
        // JSON, no `resultType`, no `_meta`.
        let line = peer.recv_line();
        let expected = json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": { "content": [{ "type": "text", "text": TOO_MANY }], "isError": true }
        });
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            expected,
            "{tool}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // An unknown tool and arguments not an object: still -32602.
    let resp = peer.ask(&legacy_call(20, "nope", json!({})));
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    assert_eq!(
        resp["error"]["message"],
        "invalid params: unknown tool: nope"
    );
    let resp = peer.ask(&legacy_call(21, "pooled", json!("apples")));
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    assert_eq!(
        resp["error"]["message"],
        "invalid params: arguments must be an object"
    );
    peer.finish_quietly();
}

/// The input schemas `tools/list` shows, by tool name.
fn input_schemas(peer: &mut Peer) -> serde_json::Map<String, Value> {
    let resp = peer.ask(&request(1, "tools/list", json!({})));
    resp["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {resp}"))
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["inputSchema"].clone(),
            )
        })
        .collect()
}

/// With `schemars`, every typed registration advertises the schema of its
/// argument type; a hand-written schema wins; `Value` takes any object.
#[cfg(feature = "schemars")]
#[test]
fn typed_registrations_advertise_the_derived_input_schema() {
    let (server, _) = server();
    let mut peer = Peer::start(&server);
    let schemas = input_schemas(&mut peer);
    let derived = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Order",
        "description": "An order, as the model must send it.",
        "type": "object",
        "properties": {
            "item": { "description": "What to order.", "type": "string" },
            "quantity": {
                "description": "How many.",
                "type": "integer",
                "format": "uint8",
                "minimum": 0,
                "maximum": 255
            },
            "address": {
                "description": "Where to deliver it.",
                "type": "object",
                "properties": { "city": { "description": "The city.", "type": "string" } },
                "required": ["city"]
            }
        },
        "required": ["item", "quantity", "address"]
    });
    for tool in TYPED.iter().chain(&["structured"]) {
        assert_eq!(schemas[*tool], derived, "{tool}");
    }
    assert_eq!(schemas["raw"], json!({ "type": "object" }));
    assert_eq!(
        schemas["by_hand"],
        json!({ "type": "object", "properties": { "item": { "type": "string" } } })
    );
    // A tool added while serving advertises its schema the same way.
    server.add_tool(Tool::new("added", "Orders."), |_ctx, args: Order| {
        Ok(ordered(&args))
    });
    assert_eq!(input_schemas(&mut peer)["added"], derived);
    peer.finish_quietly();
}

/// Without `schemars`, a typed registration advertises what the tool
/// says: `{"type":"object"}` unless written by hand.
#[cfg(not(feature = "schemars"))]
#[test]
fn without_schemars_the_tool_says_its_own_schema() {
    let (server, _) = server();
    let mut peer = Peer::start(&server);
    let schemas = input_schemas(&mut peer);
    for tool in TYPED.iter().chain(&["raw"]) {
        assert_eq!(schemas[*tool], json!({ "type": "object" }), "{tool}");
    }
    assert_eq!(schemas["by_hand"]["properties"]["item"]["type"], "string");
    peer.finish_quietly();
}

/// Claim: a whole number written with a fraction or an exponent (`3.0`,
/// `3e0`, `-0`) is refused by a typed tool whose advertised schema says
/// `"type": "integer"`, though JSON Schema counts any number with a zero
/// fractional part as an integer, and some hosts send every number as a
/// double (a protobuf `Struct` holds no integers). The arguments are
/// read by serde straight from the text (`arguments.rs: read_arguments`),
/// and serde's integers take no float. On main: `quantity: 3.0` is
/// answered "`quantity` must be an integer from 0 to 255, not the
/// number 3.0".
#[test]
fn a_whole_number_written_as_a_float_reaches_an_integer_field() {
    let (server, _runs) = server();
    let mut peer = Peer::start(&server);
    for (id, quantity) in [(1, "3.0"), (2, "3e0"), (3, "0.3e1")] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"pooled","arguments":{{"item":"apples","quantity":{quantity},"address":{{"city":"Oslo"}}}},"_meta":{}}}}}"#,
            crate::support::meta()
        );
        peer.send_raw(format!("{line}\n").as_bytes());
        assert_eq!(
            peer.recv(),
            peer.result(
                id,
                json!({ "content": [{ "type": "text", "text": "3 apples to Oslo" }] })
            ),
            "{quantity}"
        );
    }
    // A fraction, or a whole number out of range, is still refused.
    for (id, quantity) in [(4, "3.5"), (5, "3e2")] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"pooled","arguments":{{"item":"apples","quantity":{quantity},"address":{{"city":"Oslo"}}}},"_meta":{}}}}}"#,
            crate::support::meta()
        );
        peer.send_raw(format!("{line}\n").as_bytes());
        let resp = peer.recv();
        assert_eq!(resp["result"]["isError"], true, "{quantity}: {resp}");
    }
    peer.finish_quietly();
}
