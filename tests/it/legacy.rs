//! Legacy clients on a dual-era server (spec 2026-07-28 basic/versioning,
//! "Backward Compatibility with Initialization-Based Versions"; legacy
//! pages 2025-11-25 basic/lifecycle, basic/utilities/ping,
//! server/resources): `initialize` opens a legacy session for the stdio
//! connection, requests without modern `_meta` are served under it, and
//! requests with modern `_meta` stay modern on the same connection.
//!
//! Every legacy request here is written as raw legacy JSON (no per-request
//! `_meta`). Legacy replies are re-encoded by the server, so they are
//! compared as JSON values, never as bytes. Every "nothing else was sent"
//! check is a barrier: a request whose reply must be the very next line, or
//! `Peer::finish`.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use mcp_stdio::{Outcome, Server, Transport};
use serde_json::{Value, json};

use crate::support::{Peer, WAIT, call, cancel, error, keys, request, text_result};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

const INSTRUCTIONS: &str =
    "Fixture server of mcp-stdio: every tool, resource and prompt is a test fixture.";

use crate::tools::EVERYTHING_TOOLS;

// --- Helpers -------------------------------------------------------------

/// A raw legacy request: no per-request `_meta` at all.
fn legacy(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// A raw legacy `tools/call`.
fn legacy_call(id: impl Into<Value>, tool: &str, arguments: Value) -> Value {
    legacy(
        id,
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
}

/// A legacy `initialize` request asking for `version`.
fn initialize(id: impl Into<Value>, version: &str) -> Value {
    initialize_with(id, version, json!({}))
}

fn initialize_with(id: impl Into<Value>, version: &str, capabilities: Value) -> Value {
    legacy(
        id,
        "initialize",
        json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": { "name": "legacy-test", "version": "0.1.0" }
        }),
    )
}

fn initialized() -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })
}

/// A plain (legacy) success response.
fn ok(id: impl Into<Value>, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "result": result })
}

/// A legacy text-only tool result: no `resultType`, no `_meta`.
fn legacy_text(id: impl Into<Value>, text: &str) -> Value {
    ok(id, json!({ "content": [{ "type": "text", "text": text }] }))
}

fn server_info() -> Value {
    json!({ "name": "mcp-stdio-everything", "version": env!("CARGO_PKG_VERSION") })
}

/// The everything server's capabilities, as `server/discover` advertises
/// them (tests/it/discover.rs checks the same object there).
/// The everything server's capabilities as a legacy session sees them.
fn capabilities() -> Value {
    json!({
        "tools": { "listChanged": true },
        "prompts": { "listChanged": true },
        "resources": { "subscribe": true, "listChanged": true },
        "completions": {},
        "logging": {}
    })
}

/// The same as `server/discover` advertises them: with the Tasks
/// extension, which is of the modern era only.
fn modern_capabilities() -> Value {
    let mut capabilities = capabilities();
    capabilities["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    capabilities
}

/// The whole `InitializeResult` response of the everything server.
fn initialize_result(id: impl Into<Value>, version: &str) -> Value {
    ok(
        id,
        json!({
            "protocolVersion": version,
            "capabilities": capabilities(),
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS
        }),
    )
}

/// Opens a legacy session (initialize, then initialized) and asserts the
/// `InitializeResult`.
fn open_session(peer: &mut Peer, version: &str) {
    assert_eq!(
        peer.ask(&initialize("init", version)),
        initialize_result("init", version)
    );
    peer.send(&initialized());
}

/// A legacy `ping` that must be answered with the very next line.
fn ping_barrier(peer: &mut Peer, id: impl Into<Value>) {
    let id = id.into();
    assert_eq!(
        peer.ask(&legacy(id.clone(), "ping", json!({}))),
        ok(id, json!({}))
    );
}

/// The legacy `notifications/resources/updated`: no subscription id.
fn legacy_updated(uri: &str) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": uri } })
}

/// The modern one, tagged with the subscription it belongs to.
fn modern_updated(subscription: impl Into<Value>, uri: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": { "_meta": { SUBSCRIPTION_ID: subscription.into() }, "uri": uri }
    })
}

fn list_changed(what: &str) -> Value {
    json!({ "jsonrpc": "2.0", "method": format!("notifications/{what}/list_changed") })
}

/// One of the three messages of `test_logging_tool`.
fn log_message(n: u32) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": { "level": "info", "logger": "test", "data": format!("log message {n}") }
    })
}

fn progress(token: Value, step: u64, total: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {
            "progressToken": token,
            "progress": step as f64,
            "total": total as f64,
            "message": format!("step {step} of {total}")
        }
    })
}

/// The text a legacy client gets when a request needs input through
/// capabilities it did not declare in `initialize` (src/server/legacy/downgrade.rs,
/// `downgrade`): `what` is "this tool" or the method name.
fn undeclared(what: &str, capabilities: &str, version: &str) -> String {
    format!(
        "{what} needs the client capabilities {capabilities}, which this client (MCP {version}) \
         did not declare when it initialized"
    )
}

/// The `isError` tool result for a tool that needs `capabilities` a
/// legacy client did not declare.
fn undeclared_result(id: impl Into<Value>, capabilities: &str, version: &str) -> Value {
    ok(
        id,
        json!({
            "content": [{ "type": "text", "text": undeclared("this tool", capabilities, version) }],
            "isError": true
        }),
    )
}

/// Opens a legacy session whose client declared `capabilities`.
fn open_session_with(peer: &mut Peer, version: &str, capabilities: Value) {
    assert_eq!(
        peer.ask(&initialize_with("init", version, capabilities)),
        initialize_result("init", version)
    );
    peer.send(&initialized());
}

/// Every capability a legacy client can declare for the server's asks.
fn all_input_capabilities() -> Value {
    json!({ "elicitation": {}, "sampling": {}, "roots": {} })
}

/// The prefix of the ids of the server's own requests to a legacy client.
const ASK_PREFIX: &str = "mcp-stdio-ask-";

/// Reads the server's next message, which must be a request of its own to
/// the client (an ask): exactly `method` with `params`, with an id of the
/// server's. Returns that id.
fn recv_ask(peer: &Peer, method: &str, params: Value) -> Value {
    let ask = peer.recv();
    let id = ask["id"].clone();
    let number = id.as_str().and_then(|id| id.strip_prefix(ASK_PREFIX));
    assert!(
        number.is_some_and(|n| n.parse::<u64>().is_ok()),
        "an ask id is {ASK_PREFIX}<n>: {ask}"
    );
    assert_eq!(
        ask,
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    );
    id
}

/// The client's response to an ask.
fn answer(peer: &mut Peer, ask: &Value, result: Value) {
    peer.send(&ok(ask.clone(), result));
}

/// The params of a form elicitation for one required string `field`, as
/// the fixtures build it; `mode` is there from 2025-11-25 on.
fn form(message: &str, field: &str, with_mode: bool) -> Value {
    let mut params = json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": "string" } },
            "required": [field]
        }
    });
    if with_mode {
        params["mode"] = json!("form");
    }
    params
}

/// The fixtures' `What is your name?` elicitation.
fn name_form(with_mode: bool) -> Value {
    form("What is your name?", "name", with_mode)
}

/// The fixtures' sampling request.
fn capital_question() -> Value {
    json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": "What is the capital of France?" } }],
        "maxTokens": 100
    })
}

/// A form elicitation's `accept` with one field.
fn accept(field: &str, value: &str) -> Value {
    json!({ "action": "accept", "content": { field: value } })
}

fn paris() -> Value {
    json!({ "role": "assistant", "content": { "type": "text", "text": "Paris" }, "model": "test-model" })
}

fn one_root() -> Value {
    json!({ "roots": [{ "uri": "file:///legacy/root", "name": "root" }] })
}

/// A server whose trace hook forwards every line into a channel.
fn traced_everything() -> (Server, crossbeam_channel::Receiver<String>) {
    let (tx, notes) = crossbeam_channel::unbounded();
    let server = crate::everything::build_with(|b| {
        b.trace(move |line| {
            let _ = tx.send(line.to_owned());
        })
    });
    (server, notes)
}

/// The trace notes so far about responses that answer nothing.
fn ignored_responses(notes: &crossbeam_channel::Receiver<String>) -> Vec<String> {
    notes
        .try_iter()
        .filter(|note| note.starts_with("ignoring a response"))
        .collect()
}

/// Reads `expected.len()` messages and asserts they are exactly `expected`
/// in any order (a reply and the notification its handler caused).
fn recv_unordered(peer: &Peer, expected: Vec<Value>) {
    let mut got: Vec<Value> = expected.iter().map(|_| peer.recv()).collect();
    let mut expected = expected;
    let key = |v: &Value| v.to_string();
    got.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(got, expected);
}

/// A modern result with the fields only 2026-07-28 has removed: what the
/// same request gets under a legacy session.
fn strip_modern(mut resp: Value) -> Value {
    let result = resp["result"].as_object_mut().expect("a result");
    for key in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        result.remove(key);
    }
    resp
}

