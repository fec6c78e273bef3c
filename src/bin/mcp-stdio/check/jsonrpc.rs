//! JSON-RPC: a line that is not JSON, a request that is not one, an
//! unknown method, invalid params, ids of every type echoed exactly, a
//! notification never answered.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::driver::{Msg, Session, unreadable_why};
use super::stdio::probe;
use super::{Check, Ctx, Level, Verdict, error_code, said, short};

const INDEX: &str = "2026-07-28/basic/index.md";

pub const CHECKS: &[Check] = &[
    Check {
        id: "jsonrpc.parse-error",
        level: Level::Should,
        page: "2026-07-28/schema.json#ParseError",
        quote: "This error is returned when the server cannot parse the JSON text of a message.",
        title: "a line that is not JSON gets -32700 (and the server goes on)",
        run: parse_error,
    },
    Check {
        id: "jsonrpc.invalid-request",
        level: Level::Should,
        page: "2026-07-28/schema.json#InvalidRequestError",
        quote: "This error is returned when the message structure does not conform to the JSON-RPC 2.0 specification requirements for a request (e.g., missing required fields like `jsonrpc` or `method`, or using invalid types for these fields).",
        title: "a request whose method is a number gets -32600",
        run: invalid_request,
    },
    Check {
        id: "jsonrpc.unknown-method-error",
        level: Level::Must,
        page: INDEX,
        quote: "Error responses **MUST** include an `error` field with a `code` and `message`.",
        title: "an unknown method is answered with an error (an integer code, a message)",
        run: unknown_method_error,
    },
    Check {
        id: "jsonrpc.method-not-found",
        level: Level::Should,
        page: "2026-07-28/schema.json#MethodNotFoundError",
        quote: "In MCP, a server returns this error when a client invokes a method the server does not implement",
        title: "an unknown method gets -32601",
        run: method_not_found,
    },
    Check {
        id: "jsonrpc.invalid-params",
        level: Level::Should,
        page: "2026-07-28/server/tools.md",
        quote: "Malformed requests (requests that fail to satisfy CallToolRequest schema)",
        title: "tools/call with a name that is a number (over HTTP: tools/list with a cursor that is a number) gets -32602",
        run: invalid_params,
    },
    Check {
        id: "jsonrpc.id-types",
        level: Level::Must,
        page: INDEX,
        quote: "Result responses **MUST** include the same ID as the request they correspond to.",
        title: "ids 0, -7, 2147483648, \"1\", \"\", \"abc\" and one with escapes and emoji come back exactly",
        run: id_types,
    },
    Check {
        id: "jsonrpc.id-large-integer",
        level: Level::Must,
        page: INDEX,
        quote: "Requests **MUST** include a string or integer ID.",
        title: "the id 9007199254740993 (2^53 + 1) comes back exactly",
        run: id_large_integer,
    },
    Check {
        id: "jsonrpc.notification-no-reply",
        level: Level::Must,
        page: INDEX,
        quote: "The receiver **MUST NOT** send a response.",
        title: "notifications (known and unknown) are never answered",
        run: notification_no_reply,
    },
];

/// Sends `line` as it is, then a barrier request; every message before
/// the barrier's reply. A server that did not answer the barrier fails.
fn with_barrier(ctx: &mut Ctx, line: &[u8]) -> Result<Vec<Msg>, Verdict> {
    let wait = ctx.wait;
    let session = ctx.session()?;
    session.drain(Duration::from_millis(20));
    session.send_raw(line);
    let id = session.fresh_id();
    let barrier = probe(session, &id);
    session.send_json(&barrier);
    match session.answer_with(&id, wait) {
        Ok((_, before)) => Ok(before),
        Err(e) => {
            ctx.spoil();
            Err(Verdict::Fail(format!(
                "a request sent after it was not answered ({e}): the server stopped serving"
            )))
        }
    }
}

/// A skip when an error response among `msgs` is a line the checker
/// cannot read whole: its code is unknown.
fn unreadable_error(msgs: &[Msg]) -> Option<Verdict> {
    let msg = msgs
        .iter()
        .find(|m| m.unreadable_response().is_some_and(|(_, error)| error))?;
    let Msg::Unreadable(text, why) = msg else {
        return None;
    };
    Some(Verdict::Skip(format!(
        "an error came back, as a line of JSON the checker cannot read ({}): {}",
        unreadable_why(why),
        short(text, 120)
    )))
}

/// The error responses among `msgs`.
fn errors(msgs: &[Msg]) -> Vec<&Value> {
    msgs.iter()
        .filter_map(Msg::json)
        .filter(|v| v.get("error").is_some())
        .collect()
}

fn parse_error(ctx: &mut Ctx) -> Verdict {
    let before = match with_barrier(
        ctx,
        b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"\n",
    ) {
        Ok(b) => b,
        Err(v) => return v,
    };
    match errors(&before).first() {
        Some(e) if error_code(e) == Some(-32700) => {
            Verdict::Pass("-32700, and the next request answered".into())
        }
        Some(e) => Verdict::Fail(format!("answered with {} instead of -32700", said(e))),
        None => unreadable_error(&before).unwrap_or_else(|| {
            Verdict::Fail(
                "no error for a line that is not JSON (the next request was answered)".into(),
            )
        }),
    }
}

