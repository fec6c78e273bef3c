//! The interop checks of `tests/interop/CHECKS.md`, driven by this crate's
//! client against a fixture server. A modern server gets every check; a
//! legacy (initialize-era) one gets the legacy subset, and the rest are
//! reported skipped with the reason.

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_stdio::types::{
    CallToolResult, CompleteArgument, CompleteRequestParams, CompletionReference, ContentBlock,
    ElicitRequestParams, ElicitResult, PromptReference, ResourceContents, SubscriptionFilter,
};
use mcp_stdio::{Client, Era, EraPolicy, Error, Outcome, RequestOptions, SubscriptionEvent};
use serde_json::{Value, json};

/// What a check found, with the detail that shows it.
#[derive(Debug)]
pub enum Verdict {
    Pass(String),
    Fail(String),
    /// The server cannot express the check; the detail says why.
    Skip(String),
}

impl Verdict {
    /// The status as CHECKS.md spells it, and the detail.
    pub fn parts(&self) -> (&'static str, &str) {
        match self {
            Verdict::Pass(d) => ("pass", d),
            Verdict::Fail(d) => ("fail", d),
            Verdict::Skip(d) => ("skip", d),
        }
    }
}

type Check = fn(&Client) -> Verdict;

/// Every check of CHECKS.md in order, between `discover` and `shutdown`.
/// All of them run in both eras (CHECKS.md says how in the legacy one).
pub const CHECKS: &[(&str, Check)] = &[
    ("tools.list", tools_list),
    ("tools.call.text", tools_call_text),
    ("tools.call.image", tools_call_image),
    ("tools.call.structured", tools_call_structured),
    ("tools.call.error", tools_call_error),
    ("tools.call.unknown", tools_call_unknown),
    ("resources.list", resources_list),
    ("resources.read", resources_read),
    ("resources.templates", resources_templates),
    ("prompts.list", prompts_list),
    ("prompts.get", prompts_get),
    ("completion", completion),
    ("progress", progress),
    ("cancellation", cancellation),
    ("listen.resource_updated", listen_resource_updated),
    ("listen.tools_changed", listen_tools_changed),
    ("mrtr.elicitation", mrtr_elicitation),
];

/// The tools every fixture server lists.
const FIXTURE_TOOLS: &[&str] = &[
    "echo",
    "add",
    "test_image_content",
    "fail",
    "slow",
    "progress",
    "bump",
    "toggle_tool",
    "ask",
];

/// Connects to the server `command` starts, under `era`, and runs every
/// check: `discover` first, `shutdown` last.
pub fn run(command: Command, era: EraPolicy) -> Vec<(&'static str, Verdict)> {
    let started = Instant::now();
    let client = match connect(command, era) {
        Ok(client) => client,
        Err(e) => return vec![("discover", Verdict::Fail(format!("could not connect: {e}")))],
    };
    let mut verdicts = vec![("discover", discover(&client, started.elapsed()))];
    for (name, check) in CHECKS {
        verdicts.push((name, check(&client)));
    }
    verdicts.push(("shutdown", shutdown(client)));
    verdicts
}

/// Spawns the server with an elicitation handler that answers `Ada`.
fn connect(command: Command, era: EraPolicy) -> Result<Client, Error> {
    Client::builder()
        .era(era)
        .client_info("mcp-stdio-interop", env!("CARGO_PKG_VERSION"))
        .request_timeout(Duration::from_secs(10))
        .on_elicitation(|params| match params {
            ElicitRequestParams::Form(_) => Ok(ElicitResult::accept(
                json!({ "name": "Ada" })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )),
            ElicitRequestParams::Url(_) => Ok(ElicitResult::decline()),
        })
        .spawn(command)
}

/// `Pass(detail)` when `ok`, else `Fail(detail)`.
fn verdict(ok: bool, detail: String) -> Verdict {
    if ok {
        Verdict::Pass(detail)
    } else {
        Verdict::Fail(detail)
    }
}

