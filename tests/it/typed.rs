//! Schemas derived from Rust types (feature `schemars`): a structured
//! tool's input and output schemas and its `structuredContent`, a prompt
//! whose arguments are a struct, an elicitation form built from a struct
//! and read back into it, and the client's `call_tool_as`.

use std::collections::BTreeMap;

use mcp_stdio::types::{
    ElicitRequestFormParams, ElicitRequestParams, ElicitRequestedSchema, ElicitResult,
    GetPromptResult, InputRequest, InputRequiredResult, Prompt, PromptMessage, Role, Tool,
};
use mcp_stdio::{Client, Elicited, Outcome, Server, Transport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::support::{Peer, call, request};

/// Greets someone.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
    /// How many times (once when absent).
    times: Option<u32>,
    /// Shout it.
    #[serde(rename = "loud", default)]
    shout: bool,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Greeting {
    /// The greeting.
    text: String,
    length: usize,
}

fn greet(args: Greet) -> Greeting {
    let mut text =
        vec![format!("Hello, {}!", args.name); args.times.unwrap_or(1) as usize].join(" ");
    if args.shout {
        text = text.to_uppercase();
    }
    Greeting {
        length: text.len(),
        text,
    }
}

/// Serializing it fails: a map whose keys are not strings.
#[derive(Serialize, JsonSchema)]
struct Unserializable {
    map: BTreeMap<Vec<u8>, u8>,
}

fn server() -> Server {
    Server::builder("typed", "1.0.0")
        .structured_tool(
            Tool::new("greet", "Greets someone."),
            |_ctx, args: Greet| Ok(greet(args)),
        )
        .structured_tool(
            Tool::new("broken", "Cannot serialize its result."),
            |_ctx, _: Value| {
                Ok(Unserializable {
                    map: [(vec![1], 1)].into(),
                })
            },
        )
        .build()
}

#[test]
fn tools_list_shows_the_derived_schemas() {
    let mut peer = Peer::start(&server());
    let resp = peer.ask(&request(1, "tools/list", json!({})));
    let greet = &resp["result"]["tools"][0];
    assert_eq!(greet["name"], "greet", "{resp}");
    assert_eq!(
        greet["inputSchema"],
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Greet",
            "description": "Greets someone.",
            "type": "object",
            "properties": {
                "name": { "description": "Who to greet.", "type": "string" },
                "times": {
                    "description": "How many times (once when absent).",
                    "type": ["integer", "null"],
                    "format": "uint32",
                    "minimum": 0
                },
                "loud": { "description": "Shout it.", "type": "boolean", "default": false }
            },
            "required": ["name"]
        })
    );
    assert_eq!(
        greet["outputSchema"],
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Greeting",
            "type": "object",
            "properties": {
                "text": { "description": "The greeting.", "type": "string" },
                "length": { "type": "integer", "format": "uint", "minimum": 0 }
            },
            "required": ["text", "length"]
        })
    );
    peer.finish_quietly();
}

