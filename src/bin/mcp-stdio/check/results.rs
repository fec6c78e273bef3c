//! Every result against `schema.json` of its era: the definition of the
//! method's result (`DiscoverResult`, `ListToolsResult`, ...), in the
//! 2026-07-28 schema for a modern session and the 2025-11-25 one for a
//! legacy session.

use std::sync::OnceLock;

use serde_json::{Value, json};

use super::driver::Era;
use super::schema::{self, Document, Found};
use super::{Check, Ctx, Level, Verdict, error_code, said};

/// The schema's own claim, quoted by every schema check: it has no
/// keyword, so a result that breaks the schema is a warning, not a
/// failed MUST.
const TRUTH: &str = "This is the source of truth for all protocol messages and structures.";

macro_rules! result_check {
    ($id:literal, $title:literal, $run:ident) => {
        Check {
            id: $id,
            // The sentence has no keyword: a SHOULD (CONFORMANCE.md).
            level: Level::Should,
            page: "2026-07-28/basic/index.md",
            quote: TRUTH,
            title: $title,
            run: $run,
        }
    };
}

pub const CHECKS: &[Check] = &[
    result_check!(
        "schema.discover",
        "server/discover's result is a DiscoverResult",
        discover
    ),
    result_check!(
        "schema.initialize",
        "initialize's result is an InitializeResult (2025-11-25)",
        initialize
    ),
    result_check!(
        "schema.tools-list",
        "tools/list's result is a ListToolsResult",
        tools_list
    ),
    result_check!(
        "schema.resources-list",
        "resources/list's result is a ListResourcesResult",
        resources_list
    ),
    result_check!(
        "schema.templates-list",
        "resources/templates/list's result is a ListResourceTemplatesResult",
        templates_list
    ),
    result_check!(
        "schema.resources-read",
        "reading the first resource listed gives a ReadResourceResult",
        resources_read
    ),
    result_check!(
        "schema.prompts-list",
        "prompts/list's result is a ListPromptsResult",
        prompts_list
    ),
    result_check!(
        "schema.prompts-get",
        "getting the first prompt without required arguments gives a GetPromptResult",
        prompts_get
    ),
    result_check!(
        "schema.error",
        "an error response is a JSONRPCErrorResponse",
        error
    ),
];

/// The schema of an era.
pub fn document(era: Era) -> &'static Document {
    static MODERN: OnceLock<Document> = OnceLock::new();
    static LEGACY: OnceLock<Document> = OnceLock::new();
    match era {
        Era::Modern => MODERN.get_or_init(|| Document::parse(schema::MODERN)),
        Era::Legacy => LEGACY.get_or_init(|| Document::parse(schema::LEGACY)),
    }
}

/// `value` against the definition `name` of `era`'s schema.
pub fn validate(era: Era, name: &str, value: &Value, what: &str) -> Verdict {
    match document(era).validate_def(name, value) {
        Found::Valid => Verdict::Pass(format!("{what}: a valid {name} ({})", era_schema(era))),
        Found::Invalid(errors) => Verdict::Fail(format!(
            "{what} is not a valid {name} ({}): {}",
            era_schema(era),
            errors.join("; ")
        )),
        Found::Unknown(keyword) => Verdict::Skip(format!(
            "{name}: the schema uses {keyword}, which this checker does not know"
        )),
    }
}

fn era_schema(era: Era) -> &'static str {
    match era {
        Era::Modern => "2026-07-28",
        Era::Legacy => "2025-11-25",
    }
}

/// Sends `method` in the primary era and validates its result as `name`.
fn result_of(ctx: &mut Ctx, method: &str, params: Value, name: &str) -> Verdict {
    result_or(ctx, method, params, name, &[])
}

