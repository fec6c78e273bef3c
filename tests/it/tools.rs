//! `tools/list` and `tools/call` (spec 2026-07-28 server/tools), pagination
//! (server/utilities/pagination) and tools that come and go while serving.

use mcp_stdio::types::{CallToolResult, ContentBlock, Tool};
use mcp_stdio::{ErrorObject, Server};
use serde_json::{Value, json};

use crate::support::{Peer, call, error, request};

/// The everything server's tools, in registration order.
pub(crate) const EVERYTHING_TOOLS: &[&str] = &[
    "echo",
    "add",
    "slow",
    "progress",
    "fail",
    "panic",
    "big",
    "bump",
    "toggle_tool",
    "add_tool",
    "stats",
    "end_listen",
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_tool_with_progress",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "json_schema_2020_12_tool",
    "test_tool_with_logging",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "ask",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
];

use crate::support::PNG;
/// The WAV clip of the conformance fixtures.
const WAV: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// A text-only successful tool result.
fn text_result(peer: &Peer, id: impl Into<Value>, text: &str) -> Value {
    peer.result(id, json!({ "content": [{ "type": "text", "text": text }] }))
}

fn names(resp: &Value) -> Vec<String> {
    resp["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {resp}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn tool_named<'a>(resp: &'a Value, name: &str) -> &'a Value {
    resp["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

/// The `isError` result a call with arguments that do not fit gets, for
/// the model to read.
pub(crate) fn wrong_arguments(peer: &Peer, id: impl Into<Value>, detail: &str) -> Value {
    let text =
        format!("Invalid arguments: {detail}. Correct the arguments and call the tool again.");
    peer.result(
        id,
        json!({ "content": [{ "type": "text", "text": text }], "isError": true }),
    )
}

#[test]
fn list_on_the_everything_server() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(1, "tools/list", json!({})));
    assert_eq!(names(&resp), EVERYTHING_TOOLS);
    for tool in resp["result"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name} has a description"
        );
        assert!(
            tool["inputSchema"].is_object(),
            "{name} has an input schema"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert!(
            name.len() <= 128
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
            "{name} follows the name format"
        );
    }
    // Everything but the tools themselves, exactly; no nextCursor: every
    // fixture is on the first page.
    let mut rest = resp.clone();
    rest["result"]["tools"] = json!([]);
    assert_eq!(
        rest,
        peer.result(
            1,
            json!({ "tools": [], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    // A few tools in full.
    assert_eq!(
        tool_named(&resp, "echo"),
        &json!({
            "name": "echo",
            "description": "Returns its text unchanged.",
            "inputSchema": {
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            }
        })
    );
    assert_eq!(
        tool_named(&resp, "add"),
        &json!({
            "name": "add",
            "description": "Adds two numbers.",
            "inputSchema": {
                "type": "object",
                "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
                "required": ["a", "b"]
            },
            "outputSchema": {
                "type": "object",
                "properties": { "sum": { "type": "number" } },
                "required": ["sum"]
            }
        })
    );
    assert_eq!(
        tool_named(&resp, "test_simple_text"),
        &json!({
            "name": "test_simple_text",
            "description": "Returns a simple text response.",
            "inputSchema": { "type": "object", "properties": {} }
        })
    );
    peer.finish_quietly();
}

#[test]
fn list_order_is_deterministic() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let first = peer.ask(&request(1, "tools/list", json!({})));
    for id in 2..=3 {
        let again = peer.ask(&request(id, "tools/list", json!({})));
        let mut expected = first.clone();
        expected["id"] = json!(id);
        assert_eq!(
            again, expected,
            "call {id} lists the same tools in the same order"
        );
    }
    peer.finish_quietly();
}

#[test]
fn json_schema_2020_12_is_preserved_verbatim() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(1, "tools/list", json!({})));
    assert_eq!(
        tool_named(&resp, "json_schema_2020_12_tool"),
        &json!({
            "name": "json_schema_2020_12_tool",
            "description": "Takes a JSON Schema 2020-12 input.",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "address",
                        "type": "object",
                        "properties": {
                            "street": { "type": "string" },
                            "city": { "type": "string" }
                        },
                        "required": ["street", "city"]
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                    "phone": { "type": "string" },
                    "email": { "type": "string" }
                },
                "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                "if": { "properties": { "contactMethod": { "const": "phone" } } },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] },
                "additionalProperties": false
            }
        })
    );
    peer.finish_quietly();
}

