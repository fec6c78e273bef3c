//! `server/discover`, capability derivation, and the per-request `_meta`
//! rules every method shares (spec 2026-07-28 basic/index, server/discover).

use mcp_stdio::Server;
use serde_json::{Value, json};

use crate::support::{Peer, call, code, error, meta, request};

const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// A request whose params carry exactly `meta` as `_meta` (or no `_meta` at
/// all when `meta` is `None`).
fn raw_request(
    id: impl Into<Value>,
    method: &str,
    mut params: Value,
    meta: Option<Value>,
) -> Value {
    let map = params.as_object_mut().expect("params must be an object");
    if let Some(meta) = meta {
        map.insert("_meta".into(), meta);
    }
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// The standard `_meta` with one key replaced or added.
fn meta_with(key: &str, value: Value) -> Value {
    let mut m = meta();
    m.as_object_mut().unwrap().insert(key.into(), value);
    m
}

/// The standard `_meta` with one key removed.
fn meta_without(key: &str) -> Value {
    let mut m = meta();
    m.as_object_mut().unwrap().remove(key);
    m
}

/// An error response with `data`.
fn error_data(id: impl Into<Value>, code: i64, message: &str, data: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "error": { "code": code, "message": message, "data": data } })
}

fn unsupported(id: impl Into<Value>, requested: &str) -> Value {
    error_data(
        id,
        -32022,
        "Unsupported protocol version",
        json!({ "supported": ["2026-07-28"], "requested": requested }),
    )
}

fn missing_meta_key(id: impl Into<Value>, key: &str) -> Value {
    error(
        id,
        -32602,
        &format!("invalid params: missing _meta[\"{key}\"]"),
    )
}

fn minimal() -> Server {
    Server::builder("minimal", "1.0.0").build()
}

#[test]
fn discover_on_the_everything_server() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request("discover-1", "server/discover", json!({})));
    let expected = peer.result(
        "discover-1",
        json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {
                "tools": { "listChanged": true },
                "prompts": { "listChanged": true },
                "resources": { "subscribe": true, "listChanged": true },
                "completions": {},
                "logging": {},
                "extensions": { "io.modelcontextprotocol/tasks": {} }
            },
            "instructions": "Fixture server of mcp-stdio: every tool, resource and prompt is a test fixture.",
            "ttlMs": 0,
            "cacheScope": "private"
        }),
    );
    assert_eq!(resp, expected);
    assert_eq!(
        resp["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({ "name": "mcp-stdio-everything", "version": env!("CARGO_PKG_VERSION") })
    );
    // What the wire says is what the API says.
    assert_eq!(
        resp["result"]["capabilities"],
        serde_json::to_value(server.capabilities()).unwrap()
    );
    peer.finish_quietly();
}

#[test]
fn discover_exact_line_bytes() {
    let server = minimal();
    let mut peer = Peer::start(&server);
    peer.send(&request(1, "server/discover", json!({})));
    assert_eq!(
        peer.recv_line(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"logging":{}},"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"minimal","version":"1.0.0"}}}}"#
    );
    peer.finish_quietly();
}

#[test]
fn minimal_server_advertises_and_serves_no_features() {
    let server = minimal();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(1, "server/discover", json!({})));
    assert_eq!(
        resp,
        peer.result(
            1,
            json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": { "logging": {} },
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    let probes = [
        ("tools/list", json!({})),
        ("tools/call", json!({ "name": "echo", "arguments": {} })),
        ("prompts/list", json!({})),
        ("prompts/get", json!({ "name": "greet" })),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({ "uri": "mem://counter" })),
        (
            "completion/complete",
            json!({
                "ref": { "type": "ref/prompt", "name": "greet" },
                "argument": { "name": "name", "value": "A" }
            }),
        ),
    ];
    for (n, (method, params)) in probes.into_iter().enumerate() {
        let id = n as i64 + 2;
        assert_eq!(
            peer.ask(&request(id, method, params)),
            error(id, -32601, &format!("method not found: {method}")),
            "{method}"
        );
    }
    peer.finish_quietly();
}

