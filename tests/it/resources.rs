//! `resources/list`, `resources/templates/list` and `resources/read`
//! (spec 2026-07-28 server/resources) and caching hints
//! (server/utilities/caching).

use mcp_stdio::types::{
    CacheScope, CallToolResult, Prompt, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role, TextResourceContents, Tool,
};
use mcp_stdio::{CacheHints, ErrorObject, Server};
use serde_json::{Value, json};

use crate::support::{Peer, call, error, request};

use crate::support::PNG;

fn read(id: impl Into<Value>, uri: &str) -> Value {
    request(id, "resources/read", json!({ "uri": uri }))
}

/// A successful read with the default caching hints.
fn read_result(peer: &Peer, id: impl Into<Value>, contents: Value) -> Value {
    peer.result(
        id,
        json!({ "contents": contents, "ttlMs": 0, "cacheScope": "private" }),
    )
}

fn not_found(id: impl Into<Value>, uri: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.into(),
        "error": {
            "code": -32602,
            "message": format!("invalid params: resource not found: {uri}"),
            "data": { "uri": uri }
        }
    })
}

fn text(uri: &str, mime: &str, text: &str) -> Value {
    json!({ "uri": uri, "mimeType": mime, "text": text })
}

#[test]
fn list_on_the_everything_server() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(1, "resources/list", json!({})));
    assert_eq!(
        resp,
        peer.result(
            1,
            json!({
                "resources": [
                    {
                        "uri": "mem://counter",
                        "name": "counter",
                        "description": "A counter that the bump tool increments.",
                        "mimeType": "text/plain"
                    },
                    {
                        "uri": "test://static-text",
                        "name": "static-text",
                        "description": "A static text resource.",
                        "mimeType": "text/plain"
                    },
                    {
                        "uri": "test://static-binary",
                        "name": "static-binary",
                        "description": "A static binary resource (a 1x1 PNG).",
                        "mimeType": "image/png"
                    },
                    {
                        "uri": "test://watched-resource",
                        "name": "watched-resource",
                        "description": "A resource for subscription scenarios.",
                        "mimeType": "text/plain"
                    }
                ],
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    for resource in resp["result"]["resources"].as_array().unwrap() {
        assert!(resource["uri"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(resource["name"].as_str().is_some_and(|s| !s.is_empty()));
    }
    // Every listed resource is readable, with caching hints (the conformance
    // `caching` scenario reads the first one).
    for (n, resource) in resp["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let uri = resource["uri"].as_str().unwrap();
        let r = peer.ask(&read(n as i64 + 10, uri));
        assert_eq!(r["result"]["ttlMs"], json!(0), "{uri}");
        assert_eq!(r["result"]["cacheScope"], json!("private"), "{uri}");
        assert_eq!(r["result"]["contents"][0]["uri"], json!(uri), "{uri}");
    }
    peer.finish_quietly();
}

#[test]
fn templates_list_on_the_everything_server() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&request("t", "resources/templates/list", json!({}))),
        peer.result(
            "t",
            json!({
                "resourceTemplates": [{
                    "uriTemplate": "test://template/{id}/data",
                    "name": "template-data",
                    "description": "Data by id.",
                    "mimeType": "application/json"
                }],
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    peer.finish_quietly();
}

#[test]
fn read_static_text_and_binary() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&read(1, "test://static-text")),
        read_result(
            &peer,
            1,
            json!([text(
                "test://static-text",
                "text/plain",
                "This is the content of the static text resource."
            )])
        )
    );
    let binary = peer.ask(&read(2, "test://static-binary"));
    assert_eq!(
        binary,
        read_result(
            &peer,
            2,
            json!([{ "uri": "test://static-binary", "mimeType": "image/png", "blob": PNG }])
        )
    );
    assert!(binary["result"]["contents"][0].get("text").is_none());
    assert_eq!(
        peer.ask(&read(3, "test://watched-resource")),
        read_result(
            &peer,
            3,
            json!([text(
                "test://watched-resource",
                "text/plain",
                "Watched resource content."
            )])
        )
    );
    peer.finish_quietly();
}

#[test]
fn read_exact_line_bytes() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    peer.send(&read(1, "test://static-text"));
    assert_eq!(
        peer.recv_line(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"contents":[{{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}}],"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"mcp-stdio-everything","version":"{}"}}}}}}}}"#,
            env!("CARGO_PKG_VERSION")
        )
    );
    peer.finish_quietly();
}

#[test]
fn counter_changes_after_bump() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let counter = |peer: &Peer, id: i64, value: &str| {
        read_result(
            peer,
            id,
            json!([text("mem://counter", "text/plain", value)]),
        )
    };
    assert_eq!(peer.ask(&read(1, "mem://counter")), counter(&peer, 1, "0"));
    assert_eq!(
        peer.ask(&call(2, "bump", json!({}))),
        peer.result(2, json!({ "content": [{ "type": "text", "text": "1" }] }))
    );
    assert_eq!(peer.ask(&read(3, "mem://counter")), counter(&peer, 3, "1"));
    peer.ask(&call(4, "bump", json!({})));
    peer.ask(&call(5, "bump", json!({})));
    assert_eq!(peer.ask(&read(6, "mem://counter")), counter(&peer, 6, "3"));
    peer.finish_quietly();
}

#[test]
fn read_through_a_template() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&read(1, "test://template/123/data"));
    assert_eq!(
        resp,
        read_result(
            &peer,
            1,
            json!([text(
                "test://template/123/data",
                "application/json",
                r#"{"data":"Data for ID: 123","id":"123","templateTest":true}"#
            )])
        )
    );
    assert!(
        resp["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("123")
    );
    // The variable is percent-decoded.
    let resp = peer.ask(&read(2, "test://template/a%20b/data"));
    let body: Value =
        serde_json::from_str(resp["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({ "id": "a b", "templateTest": true, "data": "Data for ID: a b" })
    );
    assert_eq!(
        resp["result"]["contents"][0]["uri"],
        "test://template/a%20b/data"
    );
    // `{id}` is one segment: neither empty nor spanning a slash.
    assert_eq!(
        peer.ask(&read(3, "test://template//data")),
        not_found(3, "test://template//data")
    );
    assert_eq!(
        peer.ask(&read(4, "test://template/1/2/data")),
        not_found(4, "test://template/1/2/data")
    );
    assert_eq!(
        peer.ask(&read(5, "test://template/123/data/extra")),
        not_found(5, "test://template/123/data/extra")
    );
    peer.finish_quietly();
}

#[test]
fn unknown_uri_is_invalid_params_with_data_uri() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let uri = "test://nonexistent-resource-for-conformance-testing";
    let resp = peer.ask(&read(5, uri));
    assert_eq!(resp, not_found(5, uri));
    assert_eq!(resp["error"]["data"]["uri"], uri);
    assert!(
        resp.get("result").is_none(),
        "never an empty contents array"
    );
    assert_eq!(
        peer.ask(&read("m", "mem://does-not-exist")),
        not_found("m", "mem://does-not-exist")
    );
    // A URI differing only in case is a different URI.
    assert_eq!(
        peer.ask(&read(6, "TEST://static-text")),
        not_found(6, "TEST://static-text")
    );
    peer.finish_quietly();
}