fn names(resp: &Value) -> Vec<&str> {
    resp["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {resp}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// A `-32602` error for `id` whose message names `detail` (serde's
/// message, which also carries a position).
fn assert_invalid_params(resp: &Value, id: i64, detail: &str) {
    assert_eq!(keys(resp), ["error", "id", "jsonrpc"], "{resp}");
    assert_eq!(resp["id"], json!(id), "{resp}");
    assert_eq!(keys(&resp["error"]), ["code", "message"], "{resp}");
    assert_eq!(resp["error"]["code"], json!(-32602), "{resp}");
    let message = resp["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("invalid params: ") && message.contains(detail),
        "{resp}"
    );
}

/// The final result that ends modern subscription `id` gracefully.
/// The legacy session of version `version` declared no input capability,
/// subscribed to nothing and set no log level: `ask` is refused, `bump`
/// notifies nobody and `test_logging_tool` logs nothing (ids `id` to
/// `id + 2`).
fn assert_session_is_bare(peer: &mut Peer, id: i64, version: &str) {
    assert_eq!(
        peer.ask(&legacy_call(id, "ask", json!({}))),
        undeclared_result(id, "elicitation", version)
    );
    assert_eq!(
        peer.ask(&legacy_call(id + 1, "bump", json!({}))),
        legacy_text(id + 1, "1")
    );
    assert_eq!(
        peer.ask(&legacy_call(id + 2, "test_logging_tool", json!({}))),
        legacy_text(id + 2, "Logged (where the request asked for logs).")
    );
}

fn closed(peer: &Peer, id: impl Into<Value>) -> Value {
    let id = id.into();
    let mut meta = peer.server_meta.clone();
    meta[SUBSCRIPTION_ID] = id.clone();
    json!({ "jsonrpc": "2.0", "id": id, "result": { "resultType": "complete", "_meta": meta } })
}

// --- 1. The raw legacy transcript ----------------------------------------

#[test]
fn a_raw_legacy_transcript_on_the_everything_server() {
    let server = crate::everything::build();
    // What a modern client sees on another connection of the same server.
    let mut modern = Peer::start(&server);
    let discover = modern.ask(&request("d", "server/discover", json!({})));
    let modern_tools = modern.ask(&request("t", "tools/list", json!({})));
    modern.finish_quietly();
    assert_eq!(discover["result"]["capabilities"], modern_capabilities());
    assert_eq!(
        (
            &modern_tools["result"]["resultType"],
            &modern_tools["result"]["ttlMs"],
            &modern_tools["result"]["cacheScope"],
            &modern_tools["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        ),
        (
            &json!("complete"),
            &json!(0),
            &json!("private"),
            &server_info()
        )
    );

    let mut peer = Peer::start(&server);
    peer.send_raw(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-legacy","version":"1.0.0"}}}"#,
    );
    let init = peer.recv();
    assert_eq!(init, initialize_result(1, "2025-11-25"));
    // The capabilities are the ones server/discover advertises, but for
    // the modern era's Tasks extension.
    let mut advertised = discover["result"]["capabilities"].clone();
    advertised.as_object_mut().unwrap().remove("extensions");
    assert_eq!(init["result"]["capabilities"], advertised);
    assert_eq!(
        discover["result"]["capabilities"],
        serde_json::to_value(server.capabilities()).unwrap()
    );
    peer.send_raw(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    // tools/list: the same tools, without resultType, ttlMs, cacheScope or
    // the serverInfo _meta.
    peer.send_raw(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let tools = peer.recv();
    let mut expected = strip_modern(modern_tools);
    expected["id"] = json!(2);
    assert_eq!(tools, expected);
    assert_eq!(keys(&tools), ["id", "jsonrpc", "result"]);
    assert_eq!(keys(&tools["result"]), ["tools"]);
    assert_eq!(names(&tools), EVERYTHING_TOOLS);

    peer.send_raw(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello legacy"}}}"#);
    assert_eq!(peer.recv(), legacy_text(3, "hello legacy"));

    peer.send_raw(br#"{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"mem://counter"}}"#);
    assert_eq!(peer.recv(), ok(4, json!({})));

    // An update: the legacy notification has no subscription id.
    peer.send_raw(br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"bump","arguments":{}}}"#);
    recv_unordered(
        &peer,
        vec![
            json!({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://counter"}}),
            legacy_text(5, "1"),
        ],
    );

    peer.send_raw(br#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#);
    assert_eq!(peer.recv(), ok(6, json!({})));

    // logging/setLevel: the level holds for the whole connection, without
    // any per-request logLevel.
    peer.send_raw(
        br#"{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"info"}}"#,
    );
    assert_eq!(peer.recv(), ok(7, json!({})));
    peer.send_raw(br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"test_logging_tool","arguments":{}}}"#);
    for n in 1..=3 {
        assert_eq!(peer.recv(), log_message(n));
    }
    assert_eq!(
        peer.recv(),
        legacy_text(8, "Logged (where the request asked for logs).")
    );
    peer.send_raw(
        br#"{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"error"}}"#,
    );
    assert_eq!(peer.recv(), ok(9, json!({})));
    peer.send_raw(br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"test_logging_tool","arguments":{}}}"#);
    assert_eq!(
        peer.recv(),
        legacy_text(10, "Logged (where the request asked for logs).")
    );

    // resources/unsubscribe stops the updates.
    peer.send_raw(br#"{"jsonrpc":"2.0","id":11,"method":"resources/unsubscribe","params":{"uri":"mem://counter"}}"#);
    assert_eq!(peer.recv(), ok(11, json!({})));
    peer.send_raw(br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"bump","arguments":{}}}"#);
    assert_eq!(peer.recv(), legacy_text(12, "2"));
    peer.send_raw(br#"{"jsonrpc":"2.0","id":13,"method":"ping","params":{}}"#);
    assert_eq!(peer.recv(), ok(13, json!({})));

    // EOF: serve returns, and nothing more was written.
    peer.finish_quietly();
}

#[test]
fn legacy_results_are_the_modern_results_without_the_modern_fields() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session(&mut peer, "2025-11-25");
    let requests: Vec<(&str, Value)> = vec![
        ("tools/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/read", json!({ "uri": "mem://counter" })),
        ("resources/read", json!({ "uri": "test://template/7/data" })),
        (
            "prompts/get",
            json!({ "name": "greet", "arguments": { "name": "Ada" } }),
        ),
        (
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "greet" }, "argument": { "name": "name", "value": "B" } }),
        ),
        (
            "tools/call",
            json!({ "name": "add", "arguments": { "a": 1, "b": 2 } }),
        ),
        ("tools/call", json!({ "name": "fail", "arguments": {} })),
    ];
    for (n, (method, params)) in requests.into_iter().enumerate() {
        let modern_id = format!("m{n}");
        let legacy_id = format!("l{n}");
        let modern = peer.ask(&request(modern_id.as_str(), method, params.clone()));
        assert_eq!(
            modern["result"]["resultType"],
            json!("complete"),
            "{method}: {modern}"
        );
        let resp = peer.ask(&legacy(legacy_id.as_str(), method, params));
        let mut expected = strip_modern(modern);
        expected["id"] = json!(legacy_id);
        assert_eq!(resp, expected, "{method}");
    }
    // Spot checks of exact legacy results.
    assert_eq!(
        peer.ask(&legacy(
            "r",
            "resources/read",
            json!({ "uri": "mem://counter" })
        )),
        ok(
            "r",
            json!({ "contents": [{ "uri": "mem://counter", "mimeType": "text/plain", "text": "0" }] })
        )
    );
    assert_eq!(
        peer.ask(&legacy(
            "g",
            "prompts/get",
            json!({ "name": "greet", "arguments": { "name": "Ada" } })
        )),
        ok(
            "g",
            json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Please greet Ada warmly." } }] })
        )
    );
    assert_eq!(
        peer.ask(&legacy_call("a", "add", json!({ "a": 1, "b": 2 }))),
        ok(
            "a",
            json!({ "content": [{ "type": "text", "text": "3" }], "structuredContent": { "sum": 3.0 } })
        )
    );
    // Errors keep their JSON-RPC shape.
    assert_eq!(
        peer.ask(&legacy_call("u", "nope", json!({}))),
        error("u", -32602, "invalid params: unknown tool: nope")
    );
    peer.finish_quietly();
}

// --- 2. Version negotiation ----------------------------------------------

#[test]
fn each_legacy_version_is_echoed() {
    let server = crate::everything::build();
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let mut peer = Peer::start(&server);
        assert_eq!(
            peer.ask(&initialize(1, version)),
            initialize_result(1, version)
        );
        peer.send(&initialized());
        assert_eq!(
            peer.ask(&legacy_call(2, "echo", json!({ "text": version }))),
            legacy_text(2, version)
        );
        peer.finish_quietly();
    }
    assert_eq!(
        mcp_stdio::LEGACY_VERSIONS,
        ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
    );
}

#[test]
fn an_unknown_version_gets_the_newest_legacy_version() {
    let server = crate::everything::build();
    // Older, newer, the modern version (which has no initialize) and junk.
    for version in ["2023-01-01", "2099-12-31", "2026-07-28", "latest"] {
        let mut peer = Peer::start(&server);
        assert_eq!(
            peer.ask(&initialize(1, version)),
            initialize_result(1, "2025-11-25"),
            "asked for {version}"
        );
        peer.finish_quietly();
    }
}

#[test]
fn a_second_initialize_replaces_the_session() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-06-18", json!({ "elicitation": {} }));
    assert_eq!(
        peer.ask(&legacy(
            1,
            "resources/subscribe",
            json!({ "uri": "mem://counter" })
        )),
        ok(1, json!({}))
    );
    assert_eq!(
        peer.ask(&legacy(2, "logging/setLevel", json!({ "level": "debug" }))),
        ok(2, json!({}))
    );
    // The first session declared elicitation: the server asks.
    peer.send(&legacy_call(3, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(false));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(3, "Nice to meet you, Ada!"));

    // The new session has the new version and capabilities (none)...
    assert_eq!(
        peer.ask(&initialize("again", "2024-11-05")),
        initialize_result("again", "2024-11-05")
    );
    // ...and none of the old one's subscriptions, log level or
    // initialized state.
    assert_session_is_bare(&mut peer, 4, "2024-11-05");
    assert_eq!(
        peer.ask(&legacy_call(7, "toggle_tool", json!({}))),
        legacy_text(7, "added ephemeral")
    );
    // Initialized again: list changes flow.
    peer.send(&initialized());
    peer.send(&legacy_call(8, "toggle_tool", json!({})));
    recv_unordered(
        &peer,
        vec![list_changed("tools"), legacy_text(8, "removed ephemeral")],
    );
    peer.finish_quietly();
}

#[test]
fn invalid_initialize_params_are_invalid_params() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&legacy(1, "initialize", json!({ "capabilities": {} })));
    assert_invalid_params(
        &resp,
        1,
        "invalid initialize params: missing field `protocolVersion`",
    );
    // No session was opened: a request without _meta is still modern.
    assert_eq!(
        peer.ask(&legacy(2, "tools/list", json!({}))),
        error(
            2,
            -32602,
            "invalid params: missing _meta[\"io.modelcontextprotocol/protocolVersion\"]"
        )
    );
    peer.finish_quietly();
}

// --- 3. Before initialize ------------------------------------------------

#[test]
fn before_initialize_ping_is_answered_and_other_requests_are_modern() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // 2025-11-25 basic/utilities/ping: answered at any time, with or
    // without params.
    peer.send_raw(br#"{"jsonrpc":"2.0","id":"123","method":"ping"}"#);
    assert_eq!(peer.recv(), ok("123", json!({})));
    assert_eq!(peer.ask(&legacy(1, "ping", json!({}))), ok(1, json!({})));
    // A _meta without the modern protocol version is not modern.
    assert_eq!(
        peer.ask(&legacy(
            2,
            "ping",
            json!({ "_meta": { "progressToken": "p" } })
        )),
        ok(2, json!({}))
    );
    // Without a legacy session, a request without _meta is a malformed
    // modern request.
    let missing = "invalid params: missing _meta[\"io.modelcontextprotocol/protocolVersion\"]";
    peer.send_raw(br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    assert_eq!(peer.recv(), error(3, -32602, missing));
    assert_eq!(
        peer.ask(&legacy(4, "tools/list", json!({}))),
        error(4, -32602, missing)
    );
    assert_eq!(
        peer.ask(&legacy_call(5, "echo", json!({ "text": "x" }))),
        error(5, -32602, missing)
    );
    assert_eq!(
        peer.ask(&legacy(
            6,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } })
        )),
        error(6, -32602, missing)
    );
    peer.finish_quietly();
}

// --- 4. List changes only once initialized -------------------------------

#[test]
fn list_changes_reach_a_legacy_client_only_after_initialized() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&initialize(1, "2025-11-25")),
        initialize_result(1, "2025-11-25")
    );
    // Not initialized yet: nothing but the reply.
    assert_eq!(
        peer.ask(&legacy_call(2, "toggle_tool", json!({}))),
        legacy_text(2, "added ephemeral")
    );
    assert_eq!(
        peer.ask(&legacy_call(3, "test_trigger_prompt_change", json!({}))),
        legacy_text(3, "Prompt list change published.")
    );
    notifier.tools_list_changed();
    notifier.prompts_list_changed();
    notifier.resources_list_changed();
    ping_barrier(&mut peer, 4);

    peer.send(&initialized());
    peer.send(&legacy_call(5, "toggle_tool", json!({})));
    recv_unordered(
        &peer,
        vec![
            json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
            legacy_text(5, "removed ephemeral"),
        ],
    );
    peer.send(&legacy_call(6, "test_trigger_prompt_change", json!({})));
    recv_unordered(
        &peer,
        vec![
            list_changed("prompts"),
            legacy_text(6, "Prompt list change published."),
        ],
    );
    peer.send(&legacy_call(7, "test_trigger_tool_change", json!({})));
    recv_unordered(
        &peer,
        vec![
            list_changed("tools"),
            legacy_text(7, "Tool list change published."),
        ],
    );
    // From another thread, through the same Notifier.
    notifier.resources_list_changed();
    assert_eq!(peer.recv(), list_changed("resources"));
    notifier.tools_list_changed();
    assert_eq!(peer.recv(), list_changed("tools"));
    notifier.prompts_list_changed();
    assert_eq!(peer.recv(), list_changed("prompts"));
    ping_barrier(&mut peer, 8);
    peer.finish_quietly();
}

