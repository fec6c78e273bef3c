//! The dispatch kernel: from a request to either an immediate error or a
//! job that produces its reply. No threads and no I/O here.
//!
//! Order of checks for every request: the method must be served (`-32601`),
//! then the per-request `_meta` must be valid (`-32602` naming the missing
//! key, `-32022` for an unsupported version), then the method's own
//! parameters are read. Nothing is inferred from earlier requests
//! (spec 2026-07-28 basic/index, "Statelessness").

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::jsonrpc::{ErrorObject, encode_error, encode_result};
use crate::outcome::{Outcome, PromptArguments};
use crate::server::context::RequestContext;
use crate::server::legacy::{self, LegacyRequest, LegacySession};
use crate::server::legacy_input;
use crate::server::request_meta::RequestMeta;

use crate::server::Inner;
use crate::server::meta::{MetaView, legacy_progress_token, validate_meta};
use crate::server::mrtr::{self, Retry};
use crate::server::reply::{Reply, finish, outcome};
use crate::server::subscriptions::Accepted;
use crate::types::{
    CompleteRequestParams, DiscoverResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, SubscriptionFilter, method,
};
use crate::version::{LEGACY_VERSIONS, SUPPORTED_VERSIONS};

/// Runs one request's handler for its response.
pub(crate) type Work = Box<dyn FnOnce(&RequestContext) -> Reply + Send>;

/// What the owner does with a request that passed validation.
#[allow(
    clippy::large_enum_variant,
    reason = "moved once from prepare to the owner, never stored; boxing the job would cost an allocation per request"
)]
pub(crate) enum Prepared {
    /// Run this job (inline or on the pool) for the reply.
    Run(Job),
    /// Open a subscription with this accepted filter.
    Listen(Accepted),
    /// A request only a legacy session has (or the one that opens it).
    Legacy(LegacyRequest),
}

/// A request that passed validation, ready to run.
pub(crate) struct Job {
    pub meta: RequestMeta,
    pub work: Work,
    /// Run on the owner thread: cheap and never blocking.
    pub inline: bool,
    /// The verified `requestState` and `inputResponses` of a retry.
    pub retry: Option<Retry>,
}

/// The members of params the kernel looks at, borrowed from the line. One
/// pass over the params finds all of them.
#[derive(Deserialize, Default)]
struct Fields<'a> {
    #[serde(
        rename = "_meta",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    meta: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    name: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    uri: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    cursor: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    notifications: Option<&'a RawValue>,
    #[serde(
        rename = "inputResponses",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    input_responses: Option<&'a RawValue>,
    #[serde(
        rename = "requestState",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    request_state: Option<&'a RawValue>,
}

/// Validates a request and turns it into a job, or the error to answer.
pub(crate) fn prepare(
    inner: &Arc<Inner>,
    method: &str,
    params: Option<Box<RawValue>>,
    session: Option<&LegacySession>,
) -> Result<Prepared, ErrorObject> {
    prepare_round(inner, method, params, session, Round::First)
}

/// A later round of a legacy request whose handler asked for input: the
/// same request with the client's answers (see `legacy_input`).
pub(crate) fn prepare_retry(
    inner: &Arc<Inner>,
    method: &str,
    params: Box<RawValue>,
    session: &LegacySession,
) -> Result<Prepared, ErrorObject> {
    prepare_round(inner, method, Some(params), Some(session), Round::Retry)
}

/// Which round of a request `prepare_round` prepares: only the first one
/// of a legacy request is wrapped to ask the client (the wrapper runs the
/// later ones itself).
#[derive(PartialEq)]
enum Round {
    First,
    Retry,
}