#[test]
fn echo_exact_line_bytes() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let version = env!("CARGO_PKG_VERSION");
    peer.send(&call(1, "echo", json!({ "text": "hello" })));
    assert_eq!(
        peer.recv_line(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"hello"}}],"resultType":"complete","_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"mcp-stdio-everything","version":"{version}"}}}}}}}}"#
        )
    );
    // Text comes back byte for byte: escapes, unicode, newlines (escaped on
    // the wire, so the reply stays one line), a string id.
    let tricky = "line1\nline2\t\"quoted\" \\ back ünï©ødé 😀 \u{0}\u{1f} </script>";
    peer.send(&call("e-2", "echo", json!({ "text": tricky })));
    let line = peer.recv_line();
    assert_eq!(
        line,
        format!(
            r#"{{"jsonrpc":"2.0","id":"e-2","result":{{"content":[{{"type":"text","text":{}}}],"resultType":"complete","_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"mcp-stdio-everything","version":"{version}"}}}}}}}}"#,
            serde_json::to_string(tricky).unwrap()
        )
    );
    let resp: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(resp["result"]["content"][0]["text"], tricky);
    // Empty text.
    assert_eq!(
        peer.ask(&call(3, "echo", json!({ "text": "" }))),
        text_result(&peer, 3, "")
    );
    peer.finish_quietly();
}

#[test]
fn add_returns_structured_content() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&call(1, "add", json!({ "a": 2, "b": 3 }))),
        peer.result(
            1,
            json!({
                "content": [{ "type": "text", "text": "5" }],
                "structuredContent": { "sum": 5.0 }
            })
        )
    );
    assert_eq!(
        peer.ask(&call(2, "add", json!({ "a": 1.5, "b": -0.25 }))),
        peer.result(
            2,
            json!({
                "content": [{ "type": "text", "text": "1.25" }],
                "structuredContent": { "sum": 1.25 }
            })
        )
    );
    // Missing b: a tool error the model can correct.
    assert_eq!(
        peer.ask(&call(3, "add", json!({ "a": 1 }))),
        wrong_arguments(&peer, 3, "the required field `b` is missing")
    );
    peer.finish_quietly();
}

#[test]
fn tool_execution_errors_are_results() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&call(1, "fail", json!({})));
    assert_eq!(
        resp,
        peer.result(
            1,
            json!({
                "content": [{ "type": "text", "text": "the fail fixture always fails" }],
                "isError": true
            })
        )
    );
    assert!(resp.get("error").is_none(), "not a JSON-RPC error");
    let resp = peer.ask(&call(2, "test_error_handling", json!({})));
    assert_eq!(
        resp,
        peer.result(
            2,
            json!({
                "content": [{ "type": "text", "text": "This tool intentionally returns an error for testing" }],
                "isError": true
            })
        )
    );
    peer.finish_quietly();
}

/// Spec 2026-07-28 server/tools, "Error Handling": arguments that do not
/// fit the tool are a tool execution error (`isError: true`) whose text
/// says which field and what it must be; only arguments that are not an
/// object break the request and are `-32602`.
#[test]
fn typed_argument_mismatch_is_a_tool_error() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    peer.send(&call(1, "echo", json!({ "text": 5 })));
    let meta = serde_json::to_string(&peer.server_meta).unwrap();
    assert_eq!(
        peer.recv_line(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"Invalid arguments: `text` must be a string, not the integer 5. Correct the arguments and call the tool again."}}],"isError":true,"resultType":"complete","_meta":{meta}}}}}"#
        )
    );
    // Empty arguments: the required field is missing.
    let missing = "the required field `text` is missing";
    assert_eq!(
        peer.ask(&call(2, "echo", json!({}))),
        wrong_arguments(&peer, 2, missing)
    );
    // No arguments at all reads as `{}`.
    let resp = peer.ask(&request(3, "tools/call", json!({ "name": "echo" })));
    assert_eq!(resp, wrong_arguments(&peer, 3, missing));
    // `arguments: null` is the same as absent.
    let resp = peer.ask(&request(
        4,
        "tools/call",
        json!({ "name": "echo", "arguments": null }),
    ));
    assert_eq!(resp, wrong_arguments(&peer, 4, missing));
    // Arguments that are not an object.
    for (id, args) in [(5, json!([1])), (6, json!("text")), (7, json!(3))] {
        assert_eq!(
            peer.ask(&request(
                id,
                "tools/call",
                json!({ "name": "echo", "arguments": args })
            )),
            error(id, -32602, "invalid params: arguments must be an object")
        );
    }
    // A missing or non-string tool name.
    assert_eq!(
        peer.ask(&request(8, "tools/call", json!({ "arguments": {} }))),
        error(8, -32602, "invalid params: missing name")
    );
    assert_eq!(
        peer.ask(&request(9, "tools/call", json!({ "name": 42 }))),
        error(9, -32602, "invalid params: name must be a string")
    );
    // Still serving.
    assert_eq!(
        peer.ask(&call(10, "echo", json!({ "text": "ok" }))),
        text_result(&peer, 10, "ok")
    );
    peer.finish_quietly();
}

