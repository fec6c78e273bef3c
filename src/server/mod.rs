//! The server: a registry of tools, resources, prompts and completion, and
//! [`Server::serve`], which speaks MCP 2026-07-28 over a [`Transport`](crate::Transport).
//!
//! The application owns its state and handler logic; the server owns the
//! framing, the threads, the bookkeeping (what is in flight, what was
//! cancelled) and the spec's rules.

pub(crate) mod arguments;
pub(crate) mod builder;
pub(crate) mod cancel;
pub(crate) mod change_feed;
pub(crate) mod conn;
pub(crate) mod connections;
pub(crate) mod context;
pub(crate) mod dispatch;
pub(crate) mod encode;
pub(crate) mod event;
pub(crate) mod front;
pub(crate) mod handlers;
pub(crate) mod heap;
#[cfg(feature = "http")]
pub(crate) mod http;
pub(crate) mod in_flight;
#[cfg(feature = "legacy")]
pub(crate) mod legacy;
pub(crate) mod meta;
pub(crate) mod mrtr;
pub(crate) mod notifier;
pub(crate) mod out;
pub(crate) mod pool;
pub(crate) mod reader;
#[cfg(feature = "redis")]
pub(crate) mod redis_feed;
pub(crate) mod registry;
pub(crate) mod reply;
pub(crate) mod request_meta;
pub(crate) mod serve;
pub(crate) mod stop;
pub(crate) mod subscriptions;
pub(crate) mod tasks;
#[cfg(feature = "schemars")]
pub(crate) mod typed;
pub(crate) mod work;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;

use context::RequestContext;
use handlers::ResourceRequest;
use notifier::Notifier;

use crate::jsonrpc::ErrorObject;
use crate::note_limiter::NoteLimiter;
use crate::outcome::{Outcome, PromptArguments, ToolOutcome};
use crate::types::CompletionReference;
use crate::types::{
    CacheScope, GetPromptResult, Implementation, Prompt, PromptsCapability, ReadResourceResult,
    Resource, ResourceTemplate, ResourcesCapability, ServerCapabilities, TASKS_EXTENSION, Tool,
    ToolsCapability,
};
use connections::Connections;
use handlers::{CompletionFn, MethodFn, ResourceFn, prompt_fn, resource_fn, typed_tool};
use registry::Registry;
#[cfg(feature = "client")]
use stop::AtStop;
pub use stop::StopHandle;

/// Caching hints put on discover, list and read results
/// (spec 2026-07-28 server/utilities/caching).
#[derive(Debug, Clone, PartialEq)]
pub struct CacheHints {
    /// How long the client may consider a result fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may cache it.
    pub scope: CacheScope,
}

impl Default for CacheHints {
    /// `ttlMs: 0`, `cacheScope: "private"`: the conservative choice.
    fn default() -> Self {
        CacheHints {
            ttl_ms: 0,
            scope: CacheScope::Private,
        }
    }
}

/// Tuning knobs, set through [`ServerBuilder`].
#[derive(Clone)]
pub(crate) struct Config {
    pub workers: usize,
    /// How long a pool thread out of jobs spins before it sleeps (see
    /// `pool`); zero: it sleeps at once.
    pub spin: Duration,
    pub max_running: usize,
    pub queue_limit: usize,
    pub queue_bytes: usize,
    pub max_line_bytes: usize,
    /// Open subscriptions one connection may hold: `subscriptions/listen`
    /// requests, and a legacy session's `resources/subscribe` URIs.
    pub max_subscriptions: usize,
    /// `resourceSubscriptions` URIs one `subscriptions/listen` may name.
    pub max_subscription_uris: usize,
    pub shutdown_grace: Duration,
    /// How long a client of a byte stream may take less than 16 KiB of a
    /// send in progress (`Shared::let_go_if_stalled`), and of the last
    /// replies at the end (`ConnHandle::shut_down`).
    pub write_timeout: Duration,
    pub page_size: usize,
    pub cache: CacheHints,
    /// Refuse `initialize`: serve modern requests only.
    pub modern_only: bool,
    /// How long a request waits for a legacy client's answers to the
    /// server's own requests (`legacy::input`); `Duration::MAX`: no limit.
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    pub ask_timeout: Duration,
    /// Share one heap and give its free memory back when idle (`heap`).
    pub release_memory: bool,
}

/// A hook that receives the server's diagnostic lines.
pub(crate) type Trace = dyn Fn(&str) + Send + Sync;

