//! A caller's request passed on to the server behind (the **Calls** and
//! **Multi round-trip** of the module docs): the caller's client
//! capabilities stamped on it, its answers and the server's state carried
//! on a retry, the server's progress relayed back, the caller's
//! cancellation passed on, and a task the server makes of it followed
//! (`follow_task`).

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::updates::Updates;
use super::{failed, follow_task, internal};
use crate::client::{Client, Era, RequestOptions};
use crate::jsonrpc::ErrorObject;
use crate::outcome::Outcome;
use crate::server::context::RequestContext;
use crate::server::handlers::ResourceRequest;
use crate::types::{
    CreateTaskResult, InputRequiredResult, ProgressNotificationParams, ReadResourceResult,
    TASKS_EXTENSION, meta_key, method,
};

/// The handler of a mirrored resource or template: `resources/read` of
/// the URI asked for.
pub(super) fn read_through(
    client: &Arc<Client>,
    updates: &Arc<Updates>,
) -> impl Fn(&RequestContext, &ResourceRequest) -> Result<Outcome<ReadResourceResult>, ErrorObject>
+ Send
+ Sync
+ 'static {
    let (client, updates) = (Arc::clone(client), Arc::clone(updates));
    move |ctx, request| {
        let params = json!({ "uri": request.uri });
        forward::<ReadResourceResult>(&client, &updates, ctx, method::RESOURCES_READ, params)
    }
}

/// One request to the server on behalf of `ctx`'s caller: its client
/// capabilities go along (and, on a retry, its answers and
/// the server's state, [`carry_round`]), progress comes back, and
/// its cancellation cancels this request. The server's protocol error is
/// passed on as it is; anything else is `-32603` saying the proxy's server
/// failed. The resource updates the server sent before its reply are
/// published before this returns ([`Updates::publish_waiting`]).
pub(super) fn forward<T: DeserializeOwned>(
    client: &Arc<Client>,
    updates: &Updates,
    ctx: &RequestContext,
    method: &str,
    mut params: Value,
) -> Result<Outcome<T>, ErrorObject> {
    carry_round(ctx, &mut params);
    let meta = ctx.meta();
    // A modern server reads the caller's capabilities per request; a
    // legacy one took the proxy's at `initialize`.
    let modern = matches!(client.era(), Era::Modern { .. });
    let mut stamp = Map::new();
    if modern {
        stamp.insert(
            meta_key::CLIENT_CAPABILITIES.into(),
            Value::Object(meta.client_capabilities_raw().clone()),
        );
        if let Some(info) = meta.client_info() {
            stamp.insert(
                meta_key::CLIENT_INFO.into(),
                serde_json::to_value(info).map_err(internal)?,
            );
        }
        params["_meta"] = Value::Object(stamp.clone());
    }
    // The callbacks run inside the wait below, which passes what they
    // queue on to the caller between its looks at the caller's
    // cancellation, and once more before the reply: in order, ahead of it.
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut options = RequestOptions::new();
    if meta.progress_token().is_some() {
        // A caller that asked for progress is told of each, and each
        // restarts the client's request timeout without a cap: the caller
        // keeps its own and its cancellation is passed on, while a server
        // that reports progress is not hung (a two-minute tool was cut at
        // `serve-http`'s 60 s).
        options = options
            .on_progress(move |p: &ProgressNotificationParams| {
                let _ = tx.send(p.clone());
            })
            .reset_timeout_on_progress(std::time::Duration::MAX);
    }
    // No log level goes on: a log message on stdio names no request, and
    // the client of many callers gives it to none (`Notes::many_callers`:
    // a server may log late, or where it was not asked, and one caller
    // must never read another's), so the server is not asked for any.
    let relay = || {
        for p in rx.try_iter() {
            ctx.progress(p.progress, p.total, p.message.as_deref());
        }
    };
    // Given up on (the caller cancelled), a `tools/call`'s answer may still
    // come, crossing the cancellation on the wire (a server MAY answer a
    // request it had finished): a task it names is cancelled behind, for
    // nobody else learns its id. Heard until the client's request timeout
    // from the give-up (`PendingCall::cancel_late_task`). Only a caller that
    // declares the extension may be answered with a task.
    let may_be_a_task = (meta.client_capabilities_raw().get("extensions"))
        .and_then(Value::as_object)
        .is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION));
    let cancel_late_task = match modern && method == method::TOOLS_CALL && may_be_a_task {
        true => Some(client.stamp(json!({ "_meta": stamp })).map_err(internal)?),
        false => None,
    };
    let mut call = client
        .start_request(method, params, options)
        .map_err(|e| failed(method, e))?;
    if let Some(cancel) = cancel_late_task {
        call = call.cancel_late_task(cancel);
    }
    // The connection, and so the server process, the answer comes from: a
    // task it names lives there only.
    let behind = Arc::clone(&call.link);
    let raw = call.wait_unless(|| {
        relay();
        ctx.is_cancelled()
    });
    relay();
    updates.publish_waiting(&ctx.notifier());
    let raw = raw.map_err(|e| failed(method, e))?;
    let mut value: Value = serde_json::from_str(raw.get()).map_err(internal)?;
    if modern && value.get("resultType").and_then(Value::as_str) == Some("task") {
        let created: CreateTaskResult = serde_json::from_value(value).map_err(internal)?;
        value = follow_task(client, &behind, ctx, &stamp, created.task)?;
    }
    if value.get("resultType").and_then(Value::as_str) == Some("input_required") {
        let asked: InputRequiredResult = serde_json::from_value(value).map_err(internal)?;
        return Ok(Outcome::InputRequired(asked));
    }
    serde_json::from_value(value)
        .map(Outcome::Complete)
        .map_err(|e| ErrorObject::internal_error(format!("the server behind this proxy answered {method} with a result of the wrong shape: {e}")))
}

/// On a caller's retry: the answers, and the server's own `requestState`
/// (which the proxy's server sealed as the proxy's), go on to the server.
fn carry_round(ctx: &RequestContext, params: &mut Value) {
    let responses = ctx.input_responses();
    if !responses.is_empty() {
        params["inputResponses"] = serde_json::to_value(responses).unwrap_or(Value::Null);
    }
    if let Some(state) = ctx.request_state().filter(|s| !s.is_empty()) {
        params["requestState"] = state.into();
    }
}
