//! `prompts/list`, `prompts/get` (spec 2026-07-28 server/prompts) and
//! `completion/complete` (server/utilities/completion).

use std::collections::BTreeMap;

use mcp_stdio::types::{
    CompleteRequestParams, CompleteResult, CompletionReference, GetPromptResult, Prompt,
    PromptArgument, PromptMessage, Role,
};
use mcp_stdio::{ErrorObject, Server};
use serde_json::{Value, json};

use crate::support::{Peer, error, request};

use crate::support::PNG;

fn get(id: impl Into<Value>, name: &str, arguments: Value) -> Value {
    request(
        id,
        "prompts/get",
        json!({ "name": name, "arguments": arguments }),
    )
}

fn user_text(text: &str) -> Value {
    json!({ "role": "user", "content": { "type": "text", "text": text } })
}

fn complete(id: impl Into<Value>, reference: Value, name: &str, value: &str) -> Value {
    request(
        id,
        "completion/complete",
        json!({ "ref": reference, "argument": { "name": name, "value": value } }),
    )
}

#[test]
fn list_on_the_everything_server() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(1, "prompts/list", json!({})));
    assert_eq!(
        resp,
        peer.result(
            1,
            json!({
                "prompts": [
                    {
                        "name": "greet",
                        "description": "Greets someone by name.",
                        "arguments": [{ "name": "name", "description": "Who to greet.", "required": true }]
                    },
                    {
                        "name": "test_simple_prompt",
                        "description": "A prompt without arguments."
                    },
                    {
                        "name": "test_prompt_with_arguments",
                        "description": "A prompt with two required arguments.",
                        "arguments": [
                            { "name": "arg1", "description": "First argument.", "required": true },
                            { "name": "arg2", "description": "Second argument.", "required": true }
                        ]
                    },
                    {
                        "name": "test_prompt_with_embedded_resource",
                        "description": "A prompt that embeds a resource.",
                        "arguments": [{ "name": "resourceUri", "description": "The URI to embed.", "required": true }]
                    },
                    {
                        "name": "test_prompt_with_image",
                        "description": "A prompt with an image."
                    },
                    {
                        "name": "test_input_required_result_prompt",
                        "description": "A prompt that needs context (MRTR)."
                    }
                ],
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    for prompt in resp["result"]["prompts"].as_array().unwrap() {
        assert!(prompt["name"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(
            prompt["description"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        );
    }
    peer.finish_quietly();
}

#[test]
fn get_greet() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&get(1, "greet", json!({ "name": "Ada" }))),
        peer.result(
            1,
            json!({ "messages": [user_text("Please greet Ada warmly.")] })
        )
    );
    // Exact bytes on the wire.
    peer.send(&get("g", "greet", json!({ "name": "Bob" })));
    assert_eq!(
        peer.recv_line(),
        format!(
            r#"{{"jsonrpc":"2.0","id":"g","result":{{"messages":[{{"role":"user","content":{{"type":"text","text":"Please greet Bob warmly."}}}}],"resultType":"complete","_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"mcp-stdio-everything","version":"{}"}}}}}}}}"#,
            env!("CARGO_PKG_VERSION")
        )
    );
    // Extra arguments are passed along and ignored by this prompt.
    assert_eq!(
        peer.ask(&get(2, "greet", json!({ "name": "Cy", "mood": "happy" }))),
        peer.result(
            2,
            json!({ "messages": [user_text("Please greet Cy warmly.")] })
        )
    );
    peer.finish_quietly();
}

#[test]
fn get_conformance_prompts() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    // No arguments: omitted, `{}` and `null` all work.
    let simple = peer.result(
        1,
        json!({ "messages": [user_text("This is a simple prompt for testing.")] }),
    );
    assert_eq!(
        peer.ask(&request(
            1,
            "prompts/get",
            json!({ "name": "test_simple_prompt" })
        )),
        simple
    );
    let mut simple2 = simple.clone();
    simple2["id"] = json!(2);
    assert_eq!(peer.ask(&get(2, "test_simple_prompt", json!({}))), simple2);
    let mut simple3 = simple.clone();
    simple3["id"] = json!(3);
    assert_eq!(
        peer.ask(&get(3, "test_simple_prompt", Value::Null)),
        simple3
    );

    let resp = peer.ask(&get(
        4,
        "test_prompt_with_arguments",
        json!({ "arg1": "testValue1", "arg2": "testValue2" }),
    ));
    assert_eq!(
        resp,
        peer.result(
            4,
            json!({ "messages": [user_text("Prompt with arguments: arg1='testValue1', arg2='testValue2'")] })
        )
    );
    let serialized = resp["result"]["messages"].to_string();
    assert!(serialized.contains("testValue1") && serialized.contains("testValue2"));

    assert_eq!(
        peer.ask(&get(
            5,
            "test_prompt_with_embedded_resource",
            json!({ "resourceUri": "test://example-resource" })
        )),
        peer.result(
            5,
            json!({
                "messages": [
                    {
                        "role": "user",
                        "content": {
                            "type": "resource",
                            "resource": {
                                "uri": "test://example-resource",
                                "mimeType": "text/plain",
                                "text": "Embedded resource content for testing."
                            }
                        }
                    },
                    user_text("Please process the embedded resource above.")
                ]
            })
        )
    );

    assert_eq!(
        peer.ask(&request(6, "prompts/get", json!({ "name": "test_prompt_with_image" }))),
        peer.result(
            6,
            json!({
                "messages": [
                    { "role": "user", "content": { "type": "image", "data": PNG, "mimeType": "image/png" } },
                    user_text("Please describe the image above.")
                ]
            })
        )
    );
    peer.finish_quietly();
}

#[test]
fn missing_required_argument_is_named() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&get(1, "greet", json!({}))),
        error(
            1,
            -32602,
            "invalid params: prompt greet is missing required arguments: name"
        )
    );
    assert_eq!(
        peer.ask(&request(2, "prompts/get", json!({ "name": "greet" }))),
        error(
            2,
            -32602,
            "invalid params: prompt greet is missing required arguments: name"
        )
    );
    assert_eq!(
        peer.ask(&get(
            3,
            "test_prompt_with_arguments",
            json!({ "arg2": "x" })
        )),
        error(
            3,
            -32602,
            "invalid params: prompt test_prompt_with_arguments is missing required arguments: arg1"
        )
    );
    assert_eq!(
        peer.ask(&get("4", "test_prompt_with_arguments", json!({}))),
        error(
            "4",
            -32602,
            "invalid params: prompt test_prompt_with_arguments is missing required arguments: arg1, arg2"
        )
    );
    // Names are exact: a differently cased argument does not count.
    assert_eq!(
        peer.ask(&get(5, "greet", json!({ "Name": "Ada" }))),
        error(
            5,
            -32602,
            "invalid params: prompt greet is missing required arguments: name"
        )
    );
    // An empty string is a value.
    assert_eq!(
        peer.ask(&get(6, "greet", json!({ "name": "" }))),
        peer.result(
            6,
            json!({ "messages": [user_text("Please greet  warmly.")] })
        )
    );
    peer.finish_quietly();
}

