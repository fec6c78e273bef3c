//! Subscriptions (2026-07-28): `subscriptions/listen` acknowledged before
//! anything else of its subscription, unsupported notification types
//! omitted from the acknowledgment, the listen answered when the server
//! ends it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::driver::{Era, Missing, Msg, Session};
use super::{Check, Ctx, Level, Verdict, error_code, said, short};

const PAGE: &str = "2026-07-28/basic/patterns/subscriptions.md";
const ACK: &str = "notifications/subscriptions/acknowledged";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

pub const CHECKS: &[Check] = &[
    Check {
        id: "subscriptions.ack-first",
        level: Level::Must,
        page: PAGE,
        quote: "The server **MUST** send `notifications/subscriptions/acknowledged` as the first message carrying the subscription's ID in `_meta` under `io.modelcontextprotocol/subscriptionId`, and **MUST NOT** send any notification on the subscription before it.",
        title: "the acknowledgment comes before any other message of its subscription",
        run: ack_first,
    },
    Check {
        id: "subscriptions.ack-omits-unsupported",
        level: Level::Should,
        page: PAGE,
        quote: "Notification types the server does not support are omitted.",
        title: "the acknowledged filter holds only what was asked and the capabilities declare",
        run: ack_omits_unsupported,
    },
    Check {
        id: "subscriptions.final-result",
        level: Level::Should,
        page: PAGE,
        quote: "When the server ends a subscription on its own initiative (for example, during shutdown), it **SHOULD** respond to the original `subscriptions/listen` request with a completion result before closing the stream.",
        title: "at the end of input, an open listen is answered with a result before the output ends",
        run: final_result,
    },
];

/// Everything a listen can ask for: the three list changes, and the
/// first resource listed.
fn filter(ctx: &Ctx) -> Value {
    let mut filter = json!({ "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true });
    if let Some(uri) = ctx
        .facts
        .list("resources")
        .iter()
        .find_map(|r| r.get("uri"))
    {
        filter["resourceSubscriptions"] = json!([uri]);
    }
    filter
}

/// What a listen brought until its acknowledgment: the ack, the first
/// message of the subscription before it and how many came before it (not
/// every one: a server may send any number, each up to a line's limit);
/// or a skip when the server does not offer listens.
struct Opened {
    id: Value,
    ack: Option<Value>,
    first_before_ack: Option<Msg>,
    before_ack: usize,
    /// The listen's response, if it came (an error, or a result at once).
    reply: Option<Value>,
}

fn open(session: &mut Session, filter: &Value, wait: Duration) -> Result<Opened, Verdict> {
    let id = session.request("subscriptions/listen", json!({ "notifications": filter }));
    let deadline = Instant::now() + wait;
    let mut opened = Opened {
        id: id.clone(),
        ack: None,
        first_before_ack: None,
        before_ack: 0,
        reply: None,
    };
    while opened.ack.is_none() {
        let Some(msg) = session.recv_until(deadline) else {
            let why = if session.ended {
                Missing::Eof
            } else {
                Missing::Timeout(wait)
            };
            return Err(Verdict::Fail(format!("no acknowledgment: {why}")));
        };
        let Some(v) = msg.json() else { continue };
        if msg.is_response() && v.get("id") == Some(&id) {
            opened.reply = Some(v.clone());
            if v.get("error").is_some() {
                break;
            }
            continue;
        }
        let sub = v
            .pointer("/params/_meta")
            .and_then(|m| m.get(SUBSCRIPTION_ID));
        if sub != Some(&id) {
            continue;
        }
        if msg.method() == Some(ACK) {
            opened.ack = Some(v.clone());
        } else {
            opened.before_ack += 1;
            if opened.first_before_ack.is_none() {
                opened.first_before_ack = Some(msg);
            }
        }
    }
    if let Some(reply) = &opened.reply
        && opened.ack.is_none()
    {
        return match error_code(reply) {
            Some(-32601) => Err(Verdict::Skip(
                "the server does not offer subscriptions/listen (-32601)".into(),
            )),
            _ => Err(Verdict::Fail(format!(
                "subscriptions/listen answered with {}",
                said(reply)
            ))),
        };
    }
    Ok(opened)
}

/// Ends a listen: its cancellation.
fn cancel(session: &mut Session, id: &Value) {
    session.send_json(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id } }));
}

