//! `Msg::unreadable_response`: what a line the checker cannot read whole
//! is taken for (review of check13); `Head::malformed`: what makes an
//! answer malformed, read or not (check14).

use serde_json::{Value, json};

use super::{Head, Msg};

fn unreadable(text: &str) -> Msg {
    let why = serde_json::from_str::<Value>(text)
        .expect_err("a line Value refuses")
        .to_string();
    Msg::Unreadable(text.to_owned(), why)
}

#[test]
fn a_request_from_the_server_with_an_id_is_not_an_answer() {
    let msg = unreadable(
        r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"x":1e400}}"#,
    );
    assert_eq!(msg.unreadable_response(), None);
    assert_eq!(msg.response_id(), None);
}

#[test]
fn an_id_inside_the_result_is_not_the_responses_id() {
    let nested = r#"{"jsonrpc":"2.0","result":{"id":9,"x":1e400},"id":3}"#;
    assert_eq!(unreadable(nested).response_id(), Some(json!(3)));
    let without = r#"{"jsonrpc":"2.0","result":{"id":9,"x":1e400}}"#;
    assert_eq!(unreadable(without).response_id(), Some(Value::Null));
}

#[test]
fn a_response_with_both_result_and_error_is_an_error() {
    let both =
        r#"{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":-1,"message":"m","data":1e400}}"#;
    assert_eq!(
        unreadable(both).unreadable_response(),
        Some((json!(4), true))
    );
}

#[test]
fn an_array_holding_an_id_is_not_a_response() {
    let array = r#"[7,null,{"code":-32601,"message":"m","data":1e400}]"#;
    assert_eq!(unreadable(array).unreadable_response(), None);
}

#[test]
fn an_id_the_checker_cannot_read_is_no_id() {
    let msg = unreadable(r#"{"jsonrpc":"2.0","id":1e400,"result":{}}"#);
    assert_eq!(msg.response_id(), None);
}

fn malformed(text: &str) -> Option<String> {
    Head::of(text).expect("a response").malformed
}

#[test]
fn a_member_twice_is_malformed_whether_the_line_can_be_read_or_not() {
    let readable = r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#;
    assert!(malformed(readable).is_some_and(|why| why.contains("`result` twice")));
    let ids = r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{"x":1e400}}"#;
    assert!(malformed(ids).is_some_and(|why| why.contains("`id` twice")));
    // The last id, as `Value` keeps it: the answer is matched to it.
    assert_eq!(unreadable(ids).response_id(), Some(json!(2)));
    let errors =
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"error":{"data":1e400}}"#;
    assert!(malformed(errors).is_some_and(|why| why.contains("`error` twice")));
}

#[test]
fn a_result_that_is_not_an_object_is_malformed() {
    let null = r#"{"jsonrpc":"2.0","id":1,"result":null,"x":1e400}"#;
    assert_eq!(
        unreadable(null).unreadable_response(),
        Some((json!(1), false))
    );
    assert!(malformed(null).is_some_and(|why| why.contains("`result` is null")));
    let number = r#"{"jsonrpc":"2.0","id":1,"result":1e400}"#;
    assert!(malformed(number).is_some_and(|why| why.contains("`result` is 1e400")));
}

#[test]
fn both_result_and_error_is_malformed() {
    let both = r#"{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":-1,"message":"m"}}"#;
    assert!(malformed(both).is_some_and(|why| why.contains("both")));
}

#[test]
fn a_well_formed_answer_is_not_malformed() {
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"result":{"x":1e400}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}"#,
        r#"{ "result" : { } , "jsonrpc" : "2.0", "id" : "a" }"#,
    ] {
        assert_eq!(malformed(text), None, "{text}");
    }
}

/// Review of check14, claims that were false (guards): a name twice
/// inside `result` is the result's own business (only the top level
/// is read: the value `Value` keeps is the one every reader keeps for
/// `result` itself); `"error": null` beside a result is both members
/// (JSON-RPC 2.0: `error` "MUST NOT exist if there was no error"), and a
/// result that is an array or a string is no MCP result (every result
/// of the schema is an object).
#[test]
fn only_the_top_level_is_read_for_names_twice() {
    let nested = r#"{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2,"b":{"c":1,"c":2}}}"#;
    assert_eq!(malformed(nested), None);
}

#[test]
fn a_null_error_beside_a_result_and_a_result_that_is_no_object_are_malformed() {
    let null_error = r#"{"jsonrpc":"2.0","id":1,"result":{},"error":null}"#;
    assert!(malformed(null_error).is_some_and(|why| why.contains("both")));
    for result in [r#"[]"#, r#""ok""#, "true"] {
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
        assert!(
            malformed(&text).is_some_and(|why| why.contains("not an object")),
            "{text}"
        );
    }
}
