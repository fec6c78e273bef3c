//! Resources, templates, prompts and completion, where offered: the lists,
//! an unknown resource, an unknown prompt, a completion's result.

use serde_json::{Value, json};

use super::driver::Era;
use super::results::validate;
use super::{Check, Ctx, Level, Verdict, error_code, list_all, said, short};

pub const CHECKS: &[Check] = &[
    Check {
        id: "resources.list",
        level: Level::Must,
        page: "2026-07-28/server/resources.md",
        quote: "Servers that declare the `resources` capability **MUST** respond to `resources/list` requests with the set of resources currently available to the requesting client.",
        title: "resources/list and resources/templates/list answer, every page",
        run: resources_list,
    },
    Check {
        id: "resources.unknown-uri",
        level: Level::Must,
        page: "2026-07-28/server/resources.md",
        quote: "If the requested resource does not exist, servers **MUST** return a JSON-RPC error with code `-32602` (Invalid Params).",
        title: "reading a resource that does not exist gets -32602 (modern era)",
        run: unknown_uri,
    },
    Check {
        id: "resources.unknown-uri-legacy",
        level: Level::Should,
        page: "2025-11-25/server/resources.md",
        quote: "Servers **SHOULD** return standard JSON-RPC errors for common failure cases:",
        title: "reading a resource that does not exist gets -32002 (legacy era; -32602 taken too)",
        run: unknown_uri_legacy,
    },
    Check {
        id: "prompts.list",
        level: Level::Must,
        page: "2026-07-28/server/prompts.md",
        quote: "Servers that declare the `prompts` capability **MUST** respond to `prompts/list` requests with the set of prompts currently available to the requesting client.",
        title: "prompts/list answers, every page",
        run: prompts_list,
    },
    Check {
        id: "prompts.unknown-name",
        level: Level::Should,
        page: "2026-07-28/server/prompts.md",
        quote: "Servers **SHOULD** return standard JSON-RPC errors for common failure cases:",
        title: "getting a prompt that does not exist gets -32602",
        run: unknown_prompt,
    },
    Check {
        id: "completion.complete",
        level: Level::Should,
        page: "2026-07-28/basic/index.md",
        quote: "This is the source of truth for all protocol messages and structures.",
        title: "completion/complete for a prompt's argument gives a CompleteResult (at most 100 values)",
        run: complete,
    },
];

fn offered(ctx: &Ctx, capability: &str) -> Result<(), Verdict> {
    if ctx.facts.offers(capability) {
        Ok(())
    } else {
        Err(ctx.facts.lacks(capability))
    }
}

fn lists(ctx: &mut Ctx, capability: &str, lists: &[(&str, &str)]) -> Verdict {
    if let Err(v) = offered(ctx, capability) {
        return v;
    }
    let (wait, until) = (ctx.wait, ctx.list_until());
    let session = match ctx.session() {
        Ok(s) => s,
        Err(v) => return v,
    };
    let mut said = Vec::new();
    for (method, member) in lists {
        match list_all(session, method, member, wait, until) {
            Ok(items) => said.push(format!("{} {member}", items.len())),
            Err(v) => return v,
        }
    }
    Verdict::Pass(said.join(", "))
}

fn resources_list(ctx: &mut Ctx) -> Verdict {
    lists(
        ctx,
        "resources",
        &[
            ("resources/list", "resources"),
            ("resources/templates/list", "resourceTemplates"),
        ],
    )
}

fn prompts_list(ctx: &mut Ctx) -> Verdict {
    lists(ctx, "prompts", &[("prompts/list", "prompts")])
}

/// A URI no server serves.
const UNKNOWN_URI: &str = "mcp-stdio-check-unknown:///no/such/resource";