/// Why the group is skipped, if it is: the server is not modern, or
/// declares nothing a listen could ask for (no `listChanged`, no
/// `subscribe`; the spec makes `subscriptions/listen` a MUST for no
/// server that has nothing to send on it).
fn modern(ctx: &Ctx) -> Result<(), Verdict> {
    ctx.facts.need_modern_primary()?;
    let listenable = ctx.facts.capabilities().as_object().is_some_and(|caps| {
        caps.values().any(|cap| {
            ["listChanged", "subscribe"]
                .iter()
                .any(|flag| cap.get(flag) == Some(&Value::Bool(true)))
        })
    });
    if !listenable && ctx.facts.unread().is_some() {
        return Err(ctx.facts.lacks("anything to listen to"));
    }
    if !listenable {
        return Err(Verdict::Skip(
            "the server declares nothing to listen to (no listChanged, no subscribe)".into(),
        ));
    }
    Ok(())
}

fn ack_first(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = modern(ctx) {
        return v;
    }
    let (wait, filter) = (ctx.wait, filter(ctx));
    let session = match ctx.session() {
        Ok(s) => s,
        Err(v) => return v,
    };
    let opened = match open(session, &filter, wait) {
        Ok(o) => o,
        Err(v) => return v,
    };
    cancel(session, &opened.id);
    if let Some(reply) = &opened.reply {
        return Verdict::Fail(format!(
            "the listen was answered before its acknowledgment: {}",
            said(reply)
        ));
    }
    match &opened.first_before_ack {
        Some(early) => Verdict::Fail(format!(
            "before the acknowledgment ({} of its messages): {}",
            opened.before_ack,
            short(early.text(), 160)
        )),
        None => Verdict::Pass("acknowledged first".into()),
    }
}

fn ack_omits_unsupported(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = modern(ctx) {
        return v;
    }
    let caps = ctx.facts.capabilities().clone();
    let (wait, filter) = (ctx.wait, filter(ctx));
    let session = match ctx.session() {
        Ok(s) => s,
        Err(v) => return v,
    };
    let opened = match open(session, &filter, wait) {
        Ok(o) => o,
        Err(v) => return v,
    };
    cancel(session, &opened.id);
    let ack = opened.ack.unwrap_or_default();
    let Some(acked) = ack
        .pointer("/params/notifications")
        .and_then(Value::as_object)
    else {
        return Verdict::Fail(format!(
            "the acknowledgment has no notifications object: {}",
            short(&ack.to_string(), 160)
        ));
    };
    let declared = |pointer: &str| caps.pointer(pointer) == Some(&json!(true));
    for (key, value) in acked {
        if value == &json!(false) || value.is_null() {
            continue;
        }
        let (asked, supported) = match key.as_str() {
            "toolsListChanged" => (true, declared("/tools/listChanged")),
            "promptsListChanged" => (true, declared("/prompts/listChanged")),
            "resourcesListChanged" => (true, declared("/resources/listChanged")),
            "resourceSubscriptions" => {
                (filter.get(key).is_some(), declared("/resources/subscribe"))
            }
            _ => (filter.get(key).is_some(), true),
        };
        if !asked {
            return Verdict::Fail(format!("acknowledged {key}, which was not asked for"));
        }
        if !supported {
            return Verdict::Fail(format!(
                "acknowledged {key}, which the capabilities do not declare"
            ));
        }
    }
    Verdict::Pass(format!("acknowledged {}", Value::Object(acked.clone())))
}

fn final_result(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = modern(ctx) {
        return v;
    }
    if !ctx.target.is_stdio() {
        return Verdict::Skip("stdio only".into());
    }
    let filter = filter(ctx);
    let mut session = match ctx.fresh(Era::Modern) {
        Ok(s) => s,
        Err(v) => return v,
    };
    let opened = match open(&mut session, &filter, ctx.wait) {
        Ok(o) => o,
        Err(v) => return v,
    };
    session.close_input();
    let deadline = Instant::now() + Duration::from_secs(5);
    while let Some(msg) = session.recv_until(deadline) {
        if msg.is_response() && msg.json().and_then(|v| v.get("id")) == Some(&opened.id) {
            let reply = msg.json().cloned().unwrap_or_default();
            return match reply.get("result") {
                Some(_) => Verdict::Pass("answered with a result at the end of input".into()),
                None => Verdict::Fail(format!("answered with {}", said(&reply))),
            };
        }
    }
    if session.ended {
        Verdict::Fail("the output ended without a response to the listen".into())
    } else {
        Verdict::Fail("no response to the listen within 5 s of the end of input".into())
    }
}