#[test]
fn missing_or_malformed_uri_is_invalid_params() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&request(1, "resources/read", json!({}))),
        error(1, -32602, "invalid params: missing uri")
    );
    assert_eq!(
        peer.ask(&request(2, "resources/read", json!({ "uri": null }))),
        error(2, -32602, "invalid params: missing uri")
    );
    assert_eq!(
        peer.ask(&request(3, "resources/read", json!({ "uri": 5 }))),
        error(3, -32602, "invalid params: uri must be a string")
    );
    assert_eq!(
        peer.ask(&request(
            4,
            "resources/read",
            json!({ "uri": ["test://static-text"] })
        )),
        error(4, -32602, "invalid params: uri must be a string")
    );
    assert_eq!(peer.ask(&read(5, "")), not_found(5, ""));
    // Still serving.
    assert_eq!(
        peer.ask(&read(6, "mem://counter"))["result"]["contents"][0]["text"],
        "0"
    );
    peer.finish_quietly();
}

/// A server with public caching hints of 5 s and one of everything.
fn cached() -> Server {
    Server::builder("cached", "1.0.0")
        .cache_hints(CacheHints {
            ttl_ms: 5000,
            scope: CacheScope::Public,
        })
        .inline_tool(Tool::new("noop", "Does nothing."), |_ctx, _: Value| {
            Ok(CallToolResult::text("ok"))
        })
        .inline_resource(Resource::new("c://plain", "plain"), |_ctx, req| {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                &req.uri, "plain",
            )]))
        })
        .resource(Resource::new("c://own-hints", "own-hints"), |_ctx, req| {
            let mut result = ReadResourceResult::new(vec![ResourceContents::text(&req.uri, "own")]);
            result.ttl_ms = Some(60);
            result.cache_scope = Some(CacheScope::Private);
            Ok(result)
        })
        .resource(Resource::new("c://own-ttl", "own-ttl"), |_ctx, req| {
            let mut result =
                ReadResourceResult::new(vec![ResourceContents::text(&req.uri, "ttl only")]);
            result.ttl_ms = Some(1);
            Ok(result)
        })
        .resource_template(ResourceTemplate::new("c://t/{x}", "t"), |_ctx, req| {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                &req.uri,
                req.variables["x"].clone(),
            )]))
        })
        .prompt(Prompt::new("p", "A prompt."), |_ctx, _| {
            Ok(mcp_stdio::types::GetPromptResult::new(vec![
                PromptMessage::text(Role::User, "hi"),
            ]))
        })
        .build()
}

