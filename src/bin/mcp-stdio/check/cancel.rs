//! Cancellation: a request cancelled while it runs gets nothing more.
//! It needs a tool slow enough to cancel, named with `--call` (no tool is
//! called with arguments it accepts unless named).

use std::time::Duration;

use serde_json::{Value, json};

use super::driver::Answer;
use super::stdio::probe;
use super::{Check, Ctx, Level, Verdict, short};

pub const CHECKS: &[Check] = &[Check {
    id: "cancel.no-reply-after-cancel",
    level: Level::Must,
    page: "2026-07-28/basic/transports/stdio.md",
    quote: "Servers **SHOULD** stop work on a cancelled request as soon as practical and **MUST NOT** send any further messages for it.",
    title: "--call TOOL (slow): once its cancellation is read, nothing more comes for the call",
    run: no_reply_after_cancel,
}];

fn no_reply_after_cancel(ctx: &mut Ctx) -> Verdict {
    if !ctx.target.is_stdio() {
        return Verdict::Skip(
            "stdio only: over HTTP a request is cancelled by closing its stream".into(),
        );
    }
    if ctx.calls.is_empty() {
        return Verdict::Skip(
            "needs --call TOOL[=JSON] naming a tool slow enough to cancel (--call 'slow={\"ms\":3000}')".into(),
        );
    }
    let calls = ctx.calls.to_vec();
    let wait = ctx.wait;
    let session = match ctx.session() {
        Ok(s) => s,
        Err(v) => return v,
    };
    // A server that has said nothing yet is given its startup grace on
    // every wait: answered once first, so that the 300 ms below is 300 ms.
    if session.starting {
        let warm = session.fresh_id();
        let line = probe(session, &warm);
        session.send_json(&line);
        if let Err(e) = session.answered(&warm, wait) {
            return Verdict::Fail(format!("the server did not answer a first request: {e}"));
        }
    }
    session.drain(Duration::from_millis(20));
    // The first tool named with --call still running after 300 ms: slow
    // enough to cancel.
    let mut too_fast = Vec::new();
    let mut running = None;
    for call in &calls {
        let id = session.request(
            "tools/call",
            json!({ "name": call.tool, "arguments": call.arguments }),
        );
        match session.answer_with(&id, Duration::from_millis(300)) {
            Ok((answer, _)) => {
                let said = match answer {
                    Answer::Json(reply) => reply.to_string(),
                    Answer::Unreadable { line, .. } => line,
                    Answer::Malformed { msg, .. } => msg.text().to_owned(),
                };
                too_fast.push(format!("{}: {}", call.tool, short(&said, 100)));
            }
            Err(_) => {
                running = Some(id);
                break;
            }
        }
    }
    let Some(id) = running else {
        return Verdict::Skip(format!(
            "every tool named with --call answered within 300 ms, too fast to cancel ({})",
            short(&too_fast.join("; "), 200)
        ));
    };
    // Its answer is what this check looks for, not a late one to pass over.
    session.reclaim(&id);
    // The cancellation and a barrier in one write: the barrier's reply
    // shows the cancellation was read.
    let barrier_id = session.fresh_id();
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id, "reason": "mcp-stdio check" } });
    let both = format!("{cancel}\n{}\n", probe(session, &barrier_id));
    session.send_raw(both.as_bytes());
    let before = match session.answer_with(&barrier_id, wait) {
        Ok((_, before)) => before,
        Err(e) => {
            ctx.spoil();
            return Verdict::Fail(format!(
                "the request after the cancellation was not answered: {e}"
            ));
        }
    };
    let about = |m: &super::driver::Msg| m.response_id().as_ref() == Some(&id);
    let raced = before.iter().any(about);
    // Whatever the call would have sent: give it up to 3 s.
    let after = session.drain(wait.min(Duration::from_secs(3)));
    if let Some(late) = after.iter().find(|m| about(m) || related(m, &id)) {
        return Verdict::Fail(format!(
            "after the cancellation was read (a later request was answered): {}",
            short(late.text(), 160)
        ));
    }
    if raced {
        Verdict::Pass(
            "its reply crossed the cancellation (a race the spec allows); nothing after".into(),
        )
    } else {
        Verdict::Pass("no reply and nothing else for it after the cancellation".into())
    }
}

/// A notification that names the request (`requestId`, or a progress
/// token equal to its id).
fn related(m: &super::driver::Msg, id: &Value) -> bool {
    let Some(params) = m.json().and_then(|v| v.get("params")) else {
        return false;
    };
    params.get("requestId") == Some(id)
}
