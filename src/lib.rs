//! A synchronous implementation of the [Model Context Protocol] (MCP),
//! revision 2026-07-28, over the stdio transport: plain OS threads and
//! channels, no async runtime.
//!
//! It is for applications that are synchronous and do not want a runtime
//! (command-line tools, editor plugins, game engines, controllers), for
//! small static binaries, and for learning the protocol from code that reads
//! top to bottom (ARCHITECTURE.md opens with the reading path of the stdio
//! server, from the reader to the reply).
//!
//! # A server
//!
//! ```
//! # #[cfg(feature = "schemars")] fn main() -> Result<(), mcp_stdio::Error> {
//! use mcp_stdio::types::{CallToolResult, Tool};
//! use mcp_stdio::{Server, Transport};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo {
//!     /// The text to send back.
//!     text: String,
//! }
//!
//! let echo = Tool::new("echo", "Returns its text.");
//! let server = Server::builder("echo", "1.0.0")
//!     .inline_tool(echo, |_ctx, args: Echo| Ok(CallToolResult::text(args.text)))
//!     .build();
//! # let (client, transport) = Transport::memory();
//! # drop(client);
//! // In a real server: `server.serve(Transport::stdio())?`.
//! server.serve(transport)?;
//! # Ok(()) }
//! # #[cfg(not(feature = "schemars"))] fn main() {}
//! ```
//!
//! Handlers are closures that take a [`RequestContext`] and their
//! parameters. Tool arguments arrive as the handler's own
//! `serde::Deserialize` type, whose `schemars::JsonSchema` derive gives the
//! tool its `inputSchema` ([`ToolArguments`], feature `schemars`, on by
//! default; `ServerBuilder::structured_tool` adds a typed output,
//! `ServerBuilder::typed_prompt` typed prompt arguments). Arguments that do
//! not fit are answered before the handler runs with a tool result that
//! tells the model which field is wrong and what it must be (`isError`);
//! an unknown tool is `-32602`. A tool that ran and
//! failed returns a result with `is_error` set
//! ([`types::CallToolResult::error_text`]), which the model sees; `Err(ErrorObject)` is for protocol errors. Every request's `_meta`
//! is validated first (spec: every request carries its protocol version and
//! client capabilities), and every result is stamped with `resultType` and
//! the server's identity.
//!
//! # A client
//!
//! [`Client::spawn`] starts a server process with piped stdin and stdout;
//! [`Client::connect`] takes any byte-stream pair. Either way the client
//! first probes with `server/discover` and falls back to the `initialize`
//! handshake for a legacy server (spec: stdio transport, "Backward
//! Compatibility"); every request is then stamped with the protocol
//! `_meta`. A [`Client`] is `Send + Sync` and every call blocks the calling
//! thread: [`RequestOptions`] sets a request's timeout and its progress and
//! log callbacks, [`Client::start_request`] returns a [`PendingCall`] to
//! wait for or cancel, and [`Client::listen`] opens a [`Subscription`].
//! An answer the client cannot use (malformed, longer than the line limit,
//! an unknown `resultType`) fails its request at once with an [`Error`]
//! that says what was wrong, never by running out the timeout. The client
//! writes to stderr only about problems; [`ClientBuilder::trace`] and
//! [`ClientBuilder::on_log`] take its notes and the server's session-wide
//! log messages, and [`ClientBuilder::wire`] sees every line in both
//! directions. [`Client::request_outcome`] sends any request the way the
//! typed methods do (answering input requests) and hands back its result
//! exactly as the server sent it.
//!
//! The `mcp-stdio` binary of this package (`cargo install --path .` in a
//! checkout) is a command line built on this client: `mcp-stdio tools --
//! my-server`, `mcp-stdio call echo text=hi --wire -- my-server` (README,
//! "The command line").
//!
//! ```
//! # #[cfg(all(feature = "server", feature = "client", feature = "schemars"))] fn main() -> Result<(), mcp_stdio::Error> {
//! use mcp_stdio::types::{CallToolResult, Tool};
//! use mcp_stdio::{Client, Server, Transport};
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo {
//!     text: String,
//! }
//!
//! let server = Server::builder("echo", "1.0.0")
//!     .inline_tool(Tool::new("echo", "Returns its text."), |_ctx, args: Echo| {
//!         Ok(CallToolResult::text(args.text))
//!     })
//!     .build();
//! let (client_end, server_end) = Transport::memory();
//! let serving = std::thread::spawn(move || server.serve(server_end));
//!
//! // For a server process: `Client::spawn(Command::new("my-mcp-server"))?`.
//! let client = Client::connect(client_end)?; // probes the era
//! assert_eq!(client.server_info().unwrap().name, "echo");
//! assert_eq!(client.call("echo", json!({ "text": "hi" }))?.text_content(), "hi");
//! client.close()?; // closes the server's input: `serve` returns
//! serving.join().unwrap()?;
//! # Ok(()) }
//! # #[cfg(not(all(feature = "server", feature = "client", feature = "schemars")))] fn main() {}
//! ```
//!
//! `examples/client.rs` prints what any stdio server offers, modern or
//! legacy; `examples/demo.rs` drives every part of the client against a
//! real server process.
//!
//! # Publishing changes
//!
//! A client opens a long-lived `subscriptions/listen` request naming what
//! it wants to hear about; the server acknowledges it first, then tags
//! every notification with the listen request's id. The application
//! publishes through a [`Notifier`] from any thread; adding or removing a
//! tool, resource or prompt through the [`Server`] announces the list
//! change by itself. When the server stops (end of input, a stop, a
//! signal) every listen gets its final result.
//!
//! ```
//! # #[cfg(feature = "server")] fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::io::{BufRead, Write};
//! use mcp_stdio::types::{ReadResourceResult, Resource, ResourceContents};
//! use mcp_stdio::{Server, Transport};
//!
//! let server = Server::builder("clock", "1.0.0")
//!     .resource(Resource::new("clock://now", "now"), |_ctx, req| {
//!         Ok(ReadResourceResult::new(vec![ResourceContents::text(&req.uri, "12:00")]))
//!     })
//!     .build();
//! let notifier = server.notifier();
//! let (client, transport) = Transport::memory();
//! let serving = std::thread::spawn(move || server.serve(transport));
//! let (mut from_server, mut to_server) = client.into_parts();
//! writeln!(to_server, r#"{{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}},"notifications":{{"resourceSubscriptions":["clock://now"]}}}}}}"#)?;
//! let mut ack = String::new();
//! from_server.read_line(&mut ack)?;
//! assert!(ack.contains("notifications/subscriptions/acknowledged"));
//!
//! notifier.resource_updated("clock://now"); // from any thread
//! let mut update = String::new();
//! from_server.read_line(&mut update)?;
//! assert_eq!(
//!     update.trim_end(),
//!     r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"uri":"clock://now"}}"#
//! );
//! drop(to_server); // end of input: the listen gets its final result
//! let mut last = String::new();
//! from_server.read_line(&mut last)?;
//! assert!(last.starts_with(r#"{"jsonrpc":"2.0","id":1,"result":{"#));
//! serving.join().unwrap()?;
//! # Ok(()) }
//! # #[cfg(not(feature = "server"))] fn main() {}
//! ```
//!
//! `examples/subscriptions.rs` is a server that publishes a ticking clock
//! and the changes of a watched file.
//!
//! # Asking the client for input
//!
//! On stdio a server never sends requests. A handler that needs the user,
//! the client's model or its roots returns [`Outcome::InputRequired`] with
//! input requests; the client answers them and retries the request, and
//! the handler reads the answers from its [`RequestContext`]. Whatever the
//! handler puts in `request_state` is private: the server seals it
//! (HMAC-SHA256, with an expiry and a digest of the request) and hands it
//! back, verified, on the retry ([`RequestContext::request_state`]). The
//! server only asks for what the request's client capabilities allow
//! (`-32021` otherwise). The client runs its handlers
//! ([`ClientBuilder::on_elicitation`] and friends) and retries by itself.
//!
//! ```
//! # #[cfg(all(feature = "server", feature = "client"))] fn main() -> Result<(), mcp_stdio::Error> {
//! use mcp_stdio::types::*;
//! use mcp_stdio::{Client, Outcome, Server, Transport};
//!
//! let server = Server::builder("greeter", "1.0.0")
//!     .tool(Tool::new("greet", "Greets the user."), |ctx, _: serde_json::Value| {
//!         match ctx.elicitation("who") {
//!             Some(answer) => {
//!                 let name = answer.content.and_then(|c| c.get("name").cloned()).unwrap_or_default();
//!                 Ok(Outcome::Complete(CallToolResult::text(format!("Hello, {}!", name.as_str().unwrap_or("?")))))
//!             }
//!             None => {
//!                 let schema = ElicitRequestedSchema::default().property("name", StringSchema::default(), true);
//!                 let ask = ElicitRequestParams::Form(ElicitRequestFormParams::new("Your name?", schema));
//!                 let requests = [("who".to_owned(), InputRequest::Elicit(ask))].into();
//!                 Ok(Outcome::InputRequired(InputRequiredResult::new(requests)))
//!             }
//!         }
//!     })
//!     .build();
//! let (client_end, server_end) = Transport::memory();
//! let serving = std::thread::spawn(move || server.serve(server_end));
//! let client = Client::builder()
//!     .on_elicitation(|_request| {
//!         let mut answer = serde_json::Map::new();
//!         answer.insert("name".into(), "Ada".into());
//!         Ok(ElicitResult::accept(answer))
//!     })
//!     .connect(client_end)?;
//! // The client answers the elicitation and retries by itself.
//! let result = client.call("greet", serde_json::json!({}))?;
//! assert_eq!(result.text_content(), "Hello, Ada!");
//! client.close()?;
//! serving.join().unwrap()?;
//! # Ok(()) }
//! # #[cfg(not(all(feature = "server", feature = "client")))] fn main() {}
//! ```
//!
//! # Long-running tools (the Tasks extension)
//!
//! A tool registered with [`ServerBuilder::task_tool`] answers a call that
//! declares the extension `io.modelcontextprotocol/tasks` with a task
//! handle at once, and runs its handler (the same closure as for a plain
//! tool) on a thread of its own; the client polls `tasks/get`, answers the
//! task's input requests with `tasks/update` and may `tasks/cancel` it.
//! [`TaskMode`] says what a call without the extension gets. A client
//! built with [`ClientBuilder::tasks`] follows a task from
//! [`Client::call_tool`] by itself, answering input with its handlers, and
//! returns the result as if it had come at once; [`Client::start_tool_call`]
//! and [`Client::task`] hand out a [`TaskHandle`] instead, to wait for,
//! cancel, or pick up again by id after a restart. Tasks live in a
//! [`TaskStore`] ([`MemoryTaskStore`] unless the application brings its
//! own).
//!
//! ```
//! # #[cfg(all(feature = "server", feature = "client"))] fn main() -> Result<(), mcp_stdio::Error> {
//! use std::time::Duration;
//! use mcp_stdio::types::{CallToolResult, Tool};
//! use mcp_stdio::{Client, Server, TaskMode, Transport};
//!
//! let server = Server::builder("builds", "1.0.0")
//!     .task_tool(Tool::new("build", "Builds the project."), TaskMode::Optional, |ctx, _: serde_json::Value| {
//!         for step in 1..=3 {
//!             if ctx.wait_cancelled(Duration::from_millis(20)) {
//!                 return Ok(CallToolResult::error_text("cancelled"));
//!             }
//!             ctx.progress(step as f64, Some(3.0), Some("compiling")); // the task's statusMessage
//!         }
//!         Ok(CallToolResult::text("built"))
//!     })
//!     .build();
//! let (client_end, server_end) = Transport::memory();
//! let serving = std::thread::spawn(move || server.serve(server_end));
//! let client = Client::builder().tasks(true).connect(client_end)?;
//! // A task on the wire; to the caller, the tool's result.
//! let result = client.call("build", serde_json::json!({}))?;
//! assert_eq!(result.text_content(), "built");
//! client.close()?;
//! serving.join().unwrap()?;
//! # Ok(()) }
//! # #[cfg(not(all(feature = "server", feature = "client")))] fn main() {}
//! ```
//!
//! # Threading model
//!
//! ```text
//! stdin ──► mcp-reader: read a line, act on it, read the next ──► connection ──► stdout
//!              │ inline handlers run here                      state (one lock)   ▲
//!              └── pooled calls ──► mcp-worker: pooled handlers ── reply ────────┤
//!                                   any thread: Notifier ── publish ────────────┘
//!   mcp-task-N: one thread per running task (Tasks extension); it writes
//!   nothing, only the task's store
//! ```
//!
//! - Only the reader touches the input, and it acts on each line before it
//!   reads the next: lines take effect in the order they came.
//! - One connection state behind one lock holds the requests in flight
//!   (the cancellation map), the subscription table and the output (one
//!   thread at a time sends it without the lock, together with what the
//!   others wrote meanwhile; the reader sends what it holds before it
//!   reads, so nothing decided waits behind a blocking read). A legacy
//!   client's lines go through a front end first, which owns its session. A reply is written
//!   only for a request still in flight, which is taken out in the same
//!   step: a cancelled request never gets a reply and no request gets two.
//!   A listen's ack is written in the step that opens the subscription, so
//!   it is always its first message. Lines go out in the order the state
//!   decided them, from whichever thread: what a handler publishes reaches
//!   the client before its reply.
//! - A handler registered with an `inline_` method promises to be cheap and
//!   never block; it runs on the reader with no thread hop (the benchmarks'
//!   echo tool is inline); for a legacy client, a tool, prompt or resource
//!   that may ask it for input runs on the pool (it may wait for answers).
//!   Everything else runs on the worker pool, shared
//!   by the server's connections, which grows when its threads stall, so
//!   a slow handler never delays the others for long;
//!   [`ServerBuilder::max_running`] bounds what runs at once per connection.
//! - Bounded without a cycle of bounded channels: past
//!   [`ServerBuilder::queue_limit`] requests waiting to start, the reader
//!   stops reading.
//! - A task's handler runs on a thread of its own, not on the pool: it may
//!   run for hours or wait for the client's input, and the pool is for
//!   requests. Tasks belong to the [`Server`], not to a connection, and go
//!   on when the connection that created them ends (they stop with the
//!   process).
//! - Nothing process-wide unless asked: no signal handler
//!   ([`signal::stop_on_signals`] is opt-in), no allocator setting, no
//!   spinning ([`ServerBuilder::spin_before_sleep`]) and no heap trimming
//!   ([`ServerBuilder::release_memory_when_idle`]) by default.
//! - End of input or [`StopHandle::stop`]: no new work, in-flight handlers
//!   get [`ServerBuilder::shutdown_grace`], then they are cancelled and
//!   answered with `-32603`, and `serve` returns.
//!
//! `ARCHITECTURE.md` in the repository lists every module with its job,
//! each rule with the one function that keeps it and the test that fails
//! without it, and follows one request through them.
//!
//! # Cargo features
//!
//! All but `http`, `https`, `redis` and `redis-tls` on by default; docs.rs marks the items each one adds.
//!
//! | feature | adds |
//! |---|---|
//! | `server` | [`Server`], [`ServerBuilder`], handlers, subscriptions, MRTR sealing |
//! | `client` | [`Client`], spawning servers, subscriptions, restarts; the `mcp-stdio` binary |
//! | `legacy` | the dual-era server and the client's `initialize` fallback; without it a server answers `initialize` with `-32601` naming its versions and the client refuses a legacy server |
//! | `signals` | [`signal::stop_on_signals`] (implies `server`) |
//! | `http` | `Server::serve_http`, `HttpOptions`: Streamable HTTP for the server (off by default; implies `server`; no new crate). A POST's answer is JSON when the reply is the first thing its request writes, an SSE stream when a notification comes first; closing it cancels the request (a legacy request runs on: that era's cancellation is `notifications/cancelled`). A legacy client over HTTP gets sessions (`Mcp-Session-Id`), progress and logs on a POST's stream, and the server's requests (elicitation, sampling, roots) on the stream of the POST that asks, its answer a later POST in the same session (`notifications/cancelled` in the session cancels a request too); its list changes and resource updates come on the session's GET stream (one per session; without one, a resource update comes on the stream of a POST still open); streams are not resumable, and a POST without a session, or whose `Accept` lacks `text/event-stream`, is asked nothing (its handler is told the client cannot answer). With `client` too: `ClientBuilder::connect_url` (and `header`, `bearer_token`, `header_source`), the same `Client` over Streamable HTTP in both eras: one POST per message on pooled keep-alive connections, by threads kept while there is work (none per request), the era probe reading a `400`'s body, cancellation and timeouts by closing the request's stream, a legacy session echoed and ended with `DELETE` (and started again after a `404`), tools whose `x-mcp-header` marks are invalid left out of `tools/list` (with a note), a legacy server's GET stream (its list changes, resource updates and requests) and the resumption of a request's stream with `Last-Event-ID`; `https://` with the `https` feature; no restarts. `proxy::serve_as` (with `server` and `client`, any transport) serves what another server offers; `mcp-stdio serve-http` is it over HTTP |
//! | `https` | `https://` URLs for `ClientBuilder::connect_url` and `mcp-stdio --url`: TLS 1.2 and 1.3 through rustls on ring, the server's certificate verified against the system's root certificates (or `SSL_CERT_FILE` / `SSL_CERT_DIR`) and the CAs `ClientBuilder::add_ca_pem` / `add_ca_file` add (off by default; implies `http` and `client`; adds rustls, ring (a C build) and rustls-native-certs: 10 crates on Linux, 13 with the build tools) |
//! | `redis` | `RedisChangeFeed`: a [`ChangeFeed`] on Redis pub/sub, and `RedisTaskStore`: a [`TaskStore`] on Redis whose tasks every replica reads and changes (atomic updates, Redis's own expiry, a lease that fails a task whose replica died), for a server run as several replicas (off by default; implies `server`; the `redis` crate's sync client and the 36 crates it brings, `url` and its IDNA tables among them; no async runtime) |
//! | `redis-tls` | `rediss://` URLs for both: TLS through rustls on ring, with the system's root certificates (or `SSL_CERT_FILE`) (off by default; implies `redis`; adds rustls and ring, a C build: 13 crates on Linux, build tools included) |
//! | `schemars` | JSON Schemas derived from Rust types ([`types::Tool::input`], [`ServerBuilder::structured_tool`], [`ServerBuilder::typed_prompt`], [`types::ElicitRequestedSchema::for_type`]) |
//!
//! With none of them the crate is the wire types ([`types`], [`jsonrpc`])
//! and the line framing ([`Transport`]).
//!
//! # Why synchronous
//!
//! MCP servers handle a handful of requests at a time. At that scale a
//! thread per running request costs nothing worth saving, and blocking
//! code is easier to write, read, debug and embed. Without a runtime the
//! binaries are small and start fast, and there is no executor to share
//! with the host application.
//!
//! # Spec coverage
//!
//! | Method | Server | Client |
//! |---|---|---|
//! | `server/discover` | capabilities derived from what is registered | the era probe, [`Client::discover`] |
//! | `initialize`, `ping` (legacy servers) | | the probe's fallback ([`EraPolicy`]), [`Client::ping`] |
//! | `tools/list`, `tools/call` | [`ServerBuilder::tool`], [`ServerBuilder::inline_tool`] | [`Client::tools`], [`Client::list_tools`], [`Client::call_tool`], [`Client::call_tool_with`] |
//! | `resources/list`, `resources/templates/list`, `resources/read` | [`ServerBuilder::resource`], [`ServerBuilder::resource_template`] | [`Client::resources`], [`Client::resource_templates`], [`Client::read_resource`] |
//! | `prompts/list`, `prompts/get` | [`ServerBuilder::prompt`] | [`Client::prompts`], [`Client::get_prompt`] |
//! | `completion/complete` | [`ServerBuilder::completion`] | [`Client::complete`] |
//! | `subscriptions/listen` and its notifications | [`Notifier`], [`ServerBuilder::resource_subscription_filter`] | [`Client::listen`], [`Subscription`] |
//! | `notifications/cancelled` | [`RequestContext::is_cancelled`] | [`PendingCall::cancel`], [`RequestOptions::timeout`] |
//! | `notifications/progress`, `notifications/message` | [`RequestContext::progress`], [`RequestContext::log`] | [`RequestOptions::on_progress`], [`RequestOptions::log`] |
//! | `tasks/get`, `tasks/update`, `tasks/cancel`, `notifications/tasks` (Tasks extension) | [`ServerBuilder::task_tool`], [`TaskMode`], [`RequestContext::ask`], [`TaskStore`] | [`ClientBuilder::tasks`]; [`Client::call_tool`] follows a task to its result; [`Client::start_tool_call`], [`Client::task`], [`TaskHandle`]; [`SubscriptionEvent::TaskStatus`] |
//! | any other method | | [`Client::request`], [`Client::request_outcome`], [`Client::start_request`] |
//! | shutdown (stdio) | end of input, [`StopHandle::stop`] | [`Client::close`], [`RestartPolicy`] |
//!
//! # Legacy clients
//!
//! A server is dual-era by default: an `initialize` request without modern
//! `_meta` opens a legacy session (MCP 2025-11-25 back to 2024-11-05, see
//! [`LEGACY_VERSIONS`]) served by the same handlers, while modern requests
//! on the same connection stay stateless. [`ServerBuilder::modern_only`]
//! refuses `initialize` instead.
//!
//! A handler that asks for input ([`Outcome::InputRequired`]) serves a
//! legacy client too: the server asks it the legacy way, with
//! `elicitation/create`, `sampling/createMessage` or `roots/list` requests
//! of its own, then runs the handler again with the answers, exactly as a
//! modern client's retry would. The handler cannot tell the eras apart. An
//! ask the client leaves unanswered for [`ServerBuilder::ask_timeout`] is
//! cancelled, and the request fails with an error that says so.
//!
//! The client works the other way round: against a legacy server it
//! answers the server's requests with the same `on_elicitation`,
//! `on_sampling` and `on_roots` handlers, and [`Client::listen`] builds its
//! [`Subscription`] from `resources/subscribe` and the server's
//! list-changed notifications.
//!
//! # Not here
//!
//! TLS in the HTTP server (serve `http://` behind a TLS-terminating proxy;
//! the client speaks `https://` with the `https` feature), the deprecated 2024-11-05 HTTP+SSE transport, JSON-RPC
//! batches (only 2025-03-26 had them, and a server of that revision must
//! take them; here a batch is refused with `-32600`, as the Python SDK
//! refuses it), and the deprecated features of 2026-07-28 beyond
//! per-request logging.
//!
//! [Model Context Protocol]: https://modelcontextprotocol.io

// The guide above links both halves of the crate. A build without one of
// them (`--no-default-features --features server`, say) has no item to
// link to, so there its links lead to the "Cargo features" section,
// which says what the missing feature adds, instead of being unresolved
// (a warning). The build with every feature (docs.rs) links every item.
// Links to the client, without `client`.
#![cfg_attr(not(feature = "client"), doc = include_str!("doc_links/without_client.md"))]
// Links to the server, without `server`.
#![cfg_attr(not(feature = "server"), doc = include_str!("doc_links/without_server.md"))]
// Links to the typed server, without `server` and `schemars`.
#![cfg_attr(not(all(feature = "server", feature = "schemars")), doc = include_str!("doc_links/without_typed_server.md"))]
// Links to derived schemas, without `schemars`.
#![cfg_attr(not(feature = "schemars"), doc = include_str!("doc_links/without_schemars.md"))]
// Links to signal handling, without `signals`.
#![cfg_attr(not(feature = "signals"), doc = include_str!("doc_links/without_signals.md"))]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]
#![warn(rust_2018_idioms)]
// Without the server and the client only the wire types are used: the
// framing and encoding helpers both sides share are left idle.
#![cfg_attr(not(any(feature = "server", feature = "client")), allow(dead_code))]

#[cfg(feature = "client")]
mod client;
#[cfg(any(feature = "http", feature = "client"))]
mod deadline;
mod envelope_scan;
mod error;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "server")]
mod incoming;
pub mod jsonrpc;
#[cfg(any(feature = "server", feature = "client"))]
mod key_hashes;
#[cfg(any(feature = "server", feature = "client"))]
mod note_limiter;
#[cfg(any(feature = "server", feature = "client"))]
mod note_queue;
mod outcome;
#[cfg(all(feature = "server", feature = "client"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "server", feature = "client"))))]
pub mod proxy;
#[cfg(feature = "schemars")]
mod schema;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "signals")]
#[cfg_attr(docsrs, doc(cfg(feature = "signals")))]
pub mod signal;
#[cfg(feature = "client")]
mod sync;
mod transport;
pub mod types;
mod uri_template;
#[cfg(all(feature = "client", feature = "http"))]
mod url_for_people;
mod version;