#[test]
fn configured_cache_hints_everywhere() {
    let server = cached();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&request(1, "server/discover", json!({}))),
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
                "ttlMs": 5000,
                "cacheScope": "public"
            })
        )
    );
    assert_eq!(
        peer.ask(&request(2, "tools/list", json!({}))),
        peer.result(
            2,
            json!({
                "tools": [{ "name": "noop", "description": "Does nothing.", "inputSchema": { "type": "object" } }],
                "ttlMs": 5000,
                "cacheScope": "public"
            })
        )
    );
    assert_eq!(
        peer.ask(&request(3, "resources/list", json!({}))),
        peer.result(
            3,
            json!({
                "resources": [
                    { "uri": "c://plain", "name": "plain" },
                    { "uri": "c://own-hints", "name": "own-hints" },
                    { "uri": "c://own-ttl", "name": "own-ttl" }
                ],
                "ttlMs": 5000,
                "cacheScope": "public"
            })
        )
    );
    assert_eq!(
        peer.ask(&request(4, "resources/templates/list", json!({}))),
        peer.result(
            4,
            json!({
                "resourceTemplates": [{ "uriTemplate": "c://t/{x}", "name": "t" }],
                "ttlMs": 5000,
                "cacheScope": "public"
            })
        )
    );
    assert_eq!(
        peer.ask(&request(5, "prompts/list", json!({}))),
        peer.result(
            5,
            json!({
                "prompts": [{ "name": "p", "description": "A prompt." }],
                "ttlMs": 5000,
                "cacheScope": "public"
            })
        )
    );
    assert_eq!(
        peer.ask(&read(6, "c://plain")),
        peer.result(
            6,
            json!({
                "contents": [{ "uri": "c://plain", "text": "plain" }],
                "ttlMs": 5000,
                "cacheScope": "public"
            })
        )
    );
    assert_eq!(
        peer.ask(&read(7, "c://t/abc")),
        peer.result(
            7,
            json!({
                "contents": [{ "uri": "c://t/abc", "text": "abc" }],
                "ttlMs": 5000,
                "cacheScope": "public"
            })
        )
    );
    // A handler's own hints win, field by field.
    assert_eq!(
        peer.ask(&read(8, "c://own-hints")),
        peer.result(
            8,
            json!({
                "contents": [{ "uri": "c://own-hints", "text": "own" }],
                "ttlMs": 60,
                "cacheScope": "private"
            })
        )
    );
    assert_eq!(
        peer.ask(&read(9, "c://own-ttl")),
        peer.result(
            9,
            json!({
                "contents": [{ "uri": "c://own-ttl", "text": "ttl only" }],
                "ttlMs": 1,
                "cacheScope": "public"
            })
        )
    );
    // Results that are not cacheable carry no hints.
    assert_eq!(
        peer.ask(&call(10, "noop", json!({}))),
        peer.result(10, json!({ "content": [{ "type": "text", "text": "ok" }] }))
    );
    assert_eq!(
        peer.ask(&request(11, "prompts/get", json!({ "name": "p" }))),
        peer.result(
            11,
            json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }] })
        )
    );
    peer.finish_quietly();
}