#[test]
fn enable_switches_advertise_empty_features() {
    let server = Server::builder("enabled", "2.0.0")
        .enable_tools()
        .enable_prompts()
        .enable_resources()
        .build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(1, "server/discover", json!({})));
    assert_eq!(
        resp,
        peer.result(
            1,
            json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {
                    "tools": { "listChanged": true },
                    "prompts": { "listChanged": true },
                    "resources": { "subscribe": true, "listChanged": true },
                    "logging": {}
                },
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    assert_eq!(
        peer.ask(&request(2, "tools/list", json!({}))),
        peer.result(
            2,
            json!({ "tools": [], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    assert_eq!(
        peer.ask(&request(3, "prompts/list", json!({}))),
        peer.result(
            3,
            json!({ "prompts": [], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    assert_eq!(
        peer.ask(&request(4, "resources/list", json!({}))),
        peer.result(
            4,
            json!({ "resources": [], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    // Completion was not registered: not advertised, not served.
    assert_eq!(
        peer.ask(&request(
            5,
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "x" }, "argument": { "name": "a", "value": "" } })
        )),
        error(5, -32601, "method not found: completion/complete")
    );
    peer.finish_quietly();
}

#[test]
fn missing_meta_is_invalid_params_naming_protocol_version() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // No params at all.
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover" })),
        missing_meta_key(1, PROTOCOL_VERSION)
    );
    // Params without `_meta`.
    assert_eq!(
        peer.ask(&raw_request(2, "tools/list", json!({}), None)),
        missing_meta_key(2, PROTOCOL_VERSION)
    );
    // `_meta: null` counts as missing.
    assert_eq!(
        peer.ask(&raw_request(3, "tools/list", json!({}), Some(Value::Null))),
        missing_meta_key(3, PROTOCOL_VERSION)
    );
    // On a tool call too, before the tool runs.
    assert_eq!(
        peer.ask(&raw_request(
            "c",
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
            None
        )),
        missing_meta_key("c", PROTOCOL_VERSION)
    );
    peer.finish_quietly();
}

#[test]
fn meta_must_be_an_object() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&raw_request(
        1,
        "server/discover",
        json!({}),
        Some(json!("2026-07-28")),
    ));
    assert_eq!(
        resp,
        error(
            1,
            -32602,
            "invalid params: _meta must be an object, got \"2026-07-28\""
        )
    );
    // An array is not read by position as the reserved keys.
    let resp = peer.ask(&raw_request(
        2,
        "server/discover",
        json!({}),
        Some(json!(["2026-07-28", {}])),
    ));
    assert_eq!(
        resp,
        error(
            2,
            -32602,
            "invalid params: _meta must be an object, got [\"2026-07-28\",{}]"
        )
    );
    peer.finish_quietly();
}

#[test]
fn missing_protocol_version() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let m = meta_without(PROTOCOL_VERSION);
    assert_eq!(
        peer.ask(&raw_request(
            1,
            "server/discover",
            json!({}),
            Some(m.clone())
        )),
        missing_meta_key(1, PROTOCOL_VERSION)
    );
    assert_eq!(
        peer.ask(&raw_request(2, "tools/list", json!({}), Some(m))),
        missing_meta_key(2, PROTOCOL_VERSION)
    );
    peer.finish_quietly();
}

#[test]
fn missing_client_capabilities_names_the_key() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let m = meta_without(CLIENT_CAPABILITIES);
    let resp = peer.ask(&raw_request(
        1,
        "server/discover",
        json!({}),
        Some(m.clone()),
    ));
    assert_eq!(resp, missing_meta_key(1, CLIENT_CAPABILITIES));
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("io.modelcontextprotocol/clientCapabilities")
    );
    assert_eq!(
        peer.ask(&raw_request(
            2,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "x" } }),
            Some(m)
        )),
        missing_meta_key(2, CLIENT_CAPABILITIES)
    );
    // Only `clientInfo` left: still missing both required keys; the first
    // one checked is named.
    let only_info =
        json!({ "io.modelcontextprotocol/clientInfo": { "name": "c", "version": "1" } });
    assert_eq!(
        peer.ask(&raw_request(
            3,
            "server/discover",
            json!({}),
            Some(only_info)
        )),
        missing_meta_key(3, PROTOCOL_VERSION)
    );
    peer.finish_quietly();
}

#[test]
fn client_capabilities_must_be_an_object() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let message = format!("invalid params: _meta[\"{CLIENT_CAPABILITIES}\"] must be an object");
    for (n, bad) in [
        json!([]),
        json!("sampling"),
        json!(1),
        json!(null),
        json!(true),
    ]
    .into_iter()
    .enumerate()
    {
        let id = n as i64 + 1;
        assert_eq!(
            peer.ask(&raw_request(
                id,
                "server/discover",
                json!({}),
                Some(meta_with(CLIENT_CAPABILITIES, bad.clone()))
            )),
            error(id, -32602, &message),
            "clientCapabilities = {bad}"
        );
    }
    peer.finish_quietly();
}