#[test]
fn unknown_tool_is_invalid_params() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&call(3, "invalid_tool_name", json!({}))),
        error(3, -32602, "invalid params: unknown tool: invalid_tool_name")
    );
    // Names are case-sensitive.
    assert_eq!(
        peer.ask(&call("4", "ECHO", json!({ "text": "x" }))),
        error("4", -32602, "invalid params: unknown tool: ECHO")
    );
    peer.finish_quietly();
}

#[test]
fn tools_accept_omitted_and_empty_arguments() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let simple = "This is a simple text response for testing.";
    // `arguments` omitted entirely.
    assert_eq!(
        peer.ask(&request(
            1,
            "tools/call",
            json!({ "name": "test_simple_text" })
        )),
        text_result(&peer, 1, simple)
    );
    // `arguments: {}`.
    assert_eq!(
        peer.ask(&call(2, "test_simple_text", json!({}))),
        text_result(&peer, 2, simple)
    );
    // Unknown arguments are ignored by a tool that takes none.
    assert_eq!(
        peer.ask(&call(
            3,
            "test_simple_text",
            json!({ "extra": [1, { "a": null }] })
        )),
        text_result(&peer, 3, simple)
    );
    // The same for a pooled tool (`progress` defaults `steps` to 3).
    assert_eq!(
        peer.ask(&request(4, "tools/call", json!({ "name": "progress" }))),
        text_result(&peer, 4, "done")
    );
    assert_eq!(
        peer.ask(&call(5, "progress", json!({}))),
        text_result(&peer, 5, "done")
    );
    peer.finish_quietly();
}

#[test]
fn big_returns_exactly_the_requested_bytes() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&call(1, "big", json!({ "bytes": 100_000 })));
    let text = resp["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), 100_000);
    assert!(text.bytes().all(|b| b == b'x'));
    assert_eq!(resp, text_result(&peer, 1, &"x".repeat(100_000)));
    assert_eq!(
        peer.ask(&call(2, "big", json!({ "bytes": 0 }))),
        text_result(&peer, 2, "")
    );
    peer.finish_quietly();
}