fn argument_error(arguments: &str) -> String {
    let e = serde_json::from_str::<BTreeMap<String, String>>(arguments).unwrap_err();
    format!("invalid params: prompt arguments must be an object of strings: {e}")
}

#[test]
fn argument_values_must_be_strings() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&get(1, "greet", json!({ "name": 5 })));
    assert_eq!(resp, error(1, -32602, &argument_error(r#"{"name":5}"#)));
    assert_eq!(
        resp["error"]["message"],
        "invalid params: prompt arguments must be an object of strings: invalid type: integer `5`, expected a string at line 1 column 9"
    );
    for (id, args) in [
        (2, json!({ "name": null })),
        (3, json!({ "name": ["Ada"] })),
        (4, json!({ "name": { "first": "Ada" } })),
        (5, json!({ "name": true })),
    ] {
        let text = serde_json::to_string(&args).unwrap();
        assert_eq!(
            peer.ask(&get(id, "greet", args)),
            error(id, -32602, &argument_error(&text))
        );
    }
    // Arguments that are not an object at all.
    for (id, args) in [(6, json!(["Ada"])), (7, json!("Ada"))] {
        let text = serde_json::to_string(&args).unwrap();
        assert_eq!(
            peer.ask(&get(id, "greet", args)),
            error(id, -32602, &argument_error(&text))
        );
    }
    peer.finish_quietly();
}

#[test]
fn unknown_prompt_is_invalid_params() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&get(1, "no_such_prompt", json!({}))),
        error(1, -32602, "invalid params: unknown prompt: no_such_prompt")
    );
    assert_eq!(
        peer.ask(&request(2, "prompts/get", json!({}))),
        error(2, -32602, "invalid params: missing name")
    );
    assert_eq!(
        peer.ask(&request(3, "prompts/get", json!({ "name": 1 }))),
        error(3, -32602, "invalid params: name must be a string")
    );
    peer.finish_quietly();
}

