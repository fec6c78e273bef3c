//! [`ServerBuilder`]: registers what a server offers and how it runs.
//! Here the builder, its settings and `build`; what a server offers, each
//! with its handler, in `offers.rs`; how it runs (threads, limits,
//! shutdown) in `limits.rs`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;

#[cfg(feature = "client")]
use crate::server::AtStop;
use crate::server::change_feed::ChangeFeed;
use crate::server::connections::Connections;
use crate::server::handlers::{CompletionFn, MethodFn};
use crate::server::mrtr::{FEED_KEY, SEAL_KEY, derive_key};
use crate::server::registry::Registry;
use crate::server::tasks::{MemoryTaskStore, TaskConfig, TaskStore, Tasks};
use crate::server::{AcceptUri, CacheHints, Ceiling, Config, Inner, Server, Trace, UriHold};
use crate::transport::DEFAULT_MAX_LINE_BYTES;
use crate::types::{Implementation, ServerCapabilities};

mod limits;
mod offers;

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