#[test]
fn resource_updates_reach_only_the_subscribed_uris() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    open_session(&mut peer, "2025-11-25");
    for (id, uri) in [(1, "mem://counter"), (2, "test://static-text")] {
        assert_eq!(
            peer.ask(&legacy(id, "resources/subscribe", json!({ "uri": uri }))),
            ok(id, json!({}))
        );
    }
    notifier.resource_updated("test://watched-resource");
    notifier.resource_updated("test://static-text");
    assert_eq!(peer.recv(), legacy_updated("test://static-text"));
    notifier.resource_updated("mem://counter");
    assert_eq!(peer.recv(), legacy_updated("mem://counter"));
    ping_barrier(&mut peer, 3);
    // Subscribing twice and unsubscribing once: the subscription is a set.
    assert_eq!(
        peer.ask(&legacy(
            4,
            "resources/subscribe",
            json!({ "uri": "mem://counter" })
        )),
        ok(4, json!({}))
    );
    assert_eq!(
        peer.ask(&legacy(
            5,
            "resources/unsubscribe",
            json!({ "uri": "mem://counter" })
        )),
        ok(5, json!({}))
    );
    notifier.resource_updated("mem://counter");
    notifier.resource_updated("test://static-text");
    assert_eq!(peer.recv(), legacy_updated("test://static-text"));
    ping_barrier(&mut peer, 6);
    // Bad params are invalid params.
    let resp = peer.ask(&legacy(7, "resources/subscribe", json!({})));
    assert_invalid_params(&resp, 7, "missing field `uri`");
    peer.finish_quietly();
}

// --- 5. Both eras on one connection --------------------------------------

#[test]
fn a_mixed_transcript_serves_each_request_in_its_own_era() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session(&mut peer, "2025-11-25");

    // A modern request on the same connection: modern shape.
    assert_eq!(
        peer.ask(&call(1, "echo", json!({ "text": "modern" }))),
        text_result(&peer, 1, "modern")
    );
    assert_eq!(
        peer.server_meta,
        json!({ "io.modelcontextprotocol/serverInfo": server_info() })
    );
    // Legacy requests are still legacy-shaped.
    assert_eq!(
        peer.ask(&legacy_call(2, "echo", json!({ "text": "legacy" }))),
        legacy_text(2, "legacy")
    );
    let modern_read = peer.ask(&request(
        3,
        "resources/read",
        json!({ "uri": "mem://counter" }),
    ));
    assert_eq!(
        modern_read,
        peer.result(
            3,
            json!({
                "contents": [{ "uri": "mem://counter", "mimeType": "text/plain", "text": "0" }],
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    assert_eq!(
        peer.ask(&legacy(
            4,
            "resources/read",
            json!({ "uri": "mem://counter" })
        )),
        ok(
            4,
            json!({ "contents": [{ "uri": "mem://counter", "mimeType": "text/plain", "text": "0" }] })
        )
    );
    // Modern requests are not served under the session: no log level
    // carries over from logging/setLevel.
    assert_eq!(
        peer.ask(&legacy(5, "logging/setLevel", json!({ "level": "debug" }))),
        ok(5, json!({}))
    );
    assert_eq!(
        peer.ask(&call(6, "test_logging_tool", json!({}))),
        text_result(&peer, 6, "Logged (where the request asked for logs).")
    );

    // A modern subscription and a legacy one for the same resource.
    peer.send(&request(
        "sub",
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": ["mem://counter"] } }),
    ));
    assert_eq!(
        peer.recv(),
        json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "_meta": { SUBSCRIPTION_ID: "sub" },
                "notifications": { "resourceSubscriptions": ["mem://counter"] }
            }
        })
    );
    assert_eq!(
        peer.ask(&legacy(
            7,
            "resources/subscribe",
            json!({ "uri": "mem://counter" })
        )),
        ok(7, json!({}))
    );
    // One bump: the tagged modern notification, the untagged legacy one,
    // and the reply (legacy-shaped for a legacy call...).
    peer.send(&legacy_call(8, "bump", json!({})));
    recv_unordered(
        &peer,
        vec![
            modern_updated("sub", "mem://counter"),
            legacy_updated("mem://counter"),
            legacy_text(8, "1"),
        ],
    );
    // ...modern-shaped for a modern one.
    peer.send(&call(9, "bump", json!({})));
    recv_unordered(
        &peer,
        vec![
            modern_updated("sub", "mem://counter"),
            legacy_updated("mem://counter"),
            text_result(&peer, 9, "2"),
        ],
    );
    // The application's Notifier reaches both too.
    server.notifier().resource_updated("mem://counter");
    recv_unordered(
        &peer,
        vec![
            modern_updated("sub", "mem://counter"),
            legacy_updated("mem://counter"),
        ],
    );
    ping_barrier(&mut peer, 10);
    // The legacy unsubscribe leaves the modern subscription alone.
    assert_eq!(
        peer.ask(&legacy(
            11,
            "resources/unsubscribe",
            json!({ "uri": "mem://counter" })
        )),
        ok(11, json!({}))
    );
    peer.send(&legacy_call(12, "bump", json!({})));
    recv_unordered(
        &peer,
        vec![modern_updated("sub", "mem://counter"), legacy_text(12, "3")],
    );
    ping_barrier(&mut peer, 13);

    // EOF: the modern subscription ends with its final result.
    let expected_final = closed(&peer, "sub");
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(rest, [expected_final]);
}

#[test]
fn one_resource_update_reaches_a_legacy_and_a_modern_connection() {
    let server = crate::everything::build();
    let mut old = Peer::start(&server);
    let mut new = Peer::start(&server);
    open_session(&mut old, "2025-06-18");
    assert_eq!(
        old.ask(&legacy(
            1,
            "resources/subscribe",
            json!({ "uri": "mem://counter" })
        )),
        ok(1, json!({}))
    );
    new.send(&request(
        7,
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": ["mem://counter"] } }),
    ));
    assert_eq!(new.recv()["params"]["_meta"][SUBSCRIPTION_ID], json!(7));

    server.notifier().resource_updated("mem://counter");
    assert_eq!(old.recv(), legacy_updated("mem://counter"));
    assert_eq!(new.recv(), modern_updated(7, "mem://counter"));

    // A bump on the legacy connection reaches the modern one as well.
    old.send(&legacy_call(2, "bump", json!({})));
    recv_unordered(
        &old,
        vec![legacy_updated("mem://counter"), legacy_text(2, "1")],
    );
    assert_eq!(new.recv(), modern_updated(7, "mem://counter"));
    ping_barrier(&mut old, 3);
    old.finish_quietly();
    let expected_final = closed(&new, 7);
    let (rest, res) = new.finish();
    res.unwrap();
    assert_eq!(rest, [expected_final]);
}

// --- 6. Modern _meta on legacy-only methods ------------------------------

#[test]
fn legacy_only_methods_with_modern_meta_are_not_found() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session(&mut peer, "2025-06-18");

    // initialize with modern _meta is a modern request for a removed
    // method; it neither answers nor replaces the session.
    let resp = peer.ask(&request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "x", "version": "1" }
        }),
    ));
    assert_eq!(resp["error"]["code"], json!(-32601), "{resp}");
    assert_eq!(
        resp["error"]["data"],
        json!({
            "supported": ["2026-07-28"],
            "legacy": ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
        })
    );
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("method not found: initialize"),
        "{resp}"
    );
    assert_eq!(keys(&resp), ["error", "id", "jsonrpc"]);
    assert!(resp.get("result").is_none());

    assert_eq!(
        peer.ask(&request(2, "ping", json!({}))),
        error(2, -32601, "method not found: ping")
    );
    assert_eq!(
        peer.ask(&request(3, "logging/setLevel", json!({ "level": "debug" }))),
        error(3, -32601, "method not found: logging/setLevel")
    );
    assert_eq!(
        peer.ask(&request(
            4,
            "resources/subscribe",
            json!({ "uri": "mem://counter" })
        )),
        error(4, -32601, "method not found: resources/subscribe")
    );
    assert_eq!(
        peer.ask(&request(
            5,
            "resources/unsubscribe",
            json!({ "uri": "mem://counter" })
        )),
        error(5, -32601, "method not found: resources/unsubscribe")
    );
    // A modern version the server does not speak changes nothing: still a
    // modern request.
    let mut odd = request(6, "ping", json!({}));
    odd["params"]["_meta"][PROTOCOL_VERSION] = json!("2030-01-01");
    assert_eq!(peer.ask(&odd), error(6, -32601, "method not found: ping"));

    // None of them touched the session: same version, no subscription,
    // no log level.
    assert_session_is_bare(&mut peer, 7, "2025-06-18");
    peer.finish_quietly();
}

#[test]
fn subscriptions_listen_without_modern_meta_in_a_legacy_session_is_not_found() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session(&mut peer, "2025-11-25");
    assert_eq!(
        peer.ask(&legacy(
            1,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } })
        )),
        error(1, -32601, "method not found: subscriptions/listen")
    );
    // Nothing was opened: a list change reaches only the legacy session.
    peer.send(&legacy_call(2, "test_trigger_tool_change", json!({})));
    recv_unordered(
        &peer,
        vec![
            list_changed("tools"),
            legacy_text(2, "Tool list change published."),
        ],
    );
    peer.finish_quietly();
}

// --- 7. Input from a legacy client -----------------------------------------
//
// A handler's `input_required` result becomes the server's own requests to
// a legacy client (src/server/legacy/input.rs): one JSON-RPC request per
// input request, answered by id, then the handler runs again with the
// answers, and the client sees only the final, downgraded reply.

#[test]
fn tools_that_need_an_undeclared_capability_are_a_tool_error_for_a_legacy_client() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // This client declared no capabilities: the server may not ask it.
    open_session(&mut peer, "2025-11-25");
    for (id, tool, needed) in [
        (1, "ask", "elicitation"),
        (2, "test_input_required_result_elicitation", "elicitation"),
        (3, "test_input_required_result_sampling", "sampling"),
        (4, "test_input_required_result_list_roots", "roots"),
        (
            5,
            "test_input_required_result_multiple_inputs",
            "elicitation, roots, sampling",
        ),
        // Not a multi round-trip tool: it checks the capability itself.
        (6, "test_missing_capability", "sampling"),
    ] {
        assert_eq!(
            peer.ask(&legacy_call(id, tool, json!({}))),
            undeclared_result(id, needed, "2025-11-25"),
            "{tool}"
        );
    }
    assert_eq!(
        undeclared("this tool", "elicitation", "2025-11-25"),
        "this tool needs the client capabilities elicitation, which this client (MCP 2025-11-25) did not declare when it initialized"
    );
    // A prompt that needs input: an error naming the method (prompts/get
    // has no isError).
    assert_eq!(
        peer.ask(&legacy(
            7,
            "prompts/get",
            json!({ "name": "test_input_required_result_prompt" })
        )),
        json!({
            "jsonrpc": "2.0",
            "id": 7,
            "error": { "code": -32603, "message": undeclared("prompts/get", "elicitation", "2025-11-25") }
        })
    );
    // Nothing was asked: the very next line is a ping's reply.
    ping_barrier(&mut peer, 8);
    // The same tool called by a modern client (that can answer) on the
    // same connection still asks for input, as a result.
    let mut modern = call(9, "ask", json!({}));
    modern["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "elicitation": {} });
    let modern = peer.ask(&modern);
    assert_eq!(
        modern["result"]["resultType"],
        json!("input_required"),
        "{modern}"
    );
    peer.finish_quietly();
}

