//! The Tasks extension's routes: `tasks/get`, `tasks/update`,
//! `tasks/cancel`, and the branch of `tools/call` that creates a task
//! (FIXTURES.md C4 for the order of checks: the extension first, then the
//! params, then the task id).

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::params::required_string;
use super::request::{Plan, Request};
use super::route::TaskMethod;
use crate::jsonrpc::ErrorObject;
use crate::server::Inner;
use crate::server::context::RequestContext;
use crate::server::handlers::{GateFn, ToolFn};
use crate::server::reply::{Reply, outcome, response};
use crate::server::request_meta::TokenInfo;
use crate::server::tasks::extension_required;
use crate::server::tasks::worker::{self, TaskWork};
use crate::types::{CreateTaskResult, GetTaskResult, InputResponses, TASKS_EXTENSION, method};

/// `tasks/get`, `tasks/update`, `tasks/cancel`: `-32021` unless the
/// request declares the extension (before anything else is read), then
/// `taskId` a string (and `inputResponses` an object), then the work,
/// which looks the task up as the request's token's owner may see it
/// (`-32602` when unknown, or bound to another owner). On the pool: the
/// store may be the application's database.
pub(super) fn prepare_task(req: &Request<'_>, which: TaskMethod) -> Result<Plan, ErrorObject> {
    if !req.meta.has_extension(TASKS_EXTENSION) {
        return Err(extension_required());
    }
    let task_id = required_string(req.fields.task_id, "taskId")?;
    let inner = Arc::clone(req.inner);
    let caller = |ctx: &RequestContext| ctx.token_info().and_then(TokenInfo::owner);
    let work: Box<dyn FnOnce(&RequestContext) -> Reply + Send> = match which {
        TaskMethod::Get => Box::new(move |ctx| {
            let res = inner.tasks.get(&task_id, caller(ctx).as_ref());
            let res = res.map(|task| GetTaskResult {
                task,
                result_type: None,
                meta: None,
            });
            response(&inner, ctx.id(), res)
        }),
        TaskMethod::Update => {
            let responses = input_responses(req.fields.input_responses)?;
            Box::new(move |ctx| {
                let res = inner
                    .tasks
                    .update(&task_id, caller(ctx).as_ref(), responses);
                let res = res.map(|()| ack());
                response(&inner, ctx.id(), res)
            })
        }
        TaskMethod::Cancel => Box::new(move |ctx| {
            let res = inner.tasks.cancel(&task_id, caller(ctx).as_ref());
            let res = res.map(|()| ack());
            response(&inner, ctx.id(), res)
        }),
    };
    Ok(Plan::new(false, work, None))
}

/// The empty acknowledgment of `tasks/update` and `tasks/cancel`
/// (stamped `resultType: "complete"`).
fn ack() -> Value {
    json!({})
}

/// `inputResponses` of `tasks/update`: an object (its values are checked
/// by the handler that asked, as for a retry).
fn input_responses(raw: Option<&RawValue>) -> Result<InputResponses, ErrorObject> {
    let raw = raw.ok_or_else(|| ErrorObject::invalid_params("missing inputResponses"))?;
    if !raw.get().starts_with('{') {
        return Err(ErrorObject::invalid_params(
            "inputResponses must be an object",
        ));
    }
    serde_json::from_str(raw.get())
        .map_err(|e| ErrorObject::invalid_params(format!("invalid inputResponses: {e}")))
}

/// The work of a `tools/call` that becomes a task: the gate (if any) may
/// answer it with an input-required round; otherwise the task is stored,
/// its worker started, and the `CreateTaskResult` is the reply.
pub(super) fn task_call(
    inner: Arc<Inner>,
    handler: Arc<ToolFn>,
    gate: Option<Arc<GateFn>>,
    args: Option<String>,
    digest: String,
) -> impl FnOnce(&RequestContext) -> Reply + Send {
    move |ctx: &RequestContext| {
        if let Some(gate) = &gate {
            match gate(ctx, args.as_deref()) {
                Ok(None) => {}
                Ok(Some(answer)) => {
                    let res = Ok(answer);
                    return outcome(&inner, ctx, method::TOOLS_CALL, &|| digest.clone(), res);
                }
                Err(error) => return response::<Value>(&inner, ctx.id(), Err(error)),
            }
        }
        let work: TaskWork = Box::new(move |ctx| handler(ctx, args.as_deref()));
        let res = worker::start(
            &inner.tasks,
            ctx.server().clone(),
            ctx.id().clone(),
            ctx.meta().clone(),
            work,
            ctx.retry().cloned(),
        )
        .map(CreateTaskResult::new);
        // Cancelled while the task was being created: the client will never
        // see the handle (its connection drops the reply), so nobody could
        // cancel the task later.
        if let Ok(created) = &res
            && ctx.is_cancelled()
        {
            let owner = ctx.token_info().and_then(TokenInfo::owner);
            let _ = inner.tasks.cancel(&created.task.task_id, owner.as_ref());
        }
        response(&inner, ctx.id(), res)
    }
}