fn prepare_round(
    inner: &Arc<Inner>,
    method: &str,
    params: Option<Box<RawValue>>,
    session: Option<&LegacySession>,
    round: Round,
) -> Result<Prepared, ErrorObject> {
    let text = params.as_deref().map_or("{}", RawValue::get);
    let fields: Fields<'_> = serde_json::from_str(text).map_err(ErrorObject::invalid_params)?;
    // The era of a request is its own shape (spec 2026-07-28
    // basic/versioning): with modern `_meta` it is modern, even for a
    // method only the legacy era has (which is then not found).
    let meta_view = MetaView::new(fields.meta);
    let legacy = if inner.config.modern_only || meta_view.is_modern() {
        None
    } else {
        match method {
            "initialize" => {
                let session = Box::new(legacy::initialize(text)?);
                return Ok(Prepared::Legacy(LegacyRequest::Initialize(session)));
            }
            // 2025-11-25 basic/utilities/ping: answered at any time.
            "ping" => return Ok(legacy_ping()),
            _ => session,
        }
    };
    if legacy.is_some() {
        let has_resources = inner
            .registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .has_resources;
        match method {
            "logging/setLevel" => {
                return Ok(Prepared::Legacy(LegacyRequest::SetLevel(
                    legacy::set_level(text)?,
                )));
            }
            "resources/subscribe" if has_resources => {
                return Ok(Prepared::Legacy(LegacyRequest::Subscribe(
                    legacy::subscription_uri(text)?,
                )));
            }
            "resources/unsubscribe" if has_resources => {
                return Ok(Prepared::Legacy(LegacyRequest::Unsubscribe(
                    legacy::subscription_uri(text)?,
                )));
            }
            method::SUBSCRIPTIONS_LISTEN => return Err(ErrorObject::method_not_found(method)),
            _ => {}
        }
    }
    let route = route(inner, method)?;
    let meta = match legacy {
        Some(session) => session.meta(legacy_progress_token(&meta_view)?),
        None => validate_meta(&meta_view)?,
    };
    // A legacy request's reply drops what only 2026-07-28 results carry;
    // one whose handler may ask for input asks the client, from the pool
    // (it waits for the answers). A later round is run by the first
    // round's wrapper, unwrapped.
    enum Wrap {
        Downgrade(String, String),
        Bridge(Arc<Inner>, String, String, Box<LegacySession>),
    }
    let wrap = match legacy {
        Some(session) if round == Round::First => Some(if legacy_input::may_ask(method) {
            Wrap::Bridge(
                Arc::clone(inner),
                method.to_owned(),
                text.to_owned(),
                Box::new(session.clone()),
            )
        } else {
            Wrap::Downgrade(method.to_owned(), session.version.clone())
        }),
        _ => None,
    };
    let inner = Arc::clone(inner);
    // Called once, in whichever arm below builds the job.
    let job = move |inline: bool, work: Work, retry: Option<Retry>| {
        let (work, inline): (Work, bool) = match wrap {
            Some(Wrap::Bridge(inner, name, params, session)) => (
                legacy_input::bridge(inner, name, params, *session, work),
                false,
            ),
            Some(Wrap::Downgrade(name, version)) => (
                Box::new(move |ctx| {
                    Reply::Line(legacy::downgrade(work(ctx).into_line(), &name, &version))
                }),
                inline,
            ),
            None => (work, inline),
        };
        Ok(Prepared::Run(Job {
            meta,
            work,
            inline,
            retry,
        }))
    };
    // Spec 2026-07-28 basic/patterns/mrtr: a retry's requestState and
    // inputResponses are checked before the handler runs.
    let request_state = optional_string(fields.request_state, "requestState")?;
    let responses = fields.input_responses.map(RawValue::get);
    let retry = |method: &str, digest: &dyn Fn() -> String| -> Result<Option<Retry>, ErrorObject> {
        if request_state.is_none() && responses.is_none() {
            return Ok(None);
        }
        inner
            .sealer
            .open(request_state.as_deref(), responses, method, digest)
            .map(Some)
    };
    match route {
        Route::Listen => {
            let raw = fields
                .notifications
                .ok_or_else(|| ErrorObject::invalid_params("missing notifications"))?;
            // serde reads a struct from an array by position; the schema
            // says object, and the other shapes get serde's own message.
            if raw.get().starts_with('[') {
                return Err(ErrorObject::invalid_params(
                    "invalid notifications filter: expected an object, got an array",
                ));
            }
            let filter: SubscriptionFilter = serde_json::from_str(raw.get()).map_err(|e| {
                ErrorObject::invalid_params(format!("invalid notifications filter: {e}"))
            })?;
            let uris = filter.resource_subscriptions.as_ref().map_or(0, Vec::len);
            let max = inner.config.max_subscription_uris;
            if uris > max {
                return Err(ErrorObject::invalid_params(format!(
                    "invalid notifications filter: {uris} resourceSubscriptions, more than the {max} one subscription may name"
                ))
                .with_data(json!({ "limit": max })));
            }
            Ok(Prepared::Listen(inner.accept(filter)))
        }
        Route::Discover => job(true, Box::new(move |ctx| discover(&inner, ctx)), None),
        Route::ToolsList | Route::ResourcesList | Route::TemplatesList | Route::PromptsList => {
            let cursor = optional_string(fields.cursor, "cursor")?;
            job(
                true,
                Box::new(move |ctx| list(&inner, ctx, route, cursor.as_deref())),
                None,
            )
        }
        Route::ToolsCall => {
            let name = required_string(fields.name, "name")?;
            let args = fields.arguments.filter(|raw| raw.get() != "null");
            if let Some(raw) = args
                && !raw.get().starts_with('{')
            {
                return Err(ErrorObject::invalid_params("arguments must be an object"));
            }
            let range = args.map(|raw| span(text, raw.get()));
            let retry = retry(method::TOOLS_CALL, &|| {
                mrtr::digest(&[&name, &mrtr::canonical(args.map(RawValue::get))])
            })?;
            let (handler, inline) = {
                let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
                let entry = registry
                    .tools
                    .get(&name)
                    .ok_or_else(|| ErrorObject::invalid_params(format!("unknown tool: {name}")))?;
                (Arc::clone(&entry.handler), entry.inline)
            };
            job(
                inline,
                Box::new(move |ctx| {
                    // The slice is the arguments object as the client sent it.
                    let args = range.map(|r| &params.as_deref().map_or("", RawValue::get)[r]);
                    let res = handler(ctx, args);
                    let digest = || mrtr::digest(&[&name, &mrtr::canonical(args)]);
                    outcome(&inner, ctx, method::TOOLS_CALL, &digest, res)
                }),
                retry,
            )
        }
        Route::ResourcesRead => {
            let uri = required_string(fields.uri, "uri")?;
            let retry = retry(method::RESOURCES_READ, &|| mrtr::digest(&[&uri]))?;
            let found = inner.find_resource(&uri)?;
            job(
                found.inline,
                Box::new(move |ctx| {
                    let res = (found.handler)(ctx, &found.request).map(|out| match out {
                        Outcome::Complete(mut result) => {
                            result.ttl_ms.get_or_insert(inner.config.cache.ttl_ms);
                            result.cache_scope.get_or_insert(inner.config.cache.scope);
                            Outcome::Complete(result)
                        }
                        other => other,
                    });
                    let digest = || mrtr::digest(&[&uri]);
                    outcome(&inner, ctx, method::RESOURCES_READ, &digest, res)
                }),
                retry,
            )
        }
        Route::PromptsGet => {
            let name = required_string(fields.name, "name")?;
            let args: PromptArguments = match fields.arguments {
                None => PromptArguments::new(),
                Some(raw) if raw.get() == "null" => PromptArguments::new(),
                Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
                    ErrorObject::invalid_params(format!(
                        "prompt arguments must be an object of strings: {e}"
                    ))
                })?,
            };
            let arguments_json = || serde_json::to_string(&args).unwrap_or_default();
            let retry = retry(method::PROMPTS_GET, &|| {
                mrtr::digest(&[&name, &arguments_json()])
            })?;
            let handler = {
                let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
                let entry = registry.prompts.get(&name).ok_or_else(|| {
                    ErrorObject::invalid_params(format!("unknown prompt: {name}"))
                })?;
                let missing: Vec<&str> = entry
                    .prompt
                    .arguments
                    .iter()
                    .flatten()
                    .filter(|a| a.required == Some(true) && !args.contains_key(&a.name))
                    .map(|a| a.name.as_str())
                    .collect();
                if !missing.is_empty() {
                    return Err(ErrorObject::invalid_params(format!(
                        "prompt {name} is missing required arguments: {}",
                        missing.join(", ")
                    )));
                }
                Arc::clone(&entry.handler)
            };
            job(
                false,
                Box::new(move |ctx| {
                    let digest =
                        mrtr::digest(&[&name, &serde_json::to_string(&args).unwrap_or_default()]);
                    let res = handler(ctx, args);
                    outcome(&inner, ctx, method::PROMPTS_GET, &|| digest.clone(), res)
                }),
                retry,
            )
        }
        Route::Complete => {
            let params: CompleteRequestParams =
                serde_json::from_str(text).map_err(ErrorObject::invalid_params)?;
            let Some(handler) = inner.completion.clone() else {
                return Err(ErrorObject::method_not_found(method));
            };
            // Spec 2026-07-28 server/utilities/completion: an unknown prompt
            // or resource reference is invalid params.
            inner.check_completion_ref(&params.reference)?;
            job(
                false,
                Box::new(move |ctx| {
                    let res = handler(ctx, params);
                    finish(&inner, ctx.id(), res)
                }),
                None,
            )
        }
        Route::Custom(handler, inline) => {
            let mut value: Value =
                serde_json::from_str(text).map_err(ErrorObject::invalid_params)?;
            if let Some(map) = value.as_object_mut() {
                map.remove("_meta");
            }
            let method = method.to_owned();
            job(
                inline,
                Box::new(move |ctx| {
                    let res = handler(ctx, value).and_then(|result| {
                        // Spec 2026-07-28 basic/patterns/mrtr: only tools/call,
                        // prompts/get and resources/read may need input.
                        if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
                            inner.trace(&format!("the handler of {method} returned input_required, which only tools/call, prompts/get and resources/read may"));
                            return Err(ErrorObject::internal_error(format!("{method} cannot ask for input")));
                        }
                        Ok(result)
                    });
                    finish(&inner, ctx.id(), res)
                }),
                None,
            )
        }
    }
}

