//! JSON as RFC 8259 has it, not as the common case writes it: escapes mean
//! what they say, only four bytes are whitespace, integers have no size
//! limit, and a number comes back as the double that was sent.

use mcp_stdio::Server;
use serde_json::{Value, json};

use crate::bad_input::{ask_raw, assert_still_serving};
use crate::support::{Blocker, Peer, call, error, request, text_result};

fn blocked() -> (Server, Blocker) {
    let (builder, blocker) = Blocker::install(Server::builder("json-text", "1.0.0"));
    (builder.build(), blocker)
}

/// The `_meta` of a modern request, with every key and value escaped.
const ESCAPED_META: &str = r#"{"io.modelcontextprotocol\/protocolVersion":"2026\u002d07-28","\u0069o.modelcontextprotocol/clientCapabilities":{}}"#;

// RFC 8259 section 7: any character may be escaped.
#[test]
fn escaped_members_are_the_same_members() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let line = format!(
        r#"{{"jsonrpc":"2\u002e0","\u0069d":"\u0037","method":"tools\/call","params":{{"_meta":{ESCAPED_META},"name":"ech\u006f","arguments":{{"text":"h\u0069"}}}}}}"#
    );
    assert_eq!(
        ask_raw(&mut peer, line.as_bytes()),
        text_result(&peer, "7", "hi")
    );
    // A version that only looks like 2.0 once unescaped is still wrong.
    let line = br#"{"jsonrpc":"2\u002e1","id":8,"method":"server/discover"}"#;
    assert_eq!(
        ask_raw(&mut peer, line),
        error(
            8,
            -32600,
            r#"invalid request: jsonrpc must be "2.0", got "2\u002e1""#
        )
    );
    assert_still_serving(&mut peer, 9);
    peer.finish_quietly();
}

#[test]
fn an_escaped_cancellation_cancels() {
    let (server, blocker) = blocked();
    let mut peer = Peer::start(&server);
    peer.send(&call("slow-1", "block", json!({})));
    assert_eq!(blocker.wait_started(), json!("slow-1"));
    peer.send_raw(
        br#"{"jsonrpc":"2\u002e0","method":"notifications\/cancelled","params":{"request\u0049d":"slow\u002d1"}}"#,
    );
    assert_eq!(blocker.wait_cancel_observed(), json!("slow-1"));
    // No reply for the cancelled call, and no error for the notification.
    let discover = peer.ask(&request(2, "server/discover", json!({})));
    assert_eq!(discover["id"], json!(2));
    peer.finish_quietly();
}

// RFC 8259 section 2: whitespace is space, tab, line feed, carriage return.
#[test]
fn a_line_of_other_blank_bytes_is_a_parse_error() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    for (n, line) in [&b"\x0c\x0c\x0c"[..], b"\x0b", b" \x0c{}", b"\xc2\xa0"]
        .iter()
        .enumerate()
    {
        let resp = ask_raw(&mut peer, line);
        assert_eq!(resp["id"], Value::Null, "{line:?}: {resp}");
        assert_eq!(resp["error"]["code"], json!(-32700), "{line:?}: {resp}");
        assert_still_serving(&mut peer, n as i64 + 1);
    }
    // Lines of JSON whitespace only are skipped without an answer.
    peer.send_raw(b" \t \r");
    assert_still_serving(&mut peer, 10);
    peer.finish_quietly();
}

/// Integers outside 64 bits, as a Python client may send them.
const BIG: [&str; 3] = [
    "-9223372036854775809",
    "18446744073709551616",
    "123456789012345678901234567890",
];

#[test]
fn integer_ids_of_any_size_are_echoed_exactly() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    for id in BIG {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{ESCAPED_META},"name":"echo","arguments":{{"text":"big"}}}}}}"#
        );
        peer.send_raw(line.as_bytes());
        let reply = peer.recv_line();
        assert!(
            reply.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"#)),
            "{reply}"
        );
        // Errors carry it exactly too.
        peer.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"nope"}}"#).as_bytes());
        let reply = peer.recv_line();
        assert!(
            reply.starts_with(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601"#
            )),
            "{reply}"
        );
    }
    peer.finish_quietly();
}

#[test]
fn progress_tokens_and_listen_ids_of_any_size_are_echoed_exactly() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let token = BIG[0];
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"progressToken":{token},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"progress","arguments":{{"steps":1}}}}}}"#
    );
    peer.send_raw(line.as_bytes());
    let progress = peer.recv_line();
    assert!(
        progress.contains(&format!(r#""progressToken":{token},"#)),
        "{progress}"
    );
    assert_eq!(peer.recv()["id"], json!(1));
    // A listen whose id is beyond 64 bits: the ack and the final result
    // name it exactly.
    let id = BIG[1];
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"_meta":{ESCAPED_META},"notifications":{{"toolsListChanged":true}}}}}}"#
    );
    peer.send_raw(line.as_bytes());
    let ack = peer.recv_line();
    assert!(
        ack.contains(&format!(
            r#""io.modelcontextprotocol/subscriptionId":{id}}}"#
        )),
        "{ack}"
    );
    peer.close_input();
    let last = peer.recv_line();
    assert!(
        last.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"#))
            && last.contains(&format!(
                r#""io.modelcontextprotocol/subscriptionId":{id},"#
            )),
        "{last}"
    );
}

#[test]
fn a_request_with_an_id_beyond_64_bits_can_be_cancelled() {
    let (server, blocker) = blocked();
    let mut peer = Peer::start(&server);
    let id = BIG[0];
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{ESCAPED_META},"name":"block","arguments":{{}}}}}}"#
    );
    peer.send_raw(line.as_bytes());
    blocker.wait_started();
    // The same integer written another way is a different text, and so is
    // a neighbour: only the exact id cancels.
    peer.send_raw(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":-9223372036854775810}}"#,
    );
    peer.send_raw(
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#)
            .as_bytes(),
    );
    blocker.wait_cancel_observed();
    let discover = peer.ask(&request(2, "server/discover", json!({})));
    assert_eq!(discover["id"], json!(2));
    peer.finish_quietly();
}

// serde_json's float_roundtrip: a double is read exactly, not to within
// an ulp, so what a handler sees and what it echoes is what was sent.
#[test]
fn numbers_round_trip_exactly() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let doubles = [
        "949880.6159563335",
        "0.1",
        "5e-324",
        "1.7976931348623157e308",
        "2.2250738585072014e-308",
        "-0.30000000000000004",
        "123456.78901234567",
    ];
    for (n, text) in doubles.into_iter().enumerate() {
        let exact: f64 = text.parse().unwrap();
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"_meta":{ESCAPED_META},"name":"add","arguments":{{"a":{text},"b":0}}}}}}"#
        );
        peer.send_raw(line.as_bytes());
        let reply = peer.recv_line();
        let want_text = format!(r#"{{"type":"text","text":"{exact}"}}"#);
        let want_structured = format!(r#""structuredContent":{{"sum":{}}}"#, json!(exact));
        assert!(
            reply.contains(&want_text) && reply.contains(&want_structured),
            "{text}: {reply}"
        );
    }
    peer.finish_quietly();
}
