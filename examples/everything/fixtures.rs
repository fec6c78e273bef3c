//! Part A of FIXTURES.md: this crate's own fixtures.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_stdio::types::{
    CallToolResult, GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult,
    Resource, ResourceContents, Role, TextResourceContents, Tool,
};
use mcp_stdio::{ErrorObject, ServerBuilder};
use serde::Deserialize;
use serde_json::{Value, json};

/// The largest text `big` builds (64 MiB).
const MAX_BIG: usize = 64 << 20;

/// How many tools `add_tool` may add over the server's life.
const MAX_DYN_TOOLS: u64 = 1000;

/// Counters behind `mem://counter` and `stats`.
#[derive(Default)]
struct State {
    counter: AtomicU64,
    slow_cancelled: AtomicU64,
    dyn_tools: AtomicU64,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct EchoArgs {
    text: String,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct SlowArgs {
    ms: u64,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct ProgressArgs {
    #[serde(default = "three")]
    steps: u64,
}

fn three() -> u64 {
    3
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct BigArgs {
    bytes: usize,
}

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let state = Arc::new(State::default());
    let (slow_state, stats_state, bump_state, read_state, dyn_state) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state,
    );
    builder
        .inline_tool(
            Tool::new("echo", "Returns its text unchanged.")
                .input_schema(schema(json!({ "text": { "type": "string" } }), &["text"])),
            |_ctx, args: EchoArgs| Ok(CallToolResult::text(args.text)),
        )
        .inline_tool(
            Tool::new("add", "Adds two numbers.")
                .input_schema(schema(
                    json!({ "a": { "type": "number" }, "b": { "type": "number" } }),
                    &["a", "b"],
                ))
                .output_schema(schema(json!({ "sum": { "type": "number" } }), &["sum"])),
            |_ctx, args: AddArgs| {
                let sum = args.a + args.b;
                Ok(CallToolResult::text(sum.to_string()).with_structured(json!({ "sum": sum })))
            },
        )
        .tool(
            Tool::new(
                "slow",
                "Waits `ms` milliseconds (cancellable), then says done.",
            )
            .input_schema(schema(
                json!({ "ms": { "type": "integer", "minimum": 0 } }),
                &["ms"],
            )),
            move |ctx, args: SlowArgs| {
                // Wakes at once on cancellation: no polling interval at all.
                if ctx.wait_cancelled(Duration::from_millis(args.ms)) {
                    slow_state.slow_cancelled.fetch_add(1, Ordering::Relaxed);
                    return Err(ErrorObject::internal_error("cancelled"));
                }
                Ok(CallToolResult::text("done"))
            },
        )
        .tool(
            Tool::new(
                "progress",
                "Reports `steps` progress notifications, then says done.",
            )
            .input_schema(schema(
                json!({ "steps": { "type": "integer", "minimum": 0 } }),
                &[],
            )),
            |ctx, args: ProgressArgs| {
                // Without a progress token there is nobody to report to.
                let steps = match ctx.meta().progress_token() {
                    Some(_) => args.steps,
                    None => 0,
                };
                for step in 1..=steps {
                    // A client may ask for any number of steps: stop when
                    // it no longer waits for them.
                    if ctx.is_cancelled() {
                        break;
                    }
                    let message = format!("step {step} of {}", args.steps);
                    ctx.progress(step as f64, Some(args.steps as f64), Some(&message));
                }
                Ok(CallToolResult::text("done"))
            },
        )
        .inline_tool(
            Tool::new("fail", "Always fails as a tool (isError: true).").input_schema(no_args()),
            |_ctx, _: Value| Ok(CallToolResult::error_text("the fail fixture always fails")),
        )
        .tool(
            Tool::new(
                "panic",
                "Panics; the server answers -32603 and keeps serving.",
            )
            .input_schema(no_args()),
            |_ctx, _: Value| -> Result<CallToolResult, ErrorObject> {
                panic!("the panic fixture panicked")
            },
        )
        .tool(
            Tool::new(
                "big",
                "Returns one text block of exactly `bytes` ASCII bytes.",
            )
            .input_schema(schema(
                json!({ "bytes": { "type": "integer", "minimum": 0, "maximum": MAX_BIG } }),
                &["bytes"],
            )),
            |_ctx, args: BigArgs| {
                // The text is built in memory: a client must not be able
                // to make the server abort on a failed allocation.
                if args.bytes > MAX_BIG {
                    return Err(ErrorObject::invalid_params(format!(
                        "bytes must be at most {MAX_BIG}"
                    )));
                }
                Ok(CallToolResult::text("x".repeat(args.bytes)))
            },
        )
        .inline_tool(
            Tool::new(
                "bump",
                "Increments the counter behind mem://counter and publishes the update.",
            )
            .input_schema(no_args()),
            move |ctx, _: Value| {
                let value = bump_state.counter.fetch_add(1, Ordering::Relaxed) + 1;
                ctx.notifier().resource_updated("mem://counter");
                Ok(CallToolResult::text(value.to_string()))
            },
        )
        .inline_tool(
            Tool::new(
                "toggle_tool",
                "Adds the tool `ephemeral`, or removes it if present.",
            )
            .input_schema(no_args()),
            |ctx, _: Value| {
                // Adding or removing a tool announces the list change.
                let server = ctx.server();
                if server.remove_tool("ephemeral") {
                    return Ok(CallToolResult::text("removed ephemeral"));
                }
                server.add_tool(
                    Tool::new("ephemeral", "Exists between two calls of toggle_tool.")
                        .input_schema(no_args()),
                    |_ctx, _: Value| Ok(CallToolResult::text("ephemeral")),
                );
                Ok(CallToolResult::text("added ephemeral"))
            },
        )
        .inline_tool(
            Tool::new("add_tool", "Registers a new tool `dyn_<n>`.").input_schema(no_args()),
            move |ctx, _: Value| {
                let server = ctx.server();
                let n = dyn_state.dyn_tools.fetch_add(1, Ordering::Relaxed) + 1;
                // Each tool costs memory for the server's life: bounded.
                if n > MAX_DYN_TOOLS {
                    return Ok(CallToolResult::error_text(format!(
                        "no more than {MAX_DYN_TOOLS} tools can be added"
                    )));
                }
                let name = format!("dyn_{n}");
                let reply = name.clone();
                server.add_tool(
                    Tool::new(name.as_str(), "A tool added while serving.").input_schema(no_args()),
                    move |_ctx, _: Value| Ok(CallToolResult::text(reply.clone())),
                );
                Ok(CallToolResult::text(format!("added {name}")))
            },
        )
        .inline_tool(
            Tool::new("stats", "Counters of this server, as JSON text.").input_schema(no_args()),
            move |_ctx, _: Value| {
                let stats =
                    json!({ "slow_cancelled": stats_state.slow_cancelled.load(Ordering::Relaxed) });
                Ok(CallToolResult::text(stats.to_string()))
            },
        )
        .inline_tool(
            Tool::new(
                "end_listen",
                "Ends every open subscriptions/listen gracefully.",
            )
            .input_schema(no_args()),
            |ctx, _: Value| {
                ctx.notifier().close_subscriptions();
                Ok(CallToolResult::text("closing every subscription"))
            },
        )
        .inline_resource(
            Resource::new("mem://counter", "counter")
                .mime_type("text/plain")
                .description("A counter that the bump tool increments."),
            move |_ctx, req| {
                let value = read_state.counter.load(Ordering::Relaxed).to_string();
                Ok(ReadResourceResult::new(vec![text_contents(
                    &req.uri,
                    "text/plain",
                    value,
                )]))
            },
        )
        .prompt(
            Prompt::new("greet", "Greets someone by name.").argument(PromptArgument::new(
                "name",
                "Who to greet.",
                true,
            )),
            |_ctx, args| {
                let name = args.get("name").map_or("", String::as_str);
                Ok(GetPromptResult::new(vec![PromptMessage::text(
                    Role::User,
                    format!("Please greet {name} warmly."),
                )]))
            },
        )
}

/// Text contents with a MIME type.
pub fn text_contents(uri: &str, mime_type: &str, text: impl Into<String>) -> ResourceContents {
    let mut contents = TextResourceContents::new(uri, text);
    contents.mime_type = Some(mime_type.into());
    contents.into()
}