#[cfg(all(feature = "client", feature = "http"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "client", feature = "http"))))]
pub use client::{AuthorizeFn, HeaderSource, MemoryTokenStore, OAuth, TokenStore, Tokens};
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub use client::{
    Client, ClientBuilder, Era, EraPolicy, Pages, PendingCall, RequestOptions, RestartPolicy,
    Subscription, SubscriptionEnd, SubscriptionEvent, TaskHandle, ToolCallStart, WireDirection,
};
pub use error::Error;
pub use jsonrpc::{ErrorObject, RequestId, error_code};
pub use outcome::{Outcome, PromptArguments, ToolOutcome};
// Each from the module that defines it (tests/it/module_graph.rs reads
// these paths).
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use http::HttpHeaders;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::arguments::ToolArguments;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::builder::ServerBuilder;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::cancel::CancelToken;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::change_feed::{Change, ChangeFeed};
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::context::{Elicited, RequestContext};
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::handlers::ResourceRequest;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use server::http::auth::{ProtectedResource, Unauthorized};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use server::http::options::HttpOptions;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::notifier::Notifier;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use server::redis_feed::RedisChangeFeed;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::request_meta::{Owner, RequestMeta, TokenInfo};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use server::tasks::redis_store::RedisTaskStore;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::tasks::{MemoryTaskStore, StoredTask, TaskMode, TaskStore};
#[cfg(all(feature = "server", feature = "schemars"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "server", feature = "schemars"))))]
pub use server::typed::StructuredOutput;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use server::{CacheHints, Server, StopHandle};
pub use transport::{DEFAULT_MAX_LINE_BYTES, MemoryReader, MemoryWriter, Transport, memory_pipe};
pub use uri_template::UriTemplate;
pub use version::{LEGACY_VERSIONS, SUPPORTED_VERSIONS};

/// The `schemars` crate this one derives schemas with, for
/// `#[derive(JsonSchema)]` without a direct dependency (then add
/// `#[schemars(crate = "mcp_stdio::schemars")]` to the type).
#[cfg(feature = "schemars")]
#[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
pub use schemars;

/// The README's code blocks are compiled as doc tests (they use every
/// default feature).
#[cfg(all(
    doctest,
    feature = "server",
    feature = "client",
    feature = "signals",
    feature = "schemars"
))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