#[test]
fn completion_for_a_prompt_argument() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let reference = json!({ "type": "ref/prompt", "name": "test_prompt_with_arguments" });
    let resp = peer.ask(&complete(1, reference.clone(), "arg1", "test"));
    assert_eq!(
        resp,
        peer.result(
            1,
            json!({ "completion": { "values": ["test", "testValue1", "testValue2"] } })
        )
    );
    assert!(resp["result"]["completion"]["values"].is_array());
    assert_eq!(
        peer.ask(&complete(2, reference.clone(), "arg1", "testV")),
        peer.result(
            2,
            json!({ "completion": { "values": ["testValue1", "testValue2"] } })
        )
    );
    assert_eq!(
        peer.ask(&complete(3, reference, "arg1", "zzz")),
        peer.result(3, json!({ "completion": { "values": [] } }))
    );
    assert_eq!(
        peer.ask(&complete(
            4,
            json!({ "type": "ref/prompt", "name": "greet" }),
            "name",
            "B"
        )),
        peer.result(4, json!({ "completion": { "values": ["Bob"] } }))
    );
    // A resource template reference, with context.
    assert_eq!(
        peer.ask(&request(
            5,
            "completion/complete",
            json!({
                "ref": { "type": "ref/resource", "uri": "test://template/{id}/data" },
                "argument": { "name": "id", "value": "1" },
                "context": { "arguments": { "other": "x" } }
            })
        )),
        peer.result(5, json!({ "completion": { "values": [] } }))
    );
    // References to what the server does not have are rejected before the
    // handler runs; a listed resource's own URI is a valid reference.
    assert_eq!(
        peer.ask(&complete(
            6,
            json!({ "type": "ref/prompt", "name": "nope" }),
            "x",
            ""
        )),
        error(6, -32602, "invalid params: unknown prompt: nope")
    );
    assert_eq!(
        peer.ask(&complete(
            7,
            json!({ "type": "ref/resource", "uri": "test://nope/{id}" }),
            "id",
            ""
        )),
        error(
            7,
            -32602,
            "invalid params: unknown resource template: test://nope/{id}"
        )
    );
    assert_eq!(
        peer.ask(&complete(
            8,
            json!({ "type": "ref/resource", "uri": "mem://counter" }),
            "x",
            ""
        )),
        peer.result(8, json!({ "completion": { "values": [] } }))
    );
    peer.finish_quietly();
}

/// serde's message for reading `params` as `CompleteRequestParams`, as the
/// server reports it.
fn completion_error(params: &Value) -> String {
    let text = serde_json::to_string(params).unwrap();
    let e = serde_json::from_str::<CompleteRequestParams>(&text).unwrap_err();
    format!("invalid params: {e}")
}

#[test]
fn malformed_completion_requests_are_invalid_params() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let cases = [
        // No argument.
        json!({ "ref": { "type": "ref/prompt", "name": "greet" } }),
        // No ref.
        json!({ "argument": { "name": "name", "value": "A" } }),
        // Unknown reference type.
        json!({ "ref": { "type": "ref/nope", "name": "greet" }, "argument": { "name": "name", "value": "A" } }),
        // The argument's value is not a string.
        json!({ "ref": { "type": "ref/prompt", "name": "greet" }, "argument": { "name": "name", "value": 1 } }),
        // The argument has no name.
        json!({ "ref": { "type": "ref/prompt", "name": "greet" }, "argument": { "value": "A" } }),
        // ref is not an object.
        json!({ "ref": "ref/prompt", "argument": { "name": "name", "value": "A" } }),
    ];
    for (n, params) in cases.into_iter().enumerate() {
        let id = n as i64 + 1;
        let msg = request(id, "completion/complete", params);
        let expected = error(id, -32602, &completion_error(&msg["params"]));
        assert_eq!(peer.ask(&msg), expected, "case {n}");
    }
    // One message spelled out.
    let resp = peer.ask(&request(
        10,
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "greet" } }),
    ));
    assert_eq!(resp["error"]["code"], json!(-32602));
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid params: missing field `argument`"),
        "{resp}"
    );
    // Still serving.
    assert_eq!(
        peer.ask(&complete(
            11,
            json!({ "type": "ref/prompt", "name": "greet" }),
            "name",
            "C"
        )),
        peer.result(11, json!({ "completion": { "values": ["Carol"] } }))
    );
    peer.finish_quietly();
}