fn unknown_uri(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "resources") {
        return v;
    }
    if ctx.facts.primary == Some(Era::Legacy) {
        return Verdict::Skip(
            "a legacy server: resources.unknown-uri-legacy holds it to 2025-11-25".into(),
        );
    }
    let uri = UNKNOWN_URI;
    let reply = match ctx.ask("resources/read", json!({ "uri": uri })) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match (error_code(&reply), reply.pointer("/result/contents")) {
        (Some(-32602), _) => Verdict::Pass("-32602".into()),
        (Some(-32002), _) => Verdict::Fail(
            "-32002, which 2026-07-28 retired: \"Implementations of this protocol version MUST NOT emit these codes\"".into(),
        ),
        (Some(code), _) => Verdict::Fail(format!("error {code} instead of -32602: {}", said(&reply))),
        (None, Some(Value::Array(c))) if c.is_empty() => {
            Verdict::Fail("a result with an empty contents array (\"Servers MUST NOT return an empty contents array for a non-existent resource\")".into())
        }
        (None, _) => Verdict::Fail(format!("{uri} was read: {}", said(&reply))),
    }
}

fn unknown_uri_legacy(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = ctx.facts.need_legacy() {
        return v;
    }
    let offers = ctx
        .facts
        .initialize
        .as_ref()
        .and_then(|i| i.pointer("/capabilities/resources"))
        .is_some();
    if !offers {
        return Verdict::Skip("the server offers no resources in the legacy era".into());
    }
    let wait = ctx.wait;
    let session = match ctx.session_in(Era::Legacy) {
        Ok(s) => s,
        Err(v) => return v,
    };
    let reply = match session.call("resources/read", json!({ "uri": UNKNOWN_URI }), wait) {
        Ok(r) => r,
        Err(e) => return e.verdict("resources/read"),
    };
    match error_code(&reply) {
        Some(-32002) => Verdict::Pass("-32002".into()),
        Some(-32602) => Verdict::Pass("-32602 (the 2026-07-28 code)".into()),
        _ => Verdict::Fail(format!("answered with {} instead of -32002", said(&reply))),
    }
}

fn unknown_prompt(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "prompts") {
        return v;
    }
    let reply = match ctx.ask_error(
        "prompts/get",
        json!({ "name": "mcp-stdio-check-no-such-prompt" }),
    ) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match error_code(&reply) {
        Some(-32602) => Verdict::Pass("-32602".into()),
        _ => Verdict::Fail(format!("answered with {}", said(&reply))),
    }
}

fn complete(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = offered(ctx, "completions") {
        return v;
    }
    let era = ctx.facts.primary.unwrap_or(Era::Modern);
    let target = ctx.facts.list("prompts").iter().find_map(|p| {
        let name = p.get("name")?.as_str()?;
        let arg = p
            .get("arguments")?
            .as_array()?
            .first()?
            .get("name")?
            .as_str()?;
        Some((
            json!({ "type": "ref/prompt", "name": name }),
            arg.to_owned(),
        ))
    });
    let target = target.or_else(|| {
        ctx.facts.list("resourceTemplates").iter().find_map(|t| {
            let template = t.get("uriTemplate")?.as_str()?;
            let start = template.find('{')?;
            let end = template[start..].find('}')? + start;
            let var =
                template[start + 1..end].trim_start_matches(['+', '#', '/', '?', '&', '.', ';']);
            let var = var.split([',', '*', ':']).next()?;
            Some((
                json!({ "type": "ref/resource", "uri": template }),
                var.to_owned(),
            ))
        })
    });
    let Some((reference, argument)) = target else {
        if let Some(skip) = ctx.facts.unknown_list(&["prompts", "resourceTemplates"]) {
            return skip;
        }
        return Verdict::Skip("no prompt argument or template variable to complete".into());
    };
    let reply = match ctx.ask(
        "completion/complete",
        json!({ "ref": reference, "argument": { "name": argument, "value": "" } }),
    ) {
        Ok(r) => r,
        Err(v) => return v,
    };
    let Some(result) = reply.get("result") else {
        // completion.md's error handling: -32602 for invalid or missing
        // arguments, -32603 for internal errors. Answers the spec names,
        // with no result to check.
        if matches!(error_code(&reply), Some(-32602 | -32603)) {
            return Verdict::Skip(format!(
                "completing {argument} of {}: {}, an error the spec names: no result to check",
                short(&reference.to_string(), 80),
                said(&reply)
            ));
        }
        return Verdict::Fail(format!(
            "completing {argument} of {}: {}",
            short(&reference.to_string(), 80),
            said(&reply)
        ));
    };
    validate(era, "CompleteResult", result, "completion/complete")
}
