//! The 2026-07-28 lifecycle: `server/discover`, `resultType`, an
//! unsupported protocol version, the per-request `_meta` a request must
//! carry, the server's identity.

use serde_json::{Value, json};

use super::driver::MODERN;
use super::{Check, Ctx, Level, Verdict, error_code, said, short};

pub const CHECKS: &[Check] = &[
    Check {
        id: "lifecycle.discover",
        level: Level::Must,
        page: "2026-07-28/server/discover.md",
        quote: "Servers **MUST** implement it.",
        title: "server/discover is answered with the versions (2026-07-28 among them) and capabilities",
        run: discover,
    },
    Check {
        id: "lifecycle.result-type",
        level: Level::Must,
        page: "2026-07-28/basic/index.md",
        quote: "The `result` **MUST** include a `resultType` field to indicate the type of the result.",
        title: "results carry resultType (server/discover, and each list offered)",
        run: result_type,
    },
    Check {
        id: "lifecycle.unsupported-version",
        level: Level::Must,
        page: "2026-07-28/basic/versioning.md",
        quote: "If the server does not implement the requested version (whether the version is unknown to the server, or is a known version the server has chosen not to support), it **MUST** respond with an `UnsupportedProtocolVersionError` listing the versions it does support:",
        title: "a request for version 1900-01-01 gets -32022 with data.supported and data.requested",
        run: unsupported_version,
    },
    Check {
        id: "lifecycle.meta-capabilities-required",
        level: Level::Must,
        page: "2026-07-28/basic/index.md",
        quote: "A request missing any required field is malformed; the server **MUST** reject it with JSON-RPC error code `-32602` (Invalid params).",
        title: "a request whose _meta lacks clientCapabilities gets -32602",
        run: meta_capabilities_required,
    },
    Check {
        id: "lifecycle.meta-version-required",
        level: Level::Must,
        page: "2026-07-28/basic/index.md",
        quote: "A request missing any required field is malformed; the server **MUST** reject it with JSON-RPC error code `-32602` (Invalid params).",
        title: "a request whose _meta lacks protocolVersion (but has clientCapabilities) gets -32602",
        run: meta_version_required,
    },
    Check {
        id: "lifecycle.server-info",
        level: Level::Should,
        page: "2026-07-28/server/discover.md",
        quote: "Servers **SHOULD** include this field.",
        title: "server/discover names the server (_meta serverInfo)",
        run: server_info,
    },
    Check {
        id: "lifecycle.result-server-info",
        level: Level::Should,
        page: "2026-07-28/basic/index.md",
        quote: "Servers **SHOULD** include the following `io.modelcontextprotocol/*` field in every result's `_meta`, unless specifically configured not to do so, to identify themselves without relying on any prior connection state:",
        title: "other results name the server too (tools/list or server/discover)",
        run: result_server_info,
    },
];

/// A modern session, or a skip.
fn modern(ctx: &mut Ctx) -> Result<(), Verdict> {
    ctx.facts.need_modern_primary()?;
    Ok(())
}

fn discover(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = super::Facts::malformed_handshake(ctx.facts.no_modern.as_deref()) {
        return v;
    }
    if let Err(v) = modern(ctx) {
        return v;
    }
    let reply = match ctx.ask_result("server/discover", json!({})) {
        Ok(r) => r,
        Err(v) => return v,
    };
    let Some(result) = reply.get("result") else {
        return Verdict::Fail(format!("answered with {}", said(&reply)));
    };
    let versions = result.get("supportedVersions").and_then(Value::as_array);
    match versions {
        None => Verdict::Fail("the result has no supportedVersions array".into()),
        Some(v) if !v.contains(&json!(MODERN)) => Verdict::Fail(format!(
            "supportedVersions {} lacks {MODERN}, though the server answered a request for it",
            Value::Array(v.clone())
        )),
        Some(_) if !result.get("capabilities").is_some_and(Value::is_object) => {
            Verdict::Fail("the result has no capabilities object".into())
        }
        Some(v) => Verdict::Pass(format!("supportedVersions {}", Value::Array(v.clone()))),
    }
}

