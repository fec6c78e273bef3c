//! Tools: the list and its pages, input schemas that are JSON Schemas,
//! names, a wrong argument answered as a tool result with `isError`, an
//! unknown tool, and (with `--call`) a call's result against the schema
//! and the tool's output schema.

use serde_json::{Value, json};

use super::driver::{Era, Missing};
use super::results::validate;
use super::schema::{Document, Found};
use super::tool_schema::{refused_arguments, shape_errors};
use super::{Call, Check, Ctx, Level, Verdict, error_code, list_all, said, short};

const TOOLS: &str = "2026-07-28/server/tools.md";

pub const CHECKS: &[Check] = &[
    Check {
        id: "tools.list",
        level: Level::Must,
        page: TOOLS,
        quote: "Servers that declare the `tools` capability **MUST** respond to `tools/list` requests with the set of tools currently available to the requesting client.",
        title: "tools/list answers, every page (nextCursor followed, no cursor twice)",
        run: list,
    },
    Check {
        id: "tools.invalid-cursor",
        level: Level::Should,
        page: "2026-07-28/server/utilities/pagination.md",
        quote: "Invalid cursors **SHOULD** result in an error with code -32602 (Invalid params).",
        title: "tools/list with a cursor the server never gave gets -32602",
        run: invalid_cursor,
    },
    Check {
        id: "tools.input-schema",
        level: Level::Must,
        page: TOOLS,
        quote: "**MUST** be a valid JSON Schema object (not `null`)",
        title: "each tool's inputSchema is a JSON Schema object of type object",
        run: input_schema,
    },
    Check {
        id: "tools.name-format",
        level: Level::Should,
        page: TOOLS,
        quote: "Tool names **SHOULD** be between 1 and 128 characters in length (inclusive).",
        title: "tool names: 1 to 128 characters of A-Z a-z 0-9 _ - .",
        run: name_format,
    },
    Check {
        id: "tools.names-unique",
        level: Level::Should,
        page: TOOLS,
        quote: "Tool names **SHOULD** be unique within a server.",
        title: "no two tools share a name",
        run: names_unique,
    },
    Check {
        id: "tools.unknown-tool",
        level: Level::Should,
        page: "2026-07-28/schema.json#CallToolResult",
        quote: "However, any errors in _finding_ the tool, an error indicating that the server does not support tool calls, or any other exceptional conditions, should be reported as an MCP error response.",
        title: "calling a tool that does not exist is a JSON-RPC error",
        run: unknown_tool,
    },
    Check {
        id: "tools.wrong-arguments",
        level: Level::Should,
        page: "2026-07-28/schema.json#CallToolResult",
        quote: "Any errors that originate from the tool SHOULD be reported inside the result object, with `isError` set to true, _not_ as an MCP protocol-level error response.",
        title: "arguments the tool's own schema refuses get a result with isError: true",
        run: wrong_arguments,
    },
    Check {
        id: "tools.call-result",
        level: Level::Must,
        page: TOOLS,
        quote: "Servers **MUST** provide structured results that conform to this schema.",
        title: "--call TOOL: the result is a CallToolResult, its structuredContent fits the outputSchema",
        run: call_result,
    },
];

fn tools(ctx: &Ctx) -> Result<Vec<Value>, Verdict> {
    if !ctx.facts.offers("tools") {
        return Err(ctx.facts.lacks("tools"));
    }
    Ok(ctx.facts.list("tools").to_vec())
}

/// The tools the server lists, for a check that needs them: a skip when
/// the list could not be read whole (a page the checker cannot read, a
/// list past its limits), not an empty list.
fn listed_tools(ctx: &Ctx) -> Result<Vec<Value>, Verdict> {
    let tools = tools(ctx)?;
    match ctx.facts.unlisted.get("tools") {
        Some(why) => Err(Verdict::Skip(format!("the tools are unknown: {why}"))),
        None => Ok(tools),
    }
}

fn list(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = tools(ctx) {
        return v;
    }
    let (wait, until) = (ctx.wait, ctx.list_until());
    let session = match ctx.session() {
        Ok(s) => s,
        Err(v) => return v,
    };
    match list_all(session, "tools/list", "tools", wait, until) {
        Ok(items) => Verdict::Pass(format!("{} tools", items.len())),
        Err(v) => v,
    }
}

fn invalid_cursor(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = tools(ctx) {
        return v;
    }
    let reply = match ctx.ask_error(
        "tools/list",
        json!({ "cursor": "mcp-stdio-check: not a cursor the server gave" }),
    ) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match error_code(&reply) {
        Some(-32602) => Verdict::Pass("-32602".into()),
        _ => Verdict::Fail(format!("answered with {}", said(&reply))),
    }
}

