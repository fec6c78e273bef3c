//! Classifying lines: requests, notifications, responses, and every way a
//! line can be wrong, read in one pass or the plain way.

use super::*;

#[test]
fn a_cancellation_names_its_request_or_is_ignored() {
    let raw = |s: &str| Params::Raw(RawValue::from_string(s.to_owned()).unwrap());
    assert_eq!(
        cancelled_id(Some(&raw(r#"{"requestId":"a","reason":"x"}"#))),
        Some(RequestId::from("a"))
    );
    assert_eq!(cancelled_id(Some(&raw(r#"{"id":1}"#))), None);
    assert_eq!(cancelled_id(None), None);
}

fn error_of(line: &str) -> (Option<RequestId>, i32) {
    match classify(line.as_bytes()) {
        Incoming::Invalid { id, error } => (id, error.code),
        other => panic!("expected an error for {line}, got {other:?}"),
    }
}

#[test]
fn requests_and_notifications() {
    match classify(br#"{"jsonrpc":"2.0","id":"7","method":"a/b","params":{"x":1}}"#) {
        Incoming::Request { id, method, params } => {
            assert_eq!(id, RequestId::from("7"));
            assert_eq!(method, "a/b");
            let params = params.unwrap();
            assert_eq!(params.raw().get(), r#"{"x":1}"#);
            assert!(matches!(params, Params::Read { .. }), "read in one pass");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        classify(br#"{"jsonrpc":"2.0","method":"n"}"#),
        Incoming::Notification { params: None, .. }
    ));
    assert!(matches!(
        classify(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        Incoming::Response {
            id: Some(RequestId::Number(1)),
            ..
        }
    ));
}

#[test]
fn a_line_the_one_pass_refuses_is_read_the_plain_way() {
    // The params as sent, byte for byte, from a line read in one pass.
    match classify(br#"{"jsonrpc":"2.0","id":1,"method":"m","params": { "x" : [1, {}] } }"#) {
        Incoming::Request {
            params: Some(params @ Params::Read { .. }),
            ..
        } => assert_eq!(params.raw().get(), r#"{ "x" : [1, {}] }"#),
        other => panic!("{other:?}"),
    }
    // A member of the params twice: a request all the same, whose
    // params are refused when they are read (`-32602`).
    match classify(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a","name":"b"}}"#) {
        Incoming::Request {
            params: Some(params @ Params::Raw(_)),
            ..
        } => assert_eq!(params.fields().unwrap_err().code, -32602),
        other => panic!("{other:?}"),
    }
    // Params that are not an object, or a member of the envelope
    // twice: the errors the plain reading gives.
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#),
        (Some(1.into()), -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1,"result":2}"#),
        (None, -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":tru}}"#),
        (None, -32700)
    );
}

#[test]
fn params_read_in_one_pass_read_again_at_any_depth() {
    // serde_json's nesting limit (128) falls at the same place in both
    // readings: a line the one pass took is read again.
    for depth in 120..=130 {
        let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":{nested}}}}}"#);
        if let Incoming::Request {
            params: Some(params),
            ..
        } = classify(line.as_bytes())
        {
            assert!(params.raw().get().ends_with("]}"), "depth {depth}");
        }
    }
}

#[test]
fn bad_shapes() {
    assert_eq!(error_of("{not json"), (None, -32700));
    assert_eq!(error_of(r#"{"jsonrpc":"2.0"} x"#), (None, -32700));
    assert_eq!(error_of("[1,2]"), (None, -32600));
    assert_eq!(error_of("42"), (None, -32600));
    assert_eq!(
        error_of(r#"{"id":1,"method":"m"}"#),
        (Some(1.into()), -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#),
        (Some(1.into()), -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":1}"#),
        (Some(1.into()), -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":1,"method":5}"#),
        (Some(1.into()), -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#),
        (None, -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#),
        (None, -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#),
        (None, -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":"x","method":"m","params":[1]}"#),
        (Some("x".into()), -32600)
    );
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#),
        (None, -32600)
    );
    assert!(classify(b"\xff\xfe").is_parse_error());
    assert!(classify(b"\x0c\x0c").is_parse_error());
}

#[test]
fn escapes_mean_what_they_say() {
    match classify(br#"{"jsonrpc":"2\u002e0","id":"\u0037","\u006dethod":"a\/b"}"#) {
        Incoming::Request { id, method, .. } => {
            assert_eq!(id, RequestId::from("7"));
            assert_eq!(method, "a/b");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        error_of(r#"{"jsonrpc":"2\u002e1","id":1,"method":"m"}"#),
        (Some(1.into()), -32600)
    );
}

#[test]
fn integer_ids_of_any_size_keep_their_text() {
    for text in [
        "-9223372036854775809",
        "18446744073709551616",
        "1000000000000000000000000",
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"m"}}"#);
        match classify(line.as_bytes()) {
            Incoming::Request { id, .. } => {
                assert_eq!(id, RequestId::BigNumber(text.into()));
                assert_eq!(serde_json::to_string(&id).unwrap(), text);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        error_of(r#"{"jsonrpc":"2.0","id":1e3,"method":"m"}"#),
        (None, -32600)
    );
}

impl Incoming<'_> {
    fn is_parse_error(&self) -> bool {
        matches!(self, Incoming::Invalid { error, .. } if error.code == -32700)
    }
}
