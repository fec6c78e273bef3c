//! The dispatch kernel: from a request to either an immediate error or a
//! runnable request that produces its reply. No threads and no I/O here.
//!
//! Order of checks for every request:
//!
//! 1. **Method.** It must be served ([`route()`]): `-32601` otherwise.
//! 2. **`_meta`.** It must be valid: `-32602` naming the missing key,
//!    `-32022` for an unsupported version ([`validate_meta`]). A request of
//!    a legacy session comes with the `_meta` its session stands for, from
//!    the legacy front end (`legacy::front`), which also answers the
//!    methods only that era has and wraps the runnable; this kernel knows one
//!    era.
//! 3. **Params.** The method's own preparation reads them, in
//!    `methods.rs` (one function per route).

mod methods;
mod params;
mod request;
mod route;
mod tasks;

use std::cell::OnceCell;
use std::sync::Arc;

use crate::incoming::{Fields, Params};
use crate::jsonrpc::ErrorObject;
use crate::server::Inner;
use crate::server::meta::{MetaView, validate_meta};
use crate::server::request_meta::RequestMeta;
use crate::server::subscriptions::Accepted;
use crate::server::work::Runnable;
use methods::{
    prepare_complete, prepare_custom, prepare_discover, prepare_list, prepare_listen,
    prepare_prompt_get, prepare_resource_read, prepare_tool_call,
};
use params::RetryFields;
use request::Request;
use route::{Route, route};

/// What the owner does with a request that passed validation.
#[allow(
    clippy::large_enum_variant,
    reason = "moved once from prepare to the owner, never stored; boxing the runnable would cost an allocation per request"
)]
pub(crate) enum Prepared {
    /// This runnable (inline or on the pool) makes the reply.
    Run(Runnable),
    /// Open a subscription with this accepted filter.
    Listen(Accepted),
}

/// Validates a request and turns it into a runnable, or the error to answer,
/// in the order the module docs give. `meta`: the request metadata its
/// front end gives it (a legacy session's), instead of its own `_meta`.
pub(crate) fn prepare(
    inner: &Arc<Inner>,
    method: &str,
    params: Option<Params<'_>>,
    meta: Option<RequestMeta>,
) -> Result<Prepared, ErrorObject> {
    let fields = match &params {
        Some(params) => params.fields()?,
        None => Fields::default(),
    };
    // The params as sent, for what reads all of them, read again from the
    // line at most once; a modern `tools/call` reads its members alone.
    let raw = OnceCell::new();
    let text = || *raw.get_or_init(|| params.as_ref().map_or("{}", |params| params.raw().get()));
    // 1.
    let route = route(inner, method)?;
    // 2.
    let meta = match meta {
        Some(meta) => meta,
        None => validate_meta(&MetaView::new(fields.meta))?,
    };
    // 3.
    let request = Request {
        inner,
        method,
        text: if matches!(route, Route::ToolsCall) {
            ""
        } else {
            text()
        },
        meta: &meta,
        retry: RetryFields::read(&fields)?,
        fields,
    };
    let plan = match route {
        Route::Listen => return prepare_listen(&request).map(Prepared::Listen),
        Route::Discover => prepare_discover(&request),
        Route::List(list) => prepare_list(&request, list)?,
        Route::ToolsCall => prepare_tool_call(&request)?.plan(),
        Route::ResourcesRead => prepare_resource_read(&request)?,
        Route::PromptsGet => prepare_prompt_get(&request)?,
        Route::Complete => prepare_complete(&request)?,
        Route::Task(which) => tasks::prepare_task(&request, which)?,
        Route::Custom(handler, inline) => prepare_custom(&request, handler, inline)?,
    };
    Ok(Prepared::Run(Runnable {
        meta,
        work: plan.work,
        inline: plan.inline,
        retry: plan.retry,
    }))
}
