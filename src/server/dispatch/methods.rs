//! One preparation per route: each reads its method's params, checks
//! them, verifies a retry's state (spec 2026-07-28 basic/patterns/mrtr:
//! before the handler runs) and returns the work that answers the
//! request. The order of checks inside each is part of the wire contract:
//! it decides which error a request with several faults gets.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::params::{optional_string, required_string};
use super::request::{Plan, Request};
use super::route::List;
use super::tasks::task_call;
use crate::jsonrpc::ErrorObject;
use crate::outcome::{Outcome, PromptArguments};
use crate::server::Inner;
use crate::server::context::RequestContext;
use crate::server::handlers::{GateFn, MethodFn, PromptFn, ToolFn};
use crate::server::mrtr::{self, Retry};
use crate::server::reply::{Reply, outcome, response};
use crate::server::request_meta::TokenInfo;
use crate::server::subscriptions::Accepted;
use crate::server::tasks::{TaskMode, extension_required};
use crate::types::{
    CompleteRequestParams, DiscoverResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, SubscriptionFilter, TASKS_EXTENSION, method,
};
use crate::version::SUPPORTED_VERSIONS;

/// `subscriptions/listen`: the part of the filter this server honours.
pub(super) fn prepare_listen(req: &Request<'_>) -> Result<Accepted, ErrorObject> {
    let raw = req
        .fields
        .notifications
        .ok_or_else(|| ErrorObject::invalid_params("missing notifications"))?;
    // serde reads a struct from an array by position; the schema says
    // object, and the other shapes get serde's own message.
    if raw.get().starts_with('[') {
        return Err(ErrorObject::invalid_params(
            "invalid notifications filter: expected an object, got an array",
        ));
    }
    let filter: SubscriptionFilter = serde_json::from_str(raw.get())
        .map_err(|e| ErrorObject::invalid_params(format!("invalid notifications filter: {e}")))?;
    let uris = filter.resource_subscriptions.as_ref().map_or(0, Vec::len);
    let tasks = filter.task_ids.as_ref().map_or(0, Vec::len);
    // Tasks extension: following tasks needs the extension declared on
    // this request (-32021, as for the task methods), whatever else is
    // wrong with the list (the extension page: MUST, for non-declaring
    // clients requesting task notifications).
    if tasks > 0 && !req.meta.has_extension(TASKS_EXTENSION) {
        return Err(extension_required());
    }
    let max = req.inner.config.max_subscription_uris;
    if uris > max || tasks > max {
        let (n, what) = if uris > max {
            (uris, "resourceSubscriptions")
        } else {
            (tasks, "taskIds")
        };
        return Err(ErrorObject::invalid_params(format!(
            "invalid notifications filter: {n} {what}, more than the {max} one subscription may name"
        ))
        .with_data(json!({ "limit": max })));
    }
    let task_ids = filter.task_ids.clone().unwrap_or_default();
    let mut accepted = accept(req.inner, filter);
    let tasks_served = {
        let registry = req.inner.registry.read().unwrap_or_else(|e| e.into_inner());
        registry.has_tasks
    };
    if tasks_served {
        let caller = req.meta.token_info().and_then(TokenInfo::owner);
        accepted.task_ids = req.inner.tasks.known(&task_ids, caller.as_ref());
    }
    Ok(accepted)
}

/// The part of a listen filter this server honours (spec 2026-07-28
/// basic/patterns/subscriptions, "Acknowledgment": "Notification types
/// the server does not support are omitted"): the list changes and the
/// resource updates its capabilities declare (`Inner::capabilities`), and
/// of the URIs the ones the application's hook accepts. Everything else
/// is left out, never echoed.
fn accept(inner: &Inner, filter: SubscriptionFilter) -> Accepted {
    let capabilities = inner.capabilities();
    let asked = |flag: Option<bool>| flag == Some(true);
    let declared = |flag: Option<bool>| flag == Some(true);
    let mut accepted = Accepted {
        tools: asked(filter.tools_list_changed)
            && declared(capabilities.tools.and_then(|t| t.list_changed)),
        prompts: asked(filter.prompts_list_changed)
            && declared(capabilities.prompts.and_then(|p| p.list_changed)),
        resources: asked(filter.resources_list_changed)
            && declared(capabilities.resources.as_ref().and_then(|r| r.list_changed)),
        ..Accepted::default()
    };
    if declared(capabilities.resources.and_then(|r| r.subscribe)) {
        // A set for the duplicates: a scan per URI is quadratic in a
        // long list.
        let mut seen = std::collections::HashSet::new();
        for uri in filter.resource_subscriptions.into_iter().flatten() {
            if seen.contains(&uri) {
                continue;
            }
            if let Some(hold) = inner.accepts_uri(&uri) {
                seen.insert(uri.clone());
                accepted.uris.push(uri);
                accepted.holds.push(hold);
            }
        }
    }
    accepted
}

