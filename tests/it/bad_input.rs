//! Every class of bad input gets its JSON-RPC error (or, for notifications
//! and responses, nothing), and the server goes on serving: each case is
//! followed by a valid request that must be answered normally.

use crossbeam_channel::Receiver;
use mcp_stdio::Server;
use mcp_stdio::types::{CallToolResult, Tool};
use serde_json::{Value, json};

use crate::support::{Peer, call, error, request};

/// Sends a valid `echo` call and asserts that the very next line the server
/// writes is its normal reply: the bad input before it left nothing behind
/// and broke nothing.
pub(crate) fn assert_still_serving(peer: &mut Peer, id: i64) {
    let text = format!("alive {id}");
    let resp = peer.ask(&call(id, "echo", json!({ "text": text })));
    assert_eq!(
        resp,
        peer.result(id, json!({ "content": [{ "type": "text", "text": text }] }))
    );
}

/// Sends raw bytes and returns the single reply line, parsed.
pub(crate) fn ask_raw(peer: &mut Peer, bytes: &[u8]) -> Value {
    peer.send_raw(bytes);
    peer.recv()
}

fn parse_error_message(text: &str) -> String {
    let e = serde_json::from_str::<serde::de::IgnoredAny>(text).unwrap_err();
    format!("parse error: {e}")
}

#[test]
fn invalid_json_is_parse_error_with_null_id() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let cases: &[&str] = &[
        "{not json",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"",
        "not json at all",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"} trailing",
        "\"unterminated",
        "[1,2",
    ];
    for (n, text) in cases.iter().enumerate() {
        peer.send_raw(text.as_bytes());
        let line = peer.recv_line();
        let resp: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(resp["error"]["code"], json!(-32700), "{text}: {line}");
        assert_eq!(resp["id"], Value::Null, "{text}");
        assert!(
            line.contains(r#""id":null"#),
            "the id is written as null: {line}"
        );
        assert_still_serving(&mut peer, n as i64 + 100);
    }
    // Exact wire form of one of them.
    peer.send_raw(b"{not json");
    assert_eq!(
        peer.recv_line(),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: key must be a string at line 1 column 2"}}"#
    );
    assert_still_serving(&mut peer, 200);
    let resp = ask_raw(&mut peer, b"not json at all");
    assert_eq!(
        resp,
        error(Value::Null, -32700, &parse_error_message("not json at all"))
    );
    assert_still_serving(&mut peer, 201);
    peer.finish_quietly();
}

#[test]
fn invalid_utf8_is_parse_error() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let cases: &[&[u8]] = &[
        b"\xff\xfe",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xc3\x28\"}}}",
        b"\xc0\xaf",
    ];
    for (n, bytes) in cases.iter().enumerate() {
        let utf8 = std::str::from_utf8(bytes).unwrap_err();
        let resp = ask_raw(&mut peer, bytes);
        assert_eq!(
            resp,
            error(
                Value::Null,
                -32700,
                &format!("parse error: invalid UTF-8: {utf8}")
            ),
            "case {n}"
        );
        assert_still_serving(&mut peer, n as i64 + 1);
    }
    peer.finish_quietly();
}

#[test]
fn batches_are_invalid_requests() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let batch = json!([
        request(1, "server/discover", json!({})),
        request(2, "tools/list", json!({}))
    ]);
    // One error for the whole batch, id null; none of its requests runs.
    assert_eq!(
        peer.ask(&batch),
        error(
            Value::Null,
            -32600,
            "invalid request: batches are not supported: send one message per line"
        )
    );
    assert_still_serving(&mut peer, 10);
    assert_eq!(
        ask_raw(&mut peer, b"[]"),
        error(
            Value::Null,
            -32600,
            "invalid request: batches are not supported: send one message per line"
        )
    );
    assert_still_serving(&mut peer, 11);
    peer.finish_quietly();
}

#[test]
fn scalars_are_invalid_requests() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    for (n, text) in ["42", "\"a string\"", "null", "true", "-1.5e3"]
        .iter()
        .enumerate()
    {
        assert_eq!(
            ask_raw(&mut peer, text.as_bytes()),
            error(
                Value::Null,
                -32600,
                "invalid request: a message must be a JSON object"
            ),
            "{text}"
        );
        assert_still_serving(&mut peer, n as i64 + 1);
    }
    peer.finish_quietly();
}