#[test]
fn only_the_capabilities_the_client_did_not_declare_are_named() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // Elicitation in URL mode only does not cover a form.
    open_session_with(
        &mut peer,
        "2025-11-25",
        json!({ "sampling": {}, "elicitation": { "url": {} } }),
    );
    assert_eq!(
        peer.ask(&legacy_call(
            1,
            "test_input_required_result_multiple_inputs",
            json!({})
        )),
        undeclared_result(1, "elicitation, roots", "2025-11-25")
    );
    assert_eq!(
        peer.ask(&legacy_call(2, "ask", json!({}))),
        undeclared_result(2, "elicitation", "2025-11-25")
    );
    // What it did declare, it is asked for.
    peer.send(&legacy_call(
        3,
        "test_input_required_result_sampling",
        json!({}),
    ));
    let ask = recv_ask(&peer, "sampling/createMessage", capital_question());
    answer(&mut peer, &ask, paris());
    assert_eq!(peer.recv(), legacy_text(3, "The model says: Paris"));
    peer.finish_quietly();
}

#[test]
fn what_a_legacy_client_declared_in_initialize_lets_the_server_ask_it() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let init = initialize_with(
        "init",
        "2025-03-26",
        json!({ "elicitation": {}, "sampling": {}, "roots": { "listChanged": true } }),
    );
    assert_eq!(peer.ask(&init), initialize_result("init", "2025-03-26"));
    peer.send(&initialized());
    // Before 2025-11-25 an elicitation has no `mode`.
    peer.send(&legacy_call(
        1,
        "test_input_required_result_elicitation",
        json!({}),
    ));
    let ask = recv_ask(&peer, "elicitation/create", name_form(false));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(1, "Hello, Ada!"));
    peer.send(&legacy_call(2, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(false));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(2, "Nice to meet you, Ada!"));
    // What the client declared in initialize holds for every request of
    // the session.
    assert_eq!(
        peer.ask(&legacy_call(3, "test_missing_capability", json!({}))),
        legacy_text(3, "The request declared sampling.")
    );
    peer.finish_quietly();
}

#[test]
fn a_legacy_client_is_asked_with_a_request_of_the_servers_own() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    peer.send(&legacy_call(1, "ask", json!({})));
    // A 2025-11-25 elicitation carries its mode.
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    answer(&mut peer, &ask, accept("name", "Ada"));
    // The final reply is a legacy result: no resultType, no _meta.
    let reply = peer.recv();
    assert_eq!(reply, legacy_text(1, "Nice to meet you, Ada!"));
    assert_eq!(keys(&reply["result"]), ["content"]);
    // The next call is asked anew, under an id of its own.
    peer.send(&legacy_call(2, "ask", json!({})));
    let again = recv_ask(&peer, "elicitation/create", name_form(true));
    assert_ne!(again, ask);
    answer(&mut peer, &again, accept("name", "Grace"));
    assert_eq!(peer.recv(), legacy_text(2, "Nice to meet you, Grace!"));
    peer.finish_quietly();
}

#[test]
fn an_elicitation_for_a_2025_06_18_client_has_no_mode() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-06-18", json!({ "elicitation": {} }));
    peer.send(&legacy_call(1, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(false));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(1, "Nice to meet you, Ada!"));
    peer.finish_quietly();
}

#[test]
fn every_ask_of_a_round_goes_out_before_any_answer() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", all_input_capabilities());
    peer.send(&legacy_call(
        1,
        "test_input_required_result_multiple_inputs",
        json!({}),
    ));
    // All three arrive before the client answered anything, in whatever
    // order.
    let arrived: Vec<Value> = (0..3).map(|_| peer.recv()).collect();
    let mut by_method: Vec<&Value> = arrived.iter().collect();
    by_method.sort_by_key(|ask| ask["method"].as_str().unwrap_or_default().to_owned());
    let expected = [
        ("elicitation/create", name_form(true)),
        ("roots/list", json!({})),
        ("sampling/createMessage", capital_question()),
    ];
    for (ask, (method, params)) in by_method.iter().zip(expected) {
        assert_eq!(
            ask,
            &&json!({ "jsonrpc": "2.0", "id": ask["id"], "method": method, "params": params })
        );
        assert!(ask["id"].as_str().unwrap().starts_with(ASK_PREFIX), "{ask}");
    }
    let mut ids: Vec<String> = arrived.iter().map(|a| a["id"].to_string()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "three ids: {arrived:?}");
    // Answered in the reverse order of arrival.
    for ask in arrived.iter().rev() {
        let result = match ask["method"].as_str().unwrap() {
            "elicitation/create" => accept("name", "Ada"),
            "sampling/createMessage" => paris(),
            _ => one_root(),
        };
        answer(&mut peer, &ask["id"], result);
    }
    assert_eq!(
        peer.recv(),
        legacy_text(1, "name Ada, model Paris, 1 roots")
    );
    peer.finish_quietly();
}

#[test]
fn each_round_of_a_multi_round_tool_is_asked_anew() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    peer.send(&legacy_call(
        1,
        "test_input_required_result_multi_round",
        json!({}),
    ));
    let first = recv_ask(&peer, "elicitation/create", name_form(true));
    answer(&mut peer, &first, accept("name", "Ada"));
    let second = recv_ask(
        &peer,
        "elicitation/create",
        form("Favourite colour?", "colour", true),
    );
    assert_ne!(first, second);
    answer(&mut peer, &second, accept("colour", "blue"));
    assert_eq!(peer.recv(), legacy_text(1, "Ada likes blue"));
    peer.finish_quietly();
}

#[test]
fn a_legacy_client_is_asked_at_most_eight_rounds() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    // `ask` asks again until an answer carries a name; these never do.
    peer.send(&legacy_call(1, "ask", json!({})));
    let mut seen = Vec::new();
    for _ in 0..8 {
        let ask = recv_ask(&peer, "elicitation/create", name_form(true));
        assert!(!seen.contains(&ask), "a fresh id each round: {ask}");
        answer(&mut peer, &ask, json!({ "action": "accept" }));
        seen.push(ask);
    }
    assert_eq!(
        peer.recv(),
        ok(
            1,
            json!({
                "content": [{ "type": "text", "text": "this tool kept asking the client for input and never finished" }],
                "isError": true
            })
        )
    );
    peer.finish_quietly();
}

#[test]
fn a_prompt_that_needs_input_asks_a_legacy_client() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    peer.send(&legacy(
        1,
        "prompts/get",
        json!({ "name": "test_input_required_result_prompt" }),
    ));
    let ask = recv_ask(
        &peer,
        "elicitation/create",
        form("What context should the prompt use?", "context", true),
    );
    answer(&mut peer, &ask, accept("context", "a legacy run"));
    let reply = peer.recv();
    assert_eq!(
        reply,
        ok(
            1,
            json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Context: a legacy run" } }] })
        )
    );
    assert_eq!(keys(&reply["result"]), ["messages"]);
    peer.finish_quietly();
}

#[test]
fn a_resource_that_needs_input_asks_a_legacy_client() {
    use mcp_stdio::types::{
        InputRequest, InputRequiredResult, ReadResourceResult, Resource, ResourceContents,
    };
    let server = crate::everything::build_with(|b| {
        b.resource(Resource::new("legacy://roots", "roots"), |ctx, req| {
            Ok(match ctx.roots("where") {
                Some(roots) => {
                    Outcome::Complete(ReadResourceResult::new(vec![ResourceContents::text(
                        &req.uri,
                        roots.roots[0].uri.clone(),
                    )]))
                }
                None => Outcome::InputRequired(InputRequiredResult::new(
                    [(
                        // No params at all: the ask still carries `"params": {}`
                        // (JSON-RPC 2.0: params, when present, are an object).
                        "where".to_owned(),
                        InputRequest::ListRoots(None),
                    )]
                    .into(),
                )),
            })
        })
    });
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "roots": {} }));
    peer.send(&legacy(
        1,
        "resources/read",
        json!({ "uri": "legacy://roots" }),
    ));
    let ask = recv_ask(&peer, "roots/list", json!({}));
    answer(&mut peer, &ask, one_root());
    // Downgraded: no ttlMs, cacheScope, resultType or _meta.
    assert_eq!(
        peer.recv(),
        ok(
            1,
            json!({ "contents": [{ "uri": "legacy://roots", "text": "file:///legacy/root" }] })
        )
    );
    peer.finish_quietly();
}

#[test]
fn an_error_answer_to_an_ask_fails_the_request_with_its_code() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    for (id, code, message) in [(1, -32601, "Method not found"), (2, -1, "User rejected")] {
        peer.send(&legacy_call(id, "ask", json!({})));
        let ask = recv_ask(&peer, "elicitation/create", name_form(true));
        peer.send(&error(ask, code, message));
        assert_eq!(
            peer.recv(),
            error(
                id,
                code,
                &format!("the client answered name with an error: {message}")
            )
        );
    }
    // The session goes on.
    peer.send(&legacy_call(3, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(3, "Nice to meet you, Ada!"));
    peer.finish_quietly();
}

/// The server's cancellation of one of its asks.
fn ask_cancelled(ask: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": ask, "reason": "the request was cancelled" }
    })
}

/// What the trace says of a response that answers no ask.
fn ignored(id: &Value) -> String {
    format!("ignoring a response (id {id}) from the client: it answers no request of this server")
}