#[test]
fn protocol_version_must_be_a_string() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let message = format!("invalid params: _meta[\"{PROTOCOL_VERSION}\"] must be a string");
    for (n, bad) in [
        json!(20260728),
        json!(null),
        json!(["2026-07-28"]),
        json!({}),
    ]
    .into_iter()
    .enumerate()
    {
        let id = n as i64 + 1;
        assert_eq!(
            peer.ask(&raw_request(
                id,
                "tools/list",
                json!({}),
                Some(meta_with(PROTOCOL_VERSION, bad.clone()))
            )),
            error(id, -32602, &message),
            "protocolVersion = {bad}"
        );
    }
    peer.finish_quietly();
}

#[test]
fn unsupported_version_on_every_request() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let v999 = meta_with(PROTOCOL_VERSION, json!("v999.0.0"));
    assert_eq!(
        peer.ask(&raw_request(
            1,
            "server/discover",
            json!({}),
            Some(v999.clone())
        )),
        unsupported(1, "v999.0.0")
    );
    assert_eq!(
        peer.ask(&raw_request(2, "tools/list", json!({}), Some(v999.clone()))),
        unsupported(2, "v999.0.0")
    );
    // A valid request in between is served normally.
    let resp = peer.ask(&call(3, "echo", json!({ "text": "still here" })));
    assert_eq!(
        resp,
        peer.result(
            3,
            json!({ "content": [{ "type": "text", "text": "still here" }] })
        )
    );
    // And the next unsupported request is rejected again: nothing is
    // remembered from earlier requests.
    assert_eq!(
        peer.ask(&raw_request(
            "4",
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "x" } }),
            Some(v999.clone())
        )),
        unsupported("4", "v999.0.0")
    );
    assert_eq!(
        peer.ask(&raw_request(
            5,
            "resources/read",
            json!({ "uri": "test://static-text" }),
            Some(v999.clone())
        )),
        unsupported(5, "v999.0.0")
    );
    assert_eq!(
        peer.ask(&raw_request(
            6,
            "prompts/get",
            json!({ "name": "test_simple_prompt" }),
            Some(v999)
        )),
        unsupported(6, "v999.0.0")
    );
    // Older revisions are not supported either; the requested string is
    // echoed verbatim.
    assert_eq!(
        peer.ask(&raw_request(
            7,
            "server/discover",
            json!({}),
            Some(meta_with(PROTOCOL_VERSION, json!("2025-11-25")))
        )),
        unsupported(7, "2025-11-25")
    );
    // Every `supported` entry is also in discover's `supportedVersions`.
    let discover = peer.ask(&request(8, "server/discover", json!({})));
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    peer.finish_quietly();
}

#[test]
fn log_level_is_validated() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let key = "io.modelcontextprotocol/logLevel";
    assert_eq!(
        peer.ask(&raw_request(
            1,
            "server/discover",
            json!({}),
            Some(meta_with(key, json!("verbose")))
        )),
        error(
            1,
            -32602,
            "invalid params: _meta[\"io.modelcontextprotocol/logLevel\"] is not a log level: \"verbose\""
        )
    );
    assert_eq!(
        peer.ask(&raw_request(
            2,
            "server/discover",
            json!({}),
            Some(meta_with(key, json!(3)))
        )),
        error(
            2,
            -32602,
            "invalid params: _meta[\"io.modelcontextprotocol/logLevel\"] is not a log level: 3"
        )
    );
    let expected = peer.ask(&request(0, "server/discover", json!({})))["result"].clone();
    for (n, level) in [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ]
    .into_iter()
    .enumerate()
    {
        let id = n as i64 + 10;
        let resp = peer.ask(&raw_request(
            id,
            "server/discover",
            json!({}),
            Some(meta_with(key, json!(level))),
        ));
        assert_eq!(
            resp,
            json!({ "jsonrpc": "2.0", "id": id, "result": expected.clone() }),
            "{level}"
        );
    }
    // A valid level on a tool call: the tool runs (it logs nothing, so the
    // reply is the next line).
    assert_eq!(
        peer.ask(&raw_request(
            20,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
            Some(meta_with(key, json!("emergency")))
        )),
        peer.result(20, json!({ "content": [{ "type": "text", "text": "hi" }] }))
    );
    peer.finish_quietly();
}