/// `server/discover`: inline, from what is registered.
pub(super) fn prepare_discover(req: &Request<'_>) -> Plan {
    let inner = Arc::clone(req.inner);
    Plan::new(true, Box::new(move |ctx| discover(&inner, ctx)), None)
}

/// `tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list`: inline, one page from the cursor.
pub(super) fn prepare_list(req: &Request<'_>, list: List) -> Result<Plan, ErrorObject> {
    let cursor = optional_string(req.fields.cursor, "cursor")?;
    let inner = Arc::clone(req.inner);
    let work =
        Box::new(move |ctx: &RequestContext| list_page(&inner, ctx, list, cursor.as_deref()));
    Ok(Plan::new(true, work, None))
}

/// `tools/call`, prepared: what its work needs (see [`ToolCall::plan`]).
pub(super) struct ToolCall {
    inner: Arc<Inner>,
    name: String,
    /// The arguments object as the client sent it, copied out of the
    /// line (the work outlives it).
    arguments: Option<String>,
    handler: Arc<ToolFn>,
    inline: bool,
    retry: Option<Retry>,
    /// `Some` when the call becomes a task: the tool's gate, if it has one.
    task: Option<Option<Arc<GateFn>>>,
}

/// `tools/call`: `name` a string, `arguments` an object (or absent), the
/// retry verified, the tool known.
pub(super) fn prepare_tool_call(req: &Request<'_>) -> Result<ToolCall, ErrorObject> {
    let name = required_string(req.fields.name, "name")?;
    let args = req.fields.arguments.filter(|raw| raw.get() != "null");
    if let Some(raw) = args
        && !raw.get().starts_with('{')
    {
        return Err(ErrorObject::invalid_params("arguments must be an object"));
    }
    let retry = req
        .retry
        .verify(req.inner, req.meta, method::TOOLS_CALL, &|| {
            mrtr::digest(&[&name, &mrtr::canonical(args.map(RawValue::get))])
        })?;
    let (handler, inline, mode, gate) = {
        let registry = req.inner.registry.read().unwrap_or_else(|e| e.into_inner());
        let entry = registry
            .tools
            .get(&name)
            .ok_or_else(|| ErrorObject::invalid_params(format!("unknown tool: {name}")))?;
        let gate = entry.gate.clone();
        (
            Arc::clone(&entry.handler),
            entry.inline,
            entry.task_mode,
            gate,
        )
    };
    // Tasks extension (FIXTURES.md C2), decided by this request's own
    // capabilities, before the handler runs.
    let declares = req.meta.has_extension(TASKS_EXTENSION);
    let task = match mode {
        TaskMode::Never => None,
        TaskMode::Optional | TaskMode::Required if declares => Some(gate),
        TaskMode::Optional => None,
        TaskMode::Required => return Err(extension_required()),
    };
    Ok(ToolCall {
        task,
        inner: Arc::clone(req.inner),
        arguments: args.map(|raw| raw.get().to_owned()),
        name,
        handler,
        inline,
        retry,
    })
}

impl ToolCall {
    /// The work of the call.
    pub fn plan(self) -> Plan {
        let ToolCall {
            inner,
            name,
            arguments,
            handler,
            inline,
            retry,
            task,
        } = self;
        if let Some(gate) = task {
            let digest = mrtr::digest(&[&name, &mrtr::canonical(arguments.as_deref())]);
            let work = Box::new(task_call(inner, handler, gate, arguments, digest));
            return Plan::new(false, work, retry);
        }
        let work = Box::new(move |ctx: &RequestContext| {
            let args = arguments.as_deref();
            let res = handler(ctx, args);
            let digest = || mrtr::digest(&[&name, &mrtr::canonical(args)]);
            outcome(&inner, ctx, method::TOOLS_CALL, &digest, res)
        });
        Plan::new(inline, work, retry)
    }
}

/// `resources/read`: `uri` a string, the retry verified, then a resource
/// or template that serves the URI. Results get the server's cache hints
/// unless the handler set its own.
pub(super) fn prepare_resource_read(req: &Request<'_>) -> Result<Plan, ErrorObject> {
    let uri = required_string(req.fields.uri, "uri")?;
    let retry = req
        .retry
        .verify(req.inner, req.meta, method::RESOURCES_READ, &|| {
            mrtr::digest(&[&uri])
        })?;
    let found = req.inner.find_resource(&uri)?;
    let inner = Arc::clone(req.inner);
    let inline = found.inline;
    let work = Box::new(move |ctx: &RequestContext| {
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
    });
    Ok(Plan::new(inline, work, retry))
}

