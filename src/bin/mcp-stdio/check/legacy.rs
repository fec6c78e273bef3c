//! The legacy era (2025-11-25): `initialize`, version negotiation, `ping`,
//! `logging/setLevel`. Each on a session of that era, when the server
//! speaks it (and `--era` is not `modern`).

use serde_json::{Value, json};

use super::driver::{Era, LEGACY};
use super::{Check, Ctx, Level, Verdict, said};

const LIFECYCLE: &str = "2025-11-25/basic/lifecycle.md";

pub const CHECKS: &[Check] = &[
    Check {
        id: "legacy.initialize",
        level: Level::Must,
        page: LIFECYCLE,
        quote: "The server **MUST** respond with its own capabilities and information:",
        title: "initialize is answered with protocolVersion, capabilities and serverInfo",
        run: initialize,
    },
    Check {
        id: "legacy.version-negotiation",
        level: Level::Must,
        page: LIFECYCLE,
        quote: "Otherwise, the server **MUST** respond with another protocol version it supports.",
        title: "initialize with version 1900-01-01 is answered with a version the server supports",
        run: version_negotiation,
    },
    Check {
        id: "legacy.ping",
        level: Level::Must,
        page: "2025-11-25/basic/utilities/ping.md",
        quote: "The receiver **MUST** respond promptly with an empty response:",
        title: "ping is answered with an empty result",
        run: ping,
    },
    Check {
        id: "legacy.set-level",
        level: Level::Should,
        page: "2025-11-25/schema.json#SetLevelRequest",
        quote: "A request from the client to the server, to enable or adjust logging.",
        title: "a server that declares logging answers logging/setLevel with a result",
        run: set_level,
    },
];

fn initialize(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = super::Facts::malformed_handshake(ctx.facts.no_legacy.as_deref()) {
        return v;
    }
    if let Err(v) = ctx.facts.need_legacy() {
        return v;
    }
    let Some(result) = ctx.facts.initialize.clone() else {
        return Verdict::Skip(
            ctx.facts
                .unread_legacy
                .clone()
                .unwrap_or_else(|| "no initialize result".into()),
        );
    };
    let missing: Vec<&str> = ["protocolVersion", "capabilities", "serverInfo"]
        .into_iter()
        .filter(|k| result.get(*k).is_none())
        .collect();
    if missing.is_empty() {
        Verdict::Pass(format!("protocolVersion {}", result["protocolVersion"]))
    } else {
        Verdict::Fail(format!("the result lacks {}", missing.join(", ")))
    }
}

fn version_negotiation(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = ctx.facts.need_legacy() {
        return v;
    }
    let mut session = match ctx.fresh_connect() {
        Ok(s) => s,
        Err(v) => return v,
    };
    session.era = Era::Legacy;
    let reply = match session.initialize("1900-01-01", ctx.wait) {
        Ok(_) if session.unread.is_some() => {
            return Verdict::Skip(session.unread.clone().unwrap_or_default());
        }
        Ok(reply) => reply,
        Err(e) => return Verdict::Fail(e),
    };
    match reply
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
    {
        Some("1900-01-01") => {
            Verdict::Fail("it answered 1900-01-01, a version that never existed".into())
        }
        Some(v) => Verdict::Pass(format!("answered {v}")),
        None => Verdict::Fail(format!("no protocolVersion in {}", said(&reply))),
    }
}

fn ping(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = ctx.facts.need_legacy() {
        return v;
    }
    let wait = ctx.wait;
    let session = match ctx.session_in(Era::Legacy) {
        Ok(s) => s,
        Err(v) => return v,
    };
    let reply = match session.call("ping", json!({}), wait) {
        Ok(r) => r,
        Err(e) => return e.verdict_wanting_result("ping"),
    };
    match reply.get("result").and_then(Value::as_object) {
        Some(r) if r.keys().all(|k| k == "_meta") => Verdict::Pass("an empty result".into()),
        Some(_) => Verdict::Fail(format!("a result that is not empty: {}", said(&reply))),
        None => Verdict::Fail(format!("answered with {}", said(&reply))),
    }
}

fn set_level(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = ctx.facts.need_legacy() {
        return v;
    }
    let declares = ctx
        .facts
        .initialize
        .as_ref()
        .and_then(|i| i.pointer("/capabilities/logging"))
        .is_some();
    if !declares {
        return match &ctx.facts.unread_legacy {
            Some(why) => Verdict::Skip(format!(
                "whether the server offers logging is unknown: {why}"
            )),
            None => Verdict::Skip("the server does not declare logging".into()),
        };
    }
    let wait = ctx.wait;
    let session = match ctx.session_in(Era::Legacy) {
        Ok(s) => s,
        Err(v) => return v,
    };
    let _ = LEGACY;
    match session.call("logging/setLevel", json!({ "level": "info" }), wait) {
        Ok(reply) if reply.get("result").is_some() => {
            Verdict::Pass("answered with a result".into())
        }
        Ok(reply) => Verdict::Fail(format!("answered with {}", said(&reply))),
        Err(e) => e.verdict_wanting_result("logging/setLevel"),
    }
}