/// `result_of`, where an error with one of the codes in `allowed` (one
/// the spec names for `method`) is a skip: no result to check, and not a
/// violation (`schema.error` checks errors).
fn result_or(ctx: &mut Ctx, method: &str, params: Value, name: &str, allowed: &[i64]) -> Verdict {
    let era = ctx.facts.primary.unwrap_or(Era::Modern);
    let reply = match ctx.ask(method, params) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match reply.get("result") {
        Some(result) => validate(era, name, result, method),
        None if error_code(&reply).is_some_and(|code| allowed.contains(&code)) => {
            Verdict::Skip(format!(
                "{method} answered with {}, an error the spec names: no result to check",
                said(&reply)
            ))
        }
        None => Verdict::Fail(format!("{method} answered with {}", said(&reply))),
    }
}

fn discover(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = ctx.facts.need_modern_primary() {
        return v;
    }
    result_of(ctx, "server/discover", json!({}), "DiscoverResult")
}

fn initialize(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = ctx.facts.need_legacy() {
        return v;
    }
    match &ctx.facts.initialize {
        Some(result) => validate(Era::Legacy, "InitializeResult", result, "initialize"),
        None => Verdict::Skip(
            ctx.facts
                .unread_legacy
                .clone()
                .unwrap_or_else(|| "no initialize result".into()),
        ),
    }
}

fn offered(ctx: &Ctx, capability: &str) -> Result<(), Verdict> {
    if ctx.facts.offers(capability) {
        Ok(())
    } else {
        Err(ctx.facts.lacks(capability))
    }
}

fn tools_list(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "tools") {
        return v;
    }
    result_of(ctx, "tools/list", json!({}), "ListToolsResult")
}

fn resources_list(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "resources") {
        return v;
    }
    result_of(ctx, "resources/list", json!({}), "ListResourcesResult")
}

fn templates_list(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "resources") {
        return v;
    }
    result_of(
        ctx,
        "resources/templates/list",
        json!({}),
        "ListResourceTemplatesResult",
    )
}

fn resources_read(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "resources") {
        return v;
    }
    let Some(uri) = ctx
        .facts
        .list("resources")
        .iter()
        .find_map(|r| r.get("uri").and_then(Value::as_str))
        .map(str::to_owned)
    else {
        return Verdict::Skip("the server lists no resource".into());
    };
    // resources.md: -32602 for a resource not found (2025-11-25: -32002),
    // and "Servers SHOULD return -32603 for internal errors".
    result_or(
        ctx,
        "resources/read",
        json!({ "uri": uri }),
        "ReadResourceResult",
        &[-32002, -32602, -32603],
    )
}

fn prompts_list(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "prompts") {
        return v;
    }
    result_of(ctx, "prompts/list", json!({}), "ListPromptsResult")
}

fn prompts_get(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "prompts") {
        return v;
    }
    let free = ctx.facts.list("prompts").iter().find(|p| {
        !p.get("arguments")
            .and_then(Value::as_array)
            .is_some_and(|args| args.iter().any(|a| a.get("required") == Some(&json!(true))))
    });
    let Some(name) = free
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        if let Some(skip) = ctx.facts.unknown_list(&["prompts"]) {
            return skip;
        }
        return Verdict::Skip("every prompt listed has a required argument".into());
    };
    // prompts.md's error handling: -32602 for invalid arguments, -32603
    // for internal errors.
    result_or(
        ctx,
        "prompts/get",
        json!({ "name": name }),
        "GetPromptResult",
        &[-32602, -32603],
    )
}

fn error(ctx: &mut Ctx) -> Verdict {
    let era = ctx.facts.primary.unwrap_or(Era::Modern);
    let reply = match ctx.ask_error("mcp-stdio-check/no-such-method", json!({})) {
        Ok(r) => r,
        Err(v) => return v,
    };
    if reply.get("error").is_none() {
        return Verdict::Fail(format!("an unknown method answered with {}", said(&reply)));
    }
    validate(era, "JSONRPCErrorResponse", &reply, "the error response")
}
