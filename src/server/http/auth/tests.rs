use super::*;

#[test]
fn the_metadata_url_inserts_the_well_known_path_before_the_resources_path() {
    let url = |r: &str| ProtectedResource::new(r).metadata_url();
    assert_eq!(
        url("https://mcp.example.com/mcp"),
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        url("https://mcp.example.com"),
        "https://mcp.example.com/.well-known/oauth-protected-resource"
    );
    assert_eq!(
        url("https://mcp.example.com:8443/"),
        "https://mcp.example.com:8443/.well-known/oauth-protected-resource"
    );
    assert_eq!(
        url("http://127.0.0.1:9/a/b/"),
        "http://127.0.0.1:9/.well-known/oauth-protected-resource/a/b"
    );
}

#[test]
fn an_operation_needs_its_scopes_and_every_requests_each_once() {
    let resource = ProtectedResource::new("https://x")
        .require_scopes(["read"])
        .require_scopes_for("tools/call", Some("write"), ["write", "read"])
        .require_scopes_for("tools/call", None, ["tools"])
        .require_scopes_for("prompts/get", Some("secret"), ["secret"]);
    let op = |method: &str, name: Option<&str>| (method.to_owned(), name.map(str::to_owned));
    assert_eq!(
        resource.needed(&[op("tools/call", Some("write"))]),
        ["read", "write", "tools"]
    );
    assert_eq!(
        resource.needed(&[op("tools/call", Some("echo"))]),
        ["read", "tools"]
    );
    assert_eq!(resource.needed(&[op("tools/list", None)]), ["read"]);
    assert_eq!(
        resource.needed(&[
            op("completion/complete", None),
            op("prompts/get", Some("secret"))
        ]),
        ["read", "secret"]
    );
}

#[test]
fn clear_text_is_refused_off_loopback_only() {
    for uri in [
        "http://mcp.example.com/mcp",
        "HTTP://auth.example.com",
        "http://127.0.0.1@evil.example.com/",
        "http://localhost.example.com:8080",
        "http://10.0.0.1/mcp",
    ] {
        assert!(clear_text_off_loopback(uri), "{uri}");
    }
    for uri in [
        "https://mcp.example.com/mcp",
        "http://localhost:8080/mcp",
        "http://127.0.0.2/mcp",
        "http://[::1]:3000",
        "http://user@127.0.0.1/",
    ] {
        assert!(!clear_text_off_loopback(uri), "{uri}");
    }
}

#[test]
fn a_description_loses_what_a_quoted_string_cannot_hold_and_the_token() {
    let resource = ProtectedResource::new("https://x/mcp");
    let kind = Kind::InvalidToken("token \"abc\\\" unknown\n".into());
    let refused = refusal(&resource, kind, None, "abc");
    assert_eq!(
        refused.headers[0].1,
        r#"Bearer error="invalid_token", error_description="token [the token] unknown", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp""#
    );
    assert!(!refused.message.contains("abc"), "{}", refused.message);
}