#[test]
fn client_info_is_optional() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // support::meta() has no clientInfo.
    assert!(meta().get("io.modelcontextprotocol/clientInfo").is_none());
    let without = peer.ask(&request(
        1,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "a" } }),
    ));
    assert_eq!(
        without,
        peer.result(1, json!({ "content": [{ "type": "text", "text": "a" }] }))
    );
    let with_info = meta_with(
        "io.modelcontextprotocol/clientInfo",
        json!({ "name": "ExampleClient", "version": "1.0.0" }),
    );
    assert_eq!(
        peer.ask(&raw_request(
            2,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "a" } }),
            Some(with_info)
        )),
        peer.result(2, json!({ "content": [{ "type": "text", "text": "a" }] }))
    );
    peer.finish_quietly();
}

#[test]
fn progress_token_must_be_string_or_integer() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let message = "invalid params: _meta[\"progressToken\"] must be a string or an integer";
    for (n, bad) in [
        json!({ "t": 1 }),
        json!([1]),
        json!(1.5),
        json!(true),
        json!(null),
    ]
    .into_iter()
    .enumerate()
    {
        let id = n as i64 + 1;
        assert_eq!(
            peer.ask(&raw_request(
                id,
                "tools/call",
                json!({ "name": "echo", "arguments": { "text": "x" } }),
                Some(meta_with("progressToken", bad.clone()))
            )),
            error(id, -32602, message),
            "progressToken = {bad}"
        );
    }
    // A string or an integer token is accepted (echo reports no progress).
    for (id, token) in [(10, json!("tok")), (11, json!(7))] {
        assert_eq!(
            peer.ask(&raw_request(
                id,
                "tools/call",
                json!({ "name": "echo", "arguments": { "text": "x" } }),
                Some(meta_with("progressToken", token))
            )),
            peer.result(id, json!({ "content": [{ "type": "text", "text": "x" }] }))
        );
    }
    peer.finish_quietly();
}

#[test]
fn removed_and_unknown_methods_are_method_not_found() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let methods = [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
    ];
    for (n, method) in methods.into_iter().enumerate() {
        let int_id = n as i64 + 1;
        let str_id = format!("s-{method}");
        let by_int = peer.ask(&request(int_id, method, json!({})));
        let by_str = peer.ask(&request(str_id.as_str(), method, json!({})));
        if method == "initialize" {
            // Without the `legacy` feature every server is modern-only.
            let expected = if cfg!(feature = "legacy") {
                dual_era_initialize_error
            } else {
                initialize_error
            };
            assert_eq!(by_int, expected(int_id.into()));
            assert_eq!(by_str, expected(str_id.as_str().into()));
            continue;
        }
        assert_eq!(
            by_int,
            error(int_id, -32601, &format!("method not found: {method}")),
            "{method}"
        );
        assert_eq!(
            by_str,
            error(
                str_id.as_str(),
                -32601,
                &format!("method not found: {method}")
            )
        );
    }
    // Without modern `_meta`, ping is a legacy request: a dual-era server
    // answers it, a modern-only one does not know it.
    let ping = peer.ask(&json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" }));
    if cfg!(feature = "legacy") {
        assert_eq!(ping, json!({ "jsonrpc": "2.0", "id": "p", "result": {} }));
    } else {
        assert_eq!(ping, error("p", -32601, "method not found: ping"));
    }
    peer.finish_quietly();
    let modern_only = crate::everything::build_with(|b| b.modern_only());
    let mut peer = Peer::start(&modern_only);
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" })),
        error("p", -32601, "method not found: ping")
    );
    peer.finish_quietly();
}

/// `initialize` as a legacy (2025-11-25) client sends it: no `_meta`,
/// legacy params.
fn legacy_initialize(id: i64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "old", "version": "1" }
        }
    })
}

fn initialize_error(id: Value) -> Value {
    error_data(
        id,
        -32601,
        "method not found: initialize (this server speaks only MCP 2026-07-28, which has no initialize handshake)",
        json!({ "supported": ["2026-07-28"] }),
    )
}

/// What a dual-era server answers to an `initialize` that carries modern
/// `_meta`: a modern request for a removed method.
fn dual_era_initialize_error(id: Value) -> Value {
    error_data(
        id,
        -32601,
        "method not found: initialize is not part of MCP 2026-07-28 (send it without the per-request _meta to open a legacy session, versions 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)",
        json!({
            "supported": ["2026-07-28"],
            "legacy": ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
        }),
    )
}

