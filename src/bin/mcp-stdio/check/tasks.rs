//! The Tasks extension (`io.modelcontextprotocol/tasks`), where the server
//! declares it: `tasks/get` refused to a client that did not declare the
//! extension and for a task that does not exist; and, with a tool named
//! with `--call` that answers with a task, the task resolvable as soon as
//! it is returned and no task for a client that did not declare the
//! extension. Results against the extension's `schema.json`.

use std::sync::OnceLock;

use serde_json::{Value, json};

use super::driver::meta_declaring;
use super::schema::{self, Document, Found};
use super::{Call, Check, Ctx, Level, Verdict, error_code, said, short};

const PAGE: &str = "extensions/tasks/tasks.md";
const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// A task id no server gave.
const NO_SUCH_TASK: &str = "mcp-stdio-check-no-such-task";

pub const CHECKS: &[Check] = &[
    Check {
        id: "tasks.get-undeclared",
        level: Level::Must,
        page: PAGE,
        quote: "Servers **MUST** return this error for non-declaring clients issuing `tasks/get`, `tasks/update`, and `tasks/cancel` requests.",
        title: "tasks/get from a client that did not declare the extension: -32021 (the extension's page says -32003)",
        run: get_undeclared,
    },
    Check {
        id: "tasks.get-unknown",
        level: Level::Must,
        page: PAGE,
        quote: "Servers **MUST** return this error for `tasks/get`.",
        title: "tasks/get for a task that does not exist: -32602",
        run: get_unknown,
    },
    Check {
        id: "tasks.created-resolves",
        level: Level::Must,
        page: PAGE,
        quote: "A server **MUST NOT** return `CreateTaskResult` until the task is durably created — that is, until a `tasks/get` for the returned `taskId` would resolve.",
        title: "--call TOOL (one that answers with a task): a valid CreateTaskResult, and tasks/get for it at once a valid GetTaskResult",
        run: created_resolves,
    },
    Check {
        id: "tasks.no-task-undeclared",
        level: Level::Must,
        page: PAGE,
        quote: "A server **MUST NOT** return `CreateTaskResult` to a client that did not include the extension capability on its request, regardless of prior declarations.",
        title: "--call TOOL (one that answers with a task), the extension not declared: no CreateTaskResult",
        run: no_task_undeclared,
    },
];

/// The extension's schema.
fn document() -> &'static Document {
    static TASKS: OnceLock<Document> = OnceLock::new();
    TASKS.get_or_init(|| Document::parse(schema::TASKS))
}

/// `value` against the definition `name` of the extension's schema.
fn validate(name: &str, value: &Value, what: &str) -> Verdict {
    match document().validate_def(name, value) {
        Found::Valid => Verdict::Pass(format!("{what}: a valid {name}")),
        Found::Invalid(errors) => Verdict::Fail(format!(
            "{what} is not a valid {name} (the Tasks extension's schema): {}",
            errors.join("; ")
        )),
        Found::Unknown(keyword) => Verdict::Skip(format!(
            "{name}: the schema uses {keyword}, which this checker does not know"
        )),
    }
}

/// The client capabilities that declare the extension.
fn declared() -> Value {
    json!({ "extensions": { EXTENSION: {} } })
}

/// The server is modern and declares the extension.
fn offered(ctx: &Ctx) -> Result<(), Verdict> {
    ctx.facts.need_modern_primary()?;
    match ctx.facts.capabilities().get("extensions") {
        Some(extensions) if extensions.get(EXTENSION).is_some() => Ok(()),
        _ if ctx.facts.unread().is_some() => {
            Err(ctx.facts.lacks(&format!("the {EXTENSION} extension")))
        }
        _ => Err(Verdict::Skip(format!(
            "the server does not declare the {EXTENSION} extension"
        ))),
    }
}

/// `method` with `params`, declaring `capabilities`: the whole response.
fn ask_declaring(
    ctx: &mut Ctx,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> Result<Value, Verdict> {
    params["_meta"] = meta_declaring(capabilities);
    ctx.ask(method, params)
}

fn is_task(reply: &Value) -> Option<&Value> {
    reply
        .get("result")
        .filter(|r| r.get("resultType").and_then(Value::as_str) == Some("task"))
}

/// Cancels a task the check created (its answer is not this check's
/// business).
fn cancel(ctx: &mut Ctx, task: &Value) {
    if let Some(id) = task.get("taskId").and_then(Value::as_str) {
        let _ = ask_declaring(ctx, "tasks/cancel", json!({ "taskId": id }), declared());
    }
}

fn get_undeclared(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx) {
        return v;
    }
    let reply = match ask_declaring(
        ctx,
        "tasks/get",
        json!({ "taskId": NO_SUCH_TASK }),
        json!({}),
    ) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match error_code(&reply) {
        // -32003 on the extension's page; the 2026-07-28 core renumbered
        // Missing Required Client Capability to -32021.
        Some(code @ (-32021 | -32003)) => Verdict::Pass(format!("error {code}")),
        _ => Verdict::Fail(format!(
            "not declaring the extension, tasks/get was answered with {}",
            said(&reply)
        )),
    }
}

