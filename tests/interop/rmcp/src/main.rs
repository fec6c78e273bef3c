//! The interop fixture server of `tests/interop/CHECKS.md` ("Fixture servers"),
//! written with the official Rust SDK, `rmcp` 3.11.0, over stdio.
//!
//! rmcp 3.11 speaks both eras on one stdio connection: `server/discover` plus
//! per-request `_meta` (2026-07-28), and the legacy `initialize` handshake
//! (2024-11-05 .. 2025-11-25). Every fixture of CHECKS.md is served:
//!
//! - tools through `#[tool_router]` / `#[tool_handler]`, prompts through
//!   `#[prompt_router]` / `#[prompt_handler]`; resources, templates and
//!   completion by hand (rmcp has no macro for them);
//! - `ask` as an MRTR tool: it returns rmcp's `InputRequiredResult` and reads
//!   the retry through the `RequestState` / `InputResponses` extractors;
//! - change notifications on `subscriptions/listen` streams (2026-07-28,
//!   `accepted_subscription_filter` + `listen`), and, for a legacy session, as
//!   `resources/subscribe` + session-wide notifications.
//!
//! What rmcp cannot do, and the one workaround, are noted where they matter:
//! `ask` for a legacy session, and prompt shutdown on stdin EOF ([`EofSignal`]).