fn invalid_request(ctx: &mut Ctx) -> Verdict {
    let before = match with_barrier(
        ctx,
        b"{\"jsonrpc\":\"2.0\",\"id\":\"bad-method\",\"method\":42}\n",
    ) {
        Ok(b) => b,
        Err(v) => return v,
    };
    match errors(&before).first() {
        Some(e) if error_code(e) == Some(-32600) => Verdict::Pass("-32600".into()),
        Some(e) => Verdict::Fail(format!("answered with {} instead of -32600", said(e))),
        None => unreadable_error(&before)
            .unwrap_or_else(|| Verdict::Fail("no error for a request whose method is 42".into())),
    }
}

/// The reply to an unknown method.
fn unknown_method(ctx: &mut Ctx) -> Result<Value, Verdict> {
    ctx.ask_error("mcp-stdio-check/no-such-method", json!({}))
}

fn unknown_method_error(ctx: &mut Ctx) -> Verdict {
    let reply = match unknown_method(ctx) {
        Ok(r) => r,
        Err(v) => return v,
    };
    let Some(error) = reply.get("error") else {
        return Verdict::Fail(format!("answered with {}", said(&reply)));
    };
    let code_ok = error.get("code").is_some_and(|c| c.is_i64());
    let message_ok = error.get("message").is_some_and(Value::is_string);
    match (code_ok, message_ok) {
        (true, true) => Verdict::Pass(format!("error {}", error["code"])),
        (false, _) => Verdict::Fail(format!(
            "the error's code is not an integer: {}",
            short(&error.to_string(), 160)
        )),
        (_, false) => Verdict::Fail(format!(
            "the error has no message string: {}",
            short(&error.to_string(), 160)
        )),
    }
}

fn method_not_found(ctx: &mut Ctx) -> Verdict {
    let reply = match unknown_method(ctx) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match error_code(&reply) {
        Some(-32601) => Verdict::Pass("-32601".into()),
        _ => Verdict::Fail(format!("answered with {}", said(&reply))),
    }
}

fn invalid_params(ctx: &mut Ctx) -> Verdict {
    if !ctx.facts.offers("tools") {
        return ctx.facts.lacks("tools");
    }
    // Over HTTP the name is mirrored in a header, which a number cannot
    // match (-32020 first): the cursor, which is not, is a number instead.
    let (method, params) = if ctx.target.is_stdio() {
        ("tools/call", json!({ "name": 42, "arguments": {} }))
    } else {
        ("tools/list", json!({ "cursor": 42 }))
    };
    let reply = match ctx.ask_error(method, params) {
        Ok(r) => r,
        Err(v) => return v,
    };
    match error_code(&reply) {
        Some(-32602) => Verdict::Pass("-32602".into()),
        _ => Verdict::Fail(format!("answered with {} instead of -32602", said(&reply))),
    }
}

/// Sends the probe under each id in turn (one in flight at a time) and
/// compares the id of the response that comes back.
fn ids_echoed(ctx: &mut Ctx, ids: &[Value]) -> Verdict {
    let wait = ctx.wait;
    let session = match ctx.session() {
        Ok(s) => s,
        Err(v) => return v,
    };
    session.drain(Duration::from_millis(20));
    for id in ids {
        let line = probe(session, id);
        session.send_json(&line);
        match next_response(session, wait) {
            Some(back) if back.as_ref() == Some(id) => {}
            Some(back) => {
                let back = back.map_or_else(|| "no id".to_owned(), |b| b.to_string());
                return Verdict::Fail(format!(
                    "sent the id {id}, the response came back with {back}"
                ));
            }
            None => {
                ctx.spoil();
                return Verdict::Fail(format!(
                    "no response to the request with id {id} within {:.0} s",
                    wait.as_secs_f64()
                ));
            }
        }
    }
    Verdict::Pass(format!("{} ids, each echoed exactly", ids.len()))
}

/// The id of the next response (of any id) within `wait`, `Some(None)`
/// for a response without one; a response the checker cannot read whole
/// is read for its id (`Msg::unreadable_response`).
fn next_response(session: &mut Session, wait: Duration) -> Option<Option<Value>> {
    let deadline = Instant::now() + wait;
    loop {
        let msg = session.recv_until(deadline)?;
        if msg.is_response() {
            return Some(msg.json().and_then(|v| v.get("id")).cloned());
        }
        if let Some((id, _)) = msg.unreadable_response() {
            return Some(Some(id));
        }
    }
}

fn id_types(ctx: &mut Ctx) -> Verdict {
    let ids = [
        json!(0),
        json!(-7),
        json!(2147483648_i64),
        json!("1"),
        json!(""),
        json!("abc"),
        json!("é \"quoted\" \\ back\tslash 🦀"),
    ];
    ids_echoed(ctx, &ids)
}

fn id_large_integer(ctx: &mut Ctx) -> Verdict {
    ids_echoed(ctx, &[json!(9007199254740993_u64)])
}

fn notification_no_reply(ctx: &mut Ctx) -> Verdict {
    let notifications = [
        json!({ "jsonrpc": "2.0", "method": "notifications/mcp-stdio-check/unknown", "params": { "x": 1 } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "mcp-stdio-check-never-sent" } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": "t", "progress": 1 } }),
    ];
    let mut lines = String::new();
    for n in &notifications {
        lines.push_str(&n.to_string());
        lines.push('\n');
    }
    let before = match with_barrier(ctx, lines.as_bytes()) {
        Ok(b) => b,
        Err(v) => return v,
    };
    match before
        .iter()
        .find(|m| m.is_response() || m.unreadable_response().is_some())
    {
        Some(answer) => Verdict::Fail(format!(
            "a response to a notification: {}",
            short(answer.text(), 160)
        )),
        None => Verdict::Pass(format!(
            "{} notifications, none answered",
            notifications.len()
        )),
    }
}
