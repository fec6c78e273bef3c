//! The blocking client: spawns a stdio server (or takes any byte-stream
//! pair), works out which era of the protocol it speaks, and sends it
//! requests from any number of threads.
//!
//! Everything blocks the calling thread; nothing needs a runtime. A
//! [`Client`] is `Send + Sync`: share it by reference or in an `Arc`.

mod call;
mod era;
mod input;
mod legacy_listen;
mod link;
mod notes;
mod pages;
mod process;
mod requests;
mod restart;
mod server_requests;
mod subscription;

use std::collections::HashMap;
use std::fmt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crossbeam_channel::Sender;
use serde_json::{Map, Value};

pub use call::{PendingCall, RequestOptions};
pub use era::{Era, EraPolicy};
pub use pages::Pages;
pub use subscription::{Subscription, SubscriptionEnd, SubscriptionEvent};

use crate::error::Error;
use crate::jsonrpc::RequestId;
use crate::transport::{DEFAULT_MAX_LINE_BYTES, Transport};
use crate::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, DiscoverResult,
    ElicitRequestParams, ElicitResult, Implementation, ListRootsResult,
    LoggingMessageNotificationParams, ServerCapabilities, SubscriptionFilter,
};
use link::{Link, SubscriptionDelivery};

/// When the server process dies: how often to start it again, and how long
/// to wait before each attempt (multiplied by the attempt's number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPolicy {
    /// How many times to restart over the client's life.
    pub max_restarts: u32,
    /// The pause before the first restart; the n-th waits n times as long.
    pub backoff: Duration,
}

/// Sets up a [`Client`]: who it is, what it declares, which era it speaks,
/// its timeouts, where the server's stderr goes, and the restart policy.
pub struct ClientBuilder {
    pub(crate) info: Implementation,
    pub(crate) capabilities: Map<String, Value>,
    pub(crate) era: EraPolicy,
    pub(crate) probe_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) close_grace: Duration,
    pub(crate) max_line_bytes: usize,
    pub(crate) stderr: Arc<process::StderrSink>,
    pub(crate) notes: notes::Notes,
    pub(crate) restart: Option<RestartPolicy>,
    pub(crate) input: input::InputHandlers,
    pub(crate) max_input_rounds: u32,
    pub(crate) max_pages: usize,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            info: Implementation::new("mcp-stdio", env!("CARGO_PKG_VERSION")),
            capabilities: Map::new(),
            era: EraPolicy::Auto,
            probe_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(60),
            close_grace: Duration::from_secs(2),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            stderr: Arc::new(|_: &str| {}),
            notes: notes::Notes::default(),
            restart: None,
            input: input::InputHandlers::default(),
            max_input_rounds: 8,
            max_pages: 1000,
        }
    }
}

