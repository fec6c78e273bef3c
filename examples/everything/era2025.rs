//! The 2025-era tools of the conformance suite (FIXTURES.md part B, "2025-era
//! tools"): what its 2025-11-25 scenarios call over the stateful wire. A
//! legacy client's log level comes from `logging/setLevel`, and the
//! elicitation and sampling are multi round-trip requests, which the
//! server turns into requests of its own for a legacy client (its answers
//! come back as `ctx.elicitation(key)` and `ctx.sampling(key)`): the
//! handlers are written once, for both eras.

use std::time::Duration;

use mcp_stdio::types::{
    CallToolResult, CreateMessageRequestParams, ElicitRequestFormParams, ElicitRequestParams,
    ElicitRequestedSchema, InputRequest, InputRequests, InputRequiredResult, LoggingLevel, Role,
    SamplingMessage, SamplingMessageContentBlock, Tool,
};
use mcp_stdio::{ErrorObject, Outcome, RequestContext, ServerBuilder, ToolOutcome};
use serde_json::{Value, json};

/// The key every tool here asks under.
const KEY: &str = "input";

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Tool {
    Tool::new(name, description).input_schema(json!({
        "type": "object", "properties": properties, "required": required,
    }))
}

/// A form elicitation with `schema`, a JSON Schema of flat fields.
fn elicit(message: &str, schema: Value) -> Result<ToolOutcome, ErrorObject> {
    let schema: ElicitRequestedSchema =
        serde_json::from_value(schema).map_err(ErrorObject::internal_error)?;
    let form = ElicitRequestFormParams::new(message, schema);
    Ok(needs(InputRequest::Elicit(ElicitRequestParams::Form(form))))
}

fn needs(request: InputRequest) -> ToolOutcome {
    let requests: InputRequests = [(KEY.to_owned(), request)].into_iter().collect();
    Outcome::InputRequired(InputRequiredResult::new(requests))
}

/// The result that reports an elicitation's answer after `prefix`, or
/// `None` before there is one.
fn elicited(ctx: &RequestContext, prefix: &str) -> Option<ToolOutcome> {
    let answer = ctx.elicitation(KEY)?;
    let action = serde_json::to_value(answer.action).unwrap_or_default();
    let content = answer.content.map(Value::from).unwrap_or(Value::Null);
    let text = format!("{prefix}: action={action}, content={content}");
    Some(CallToolResult::text(text).into())
}

fn string_arg(args: &Value, name: &str) -> Result<String, ErrorObject> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            ErrorObject::invalid_params(format!("argument '{name}' (a string) is missing"))
        })
}

pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            tool("test_tool_with_logging", "Logs three info messages, 50 ms apart.", json!({}), &[]),
            |ctx, _: Value| {
                let steps = ["Tool execution started", "Tool processing data", "Tool execution completed"];
                for (i, step) in steps.into_iter().enumerate() {
                    if i > 0 && ctx.wait_cancelled(Duration::from_millis(50)) {
                        break;
                    }
                    ctx.log(LoggingLevel::Info, Some("test"), json!(step));
                }
                Ok(CallToolResult::text("Logged three messages."))
            },
        )
        .inline_tool(
            tool(
                "test_sampling",
                "Asks the client's model to answer a prompt.",
                json!({ "prompt": { "type": "string", "description": "What to ask the model" } }),
                &["prompt"],
            ),
            |ctx, args: Value| {
                if let Some(answer) = ctx.sampling(KEY) {
                    let text = answer.content.blocks().iter().find_map(|b| match b {
                        SamplingMessageContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    });
                    let text = text.unwrap_or_default();
                    return Ok(CallToolResult::text(format!("LLM response: {text}")).into());
                }
                let prompt = string_arg(&args, "prompt")?;
                let message = SamplingMessage::text(Role::User, prompt);
                let params = CreateMessageRequestParams::new(vec![message], 100);
                Ok(needs(InputRequest::CreateMessage(params)))
            },
        )
        .inline_tool(
            tool(
                "test_elicitation",
                "Asks the user for a username and an email address.",
                json!({ "message": { "type": "string", "description": "What to tell the user" } }),
                &["message"],
            ),
            |ctx, args: Value| {
                if let Some(done) = elicited(ctx, "User response") {
                    return Ok(done);
                }
                elicit(
                    &string_arg(&args, "message")?,
                    json!({
                        "type": "object",
                        "properties": {
                            "username": { "type": "string", "description": "User's response" },
                            "email": { "type": "string", "description": "User's email address" },
                        },
                        "required": ["username", "email"],
                    }),
                )
            },
        )
        .inline_tool(
            tool(
                "test_elicitation_sep1034_defaults",
                "Asks for a form whose fields have defaults (SEP-1034).",
                json!({}),
                &[],
            ),
            |ctx, _: Value| match elicited(ctx, "Elicitation completed") {
                Some(done) => Ok(done),
                None => elicit(
                    "Please review your details",
                    json!({
                        "type": "object",
                        "properties": {
                            "name": { "type": "string", "default": "John Doe" },
                            "age": { "type": "integer", "default": 30 },
                            "score": { "type": "number", "default": 95.5 },
                            "status": {
                                "type": "string",
                                "enum": ["active", "inactive", "pending"],
                                "default": "active",
                            },
                            "verified": { "type": "boolean", "default": true },
                        },
                    }),
                ),
            },
        )
        .inline_tool(
            tool(
                "test_elicitation_sep1330_enums",
                "Asks for a form with every kind of enum (SEP-1330).",
                json!({}),
                &[],
            ),
            |ctx, _: Value| match elicited(ctx, "Elicitation completed") {
                Some(done) => Ok(done),
                None => elicit(
                    "Please choose",
                    json!({
                        "type": "object",
                        "properties": {
                            "untitledSingle": {
                                "type": "string",
                                "enum": ["option1", "option2", "option3"],
                            },
                            "titledSingle": {
                                "type": "string",
                                "oneOf": [
                                    { "const": "value1", "title": "First Option" },
                                    { "const": "value2", "title": "Second Option" },
                                    { "const": "value3", "title": "Third Option" },
                                ],
                            },
                            "legacyEnum": {
                                "type": "string",
                                "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"],
                            },
                            "untitledMulti": {
                                "type": "array",
                                "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
                            },
                            "titledMulti": {
                                "type": "array",
                                "items": {
                                    "anyOf": [
                                        { "const": "value1", "title": "First Choice" },
                                        { "const": "value2", "title": "Second Choice" },
                                        { "const": "value3", "title": "Third Choice" },
                                    ],
                                },
                            },
                        },
                    }),
                ),
            },
        )
}