/// A check body that may fail with any error along the way.
fn checked(body: impl FnOnce() -> Result<Verdict, Error>) -> Verdict {
    body().unwrap_or_else(|e| Verdict::Fail(format!("error: {e}")))
}

fn discover(client: &Client, took: Duration) -> Verdict {
    let server = client
        .server_info()
        .map_or("an unnamed server".to_owned(), |i| {
            format!("{} {}", i.name, i.version)
        });
    let caps = serde_json::to_string(&client.server_capabilities()).unwrap_or_default();
    let detail = format!(
        "{server}, {:?}, in {} ms; capabilities {caps}",
        client.era(),
        took.as_millis()
    );
    match client.era() {
        Era::Modern { version } => verdict(version == "2026-07-28", detail),
        Era::Legacy { .. } => Verdict::Pass(detail),
    }
}

fn tools_list(client: &Client) -> Verdict {
    checked(|| {
        let tools = client.tools().collect::<Result<Vec<_>, _>>()?;
        let missing: Vec<_> = FIXTURE_TOOLS
            .iter()
            .filter(|name| !tools.iter().any(|t| t.name == **name))
            .collect();
        Ok(verdict(
            missing.is_empty(),
            format!("{} tools listed; missing {missing:?}", tools.len()),
        ))
    })
}

/// The complete result of a tool call (an `input_required` one is an error).
fn call(client: &Client, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
    match client.call_tool(name, arguments)? {
        Outcome::Complete(result) => Ok(result),
        Outcome::InputRequired(_) => Err(Error::Protocol(format!(
            "{name} asked for input it was not expected to need"
        ))),
    }
}

/// The text blocks of a result, joined.
fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

fn tools_call_text(client: &Client) -> Verdict {
    checked(|| {
        let sent = "héllo ✓";
        let result = call(client, "echo", json!({ "text": sent }))?;
        let text = text_of(&result);
        Ok(verdict(text == sent, format!("echo returned {text:?}")))
    })
}

fn tools_call_image(client: &Client) -> Verdict {
    checked(|| {
        let result = call(client, "test_image_content", json!({}))?;
        let image = result.content.iter().find_map(|block| match block {
            ContentBlock::Image(image) => Some(image),
            _ => None,
        });
        Ok(match image {
            Some(image) => verdict(
                !image.data.is_empty() && image.mime_type == "image/png",
                format!("{} bytes of {}", image.data.len(), image.mime_type),
            ),
            None => Verdict::Fail(format!("no image content in {:?}", result.content)),
        })
    })
}

fn tools_call_structured(client: &Client) -> Verdict {
    checked(|| {
        let result = call(client, "add", json!({ "a": 2, "b": 3 }))?;
        let sum = result
            .structured_content
            .as_ref()
            .and_then(|s| s.get("sum"))
            .and_then(Value::as_f64);
        Ok(verdict(
            sum == Some(5.0),
            format!("structuredContent {:?}", result.structured_content),
        ))
    })
}

fn tools_call_error(client: &Client) -> Verdict {
    checked(|| {
        let result = call(client, "fail", json!({}))?;
        Ok(verdict(
            result.is_error == Some(true),
            format!("isError {:?}: {:?}", result.is_error, text_of(&result)),
        ))
    })
}

fn tools_call_unknown(client: &Client) -> Verdict {
    checked(|| {
        let answer = match client.call_tool("no_such_tool", json!({})) {
            Err(Error::Rpc(error)) => format!("error {}: {}", error.code, error.message),
            Ok(Outcome::Complete(result)) if result.is_error == Some(true) => {
                format!("isError result: {:?}", text_of(&result))
            }
            Ok(other) => return Ok(Verdict::Fail(format!("answered {other:?}"))),
            Err(e) => return Err(e),
        };
        let still = text_of(&call(client, "echo", json!({ "text": "still here" }))?);
        Ok(verdict(
            still == "still here",
            format!("{answer}; echo after it returned {still:?}"),
        ))
    })
}