#[test]
fn cancelling_a_request_withdraws_its_open_ask() {
    let (server, notes) = traced_everything();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    peer.send(&legacy_call(1, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    peer.send(&cancel(1));
    assert_eq!(peer.recv(), ask_cancelled(&ask));
    // Nothing is ever sent for the cancelled request.
    peer.assert_silent_for(Duration::from_millis(300));
    // A late answer to the withdrawn ask answers nothing.
    answer(&mut peer, &ask, accept("name", "Ada"));
    ping_barrier(&mut peer, 2);
    assert_eq!(ignored_responses(&notes), [ignored(&ask)]);
    // The server goes on serving, the id of the cancelled request too.
    assert_eq!(
        peer.ask(&legacy_call(1, "echo", json!({ "text": "after" }))),
        legacy_text(1, "after")
    );
    peer.finish_quietly();
}

// The gap the core review found (section 2j): a handler that ignores its
// cancellation and asks for input afterwards must not put that ask on the
// wire. Nothing at all is sent for a cancelled request.
#[test]
fn a_request_cancelled_before_it_asks_never_asks_the_client() {
    use mcp_stdio::types::{
        CallToolResult, InputRequest, InputRequests, InputRequiredResult, RequestParams, Tool,
    };
    let (started_tx, started) = crossbeam_channel::bounded::<()>(1);
    let (release_tx, release) = crossbeam_channel::bounded::<()>(1);
    let server = Server::builder("late-ask", "1.0.0")
        .tool(
            Tool::new("late_ask", "Asks for the roots, after a while."),
            move |_ctx, _: Value| {
                started_tx.send(()).unwrap();
                release.recv().unwrap();
                let mut requests = InputRequests::new();
                let roots = InputRequest::ListRoots(Some(RequestParams::default()));
                requests.insert("roots".to_owned(), roots);
                Ok(Outcome::<CallToolResult>::InputRequired(
                    InputRequiredResult::new(requests),
                ))
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&initialize_with(
            "init",
            "2025-11-25",
            json!({ "roots": {} })
        ))["id"],
        "init"
    );
    peer.send(&initialized());
    peer.send(&legacy_call(1, "late_ask", json!({})));
    started.recv_timeout(crate::support::WAIT).unwrap();
    peer.send(&cancel(1));
    // The cancellation was handled before the handler goes on.
    ping_barrier(&mut peer, 2);
    release_tx.send(()).unwrap();
    // No `roots/list`, no withdrawal of one, no reply.
    peer.assert_silent_for(Duration::from_millis(300));
    ping_barrier(&mut peer, 3);
    peer.finish_quietly();
}

/// A server with one inline tool, `where`, that asks for the roots and
/// then answers with the number of roots; each of its rounds records the
/// thread it ran on.
fn where_server() -> (Server, crossbeam_channel::Receiver<String>) {
    where_server_with(|builder| builder)
}

/// [`where_server`] with settings of its own.
fn where_server_with(
    settings: impl FnOnce(mcp_stdio::ServerBuilder) -> mcp_stdio::ServerBuilder,
) -> (Server, crossbeam_channel::Receiver<String>) {
    use mcp_stdio::types::{CallToolResult, InputRequest, InputRequests, InputRequiredResult};
    use mcp_stdio::types::{RequestParams, Tool};
    let (ran_on_tx, ran_on) = crossbeam_channel::unbounded();
    let server = settings(Server::builder("where", "1.0.0"))
        .inline_tool(
            Tool::new("where", "Asks for the roots, then counts them."),
            move |ctx, _: Value| {
                let thread = thread::current().name().unwrap_or("").to_owned();
                ran_on_tx.send(thread).unwrap();
                if let Some(roots) = ctx.roots("roots") {
                    let text = format!("{} root(s)", roots.roots.len());
                    return Ok(Outcome::Complete(CallToolResult::text(text)));
                }
                let mut requests = InputRequests::new();
                let roots = InputRequest::ListRoots(Some(RequestParams::default()));
                requests.insert("roots".to_owned(), roots);
                Ok(Outcome::InputRequired(InputRequiredResult::new(requests)))
            },
        )
        .build();
    (server, ran_on)
}

/// Calls `where` as request `id`, answers its ask with one root, and
/// checks the call's result.
fn call_where_answered(peer: &mut Peer, id: i64) {
    peer.send(&legacy_call(id, "where", json!({})));
    let ask = recv_ask(peer, "roots/list", json!({}));
    answer(peer, &ask, one_root());
    assert_eq!(peer.recv(), legacy_text(id, "1 root(s)"));
}

/// Opens a 2025-11-25 session that declares roots, on a server that is
/// not the fixture server.
fn open_roots_session(peer: &mut Peer) {
    let init = initialize_with("init", "2025-11-25", json!({ "roots": {} }));
    assert_eq!(peer.ask(&init)["id"], "init");
    peer.send(&initialized());
}

// An inline tool is inline for both eras: its first round runs on the
// reader for a legacy client too. The rest, which waits for the client's
// answers, goes to the pool (`Bridge::wrap_inline` hands it back as
// `Reply::Later`, `ConnHandle::run_inline` re-enters it as pooled), so the
// reader reads on meanwhile.
#[test]
fn an_inline_tool_runs_on_the_reader_for_a_legacy_client_and_waits_for_answers_on_the_pool() {
    let (server, ran_on) = where_server();
    let mut peer = Peer::start(&server);
    open_roots_session(&mut peer);
    peer.send(&legacy_call(1, "where", json!({})));
    let ask = recv_ask(&peer, "roots/list", json!({}));
    // The reader is free while the request waits for the answer.
    ping_barrier(&mut peer, 2);
    answer(&mut peer, &ask, one_root());
    assert_eq!(peer.recv(), legacy_text(1, "1 root(s)"));
    let rounds: Vec<String> = ran_on.try_iter().collect();
    assert_eq!(rounds, ["mcp-reader", "mcp-worker"]);
    // A modern call of the same tool: the first round on the reader too.
    let mut modern = call(3, "where", json!({}));
    modern["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "roots": {} });
    assert_eq!(peer.ask(&modern)["result"]["resultType"], "input_required");
    assert_eq!(ran_on.try_iter().collect::<Vec<_>>(), ["mcp-reader"]);
    peer.finish_quietly();
}

// The request handed to the pool is the same request: cancelling it
// withdraws its ask, and nothing more is sent for it; its id is free again.
#[test]
fn cancelling_an_inline_legacy_request_that_waits_for_answers_withdraws_its_ask() {
    let (server, _ran_on) = where_server();
    let mut peer = Peer::start(&server);
    open_roots_session(&mut peer);
    peer.send(&legacy_call(1, "where", json!({})));
    let ask = recv_ask(&peer, "roots/list", json!({}));
    peer.send(&cancel(1));
    assert_eq!(peer.recv(), ask_cancelled(&ask));
    peer.assert_silent_for(Duration::from_millis(200));
    call_where_answered(&mut peer, 1);
    peer.finish_quietly();
}

// Spec 2025-11-25 basic/lifecycle ("Timeouts"): the sender of a request
// gives up on it after a while and cancels it. A client that never answers
// the server's ask gets it cancelled after the ask timeout, and its request
// an error that says so; the connection goes on.
#[test]
fn an_ask_the_client_leaves_unanswered_is_cancelled_after_the_ask_timeout() {
    let timeout = Duration::from_millis(300);
    let (server, _ran_on) = where_server_with(|builder| builder.ask_timeout(timeout));
    let mut peer = Peer::start(&server);
    open_roots_session(&mut peer);
    let asked = Instant::now();
    peer.send(&legacy_call(1, "where", json!({})));
    let ask = recv_ask(&peer, "roots/list", json!({}));
    assert_eq!(peer.recv(), ask_cancelled(&ask));
    assert!(
        asked.elapsed() >= timeout,
        "gave up after {:?}",
        asked.elapsed()
    );
    let reply = peer.recv();
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["error"]["code"], -32603);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "internal error: the client did not answer the server's request {ask} (roots) within 300ms"
        )),
        "{message}"
    );
    // A late answer is ignored; the next call is served.
    answer(&mut peer, &ask, one_root());
    call_where_answered(&mut peer, 2);
    peer.finish_quietly();
}

// Twelve inline legacy requests that ask, pipelined, on two slots: each
// goes from the reader to the pool (a slot, or the queue for one) and parks
// while it asks, and past two parked requests an ask is refused. Three are
// cancelled right behind the calls, wherever they are by then. Every other
// request ends exactly once (its answer, or the refusal), a cancelled one
// at most once and only by the refusal (it was refused before the reader
// came to its cancellation: when the pool gave the queued requests threads
// at once, as a pool without a watcher did, that was half the runs; a
// loaded machine can do the same to this pool), and an ask withdrawn is
// one of a cancelled request's.
#[test]
fn pipelined_inline_legacy_asks_end_once_each() {
    let (server, _ran_on) = where_server_with(|builder| builder.max_running(2));
    let mut peer = Peer::start(&server);
    open_roots_session(&mut peer);
    for id in 1..=12 {
        peer.send(&legacy_call(id, "where", json!({})));
    }
    let cancelled = [3, 7, 11];
    for id in cancelled {
        peer.send(&cancel(id));
    }
    let expected: Vec<i64> = (1..=12).filter(|id| !cancelled.contains(id)).collect();
    let mut ended: Vec<i64> = Vec::new();
    let mut withdrawn = 0;
    while !expected.iter().all(|id| ended.contains(id)) {
        let message = peer.recv();
        if message["method"] == "roots/list" {
            answer(&mut peer, &message["id"], one_root());
        } else if message["method"] == "notifications/cancelled" {
            withdrawn += 1;
        } else {
            let id = message["id"].as_i64().expect("a reply to a call");
            let refused = message["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("too many requests already wait"));
            assert!(
                message == legacy_text(id, "1 root(s)") || refused,
                "{message}"
            );
            assert!(
                refused || !cancelled.contains(&id),
                "cancelled request {id} answered: {message}"
            );
            ended.push(id);
        }
    }
    // Nothing more for anyone: the ping's reply comes next (a withdrawal
    // still on its way may come first).
    peer.send(&legacy(99, "ping", json!({})));
    loop {
        let message = peer.recv();
        if message["id"] == 99 {
            break;
        }
        assert_eq!(message["method"], "notifications/cancelled", "{message}");
        withdrawn += 1;
    }
    ended.sort_unstable();
    let mut once = ended.clone();
    once.dedup();
    assert_eq!(once, ended, "a request ended twice");
    ended.retain(|id| !cancelled.contains(id));
    assert_eq!(ended, expected);
    assert!(withdrawn <= cancelled.len(), "{withdrawn} asks withdrawn");
    peer.finish_quietly();
}

#[test]
fn cancelling_a_request_withdraws_only_its_unanswered_asks() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", all_input_capabilities());
    peer.send(&legacy_call(
        1,
        "test_input_required_result_multiple_inputs",
        json!({}),
    ));
    let asks: Vec<Value> = (0..3).map(|_| peer.recv()).collect();
    let (answered, open): (Vec<&Value>, Vec<&Value>) = asks
        .iter()
        .partition(|ask| ask["method"] == "elicitation/create");
    answer(&mut peer, &answered[0]["id"], accept("name", "Ada"));
    peer.send(&cancel(1));
    recv_unordered(
        &peer,
        open.iter().map(|ask| ask_cancelled(&ask["id"])).collect(),
    );
    peer.assert_silent_for(Duration::from_millis(300));
    ping_barrier(&mut peer, 2);
    peer.finish_quietly();
}

#[test]
fn an_error_answer_ends_the_request_at_once_and_withdraws_the_other_asks() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", all_input_capabilities());
    peer.send(&legacy_call(
        1,
        "test_input_required_result_multiple_inputs",
        json!({}),
    ));
    let asks: Vec<Value> = (0..3).map(|_| peer.recv()).collect();
    // The last ask to arrive is refused while the others are still open:
    // the server does not wait for them.
    let refused = &asks[2];
    peer.send(&error(refused["id"].clone(), -1, "User rejected"));
    let key = match refused["method"].as_str() {
        Some("elicitation/create") => "user_name",
        Some("sampling/createMessage") => "capital_question",
        _ => "client_roots",
    };
    let mut expected: Vec<Value> = asks[..2]
        .iter()
        .map(|ask| ask_cancelled(&ask["id"]))
        .collect();
    expected.push(error(
        1,
        -1,
        &format!("the client answered {key} with an error: User rejected"),
    ));
    recv_unordered(&peer, expected);
    ping_barrier(&mut peer, 2);
    peer.finish_quietly();
}