use std::collections::{HashSet, VecDeque};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState, schema_for_output};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, CompleteRequestParams, CompleteResult,
    CompletionInfo, ContentBlock, ElicitRequest, ElicitRequestParams, ElicitationSchema,
    Implementation, InputRequest, InputRequests, InputRequiredResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ProgressNotificationParam, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, Resource,
    ResourceContents, ResourceTemplate, ResourceUpdatedNotificationParam, Role, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{
    RequestContext, ServerInitializeError, SubscriptionContext, SubscriptionSendError,
};
use rmcp::transport::stdio;
use rmcp::{
    ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceExt, prompt, prompt_handler,
    prompt_router, tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

const COUNTER_URI: &str = "mem://counter";
const TEMPLATE: &str = "test://template/{id}/data";
const EPHEMERAL: &str = "ephemeral";
const NAMES: [&str; 3] = ["Alice", "Bob", "Carol"];
/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A change that open `subscriptions/listen` streams may carry.
#[derive(Clone, Debug)]
enum Change {
    ToolsListChanged,
    ResourceUpdated(String),
}

/// State shared by every request of the connection.
struct Shared {
    counter: AtomicU64,
    /// Every open `subscriptions/listen` stream receives every change and
    /// keeps what its accepted filter allows (rmcp's sink enforces it).
    changes: broadcast::Sender<Change>,
    /// Receivers taken before a stream's acknowledgment goes out; see
    /// [`Fixture::accepted_subscription_filter`].
    pending_listeners: Mutex<VecDeque<broadcast::Receiver<Change>>>,
    /// URIs a legacy (`initialize`) session subscribed to with `resources/subscribe`.
    legacy_subscriptions: Mutex<HashSet<String>>,
    /// Cancelled when stdin reaches end-of-file; see [`EofSignal`].
    stdin_closed: CancellationToken,
}

impl Shared {
    /// Announces a change: on every open listen stream (2026-07-28) and, for
    /// a legacy session, session-wide as the pre-2026 protocol has it.
    async fn publish(&self, change: Change, peer: &Peer<RoleServer>) {
        // No receiver (no open stream) is not an error.
        let _ = self.changes.send(change.clone());
        // `peer_info` is the client's `initialize` request: present only for
        // a legacy session. A 2026-07-28 session gets change notifications on
        // its listen streams only.
        if peer.peer_info().is_none() {
            return;
        }
        let sent = match change {
            Change::ToolsListChanged => peer.notify_tool_list_changed().await,
            Change::ResourceUpdated(uri) => {
                if !self.legacy_subscriptions.lock().unwrap().contains(&uri) {
                    return;
                }
                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
            }
        };
        if let Err(error) = sent {
            eprintln!("rmcp-fixture: could not send a change notification: {error}");
        }
    }
}

#[derive(Clone)]
struct Fixture {
    shared: Arc<Shared>,
    /// The live tool list. `toggle_tool` enables and disables `ephemeral` in
    /// it, so it sits behind a lock; calls run on a snapshot (see `current_tools`).
    tools: Arc<RwLock<ToolRouter<Fixture>>>,
    prompts: PromptRouter<Fixture>,
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: f64,
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct ProgressArgs {
    steps: u32,
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

#[tool_router]
impl Fixture {
    fn new(stdin_closed: CancellationToken) -> Self {
        let (changes, _) = broadcast::channel(64);
        Self {
            shared: Arc::new(Shared {
                counter: AtomicU64::new(0),
                changes,
                pending_listeners: Mutex::new(VecDeque::new()),
                legacy_subscriptions: Mutex::new(HashSet::new()),
                stdin_closed,
            }),
            // `ephemeral` is a route from the start, hidden until toggled on.
            tools: Arc::new(RwLock::new(Self::tool_router().with_disabled(EPHEMERAL))),
            prompts: Self::prompt_router(),
        }
    }

    /// The tool list as it is now. A call runs on this snapshot, so no lock is
    /// held while a tool runs (`toggle_tool` takes the write lock).
    fn current_tools(&self) -> ToolRouter<Fixture> {
        self.tools.read().unwrap().clone()
    }

    #[tool(description = "Returns its text unchanged.")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        bench_work();
        args.text
    }

    // Not `Json<Sum>`: rmcp's structured-output wrapper makes the text block
    // the serialized object; the fixture's text is the sum itself.
    #[tool(description = "Adds two numbers.", output_schema = schema_for_output::<Sum>())]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> CallToolResult {
        let sum = a + b;
        let mut result = text(sum.to_string());
        result.structured_content = Some(rmcp::serde_json::json!(Sum { sum }));
        result
    }

    #[tool(description = "Returns a 1x1 PNG image.")]
    async fn test_image_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")])
    }

    #[tool(description = "Always fails as a tool (isError: true).")]
    async fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("the fail fixture always fails")])
    }

    #[tool(description = "Waits `ms` milliseconds (cancellable), then says done.")]
    async fn slow(
        &self,
        Parameters(SlowArgs { ms }): Parameters<SlowArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(text("done")),
            // rmcp drops the reply of a cancelled request, so this never
            // reaches the wire; it only ends the handler at once.
            () = context.ct.cancelled() => Err(McpError::internal_error("cancelled", None)),
            () = self.shared.stdin_closed.cancelled() => {
                Err(McpError::internal_error("stdin closed", None))
            }
        }
    }

    #[tool(description = "Reports `steps` progress notifications, then says done.")]
    async fn progress(
        &self,
        Parameters(ProgressArgs { steps }): Parameters<ProgressArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        if let Some(token) = context.meta.get_progress_token() {
            for step in 1..=steps {
                let param = ProgressNotificationParam::new(token.clone(), f64::from(step))
                    .with_total(f64::from(steps))
                    .with_message(format!("step {step} of {steps}"));
                context
                    .peer
                    .notify_progress(param)
                    .await
                    .map_err(|error| McpError::internal_error(error.to_string(), None))?;
            }
        }
        Ok(text("done"))
    }

    #[tool(description = "Increments the counter behind mem://counter and announces the update.")]
    async fn bump(&self, peer: Peer<RoleServer>) -> String {
        let value = self.shared.counter.fetch_add(1, Ordering::SeqCst) + 1;
        self.shared
            .publish(Change::ResourceUpdated(COUNTER_URI.into()), &peer)
            .await;
        value.to_string()
    }

    #[tool(description = "Adds the tool `ephemeral`, or removes it if present.")]
    async fn toggle_tool(&self, peer: Peer<RoleServer>) -> String {
        let added = {
            let mut tools = self.tools.write().unwrap();
            if tools.is_disabled(EPHEMERAL) {
                tools.enable_route(EPHEMERAL)
            } else {
                !tools.disable_route(EPHEMERAL)
            }
        };
        self.shared.publish(Change::ToolsListChanged, &peer).await;
        if added {
            "added ephemeral"
        } else {
            "removed ephemeral"
        }
        .to_owned()
    }

    #[tool(description = "Exists between two calls of toggle_tool.")]
    async fn ephemeral(&self) -> String {
        EPHEMERAL.to_owned()
    }

    /// MRTR (2026-07-28): the first call asks for a name with a form
    /// elicitation; the retry carries the answer.
    ///
    /// Legacy sessions cannot use it: rmcp refuses to send an
    /// `InputRequiredResult` to a peer that negotiated a version before
    /// 2026-07-28 (a -32600 error), and the legacy way, a server-to-client
    /// `elicitation/create` request (`Peer::create_elicitation`), needs rmcp's
    /// `elicitation` feature, which this fixture leaves off (CHECKS.md has no
    /// legacy `ask` check).
    #[tool(description = "Asks the user for their name (MRTR), then greets them.")]
    async fn ask(
        &self,
        RequestState(_state): RequestState,
        InputResponses(responses): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(answer) = responses.as_ref().and_then(|r| r.get("name")) {
            return Ok(match (
                answer["action"].as_str(),
                answer["content"]["name"].as_str(),
            ) {
                (Some("accept"), Some(name)) => text(format!("Nice to meet you, {name}!")),
                _ => text("You did not give a name."),
            }
            .into());
        }
        // A server must not ask for input of a kind the request's client
        // capabilities do not declare (-32021 names what is missing).
        let can_elicit = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.elicitation.is_some());
        if !can_elicit {
            return Err(McpError::missing_required_client_capability(
                ClientCapabilities::builder().enable_elicitation().build(),
            ));
        }
        let schema = ElicitationSchema::builder()
            .required_string("name")
            .build()
            .map_err(|error| McpError::internal_error(error, None))?;
        let request = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "What is your name?".into(),
            requested_schema: schema,
        });
        let mut requests = InputRequests::new();
        requests.insert("name".into(), InputRequest::Elicitation(request));
        Ok(InputRequiredResult::from_input_requests(requests).into())
    }
}

