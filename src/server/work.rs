//! A request's work: the boxed closure that produces its reply, the
//! runnable request a connection begins (inline on the reader, or on the
//! pool), and calling it with a panic turned into that request's `-32603`.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::jsonrpc::ErrorObject;
use crate::server::context::RequestContext;
use crate::server::mrtr::Retry;
use crate::server::reply::Reply;
use crate::server::request_meta::RequestMeta;

/// Runs one request's handler for its response.
pub(crate) type Work = Box<dyn FnOnce(&RequestContext) -> Reply + Send>;

/// A request that passed validation, ready to run.
pub(crate) struct Runnable {
    pub meta: RequestMeta,
    pub work: Work,
    /// Run on the reader thread: cheap and never blocking.
    pub inline: bool,
    /// The verified `requestState` and `inputResponses` of a retry.
    pub retry: Option<Retry>,
}

/// Calls a request's work, turning a panic into `-32603` for that request.
pub(crate) fn call(work: Work, ctx: &RequestContext) -> Reply {
    match catch_unwind(AssertUnwindSafe(|| work(ctx))) {
        Ok(reply) => reply,
        Err(panic) => Reply::error(ctx.id(), &panic_error(&*panic)),
    }
}

/// The `-32603` a handler's panic becomes, with its message.
pub(crate) fn panic_error(panic: &(dyn Any + Send)) -> ErrorObject {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".to_owned());
    ErrorObject::internal_error(format!("handler panicked: {what}"))
}