/// A hook that decides whether a listen may subscribe to a resource URI:
/// `None` refuses it; an accepted one comes with what the subscription
/// holds for as long as it names the URI.
pub(crate) type AcceptUri = dyn Fn(&str) -> Option<UriHold> + Send + Sync;

/// What a subscription that names a URI holds while it does (in its
/// acknowledged filter, `subscriptions::Accepted`, or a legacy session's
/// subscribed URIs): nothing, unless the application's hook gave it
/// something (a proxy's hold on its subscription behind,
/// `proxy::subscribe`, which learns that no caller names the URI any more
/// when the last hold is gone). Dropping it only lets go of it.
#[derive(Clone, Default)]
pub(crate) struct UriHold(Option<Arc<dyn std::any::Any + Send + Sync>>);

impl UriHold {
    /// Holds `held` for as long as the subscription names the URI.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub fn new(held: Arc<dyn std::any::Any + Send + Sync>) -> UriHold {
        UriHold(Some(held))
    }
}

impl std::fmt::Debug for UriHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "UriHold"
        } else {
            "UriHold(none)"
        })
    }
}

/// Holds are not what a filter is compared by.
impl PartialEq for UriHold {
    fn eq(&self, _: &UriHold) -> bool {
        true
    }
}

impl Eq for UriHold {}

/// The most a server may advertise, asked each time (a proxy's is what the
/// server behind it declares now).
pub(crate) type Ceiling = dyn Fn() -> ServerCapabilities + Send + Sync;

/// What every clone of a [`Server`] shares.
pub(crate) struct Inner {
    pub info: Implementation,
    /// `info` as JSON, stamped into every result's `_meta`.
    pub info_value: Value,
    /// `,"_meta":{"io.modelcontextprotocol/serverInfo":..}`: what a result
    /// without a `_meta` of its own gets (see `reply::Stamp`).
    pub info_meta: Arc<[u8]>,
    pub instructions: Option<String>,
    pub config: Config,
    pub registry: RwLock<Registry>,
    pub completion: Option<Arc<CompletionFn>>,
    pub methods: HashMap<String, (Arc<MethodFn>, bool)>,
    pub trace: Arc<Trace>,
    /// Limits the trace: a client can cause notes (see `note_limiter`).
    pub trace_limit: Mutex<NoteLimiter>,
    /// Which requested `resourceSubscriptions` URIs a listen accepts.
    pub accept_uri: Option<Arc<AcceptUri>>,
    /// No more than what this returns is advertised or honoured
    /// (`ServerBuilder::capabilities_at_most`).
    pub ceiling: Option<Arc<Ceiling>>,
    /// Seals and opens `requestState` (multi round-trip requests).
    pub sealer: mrtr::Sealer,
    /// The connections being served, for stop and for published events.
    pub connections: Arc<Connections>,
    /// The tasks of every connection (Tasks extension).
    pub tasks: Arc<tasks::Tasks>,
    /// The threads that run pooled handlers, for every connection.
    pub pool: pool::Pool,
    /// What the stop runs for the crate's own code ([`Server::at_stop`]).
    #[cfg(feature = "client")]
    pub at_stop: Arc<AtStop>,
}

/// An MCP server: cheap to clone, every clone is the same server.
///
/// Build one with [`Server::builder`], then call [`Server::serve`] for a
/// connection (several may be served at once, from different threads).
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.info.name)
            .field("version", &self.inner.info.version)
            .finish_non_exhaustive()
    }
}

// `Server::builder` is in builder.rs and `Server::serve` in serve/mod.rs,
// beside what they start.
impl Server {
    /// A handle that publishes changes to open subscriptions.
    pub fn notifier(&self) -> Notifier {
        Notifier {
            connections: Arc::clone(&self.inner.connections),
        }
    }