fn get_unknown(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx) {
        return v;
    }
    let reply = match ask_declaring(
        ctx,
        "tasks/get",
        json!({ "taskId": NO_SUCH_TASK }),
        declared(),
    ) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match error_code(&reply) {
        Some(-32602) => Verdict::Pass("error -32602".into()),
        _ => Verdict::Fail(format!(
            "tasks/get for a task that does not exist: {}",
            said(&reply)
        )),
    }
}

/// The first tool named with `--call` that answers with a task when the
/// extension is declared, and its result (the task is the caller's to
/// cancel).
fn task_tool(ctx: &mut Ctx) -> Result<(Call, Value), Verdict> {
    offered(ctx)?;
    if ctx.calls.is_empty() {
        return Err(Verdict::Skip(
            "needs --call TOOL[=JSON] naming a tool that answers with a task".into(),
        ));
    }
    let calls = ctx.calls.to_vec();
    let mut tried = Vec::new();
    for call in &calls {
        let params = json!({ "name": call.tool, "arguments": call.arguments });
        match ask_declaring(ctx, "tools/call", params, declared()) {
            Ok(reply) => match is_task(&reply) {
                Some(result) => return Ok((call.clone(), result.clone())),
                None => tried.push(call.tool.clone()),
            },
            // An answer the checker cannot read whole says so.
            Err(Verdict::Skip(why)) => tried.push(format!("{}: {why}", call.tool)),
            Err(_) => tried.push(format!("{}: no answer", call.tool)),
        }
    }
    Err(Verdict::Skip(format!(
        "no tool named with --call answered with a task ({})",
        short(&tried.join(", "), 160)
    )))
}

fn created_resolves(ctx: &mut Ctx) -> Verdict {
    let (call, created) = match task_tool(ctx) {
        Ok(found) => found,
        Err(v) => return v,
    };
    let verdict = created_then_get(ctx, &call, &created);
    cancel(ctx, &created);
    verdict
}

fn created_then_get(ctx: &mut Ctx, call: &Call, created: &Value) -> Verdict {
    if let verdict @ Verdict::Fail(_) = validate("CreateTaskResult", created, "tools/call") {
        return verdict;
    }
    let Some(id) = created.get("taskId").and_then(Value::as_str) else {
        return Verdict::Fail(format!("{}: a task without a taskId", call.tool));
    };
    let reply = match ask_declaring(ctx, "tasks/get", json!({ "taskId": id }), declared()) {
        Ok(r) => r,
        Err(v) => return v,
    };
    let Some(result) = reply.get("result") else {
        return Verdict::Fail(format!(
            "{}: tasks/get for the task it had just returned ({}) answered {}",
            call.tool,
            short(id, 80),
            said(&reply)
        ));
    };
    match validate("GetTaskResult", result, "tasks/get") {
        Verdict::Pass(_) => Verdict::Pass(format!(
            "{}: a valid CreateTaskResult; tasks/get at once: a valid GetTaskResult, {}",
            call.tool, result["status"]
        )),
        other => other,
    }
}

fn no_task_undeclared(ctx: &mut Ctx) -> Verdict {
    let (call, created) = match task_tool(ctx) {
        Ok(found) => found,
        Err(v) => return v,
    };
    cancel(ctx, &created);
    let params = json!({ "name": call.tool, "arguments": call.arguments });
    let reply = match ask_declaring(ctx, "tools/call", params, json!({})) {
        Ok(r) => r,
        Err(Verdict::Fail(why)) => {
            return Verdict::Skip(format!(
                "{} without the extension was not answered: {why}",
                call.tool
            ));
        }
        Err(v) => return v,
    };
    match is_task(&reply) {
        Some(task) => {
            let task = task.clone();
            cancel(ctx, &task);
            Verdict::Fail(format!(
                "{} without the extension declared answered with a task: {}",
                call.tool,
                short(&task.to_string(), 160)
            ))
        }
        None => Verdict::Pass(format!(
            "{} without the extension declared: {}",
            call.tool,
            said(&reply)
        )),
    }
}