#[test]
fn jsonrpc_member_is_required_and_must_be_2_0() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let mut missing = request(1, "server/discover", json!({}));
    missing.as_object_mut().unwrap().remove("jsonrpc");
    assert_eq!(
        peer.ask(&missing),
        error(1, -32600, "invalid request: missing \"jsonrpc\": \"2.0\"")
    );
    assert_still_serving(&mut peer, 100);

    let mut old = request("a", "server/discover", json!({}));
    old["jsonrpc"] = json!("1.0");
    assert_eq!(
        peer.ask(&old),
        error(
            "a",
            -32600,
            "invalid request: jsonrpc must be \"2.0\", got \"1.0\""
        )
    );
    assert_still_serving(&mut peer, 101);

    let mut number = request(2, "server/discover", json!({}));
    number["jsonrpc"] = json!(2.0);
    assert_eq!(
        peer.ask(&number),
        error(
            2,
            -32600,
            "invalid request: jsonrpc must be \"2.0\", got 2.0"
        )
    );
    assert_still_serving(&mut peer, 102);

    let mut null = request(3, "server/discover", json!({}));
    null["jsonrpc"] = Value::Null;
    assert_eq!(
        peer.ask(&null),
        error(
            3,
            -32600,
            "invalid request: jsonrpc must be \"2.0\", got null"
        )
    );
    assert_still_serving(&mut peer, 103);
    peer.finish_quietly();
}

#[test]
fn method_is_required_and_must_be_a_string() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0", "id": 1, "params": {} })),
        error(1, -32600, "invalid request: missing method")
    );
    assert_still_serving(&mut peer, 100);
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0", "id": "m", "method": 5 })),
        error(
            "m",
            -32600,
            "invalid request: method must be a string, got 5"
        )
    );
    assert_still_serving(&mut peer, 101);
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0", "id": 2, "method": null })),
        error(
            2,
            -32600,
            "invalid request: method must be a string, got null"
        )
    );
    assert_still_serving(&mut peer, 102);
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0", "id": 3, "method": ["tools/list"] })),
        error(
            3,
            -32600,
            "invalid request: method must be a string, got [\"tools/list\"]"
        )
    );
    assert_still_serving(&mut peer, 103);
    // Neither method nor id nor result: still answered (id null).
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0" })),
        error(Value::Null, -32600, "invalid request: missing method")
    );
    assert_still_serving(&mut peer, 104);
    peer.finish_quietly();
}

#[test]
fn unusable_ids_are_invalid_requests_with_null_id() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let cases = [
        (json!(null), "null"),
        (json!({ "n": 1 }), "{\"n\":1}"),
        (json!(1.5), "1.5"),
        (json!([1]), "[1]"),
        (json!(true), "true"),
    ];
    for (n, (id, shown)) in cases.into_iter().enumerate() {
        let mut msg = request(0, "server/discover", json!({}));
        msg["id"] = id;
        assert_eq!(
            peer.ask(&msg),
            error(
                Value::Null,
                -32600,
                &format!("invalid request: id must be a string or an integer, got {shown}")
            )
        );
        assert_still_serving(&mut peer, n as i64 + 1);
    }
    // (An integer id beyond 64 bits is usable: see json_text.rs.)
    peer.finish_quietly();
}

#[test]
fn params_must_be_an_object() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let cases = [
        (json!([1, 2]), "[1,2]"),
        (json!("params"), "\"params\""),
        (json!(null), "null"),
        (json!(7), "7"),
    ];
    for (n, (params, shown)) in cases.into_iter().enumerate() {
        let id = n as i64 + 1;
        let msg = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params });
        assert_eq!(
            peer.ask(&msg),
            error(
                id,
                -32600,
                &format!("invalid request: params must be an object, got {shown}")
            )
        );
        assert_still_serving(&mut peer, id + 100);
    }
    // A string id is echoed too.
    assert_eq!(
        peer.ask(
            &json!({ "jsonrpc": "2.0", "id": "x", "method": "server/discover", "params": [] })
        ),
        error(
            "x",
            -32600,
            "invalid request: params must be an object, got []"
        )
    );
    assert_still_serving(&mut peer, 200);
    peer.finish_quietly();
}