fn resources_list(client: &Client) -> Verdict {
    checked(|| {
        let resources = client.resources().collect::<Result<Vec<_>, _>>()?;
        let uris: Vec<_> = resources.iter().map(|r| r.uri.as_str()).collect();
        Ok(verdict(
            uris.contains(&"mem://counter"),
            format!("listed {uris:?}"),
        ))
    })
}

/// The text of a resource's first contents.
fn read_text(client: &Client, uri: &str) -> Result<String, Error> {
    let Outcome::Complete(result) = client.read_resource(uri)? else {
        return Err(Error::Protocol(format!("reading {uri} asked for input")));
    };
    match result.contents.first() {
        Some(ResourceContents::Text(text)) => Ok(text.text.clone()),
        other => Err(Error::Protocol(format!("{uri} read as {other:?}"))),
    }
}

fn resources_read(client: &Client) -> Verdict {
    checked(|| {
        let text = read_text(client, "mem://counter")?;
        Ok(verdict(
            text.parse::<u64>().is_ok(),
            format!("mem://counter = {text:?}"),
        ))
    })
}

fn resources_templates(client: &Client) -> Verdict {
    checked(|| {
        let templates = client.resource_templates().collect::<Result<Vec<_>, _>>()?;
        let template = "test://template/{id}/data";
        if !templates.iter().any(|t| t.uri_template == template) {
            let listed: Vec<_> = templates.iter().map(|t| &t.uri_template).collect();
            return Ok(Verdict::Fail(format!("{template} not in {listed:?}")));
        }
        let text = read_text(client, "test://template/123/data")?;
        Ok(verdict(
            text.contains("123"),
            format!("test://template/123/data = {text:?}"),
        ))
    })
}

fn prompts_list(client: &Client) -> Verdict {
    checked(|| {
        let prompts = client.prompts().collect::<Result<Vec<_>, _>>()?;
        let Some(greet) = prompts.iter().find(|p| p.name == "greet") else {
            let names: Vec<_> = prompts.iter().map(|p| &p.name).collect();
            return Ok(Verdict::Fail(format!("greet not in {names:?}")));
        };
        let required = greet
            .arguments
            .iter()
            .flatten()
            .any(|a| a.name == "name" && a.required == Some(true));
        Ok(verdict(
            required,
            format!("greet arguments {:?}", greet.arguments),
        ))
    })
}

fn prompts_get(client: &Client) -> Verdict {
    checked(|| {
        let arguments = [("name".to_owned(), "Ada".to_owned())].into();
        let Outcome::Complete(result) = client.get_prompt("greet", arguments)? else {
            return Ok(Verdict::Fail("greet asked for input".into()));
        };
        let messages = serde_json::to_string(&result.messages)?;
        Ok(verdict(
            messages.contains("Ada"),
            format!("messages {messages}"),
        ))
    })
}

fn completion(client: &Client) -> Verdict {
    checked(|| {
        let result = client.complete(CompleteRequestParams {
            reference: CompletionReference::Prompt(PromptReference {
                name: "greet".into(),
                title: None,
            }),
            argument: CompleteArgument {
                name: "name".into(),
                value: "A".into(),
            },
            context: None,
            meta: None,
        })?;
        let values = &result.completion.values;
        Ok(verdict(values == &["Alice"], format!("values {values:?}")))
    })
}

fn progress(client: &Client) -> Verdict {
    checked(|| {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let options = RequestOptions::new().on_progress(move |p| {
            sink.lock().unwrap().push((p.progress, p.total));
        });
        let result = client.call_tool_with("progress", json!({ "steps": 3 }), options)?;
        let seen = seen.lock().unwrap().clone();
        let increasing = seen.windows(2).all(|w| w[0].0 < w[1].0);
        let done = matches!(&result, Outcome::Complete(r) if text_of(r) == "done");
        Ok(verdict(
            seen.len() == 3 && increasing && done,
            format!("progress {seen:?}, then done: {done}"),
        ))
    })
}