fn input_schema(ctx: &mut Ctx) -> Verdict {
    let tools = match listed_tools(ctx) {
        Ok(t) => t,
        Err(v) => return v,
    };
    for tool in &tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
        let Some(schema) = tool.get("inputSchema") else {
            return Verdict::Fail(format!("{name}: no inputSchema"));
        };
        if !schema.is_object() {
            return Verdict::Fail(format!(
                "{name}: inputSchema is {}, not an object",
                short(&schema.to_string(), 60)
            ));
        }
        if schema.get("type") != Some(&json!("object")) {
            return Verdict::Fail(format!(
                "{name}: inputSchema's type is {}, not \"object\"",
                schema
                    .get("type")
                    .map_or_else(|| "missing".to_owned(), Value::to_string)
            ));
        }
        if let Some(error) = shape_errors(schema).first() {
            return Verdict::Fail(format!(
                "{name}: inputSchema is not a valid JSON Schema: {error}"
            ));
        }
    }
    Verdict::Pass(format!("{} input schemas", tools.len()))
}

fn name_format(ctx: &mut Ctx) -> Verdict {
    let tools = match listed_tools(ctx) {
        Ok(t) => t,
        Err(v) => return v,
    };
    for tool in &tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            return Verdict::Fail(format!(
                "a tool without a name: {}",
                short(&tool.to_string(), 100)
            ));
        };
        let len = name.chars().count();
        if !(1..=128).contains(&len) {
            return Verdict::Fail(format!("{name:?}: {len} characters"));
        }
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        {
            return Verdict::Fail(format!("{name:?} has {c:?}"));
        }
    }
    Verdict::Pass(format!("{} names", tools.len()))
}

fn names_unique(ctx: &mut Ctx) -> Verdict {
    let tools = match listed_tools(ctx) {
        Ok(t) => t,
        Err(v) => return v,
    };
    let mut names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name")?.as_str())
        .collect();
    names.sort_unstable();
    match names.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Verdict::Fail(format!("{:?} is listed twice", w[0])),
        None => Verdict::Pass(format!("{} distinct names", names.len())),
    }
}

fn unknown_tool(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = tools(ctx) {
        return v;
    }
    let reply = match ctx.ask_error(
        "tools/call",
        json!({ "name": "mcp-stdio-check-no-such-tool", "arguments": {} }),
    ) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match reply.get("error") {
        Some(_) => Verdict::Pass(format!(
            "error {}",
            error_code(&reply).map_or("?".into(), |c| c.to_string())
        )),
        None => Verdict::Fail(format!(
            "answered with {} (a tool result, not an error)",
            said(&reply)
        )),
    }
}

/// The tool to send refused arguments to, and the arguments: a read-only
/// tool (its annotations say so) whose schema certainly refuses something;
/// else any tool with a required argument, called with none (a handler
/// that runs anyway has nothing it requires to act on).
fn refusing_tool(tools: &[Value]) -> Option<(String, Value, String)> {
    let read_only = |t: &&Value| t.pointer("/annotations/readOnlyHint") == Some(&json!(true));
    let passes = [(true, true), (false, false)];
    for (only_read_only, any_way) in passes {
        for tool in tools
            .iter()
            .filter(|t| read_only(t) == only_read_only || !only_read_only)
        {
            let (Some(name), Some(schema)) = (
                tool.get("name").and_then(Value::as_str),
                tool.get("inputSchema"),
            ) else {
                continue;
            };
            if let Some((args, why)) = refused_arguments(schema, any_way) {
                return Some((name.to_owned(), args, why));
            }
        }
    }
    None
}

fn wrong_arguments(ctx: &mut Ctx) -> Verdict {
    let tools = match listed_tools(ctx) {
        Ok(t) => t,
        Err(v) => return v,
    };
    let Some((name, args, why)) = refusing_tool(&tools) else {
        return Verdict::Skip(
            "no tool's input schema certainly refuses any arguments this checker can make".into(),
        );
    };
    let reply = match ctx.ask("tools/call", json!({ "name": name, "arguments": args })) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match (reply.get("result"), error_code(&reply)) {
        (Some(result), _) if result.get("isError") == Some(&json!(true)) => {
            Verdict::Pass(format!("{name} with {why}: a result with isError: true"))
        }
        (Some(result), _)
            if result.get("resultType").and_then(Value::as_str) == Some("input_required") =>
        {
            Verdict::Skip(format!(
                "{name} asked for input instead of reading its arguments"
            ))
        }
        (Some(result), _) => Verdict::Fail(format!(
            "{name} with {why}: a result without isError: true ({})",
            short(&result.to_string(), 160)
        )),
        (None, Some(code)) => Verdict::Fail(format!(
            "{name} with {why}: a protocol error ({code}), which the model never sees, instead of a result with isError"
        )),
        (None, None) => Verdict::Fail(format!("{name}: answered with {}", said(&reply))),
    }
}

