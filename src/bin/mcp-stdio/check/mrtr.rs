//! Multi round-trip requests (2026-07-28): an `InputRequiredResult` is
//! valid and carries `inputRequests` or `requestState`, and asks only for
//! what the client declared. Both need a tool that asks for input, named
//! with `--call` (no tool is called with arguments it accepts unless
//! named): the first named tool that answers `input_required` is the one.

use serde_json::{Value, json};

use super::driver::{Era, meta_declaring};
use super::results::validate;
use super::{Call, Check, Ctx, Level, Verdict, said, short};

const PAGE: &str = "2026-07-28/basic/patterns/mrtr.md";

pub const CHECKS: &[Check] = &[
    Check {
        id: "mrtr.input-required-result",
        level: Level::Must,
        page: PAGE,
        quote: "Servers **MUST** include at least one of `inputRequests` or `requestState` in every `InputRequiredResult` response.",
        title: "--call TOOL (one that asks for input): a valid InputRequiredResult with inputRequests or requestState",
        run: input_required_result,
    },
    Check {
        id: "mrtr.undeclared-input-requests",
        level: Level::Must,
        page: PAGE,
        quote: "Servers **MUST NOT** send an `inputRequests` that the client has not declared support for in its capabilities.",
        title: "--call TOOL (one that asks for input), no client capability declared: no inputRequests",
        run: undeclared_input_requests,
    },
];

/// The client capabilities an input request needs, everything declared.
fn every_capability() -> Value {
    json!({ "elicitation": { "form": {}, "url": {} }, "sampling": {}, "roots": {} })
}

/// Calls `call`'s tool declaring `capabilities`: the whole response.
fn call_with(ctx: &mut Ctx, call: &Call, capabilities: Value) -> Result<Value, Verdict> {
    ctx.ask(
        "tools/call",
        json!({ "name": call.tool, "arguments": call.arguments, "_meta": meta_declaring(capabilities) }),
    )
}

fn input_required(reply: &Value) -> Option<&Value> {
    reply
        .get("result")
        .filter(|r| r.get("resultType").and_then(Value::as_str) == Some("input_required"))
}

/// The first tool named with `--call` that answers `input_required` with
/// every capability declared, and that result.
fn asking_tool(ctx: &mut Ctx) -> Result<(Call, Value), Verdict> {
    ctx.facts.need_modern_primary()?;
    if ctx.calls.is_empty() {
        return Err(Verdict::Skip(
            "needs --call TOOL[=JSON] naming a tool that asks for input (--call ask)".into(),
        ));
    }
    let calls = ctx.calls.to_vec();
    let mut tried = Vec::new();
    for call in &calls {
        // A call not answered in time is not this rule's business: the
        // next tool is tried.
        match call_with(ctx, call, every_capability()) {
            Ok(reply) => match input_required(&reply) {
                Some(result) => return Ok((call.clone(), result.clone())),
                None => tried.push(call.tool.clone()),
            },
            // An answer the checker cannot read whole says so.
            Err(Verdict::Skip(why)) => tried.push(format!("{}: {why}", call.tool)),
            Err(_) => tried.push(format!("{}: no answer", call.tool)),
        }
    }
    Err(Verdict::Skip(format!(
        "no tool named with --call answered input_required ({})",
        short(&tried.join(", "), 160)
    )))
}

fn input_required_result(ctx: &mut Ctx) -> Verdict {
    let (call, result) = match asking_tool(ctx) {
        Ok(found) => found,
        Err(v) => return v,
    };
    if let verdict @ Verdict::Fail(_) =
        validate(Era::Modern, "InputRequiredResult", &result, "tools/call")
    {
        return verdict;
    }
    let requests = result
        .get("inputRequests")
        .and_then(Value::as_object)
        .map_or(0, |r| r.len());
    match (requests, result.get("requestState")) {
        (0, None) => Verdict::Fail(format!(
            "{}: input_required with neither inputRequests nor requestState: {}",
            call.tool,
            short(&result.to_string(), 160)
        )),
        (n, state) => Verdict::Pass(format!(
            "{}: a valid InputRequiredResult, {n} input requests{}",
            call.tool,
            if state.is_some() {
                ", a requestState"
            } else {
                ""
            }
        )),
    }
}

fn undeclared_input_requests(ctx: &mut Ctx) -> Verdict {
    let (call, _) = match asking_tool(ctx) {
        Ok(found) => found,
        Err(v) => return v,
    };
    let reply = match call_with(ctx, &call, json!({})) {
        Ok(r) => r,
        Err(Verdict::Fail(why)) => {
            return Verdict::Skip(format!(
                "{} with no capability declared was not answered: {why}",
                call.tool
            ));
        }
        Err(v) => return v,
    };
    let Some(result) = input_required(&reply) else {
        return Verdict::Pass(format!(
            "{} with no capability declared: {}",
            call.tool,
            said(&reply)
        ));
    };
    let asked: Vec<String> = result
        .get("inputRequests")
        .and_then(Value::as_object)
        .map(|r| {
            r.values()
                .map(|request| match request.get("method") {
                    Some(Value::String(method)) => method.clone(),
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .unwrap_or_default();
    if asked.is_empty() {
        Verdict::Pass(format!(
            "{} with no capability declared: input_required without inputRequests",
            call.tool
        ))
    } else {
        Verdict::Fail(format!(
            "{} with no client capability declared asked for {}",
            call.tool,
            short(&asked.join(", "), 160)
        ))
    }
}
