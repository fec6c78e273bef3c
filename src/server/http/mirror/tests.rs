use super::*;
use serde_json::json;

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

#[test]
fn integers_compare_as_numbers_and_booleans_in_lowercase() {
    let same = |header: &str, body: &str| same(header, &raw(body));
    assert_eq!(same("42", "42"), Ok(true));
    assert_eq!(same("42.0", "42"), Ok(true));
    assert_eq!(same("4.2e1", "42"), Ok(true));
    assert_eq!(same("42", "420e-1"), Ok(true));
    assert_eq!(same("-7", "-7"), Ok(true));
    assert_eq!(same("0", "-0"), Ok(true));
    assert_eq!(same("43", "42"), Ok(false));
    assert_eq!(same("42.5", "42"), Ok(false));
    assert_eq!(same(" 42", "42"), Ok(false));
    assert_eq!(same("42x", "42"), Ok(false));
    assert_eq!(same("1e99999999999999999999", "1"), Ok(false));
    assert_eq!(same("true", "true"), Ok(true));
    assert_eq!(same("True", "true"), Ok(false));
    assert_eq!(same("false", "false"), Ok(true));
    assert_eq!(same("us-west1", r#""us-west1""#), Ok(true));
    assert_eq!(same("us-west1", r#""us\u002dwest1""#), Ok(true));
    assert_eq!(same("[1]", "[1]"), Ok(false));
    assert_eq!(same("null", "null"), Ok(false));
}

#[test]
fn a_body_integer_is_compared_exactly_and_past_the_safe_range_refused() {
    let same = |header: &str, body: &str| same(header, &raw(body));
    assert_eq!(same("9007199254740991", "9007199254740991"), Ok(true));
    assert_eq!(same("-9007199254740991", "-9007199254740991"), Ok(true));
    assert_eq!(same("9007199254740990", "9007199254740991"), Ok(false));
    assert_eq!(same("9007199254740991", "9007199254740990"), Ok(false));
    for body in [
        "9007199254740992",
        "9007199254740993",
        "-9007199254740992",
        "1e16",
        "1.5",
        "1e-1",
        "123456789012345678901234567890",
    ] {
        assert!(same(body, body).is_err(), "{body}");
    }
}

#[test]
fn an_argument_is_read_level_by_level_and_twice_is_refused() {
    let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
    let args = raw(r#"{"a": {"b": 5, "c": [1, {}]}, "x": "not an object"}"#);
    assert_eq!(
        argument(Some(&args), &path("a.b")).unwrap().unwrap().get(),
        "5"
    );
    assert!(argument(Some(&args), &path("a.d")).unwrap().is_none());
    assert!(argument(Some(&args), &path("x.y")).unwrap().is_none());
    assert!(argument(None, &path("a")).unwrap().is_none());
    let null = raw(r#"{"a": null}"#);
    assert!(argument(Some(&null), &path("a")).unwrap().is_none());
    let twice = raw(r#"{"a": {"b": 1, "b": 2}}"#);
    let error = argument(Some(&twice), &path("a.b")).unwrap_err();
    assert_eq!(error.code, -32020);
    assert!(
        error.message.contains("'b' appears twice"),
        "{}",
        error.message
    );
}

#[test]
fn annotations_are_found_through_properties_only() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "nested": { "type": "object", "properties": {
                "id": { "type": "integer", "x-mcp-header": "Id" }
            }},
            "list": { "type": "array", "items": { "x-mcp-header": "Never" } }
        }
    });
    let mut out = Vec::new();
    annotations(&schema, &mut Vec::new(), &mut out);
    out.sort();
    assert_eq!(
        out,
        [
            (vec!["nested".to_owned(), "id".to_owned()], "Id".to_owned()),
            (vec!["region".to_owned()], "Region".to_owned()),
        ]
    );
}