#[test]
fn conformance_content_tools() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&call(1, "test_simple_text", json!({}))),
        text_result(&peer, 1, "This is a simple text response for testing.")
    );
    assert_eq!(
        peer.ask(&call(2, "test_image_content", json!({}))),
        peer.result(
            2,
            json!({ "content": [{ "type": "image", "data": PNG, "mimeType": "image/png" }] })
        )
    );
    let audio = peer.ask(&call(3, "test_audio_content", json!({})));
    assert_eq!(
        audio,
        peer.result(
            3,
            json!({ "content": [{ "type": "audio", "data": WAV, "mimeType": "audio/wav" }] })
        )
    );
    assert_eq!(audio["result"]["content"][0]["mimeType"], "audio/wav");
    assert_eq!(
        peer.ask(&call(4, "test_embedded_resource", json!({}))),
        peer.result(
            4,
            json!({
                "content": [{
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content."
                    }
                }]
            })
        )
    );
    assert_eq!(
        peer.ask(&call(5, "test_multiple_content_types", json!({}))),
        peer.result(
            5,
            json!({
                "content": [
                    { "type": "text", "text": "Multiple content types test:" },
                    { "type": "image", "data": PNG, "mimeType": "image/png" },
                    {
                        "type": "resource",
                        "resource": {
                            "uri": "test://mixed-content-resource",
                            "mimeType": "application/json",
                            "text": "{\"test\":\"data\",\"value\":123}"
                        }
                    }
                ]
            })
        )
    );
    assert_eq!(
        peer.ask(&call(6, "test_error_handling", json!({}))),
        peer.result(
            6,
            json!({
                "content": [{ "type": "text", "text": "This tool intentionally returns an error for testing" }],
                "isError": true
            })
        )
    );
    // The remaining no-argument conformance tools answer without notes
    // (no logLevel, no progressToken, no server-to-client request).
    assert_eq!(
        peer.ask(&request(
            7,
            "tools/call",
            json!({ "name": "test_logging_tool" })
        )),
        text_result(&peer, 7, "Logged (where the request asked for logs).")
    );
    assert_eq!(
        peer.ask(&request(
            8,
            "tools/call",
            json!({ "name": "test_streaming_elicitation" })
        )),
        text_result(&peer, 8, "No server-to-client request was sent.")
    );
    assert_eq!(
        peer.ask(&request(
            9,
            "tools/call",
            json!({ "name": "test_tool_with_progress" })
        )),
        text_result(&peer, 9, "Progress complete.")
    );
    peer.finish_quietly();
}

fn numbered_tool(n: usize) -> Tool {
    Tool::new(format!("t{n}"), format!("Tool number {n}."))
}

/// A server with tools `t1`..`t5` on pages of two.
fn paged() -> Server {
    let mut builder = Server::builder("paged", "1.0.0").page_size(2);
    for n in 1..=5 {
        builder = builder.inline_tool(numbered_tool(n), move |_ctx, _: Value| {
            Ok(CallToolResult::text(format!("t{n}")))
        });
    }
    builder.build()
}

fn listed(n: usize) -> Value {
    json!({
        "name": format!("t{n}"),
        "description": format!("Tool number {n}."),
        "inputSchema": { "type": "object" }
    })
}