#[test]
fn the_end_of_input_fails_a_request_waiting_for_an_answer() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    peer.send(&legacy_call(1, "ask", json!({})));
    recv_ask(&peer, "elicitation/create", name_form(true));
    // EOF: the request fails at once (not after the shutdown grace), and
    // serve returns.
    let (rest, res) = peer.finish();
    res.unwrap();
    assert_eq!(
        rest,
        [error(
            1,
            -32603,
            "internal error: the connection closed before the client answered"
        )]
    );
}

#[test]
fn a_stop_fails_a_request_waiting_for_an_answer() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    peer.send(&legacy_call(1, "ask", json!({})));
    recv_ask(&peer, "elicitation/create", name_form(true));
    server.stop_handle().stop();
    assert_eq!(
        peer.recv(),
        error(
            1,
            -32603,
            "internal error: the connection closed before the client answered"
        )
    );
    peer.finish_quietly();
}

#[test]
fn a_response_that_answers_no_ask_is_only_traced() {
    let (server, notes) = traced_everything();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    peer.send(&legacy_call(1, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    // While the ask is open: an id the server never used (its counter
    // starts at 1), the id of the client's own request, an error.
    let strays = [
        ok(format!("{ASK_PREFIX}0"), accept("name", "Eve")),
        ok(1, accept("name", "Eve")),
        error("nobody", -32601, "Method not found"),
    ];
    for stray in &strays {
        peer.send(stray);
    }
    // Not answered: the next line is a ping's reply.
    ping_barrier(&mut peer, 2);
    assert_eq!(
        ignored_responses(&notes),
        strays.iter().map(|s| ignored(&s["id"])).collect::<Vec<_>>()
    );
    // The open ask still gets its own answer.
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(1, "Nice to meet you, Ada!"));
    peer.finish_quietly();
    assert_eq!(ignored_responses(&notes), Vec::<String>::new());
}

#[test]
fn a_modern_request_in_a_legacy_session_gets_input_required_and_no_ask() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    let modern = |id: i64, extra: Value| {
        let mut call = call(id, "ask", json!({}));
        call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({ "elicitation": {} });
        for (key, value) in extra.as_object().unwrap() {
            call["params"][key] = value.clone();
        }
        call
    };
    let resp = peer.ask(&modern(1, json!({})));
    let state = resp["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("a sealed requestState: {resp}"))
        .to_owned();
    assert_eq!(
        resp,
        json!({
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "resultType": "input_required",
                "inputRequests": {
                    "name": { "method": "elicitation/create", "params": name_form(true) }
                },
                "requestState": state,
                "_meta": peer.server_meta
            }
        })
    );
    // No ask went out: the next line is a ping's reply.
    ping_barrier(&mut peer, 2);
    // The modern retry completes it, modern-shaped.
    let retry = modern(
        3,
        json!({ "inputResponses": { "name": accept("name", "Ada") }, "requestState": state }),
    );
    assert_eq!(
        peer.ask(&retry),
        text_result(&peer, 3, "Nice to meet you, Ada!")
    );
    // A legacy call of the same tool on the same connection is asked.
    peer.send(&legacy_call(4, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(4, "Nice to meet you, Ada!"));
    peer.finish_quietly();
}

// --- 8. Progress and cancellation ----------------------------------------

#[test]
fn progress_of_a_legacy_request_comes_before_its_reply() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session(&mut peer, "2025-11-25");
    for token in [json!("legacy-tok"), json!(42)] {
        peer.send(&legacy(
            1,
            "tools/call",
            json!({ "name": "progress", "arguments": { "steps": 3 }, "_meta": { "progressToken": token } }),
        ));
        for step in 1..=3 {
            assert_eq!(peer.recv(), progress(token.clone(), step, 3));
        }
        assert_eq!(peer.recv(), legacy_text(1, "done"));
    }
    // Without a token: no progress.
    assert_eq!(
        peer.ask(&legacy_call(2, "progress", json!({ "steps": 3 }))),
        legacy_text(2, "done")
    );
    peer.finish_quietly();
}

#[test]
fn a_legacy_request_can_be_cancelled() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session(&mut peer, "2025-11-25");
    peer.send(&legacy_call("s", "slow", json!({ "ms": 60_000 })));
    peer.send(&cancel("s"));
    // `stats` counts slow calls that saw their cancellation; poll it with
    // legacy requests (each answer is an event, not a sleep).
    let mut observed = false;
    for i in 0..2000 {
        let stats = peer.ask(&legacy_call(i, "stats", json!({})));
        assert_eq!(keys(&stats["result"]), ["content"], "{stats}");
        let text = stats["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let stats: Value = serde_json::from_str(&text).unwrap();
        if stats["slow_cancelled"] == json!(1) {
            observed = true;
            break;
        }
        thread::yield_now();
    }
    assert!(observed, "the slow call never saw its cancellation");
    // The cancelled request is never answered.
    peer.finish_quietly();
}

// --- 9. Modern-only mode -------------------------------------------------

#[test]
fn a_modern_only_server_rejects_initialize_naming_its_versions() {
    let server = crate::everything::build_with(|b| b.modern_only());
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&initialize(1, "2025-11-25"));
    assert_eq!(
        resp,
        json!({
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32601,
                "message": "method not found: initialize (this server speaks only MCP 2026-07-28, which has no initialize handshake)",
                "data": { "supported": ["2026-07-28"] }
            }
        })
    );
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2026-07-28")
    );
    // No session: no legacy ping, no legacy semantics at all.
    assert_eq!(
        peer.ask(&legacy(2, "ping", json!({}))),
        error(2, -32601, "method not found: ping")
    );
    peer.send_raw(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert_eq!(peer.recv(), error(3, -32601, "method not found: ping"));
    peer.send(&initialized());
    assert_eq!(
        peer.ask(&legacy(4, "tools/list", json!({}))),
        error(
            4,
            -32602,
            "invalid params: missing _meta[\"io.modelcontextprotocol/protocolVersion\"]"
        )
    );
    assert_eq!(
        peer.ask(&legacy(5, "logging/setLevel", json!({ "level": "info" }))),
        error(5, -32601, "method not found: logging/setLevel")
    );
    // Modern requests are served as ever.
    assert_eq!(
        peer.ask(&call(6, "echo", json!({ "text": "still modern" }))),
        text_result(&peer, 6, "still modern")
    );
    peer.finish_quietly();
}

#[cfg(feature = "client")]
mod client_side {
    use super::*;
    use mcp_stdio::{Client, Era, EraPolicy, PromptArguments, Transport};

    // --- 10. The client, end to end ------------------------------------------

    /// Serves `server` on a thread; returns the client's end.
    fn serve_on_thread(
        server: &Server,
    ) -> (Transport, thread::JoinHandle<Result<(), mcp_stdio::Error>>) {
        let (ours, theirs) = Transport::memory();
        let server = server.clone();
        let serving = thread::spawn(move || server.serve(theirs));
        (ours, serving)
    }

    #[test]
    fn the_client_forced_legacy_talks_to_the_everything_server() {
        let server = crate::everything::build();
        let (transport, serving) = serve_on_thread(&server);
        let client = Client::builder()
            .era(EraPolicy::LegacyOnly)
            .connect(transport)
            .unwrap();
        assert_eq!(
            client.era(),
            Era::Legacy {
                version: "2025-11-25".into()
            }
        );
        assert_eq!(
            serde_json::to_value(client.server_capabilities()).unwrap(),
            capabilities()
        );
        assert_eq!(
            serde_json::to_value(client.server_info().unwrap()).unwrap(),
            server_info()
        );
        assert_eq!(client.instructions().as_deref(), Some(INSTRUCTIONS));
        assert!(client.discover_result().is_none());

        let tools: Vec<String> = client.tools().map(|t| t.unwrap().name).collect();
        assert_eq!(tools, EVERYTHING_TOOLS);

        match client.call_tool("echo", json!({ "text": "hi" })).unwrap() {
            Outcome::Complete(result) => assert_eq!(
                serde_json::to_value(result).unwrap(),
                json!({ "content": [{ "type": "text", "text": "hi" }] })
            ),
            other => panic!("{other:?}"),
        }
        client.ping().unwrap();
        match client.read_resource("test://static-text").unwrap() {
            Outcome::Complete(result) => assert_eq!(
                serde_json::to_value(result).unwrap(),
                json!({ "contents": [{
                    "uri": "test://static-text",
                    "mimeType": "text/plain",
                    "text": "This is the content of the static text resource."
                }] })
            ),
            other => panic!("{other:?}"),
        }
        let mut args = PromptArguments::new();
        args.insert("name".into(), "Ada".into());
        match client.get_prompt("greet", args).unwrap() {
            Outcome::Complete(result) => assert_eq!(
                serde_json::to_value(result).unwrap(),
                json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Please greet Ada warmly." } }] })
            ),
            other => panic!("{other:?}"),
        }
        // A tool that needs input this client cannot give (it declared no
        // elicitation): a tool error the client can show.
        match client.call_tool("ask", json!({})).unwrap() {
            Outcome::Complete(result) => assert_eq!(
                serde_json::to_value(result).unwrap(),
                json!({
                    "content": [{ "type": "text", "text": undeclared("this tool", "elicitation", "2025-11-25") }],
                    "isError": true
                })
            ),
            other => panic!("{other:?}"),
        }
        client.close().unwrap();
        serving.join().unwrap().unwrap();
    }

    #[test]
    fn the_client_forced_legacy_answers_the_servers_asks() {
        use mcp_stdio::types::{ElicitRequestParams, ElicitResult};
        let server = crate::everything::build();
        let (transport, serving) = serve_on_thread(&server);
        let client = Client::builder()
            .era(EraPolicy::LegacyOnly)
            .on_elicitation(|params| {
                let ElicitRequestParams::Form(form) = params else {
                    panic!("a form: {params:?}");
                };
                let (field, value) = match form.message.as_str() {
                    "What is your name?" => ("name", "Ada"),
                    "Favourite colour?" => ("colour", "green"),
                    _ => ("context", "the client's"),
                };
                let mut content = serde_json::Map::new();
                content.insert(field.into(), json!(value));
                Ok(ElicitResult::accept(content))
            })
            .on_sampling(|_| Ok(serde_json::from_value(paris()).unwrap()))
            .on_roots(|| Ok(serde_json::from_value(one_root()).unwrap()))
            .connect(transport)
            .unwrap();
        assert_eq!(
            client.era(),
            Era::Legacy {
                version: "2025-11-25".into()
            }
        );
        for (tool, text) in [
            ("ask", "Nice to meet you, Ada!"),
            (
                "test_input_required_result_multiple_inputs",
                "name Ada, model Paris, 1 roots",
            ),
            ("test_input_required_result_multi_round", "Ada likes green"),
        ] {
            match client.call_tool(tool, json!({})).unwrap() {
                Outcome::Complete(result) => assert_eq!(
                    serde_json::to_value(result).unwrap(),
                    json!({ "content": [{ "type": "text", "text": text }] }),
                    "{tool}"
                ),
                other => panic!("{tool}: {other:?}"),
            }
        }
        match client
            .get_prompt("test_input_required_result_prompt", PromptArguments::new())
            .unwrap()
        {
            Outcome::Complete(result) => assert_eq!(
                serde_json::to_value(result).unwrap(),
                json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Context: the client's" } }] })
            ),
            other => panic!("{other:?}"),
        }
        client.close().unwrap();
        serving.join().unwrap().unwrap();
    }