fn cancellation(client: &Client) -> Verdict {
    checked(|| {
        let params = json!({ "name": "slow", "arguments": { "ms": 30_000 } });
        let slow = client.start_request("tools/call", params, RequestOptions::new())?;
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        slow.cancel(Some("interop cancellation check"));
        let echo = text_of(&call(client, "echo", json!({ "text": "after cancel" }))?);
        Ok(verdict(
            echo == "after cancel" && started.elapsed() < Duration::from_secs(5),
            format!(
                "cancelled slow; echo answered {echo:?} {} ms later",
                started.elapsed().as_millis()
            ),
        ))
    })
}

/// Waits up to 5 s on `subscription` for an event `wanted` accepts.
fn wait_for(
    subscription: &mut mcp_stdio::Subscription,
    wanted: impl Fn(&SubscriptionEvent) -> bool,
) -> Result<Vec<SubscriptionEvent>, Vec<SubscriptionEvent>> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match subscription.recv_timeout(left) {
            Ok(Some(event)) => {
                let done = wanted(&event);
                seen.push(event);
                if done {
                    return Ok(seen);
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
    Err(seen)
}

fn listen_resource_updated(client: &Client) -> Verdict {
    checked(|| {
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec!["mem://counter".into()]),
            ..SubscriptionFilter::default()
        };
        let mut subscription = client.listen(filter)?;
        call(client, "bump", json!({}))?;
        let updated = |e: &SubscriptionEvent| matches!(e, SubscriptionEvent::ResourceUpdated { uri } if uri == "mem://counter");
        Ok(match wait_for(&mut subscription, updated) {
            Ok(seen) => Verdict::Pass(format!("events {seen:?}")),
            Err(seen) => Verdict::Fail(format!("no update for mem://counter; saw {seen:?}")),
        })
    })
}

fn listen_tools_changed(client: &Client) -> Verdict {
    checked(|| {
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        };
        let mut subscription = client.listen(filter)?;
        call(client, "toggle_tool", json!({}))?;
        let changed = |e: &SubscriptionEvent| matches!(e, SubscriptionEvent::ToolsListChanged);
        let verdict = match wait_for(&mut subscription, changed) {
            Ok(seen) => Verdict::Pass(format!("events {seen:?}")),
            Err(seen) => Verdict::Fail(format!("no tools/list_changed; saw {seen:?}")),
        };
        // Put the tool list back as it was.
        call(client, "toggle_tool", json!({}))?;
        Ok(verdict)
    })
}

fn mrtr_elicitation(client: &Client) -> Verdict {
    checked(|| {
        let result = call(client, "ask", json!({}))?;
        let text = text_of(&result);
        let legacy = matches!(client.era(), Era::Legacy { .. });
        if legacy && result.is_error == Some(true) {
            // A legacy server asks with its own `elicitation/create`
            // request, which the client answers; one that cannot bridge a
            // multi round-trip tool to a legacy session says so instead.
            return Ok(Verdict::Skip(format!(
                "the server does not ask a legacy client for input: {text:?}"
            )));
        }
        Ok(verdict(
            text.contains("Ada"),
            format!("ask returned {text:?}"),
        ))
    })
}

fn shutdown(client: Client) -> Verdict {
    let started = Instant::now();
    match client.close() {
        Ok(status) => {
            let took = started.elapsed();
            let clean = status.is_none_or(|s| s.success());
            verdict(
                clean && took < Duration::from_secs(5),
                format!("server exited {status:?} {} ms after EOF", took.as_millis()),
            )
        }
        Err(e) => Verdict::Fail(format!("close failed: {e}")),
    }
}