/// `prompts/get`: `name` a string, `arguments` an object of strings, the
/// retry verified, the prompt known, its required arguments present.
pub(super) fn prepare_prompt_get(req: &Request<'_>) -> Result<Plan, ErrorObject> {
    let name = required_string(req.fields.name, "name")?;
    let args: PromptArguments = match req.fields.arguments {
        None => PromptArguments::new(),
        Some(raw) if raw.get() == "null" => PromptArguments::new(),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
            ErrorObject::invalid_params(format!(
                "prompt arguments must be an object of strings: {e}"
            ))
        })?,
    };
    let retry = req
        .retry
        .verify(req.inner, req.meta, method::PROMPTS_GET, &|| {
            prompt_digest(&name, &args)
        })?;
    let handler = find_prompt(req.inner, &name, &args)?;
    let inner = Arc::clone(req.inner);
    let work = Box::new(move |ctx: &RequestContext| {
        let digest = prompt_digest(&name, &args);
        let res = handler(ctx, args);
        outcome(&inner, ctx, method::PROMPTS_GET, &|| digest.clone(), res)
    });
    Ok(Plan::new(false, work, retry))
}

/// What a retry of `prompts/get` must match: the prompt and its arguments.
fn prompt_digest(name: &str, args: &PromptArguments) -> String {
    mrtr::digest(&[name, &serde_json::to_string(args).unwrap_or_default()])
}

/// The handler of a known prompt whose required arguments are all there.
fn find_prompt(
    inner: &Inner,
    name: &str,
    args: &PromptArguments,
) -> Result<Arc<PromptFn>, ErrorObject> {
    let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
    let entry = registry
        .prompts
        .get(name)
        .ok_or_else(|| ErrorObject::invalid_params(format!("unknown prompt: {name}")))?;
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
    Ok(Arc::clone(&entry.handler))
}

/// `completion/complete`: the params read whole, the reference known
/// (spec 2026-07-28 server/utilities/completion: an unknown prompt or
/// resource reference is invalid params).
pub(super) fn prepare_complete(req: &Request<'_>) -> Result<Plan, ErrorObject> {
    let params: CompleteRequestParams =
        serde_json::from_str(req.text).map_err(ErrorObject::invalid_params)?;
    let Some(handler) = req.inner.completion.clone() else {
        return Err(ErrorObject::method_not_found(req.method));
    };
    req.inner.check_completion_ref(&params.reference)?;
    let inner = Arc::clone(req.inner);
    let work = Box::new(move |ctx: &RequestContext| {
        let res = handler(ctx, params);
        response(&inner, ctx.id(), res)
    });
    Ok(Plan::new(false, work, None))
}

/// An application-defined method: the params without `_meta`, and a
/// result that is never `input_required` (spec 2026-07-28
/// basic/patterns/mrtr: only tools/call, prompts/get and resources/read
/// may need input).
pub(super) fn prepare_custom(
    req: &Request<'_>,
    handler: Arc<MethodFn>,
    inline: bool,
) -> Result<Plan, ErrorObject> {
    let mut value: Value = serde_json::from_str(req.text).map_err(ErrorObject::invalid_params)?;
    if let Some(map) = value.as_object_mut() {
        map.remove("_meta");
    }
    let method = req.method.to_owned();
    let inner = Arc::clone(req.inner);
    let work = Box::new(move |ctx: &RequestContext| {
        let res = handler(ctx, value).and_then(|result| {
            if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
                inner.trace(&format!("the handler of {method} returned input_required, which only tools/call, prompts/get and resources/read may"));
                return Err(ErrorObject::internal_error(format!(
                    "{method} cannot ask for input"
                )));
            }
            Ok(result)
        });
        response(&inner, ctx.id(), res)
    });
    Ok(Plan::new(inline, work, None))
}

/// The `DiscoverResult` of this server.
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
    response(inner, ctx.id(), Ok(result))
}

/// One page of a list, with the server's cache hints.
fn list_page(inner: &Inner, ctx: &RequestContext, list: List, cursor: Option<&str>) -> Reply {
    let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
    let size = inner.config.page_size;
    let cache = &inner.config.cache;
    // The four lists differ only in the catalog, the item and the result type.
    macro_rules! page {
        ($catalog:ident, $item:ident, $result:ident) => {
            response(
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
    match list {
        List::Tools => page!(tools, tool, ListToolsResult),
        List::Resources => page!(resources, resource, ListResourcesResult),
        List::Templates => page!(templates, template, ListResourceTemplatesResult),
        List::Prompts => page!(prompts, prompt, ListPromptsResult),
    }
}
