//! Lines longer than the maximum: never held whole, never lost. Each
//! request still gets its one answer, `-32600` with the request's id read
//! from the line as it went by, wherever the id is (spec 2026-07-28
//! basic/index: an error carries the id unless it could not be read).

use serde_json::{Value, json};

use crate::bad_input::{assert_still_serving, echo_builder, traced};
use crate::support::{Peer, call, error, meta};

const MIB: usize = 1024 * 1024;

/// A server with `echo` and the given maximum line length.
fn limited(max_line_bytes: usize) -> mcp_stdio::Server {
    echo_builder("limited")
        .max_line_bytes(max_line_bytes)
        .build()
}

/// A `tools/call` of `echo` whose text is `len` bytes of `x`, with the
/// members in the given order (`id` anywhere, or not at all).
fn long_call(id: Option<&str>, id_first: bool, len: usize) -> Vec<u8> {
    let params = format!(
        r#""params":{{"_meta":{},"name":"echo","arguments":{{"text":"{}"}}}}"#,
        meta(),
        "x".repeat(len)
    );
    let method = r#""method":"tools/call""#;
    let members = match (id, id_first) {
        (Some(id), true) => format!(r#""jsonrpc":"2.0","id":{id},{method},{params}"#),
        (Some(id), false) => format!(r#"{params},"jsonrpc":"2.0",{method},"id":{id}"#),
        (None, _) => format!(r#""jsonrpc":"2.0",{method},{params}"#),
    };
    format!("{{{members}}}").into_bytes()
}

/// The error the default server writes for a line of `len` bytes.
fn too_long(len: usize) -> String {
    format!(
        "invalid request: message of {len} bytes exceeds the maximum line length of {} bytes",
        mcp_stdio::DEFAULT_MAX_LINE_BYTES
    )
}

#[test]
fn a_20_mib_request_is_answered_with_its_id_first_or_last() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    for (id, first) in [
        ("\"first\"", true),
        ("77", false),
        ("\"a\\\"b\\u0021\"", false),
    ] {
        let line = long_call(Some(id), first, 20 * MIB);
        peer.send_raw(&line);
        let want_id: Value = serde_json::from_str(id).unwrap();
        assert_eq!(peer.recv(), error(want_id, -32600, &too_long(line.len())));
        assert_still_serving(&mut peer, 1);
    }
    // An id beyond 64 bits comes back as it was written.
    let line = long_call(Some("-9223372036854775809"), false, 17 * MIB);
    peer.send_raw(&line);
    let reply = peer.recv_line();
    assert!(
        reply.starts_with(r#"{"jsonrpc":"2.0","id":-9223372036854775809,"error":{"code":-32600"#),
        "{reply}"
    );
    assert_still_serving(&mut peer, 2);
    peer.finish_quietly();
}

#[test]
fn an_over_long_line_without_a_usable_id_gets_null_and_a_notification_nothing() {
    let server = limited(4096);
    let mut peer = Peer::start(&server);
    let text = "y".repeat(8192);
    let cases = [
        // The id is not a string or an integer.
        format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"t":"{text}"}},"id":null}}"#),
        // Two ids: neither can be trusted.
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"t":"{text}"}},"id":2}}"#),
        // Cut short: not one object.
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"t":"{text}"#),
        // Something after the object.
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"t":"{text}"}}}} x"#),
        // Not an object at all.
        format!(r#"[{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"t":"{text}"}}}}]"#),
        // An id that is an object.
        format!(r#"{{"jsonrpc":"2.0","id":{{"n":1}},"method":"m","params":{{"t":"{text}"}}}}"#),
    ];
    for (n, line) in cases.iter().enumerate() {
        peer.send_raw(line.as_bytes());
        let resp = peer.recv();
        assert_eq!(resp["id"], Value::Null, "case {n}: {resp}");
        assert_eq!(resp["error"]["code"], json!(-32600), "case {n}: {resp}");
        assert_still_serving(&mut peer, n as i64 + 10);
    }
    // A notification is never answered, too long or not; nor is an id
    // that is not top-level.
    let notification = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"id":5,"data":"{text}"}}}}"#
    );
    peer.send_raw(notification.as_bytes());
    assert_still_serving(&mut peer, 20);
    peer.finish_quietly();
}

#[test]
fn an_over_long_response_from_the_client_is_only_traced() {
    let (server, notes) = traced();
    let mut peer = Peer::start(&server);
    // (Its own limit is the default; the client's line must exceed it.)
    let line = format!(
        r#"{{"result":{{"text":"{}"}},"jsonrpc":"2.0","id":"mcp-stdio-ask-9"}}"#,
        "z".repeat(17 * MIB)
    );
    peer.send_raw(line.as_bytes());
    assert_still_serving(&mut peer, 1);
    assert_eq!(
        notes.try_recv().unwrap(),
        "ignoring a response (id \"mcp-stdio-ask-9\") from the client: it answers no request of this server"
    );
    peer.finish_quietly();
}

#[test]
fn over_long_line_is_one_error_and_serving_continues() {
    let server = limited(1024);
    let mut peer = Peer::start(&server);
    // A valid request of exactly 100 KiB.
    let prefix = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":""#;
    let suffix = br#""}}}"#;
    let total = 100 * 1024;
    let mut line = prefix.to_vec();
    line.resize(total - suffix.len(), b'a');
    line.extend_from_slice(suffix);
    assert_eq!(line.len(), total);
    peer.send_raw(&line);
    let resp = peer.recv();
    assert_eq!(
        resp,
        error(
            1,
            -32600,
            "invalid request: message of 102400 bytes exceeds the maximum line length of 1024 bytes"
        )
    );
    assert!(resp["error"]["message"].as_str().unwrap().contains("1024"));
    // The next request is served, and its reply is the next line: exactly
    // one error was written for the long line.
    let small = call(2, "echo", json!({ "text": "small" }));
    assert_eq!(
        peer.ask(&small),
        peer.result(
            2,
            json!({ "content": [{ "type": "text", "text": "small" }] })
        )
    );
    // A line of exactly the limit still fits.
    let prefix = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":""#;
    let mut exact = prefix.to_vec();
    exact.resize(1024 - suffix.len(), b'b');
    exact.extend_from_slice(suffix);
    assert_eq!(exact.len(), 1024);
    peer.send_raw(&exact);
    let text = "b".repeat(1024 - suffix.len() - prefix.len());
    assert_eq!(
        peer.recv(),
        peer.result(3, json!({ "content": [{ "type": "text", "text": text }] }))
    );
    // One byte more does not.
    let mut over = exact.clone();
    over.insert(prefix.len(), b'b');
    peer.send_raw(&over);
    assert_eq!(
        peer.recv(),
        error(
            3,
            -32600,
            "invalid request: message of 1025 bytes exceeds the maximum line length of 1024 bytes"
        )
    );
    assert_eq!(
        peer.ask(&call(4, "echo", json!({ "text": "after" }))),
        peer.result(
            4,
            json!({ "content": [{ "type": "text", "text": "after" }] })
        )
    );
    peer.finish_quietly();
}
