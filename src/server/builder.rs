//! [`ServerBuilder`]: registers what a server offers and how it runs.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::jsonrpc::ErrorObject;
use crate::outcome::{Outcome, PromptArguments, ToolOutcome};
#[cfg(feature = "client")]
use crate::server::AtStop;
use crate::server::arguments::{ToolArguments, advertised};
use crate::server::change_feed::ChangeFeed;
use crate::server::connections::Connections;
use crate::server::context::RequestContext;
use crate::server::handlers::{
    CompletionFn, MethodFn, ResourceRequest, prompt_fn, resource_fn, typed_tool,
};
use crate::server::mrtr::{FEED_KEY, SEAL_KEY, derive_key};
use crate::server::registry::Registry;
use crate::server::tasks::{MemoryTaskStore, TaskConfig, TaskStore, Tasks};
#[cfg(feature = "schemars")]
use crate::server::typed::{StructuredOutput, structured_tool, typed_prompt_fn};
use crate::server::{AcceptUri, CacheHints, Ceiling, Config, Inner, Server, Trace, UriHold};
use crate::transport::DEFAULT_MAX_LINE_BYTES;
use crate::types::{
    CompleteRequestParams, CompleteResult, GetPromptResult, Implementation, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, ServerCapabilities, Tool,
};

mod limits;

/// Builds a [`Server`]: what it offers (tools, resources, templates,
/// prompts, completion) and how it runs (workers, limits, grace period).
///
/// Handlers are plain closures. They run on the worker pool unless
/// registered with an `inline_` method, which is a promise that the handler
/// is cheap and never blocks: it then runs on the thread that reads the
/// input, with no thread hop, and no line is read while it runs
/// (cancellations included).
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    config: Config,
    pub(in crate::server) registry: Registry,
    pub(in crate::server) task_store: Option<Arc<dyn TaskStore>>,
    pub(in crate::server) task_config: TaskConfig,
    completion: Option<Arc<CompletionFn>>,
    methods: HashMap<String, (Arc<MethodFn>, bool)>,
    trace: Arc<Trace>,
    accept_uri: Option<Arc<AcceptUri>>,
    ceiling: Option<Arc<Ceiling>>,
    change_feed: Option<Arc<dyn ChangeFeed>>,
    state_key: Option<[u8; 32]>,
    state_ttl: Duration,
}