/// The core protocol's `ResultType` values (basic/index.md).
const RESULT_TYPES: &[&str] = &["complete", "input_required"];
/// The Tasks extension, whose `"task"` is a `ResultType` when advertised.
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Each result has a `resultType`, one of the protocol's values: "The set
/// of supported `ResultType` values **MUST** be created from the set
/// defined in the core protocol and include any additional values of
/// supported extensions that are advertised via capabilities".
fn result_type(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = modern(ctx) {
        return v;
    }
    let mut methods = vec!["server/discover"];
    for (capability, method) in [
        ("tools", "tools/list"),
        ("resources", "resources/list"),
        ("prompts", "prompts/list"),
    ] {
        if ctx.facts.offers(capability) {
            methods.push(method);
        }
    }
    for method in &methods {
        let reply = match ctx.ask_result(method, json!({})) {
            Ok(r) => r,
            Err(v) => return v,
        };
        let Some(result) = reply.get("result") else {
            return Verdict::Fail(format!("{method} answered with {}", said(&reply)));
        };
        match result.get("resultType") {
            Some(Value::String(t)) if RESULT_TYPES.contains(&t.as_str()) => {}
            Some(Value::String(t)) if t == "task" && ctx.facts.offers_extension(TASKS) => {}
            Some(Value::String(t)) => {
                return Verdict::Fail(format!(
                    "{method}: resultType {t:?} is none of the protocol's (complete, input_required; task with the Tasks extension): \"The set of supported ResultType values MUST be created from the set defined in the core protocol\""
                ));
            }
            Some(other) => {
                return Verdict::Fail(format!("{method}: resultType is {other}, not a string"));
            }
            None => return Verdict::Fail(format!("{method}: the result has no resultType")),
        }
    }
    Verdict::Pass(format!("{} results, each with resultType", methods.len()))
}

fn unsupported_version(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = modern(ctx) {
        return v;
    }
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "1900-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let reply = match ctx.ask_error("server/discover", json!({ "_meta": meta })) {
        Ok(r) => r,
        Err(v) => return v,
    };
    if error_code(&reply) != Some(-32022) {
        return Verdict::Fail(format!("answered with {} instead of -32022", said(&reply)));
    }
    let data = reply.pointer("/error/data");
    let supported = data
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array);
    let requested = data
        .and_then(|d| d.get("requested"))
        .and_then(Value::as_str);
    match (supported, requested) {
        (Some(s), Some("1900-01-01")) if s.iter().all(Value::is_string) => {
            Verdict::Pass(format!("-32022, supported {}", Value::Array(s.clone())))
        }
        (None, _) => Verdict::Fail("-32022 without data.supported (an array of versions)".into()),
        (_, None) => Verdict::Fail("-32022 without data.requested".into()),
        (_, Some(other)) => Verdict::Fail(format!(
            "-32022 names {other:?} as requested, not 1900-01-01"
        )),
    }
}

/// The method a `_meta` check sends: a list the server offers, else
/// `server/discover`.
fn plain_method(ctx: &Ctx) -> &'static str {
    if ctx.facts.offers("tools") {
        "tools/list"
    } else if ctx.facts.offers("prompts") {
        "prompts/list"
    } else if ctx.facts.offers("resources") {
        "resources/list"
    } else {
        "server/discover"
    }
}

fn missing_meta(ctx: &mut Ctx, meta: Value, lacks: &str) -> Verdict {
    if let Err(v) = modern(ctx) {
        return v;
    }
    let method = plain_method(ctx);
    let reply = match ctx.ask_error(method, json!({ "_meta": meta })) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match error_code(&reply) {
        Some(-32602) => Verdict::Pass(format!("{method} without {lacks}: -32602")),
        _ => Verdict::Fail(format!(
            "{method} without {lacks} answered with {}",
            said(&reply)
        )),
    }
}

fn meta_capabilities_required(ctx: &mut Ctx) -> Verdict {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": MODERN });
    missing_meta(ctx, meta, "clientCapabilities")
}

fn meta_version_required(ctx: &mut Ctx) -> Verdict {
    if !ctx.target.is_stdio() {
        // Spec 2026-07-28 basic/transports/streamable-http: a server that
        // supports older clients MAY treat a request without the version
        // header as 2025-03-26.
        return Verdict::Skip(
            "over HTTP a request without a version is a legacy one to a server that serves both eras".into(),
        );
    }
    let meta = json!({ "io.modelcontextprotocol/clientCapabilities": {} });
    missing_meta(ctx, meta, "protocolVersion")
}

fn server_info(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = modern(ctx) {
        return v;
    }
    if let (None, Some(why)) = (&ctx.facts.discover, &ctx.facts.unread_modern) {
        return Verdict::Skip(why.clone());
    }
    let info = ctx
        .facts
        .discover
        .as_ref()
        .and_then(|d| d.pointer("/_meta/io.modelcontextprotocol~1serverInfo"));
    match info {
        Some(info) if info.get("name").is_some_and(Value::is_string) => {
            Verdict::Pass(format!("serverInfo {}", short(&info.to_string(), 120)))
        }
        Some(info) => Verdict::Fail(format!("serverInfo without a name: {info}")),
        None => {
            Verdict::Fail("the result's _meta has no io.modelcontextprotocol/serverInfo".into())
        }
    }
}

fn result_server_info(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = modern(ctx) {
        return v;
    }
    let method = plain_method(ctx);
    let reply = match ctx.ask_result(method, json!({})) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match reply.pointer("/result/_meta/io.modelcontextprotocol~1serverInfo") {
        Some(_) => Verdict::Pass(format!("{method}'s result names the server")),
        None if reply.get("result").is_none() => {
            Verdict::Fail(format!("{method} answered with {}", said(&reply)))
        }
        None => Verdict::Fail(format!("{method}'s result has no _meta serverInfo")),
    }
}