    /// A handle that stops this server from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle::new(
            Arc::clone(&self.inner.connections),
            #[cfg(feature = "client")]
            Arc::clone(&self.inner.at_stop),
        )
    }

    /// Runs `work` when the server is stopped ([`StopHandle::stop`]), on
    /// the stopping thread, or at once if it was: for a proxy, the
    /// `tasks/cancel` of a task it follows behind. `work` must not wait
    /// long. The key takes it back ([`Server::forget_at_stop`]).
    #[cfg(feature = "client")]
    pub(crate) fn at_stop(&self, work: impl FnOnce() + Send + 'static) -> u64 {
        self.inner.at_stop.keep(&self.inner.connections, work)
    }

    /// Takes back the work [`Server::at_stop`] registered under `key`;
    /// whether it was still there (the stop had not run it).
    #[cfg(feature = "client")]
    pub(crate) fn forget_at_stop(&self, key: u64) -> bool {
        self.inner.at_stop.forget(key)
    }

    /// The server's name and version, as sent in every result's `_meta`.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// What `server/discover` advertises right now.
    pub fn capabilities(&self) -> ServerCapabilities {
        self.inner.capabilities()
    }

    /// Adds a pooled tool while serving, or replaces the tool of that name;
    /// the next `tools/list` shows it. Same handler rules as
    /// [`ServerBuilder::tool`](crate::ServerBuilder::tool).
    pub fn add_tool<T, R, F>(&self, tool: Tool, handler: F)
    where
        T: arguments::ToolArguments,
        R: Into<ToolOutcome>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = arguments::advertised::<T>(tool);
        self.inner
            .registry_mut()
            .add_tool(tool, typed_tool(handler), false);
        self.notifier().tools_list_changed();
    }

    /// Adds a task tool while serving, or replaces the tool of that name,
    /// as [`ServerBuilder::task_tool`](crate::ServerBuilder::task_tool)
    /// registers one (no gate): for a proxy, whose tools come and go with
    /// the server behind it (`proxy::serve_as`).
    #[cfg(feature = "client")]
    pub(crate) fn add_task_tool<T, R, F>(&self, tool: Tool, mode: tasks::TaskMode, handler: F)
    where
        T: arguments::ToolArguments,
        R: Into<ToolOutcome>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = arguments::advertised::<T>(tool);
        self.inner
            .registry_mut()
            .add_task_tool(tool, typed_tool(handler), false, mode, None);
        self.notifier().tools_list_changed();
    }

    /// Removes a tool while serving; whether it was there.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.inner.registry_mut().tools.remove(name);
        if removed {
            self.notifier().tools_list_changed();
        }
        removed
    }

    /// Adds a pooled resource while serving, or replaces the resource with
    /// that URI.
    pub fn add_resource<R, F>(&self, resource: Resource, handler: F)
    where
        R: Into<Outcome<ReadResourceResult>>,
        F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.inner
            .registry_mut()
            .add_resource(resource, resource_fn(handler), false);
        self.notifier().resources_list_changed();
    }

    /// Removes a resource while serving; whether it was there.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self.inner.registry_mut().resources.remove(uri);
        if removed {
            self.notifier().resources_list_changed();
        }
        removed
    }

    /// Adds a resource template while serving, or replaces the template
    /// with that URI template.
    pub fn add_resource_template<R, F>(&self, template: ResourceTemplate, handler: F)
    where
        R: Into<Outcome<ReadResourceResult>>,
        F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.inner
            .registry_mut()
            .add_template(template, resource_fn(handler));
        self.notifier().resources_list_changed();
    }

    /// Removes a resource template while serving; whether it was there.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        let removed = self.inner.registry_mut().templates.remove(uri_template);
        if removed {
            self.notifier().resources_list_changed();
        }
        removed
    }

    /// Adds a prompt while serving, or replaces the prompt of that name.
    pub fn add_prompt<R, F>(&self, prompt: Prompt, handler: F)
    where
        R: Into<Outcome<GetPromptResult>>,
        F: Fn(&RequestContext, PromptArguments) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.inner
            .registry_mut()
            .add_prompt(prompt, prompt_fn(handler));
        self.notifier().prompts_list_changed();
    }

    /// Removes a prompt while serving; whether it was there.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.inner.registry_mut().prompts.remove(name);
        if removed {
            self.notifier().prompts_list_changed();
        }
        removed
    }
}

impl Inner {
    /// Whether the server serves legacy clients (the `legacy` feature, and
    /// not [`ServerBuilder::modern_only`]).
    pub(crate) fn serves_legacy(&self) -> bool {
        cfg!(feature = "legacy") && !self.config.modern_only
    }

    pub(crate) fn trace(&self, line: &str) {
        let mut limit = self.trace_limit.lock().unwrap_or_else(|e| e.into_inner());
        limit.note(&*self.trace, line);
    }

