use serde_json::json;

use super::*;

#[test]
fn base64_and_the_sentinel() {
    assert_eq!(base64(b"Hello"), "SGVsbG8=");
    assert_eq!(base64(b"ab"), "YWI=");
    assert_eq!(base64(b"abc"), "YWJj");
    assert_eq!(header_value("echo"), "echo");
    assert_eq!(header_value("é"), "=?base64?w6k=?=");
}

#[test]
fn a_modern_message_names_its_tool_uri_or_task_in_mcp_name() {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
    for (method, params, name) in [
        ("tools/call", json!({ "name": "echo" }), Some("echo")),
        (
            "resources/read",
            json!({ "uri": "mem://a" }),
            Some("mem://a"),
        ),
        ("tasks/get", json!({ "taskId": "t1" }), Some("t1")),
        ("tasks/cancel", json!({ "taskId": "t2" }), Some("t2")),
        ("tools/list", json!({}), None),
    ] {
        let mut params = params;
        params["_meta"] = meta.clone();
        let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let headers = message_headers(Some(&message), &LegacyState::default());
        let found = headers
            .iter()
            .find(|(n, _)| n == "Mcp-Name")
            .map(|(_, v)| v.as_str());
        assert_eq!(found, name, "{method}");
    }
}

#[test]
fn urls_are_http_only() {
    let url = Url::parse("http://127.0.0.1:8080/mcp").unwrap();
    assert_eq!(
        (url.host.as_str(), url.port, url.path.as_str()),
        ("127.0.0.1", 8080, "/mcp")
    );
    assert!(Url::parse("https://example.com/mcp").is_err());
}