/// Missing Required Client Capability (2026-07-28): a tool that needs
/// what the check's client does not declare.
const MISSING_CAPABILITY: i64 = -32021;

/// The result of the first tool named with `--call` that answers with a
/// complete result: a tool that answers `input_required` or a task, or
/// needs a capability the check does not declare (`-32021`), is not this
/// check's (the mrtr and tasks checks take those), nor one not answered
/// within the wait or answered unreadably, and the next is tried.
fn call_result(ctx: &mut Ctx) -> Verdict {
    let tools = match listed_tools(ctx) {
        Ok(t) => t,
        Err(v) => return v,
    };
    if ctx.calls.is_empty() {
        return Verdict::Skip(
            "needs --call TOOL[=JSON]: no tool is called with arguments it accepts unless named"
                .into(),
        );
    }
    let mut tried = Vec::new();
    let calls = std::sync::Arc::clone(&ctx.calls);
    for call in calls.iter() {
        let Some(tool) = tools
            .iter()
            .find(|t| t.get("name") == Some(&json!(call.tool)))
        else {
            tried.push(format!("{}: the server lists no such tool", call.tool));
            continue;
        };
        let wait = ctx.wait;
        let session = match ctx.session() {
            Ok(s) => s,
            Err(v) => return v,
        };
        let params = json!({ "name": call.tool, "arguments": call.arguments });
        let reply = match session.call("tools/call", params, wait) {
            Ok(r) => r,
            // Not answered in time, or not readable whole: no result to
            // check (a slow tool breaks no rule of the result's); the next
            // is tried, and the skip names it if none fits.
            Err(e @ (Missing::Timeout(_) | Missing::Unreadable { .. })) => {
                tried.push(format!("{}: {e}", call.tool));
                continue;
            }
            Err(e) => return e.verdict("tools/call"),
        };
        if error_code(&reply) == Some(MISSING_CAPABILITY) {
            tried.push(format!("{}: {}", call.tool, said(&reply)));
            continue;
        }
        let Some(result) = reply.get("result") else {
            return Verdict::Fail(format!("{} answered with {}", call.tool, said(&reply)));
        };
        match result.get("resultType").and_then(Value::as_str) {
            Some(other) if other != "complete" => {
                tried.push(format!("{} answered {other:?}", call.tool));
                continue;
            }
            _ => return complete_result(ctx, call, tool, result),
        }
    }
    Verdict::Skip(format!(
        "no tool named with --call answered with a complete result ({})",
        short(&tried.join(", "), 200)
    ))
}

/// The complete result of `call`'s tool: a CallToolResult, its
/// structuredContent fitting the tool's outputSchema.
fn complete_result(ctx: &Ctx, call: &Call, tool: &Value, result: &Value) -> Verdict {
    let era = ctx.facts.primary.unwrap_or(Era::Modern);
    if let verdict @ Verdict::Fail(_) = validate(era, "CallToolResult", result, "tools/call") {
        return verdict;
    }
    let (Some(output), false) = (
        tool.get("outputSchema"),
        result.get("isError") == Some(&json!(true)),
    ) else {
        return Verdict::Pass(format!("{}: a valid CallToolResult", call.tool));
    };
    let Some(structured) = result.get("structuredContent") else {
        return Verdict::Fail(format!(
            "{} has an outputSchema but its result has no structuredContent",
            call.tool
        ));
    };
    match Document::of(output).validate(structured) {
        Found::Valid => Verdict::Pass(format!(
            "{}: a valid CallToolResult; structuredContent fits the outputSchema",
            call.tool
        )),
        Found::Invalid(errors) => Verdict::Fail(format!(
            "{}: structuredContent does not fit the outputSchema: {}",
            call.tool,
            errors.join("; ")
        )),
        Found::Unknown(keyword) => Verdict::Pass(format!(
            "{}: a valid CallToolResult (the outputSchema uses {keyword}, not checked)",
            call.tool
        )),
    }
}