/// Runs a job's work, turning a panic into `-32603` for that request.
pub(crate) fn run(work: Work, ctx: &RequestContext) -> Reply {
    match catch_unwind(AssertUnwindSafe(|| work(ctx))) {
        Ok(reply) => reply,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string payload".to_owned());
            let mut line = Vec::new();
            encode_error(
                &mut line,
                Some(ctx.id()),
                &ErrorObject::internal_error(format!("handler panicked: {what}")),
            );
            Reply::Line(line)
        }
    }
}

/// Where a method goes.
#[derive(Clone)]
enum Route {
    Discover,
    ToolsList,
    ToolsCall,
    ResourcesList,
    TemplatesList,
    ResourcesRead,
    PromptsList,
    PromptsGet,
    Complete,
    Listen,
    Custom(Arc<crate::server::handlers::MethodFn>, bool),
}

/// Finds the route of a method; features that are not advertised are not
/// served (`-32601`).
fn route(inner: &Inner, name: &str) -> Result<Route, ErrorObject> {
    let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
    let route = match name {
        method::SERVER_DISCOVER => Some(Route::Discover),
        method::TOOLS_LIST if registry.has_tools => Some(Route::ToolsList),
        method::TOOLS_CALL if registry.has_tools => Some(Route::ToolsCall),
        method::RESOURCES_LIST if registry.has_resources => Some(Route::ResourcesList),
        method::RESOURCES_TEMPLATES_LIST if registry.has_resources => Some(Route::TemplatesList),
        method::RESOURCES_READ if registry.has_resources => Some(Route::ResourcesRead),
        method::PROMPTS_LIST if registry.has_prompts => Some(Route::PromptsList),
        method::PROMPTS_GET if registry.has_prompts => Some(Route::PromptsGet),
        method::COMPLETION_COMPLETE if inner.completion.is_some() => Some(Route::Complete),
        method::SUBSCRIPTIONS_LISTEN => Some(Route::Listen),
        _ => inner
            .methods
            .get(name)
            .map(|(handler, inline)| Route::Custom(Arc::clone(handler), *inline)),
    };
    route.ok_or_else(|| match name {
        // Spec 2026-07-28 basic/versioning: a modern-only server SHOULD name
        // its versions in any error to `initialize`; a legacy client may have
        // nothing else to show its user.
        "initialize" if inner.config.modern_only => ErrorObject::new(
            crate::jsonrpc::error_code::METHOD_NOT_FOUND,
            format!(
                "method not found: initialize (this server speaks only MCP {}, which has no initialize handshake)",
                SUPPORTED_VERSIONS.join(", ")
            ),
        )
        .with_data(json!({ "supported": SUPPORTED_VERSIONS })),
        // Reached only with modern `_meta`: a modern request for a method
        // the modern era removed.
        "initialize" => ErrorObject::new(
            crate::jsonrpc::error_code::METHOD_NOT_FOUND,
            format!(
                "method not found: initialize is not part of MCP {} (send it without the per-request _meta to open a legacy session, versions {})",
                SUPPORTED_VERSIONS.join(", "),
                LEGACY_VERSIONS.join(", ")
            ),
        )
        .with_data(json!({ "supported": SUPPORTED_VERSIONS, "legacy": LEGACY_VERSIONS })),
        _ => ErrorObject::method_not_found(name),
    })
}