    fn registry_mut(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.registry.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a subscription may name `uri` (the application's
    /// [`ServerBuilder::resource_subscription_filter`]; every URI without one).
    pub(crate) fn accepts_uri(&self, uri: &str) -> Option<UriHold> {
        match &self.accept_uri {
            Some(hook) => hook(uri),
            None => Some(UriHold::default()),
        }
    }

    /// A completion reference must name a registered prompt, resource
    /// template or resource.
    pub(crate) fn check_completion_ref(
        &self,
        reference: &CompletionReference,
    ) -> Result<(), ErrorObject> {
        let registry = self.registry.read().unwrap_or_else(|e| e.into_inner());
        match reference {
            CompletionReference::Prompt(p) if registry.prompts.get(&p.name).is_none() => Err(
                ErrorObject::invalid_params(format!("unknown prompt: {}", p.name)),
            ),
            CompletionReference::Resource(r)
                if registry.templates.get(&r.uri).is_none()
                    && registry.resources.get(&r.uri).is_none() =>
            {
                Err(ErrorObject::invalid_params(format!(
                    "unknown resource template: {}",
                    r.uri
                )))
            }
            _ => Ok(()),
        }
    }

    /// Capabilities derived from what is registered, within the ceiling
    /// if the server has one: what is advertised is what is served. Every
    /// rule that honours a capability asks this (the listen's
    /// acknowledgment, the legacy session's requests).
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let derived = self.derived_capabilities();
        match self.ceiling.as_ref().map(|ceiling| ceiling()) {
            None => derived,
            // A feature when both have it, with the ceiling's flags: the
            // derived ones are all `true`.
            Some(ceiling) => ServerCapabilities {
                tools: derived.tools.and(ceiling.tools.clone()),
                resources: derived.resources.and(ceiling.resources.clone()),
                prompts: derived.prompts.and(ceiling.prompts.clone()),
                completions: derived.completions.and(ceiling.completions.clone()),
                logging: derived.logging.and(ceiling.logging.clone()),
                experimental: None,
                extensions: derived.extensions.and(ceiling.extensions.clone()),
            },
        }
    }

    /// Whether a legacy client may subscribe to single resources
    /// (`resources/subscribe`).
    #[cfg(feature = "legacy")]
    pub(crate) fn subscribable(&self) -> bool {
        self.capabilities().resources.and_then(|r| r.subscribe) == Some(true)
    }

    fn derived_capabilities(&self) -> ServerCapabilities {
        let registry = self.registry.read().unwrap_or_else(|e| e.into_inner());
        ServerCapabilities {
            // `subscriptions/listen` delivers every kind of change.
            tools: registry.has_tools.then_some(ToolsCapability {
                list_changed: Some(true),
            }),
            resources: registry.has_resources.then_some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            prompts: registry.has_prompts.then_some(PromptsCapability {
                list_changed: Some(true),
            }),
            completions: self.completion.as_ref().map(|_| Default::default()),
            // Every handler can log through `RequestContext::log`.
            logging: Some(Default::default()),
            extensions: registry.has_tasks.then(|| {
                let mut extensions = crate::types::JsonObject::new();
                extensions.insert(
                    TASKS_EXTENSION.to_owned(),
                    Value::Object(Default::default()),
                );
                extensions
            }),
            ..Default::default()
        }
    }

    /// Finds the handler for a `resources/read` URI: a static resource
    /// first, then the templates in registration order. Unknown URIs are
    /// `-32602` with `data.uri` (spec 2026-07-28 server/resources).
    pub(crate) fn find_resource(&self, uri: &str) -> Result<FoundResource, ErrorObject> {
        let registry = self.registry.read().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = registry.resources.get(uri) {
            return Ok(FoundResource {
                handler: Arc::clone(&entry.handler),
                request: ResourceRequest {
                    uri: uri.to_owned(),
                    variables: Default::default(),
                },
                inline: entry.inline,
            });
        }
        for entry in registry.templates.iter() {
            if let Some(variables) = entry.pattern.matches(uri) {
                return Ok(FoundResource {
                    handler: Arc::clone(&entry.handler),
                    request: ResourceRequest {
                        uri: uri.to_owned(),
                        variables,
                    },
                    inline: false,
                });
            }
        }
        let error = ErrorObject::invalid_params(format!("resource not found: {uri}"));
        Err(error.with_data(serde_json::json!({ "uri": uri })))
    }
}

/// The handler that reads a URI, and what it is asked.
pub(crate) struct FoundResource {
    pub handler: Arc<ResourceFn>,
    pub request: ResourceRequest,
    pub inline: bool,
}