    #[test]
    fn the_default_client_detects_the_dual_era_server_as_modern() {
        let server = crate::everything::build();
        let (transport, serving) = serve_on_thread(&server);
        let client = Client::connect(transport).unwrap();
        assert_eq!(
            client.era(),
            Era::Modern {
                version: "2026-07-28".into()
            }
        );
        let discover = client.discover_result().expect("the probe answered");
        assert_eq!(discover.supported_versions, ["2026-07-28"]);
        assert_eq!(
            serde_json::to_value(client.server_capabilities()).unwrap(),
            modern_capabilities()
        );
        match client.call_tool("echo", json!({ "text": "hi" })).unwrap() {
            Outcome::Complete(result) => {
                assert_eq!(result.content[0].as_text(), Some("hi"));
            }
            other => panic!("{other:?}"),
        }
        // Modern clients have no ping.
        assert!(client.ping().is_err());
        client.close().unwrap();
        serving.join().unwrap().unwrap();
    }

    #[test]
    fn the_client_forced_legacy_fails_against_a_modern_only_server() {
        let server = crate::everything::build_with(|b| b.modern_only());
        let (transport, serving) = serve_on_thread(&server);
        let err = Client::builder()
            .era(EraPolicy::LegacyOnly)
            .connect(transport)
            .unwrap_err();
        match err {
            mcp_stdio::Error::Rpc(e) => {
                assert_eq!(e.code, -32601);
                assert!(e.message.contains("2026-07-28"), "{}", e.message);
                assert_eq!(e.data, Some(json!({ "supported": ["2026-07-28"] })));
            }
            other => panic!("{other}"),
        }
        serving.join().unwrap().unwrap();
    }
}

/// A call written together with `initialize` belongs to the session that
/// `initialize` opens, although the reader may start a pooled call itself
/// (src/server/serve/direct.rs): lines take effect in their order.
#[test]
fn a_call_written_together_with_initialize_belongs_to_its_session() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let lines = [
        initialize("init", "2025-11-25"),
        initialized(),
        legacy_call(2, "slow", json!({ "ms": 0 })),
    ];
    let batch: Vec<String> = lines.iter().map(Value::to_string).collect();
    peer.send_raw(batch.join("\n").as_bytes());
    assert_eq!(peer.recv(), initialize_result("init", "2025-11-25"));
    assert_eq!(peer.recv(), legacy_text(2, "done"));
    peer.finish_quietly();
}

// --- 10. The front end under a hostile review (review-44) -----------------

/// The everything server with the test-controlled `block` tool
/// (`support::Blocker`, pooled).
fn everything_with_blocker() -> (Server, crate::support::Blocker) {
    let mut blocker = None;
    let server = crate::everything::build_with(|builder| {
        let (builder, installed) = crate::support::Blocker::install(builder);
        blocker = Some(installed);
        builder
    });
    (server, blocker.expect("installed"))
}

/// `-32600` for a request whose id is in use.
fn in_use(id: i64) -> Value {
    error(
        id,
        -32600,
        &format!("invalid request: request id {id} is already in use by a request in flight"),
    )
}

/// Claim: a request refused for an id in use (`Conn::refusal`, "an id in
/// flight is refused") changes nothing, `logging/setLevel` and
/// `resources/subscribe` as much as any. `Front::session_request` applies
/// the change to the session first (`LegacySession::apply`, under the
/// session's lock) and asks the core whether the request is refused only
/// afterwards: the client reads `-32600`, and its session changed anyway.
/// (`initialize` is refused before it opens a session: that part holds.)
#[test]
fn a_session_change_refused_for_an_id_in_use_changes_nothing() {
    let (server, blocker) = everything_with_blocker();
    let mut peer = Peer::start(&server);
    open_session(&mut peer, "2025-11-25");
    peer.send(&legacy_call(7, "block", json!({})));
    assert_eq!(blocker.wait_started(), json!(7));
    assert_eq!(
        peer.ask(&legacy(
            7,
            "resources/subscribe",
            json!({ "uri": "mem://counter" })
        )),
        in_use(7)
    );
    assert_eq!(
        peer.ask(&legacy(7, "logging/setLevel", json!({ "level": "debug" }))),
        in_use(7)
    );
    assert_eq!(
        peer.ask(&initialize_with(
            7,
            "2025-06-18",
            json!({ "elicitation": {} })
        )),
        in_use(7)
    );
    blocker.release_one();
    assert_eq!(peer.recv(), legacy_text(7, "released"));
    // The session is the one opened first (this holds on main): the
    // refused initialize opened none, so the client is not asked.
    assert_eq!(
        peer.ask(&legacy_call(10, "ask", json!({}))),
        undeclared_result(10, "elicitation", "2025-11-25")
    );
    // Not subscribed: a bump notifies nobody.
    assert_eq!(
        peer.ask(&legacy_call(8, "bump", json!({}))),
        legacy_text(8, "1"),
        "the refused resources/subscribe subscribed"
    );
    // No level: the logging tool logs nothing.
    assert_eq!(
        peer.ask(&legacy_call(9, "test_logging_tool", json!({}))),
        legacy_text(9, "Logged (where the request asked for logs).")
    );
    peer.finish_quietly();
}

/// A server with `retire`, an inline tool that waits for the test's word,
/// then removes the tool its arguments name (`{"name": ..}`); and two
/// pooled tools to remove, `victim-m` and `victim-l`. `started` hears each
/// `retire` begin; `go` lets one go on.
fn retiring_server() -> (
    Server,
    crossbeam_channel::Receiver<()>,
    crossbeam_channel::Sender<()>,
) {
    use mcp_stdio::types::{CallToolResult, Tool};
    let (started_tx, started) = crossbeam_channel::unbounded();
    let (go, go_rx) = crossbeam_channel::unbounded::<()>();
    let mut builder = Server::builder("retire", "1.0.0").inline_tool(
        Tool::new("retire", "Waits for the test, then removes a tool."),
        move |ctx, args: Value| {
            started_tx.send(()).unwrap();
            go_rx
                .recv_timeout(crate::support::WAIT)
                .expect("the test lets retire go on");
            let name = args["name"].as_str().unwrap_or_default();
            ctx.server().remove_tool(name);
            Ok(CallToolResult::text(format!("retired {name}")))
        },
    );
    for victim in ["victim-m", "victim-l"] {
        builder = builder.tool(Tool::new(victim, "Removed by retire."), |_ctx, _: Value| {
            Ok(CallToolResult::text("still here"))
        });
    }
    (builder.build(), started, go)
}

/// The names of a `tools/list` reply's tools.
fn tool_names(reply: &Value) -> Vec<String> {
    names(reply).into_iter().map(str::to_owned).collect()
}

/// Claim: lines take effect in the order they were read, and an inline
/// handler runs on the reader (ARCHITECTURE.md, "Each rule in one
/// function"): a client that calls an inline tool and lists the tools in
/// one write reads the list as the call left it, whatever its era. Since
/// the front end (1e654d0), every legacy `tools/call`, `prompts/get` and
/// `resources/read` runs on the pool (`Wrap::apply`, `inline` false for a
/// request that may ask), so the reader answers the next line while the
/// call has not run yet: the legacy client reads the tool it retired.
///
/// The modern client's transcript first, the same on the same server: the
/// inline tool runs on the reader, nothing comes while it waits.
#[test]
fn a_legacy_call_to_an_inline_tool_takes_effect_before_the_next_line() {
    let (server, started, go) = retiring_server();
    let mut peer = Peer::start(&server);
    let both = |call: Value, list: Value| {
        let lines = [call.to_string(), list.to_string()];
        format!("{}\n{}\n", lines[0], lines[1])
    };
    peer.write_raw(
        both(
            crate::support::call("m1", "retire", json!({ "name": "victim-m" })),
            request("m2", "tools/list", json!({})),
        )
        .as_bytes(),
    );
    started.recv_timeout(crate::support::WAIT).unwrap();
    peer.assert_silent_for(Duration::from_millis(300));
    go.send(()).unwrap();
    assert_eq!(peer.recv()["id"], "m1");
    let listed = peer.recv();
    assert_eq!(listed["id"], "m2");
    assert!(
        !tool_names(&listed).contains(&"victim-m".to_owned()),
        "{listed}"
    );

    assert_eq!(peer.ask(&initialize("init", "2025-11-25"))["id"], "init");
    peer.write_raw(
        both(
            legacy_call("l1", "retire", json!({ "name": "victim-l" })),
            legacy("l2", "tools/list", json!({})),
        )
        .as_bytes(),
    );
    started.recv_timeout(crate::support::WAIT).unwrap();
    let early = peer.try_recv(Duration::from_millis(300));
    go.send(()).unwrap();
    assert_eq!(
        early, None,
        "the legacy client's next line was answered while its inline call had not run"
    );
    assert_eq!(peer.recv(), legacy_text("l1", "retired victim-l"));
    let listed = peer.recv();
    assert_eq!(listed["id"], "l2");
    assert!(
        !tool_names(&listed).contains(&"victim-l".to_owned()),
        "{listed}"
    );
    peer.finish_quietly();
}

