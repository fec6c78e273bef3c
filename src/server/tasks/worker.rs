//! A task's thread: it runs the tool's handler, gives it the client's
//! answers when it asks for input, and writes the task's terminal state.
//!
//! A handler asks in one of two ways, both of which block this thread
//! (never the owner, never a pool worker) until `tasks/update` delivers
//! every answer, the task is cancelled, its TTL runs out, or nobody
//! answered within `task_input_timeout` (so that a client that never
//! answers does not hold a running place for good, TTL or not):
//!
//! - it returns `Outcome::InputRequired`, as for a multi round-trip
//!   request: the task shows those requests, and once they are answered
//!   the handler runs again with every answer so far (and its
//!   `requestState`), exactly as a retry would;
//! - it calls [`RequestContext::ask`](crate::RequestContext::ask) mid-run
//!   and gets the answers back in place.
//!
//! Keys are unique over the task's life (spec: never reused): a handler
//! that asks again under a key it used before gets it renamed on the wire
//! (`confirm~2`) and answered under its own name.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use serde_json::Value;

use crate::jsonrpc::{ErrorObject, RequestId};
use crate::outcome::{Outcome, ToolOutcome};
use crate::server::Server;
use crate::server::cancel::CancelToken;
use crate::server::context::{RequestContext, Sink};
use crate::server::mrtr::Retry;
use crate::server::request_meta::RequestMeta;
use crate::server::tasks::Tasks;
use crate::server::tasks::link::TaskLink;
use crate::types::{ResultType, Task};

/// The tool's handler with its arguments bound: run once per round.
pub(crate) type TaskWork = Box<dyn Fn(&RequestContext) -> Result<ToolOutcome, ErrorObject> + Send>;

/// The most rounds a handler may ask for in one task: a handler that asks
/// for nothing but its own state again would otherwise spin forever.
const MAX_ROUNDS: usize = 1000;

/// Creates a task for request `id`, bound to whom its token stands for
/// (`meta`'s, when the HTTP server validated one), and starts its thread.
/// Returns once the store holds it (durably created), with its seed state.
pub(crate) fn start(
    tasks: &Arc<Tasks>,
    server: Server,
    id: RequestId,
    meta: RequestMeta,
    work: TaskWork,
    retry: Option<Retry>,
) -> Result<Task, ErrorObject> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let created = tasks.create(meta.token_info().and_then(|info| info.owner()))?;
    let task_id = created.task.task_id.clone();
    let link = Arc::new(TaskLink::new(
        Arc::clone(tasks),
        task_id.clone(),
        created.signals,
        created.expires,
    ));
    let token = created.token;
    let name = format!("mcp-task-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let ended = Arc::clone(tasks);
    let spawned = thread::Builder::new().name(name).spawn(move || {
        let outcome = rounds(&link, &server, &id, &meta, &token, &work, retry);
        ended.end(&link.task_id, outcome);
    });
    if let Err(e) = spawned {
        let error = ErrorObject::internal_error(format!("could not start the task: {e}"));
        tasks.end(&task_id, Err(error.clone()));
        return Err(error);
    }
    Ok(created.task)
}

/// The handler's rounds, until it completes or fails: the terminal
/// result as JSON, or the error.
fn rounds(
    link: &Arc<TaskLink>,
    server: &Server,
    id: &RequestId,
    meta: &RequestMeta,
    token: &CancelToken,
    work: &TaskWork,
    mut retry: Option<Retry>,
) -> Result<Value, ErrorObject> {
    for _ in 0..MAX_ROUNDS {
        let answers_so_far = retry.as_ref().map(|r| r.responses.clone());
        let ctx = RequestContext::new(
            id.clone(),
            meta.clone(),
            token.clone(),
            Sink::Task(Arc::clone(link)),
            server.clone(),
            retry.take(),
        );
        let round = catch_unwind(AssertUnwindSafe(|| work(&ctx)));
        drop(ctx);
        match round {
            Err(panic) => return Err(crate::server::work::panic_error(&*panic)),
            Ok(Err(error)) => return Err(error),
            Ok(Ok(Outcome::Complete(mut result))) => {
                result.result_type.get_or_insert(ResultType::Complete);
                return serde_json::to_value(result).map_err(|e| {
                    ErrorObject::internal_error(format!("the result does not serialize: {e}"))
                });
            }
            Ok(Ok(Outcome::InputRequired(asked))) => {
                let mut responses = answers_so_far.unwrap_or_default();
                responses.extend(link.ask(asked.input_requests.unwrap_or_default(), meta)?);
                retry = Some(Retry {
                    state: asked.request_state,
                    responses,
                });
            }
        }
    }
    Err(ErrorObject::internal_error(format!(
        "the handler asked for input more than {MAX_ROUNDS} times"
    )))
}
