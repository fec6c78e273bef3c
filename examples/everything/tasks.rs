//! Part C of FIXTURES.md: the conformance suite's Tasks extension fixtures
//! (`io.modelcontextprotocol/tasks`). Each tool is registered with its
//! task mode (C2); the handlers are ordinary tool handlers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_stdio::types::{
    BooleanSchema, CallToolResult, ElicitAction, ElicitRequestFormParams, ElicitRequestParams,
    ElicitRequestedSchema, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    StringSchema, Tool,
};
use mcp_stdio::{ErrorObject, Outcome, RequestContext, ServerBuilder, TaskMode};
use serde::Deserialize;
use serde_json::{Value, json};

/// Set by `--task-log`: the handlers of `slow_compute` and
/// `confirm_delete` say on stderr what they did, a line each
/// (`task-log: done LABEL`), for `tests/scale_out_faults.sh` to hold
/// against what the tasks' clients saw.
pub static TASK_LOG: AtomicBool = AtomicBool::new(false);

fn task_log(what: &str, label: &str) {
    if TASK_LOG.load(Ordering::Relaxed) {
        eprintln!("task-log: {what} {label}");
    }
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Tool {
    let mut schema = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    Tool::new(name, description).input_schema(schema)
}

fn form(message: &str, field: &str, boolean: bool) -> InputRequest {
    let schema = if boolean {
        ElicitRequestedSchema::default().property(field, BooleanSchema::default(), true)
    } else {
        ElicitRequestedSchema::default().property(field, StringSchema::default(), true)
    };
    InputRequest::Elicit(ElicitRequestParams::Form(ElicitRequestFormParams::new(
        message, schema,
    )))
}

/// Field `field` of the accepted answer under `key`; `None` when the
/// answer was not an accept or lacks the field.
fn field(answers: &InputResponses, key: &str, field: &str) -> Option<Value> {
    let answer = answers.get(key)?.to_elicit_result().ok()?;
    if answer.action != ElicitAction::Accept {
        return None;
    }
    answer.content?.get(field).cloned()
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct Greet {
    name: String,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct SlowCompute {
    seconds: u64,
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct ConfirmDelete {
    filename: String,
}

pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            tool(
                "greet",
                "Greets someone by name, at once (never a task).",
                json!({ "name": { "type": "string", "description": "Who to greet." } }),
                &["name"],
            ),
            |_ctx, args: Greet| Ok(CallToolResult::text(format!("Hello, {}!", args.name))),
        )
        .task_tool(
            tool(
                "slow_compute",
                "Works for `seconds` seconds (a task when the client declares the extension).",
                json!({
                    "seconds": { "type": "integer", "minimum": 0, "description": "How long to work." },
                    "label": { "type": "string", "description": "Free text echoed in the result." }
                }),
                &["seconds"],
            ),
            TaskMode::Optional,
            slow_compute,
        )
        .task_tool(
            tool(
                "failing_job",
                "Runs for about a second, then reports a tool error (task required).",
                json!({}),
                &[],
            ),
            TaskMode::Required,
            |ctx, _args: Value| {
                ctx.wait_cancelled(Duration::from_secs(1));
                Ok(CallToolResult::error_text(
                    "failing_job: the job ran and failed (this is a tool error, not a protocol error)",
                ))
            },
        )
        .task_tool(
            tool(
                "protocol_error_job",
                "Fails with a protocol-level error (its handler panics).",
                json!({}),
                &[],
            ),
            TaskMode::Optional,
            |_ctx, _args: Value| -> Result<CallToolResult, ErrorObject> {
                panic!("protocol_error_job always fails")
            },
        )
        .task_tool_with_gate(
            tool(
                "confirm_delete",
                "Asks for confirmation inside the task, then deletes (or keeps) the file.",
                json!({ "filename": { "type": "string", "description": "The file to delete." } }),
                &["filename"],
            ),
            TaskMode::Required,
            |ctx, _args: &ConfirmDelete| {
                ctx.require_client_capability("elicitation")?;
                Ok(Outcome::Complete(()))
            },
            |ctx, args: ConfirmDelete| {
                task_log("start", &args.filename);
                let ask = form(&format!("Delete {}?", args.filename), "confirm", true);
                let asked = ctx.ask(InputRequests::from([("confirm".to_owned(), ask)]));
                let answers = asked.inspect_err(|_| task_log("stopped", &args.filename))?;
                let text = match field(&answers, "confirm", "confirm") {
                    Some(Value::Bool(true)) => format!("Deleted {}", args.filename),
                    _ => format!("Kept {}", args.filename),
                };
                task_log("answered", &args.filename);
                Ok(CallToolResult::text(text))
            },
        )
        .task_tool_with_gate(
            tool(
                "multi_input",
                "Asks two questions at once inside the task; each can be answered on its own.",
                json!({}),
                &[],
            ),
            TaskMode::Required,
            |ctx, _args: &Value| {
                ctx.require_client_capability("elicitation")?;
                Ok(Outcome::Complete(()))
            },
            multi_input,
        )
        .task_tool_with_gate(
            tool(
                "test_tool_with_task",
                "Asks for a name first (before any task), then greets in a task.",
                json!({}),
                &[],
            ),
            TaskMode::Required,
            |ctx, _args: &Value| {
                if name_given(ctx.input_responses()).is_some() {
                    return Ok(Outcome::Complete(()));
                }
                let ask = form("What is your name?", "name", false);
                let requests = InputRequests::from([("user_name".to_owned(), ask)]);
                Ok(Outcome::InputRequired(InputRequiredResult::new(requests)))
            },
            |ctx, _args: Value| {
                let name = name_given(ctx.input_responses()).unwrap_or_default();
                Ok(CallToolResult::text(format!("Hello, {name}!")))
            },
        )
}

fn name_given(answers: &InputResponses) -> Option<String> {
    match field(answers, "user_name", "name")? {
        Value::String(name) if !name.is_empty() => Some(name),
        _ => None,
    }
}

/// Sleeps `seconds`, waking at once on cancellation (the token is the
/// task's: `tasks/cancel` trips it).
fn slow_compute(ctx: &RequestContext, args: SlowCompute) -> Result<CallToolResult, ErrorObject> {
    let label = args.label.unwrap_or_default();
    task_log("start", &label);
    for second in 0..args.seconds {
        ctx.progress(
            second as f64,
            Some(args.seconds as f64),
            Some(&format!("{second} of {} s", args.seconds)),
        );
        if ctx.wait_cancelled(Duration::from_secs(1)) {
            task_log("stopped", &label);
            return Ok(CallToolResult::error_text(format!(
                "slow_compute {label}: cancelled"
            )));
        }
    }
    task_log("done", &label);
    Ok(CallToolResult::text(format!(
        "slow_compute {label}: done after {} s",
        args.seconds
    )))
}

/// Two questions outstanding at once, asked the multi round-trip way:
/// the handler returns what it still needs and runs again with every
/// answer so far once they are all in.
fn multi_input(ctx: &RequestContext, _args: Value) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let answers = ctx.input_responses();
    if answers.contains_key("name") && answers.contains_key("confirm") {
        let name = field(answers, "name", "name").unwrap_or(Value::Null);
        let confirm = field(answers, "confirm", "confirm").unwrap_or(Value::Null);
        let name = name
            .as_str()
            .map_or_else(|| name.to_string(), str::to_owned);
        return Ok(Outcome::Complete(CallToolResult::text(format!(
            "name={name}, confirm={confirm}"
        ))));
    }
    let requests = InputRequests::from([
        ("name".to_owned(), form("What is your name?", "name", false)),
        (
            "confirm".to_owned(),
            form("Shall I go on?", "confirm", true),
        ),
    ]);
    Ok(Outcome::InputRequired(InputRequiredResult::new(requests)))
}