#[test]
fn unknown_request_method_is_method_not_found() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&request(1, "tools/frobnicate", json!({}))),
        error(1, -32601, "method not found: tools/frobnicate")
    );
    assert_still_serving(&mut peer, 2);
    // Even without `_meta`: the method check comes first.
    assert_eq!(
        peer.ask(&json!({ "jsonrpc": "2.0", "id": 3, "method": "nope" })),
        error(3, -32601, "method not found: nope")
    );
    assert_still_serving(&mut peer, 4);
    peer.finish_quietly();
}

#[test]
fn notifications_are_never_answered() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let notifications = [
        json!({ "jsonrpc": "2.0", "method": "notifications/unknown" }),
        json!({ "jsonrpc": "2.0", "method": "notifications/unknown", "params": { "x": 1 } }),
        // A notification of a method that exists as a request.
        json!({ "jsonrpc": "2.0", "method": "tools/list", "params": {} }),
        json!({ "jsonrpc": "2.0", "method": "server/discover" }),
        // Legacy notifications.
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        // Cancellation of something that is not in flight, and malformed
        // cancellations.
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 999 } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": {} } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled" }),
    ];
    for (n, note) in notifications.iter().enumerate() {
        peer.send(note);
        // The reply to the next request is the very next line: nothing was
        // written for the notification.
        assert_still_serving(&mut peer, n as i64 + 1);
    }
    // Many in a row, then one request.
    for _ in 0..50 {
        peer.send(&json!({ "jsonrpc": "2.0", "method": "notifications/whatever" }));
    }
    assert_still_serving(&mut peer, 100);
    peer.finish_quietly();
}

/// A builder with an `echo` tool like the everything server's.
pub(crate) fn echo_builder(name: &str) -> mcp_stdio::ServerBuilder {
    #[derive(serde::Deserialize)]
    #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
    struct EchoArgs {
        text: String,
    }
    Server::builder(name, "1.0.0").inline_tool(
        Tool::new("echo", "Returns its text unchanged."),
        |_ctx, args: EchoArgs| Ok(CallToolResult::text(args.text)),
    )
}

/// A server whose trace hook forwards every line into a channel.
pub(crate) fn traced() -> (Server, Receiver<String>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let server = echo_builder("traced")
        .trace(move |line| {
            let _ = tx.send(line.to_owned());
        })
        .build();
    (server, rx)
}

/// The server sends requests only to a legacy client whose handler needs
/// input (tests/it/legacy.rs, section 7); any other response is traced and
/// dropped.
#[test]
fn responses_that_answer_no_request_of_the_server_are_only_traced() {
    let (server, notes) = traced();
    let mut peer = Peer::start(&server);
    peer.send(&json!({ "jsonrpc": "2.0", "id": 5, "result": {} }));
    assert_still_serving(&mut peer, 1);
    // The trace hook runs before the next line is handled, so the note is
    // there by now.
    assert_eq!(
        notes.try_recv().unwrap(),
        "ignoring a response (id 5) from the client: it answers no request of this server"
    );
    assert!(notes.try_recv().is_err(), "exactly one note");

    peer.send(&json!({ "jsonrpc": "2.0", "id": "r", "error": { "code": -1, "message": "no" } }));
    assert_still_serving(&mut peer, 2);
    assert_eq!(
        notes.try_recv().unwrap(),
        "ignoring a response (id \"r\") from the client: it answers no request of this server"
    );

    // A response with a null id (what a peer sends for a request it could
    // not read) is never answered either: answering a response could start
    // an endless exchange of errors.
    peer.send(
        &json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "x" } }),
    );
    assert_still_serving(&mut peer, 3);
    assert_eq!(
        notes.try_recv().unwrap(),
        "ignoring a response (id null) from the client: it answers no request of this server"
    );
    assert!(notes.try_recv().is_err(), "exactly one note");

    peer.send(&json!({ "jsonrpc": "2.0", "result": { "x": 1 } }));
    assert_still_serving(&mut peer, 4);
    assert_eq!(
        notes.try_recv().unwrap(),
        "ignoring a response (id null) from the client: it answers no request of this server"
    );
    assert!(notes.try_recv().is_err(), "exactly one note");

    // An id shaped like the server's own asks answers nothing while none
    // is open.
    peer.send(&json!({ "jsonrpc": "2.0", "id": "mcp-stdio-ask-1", "result": {} }));
    assert_still_serving(&mut peer, 40);
    assert_eq!(
        notes.try_recv().unwrap(),
        "ignoring a response (id \"mcp-stdio-ask-1\") from the client: it answers no request of this server"
    );
    assert!(notes.try_recv().is_err(), "exactly one note");

    // Ids that no request could have had are not answered either.
    let unusable = [json!({ "a": 1 }), json!(1.5), json!([1]), json!(true)];
    for (n, id) in unusable.into_iter().enumerate() {
        peer.send(&json!({ "jsonrpc": "2.0", "id": id, "result": {} }));
        assert_still_serving(&mut peer, 5 + n as i64);
        assert_eq!(
            notes.try_recv().unwrap(),
            "ignoring a response (id null) from the client: it answers no request of this server",
            "id {id}"
        );
        assert!(notes.try_recv().is_err(), "exactly one note for id {id}");
    }
    peer.finish_quietly();
    assert!(
        notes
            .recv_timeout(std::time::Duration::from_millis(0))
            .is_err(),
        "nothing else was traced"
    );
}

