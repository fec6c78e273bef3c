//! The dispatch kernel: from a request to either an immediate error or a
//! job that produces its reply. No threads and no I/O here.
//!
//! Order of checks for every request:
//!
//! 1. **Era.** A request is modern when its `_meta` carries the protocol
//!    version; otherwise it belongs to the connection's legacy session,
//!    and the methods only that era has (`initialize`, `ping`,
//!    `logging/setLevel`, `resources/subscribe`) are answered by the
//!    legacy code (`legacy::session_request`). Nothing is inferred from
//!    earlier requests (spec 2026-07-28 basic/index, "Statelessness").
//!    Without the `legacy` feature every request is modern.
//! 2. **Method.** It must be served ([`route()`]): `-32601` otherwise.
//! 3. **`_meta`.** It must be valid: `-32602` naming the missing key,
//!    `-32022` for an unsupported version ([`validate_meta`]). A legacy
//!    request's stands in from its session.
//! 4. **Params.** The method's own preparation reads them, in
//!    `methods.rs` (one function per route).
//! 5. **Legacy wrap.** A legacy request's work is wrapped to downgrade
//!    its reply and to ask the client the legacy way (`legacy::Wrap`).

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
#[cfg(feature = "legacy")]
use crate::server::legacy::{self, LegacyRequest, LegacySession};
#[cfg(feature = "legacy")]
use crate::server::meta::legacy_progress_token;
use crate::server::meta::{MetaView, validate_meta};
use crate::server::subscriptions::Accepted;
use crate::server::work::Job;
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
    reason = "moved once from prepare to the owner, never stored; boxing the job would cost an allocation per request"
)]
pub(crate) enum Prepared {
    /// This job (inline or on the pool) makes the reply.
    Job(Job),
    /// Open a subscription with this accepted filter.
    Listen(Accepted),
    /// A request only a legacy session has (or the one that opens it).
    #[cfg(feature = "legacy")]
    Legacy(LegacyRequest),
}

/// Validates a request and turns it into a job, or the error to answer.
pub(crate) fn prepare(
    inner: &Arc<Inner>,
    method: &str,
    params: Option<Params<'_>>,
    #[cfg(feature = "legacy")] session: Option<&Arc<LegacySession>>,
) -> Result<Prepared, ErrorObject> {
    #[cfg(feature = "legacy")]
    return prepare_round(inner, method, params, session, legacy::Round::First);
    #[cfg(not(feature = "legacy"))]
    prepare_round(inner, method, params)
}

#[cfg(feature = "legacy")]
/// A later round of a legacy request whose handler asked for input: the
/// same request with the client's answers (see `legacy::input`). It is
/// not wrapped again: the first round's wrapper runs it.
pub(crate) fn prepare_retry(
    inner: &Arc<Inner>,
    method: &str,
    params: Box<serde_json::value::RawValue>,
    session: &Arc<LegacySession>,
) -> Result<Job, ErrorObject> {
    match prepare_round(
        inner,
        method,
        Some(Params::Raw(params)),
        Some(session),
        legacy::Round::Retry,
    )? {
        Prepared::Job(job) => Ok(job),
        _ => Err(ErrorObject::internal_error(
            "a retry of a legacy request did not prepare a job",
        )),
    }
}

/// The kernel: the checks in the order the module docs give.
fn prepare_round(
    inner: &Arc<Inner>,
    method: &str,
    params: Option<Params<'_>>,
    #[cfg(feature = "legacy")] session: Option<&Arc<LegacySession>>,
    #[cfg(feature = "legacy")] round: legacy::Round,
) -> Result<Prepared, ErrorObject> {
    let fields = match &params {
        Some(params) => params.fields()?,
        None => Fields::default(),
    };
    // The params as sent, for what reads all of them, read again from the
    // line at most once; a modern `tools/call` reads its members alone.
    let raw = OnceCell::new();
    let text = || *raw.get_or_init(|| params.as_ref().map_or("{}", |params| params.raw().get()));
    // 1. The era of a request is its own shape (spec 2026-07-28
    // basic/versioning): with modern `_meta` it is modern, even for a
    // method only the legacy era has (which is then not found).
    let meta_view = MetaView::new(fields.meta);
    #[cfg(feature = "legacy")]
    let legacy = if inner.config.modern_only || meta_view.is_modern() {
        None
    } else {
        if let Some(request) = legacy::session_request(inner, method, text(), session.map(|s| &**s))
        {
            return request.map(Prepared::Legacy);
        }
        session
    };
    // 2. and 3.
    let route = route(inner, method)?;
    #[cfg(feature = "legacy")]
    let meta = match legacy {
        Some(session) => session.meta(legacy_progress_token(&meta_view)?),
        None => validate_meta(&meta_view)?,
    };
    #[cfg(not(feature = "legacy"))]
    let meta = validate_meta(&meta_view)?;
    #[cfg(feature = "legacy")]
    let wrap = legacy.and_then(|session| {
        legacy::Wrap::new(inner, method, text(), session, round, prepare_retry)
    });
    // 4.
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
    // 5.
    #[cfg(feature = "legacy")]
    let (work, inline, then) = match wrap {
        Some(wrap) => wrap.apply(plan.work, plan.inline),
        None => (plan.work, plan.inline, None),
    };
    #[cfg(not(feature = "legacy"))]
    let (work, inline) = (plan.work, plan.inline);
    Ok(Prepared::Job(Job {
        meta,
        work,
        inline,
        retry: plan.retry,
        #[cfg(feature = "legacy")]
        then,
    }))
}