/// Claim: `logging/setLevel` holds for the whole connection from its
/// answer on (2025-11-25 server/utilities/logging; `LegacySession`'s
/// `log_level`, "for the whole connection"), so a request still running
/// when the client turns its logs down sends none below the new level.
/// The front end fixes a request's level as it prepares it
/// (`LegacySession::meta`, read once in `Front::request`): a request read
/// before the change logs at the old level to its end.
#[test]
fn a_level_set_while_a_request_runs_holds_for_its_later_logs() {
    use mcp_stdio::types::{CallToolResult, LoggingLevel, Tool};
    let (started_tx, started) = crossbeam_channel::unbounded();
    let (go, go_rx) = crossbeam_channel::unbounded::<()>();
    let server = Server::builder("levels", "1.0.0")
        .tool(
            Tool::new("log_later", "Waits for the test, then logs an error."),
            move |ctx, _: Value| {
                started_tx.send(()).unwrap();
                go_rx
                    .recv_timeout(crate::support::WAIT)
                    .expect("the test lets log_later go on");
                ctx.log(LoggingLevel::Error, None, json!("late"));
                Ok(CallToolResult::text("logged"))
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    assert_eq!(peer.ask(&initialize("init", "2025-11-25"))["id"], "init");
    assert_eq!(
        peer.ask(&legacy(1, "logging/setLevel", json!({ "level": "debug" }))),
        ok(1, json!({}))
    );
    peer.send(&legacy_call(2, "log_later", json!({})));
    started.recv_timeout(crate::support::WAIT).unwrap();
    // The client turns its logs down to emergencies only.
    assert_eq!(
        peer.ask(&legacy(
            3,
            "logging/setLevel",
            json!({ "level": "emergency" })
        )),
        ok(3, json!({}))
    );
    go.send(()).unwrap();
    assert_eq!(
        peer.recv(),
        legacy_text(2, "logged"),
        "an error log reached a client that asked for emergencies only"
    );
    peer.finish_quietly();
}

/// An output that passes writes on until `stall` is set, then takes
/// nothing until `held` is let go (telling `entered` each time it stalls).
struct StallLater {
    out: mcp_stdio::MemoryWriter,
    stall: Arc<std::sync::atomic::AtomicBool>,
    held: Arc<std::sync::Mutex<()>>,
    entered: crossbeam_channel::Sender<()>,
}

impl std::io::Write for StallLater {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.stall.load(std::sync::atomic::Ordering::Acquire) {
            let _ = self.entered.send(());
            let _held = self.held.lock().unwrap();
        }
        self.out.write(bytes)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Claim (review-44sd): a legacy request whose handler asks the client
/// (`roots/list`) while the client stopped reading does not hold `serve`
/// at the end of input: it returns within the grace period and twice the
/// write timeout (100 ms + 2 s).
#[test]
fn an_ask_to_a_legacy_client_that_does_not_read_does_not_hold_serve() {
    let server = crate::everything::build_with(|b| {
        b.shutdown_grace(Duration::from_millis(100))
            .write_timeout(Duration::from_secs(1))
    });
    let (to_server, server_in) = mcp_stdio::memory_pipe();
    let (server_out, from_server) = mcp_stdio::memory_pipe();
    let stall = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let held = Arc::new(std::sync::Mutex::new(()));
    let (entered, stalled) = crossbeam_channel::unbounded();
    let output = StallLater {
        out: server_out,
        stall: Arc::clone(&stall),
        held: Arc::clone(&held),
        entered,
    };
    let (served_tx, served) = crossbeam_channel::bounded(1);
    {
        let server = server.clone();
        std::thread::spawn(move || {
            let _ = served_tx.send(server.serve(Transport::new(server_in, output)));
        });
    }
    let mut peer = Peer::over(
        Transport::new(from_server, to_server),
        None,
        crate::support::server_meta(&server),
    );
    open_session_with(&mut peer, "2025-11-25", all_input_capabilities());
    let not_reading = held.lock().unwrap();
    stall.store(true, std::sync::atomic::Ordering::Release);
    peer.send(&legacy_call(
        1,
        "test_input_required_result_list_roots",
        json!({}),
    ));
    stalled
        .recv_timeout(WAIT)
        .expect("the ask's write began and stalled");
    let ended = std::time::Instant::now();
    peer.close_input();
    let served = served.recv_timeout(WAIT);
    let took = ended.elapsed();
    drop(not_reading);
    let served = served.unwrap_or_else(|_| panic!("serve still waits after {took:?}"));
    assert!(
        took < Duration::from_secs(6),
        "serve took {took:?}: {served:?}"
    );
}

// --- 11. The front end under a hostile review (review-legacy10) ----------

/// Claim (review-legacy10): a capability a client sets to `false` (not the
/// object the schema has, but a plain "no") is not declared: the server
/// does not ask that client (`RequestMeta::has_client_capability` took any
/// value but `null` for a declaration), a sub-capability set so neither.
#[test]
fn a_capability_set_to_false_is_not_declared() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": false }));
    assert_eq!(
        peer.ask(&legacy_call(1, "ask", json!({}))),
        undeclared_result(1, "elicitation", "2025-11-25"),
        "the server asked a client that said elicitation: false"
    );
    peer.finish_quietly();
}

/// Claim (review-legacy10): 2025-11-25 basic/lifecycle, "The server SHOULD
/// NOT send requests other than pings and logging before receiving the
/// initialized notification." A call that needs input, sent after the
/// `initialize` answer but before `notifications/initialized`, is answered
/// without an ask going out first.
#[test]
fn no_ask_goes_out_before_the_client_is_initialized() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let init = initialize_with("init", "2025-11-25", json!({ "elicitation": {} }));
    assert_eq!(peer.ask(&init), initialize_result("init", "2025-11-25"));
    let reply = peer.ask(&legacy_call(1, "ask", json!({})));
    assert!(
        reply.get("method").is_none() && reply["id"] == 1,
        "the server asked before notifications/initialized: {reply}"
    );
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("notifications/initialized"), "{reply}");
    // Once initialized, the same call is asked for.
    peer.send(&initialized());
    peer.send(&legacy_call(2, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(2, "Nice to meet you, Ada!"));
    peer.finish_quietly();
}

/// An answer of the wrong shape (a sampling result that is no message)
/// fails the request with `-32602` saying so, once; a second answer to the
/// same ask is only traced; the session goes on.
#[test]
fn a_wrong_shaped_or_repeated_answer_ends_the_request_once() {
    let (server, notes) = traced_everything();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", all_input_capabilities());
    peer.send(&legacy_call(
        1,
        "test_input_required_result_sampling",
        json!({}),
    ));
    let ask = recv_ask(&peer, "sampling/createMessage", capital_question());
    answer(&mut peer, &ask, json!({ "role": "assistant" }));
    answer(&mut peer, &ask, paris());
    let reply = peer.recv();
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the client's answer does not fit what it was asked"),
        "{reply}"
    );
    ping_barrier(&mut peer, 2);
    assert_eq!(ignored_responses(&notes), [ignored(&ask)]);
    peer.send(&legacy_call(
        3,
        "test_input_required_result_sampling",
        json!({}),
    ));
    let ask = recv_ask(&peer, "sampling/createMessage", capital_question());
    answer(&mut peer, &ask, paris());
    assert_eq!(peer.recv(), legacy_text(3, "The model says: Paris"));
    peer.finish_quietly();
}

/// Claim (review-tasks10): a 2025-11-25 session whose `initialize` names
/// the Tasks extension among its capabilities (an era without extensions,
/// to which `InitializeResult` offers none) gets a task handle for a tool
/// that may run as a task: the session's capabilities are each request's
/// (`LegacySession::meta`), so `has_extension` holds, a task is created,
/// and the legacy client reads a `tools/call` result without `content`
/// (`taskId`, `status`, ...), a shape its era does not have.
#[test]
fn a_legacy_session_that_names_the_tasks_extension_gets_no_task_handle() {
    let mut peer = Peer::start(&crate::everything::build());
    let mut capabilities = all_input_capabilities();
    capabilities["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    open_session_with(&mut peer, "2025-11-25", capabilities);
    let resp = peer.ask(&legacy_call(
        2,
        "slow_compute",
        json!({ "seconds": 0, "label": "old" }),
    ));
    assert_eq!(resp, legacy_text(2, "slow_compute old: done after 0 s"));
    ping_barrier(&mut peer, 3);
    peer.finish_quietly();
}

/// The message a request gets when the client answered its `name` ask with
/// an `error` that does not read as an error object (first 40 characters
/// of it quoted).
fn malformed_answer(id: i64, raw: &str) -> Value {
    let short: String = raw.chars().take(40).collect();
    error(
        id,
        -32603,
        &format!(
            "the client answered name with an error: internal error: a malformed error: {short}"
        ),
    )
}

// Review of the size commit 5cd7adc (a response's `error` kept raw, read
// only by the ask it answers): a careless client's malformed `error` (not
// an object, a code that is no i32, no message, duplicate keys) fails the
// request with the same -32603 as before; extra fields are ignored and
// `data` (however big) is kept; with both `result` and `error` the error
// wins; `"error": null` is no error. The session goes on after each.
#[test]
fn a_malformed_error_answer_fails_the_request_as_before_and_the_session_goes_on() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    let big = "x".repeat(200_000);
    let malformed = [
        r#""oops""#,
        "1",
        "[]",
        "{}",
        r#"{"code":"1","message":"m"}"#,
        r#"{"code":1.5,"message":"m"}"#,
        r#"{"code":2147483648,"message":"m"}"#,
        r#"{"code":-2147483649,"message":"m"}"#,
        r#"{"code":1}"#,
        r#"{"message":"m"}"#,
        r#"{"code":1,"message":7}"#,
        r#"{"code":1,"code":2,"message":"m"}"#,
        r#"{"code":null,"message":"m"}"#,
    ];
    let mut id = 0;
    for raw in malformed {
        id += 1;
        peer.send(&legacy_call(id, "ask", json!({})));
        let ask = recv_ask(&peer, "elicitation/create", name_form(true));
        peer.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{ask},"error":{raw}}}"#).as_bytes());
        assert_eq!(peer.recv(), malformed_answer(id, raw), "{raw}");
    }
    let read = [
        (
            r#"{"code":-2147483648,"message":"m","extra":true}"#.to_owned(),
            json!({ "code": -2147483648i64, "message": "the client answered name with an error: m" }),
        ),
        (
            format!(r#"{{"code":2147483647,"message":"m","data":{{"big":"{big}"}}}}"#),
            json!({ "code": 2147483647, "message": "the client answered name with an error: m", "data": { "big": big } }),
        ),
        (
            r#"{"code":5,"message":"m","data":null}"#.to_owned(),
            json!({ "code": 5, "message": "the client answered name with an error: m" }),
        ),
    ];
    for (raw, expected) in read {
        id += 1;
        peer.send(&legacy_call(id, "ask", json!({})));
        let ask = recv_ask(&peer, "elicitation/create", name_form(true));
        peer.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{ask},"error":{raw}}}"#).as_bytes());
        assert_eq!(
            peer.recv(),
            json!({ "jsonrpc": "2.0", "id": id, "error": expected }),
            "{}",
            &raw[..raw.len().min(80)]
        );
    }
    // Both: the error wins, even a malformed one.
    for (raw, expected) in [
        (
            r#"{"code":-1,"message":"no"}"#,
            error(id + 1, -1, "the client answered name with an error: no"),
        ),
        (r#""bad""#, malformed_answer(id + 2, r#""bad""#)),
    ] {
        id += 1;
        peer.send(&legacy_call(id, "ask", json!({})));
        let ask = recv_ask(&peer, "elicitation/create", name_form(true));
        peer.send_raw(
            format!(r#"{{"jsonrpc":"2.0","id":{ask},"result":{{"action":"accept","content":{{"name":"Ada"}}}},"error":{raw}}}"#)
                .as_bytes(),
        );
        assert_eq!(peer.recv(), expected);
    }
    // `"error": null` is present: an error (a malformed one), even beside
    // a result.
    id += 1;
    peer.send(&legacy_call(id, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    peer.send_raw(
        format!(r#"{{"jsonrpc":"2.0","id":{ask},"error":null,"result":{{"action":"accept","content":{{"name":"Ada"}}}}}}"#)
            .as_bytes(),
    );
    assert_eq!(peer.recv(), malformed_answer(id, "null"));
    // The session goes on.
    id += 1;
    peer.send(&legacy_call(id, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(id, "Nice to meet you, Ada!"));
    peer.finish_quietly();
}

// Neither `result` nor `error`: not a response, and not a request either
// (-32600 to the id it names); the ask stays open. A lone `"error": null`
// is a (malformed) error: it ends the request.
#[test]
fn a_response_with_neither_result_nor_error_answers_no_ask() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    open_session_with(&mut peer, "2025-11-25", json!({ "elicitation": {} }));
    peer.send(&legacy_call(1, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    peer.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{ask}}}"#).as_bytes());
    let reply = peer.recv();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(reply["id"], ask, "{reply}");
    peer.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{ask},"error":null}}"#).as_bytes());
    assert_eq!(peer.recv(), malformed_answer(1, "null"));
    peer.send(&legacy_call(2, "ask", json!({})));
    let ask = recv_ask(&peer, "elicitation/create", name_form(true));
    answer(&mut peer, &ask, accept("name", "Ada"));
    assert_eq!(peer.recv(), legacy_text(2, "Nice to meet you, Ada!"));
    peer.finish_quietly();
}