#[test]
fn a_structured_tool_answers_with_structured_content_and_the_same_json_as_text() {
    let mut peer = Peer::start(&server());
    let resp = peer.ask(&call(1, "greet", json!({ "name": "Ada", "loud": true })));
    let expected = peer.result(
        1,
        json!({
            "content": [{ "type": "text", "text": r#"{"length":11,"text":"HELLO, ADA!"}"# }],
            "structuredContent": { "text": "HELLO, ADA!", "length": 11 }
        }),
    );
    assert_eq!(resp, expected);

    // Arguments that do not fit are a tool error, before the handler runs.
    let resp = peer.ask(&call(2, "greet", json!({ "times": 2 })));
    assert_eq!(
        resp,
        crate::tools::wrong_arguments(&peer, 2, "the required field `name` is missing")
    );

    // A result that cannot be serialized is -32603, and the server goes on.
    let resp = peer.ask(&call(3, "broken", json!({})));
    assert_eq!(resp["error"]["code"], -32603, "{resp}");
    let message = resp["error"]["message"].as_str().unwrap();
    assert!(message.contains("could not be serialized"), "{message}");
    let resp = peer.ask(&call(4, "greet", json!({ "name": "Bo" })));
    assert_eq!(resp["result"]["structuredContent"]["text"], "Hello, Bo!");
    peer.finish_quietly();
}

/// Reviews code.
#[derive(Deserialize, JsonSchema)]
struct Review {
    /// The code to review.
    code: String,
    /// What to look at.
    focus: Option<String>,
}

#[test]
fn a_typed_prompt_lists_its_arguments_and_rejects_a_missing_one() {
    let server = Server::builder("typed", "1.0.0")
        .typed_prompt(
            Prompt::new("review", "Reviews code."),
            |_ctx, args: Review| {
                let focus = args.focus.unwrap_or_else(|| "anything".into());
                let text = format!("Review for {focus}: {}", args.code);
                Ok(GetPromptResult::new(vec![PromptMessage::text(
                    Role::User,
                    text,
                )]))
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&request(1, "prompts/list", json!({})));
    assert_eq!(
        resp["result"]["prompts"][0],
        json!({
            "name": "review",
            "description": "Reviews code.",
            "arguments": [
                { "name": "code", "description": "The code to review.", "required": true },
                { "name": "focus", "description": "What to look at.", "required": false }
            ]
        })
    );
    let resp = peer.ask(&request(
        2,
        "prompts/get",
        json!({ "name": "review", "arguments": { "focus": "names" } }),
    ));
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    assert_eq!(
        resp["error"]["message"],
        "invalid params: prompt review is missing required arguments: code"
    );
    let resp = peer.ask(&request(
        3,
        "prompts/get",
        json!({ "name": "review", "arguments": { "code": "x = 1" } }),
    ));
    assert_eq!(
        resp["result"]["messages"][0]["content"]["text"], "Review for anything: x = 1",
        "{resp}"
    );
    peer.finish_quietly();
}

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Contact {
    /// Your name.
    name: String,
    /// Your age, if you will say.
    age: Option<u8>,
    /// Keep me posted.
    subscribe: bool,
    /// Your favourite.
    colour: Colour,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Colour {
    Red,
    Green,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Welcome {
    contact: Option<Contact>,
    declined: bool,
}

#[allow(dead_code, reason = "only its schema is read")]
#[derive(Deserialize, JsonSchema)]
struct Address {
    street: String,
}

#[allow(dead_code, reason = "only its schema is read")]
#[derive(Deserialize, JsonSchema)]
struct WithAddress {
    name: String,
    address: Address,
}

fn form_server() -> Server {
    Server::builder("forms", "1.0.0")
        .structured_tool(
            Tool::new("welcome", "Asks who you are."),
            |ctx, _: Value| {
                Ok(match ctx.elicitation_as::<Contact>("contact")? {
                    Some(Elicited::Accepted(contact)) => Outcome::Complete(Welcome {
                        contact: Some(contact),
                        declined: false,
                    }),
                    Some(_) => Outcome::Complete(Welcome {
                        contact: None,
                        declined: true,
                    }),
                    None => {
                        let form = ElicitRequestedSchema::for_type::<Contact>()?;
                        let ask = ElicitRequestFormParams::new("Who are you?", form);
                        let ask = InputRequest::Elicit(ElicitRequestParams::Form(ask));
                        Outcome::InputRequired(InputRequiredResult::new(
                            [("contact".to_owned(), ask)].into(),
                        ))
                    }
                })
            },
        )
        .tool(
            Tool::new("nested", "Asks for a form no client can show."),
            |_ctx, _: Value| {
                let form = ElicitRequestedSchema::for_type::<WithAddress>()?;
                Ok(mcp_stdio::types::CallToolResult::text(format!("{form:?}")))
            },
        )
        .tool(
            Tool::new("plain", "Answers text only."),
            |_ctx, _: Value| Ok(mcp_stdio::types::CallToolResult::text("no structure")),
        )
        .build()
}

fn connect(
    server: &Server,
    answer: ElicitResult,
) -> (
    Client,
    std::thread::JoinHandle<Result<(), mcp_stdio::Error>>,
) {
    let (client_end, server_end) = Transport::memory();
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve(server_end))
    };
    let client = Client::builder()
        .on_elicitation(move |params| {
            let ElicitRequestParams::Form(form) = params else {
                panic!("a form was asked for: {params:?}");
            };
            assert_eq!(
                serde_json::to_value(&form.requested_schema).unwrap(),
                json!({
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "description": "Your name." },
                        "age": { "type": "integer", "description": "Your age, if you will say.", "minimum": 0, "maximum": 255 },
                        "subscribe": { "type": "boolean", "description": "Keep me posted." },
                        "colour": { "type": "string", "description": "Your favourite.", "enum": ["red", "green"] }
                    },
                    "required": ["colour", "name", "subscribe"]
                })
            );
            Ok(answer.clone())
        })
        .connect(client_end)
        .unwrap();
    (client, serving)
}

#[test]
fn an_elicitation_form_built_from_a_struct_comes_back_as_that_struct() {
    let ada = Contact {
        name: "Ada".into(),
        age: None,
        subscribe: true,
        colour: Colour::Green,
    };
    let server = form_server();
    let (client, serving) = connect(&server, ElicitResult::accept_fields(&ada).unwrap());
    let welcome: Welcome = client.call_tool_as("welcome", json!({})).unwrap();
    assert_eq!(
        welcome,
        Welcome {
            contact: Some(ada),
            declined: false
        }
    );
    client.close().unwrap();
    serving.join().unwrap().unwrap();

    let (client, serving) = connect(&server, ElicitResult::decline());
    let welcome: Welcome = client.call_tool_as("welcome", json!({})).unwrap();
    assert_eq!(
        welcome,
        Welcome {
            contact: None,
            declined: true
        }
    );

    // An answer that does not fit the struct is -32602 from the handler.
    client.close().unwrap();
    serving.join().unwrap().unwrap();
    let mut wrong = serde_json::Map::new();
    wrong.insert("name".into(), json!(7));
    let (client, serving) = connect(&server, ElicitResult::accept(wrong));
    let err = client
        .call_tool_as::<Welcome>("welcome", json!({}))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the answer to contact does not fit the form"),
        "{err}"
    );
    client.close().unwrap();
    serving.join().unwrap().unwrap();
}