impl Server {
    /// Starts building a server that calls itself `name` at `version`.
    pub fn builder(name: &str, version: &str) -> ServerBuilder {
        ServerBuilder::new(name, version)
    }
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    pub(crate) fn new(name: &str, version: &str) -> ServerBuilder {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).ok();
        let workers = cpus.unwrap_or(2).max(2);
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            config: Config {
                workers,
                spin: Duration::ZERO,
                max_running: 64,
                queue_limit: 256,
                queue_bytes: 256 * 1024,
                max_line_bytes: DEFAULT_MAX_LINE_BYTES,
                max_subscriptions: 10_000,
                max_subscription_uris: 1_000,
                shutdown_grace: Duration::from_secs(2),
                write_timeout: Duration::from_secs(10),
                page_size: 100,
                cache: CacheHints::default(),
                release_memory: false,
                modern_only: false,
                ask_timeout: Duration::from_secs(60),
            },
            registry: Registry::default(),
            task_store: None,
            task_config: TaskConfig::default(),
            completion: None,
            methods: HashMap::new(),
            trace: default_trace(),
            change_feed: None,
            accept_uri: None,
            ceiling: None,
            state_key: None,
            state_ttl: Duration::from_secs(600),
        }
    }

    /// Replaces the server's self-description (title, website, icons, ...);
    /// it is sent as `_meta["io.modelcontextprotocol/serverInfo"]`.
    pub fn implementation(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Natural-language guidance for models, sent in `server/discover`.
    pub fn instructions(mut self, text: &str) -> Self {
        self.instructions = Some(text.to_owned());
        self
    }

    /// Registers a tool that runs on the worker pool.
    ///
    /// The handler gets the call's `arguments` deserialized into `T` (use
    /// `serde_json::Value` to take them raw; a call without `arguments`
    /// reads as `{}`). With the `schemars` feature the tool advertises
    /// `T`'s schema as its `inputSchema`, unless the [`Tool`] was given
    /// one ([`ToolArguments`]). Arguments that do not fit `T` are answered
    /// without calling the handler, with a result whose `isError` is
    /// `true` and whose text names the field and what it must be, for the
    /// model to correct its call (spec server/tools, "Error Handling"). An
    /// unknown tool, or `arguments` that is not an object, is `-32602`.
    ///
    /// Two kinds of failure, on purpose: return `Ok` with a result whose
    /// `is_error` is `true` (see [`CallToolResult::error_text`]) when the
    /// tool ran and failed, so the model sees what went wrong and can
    /// correct itself; return `Err(ErrorObject)` only for protocol errors
    /// (a missing client capability, say), which the host handles and the
    /// model usually never sees.
    ///
    /// # Panics
    ///
    /// With `schemars`, when the tool has no input schema of its own and
    /// `T` is not a struct or a map (a tool's arguments are an object).
    ///
    /// [`CallToolResult::error_text`]: crate::types::CallToolResult::error_text
    pub fn tool<T, R, F>(mut self, tool: Tool, handler: F) -> Self
    where
        T: ToolArguments,
        R: Into<ToolOutcome>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool);
        self.registry.add_tool(tool, typed_tool(handler), false);
        self
    }

    /// Registers a tool that runs inline on the reader thread: a promise
    /// that it is cheap and never blocks. While it runs no line is read
    /// (cancellations included), and in a pipelined burst the replies of
    /// pooled requests before it wait for the reader's flush. So for a
    /// client of either era; when it needs a legacy client's input, the
    /// wait for the answers (which the reader must read) goes on on the
    /// pool. Otherwise as [`ServerBuilder::tool`].
    pub fn inline_tool<T, R, F>(mut self, tool: Tool, handler: F) -> Self
    where
        T: ToolArguments,
        R: Into<ToolOutcome>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool);
        self.registry.add_tool(tool, typed_tool(handler), true);
        self
    }

    /// Registers a tool with typed input and output, on the worker pool:
    /// its `inputSchema` is derived from `T` (unless the [`Tool`] has one),
    /// its `outputSchema` from the handler's output type `O`,
    /// and each result carries the handler's `O` as `structuredContent`
    /// plus the same JSON as a text block. Arguments are read as for
    /// [`ServerBuilder::tool`] (a result with `isError: true` saying what
    /// did not fit); an `O` that does not serialize to an object is `-32603`.
    /// The handler returns `O`, or `Outcome<O>` when it may ask the client
    /// for input ([`StructuredOutput`]).
    ///
    /// ```
    /// use mcp_stdio::Server;
    /// use mcp_stdio::types::Tool;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     a: i64,
    ///     b: i64,
    /// }
    ///
    /// #[derive(serde::Serialize, schemars::JsonSchema)]
    /// struct Sum {
    ///     sum: i64,
    /// }
    ///
    /// let server = Server::builder("calc", "1.0.0")
    ///     .structured_tool(Tool::new("add", "Adds two numbers."), |_ctx, args: Add| {
    ///         Ok(Sum { sum: args.a + args.b })
    ///     })
    ///     .build();
    /// ```
    ///
    /// A tool that ran and failed, which the model should see, is better
    /// written with [`ServerBuilder::tool`] and
    /// [`CallToolResult::error_text`](crate::types::CallToolResult::error_text).
    ///
    /// # Panics
    ///
    /// When `T` or `O` is not a struct (or a map).
    #[cfg(feature = "schemars")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
    pub fn structured_tool<T, R, F>(mut self, tool: Tool, handler: F) -> Self
    where
        T: ToolArguments,
        R: StructuredOutput,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool).output::<R::Output>();
        self.registry
            .add_tool(tool, structured_tool(handler), false);
        self
    }

    /// [`ServerBuilder::structured_tool`] run inline on the reader thread (a
    /// promise that it is cheap and never blocks).
    #[cfg(feature = "schemars")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
    pub fn inline_structured_tool<T, R, F>(mut self, tool: Tool, handler: F) -> Self
    where
        T: ToolArguments,
        R: StructuredOutput,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool).output::<R::Output>();
        self.registry.add_tool(tool, structured_tool(handler), true);
        self
    }

    /// Registers a static resource, read on the worker pool.
    pub fn resource<R, F>(mut self, resource: Resource, handler: F) -> Self
    where
        R: Into<Outcome<ReadResourceResult>>,
        F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.registry
            .add_resource(resource, resource_fn(handler), false);
        self
    }

    /// Registers a static resource read inline on the reader thread (cheap,
    /// never blocking).
    pub fn inline_resource<R, F>(mut self, resource: Resource, handler: F) -> Self
    where
        R: Into<Outcome<ReadResourceResult>>,
        F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.registry
            .add_resource(resource, resource_fn(handler), true);
        self
    }

    /// Registers a resource template such as `file:///{+path}` or
    /// `db://tables/{name}`; `{name}` matches one path segment and
    /// `{+name}` any text. The handler gets the variables in
    /// [`ResourceRequest::variables`]. Static resources are matched first,
    /// then templates in registration order.
    pub fn resource_template<R, F>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        R: Into<Outcome<ReadResourceResult>>,
        F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.registry.add_template(template, resource_fn(handler));
        self
    }

    /// Registers a prompt. Arguments the prompt declares as required are
    /// checked before the handler runs (`-32602` names the missing ones).
    pub fn prompt<R, F>(mut self, prompt: Prompt, handler: F) -> Self
    where
        R: Into<Outcome<GetPromptResult>>,
        F: Fn(&RequestContext, PromptArguments) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.registry.add_prompt(prompt, prompt_fn(handler));
        self
    }

    /// Registers a prompt whose arguments are the fields of `T`: the
    /// prompt's `arguments` are derived from `T` (names, doc comments as
    /// descriptions, required unless `Option`), a call missing a required
    /// one is `-32602` before the handler runs, and the handler gets a `T`.
    /// Prompt arguments are strings: give `T` `String` and
    /// `Option<String>` fields.
    ///
    /// ```
    /// use mcp_stdio::Server;
    /// use mcp_stdio::types::{GetPromptResult, Prompt, PromptMessage, Role};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Review {
    ///     /// The code to review.
    ///     code: String,
    ///     /// What to focus on.
    ///     focus: Option<String>,
    /// }
    ///
    /// let server = Server::builder("reviewer", "1.0.0")
    ///     .typed_prompt(Prompt::new("review", "Reviews code."), |_ctx, args: Review| {
    ///         let focus = args.focus.unwrap_or_else(|| "anything".into());
    ///         let text = format!("Review this, looking at {focus}:\n{}", args.code);
    ///         Ok(GetPromptResult::new(vec![PromptMessage::text(Role::User, text)]))
    ///     })
    ///     .build();
    /// ```
    ///
    /// # Panics
    ///
    /// When `T` is not a struct (or a map).
    #[cfg(feature = "schemars")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
    pub fn typed_prompt<T, R, F>(mut self, prompt: Prompt, handler: F) -> Self
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
        R: Into<Outcome<GetPromptResult>>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let prompt = prompt.arguments_from::<T>();
        self.registry.add_prompt(prompt, typed_prompt_fn(handler));
        self
    }

    /// Serves `completion/complete` (and advertises `completions`).
    pub fn completion<F>(mut self, handler: F) -> Self
    where
        F: Fn(&RequestContext, CompleteRequestParams) -> Result<CompleteResult, ErrorObject>
            + Send
            + Sync
            + 'static,
    {
        self.completion = Some(Arc::new(handler));
        self
    }

    /// Serves an application-defined request method (an extension's, for
    /// example) on the worker pool. The handler gets the params without
    /// `_meta` (see [`RequestContext::meta`]); an object result is stamped
    /// with `resultType` and `serverInfo` like every other result.
    pub fn on_request<F>(mut self, method: &str, handler: F) -> Self
    where
        F: Fn(&RequestContext, Value) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    {
        self.methods
            .insert(method.to_owned(), (Arc::new(handler), false));
        self
    }

    /// Advertises tools even before any is registered (for servers that add
    /// them while serving).
    pub fn enable_tools(mut self) -> Self {
        self.registry.has_tools = true;
        self
    }

    /// Advertises resources even before any is registered.
    pub fn enable_resources(mut self) -> Self {
        self.registry.has_resources = true;
        self
    }

    /// Advertises prompts even before any is registered.
    pub fn enable_prompts(mut self) -> Self {
        self.registry.has_prompts = true;
        self
    }

    /// How many items one page of a list holds (default 100).
    pub fn page_size(mut self, n: usize) -> Self {
        self.config.page_size = n.max(1);
        self
    }

    /// Caching hints for `server/discover`, the lists, and resource reads
    /// that set none themselves (default `ttlMs: 0`, `"private"`).
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.config.cache = hints;
        self
    }

    /// Where the server's diagnostic lines go. There are only problems to
    /// note (a response the client should not have sent, a notification
    /// dropped for its length, a failed read, a handler that broke a rule):
    /// a server whose client behaves writes nothing here. Default: stderr,
    /// prefixed with `mcp-stdio: `, through a note thread started on the
    /// first note, so that a stderr the application holds locked, or a
    /// full pipe nobody reads, never stalls the server's reader (notes
    /// beyond 256 waiting are dropped, then counted). The server never
    /// writes anything else to stderr, and never to stdout but for
    /// protocol messages.
    ///
    /// `hook` itself is called where the note happens, often on the thread
    /// that reads the client's input: it must not block (queue the line,
    /// or write it somewhere that cannot fill up).
    pub fn trace(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.trace = Arc::new(hook);
        self
    }

    /// Decides which URIs a `subscriptions/listen` may subscribe to with
    /// `resourceSubscriptions`; the acknowledgment lists only the accepted
    /// ones. By default every requested URI is accepted: a resource may
    /// appear after the subscription opens.
    pub fn resource_subscription_filter(
        mut self,
        accept: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.accept_uri = Some(Arc::new(move |uri| accept(uri).then(UriHold::default)));
        self
    }

    /// [`ServerBuilder::resource_subscription_filter`] whose accepted URI
    /// comes with a hold (see `UriHold`), kept by each subscription that
    /// names it for as long as it does: a proxy's, whose subscription
    /// behind may end once no caller names the URI.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn resource_subscription_hold(
        mut self,
        accept: impl Fn(&str) -> Option<UriHold> + Send + Sync + 'static,
    ) -> Self {
        self.accept_uri = Some(Arc::new(accept));
        self
    }

    /// Advertises and honours no more than what `ceiling` returns, asked
    /// each time: a feature only when it is served and the ceiling has it,
    /// each of its flags (`subscribe`, `listChanged`) as the ceiling says,
    /// so that a listen is acknowledged, and a legacy `resources/subscribe`
    /// or `logging/setLevel` answered, only for what it declares. For a
    /// proxy, whose server can do no more than the one behind it now
    /// (`proxy::serve_as`: a server restarted may declare less).
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn capabilities_at_most(
        mut self,
        ceiling: impl Fn() -> ServerCapabilities + Send + Sync + 'static,
    ) -> Self {
        self.ceiling = Some(Arc::new(ceiling));
        self
    }

    /// The key that seals `requestState` in multi round-trip requests
    /// (HMAC-SHA256). By default each process draws a random key from the
    /// operating system; give several server processes behind one client
    /// the same key so that each accepts the others' states. With a
    /// [`change_feed`](ServerBuilder::change_feed), the key also
    /// authenticates what the replicas send each other
    /// ([`ChangeFeed::authenticate`]). Each use has a key of its own,
    /// derived from this one (HMAC-SHA256 of the use's name).
    pub fn request_state_key(mut self, key: [u8; 32]) -> Self {
        self.state_key = Some(key);
        self
    }

    /// Carries what this server publishes to its other replicas, and
    /// theirs to its subscriptions (see [`ChangeFeed`]): for a server run
    /// as several processes behind a load balancer, where a client's
    /// `subscriptions/listen` is held by one replica and the change may
    /// happen on another. By default changes stay in this process.
    pub fn change_feed(mut self, feed: impl ChangeFeed + 'static) -> Self {
        self.change_feed = Some(Arc::new(feed));
        self
    }

    /// How long a sealed `requestState` stays valid (default 10 minutes).
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// Serves modern (2026-07-28) requests only: `initialize` is refused
    /// with an error naming the supported versions. By default a server is
    /// dual-era and also serves legacy clients (see
    /// [`LEGACY_VERSIONS`](crate::LEGACY_VERSIONS)).
    pub fn modern_only(mut self) -> Self {
        self.config.modern_only = true;
        self
    }

    /// Finishes the server.
    ///
    /// With [`release_memory_when_idle`](ServerBuilder::release_memory_when_idle)
    /// this also sets the process's allocator up so that an idle server
    /// gives back what a burst of large messages freed.
    pub fn build(self) -> Server {
        // Before the server's threads (and those of `stop_on_signals`)
        // start, so that they share the heap `serve` trims when idle.
        if self.config.release_memory {
            crate::server::heap::prepare();
        }
        let info_value = serde_json::to_value(&self.info).unwrap_or(Value::Null);
        let info_meta = crate::server::reply::encode_info_meta(&info_value);
        let connections = Arc::<Connections>::default();
        if let Some(feed) = self.change_feed {
            // Held weakly: the feed does not keep a dropped server's alive.
            let here = Arc::downgrade(&connections);
            let deliver = move |event| {
                if let Some(connections) = here.upgrade() {
                    connections.publish_here(event);
                }
            };
            // Replicas that share a sealing key authenticate their feed
            // with a key derived from it.
            if let Some(key) = &self.state_key {
                feed.authenticate(&derive_key(key, FEED_KEY));
            }
            feed.trace(Arc::clone(&self.trace));
            (connections.replicas).set_feed(feed, Box::new(deliver));
        }
        let store = self
            .task_store
            .unwrap_or_else(|| Arc::new(MemoryTaskStore::default()));
        store.trace(Arc::clone(&self.trace));
        let tasks = Arc::new(Tasks::new(
            store,
            self.task_config,
            Arc::clone(&connections),
            Arc::clone(&self.trace),
        ));
        tasks.hear_replicas();
        tasks.watch();
        let pool = crate::server::pool::Pool::new(self.config.workers, self.config.spin);
        Server {
            inner: Arc::new(Inner {
                info: self.info,
                info_value,
                info_meta,
                instructions: self.instructions,
                config: self.config,
                registry: RwLock::new(self.registry),
                completion: self.completion,
                methods: self.methods,
                trace: self.trace,
                trace_limit: Mutex::default(),
                accept_uri: self.accept_uri,
                ceiling: self.ceiling,
                sealer: crate::server::mrtr::Sealer::new(
                    self.state_key.map(|key| derive_key(&key, SEAL_KEY)),
                    self.state_ttl,
                ),
                connections,
                tasks,
                pool,
                #[cfg(feature = "client")]
                at_stop: Arc::new(AtStop::default()),
            }),
        }
    }
}

/// The default trace: stderr, through a note thread (see `note_queue`).
fn default_trace() -> Arc<Trace> {
    let queue = crate::note_queue::NoteQueue::stderr("mcp-server-notes", "mcp-stdio: ");
    Arc::new(move |line: &str| queue.push(line))
}
