//! Part B of FIXTURES.md: the fixtures of the official conformance suite
//! (server scenarios at revision 2026-07-28).

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_stdio::ServerBuilder;
use mcp_stdio::types::{
    BlobResourceContents, CallToolResult, CompleteResult, CompletionReference, ContentBlock,
    GetPromptResult, LoggingLevel, Prompt, PromptArgument, PromptMessage, ReadResourceResult,
    Resource, ResourceTemplate, Role, Tool,
};
use serde_json::{Value, json};

use crate::fixtures::text_contents;

// The MRTR fixtures live beside this file; every includer of this module
// gets them with it.
#[path = "mrtr.rs"]
mod mrtr;
// So do the 2025-era tools.
#[path = "era2025.rs"]
mod era2025;

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A WAV file of eight silent samples.
const WAV: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

fn tool(name: &str, description: &str) -> Tool {
    Tool::new(name, description).input_schema(no_args())
}

fn png_blob(uri: &str) -> BlobResourceContents {
    let mut blob = BlobResourceContents::new(uri, PNG);
    blob.mime_type = Some("image/png".into());
    blob
}

pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let builder = era2025::register(prompts(resources(tools(builder))));
    // The MRTR fixtures come last in every list.
    mrtr::register(builder).completion(|_ctx, params| {
        let candidates: &[&str] = match &params.reference {
            CompletionReference::Prompt(p) if p.name == "test_prompt_with_arguments" => {
                &["test", "testValue1", "testValue2"]
            }
            CompletionReference::Prompt(p) if p.name == "greet" => &["Alice", "Bob", "Carol"],
            _ => &[],
        };
        let prefix = params.argument.value.as_str();
        let values = candidates
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| c.to_string())
            .collect();
        Ok(CompleteResult::new(values))
    })
}

fn tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .inline_tool(
            tool("test_simple_text", "Returns a simple text response."),
            |_ctx, _: Value| {
                Ok(CallToolResult::text(
                    "This is a simple text response for testing.",
                ))
            },
        )
        .inline_tool(
            tool("test_image_content", "Returns a 1x1 PNG image."),
            |_ctx, _: Value| {
                Ok(CallToolResult::new(vec![ContentBlock::image(
                    PNG,
                    "image/png",
                )]))
            },
        )
        .inline_tool(
            tool("test_audio_content", "Returns a short WAV clip."),
            |_ctx, _: Value| {
                Ok(CallToolResult::new(vec![ContentBlock::audio(
                    WAV,
                    "audio/wav",
                )]))
            },
        )
        .inline_tool(
            tool(
                "test_embedded_resource",
                "Returns an embedded text resource.",
            ),
            |_ctx, _: Value| {
                Ok(CallToolResult::new(vec![ContentBlock::resource(
                    text_contents(
                        "test://embedded-resource",
                        "text/plain",
                        "This is an embedded resource content.",
                    ),
                )]))
            },
        )
        .inline_tool(
            tool(
                "test_multiple_content_types",
                "Returns text, an image and a resource.",
            ),
            |_ctx, _: Value| {
                Ok(CallToolResult::new(vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(PNG, "image/png"),
                    ContentBlock::resource(text_contents(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    )),
                ]))
            },
        )
        .inline_tool(
            tool("test_error_handling", "Fails as a tool (isError: true)."),
            |_ctx, _: Value| {
                Ok(CallToolResult::error_text(
                    "This tool intentionally returns an error for testing",
                ))
            },
        )
        .tool(
            tool(
                "test_tool_with_progress",
                "Reports progress 0, 50, 100 of 100.",
            ),
            |ctx, _: Value| {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 && ctx.wait_cancelled(Duration::from_millis(50)) {
                        break;
                    }
                    ctx.progress(step, Some(100.0), Some(&format!("{step}%")));
                }
                Ok(CallToolResult::text("Progress complete."))
            },
        )
        .inline_tool(
            tool(
                "test_missing_capability",
                "Needs the client's sampling capability.",
            ),
            |ctx, _: Value| {
                ctx.require_client_capability("sampling")?;
                Ok(CallToolResult::text("The request declared sampling."))
            },
        )
        .inline_tool(
            tool(
                "test_streaming_elicitation",
                "Answers without ever sending a request to the client.",
            ),
            |_ctx, _: Value| {
                Ok(CallToolResult::text(
                    "No server-to-client request was sent.",
                ))
            },
        )
        .inline_tool(
            tool(
                "test_logging_tool",
                "Logs three info messages (only if the request set a log level).",
            ),
            |ctx, _: Value| {
                for n in 1..=3 {
                    ctx.log(
                        LoggingLevel::Info,
                        Some("test"),
                        json!(format!("log message {n}")),
                    );
                }
                Ok(CallToolResult::text(
                    "Logged (where the request asked for logs).",
                ))
            },
        )
        .inline_tool(
            tool(
                "test_trigger_tool_change",
                "Publishes a tool-list change to the listening streams.",
            ),
            |ctx, _: Value| {
                ctx.notifier().tools_list_changed();
                Ok(CallToolResult::text("Tool list change published."))
            },
        )
        .inline_tool(
            tool(
                "test_trigger_prompt_change",
                "Publishes a prompt-list change to the listening streams.",
            ),
            |ctx, _: Value| {
                ctx.notifier().prompts_list_changed();
                Ok(CallToolResult::text("Prompt list change published."))
            },
        )
        .inline_tool(
            Tool::new(
                "json_schema_2020_12_tool",
                "Takes a JSON Schema 2020-12 input.",
            )
            .input_schema(json_schema_2020_12()),
            |_ctx, args: Value| Ok(CallToolResult::text(format!("received {args}"))),
        )
}

fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "address",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" }
                },
                "required": ["street", "city"]
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } } },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}

fn resources(builder: ServerBuilder) -> ServerBuilder {
    builder
        .inline_resource(
            Resource::new("test://static-text", "static-text")
                .description("A static text resource.")
                .mime_type("text/plain"),
            |_ctx, req| {
                Ok(ReadResourceResult::new(vec![text_contents(
                    &req.uri,
                    "text/plain",
                    "This is the content of the static text resource.",
                )]))
            },
        )
        .inline_resource(
            Resource::new("test://static-binary", "static-binary")
                .description("A static binary resource (a 1x1 PNG).")
                .mime_type("image/png"),
            |_ctx, req| Ok(ReadResourceResult::new(vec![png_blob(&req.uri).into()])),
        )
        .inline_resource(
            Resource::new("test://watched-resource", "watched-resource")
                .description("A resource for subscription scenarios.")
                .mime_type("text/plain"),
            |_ctx, req| {
                Ok(ReadResourceResult::new(vec![text_contents(
                    &req.uri,
                    "text/plain",
                    "Watched resource content.",
                )]))
            },
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .description("Data by id.")
                .mime_type("application/json"),
            |_ctx, req| {
                let id = req.variables.get("id").map_or("", String::as_str);
                let text =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                Ok(ReadResourceResult::new(vec![text_contents(
                    &req.uri,
                    "application/json",
                    text.to_string(),
                )]))
            },
        )
}

fn prompts(builder: ServerBuilder) -> ServerBuilder {
    builder
        .prompt(
            Prompt::new("test_simple_prompt", "A prompt without arguments."),
            |_ctx, _| {
                Ok(GetPromptResult::new(vec![PromptMessage::text(
                    Role::User,
                    "This is a simple prompt for testing.",
                )]))
            },
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_arguments",
                "A prompt with two required arguments.",
            )
            .argument(PromptArgument::new("arg1", "First argument.", true))
            .argument(PromptArgument::new("arg2", "Second argument.", true)),
            |_ctx, args: BTreeMap<String, String>| {
                let arg = |name: &str| args.get(name).cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![PromptMessage::text(
                    Role::User,
                    format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        arg("arg1"),
                        arg("arg2")
                    ),
                )]))
            },
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_embedded_resource",
                "A prompt that embeds a resource.",
            )
            .argument(PromptArgument::new(
                "resourceUri",
                "The URI to embed.",
                true,
            )),
            |_ctx, args| {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![
                    PromptMessage {
                        role: Role::User,
                        content: ContentBlock::resource(text_contents(
                            &uri,
                            "text/plain",
                            "Embedded resource content for testing.",
                        )),
                    },
                    PromptMessage::text(Role::User, "Please process the embedded resource above."),
                ]))
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_image", "A prompt with an image."),
            |_ctx, _| {
                Ok(GetPromptResult::new(vec![
                    PromptMessage {
                        role: Role::User,
                        content: ContentBlock::image(PNG, "image/png"),
                    },
                    PromptMessage::text(Role::User, "Please describe the image above."),
                ]))
            },
        )
}