#[prompt_router]
impl Fixture {
    #[prompt(description = "Greets someone by name.")]
    async fn greet(
        &self,
        Parameters(GreetArgs { name }): Parameters<GreetArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!("Please greet {name} warmly."),
        )]
    }
}

/// The text of `test://template/{id}/data` for one `id`, if `uri` is one.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

#[tool_handler(router = self.current_tools())]
#[prompt_handler(router = self.prompts)]
impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_completions()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "rmcp-fixture",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Interop fixture server (tests/interop/CHECKS.md), built on rmcp 3.11.0.",
            )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let counter = Resource::new(COUNTER_URI, "counter")
            .with_description("A counter that the bump tool increments.")
            .with_mime_type("text/plain");
        Ok(ListResourcesResult::with_all_items(vec![counter]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let template = ResourceTemplate::new(TEMPLATE, "template-data")
            .with_description("Data for any id.")
            .with_mime_type("text/plain");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let body = if uri == COUNTER_URI {
            self.shared.counter.load(Ordering::SeqCst).to_string()
        } else if let Some(id) = template_id(&uri) {
            format!("data for id {id}")
        } else {
            // rmcp sends -32002 to legacy peers and -32602 on 2026-07-28.
            return Err(McpError::resource_not_found(
                format!("no resource {uri}"),
                None,
            ));
        };
        let contents = ResourceContents::text(body, uri).with_mime_type("text/plain");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let values = match &request.r#ref {
            Reference::Prompt(prompt)
                if prompt.name == "greet" && request.argument.name == "name" =>
            {
                NAMES
                    .iter()
                    .filter(|name| name.starts_with(request.argument.value.as_str()))
                    .map(|name| (*name).to_owned())
                    .collect()
            }
            _ => Vec::new(),
        };
        let completion = CompletionInfo::with_all_values(values)
            .map_err(|error| McpError::internal_error(error, None))?;
        Ok(CompleteResult::new(completion))
    }

    /// `subscriptions/listen` (2026-07-28): what this server can announce.
    /// rmcp intersects it with the request and the advertised capabilities,
    /// acknowledges, then calls [`Self::listen`].
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // `listen` runs only once the acknowledgment has been written, so a
        // change made in between (a client may call `bump` as soon as it reads
        // the acknowledgment) would be missed by a receiver taken in `listen`.
        // This is the last hook before the acknowledgment: take it here.
        let receiver = self.shared.changes.subscribe();
        self.shared
            .pending_listeners
            .lock()
            .unwrap()
            .push_back(receiver);
        Some(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .resources_list_changed()
                .resource_subscription(COUNTER_URI)
                .build(),
        )
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        let receiver = self.shared.pending_listeners.lock().unwrap().pop_front();
        let mut changes = receiver.unwrap_or_else(|| self.shared.changes.subscribe());
        let sink = subscription.sink();
        loop {
            let change = tokio::select! {
                // Cancelled by the client: rmcp sends nothing more for it.
                () = subscription.cancelled() => return Ok(()),
                // Shutting down: Ok(()) is rmcp's graceful end, the final
                // `subscriptions/listen` result.
                () = self.shared.stdin_closed.cancelled() => return Ok(()),
                change = changes.recv() => change,
            };
            let sent = match change {
                Ok(Change::ToolsListChanged) => sink.notify_tool_list_changed().await,
                Ok(Change::ResourceUpdated(uri)) => sink.notify_resource_updated(uri).await,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            match sent {
                // Outside this stream's accepted filter: not for it.
                Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {}
                Err(_) => return Ok(()),
            }
        }
    }

    // The legacy (pre-2026-07-28) subscription: rmcp routes `resources/subscribe`
    // here only for a session opened with `initialize`; a 2026-07-28 request
    // gets -32601 from rmcp itself.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if request.uri != COUNTER_URI {
            return Err(McpError::invalid_params(
                format!("{} is not subscribable", request.uri),
                None,
            ));
        }
        self.shared
            .legacy_subscriptions
            .lock()
            .unwrap()
            .insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared
            .legacy_subscriptions
            .lock()
            .unwrap()
            .remove(&request.uri);
        Ok(())
    }
}