#[test]
fn initialize_error_names_supported_versions() {
    let server = crate::everything::build_with(|b| b.modern_only());
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&legacy_initialize(0));
    // -32601 (FIXTURES: the conformance suite wants method-not-found), with
    // the request's id, not -32602 for the missing `_meta`.
    assert_eq!(resp["jsonrpc"], json!("2.0"));
    assert_eq!(resp["id"], json!(0));
    assert_eq!(code(&resp), -32601);
    // Spec 2026-07-28 basic/versioning, "Backward Compatibility": "A server
    // that supports only modern versions SHOULD name the protocol versions
    // it supports in any error it returns to an `initialize` request ...
    // this message may be the only diagnostic they can surface to users."
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2026-07-28"),
        "the error answering `initialize` should name the supported versions: {resp}"
    );
    assert_eq!(resp, initialize_error(json!(0)));
    // The same with a string id and with the modern `_meta`.
    assert_eq!(
        peer.ask(&request("i", "initialize", json!({}))),
        initialize_error(json!("i"))
    );
    // Serving goes on either way.
    assert_eq!(
        peer.ask(&request(1, "server/discover", json!({})))["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    peer.finish_quietly();
}

#[test]
fn errors_carry_the_request_id_exactly() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // "1" and 1 are different ids, and each comes back as sent.
    let a = peer.ask(&request("1", "unknown/method", json!({})));
    assert_eq!(a, error("1", -32601, "method not found: unknown/method"));
    assert!(a["id"].is_string());
    let b = peer.ask(&request(1, "unknown/method", json!({})));
    assert_eq!(b, error(1, -32601, "method not found: unknown/method"));
    assert!(b["id"].is_i64());
    peer.send(&raw_request("1", "tools/list", json!({}), None));
    assert_eq!(
        peer.recv_line(),
        r#"{"jsonrpc":"2.0","id":"1","error":{"code":-32602,"message":"invalid params: missing _meta[\"io.modelcontextprotocol/protocolVersion\"]"}}"#
    );
    peer.send(&raw_request(1, "tools/list", json!({}), None));
    assert_eq!(
        peer.recv_line(),
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid params: missing _meta[\"io.modelcontextprotocol/protocolVersion\"]"}}"#
    );
    // Other id shapes: negative, zero, large, empty string, unicode.
    for id in [
        json!(-7),
        json!(0),
        json!(i64::MAX),
        json!(""),
        json!("ид-✓"),
    ] {
        assert_eq!(
            peer.ask(&call(id.clone(), "nope", json!({}))),
            error(id.clone(), -32602, "invalid params: unknown tool: nope"),
            "id {id}"
        );
    }
    // Unsupported version and missing capability errors carry the id too.
    assert_eq!(
        peer.ask(&raw_request(
            "v",
            "server/discover",
            json!({}),
            Some(meta_with(PROTOCOL_VERSION, json!("v999.0.0")))
        )),
        unsupported("v", "v999.0.0")
    );
    peer.finish_quietly();
}

#[test]
fn undeclared_client_capability_is_32021() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // support::meta() declares `clientCapabilities: {}`.
    let resp = peer.ask(&call("cap-1", "test_missing_capability", json!({})));
    assert_eq!(
        resp,
        error_data(
            "cap-1",
            -32021,
            "missing required client capability: sampling",
            json!({ "requiredCapabilities": { "sampling": {} } })
        )
    );
    assert!(resp["error"]["data"]["requiredCapabilities"]["sampling"].is_object());
    // Other capabilities do not stand in for sampling.
    let other = meta_with(
        CLIENT_CAPABILITIES,
        json!({ "elicitation": {}, "roots": {} }),
    );
    assert_eq!(
        peer.ask(&raw_request(
            2,
            "tools/call",
            json!({ "name": "test_missing_capability" }),
            Some(other)
        )),
        error_data(
            2,
            -32021,
            "missing required client capability: sampling",
            json!({ "requiredCapabilities": { "sampling": {} } })
        )
    );
    // Declared: the tool runs.
    let declared = meta_with(CLIENT_CAPABILITIES, json!({ "sampling": {} }));
    assert_eq!(
        peer.ask(&raw_request(
            3,
            "tools/call",
            json!({ "name": "test_missing_capability", "arguments": {} }),
            Some(declared)
        )),
        peer.result(
            3,
            json!({ "content": [{ "type": "text", "text": "The request declared sampling." }] })
        )
    );
    // The next request without it is rejected again (nothing carried over).
    assert_eq!(
        code(&peer.ask(&call(4, "test_missing_capability", json!({})))),
        -32021
    );
    peer.finish_quietly();
}