#[test]
fn custom_prompts_and_completion() {
    let server = Server::builder("custom-prompts", "1.0.0")
        .prompt(
            Prompt::new("optional", "Has an optional argument.").argument(PromptArgument::new(
                "who",
                "Optional.",
                false,
            )),
            |ctx, args| {
                let who = args.get("who").map_or("nobody", String::as_str);
                let mut result = GetPromptResult::new(vec![
                    PromptMessage::text(Role::User, format!("hello {who}")),
                    PromptMessage::text(Role::Assistant, format!("id {}", ctx.id())),
                ]);
                result.description = Some("A described result.".into());
                Ok(result)
            },
        )
        .prompt(
            Prompt::new("broken", "Fails."),
            |_ctx, _| -> Result<GetPromptResult, ErrorObject> {
                Err(ErrorObject::internal_error("prompt backend down"))
            },
        )
        .completion(|_ctx, params| match params.reference {
            CompletionReference::Prompt(p) if p.name == "optional" => {
                let mut result = CompleteResult::new(vec![format!("{}!", params.argument.value)]);
                result.completion.total = Some(10);
                result.completion.has_more = Some(true);
                Ok(result)
            }
            _ => Err(ErrorObject::invalid_params(
                "no completions for that reference",
            )),
        })
        .build();
    let mut peer = Peer::start(&server);
    assert_eq!(
        peer.ask(&request(1, "prompts/get", json!({ "name": "optional" }))),
        peer.result(
            1,
            json!({
                "description": "A described result.",
                "messages": [
                    user_text("hello nobody"),
                    { "role": "assistant", "content": { "type": "text", "text": "id 1" } }
                ]
            })
        )
    );
    assert_eq!(
        peer.ask(&get(2, "optional", json!({ "who": "you" })))["result"]["messages"][0],
        user_text("hello you")
    );
    assert_eq!(
        peer.ask(&get(3, "broken", json!({}))),
        error(3, -32603, "internal error: prompt backend down")
    );
    assert_eq!(
        peer.ask(&complete(
            4,
            json!({ "type": "ref/prompt", "name": "optional" }),
            "who",
            "a"
        )),
        peer.result(
            4,
            json!({ "completion": { "values": ["a!"], "total": 10, "hasMore": true } })
        )
    );
    assert_eq!(
        peer.ask(&complete(
            5,
            json!({ "type": "ref/prompt", "name": "other" }),
            "x",
            ""
        )),
        error(5, -32602, "invalid params: unknown prompt: other"),
        "an unknown prompt is rejected before the handler runs"
    );
    // A registered prompt reaches the handler, whose own error is sent.
    assert_eq!(
        peer.ask(&complete(
            6,
            json!({ "type": "ref/prompt", "name": "broken" }),
            "x",
            ""
        )),
        error(
            6,
            -32602,
            "invalid params: no completions for that reference"
        )
    );
    // Without resources, every resource reference is unknown.
    assert_eq!(
        peer.ask(&complete(
            7,
            json!({ "type": "ref/resource", "uri": "mem://{x}" }),
            "x",
            ""
        )),
        error(
            7,
            -32602,
            "invalid params: unknown resource template: mem://{x}"
        )
    );
    assert_eq!(
        peer.ask(&request(8, "server/discover", json!({})))["result"]["capabilities"],
        json!({ "prompts": { "listChanged": true }, "completions": {}, "logging": {} })
    );
    peer.finish_quietly();
}
