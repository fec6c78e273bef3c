//! FIXTURES.md section 8 (and part A's `ask`): tools and a prompt that need
//! input from the client, as multi round-trip requests. Each handler looks
//! at the retry's answers (`ctx.elicitation(key)` and friends) and its own
//! sealed state (`ctx.request_state()`), and asks again for what is still
//! missing.

use std::collections::BTreeMap;

use mcp_stdio::types::{
    BooleanSchema, CallToolResult, CreateMessageRequestParams, ElicitAction,
    ElicitRequestFormParams, ElicitRequestParams, ElicitRequestedSchema, GetPromptResult,
    InputRequest, InputRequests, InputRequiredResult, PromptMessage, RequestParams, Role,
    SamplingMessage, SamplingMessageContentBlock, StringSchema, Tool,
};
use mcp_stdio::{Outcome, RequestContext, ServerBuilder, ToolOutcome};
use serde_json::{Value, json};

fn no_args(name: &str, description: &str) -> Tool {
    Tool::new(name, description).input_schema(json!({ "type": "object", "properties": {} }))
}

/// A form elicitation asking for one string field.
fn ask_text(message: &str, field: &str) -> InputRequest {
    let schema = ElicitRequestedSchema::default().property(field, StringSchema::default(), true);
    InputRequest::Elicit(ElicitRequestParams::Form(ElicitRequestFormParams::new(
        message, schema,
    )))
}

fn ask_bool(message: &str, field: &str) -> InputRequest {
    let schema = ElicitRequestedSchema::default().property(field, BooleanSchema::default(), true);
    InputRequest::Elicit(ElicitRequestParams::Form(ElicitRequestFormParams::new(
        message, schema,
    )))
}

fn ask_model(question: &str) -> InputRequest {
    let message = SamplingMessage::text(Role::User, question);
    InputRequest::CreateMessage(CreateMessageRequestParams::new(vec![message], 100))
}

fn ask_roots() -> InputRequest {
    InputRequest::ListRoots(Some(RequestParams::default()))
}

fn needs(requests: Vec<(&str, InputRequest)>, state: Option<String>) -> ToolOutcome {
    let requests: InputRequests = requests
        .into_iter()
        .map(|(k, r)| (k.to_owned(), r))
        .collect();
    let mut result = InputRequiredResult::new(requests);
    result.request_state = state;
    Outcome::InputRequired(result)
}

/// The accepted text field `field` of the elicitation answered under `key`.
fn answered(ctx: &RequestContext, key: &str, field: &str) -> Option<String> {
    let answer = ctx.elicitation(key)?;
    if answer.action != ElicitAction::Accept {
        return Some(String::new());
    }
    let value = answer.content?.get(field)?.clone();
    Some(match value {
        Value::String(s) => s,
        other => other.to_string(),
    })
}

fn sampled_text(ctx: &RequestContext, key: &str) -> Option<String> {
    let answer = ctx.sampling(key)?;
    let text = answer.content.blocks().iter().find_map(|b| match b {
        SamplingMessageContentBlock::Text(t) => Some(t.text.clone()),
        _ => None,
    });
    Some(text.unwrap_or_default())
}

pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .inline_tool(
            no_args("ask", "Asks the user for their name, then greets them."),
            |ctx, _: Value| match answered(ctx, "name", "name") {
                Some(name) => Ok(CallToolResult::text(format!("Nice to meet you, {name}!")).into()),
                None => Ok(needs(
                    vec![("name", ask_text("What is your name?", "name"))],
                    None,
                )),
            },
        )
        .inline_tool(
            no_args(
                "test_input_required_result_elicitation",
                "Elicits the user's name (MRTR).",
            ),
            |ctx, _: Value| match answered(ctx, "user_name", "name") {
                Some(name) => Ok(CallToolResult::text(format!("Hello, {name}!")).into()),
                None => Ok(needs(
                    vec![("user_name", ask_text("What is your name?", "name"))],
                    None,
                )),
            },
        )
        .inline_tool(
            no_args(
                "test_input_required_result_sampling",
                "Asks the client's model a question (MRTR).",
            ),
            |ctx, _: Value| match sampled_text(ctx, "capital_question") {
                Some(answer) => {
                    Ok(CallToolResult::text(format!("The model says: {answer}")).into())
                }
                None => Ok(needs(
                    vec![(
                        "capital_question",
                        ask_model("What is the capital of France?"),
                    )],
                    None,
                )),
            },
        )
        .inline_tool(
            no_args(
                "test_input_required_result_list_roots",
                "Lists the client's roots (MRTR).",
            ),
            |ctx, _: Value| match ctx.roots("client_roots") {
                Some(roots) => {
                    let uris: Vec<String> = roots.roots.iter().map(|r| r.uri.clone()).collect();
                    Ok(CallToolResult::text(format!("Roots: {}", uris.join(", "))).into())
                }
                None => Ok(needs(vec![("client_roots", ask_roots())], None)),
            },
        )
        .inline_tool(
            no_args(
                "test_input_required_result_request_state",
                "Asks for confirmation and keeps state (MRTR).",
            ),
            |ctx, _: Value| match (ctx.request_state(), ctx.elicitation("confirm")) {
                (Some("confirm-pending"), Some(_)) => {
                    Ok(CallToolResult::text("state-ok: confirmed").into())
                }
                _ => Ok(needs(
                    vec![("confirm", ask_bool("Proceed?", "ok"))],
                    Some("confirm-pending".into()),
                )),
            },
        )
        .inline_tool(
            no_args(
                "test_input_required_result_multiple_inputs",
                "Asks for three inputs at once (MRTR).",
            ),
            |ctx, _: Value| {
                let name = answered(ctx, "user_name", "name");
                let answer = sampled_text(ctx, "capital_question");
                let roots = ctx.roots("client_roots");
                match (ctx.request_state(), name, answer, roots) {
                    (Some("all-three"), Some(name), Some(answer), Some(roots)) => {
                        Ok(CallToolResult::text(format!(
                            "name {name}, model {answer}, {} roots",
                            roots.roots.len()
                        ))
                        .into())
                    }
                    _ => Ok(needs(
                        vec![
                            ("user_name", ask_text("What is your name?", "name")),
                            (
                                "capital_question",
                                ask_model("What is the capital of France?"),
                            ),
                            ("client_roots", ask_roots()),
                        ],
                        Some("all-three".into()),
                    )),
                }
            },
        )
        .inline_tool(
            no_args(
                "test_input_required_result_multi_round",
                "Asks in two rounds, then answers (MRTR).",
            ),
            |ctx, _: Value| {
                let state = ctx.request_state().unwrap_or_default();
                if let Some(name) = state.strip_prefix("round-2:") {
                    // Any accepted answer completes round 3, whatever its
                    // field names, as in the conformance suite's reference
                    // server: its client answers `{"color": "blue"}`.
                    if let Some(answer) = ctx.elicitation("step2") {
                        let colour = match (&answer.content, answered(ctx, "step2", "colour")) {
                            (_, Some(colour)) => colour,
                            (Some(content), None) => Value::from(content.clone()).to_string(),
                            (None, None) => String::new(),
                        };
                        return Ok(CallToolResult::text(format!("{name} likes {colour}")).into());
                    }
                    return Ok(needs(
                        vec![("step2", ask_text("Favourite colour?", "colour"))],
                        Some(state.to_owned()),
                    ));
                }
                match (state, answered(ctx, "step1", "name")) {
                    ("round-1", Some(name)) => Ok(needs(
                        vec![("step2", ask_text("Favourite colour?", "colour"))],
                        Some(format!("round-2:{name}")),
                    )),
                    _ => Ok(needs(
                        vec![("step1", ask_text("What is your name?", "name"))],
                        Some("round-1".into()),
                    )),
                }
            },
        )
        .inline_tool(
            no_args(
                "test_input_required_result_tampered_state",
                "Signed state: a tampered retry is refused (MRTR).",
            ),
            |ctx, _: Value| match (ctx.request_state(), ctx.elicitation("confirm")) {
                (Some("signed"), Some(_)) => Ok(CallToolResult::text("state verified").into()),
                _ => Ok(needs(
                    vec![("confirm", ask_bool("Proceed?", "ok"))],
                    Some("signed".into()),
                )),
            },
        )
        .inline_tool(
            no_args(
                "test_input_required_result_capabilities",
                "Asks only for what the request's client capabilities allow (MRTR).",
            ),
            |ctx, _: Value| {
                if ctx.sampling("capital_question").is_some()
                    || ctx.elicitation("user_name").is_some()
                {
                    return Ok(CallToolResult::text("answered").into());
                }
                let mut requests = Vec::new();
                if ctx.meta().has_client_capability("sampling") {
                    requests.push((
                        "capital_question",
                        ask_model("What is the capital of France?"),
                    ));
                }
                if ctx.meta().has_client_capability("elicitation") {
                    requests.push(("user_name", ask_text("What is your name?", "name")));
                }
                if requests.is_empty() {
                    ctx.require_client_capability("sampling")?;
                }
                Ok(needs(requests, None))
            },
        )
        .prompt(
            mcp_stdio::types::Prompt::new(
                "test_input_required_result_prompt",
                "A prompt that needs context (MRTR).",
            ),
            |ctx, _args: BTreeMap<String, String>| match answered(ctx, "user_context", "context") {
                Some(context) => Ok(Outcome::Complete(GetPromptResult::new(vec![
                    PromptMessage::text(Role::User, format!("Context: {context}")),
                ]))),
                None => {
                    let requests: InputRequests = [(
                        "user_context".to_owned(),
                        ask_text("What context should the prompt use?", "context"),
                    )]
                    .into();
                    Ok(Outcome::InputRequired(InputRequiredResult::new(requests)))
                }
            },
        )
}