#[test]
fn a_struct_a_form_cannot_express_is_an_error_before_anything_is_sent() {
    let mut peer = Peer::start(&form_server());
    let resp = peer.ask(&call(1, "nested", json!({})));
    assert_eq!(resp["error"]["code"], -32603, "{resp}");
    assert_eq!(
        resp["error"]["message"],
        "internal error: WithAddress cannot be asked for as an elicitation form: field address: a form field is a string, number, integer, boolean or enum (unknown field type \"object\")"
    );
    peer.finish_quietly();
}

#[test]
fn call_tool_as_says_what_is_missing() {
    let server = form_server();
    let (client, serving) = connect(&server, ElicitResult::cancel());
    let err = client
        .call_tool_as::<Welcome>("plain", json!({}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "protocol error: tool plain returned no structuredContent"
    );
    let err = client
        .call_tool_as::<Contact>("welcome", json!({}))
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "protocol error: the structuredContent of tool welcome does not fit the expected type"
        ),
        "{err}"
    );
    client.close().unwrap();
    serving.join().unwrap().unwrap();
}

#[test]
fn a_tool_error_reaches_call_tool_as_with_its_text() {
    let server = Server::builder("typed", "1.0.0")
        .tool(Tool::new("fails", "Fails."), |_ctx, _: Value| {
            Ok(mcp_stdio::types::CallToolResult::error_text("disk full"))
        })
        .build();
    let (client_end, server_end) = Transport::memory();
    let serving = std::thread::spawn(move || server.serve(server_end));
    let client = Client::connect(client_end).unwrap();
    let err = client
        .call_tool_as::<Welcome>("fails", json!({}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "protocol error: tool fails failed: disk full"
    );
    client.close().unwrap();
    serving.join().unwrap().unwrap();
}

/// The README's first server, whose schema the README shows.
mod readme {
    /// Greets someone by name.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Greet {
        /// Who to greet.
        pub name: String,
    }
}

/// The README's first server, as the README writes it.
fn readme_server() -> Server {
    let greet = Tool::new("greet", "Greets someone by name.");
    Server::builder("greeter", "1.0.0")
        .tool(greet, |_ctx, args: readme::Greet| {
            Ok(mcp_stdio::types::CallToolResult::text(format!(
                "Hello, {}!",
                args.name
            )))
        })
        .build()
}

/// The first ```json block of the README after `marker`.
fn readme_json_after(marker: &str) -> &'static str {
    let readme = include_str!("../../README.md");
    let after = readme
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("the README says {marker:?}"));
    after
        .split("```json\n")
        .nth(1)
        .unwrap()
        .split("\n```")
        .next()
        .unwrap()
}

#[test]
fn the_readme_shows_the_schema_its_server_advertises() {
    let shown = readme_json_after("The tool's `inputSchema` comes from `Greet` itself");
    let mut peer = Peer::start(&readme_server());
    let resp = peer.ask(&request(1, "tools/list", json!({})));
    let schema = &resp["result"]["tools"][0]["inputSchema"];
    assert_eq!(shown, serde_json::to_string(schema).unwrap());
    peer.finish_quietly();
}

#[test]
fn the_readme_shows_what_its_server_answers_to_wrong_arguments() {
    let shown =
        readme_json_after("Arguments that do not fit are answered before your handler runs");
    let mut peer = Peer::start(&readme_server());
    peer.send(&call(1, "greet", json!({ "name": 5 })));
    let line = peer.recv_line();
    // The README leaves out the server's `_meta`.
    let meta = serde_json::to_string(&peer.server_meta).unwrap();
    let expected = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#, shown);
    let expected = expected.replacen(
        r#""resultType":"complete"}"#,
        &format!(r#""resultType":"complete","_meta":{meta}}}"#),
        1,
    );
    assert_eq!(line, expected);
    peer.finish_quietly();
}