impl ClientBuilder {
    /// The client's name and version, sent as `clientInfo`.
    pub fn client_info(mut self, name: &str, version: &str) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// The capabilities the client declares on every request
    /// (`io.modelcontextprotocol/clientCapabilities`); default none.
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = match serde_json::to_value(capabilities) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        self
    }

    /// Which era to speak: probe (the default), modern only, or legacy only.
    pub fn era(mut self, era: EraPolicy) -> Self {
        self.era = era;
        self
    }

    /// How long the `server/discover` probe waits before taking silence for
    /// a legacy server (default 5 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// The default timeout of every request (default 60 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long [`Client::close`] waits after closing the server's input,
    /// and again after SIGTERM, before it escalates (default 2 s).
    pub fn close_grace(mut self, grace: Duration) -> Self {
        self.close_grace = grace;
        self
    }

    /// The longest line accepted from the server (default 16 MiB,
    /// [`DEFAULT_MAX_LINE_BYTES`](crate::DEFAULT_MAX_LINE_BYTES)); a longer
    /// one is skipped without being held in memory, and if it answers a
    /// request, that request fails at once with [`Error::MessageTooLarge`].
    pub fn max_line_bytes(mut self, n: usize) -> Self {
        self.max_line_bytes = n.max(1);
        self
    }

    /// Where the server's stderr lines go, one call per line.
    ///
    /// By default they go nowhere: many servers write a banner or their
    /// own logs there, and an application that embeds the client must not
    /// see them on its stderr while everything works (the spec: a client
    /// MAY capture, forward or ignore the server's stderr). The client
    /// keeps the last ten lines either way, and reports them when the
    /// server dies: in [`Error::ServerExited`] during start-up, and in a
    /// problem note for the trace after it. To echo them as they come:
    /// `.stderr(|line| eprintln!("[server] {line}"))`.
    pub fn stderr(mut self, sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.stderr = Arc::new(sink);
        self
    }

    /// Where the client's own notes go: problems (lines from the server it
    /// could not read, protocol violations, a dead or restarted server) and
    /// routine information (which era the probe settled on, a log message
    /// no callback took). Both kinds go to `hook`.
    ///
    /// By default problems go to stderr and information nowhere: when
    /// everything works, the client prints nothing. `.trace(|_| {})`
    /// silences it completely.
    pub fn trace(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notes.set_trace(Arc::new(hook));
        self
    }

    /// Takes the server's log messages (`notifications/message`) that
    /// belong to no request: every one on a legacy server, where logging is
    /// set for the whole session ([`Client::set_log_level`]) and the wire
    /// ties no message to a request; on a modern server, a message that
    /// came while no request, or more than one, asked for logs (spec
    /// 2026-07-28 server/utilities/logging: log messages are request-scoped,
    /// and stdio gives them no request id). A request's own callback
    /// ([`RequestOptions::log`]) gets the rest.
    ///
    /// Runs on the client's reader thread: keep it short. Default: the
    /// messages go to the trace as information (nowhere, unless a trace
    /// is set).
    pub fn on_log(
        mut self,
        callback: impl Fn(&LoggingMessageNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.notes.set_log(Arc::new(callback));
        self
    }

    /// Restarts the server when it dies unexpectedly, re-probes its era and
    /// re-opens every live subscription (spawned servers only).
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.restart = Some(policy);
        self
    }

    /// Answers `elicitation/create` input requests (form and URL mode) of
    /// multi round-trip requests; declares the `elicitation` capability.
    pub fn on_elicitation(
        mut self,
        handler: impl Fn(&ElicitRequestParams) -> Result<ElicitResult, Error> + Send + Sync + 'static,
    ) -> Self {
        self.input.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answers `sampling/createMessage` input requests; declares the
    /// `sampling` capability.
    pub fn on_sampling(
        mut self,
        handler: impl Fn(&CreateMessageRequestParams) -> Result<CreateMessageResult, Error>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.input.sampling = Some(Arc::new(handler));
        self
    }

    /// Answers `roots/list` input requests; declares the `roots` capability.
    pub fn on_roots(
        mut self,
        handler: impl Fn() -> Result<ListRootsResult, Error> + Send + Sync + 'static,
    ) -> Self {
        self.input.roots = Some(Arc::new(handler));
        self
    }

    /// How many rounds a multi round-trip request may take before the
    /// client gives up with an error (default 8).
    pub fn max_input_rounds(mut self, rounds: u32) -> Self {
        self.max_input_rounds = rounds.max(1);
        self
    }

    /// How many pages the list iterators ([`Client::tools`] and its kin)
    /// fetch before they give up with an error (default 1,000): a server
    /// that hands out a new cursor on every page cannot keep a caller
    /// going forever. A cursor the server returned before ends the
    /// iteration with an error at once.
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.max_pages = pages.max(1);
        self
    }

    /// The declared capabilities: the configured ones, plus those the
    /// input handlers stand for.
    fn settle_capabilities(&mut self) {
        for (name, value) in self.input.capabilities() {
            self.capabilities.entry(name).or_insert(value);
        }
    }

    /// Spawns `command` as the server, with piped stdin and stdout, and
    /// connects to it.
    pub fn spawn(mut self, mut command: Command) -> Result<Client, Error> {
        self.settle_capabilities();
        let spawned = process::spawn(&mut command, Arc::clone(&self.stderr))?;
        let link = Link::start(
            Box::new(std::io::BufReader::new(spawned.stdout)),
            Box::new(spawned.stdin),
            self.max_line_bytes,
            self.notes.clone(),
        )?;
        let child = Spawned {
            child: spawned.child,
            stderr_tail: spawned.stderr_tail,
        };
        Client::start(self, link, Some(child), Some(command))
    }

    /// Connects over any byte-stream pair (a Unix socket, TCP, an in-memory
    /// transport).
    pub fn connect(mut self, transport: Transport) -> Result<Client, Error> {
        self.settle_capabilities();
        let (reader, writer) = transport.into_parts();
        let link = Link::start(reader, writer, self.max_line_bytes, self.notes.clone())?;
        Client::start(self, link, None, None)
    }
}

/// A server process the client spawned, until it is connected.
struct Spawned {
    child: Child,
    stderr_tail: process::StderrTail,
}

/// What the client knows about the server it talks to.
#[derive(Debug, Clone)]
pub(crate) struct ServerFacts {
    pub era: Era,
    pub capabilities: ServerCapabilities,
    pub info: Option<Implementation>,
    pub instructions: Option<String>,
    pub discover: Option<DiscoverResult>,
}

/// A subscription the client keeps alive across restarts.
pub(crate) struct LiveSubscription {
    pub id: Arc<Mutex<RequestId>>,
    pub filter: SubscriptionFilter,
    pub tx: Sender<SubscriptionDelivery>,
}

pub(crate) struct ClientInner {
    pub options: ClientBuilder,
    /// The current connection; subscriptions share the cell so that they
    /// cancel on whichever connection is current.
    pub link: Arc<Mutex<Arc<Link>>>,
    pub facts: Mutex<ServerFacts>,
    pub child: Mutex<Option<Child>>,
    /// The last lines of the current server's stderr (spawned servers).
    pub stderr_tail: Mutex<Option<process::StderrTail>>,
    pub command: Option<Mutex<Command>>,
    pub subscriptions: Mutex<HashMap<u64, LiveSubscription>>,
    pub next_subscription: AtomicU64,
    pub restarts: Mutex<u32>,
    pub closing: AtomicBool,
}

