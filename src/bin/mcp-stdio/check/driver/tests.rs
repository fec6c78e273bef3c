//! `Msg::unreadable_response`: what a line the checker cannot read whole
//! is taken for (review of check13).

use serde_json::{Value, json};

use super::Msg;

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