/// Stdin that cancels a token when it reaches end-of-file.
///
/// On EOF rmcp's service loop stops reading, then waits up to 5 s for every
/// handler still running (to send their replies) before it cancels them. An
/// open `subscriptions/listen` never finishes by itself, nor does `slow`, so
/// without this the process would linger those 5 s after the client closed
/// stdin. The handlers that can run indefinitely also wait on this token.
struct EofSignal<R> {
    inner: R,
    eof: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(())))
            && buf.filled().len() == before
            && buf.remaining() > 0
        {
            self.eof.cancel();
        }
        poll
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stdin_closed = CancellationToken::new();
    let (stdin, stdout) = stdio();
    let stdin = EofSignal {
        inner: stdin,
        eof: stdin_closed.clone(),
    };
    match Fixture::new(stdin_closed).serve((stdin, stdout)).await {
        Ok(running) => {
            running.waiting().await?;
        }
        // rmcp's `serve` returns only once a lifecycle is chosen (`initialize`,
        // or a first 2026-07-28 request other than `server/discover`). A
        // client that only discovers, then closes stdin, ends up here: that is
        // a normal shutdown, not a failure.
        Err(ServerInitializeError::ConnectionClosed(_)) => {}
        Err(error) => return Err(error.into()),
    }
    Ok(())
}

/// The work a benchmark's handler does per call: `MCP_BENCH_WORK_US`
/// microseconds of CPU (none when unset), as a handler that does real work
/// would; the same in `floor.rs` and the rmcp fixture.
fn bench_work() {
    static WORK: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    let work = *WORK.get_or_init(|| {
        let us = std::env::var("MCP_BENCH_WORK_US").ok().and_then(|v| v.parse().ok());
        std::time::Duration::from_micros(us.unwrap_or(0))
    });
    let started = std::time::Instant::now();
    while started.elapsed() < work {
        std::hint::spin_loop();
    }
}