/// A connection to one MCP server.
///
/// ```no_run
/// use mcp_stdio::Client;
///
/// let client = Client::spawn(std::process::Command::new("my-mcp-server"))?;
/// for tool in client.tools() {
///     println!("{}", tool?.name);
/// }
/// let result = client.call_tool("echo", serde_json::json!({ "text": "hi" }))?;
/// println!("{result:?}");
/// client.close()?;
/// # Ok::<(), mcp_stdio::Error>(())
/// ```
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
    closed: bool,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("era", &self.era())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with default settings.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Spawns `command` as the server with default settings.
    pub fn spawn(command: Command) -> Result<Client, Error> {
        ClientBuilder::default().spawn(command)
    }

    /// Connects over a byte-stream pair with default settings.
    pub fn connect(transport: Transport) -> Result<Client, Error> {
        ClientBuilder::default().connect(transport)
    }

    fn start(
        options: ClientBuilder,
        link: Arc<Link>,
        spawned: Option<Spawned>,
        command: Option<Command>,
    ) -> Result<Client, Error> {
        let facts = match era::establish(&options, &link) {
            Ok(facts) => facts,
            Err(e) => {
                link.close_input();
                let Some(Spawned {
                    mut child,
                    stderr_tail,
                }) = spawned
                else {
                    return Err(e);
                };
                let exited = matches!(child.try_wait(), Ok(Some(_)));
                let status = process::shut_down(&mut child, options.close_grace).ok();
                // The connection closed under the probe: the server died
                // (or closed its output) while starting. Its stderr says
                // why more often than anything else.
                if exited || matches!(e, Error::Disconnected) {
                    return Err(Error::ServerExited {
                        status,
                        stderr: stderr_tail.lines(Duration::from_millis(500)),
                    });
                }
                return Err(e);
            }
        };
        let (child, stderr_tail) = match spawned {
            Some(s) => (Some(s.child), Some(s.stderr_tail)),
            None => (None, None),
        };
        let inner = Arc::new(ClientInner {
            link: Arc::new(Mutex::new(Arc::clone(&link))),
            facts: Mutex::new(facts),
            child: Mutex::new(child),
            stderr_tail: Mutex::new(stderr_tail),
            command: command.map(Mutex::new),
            subscriptions: Mutex::new(HashMap::new()),
            next_subscription: AtomicU64::new(0),
            restarts: Mutex::new(0),
            closing: AtomicBool::new(false),
            options,
        });
        restart::watch(&inner, &link);
        Ok(Client {
            inner,
            closed: false,
        })
    }

    /// The era and version the client speaks with this server.
    pub fn era(&self) -> Era {
        lock(&self.inner.facts).era.clone()
    }

    /// The server's capabilities (from `server/discover`, or from
    /// `initialize` for a legacy server).
    pub fn server_capabilities(&self) -> ServerCapabilities {
        lock(&self.inner.facts).capabilities.clone()
    }

    /// The server's name and version, as it reported them.
    pub fn server_info(&self) -> Option<Implementation> {
        lock(&self.inner.facts).info.clone()
    }

    /// The server's instructions for models, if it gave any.
    pub fn instructions(&self) -> Option<String> {
        lock(&self.inner.facts).instructions.clone()
    }

    /// The `server/discover` result of the probe (modern servers only).
    pub fn discover_result(&self) -> Option<DiscoverResult> {
        lock(&self.inner.facts).discover.clone()
    }

    /// Shuts the server down the way the spec says: closes its input, waits
    /// for it to exit, then SIGTERM, then SIGKILL (each step waits the
    /// close grace). Returns the exit status of a spawned server.
    pub fn close(mut self) -> Result<Option<ExitStatus>, Error> {
        self.closed = true;
        self.inner.close()
    }

    pub(crate) fn link(&self) -> Arc<Link> {
        Arc::clone(&lock(&self.inner.link))
    }
}

impl ClientInner {
    fn close(&self) -> Result<Option<ExitStatus>, Error> {
        self.closing.store(true, Ordering::Release);
        let link = Arc::clone(&lock(&self.link));
        link.restartable.store(false, Ordering::Release);
        link.close_input();
        let child = lock(&self.child).take();
        match child {
            Some(mut child) => Ok(Some(process::shut_down(
                &mut child,
                self.options.close_grace,
            )?)),
            None => Ok(None),
        }
    }
}

impl Drop for Client {
    /// Closes the connection as [`Client::close`] does; bounded by twice
    /// the close grace.
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.inner.close();
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        fn sent<T: Send>() {}
        shared::<super::Client>();
        sent::<super::Subscription>();
        sent::<super::PendingCall>();
    }
}