#[test]
fn on_request_results_are_stamped() {
    let server = Server::builder("custom", "0.0.1")
        .on_request("example/echo", |ctx, params| {
            Ok(json!({
                "params": params,
                "protocolVersion": ctx.meta().protocol_version(),
                "id": ctx.id().to_value(),
            }))
        })
        .on_request("example/own-type", |_ctx, _params| {
            Ok(json!({ "resultType": "complete", "_meta": { "com.example/x": 1 } }))
        })
        .on_request("example/fail", |_ctx, _params| {
            Err(mcp_stdio::ErrorObject::new(-1, "application failure")
                .with_data(json!({ "why": "test" })))
        })
        .build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(
        1,
        "example/echo",
        json!({ "x": [1, 2], "y": "z" }),
    ));
    assert_eq!(
        resp,
        peer.result(
            1,
            json!({
                // `_meta` is taken out of the params the handler sees.
                "params": { "x": [1, 2], "y": "z" },
                "protocolVersion": "2026-07-28",
                "id": 1
            })
        )
    );
    // A result's own `_meta` keys are kept and serverInfo is added.
    assert_eq!(
        peer.ask(&request("o", "example/own-type", json!({}))),
        json!({
            "jsonrpc": "2.0",
            "id": "o",
            "result": {
                "resultType": "complete",
                "_meta": {
                    "com.example/x": 1,
                    "io.modelcontextprotocol/serverInfo": { "name": "custom", "version": "0.0.1" }
                }
            }
        })
    );
    assert_eq!(
        peer.ask(&request(2, "example/fail", json!({}))),
        error_data(2, -1, "application failure", json!({ "why": "test" }))
    );
    // Custom methods follow the same `_meta` rules.
    assert_eq!(
        peer.ask(&raw_request(3, "example/echo", json!({}), None)),
        missing_meta_key(3, PROTOCOL_VERSION)
    );
    assert_eq!(
        peer.ask(&request(4, "example/missing", json!({}))),
        error(4, -32601, "method not found: example/missing")
    );
    // A custom method does not advertise anything.
    assert_eq!(
        peer.ask(&request(5, "server/discover", json!({})))["result"]["capabilities"],
        json!({ "logging": {} })
    );
    peer.finish_quietly();
}

#[test]
fn implementation_is_sent_as_server_info() {
    let mut info = mcp_stdio::types::Implementation::new("branded", "3.1.4");
    info.title = Some("Branded Server".into());
    let server = Server::builder("ignored", "0").implementation(info).build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(1, "server/discover", json!({})));
    assert_eq!(
        resp["result"]["_meta"],
        json!({ "io.modelcontextprotocol/serverInfo": { "name": "branded", "version": "3.1.4", "title": "Branded Server" } })
    );
    assert_eq!(
        resp,
        peer.result(
            1,
            json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": { "logging": {} },
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    peer.finish_quietly();
}

/// Without the `legacy` feature a server answers `initialize` (without
/// modern `_meta`: a legacy client's) as `modern_only()` does.
#[cfg(not(feature = "legacy"))]
#[test]
fn without_the_legacy_feature_initialize_names_the_supported_versions() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(peer.ask(&legacy_initialize(7)), initialize_error(json!(7)));
    peer.finish_quietly();
}

/// Claim: a `_meta` object that names a reserved key twice is told it
/// "must be an object", which it is (`meta.rs: validate_meta`, the
/// branch for a `_meta` that does not read). On main: "invalid params:
/// _meta must be an object: duplicate field `io.modelcontextprotocol/protocolVersion` at line 1 column 97".
#[test]
fn a_meta_naming_a_reserved_key_twice_is_told_so() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let line = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    peer.send_raw(format!("{line}\n").as_bytes());
    let resp = peer.recv();
    let message = resp["error"]["message"].as_str().unwrap();
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    assert!(
        message.starts_with(
            "invalid params: _meta names io.modelcontextprotocol/protocolVersion more than once"
        ),
        "{message}"
    );
    peer.finish_quietly();
}