#[test]
fn blank_lines_crlf_and_bom_are_handled() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // Blank and whitespace-only lines are skipped without a reply.
    peer.send_raw(b"");
    peer.send_raw(b"   ");
    peer.send_raw(b"\t");
    peer.send_raw(b"\r");
    assert_still_serving(&mut peer, 1);

    // CRLF line ending.
    let mut line = serde_json::to_vec(&call(2, "echo", json!({ "text": "crlf" }))).unwrap();
    line.push(b'\r');
    peer.send_raw(&line);
    assert_eq!(
        peer.recv(),
        peer.result(
            2,
            json!({ "content": [{ "type": "text", "text": "crlf" }] })
        )
    );

    // A UTF-8 byte order mark at the start of a line.
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(serde_json::to_vec(&call(3, "echo", json!({ "text": "bom" }))).unwrap());
    peer.send_raw(&bom);
    assert_eq!(
        peer.recv(),
        peer.result(3, json!({ "content": [{ "type": "text", "text": "bom" }] }))
    );

    // Both, plus leading whitespace.
    let mut both = b"\xEF\xBB\xBF  ".to_vec();
    both.extend(serde_json::to_vec(&call(4, "echo", json!({ "text": "both" }))).unwrap());
    both.push(b'\r');
    peer.send_raw(&both);
    assert_eq!(
        peer.recv(),
        peer.result(
            4,
            json!({ "content": [{ "type": "text", "text": "both" }] })
        )
    );

    // Several messages in one write, mixed endings, blank lines between.
    let mut chunk = Vec::new();
    for (id, ending) in [(5, "\r\n"), (6, "\n\n\r\n"), (7, "\n")] {
        chunk.extend(
            serde_json::to_vec(&call(id, "echo", json!({ "text": id.to_string() }))).unwrap(),
        );
        chunk.extend(ending.as_bytes());
    }
    chunk.pop(); // send_raw adds the last newline
    peer.send_raw(&chunk);
    for id in 5..=7 {
        assert_eq!(
            peer.recv(),
            peer.result(
                id,
                json!({ "content": [{ "type": "text", "text": id.to_string() }] })
            )
        );
    }
    // Output lines end with "\n" only (Peer checks the newline; no "\r").
    peer.send(&call(8, "echo", json!({ "text": "x" })));
    assert!(!peer.recv_line().ends_with('\r'));
    peer.finish_quietly();
}