fn cursor_of(resp: &Value) -> String {
    resp["result"]["nextCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("no nextCursor in {resp}"))
        .to_owned()
}

#[test]
fn pagination_in_registration_order() {
    let server = paged();
    let mut peer = Peer::start(&server);
    let page1 = peer.ask(&request(1, "tools/list", json!({})));
    let c1 = cursor_of(&page1);
    assert_eq!(
        page1,
        peer.result(
            1,
            json!({
                "tools": [listed(1), listed(2)],
                "nextCursor": c1,
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    let page2 = peer.ask(&request(2, "tools/list", json!({ "cursor": c1 })));
    let c2 = cursor_of(&page2);
    assert_ne!(c1, c2);
    assert_eq!(
        page2,
        peer.result(
            2,
            json!({
                "tools": [listed(3), listed(4)],
                "nextCursor": c2,
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    let page3 = peer.ask(&request(3, "tools/list", json!({ "cursor": c2 })));
    assert_eq!(
        page3,
        peer.result(
            3,
            json!({ "tools": [listed(5)], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    // Cursors are stable: the same cursor gives the same page again.
    let again = peer.ask(&request(4, "tools/list", json!({ "cursor": c1 })));
    let mut expected = page2.clone();
    expected["id"] = json!(4);
    assert_eq!(again, expected);
    // `cursor: null` is the same as no cursor.
    let first = peer.ask(&request(5, "tools/list", json!({ "cursor": null })));
    let mut expected = page1.clone();
    expected["id"] = json!(5);
    assert_eq!(first, expected);
    peer.finish_quietly();
}

#[test]
fn page_boundary_survives_removals() {
    let server = paged();
    let mut peer = Peer::start(&server);
    let page1 = peer.ask(&request(1, "tools/list", json!({})));
    let c1 = cursor_of(&page1);
    // The first item of the next page goes away, and one before it too.
    assert!(server.remove_tool("t3"));
    assert!(server.remove_tool("t1"));
    let page2 = peer.ask(&request(2, "tools/list", json!({ "cursor": c1 })));
    assert_eq!(
        page2,
        peer.result(
            2,
            json!({ "tools": [listed(4), listed(5)], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    peer.finish_quietly();
}

#[test]
fn bad_cursor_is_invalid_params() {
    let server = paged();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&request(1, "tools/list", json!({ "cursor": "bogus" }))),
        error(1, -32602, "invalid params: invalid cursor: \"bogus\"")
    );
    assert_eq!(
        peer.ask(&request(2, "tools/list", json!({ "cursor": "" }))),
        error(2, -32602, "invalid params: invalid cursor: \"\"")
    );
    assert_eq!(
        peer.ask(&request(3, "tools/list", json!({ "cursor": 2 }))),
        error(3, -32602, "invalid params: cursor must be a string")
    );
    assert_eq!(
        peer.ask(&request(
            4,
            "tools/list",
            json!({ "cursor": { "page": 2 } })
        )),
        error(4, -32602, "invalid params: cursor must be a string")
    );
    // Still serving.
    assert_eq!(
        names(&peer.ask(&request(5, "tools/list", json!({})))),
        ["t1", "t2"]
    );
    peer.finish_quietly();
}

#[test]
fn tools_added_and_removed_while_serving() {
    let server = Server::builder("dynamic", "1.0.0")
        .inline_tool(Tool::new("base", "Always there."), |_ctx, _: Value| {
            Ok(CallToolResult::text("base"))
        })
        .build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        names(&peer.ask(&request(1, "tools/list", json!({})))),
        ["base"]
    );

    server.add_tool(
        Tool::new("late", "Added while serving."),
        |_ctx, args: Value| Ok(CallToolResult::text(format!("late {args}"))),
    );
    let list = peer.ask(&request(2, "tools/list", json!({})));
    assert_eq!(
        list,
        peer.result(
            2,
            json!({
                "tools": [
                    { "name": "base", "description": "Always there.", "inputSchema": { "type": "object" } },
                    { "name": "late", "description": "Added while serving.", "inputSchema": { "type": "object" } }
                ],
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    assert_eq!(
        peer.ask(&call(3, "late", json!({ "n": 1 }))),
        text_result(&peer, 3, "late {\"n\":1}")
    );

    // Replacing a tool keeps its place in the list.
    server.add_tool(Tool::new("base", "Replaced."), |_ctx, _: Value| {
        Ok(CallToolResult::text("new base"))
    });
    let list = peer.ask(&request(4, "tools/list", json!({})));
    assert_eq!(names(&list), ["base", "late"]);
    assert_eq!(list["result"]["tools"][0]["description"], "Replaced.");
    assert_eq!(
        peer.ask(&call(5, "base", json!({}))),
        text_result(&peer, 5, "new base")
    );

    assert!(server.remove_tool("late"));
    assert!(!server.remove_tool("late"), "already gone");
    assert_eq!(
        names(&peer.ask(&request(6, "tools/list", json!({})))),
        ["base"]
    );
    assert_eq!(
        peer.ask(&call(7, "late", json!({}))),
        error(7, -32602, "invalid params: unknown tool: late")
    );

    // The list may empty; tools stay advertised and listable.
    assert!(server.remove_tool("base"));
    assert_eq!(
        peer.ask(&request(8, "tools/list", json!({}))),
        peer.result(
            8,
            json!({ "tools": [], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    assert_eq!(
        peer.ask(&request(9, "server/discover", json!({})))["result"]["capabilities"]["tools"],
        json!({ "listChanged": true })
    );
    peer.finish_quietly();
}

#[test]
fn toggle_tool_and_add_tool_fixtures() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&call(1, "toggle_tool", json!({}))),
        text_result(&peer, 1, "added ephemeral")
    );
    let list = peer.ask(&request(2, "tools/list", json!({})));
    let mut expected: Vec<&str> = EVERYTHING_TOOLS.to_vec();
    expected.push("ephemeral");
    assert_eq!(names(&list), expected);
    assert_eq!(
        tool_named(&list, "ephemeral"),
        &json!({
            "name": "ephemeral",
            "description": "Exists between two calls of toggle_tool.",
            "inputSchema": { "type": "object", "properties": {} }
        })
    );
    assert_eq!(
        peer.ask(&call(3, "ephemeral", json!({}))),
        text_result(&peer, 3, "ephemeral")
    );
    assert_eq!(
        peer.ask(&call(4, "toggle_tool", json!({}))),
        text_result(&peer, 4, "removed ephemeral")
    );
    assert_eq!(
        names(&peer.ask(&request(5, "tools/list", json!({})))),
        EVERYTHING_TOOLS
    );
    assert_eq!(
        peer.ask(&call(6, "ephemeral", json!({}))),
        error(6, -32602, "invalid params: unknown tool: ephemeral")
    );

    assert_eq!(
        peer.ask(&call(7, "add_tool", json!({}))),
        text_result(&peer, 7, "added dyn_1")
    );
    assert_eq!(
        peer.ask(&call(8, "add_tool", json!({}))),
        text_result(&peer, 8, "added dyn_2")
    );
    let list = peer.ask(&request(9, "tools/list", json!({})));
    let mut expected: Vec<&str> = EVERYTHING_TOOLS.to_vec();
    expected.extend(["dyn_1", "dyn_2"]);
    assert_eq!(names(&list), expected);
    assert_eq!(
        peer.ask(&call(10, "dyn_1", json!({}))),
        text_result(&peer, 10, "dyn_1")
    );
    assert_eq!(
        peer.ask(&call(11, "dyn_2", json!({}))),
        text_result(&peer, 11, "dyn_2")
    );
    peer.finish_quietly();
}

#[test]
fn inline_and_pooled_tools_both_work() {
    let server = Server::builder("mixed", "1.0.0")
        .inline_tool(
            Tool::new("inline", "Runs on the owner thread."),
            |ctx, _: Value| Ok(CallToolResult::text(format!("inline {}", ctx.id()))),
        )
        .tool(Tool::new("pooled", "Runs on a worker."), |ctx, _: Value| {
            Ok(CallToolResult::text(format!(
                "pooled {} on {}",
                ctx.id(),
                std::thread::current()
                    .name()
                    .unwrap_or("?")
                    .starts_with("mcp-worker")
            )))
        })
        .tool(
            Tool::new("pooled_error", "A protocol error from a worker."),
            |_ctx, _: Value| -> Result<CallToolResult, ErrorObject> {
                Err(ErrorObject::invalid_params("bad input for pooled_error"))
            },
        )
        .inline_tool(
            Tool::new("inline_error", "A protocol error from the owner thread."),
            |_ctx, _: Value| -> Result<CallToolResult, ErrorObject> {
                Err(ErrorObject::new(-32099, "custom").with_data(json!([1])))
            },
        )
        .tool(Tool::new("content", "Several blocks."), |_ctx, _: Value| {
            Ok(CallToolResult::new(vec![
                ContentBlock::text("a"),
                ContentBlock::text("b"),
            ]))
        })
        .build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&call(1, "inline", json!({}))),
        text_result(&peer, 1, "inline 1")
    );
    assert_eq!(
        peer.ask(&call("p", "pooled", json!({}))),
        text_result(&peer, "p", "pooled \"p\" on true")
    );
    assert_eq!(
        peer.ask(&call(2, "pooled_error", json!({}))),
        error(2, -32602, "invalid params: bad input for pooled_error")
    );
    assert_eq!(
        peer.ask(&call(3, "inline_error", json!({}))),
        json!({ "jsonrpc": "2.0", "id": 3, "error": { "code": -32099, "message": "custom", "data": [1] } })
    );
    assert_eq!(
        peer.ask(&call(4, "content", json!({}))),
        peer.result(
            4,
            json!({ "content": [{ "type": "text", "text": "a" }, { "type": "text", "text": "b" }] })
        )
    );
    // Interleaved, several times over.
    for n in 0..5 {
        let a = 10 + 2 * n;
        let b = a + 1;
        assert_eq!(
            peer.ask(&call(a, "inline", json!({}))),
            text_result(&peer, a, &format!("inline {a}"))
        );
        assert_eq!(
            peer.ask(&call(b, "pooled", json!({}))),
            text_result(&peer, b, &format!("pooled {b} on true"))
        );
    }
    peer.finish_quietly();
}

#[test]
fn a_panicking_tool_is_an_internal_error_and_serving_continues() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&call(1, "panic", json!({}))),
        error(
            1,
            -32603,
            "internal error: handler panicked: the panic fixture panicked"
        )
    );
    assert_eq!(
        peer.ask(&call(2, "echo", json!({ "text": "after" }))),
        text_result(&peer, 2, "after")
    );
    peer.finish_quietly();
}