fn required_string(raw: Option<&RawValue>, name: &str) -> Result<String, ErrorObject> {
    optional_string(raw, name)?
        .ok_or_else(|| ErrorObject::invalid_params(format!("missing {name}")))
}

fn optional_string(raw: Option<&RawValue>, name: &str) -> Result<Option<String>, ErrorObject> {
    match raw {
        None => Ok(None),
        Some(raw) if raw.get() == "null" => Ok(None),
        Some(raw) => serde_json::from_str(raw.get())
            .map(Some)
            .map_err(|_| ErrorObject::invalid_params(format!("{name} must be a string"))),
    }
}

/// The byte range of `part` inside `whole`; `part` is a slice of `whole`.
fn span(whole: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

fn discover(inner: &Inner, ctx: &RequestContext) -> Reply {
    let result = DiscoverResult {
        supported_versions: SUPPORTED_VERSIONS.iter().map(|v| v.to_string()).collect(),
        capabilities: inner.capabilities(),
        instructions: inner.instructions.clone(),
        ttl_ms: Some(inner.config.cache.ttl_ms),
        cache_scope: Some(inner.config.cache.scope),
        result_type: None,
        meta: None,
    };
    finish(inner, ctx.id(), Ok(result))
}

fn list(inner: &Inner, ctx: &RequestContext, route: Route, cursor: Option<&str>) -> Reply {
    let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
    let size = inner.config.page_size;
    let cache = &inner.config.cache;
    // The four lists differ only in the catalog, the item and the result type.
    macro_rules! page {
        ($catalog:ident, $item:ident, $result:ident) => {
            finish(
                inner,
                ctx.id(),
                registry
                    .$catalog
                    .page(cursor, size, |e| e.$item.clone())
                    .map(|(items, next)| $result {
                        next_cursor: next,
                        ttl_ms: Some(cache.ttl_ms),
                        cache_scope: Some(cache.scope),
                        ..$result::new(items)
                    }),
            )
        };
    }
    match route {
        Route::ToolsList => page!(tools, tool, ListToolsResult),
        Route::ResourcesList => page!(resources, resource, ListResourcesResult),
        Route::TemplatesList => page!(templates, template, ListResourceTemplatesResult),
        _ => page!(prompts, prompt, ListPromptsResult),
    }
}

/// `ping` for a legacy client: an empty result.
fn legacy_ping() -> Prepared {
    let work: Work = Box::new(|ctx| {
        let mut line = Vec::with_capacity(48);
        // An empty object into a Vec: encoding cannot fail.
        let _ = encode_result(&mut line, ctx.id(), &json!({}));
        Reply::Line(line)
    });
    Prepared::Run(Job {
        meta: RequestMeta::empty(),
        work,
        inline: true,
        retry: None,
    })
}