#[test]
fn reserved_expansion_template_matches_slashes() {
    let server = Server::builder("files", "1.0.0")
        .inline_resource(
            Resource::new("file:///etc/fixed.txt", "fixed"),
            |_ctx, req| {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    &req.uri,
                    "static wins",
                )]))
            },
        )
        .resource_template(
            ResourceTemplate::new("file:///{+path}", "files"),
            |_ctx, req| {
                let mut contents =
                    TextResourceContents::new(&req.uri, format!("path={}", req.variables["path"]));
                contents.mime_type = Some("text/plain".into());
                Ok(ReadResourceResult::new(vec![contents.into()]))
            },
        )
        .resource_template(
            ResourceTemplate::new("db://tables/{name}", "tables"),
            |_ctx, req| {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    &req.uri,
                    format!("table={}", req.variables["name"]),
                )]))
            },
        )
        .resource_template(ResourceTemplate::new("x://{a}-{b}", "pair"), |_ctx, req| {
            let vars = serde_json::to_string(&req.variables).unwrap();
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                &req.uri, vars,
            )]))
        })
        .resource_template(
            ResourceTemplate::new("err://{what}", "errors"),
            |_ctx, req| -> Result<ReadResourceResult, ErrorObject> {
                Err(ErrorObject::internal_error(format!(
                    "cannot read {}",
                    req.variables["what"]
                )))
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    let file = |peer: &Peer, id: i64, uri: &str, path: &str| {
        read_result(
            peer,
            id,
            json!([text(uri, "text/plain", &format!("path={path}"))]),
        )
    };
    assert_eq!(
        peer.ask(&read(1, "file:///a/b/c.txt")),
        file(&peer, 1, "file:///a/b/c.txt", "a/b/c.txt")
    );
    assert_eq!(
        peer.ask(&read(2, "file:///single")),
        file(&peer, 2, "file:///single", "single")
    );
    // Reserved expansion keeps percent-escapes as they are.
    assert_eq!(
        peer.ask(&read(3, "file:///dir%20x/y?z#f")),
        file(&peer, 3, "file:///dir%20x/y?z#f", "dir%20x/y?z#f")
    );
    // A static resource is matched before any template.
    assert_eq!(
        peer.ask(&read(4, "file:///etc/fixed.txt")),
        read_result(
            &peer,
            4,
            json!([{ "uri": "file:///etc/fixed.txt", "text": "static wins" }])
        )
    );
    // Nothing after the prefix: the variable must not be empty.
    assert_eq!(peer.ask(&read(5, "file:///")), not_found(5, "file:///"));
    // A simple variable stops at a slash.
    assert_eq!(
        peer.ask(&read(6, "db://tables/users")),
        read_result(
            &peer,
            6,
            json!([{ "uri": "db://tables/users", "text": "table=users" }])
        )
    );
    assert_eq!(
        peer.ask(&read(7, "db://tables/users/rows")),
        not_found(7, "db://tables/users/rows")
    );
    assert_eq!(
        peer.ask(&read(8, "x://one-two")),
        read_result(
            &peer,
            8,
            json!([{ "uri": "x://one-two", "text": r#"{"a":"one","b":"two"}"# }])
        )
    );
    // A handler's error is passed through with the request id.
    assert_eq!(
        peer.ask(&read("e", "err://disk")),
        error("e", -32603, "internal error: cannot read disk")
    );
    assert_eq!(
        peer.ask(&request(9, "resources/templates/list", json!({})))["result"]["resourceTemplates"],
        json!([
            { "uriTemplate": "file:///{+path}", "name": "files" },
            { "uriTemplate": "db://tables/{name}", "name": "tables" },
            { "uriTemplate": "x://{a}-{b}", "name": "pair" },
            { "uriTemplate": "err://{what}", "name": "errors" }
        ])
    );
    peer.finish_quietly();
}

#[test]
fn resources_added_and_removed_while_serving() {
    let server = Server::builder("dynamic-resources", "1.0.0")
        .enable_resources()
        .build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&request(1, "resources/list", json!({}))),
        peer.result(
            1,
            json!({ "resources": [], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    assert_eq!(peer.ask(&read(2, "dyn://a")), not_found(2, "dyn://a"));
    server.add_resource(Resource::new("dyn://a", "a"), |_ctx, req| {
        Ok(ReadResourceResult::new(vec![ResourceContents::text(
            &req.uri, "A",
        )]))
    });
    server.add_resource_template(ResourceTemplate::new("dyn://t/{n}", "t"), |_ctx, req| {
        Ok(ReadResourceResult::new(vec![ResourceContents::text(
            &req.uri,
            req.variables["n"].clone(),
        )]))
    });
    assert_eq!(
        peer.ask(&request(3, "resources/list", json!({}))),
        peer.result(
            3,
            json!({ "resources": [{ "uri": "dyn://a", "name": "a" }], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    assert_eq!(
        peer.ask(&read(4, "dyn://a")),
        read_result(&peer, 4, json!([{ "uri": "dyn://a", "text": "A" }]))
    );
    assert_eq!(
        peer.ask(&read(5, "dyn://t/7")),
        read_result(&peer, 5, json!([{ "uri": "dyn://t/7", "text": "7" }]))
    );
    assert!(server.remove_resource("dyn://a"));
    assert!(server.remove_resource_template("dyn://t/{n}"));
    assert_eq!(peer.ask(&read(6, "dyn://a")), not_found(6, "dyn://a"));
    assert_eq!(peer.ask(&read(7, "dyn://t/7")), not_found(7, "dyn://t/7"));
    assert_eq!(
        peer.ask(&request(8, "resources/templates/list", json!({}))),
        peer.result(
            8,
            json!({ "resourceTemplates": [], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    peer.finish_quietly();
}

#[test]
fn resources_list_pagination() {
    let mut builder = Server::builder("paged-resources", "1.0.0").page_size(3);
    for n in 1..=4 {
        builder = builder.inline_resource(
            Resource::new(format!("p://{n}"), format!("r{n}")),
            |_ctx, req| {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    &req.uri, "x",
                )]))
            },
        );
    }
    let server = builder.build();
    let mut peer = Peer::start(&server);
    let page1 = peer.ask(&request(1, "resources/list", json!({})));
    let cursor = page1["result"]["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    assert_eq!(
        page1,
        peer.result(
            1,
            json!({
                "resources": [
                    { "uri": "p://1", "name": "r1" },
                    { "uri": "p://2", "name": "r2" },
                    { "uri": "p://3", "name": "r3" }
                ],
                "nextCursor": cursor,
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    assert_eq!(
        peer.ask(&request(2, "resources/list", json!({ "cursor": cursor }))),
        peer.result(
            2,
            json!({ "resources": [{ "uri": "p://4", "name": "r4" }], "ttlMs": 0, "cacheScope": "private" })
        )
    );
    assert_eq!(
        peer.ask(&request(3, "resources/list", json!({ "cursor": "nope" }))),
        error(3, -32602, "invalid params: invalid cursor: \"nope\"")
    );
    peer.finish_quietly();
}