#[test]
fn deeply_nested_json_is_an_error_not_a_crash() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let depth = 100_000;
    let meta = serde_json::to_string(&crate::support::meta()).unwrap();
    // Balanced: valid JSON, but far too deep.
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{meta},"name":"test_simple_text","arguments":{{"x":{}{}}}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    peer.send_raw(line.as_bytes());
    let resp = peer.recv();
    // The envelope is read without limiting depth; the tool's arguments hit
    // serde_json's recursion limit when the handler's type is read, which
    // is answered like any other argument mismatch: a tool error for the
    // model, with the request's id.
    assert_eq!(
        resp,
        crate::tools::wrong_arguments(&peer, 1, "recursion limit exceeded")
    );
    assert_still_serving(&mut peer, 2);

    // Unbalanced: never closed.
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"_meta":{meta},"name":"echo","arguments":{{"text":{}"#,
        "[".repeat(depth)
    );
    peer.send_raw(line.as_bytes());
    let resp = peer.recv();
    let code = crate::support::code(&resp);
    assert!(
        [-32700, -32600, -32602].contains(&code),
        "unexpected error {resp}"
    );
    assert_eq!(resp["jsonrpc"], json!("2.0"));
    assert_still_serving(&mut peer, 4);

    // Deep nesting as the whole message.
    let line = "[".repeat(depth) + &"]".repeat(depth);
    peer.send_raw(line.as_bytes());
    let resp = peer.recv();
    assert!(
        [-32700, -32600].contains(&crate::support::code(&resp)),
        "unexpected error {resp}"
    );
    assert_eq!(resp["id"], Value::Null);
    assert_still_serving(&mut peer, 5);

    // Nesting within the limit is fine, and reaches the tool.
    let shallow = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"_meta":{meta},"name":"test_simple_text","arguments":{{"x":{}{}}}}}}}"#,
        "[".repeat(50),
        "]".repeat(50)
    );
    peer.send_raw(shallow.as_bytes());
    assert_eq!(
        peer.recv(),
        peer.result(
            6,
            json!({ "content": [{ "type": "text", "text": "This is a simple text response for testing." }] })
        )
    );
    peer.finish_quietly();
}

#[test]
fn duplicate_keys_and_odd_but_valid_messages() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // A duplicate id is ambiguous: invalid request, id unknown.
    let resp = ask_raw(
        &mut peer,
        br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"server/discover"}"#,
    );
    assert_eq!(resp["error"]["code"], json!(-32600));
    assert_eq!(resp["id"], Value::Null);
    assert_still_serving(&mut peer, 10);
    // Members in any order and unknown top-level members are fine.
    let meta = serde_json::to_string(&crate::support::meta()).unwrap();
    let line = format!(
        r#"{{"params":{{"arguments":{{"text":"order"}},"name":"echo","_meta":{meta}}},"method":"tools/call","x-extra":true,"id":11,"jsonrpc":"2.0"}}"#
    );
    peer.send_raw(line.as_bytes());
    assert_eq!(
        peer.recv(),
        peer.result(
            11,
            json!({ "content": [{ "type": "text", "text": "order" }] })
        )
    );
    // Whitespace inside the JSON.
    let line = format!(
        "{{ \"jsonrpc\" : \"2.0\" ,\t\"id\" : 12 , \"method\" : \"tools/call\" , \"params\" : {{ \"name\" : \"echo\" , \"arguments\" : {{ \"text\" : \"spaced\" }} , \"_meta\" : {meta} }} }}"
    );
    peer.send_raw(line.as_bytes());
    assert_eq!(
        peer.recv(),
        peer.result(
            12,
            json!({ "content": [{ "type": "text", "text": "spaced" }] })
        )
    );
    peer.finish_quietly();
}

// Review of the size commit 5cd7adc: a modern connection reads a response
// with a malformed, huge or doubled `error` as any other response: traced,
// nothing written, the connection goes on.
#[test]
fn responses_with_malformed_errors_are_only_traced() {
    let (server, notes) = traced();
    let mut peer = Peer::start(&server);
    let big = "z".repeat(300_000);
    let bodies = [
        r#""error":"oops""#.to_owned(),
        r#""error":null"#.to_owned(),
        r#""error":{"code":2147483648,"message":"m"}"#.to_owned(),
        r#""error":{"code":1.5}"#.to_owned(),
        r#""error":{"code":1,"message":"m","extra":1}"#.to_owned(),
        format!(r#""error":{{"code":1,"message":"m","data":"{big}"}}"#),
        r#""result":{},"error":[]"#.to_owned(),
    ];
    for (n, body) in bodies.iter().enumerate() {
        peer.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{n},{body}}}"#).as_bytes());
        let id = i64::try_from(n).unwrap() + 100;
        assert_still_serving(&mut peer, id);
        assert_eq!(
            notes.try_recv().unwrap(),
            format!(
                "ignoring a response (id {n}) from the client: it answers no request of this server"
            ),
            "{}",
            &body[..body.len().min(60)]
        );
        assert!(notes.try_recv().is_err(), "exactly one note");
    }
    peer.finish_quietly();
}
