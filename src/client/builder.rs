//! Sets up a client: [`ClientBuilder`] holds who the client is, what it
//! declares, which era it speaks, its limits and hooks, and starts a
//! [`Client`] on a spawned server or any byte-stream pair.

use std::fmt;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::link::{Link, ServerInput};
use super::wire::{Wire, WireDirection};
use super::{Client, EraPolicy, input, notes, process, start_server};
use crate::error::Error;
use crate::transport::{DEFAULT_MAX_LINE_BYTES, Transport};
use crate::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, ListRootsResult, LoggingMessageNotificationParams,
    TASKS_EXTENSION,
};

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
    pub(crate) start_timeout: Option<Duration>,
    pub(crate) close_grace: Duration,
    pub(crate) own_process_group: bool,
    pub(crate) max_line_bytes: usize,
    pub(crate) stderr: Arc<process::StderrSink>,
    pub(crate) notes: notes::Notes,
    pub(crate) restart: Option<RestartPolicy>,
    pub(crate) input: input::InputHandlers,
    pub(crate) max_input_rounds: u32,
    pub(crate) max_pages: usize,
    pub(crate) tasks: bool,
    pub(crate) wire: Wire,
    #[cfg(feature = "http")]
    pub(crate) http: super::http::HttpSettings,
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
            start_timeout: None,
            close_grace: Duration::from_secs(2),
            own_process_group: true,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            stderr: Arc::new(|_: &str| {}),
            notes: notes::Notes::default(),
            restart: None,
            input: input::InputHandlers::default(),
            max_input_rounds: 8,
            max_pages: 1000,
            tasks: false,
            wire: None,
            #[cfg(feature = "http")]
            http: super::http::HttpSettings::default(),
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
    /// a legacy server (default 5 s). Where the client can see into a
    /// spawned server's stdin (on Linux), it runs from the moment the
    /// server read the probe: a server still starting (a first `npx` or
    /// `uvx` run installs packages first) is waited for, up to the
    /// [`start_timeout`](Self::start_timeout) or else the request timeout.
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// How long starting may take in all: the era probe, the wait for a
    /// server still starting, and `initialize` (a respawn for a server
    /// that died on the probe included). Past it the start fails with
    /// [`Error::Timeout`]. Default: no bound of its own; each step has
    /// its timeout.
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = Some(timeout);
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

    /// Whether a spawned server runs in a process group of its own
    /// (default yes; on Unix, elsewhere this does nothing), so that
    /// [`Client::close`] ends everything it started, not the spawned
    /// process alone.
    ///
    /// Servers are often started through a wrapper (`npx pkg`, `uvx pkg`,
    /// `sh -c '...'`, `docker run`), and the process the client spawns is
    /// then the server's parent. In a group of its own, the shutdown
    /// (of `close`, of a restart, of a start that fails) is the group's:
    /// after the server's input closes, the group is given the close
    /// grace to exit, then SIGTERM goes to the group, and after the grace
    /// again SIGKILL. Without it only the spawned process is signalled:
    /// the wrapper dies, and a server under it that ignores the end of
    /// its input runs on, orphaned. A process that leaves the group
    /// itself (a daemon's `setsid`) is out of reach either way. A member
    /// that died is waited for till it is reaped: where orphans go to a
    /// process that reaps them late or never (an application that is a
    /// container's pid 1, a slow init), a server that dies with its
    /// wrapper is a zombie for that long, and `close` waits out the
    /// grace after SIGTERM too. The
    /// Python SDK's `stdio_client` starts its servers in a session of
    /// their own for the same reason.
    ///
    /// What a group of its own costs: the terminal's Ctrl-C goes to the
    /// foreground process group, which the server is not in, so it
    /// reaches the application alone, and the server ends when the
    /// application ends it (`close`, or the end of the server's input
    /// once the application exits: an application that dies of Ctrl-C
    /// without closing leaves a server that ignores its input's end
    /// running). That is what an application that handles Ctrl-C wants
    /// (the server is not killed under a request it is finishing, and is
    /// closed with what it started); one that does not, and wants the
    /// terminal's signals to reach the server, turns this off. A server
    /// that opens the terminal (`/dev/tty`) to read from it is stopped,
    /// as a background job is; its standard streams are pipes. Turned
    /// on, it replaces a process group set on the command
    /// (`std::os::unix::process::CommandExt::process_group`), and a
    /// command whose `pre_exec` hook calls `setsid` (a session of its
    /// own, as Python's `start_new_session`) fails to start with EPERM:
    /// std makes the process a group leader before it runs the hook, and
    /// a group leader may not start a session (the error says to turn
    /// this off). Turned off, the command's
    /// own setting holds and `close` signals the spawned process alone.
    pub fn own_process_group(mut self, own: bool) -> Self {
        self.own_process_group = own;
        self
    }

    /// The longest line accepted from the server (default 16 MiB,
    /// [`crate::DEFAULT_MAX_LINE_BYTES`]); a longer
    /// one is skipped without being held in memory, and if it answers a
    /// request, that request fails at once with [`Error::MessageTooLarge`].
    ///
    /// It also bounds what waits for the application, in bytes of JSON:
    /// the events of one [`Subscription`](crate::Subscription) not read yet
    /// (past it the subscription ends
    /// [`SubscriptionEnd::Overflowed`](crate::SubscriptionEnd::Overflowed),
    /// cancelled at the server), and the progress and log messages of one
    /// request its caller has not taken yet (past it they are dropped, with
    /// one note).
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
    ///
    /// A line longer than 64 KiB is cut: the sink gets its first 64 KiB
    /// and `… [cut: N bytes in all]`, and the rest is read and dropped, so
    /// a server that writes without newlines costs the client no more
    /// memory than that. The sink runs on a thread of its own that reads
    /// the server's stderr: while it blocks, the server blocks as soon as
    /// the pipe is full. A panic in it is caught and noted (see
    /// [`trace`](ClientBuilder::trace)), and the next line is read.
    pub fn stderr(mut self, sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.stderr = Arc::new(sink);
        self
    }

    /// Where the client's own notes go: problems (lines from the server it
    /// could not read, protocol violations, a dead or restarted server, a
    /// hook of the application's that panicked: "the on_log hook panicked
    /// (...): caught") and
    /// routine information (which era the probe settled on, a log message
    /// no callback took). Both kinds go to `hook`.
    ///
    /// By default problems go to stderr and information nowhere: when
    /// everything works, the client prints nothing. `.trace(|_| {})`
    /// silences it completely.
    ///
    /// A note quotes what the server sent (a method name, its last stderr
    /// lines, a log message's data) as it came, control characters and
    /// all. The default writes them escaped (`\u{1b}`), tabs kept, since
    /// stderr is often a terminal, which would obey a server's escape
    /// sequences; `hook` gets the note as it is, and one that writes to a
    /// terminal should escape them too.
    ///
    /// The hook runs on a note thread of its own, never on the thread that
    /// reads the server's output: while it is slow or blocked (say it
    /// writes to a stderr the application holds locked, or to a full pipe
    /// nobody reads), replies are still routed, and notes beyond 256
    /// waiting are dropped and then counted in one note. A note is cut to
    /// its first 4 KiB (`… [cut: N bytes in all]`): a server's log message
    /// no callback took is noted with its data. A panic in the hook costs
    /// the note it panicked on, counted in a later note; the next note is
    /// handed to it as usual.
    /// [`Client::close`] waits up to 250 ms for the notes still queued.
    pub fn trace(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notes.set_trace(Arc::new(hook));
        self
    }

    /// Where the client's problems go, as with [`trace`](Self::trace), but
    /// the routine information goes nowhere, as by default: for an
    /// application that shows or keeps problems its own way and stays
    /// quiet while everything works.
    ///
    /// ```no_run
    /// let client = mcp_stdio::Client::builder()
    ///     .trace_problems(|note| eprintln!("my-app: {note}"))
    ///     .spawn(std::process::Command::new("my-mcp-server"))?;
    /// # Ok::<(), mcp_stdio::Error>(())
    /// ```
    pub fn trace_problems(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notes.set_problems(Arc::new(hook));
        self
    }

    /// Sees every line on the wire: each line the client writes to the
    /// server ([`WireDirection::Sent`]) and each line it reads from it
    /// ([`WireDirection::Received`]), without the newline, byte for byte.
    /// For watching the protocol (the era probe, `_meta`, acknowledgments,
    /// cancellation) or recording a transcript.
    ///
    /// The hook runs just before a line is written (on the connection's
    /// writer thread, or on the caller's when it writes its own line), and
    /// on its reader thread just after a line is read, so
    /// a request always shows before its reply. Keep it short: on a read
    /// it holds up every reply, and on a caller's write it holds the
    /// server's input, so every other thread's line waits behind it (queued:
    /// no other caller blocks, and [`Client::close`] does not wait for
    /// it). A panic in it is caught and noted (see
    /// [`trace`](ClientBuilder::trace)); the line is still written or
    /// routed. A line longer than
    /// [`max_line_bytes`](ClientBuilder::max_line_bytes) is never held in
    /// memory and is not shown. Default: none, at the cost of one check
    /// per line.
    ///
    /// ```no_run
    /// use mcp_stdio::{Client, WireDirection};
    ///
    /// let client = Client::builder()
    ///     .wire(|direction, line| {
    ///         let arrow = if direction == WireDirection::Sent { "→" } else { "←" };
    ///         eprintln!("{arrow} {}", String::from_utf8_lossy(line));
    ///     })
    ///     .spawn(std::process::Command::new("my-mcp-server"))?;
    /// # Ok::<(), mcp_stdio::Error>(())
    /// ```
    pub fn wire(mut self, hook: impl Fn(WireDirection, &[u8]) + Send + Sync + 'static) -> Self {
        self.wire = Some(Arc::new(hook));
        self
    }

    /// Takes the server's log messages (`notifications/message`) that
    /// belong to no request: every one on a legacy server, where logging is
    /// set for the whole session ([`Client::set_log_level`]) and the wire
    /// ties no message to a request; on a modern server, a message that
    /// came while no request, or more than one, asked for logs (spec
    /// 2026-07-28 server/utilities/logging: log messages are request-scoped,
    /// and stdio gives them no request id). A request's own callback
    /// ([`RequestOptions::log`](super::RequestOptions::log)) gets the rest.
    ///
    /// Runs on the client's reader thread: keep it short, as every reply
    /// waits for it. A panic in it is caught and noted (see
    /// [`trace`](ClientBuilder::trace)), and the reader goes on. Default:
    /// the messages go to the trace as information (nowhere, unless a
    /// trace is set).
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
    /// multi round-trip requests and of tasks; declares the `elicitation`
    /// capability.
    ///
    /// The input handlers (this one, [`on_sampling`](ClientBuilder::on_sampling),
    /// [`on_roots`](ClientBuilder::on_roots)) run on the caller's thread
    /// for its own request's input, and on a thread of the client's for a
    /// legacy server's own request, where a panic is caught and answered
    /// with `-32603` (`handler panicked: ...`), as a server answers its
    /// handler's panic. A legacy server's requests are answered 32 at a
    /// time at most; one past that gets `-32603` at once ("the client is
    /// answering 32 requests of the server already"), and one the server
    /// cancels while its handler runs gets no answer.
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

    /// Declares the Tasks extension (`io.modelcontextprotocol/tasks`) on
    /// every modern request (default off): the server may then answer a
    /// `tools/call` with a task instead of the result.
    ///
    /// [`Client::call_tool`] follows such a task to its end by itself
    /// (polling `tasks/get`, answering input with the handlers set here), so
    /// the caller sees the tool's result as if it had come at once;
    /// [`Client::start_tool_call`] and [`Client::task`] hand out the task
    /// instead ([`TaskHandle`](crate::TaskHandle)). The declaration is
    /// `"extensions": {"io.modelcontextprotocol/tasks": {}}` in the
    /// capabilities, next to whatever else they hold. Off, a server that
    /// still answers with a task gets an error.
    ///
    /// ```no_run
    /// let client = mcp_stdio::Client::builder()
    ///     .tasks(true)
    ///     .spawn(std::process::Command::new("my-mcp-server"))?;
    /// # Ok::<(), mcp_stdio::Error>(())
    /// ```
    pub fn tasks(mut self, on: bool) -> Self {
        self.tasks = on;
        self
    }

    /// The declared capabilities: the configured ones, plus those the
    /// input handlers stand for, plus the Tasks extension when asked for.
    pub(crate) fn settle_capabilities(&mut self) {
        for (name, value) in self.input.capabilities() {
            self.capabilities.entry(name).or_insert(value);
        }
        if self.tasks {
            let extensions = self
                .capabilities
                .entry("extensions")
                .or_insert_with(|| Value::Object(Map::new()));
            if !extensions.is_object() {
                *extensions = Value::Object(Map::new());
            }
            if let Value::Object(extensions) = extensions {
                extensions
                    .entry(TASKS_EXTENSION)
                    .or_insert_with(|| Value::Object(Map::new()));
            }
        }
    }

    /// Spawns `command` as the server, with piped stdin and stdout, and
    /// connects to it.
    pub fn spawn(mut self, mut command: Command) -> Result<Client, Error> {
        self.settle_capabilities();
        let (link, spawned) = start_server(&self, &mut command)?;
        Client::start(self, link, Some(spawned), Some(command))
    }

    /// Connects over any byte-stream pair (a Unix socket, TCP, an in-memory
    /// transport).
    pub fn connect(mut self, transport: Transport) -> Result<Client, Error> {
        self.settle_capabilities();
        let (reader, writer) = transport.into_parts();
        let link = Link::start(
            reader,
            ServerInput::stream(writer),
            self.max_line_bytes,
            self.notes.clone(),
            self.wire.clone(),
        )?;
        Client::start(self, link, None, None)
    }
}
