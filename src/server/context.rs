//! What a handler knows about the request it serves: its id, its `_meta`,
//! its cancel token, and the two request-scoped notifications it may send
//! (progress and log messages).
//!
//! Why the emitters check so much: the spec allows `notifications/progress`
//! only for a request that carried `_meta.progressToken`, with strictly
//! increasing values, and `notifications/message` only for a request that
//! set `io.modelcontextprotocol/logLevel`, at or above that level. Nothing at
//! all may be sent for a request after it was cancelled or answered. The
//! context enforces the first three; its connection the last
//! (`Conn::notify`, see `conn`).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, RequestId, encode_notification};
use crate::server::cancel::CancelToken;
use crate::server::mrtr::Retry;
use crate::server::request_meta::RequestMeta;
use crate::server::tasks::link::TaskLink;
use crate::server::{Notifier, Server};
use crate::types::{
    CreateMessageResult, ElicitAction, ElicitResult, InputRequests, InputResponses,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParams, ProgressNotificationParams,
    method,
};

/// Where a handler's notifications go.
pub(crate) enum Sink {
    /// A request of a connection: what it sends goes through the
    /// connection, and only while the request is in flight.
    Conn { outlet: Arc<dyn Outlet>, seq: u64 },
    /// A task's handler: no notification goes on the wire for a task
    /// (Tasks extension); a progress message becomes its `statusMessage`.
    Task(Arc<TaskLink>),
}

/// Where a request's own messages go: its connection. Implemented by the
/// connection state (`conn`), which this module does not name: the
/// context stays below the code that serves connections.
pub(crate) trait Outlet: Send + Sync {
    /// Writes notification `line` of request `id` (sequence `seq`) if the
    /// request is still in flight.
    fn notify(&self, id: &RequestId, seq: u64, line: Vec<u8>);

    /// Request `id` (sequence `seq`) gives up its slot while it waits
    /// (see [`RequestContext::wait_without_slot`]).
    fn stop_holding(&self, id: &RequestId, seq: u64) -> Holding;

    /// Request `id` (sequence `seq`) is done waiting: it holds its slot
    /// again.
    fn hold_again(&self, id: &RequestId, seq: u64);
}

/// What [`Outlet::stop_holding`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holding {
    /// The request gave up its slot.
    Released,
    /// It held none to give up: inline, not in flight any more, or
    /// waiting so already.
    NoSlot,
    /// Refused: as many requests as there are slots wait so already.
    Full,
}

/// What the user did with an elicitation form, its fields read into `T`
/// ([`RequestContext::elicitation_as`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// Submitted: the fields.
    Accepted(T),
    /// Explicitly refused.
    Declined,
    /// Dismissed without choosing.
    Cancelled,
}

/// Everything a handler gets besides its parameters.
pub struct RequestContext {
    id: RequestId,
    meta: RequestMeta,
    token: CancelToken,
    sink: Sink,
    server: Server,
    retry: Option<Retry>,
    /// The last progress value sent, as `f64` bits; `NEG_INFINITY` before
    /// the first.
    last_progress: AtomicU64,
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.id)
            .field("meta", &self.meta)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl RequestContext {
    pub(crate) fn new(
        id: RequestId,
        meta: RequestMeta,
        token: CancelToken,
        sink: Sink,
        server: Server,
        retry: Option<Retry>,
    ) -> Self {
        RequestContext {
            id,
            meta,
            token,
            sink,
            server,
            retry,
            last_progress: AtomicU64::new(f64::NEG_INFINITY.to_bits()),
        }
    }

    /// The context of a legacy request's next round (see
    /// `server::legacy::input`): the same request, id, cancellation and
    /// progress, with the round's metadata and verified answers.
    #[cfg(feature = "legacy")]
    pub(crate) fn for_retry(&self, meta: RequestMeta, retry: Option<Retry>) -> RequestContext {
        let sink = match &self.sink {
            Sink::Conn { outlet, seq } => Sink::Conn {
                outlet: Arc::clone(outlet),
                seq: *seq,
            },
            Sink::Task(link) => Sink::Task(Arc::clone(link)),
        };
        let ctx = RequestContext::new(
            self.id.clone(),
            meta,
            self.token.clone(),
            sink,
            self.server.clone(),
            retry,
        );
        // Progress keeps increasing across rounds.
        ctx.last_progress.store(
            self.last_progress.load(Ordering::Acquire),
            Ordering::Release,
        );
        ctx
    }

    /// The verified answers and state of a retry, if this is one.
    pub(crate) fn retry(&self) -> Option<&Retry> {
        self.retry.as_ref()
    }

    #[cfg(feature = "legacy")]
    pub(crate) fn sink(&self) -> &Sink {
        &self.sink
    }

    /// The server serving this request: handlers can add and remove tools,
    /// resources and prompts through it while serving.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Publishes changes to open subscriptions (same as
    /// [`Server::notifier`]).
    pub fn notifier(&self) -> Notifier {
        self.server.notifier()
    }

    /// On a retry of a multi round-trip request: the state the handler put
    /// in `requestState` last round, verified (see
    /// [`ServerBuilder::request_state_key`](crate::ServerBuilder::request_state_key)).
    pub fn request_state(&self) -> Option<&str> {
        self.retry.as_ref()?.state.as_deref()
    }

    /// On a retry: the client's answers to the last round's input requests,
    /// by key. An answer to a request the verified `requestState` names
    /// has that request's shape; anything else is passed through
    /// untouched: a key the state does not name, and every answer of a
    /// request that came without a state (a first call may carry answers
    /// too). Read them with [`RequestContext::elicitation`],
    /// [`RequestContext::sampling`] and [`RequestContext::roots`], which
    /// take only what fits.
    pub fn input_responses(&self) -> &InputResponses {
        static EMPTY: InputResponses = InputResponses::new();
        self.retry.as_ref().map_or(&EMPTY, |r| &r.responses)
    }

    /// The answer to the elicitation asked under `key`, if the client sent one.
    pub fn elicitation(&self, key: &str) -> Option<ElicitResult> {
        self.input_responses().get(key)?.to_elicit_result().ok()
    }

    /// The answer to the elicitation form asked under `key`, read into
    /// `T` (typically the type the form was built from, see
    /// `types::ElicitRequestedSchema::for_type`, feature `schemars`):
    /// `Ok(None)` before the client answered, `-32602` when the submitted
    /// fields do not fit `T`.
    ///
    /// ```
    /// # use mcp_stdio::{Elicited, RequestContext, ErrorObject};
    /// # #[derive(serde::Deserialize)] struct Contact { name: String }
    /// # fn handler(ctx: &RequestContext) -> Result<String, ErrorObject> {
    /// Ok(match ctx.elicitation_as::<Contact>("contact")? {
    ///     Some(Elicited::Accepted(contact)) => format!("Hello, {}!", contact.name),
    ///     Some(_) => "Maybe another time.".to_owned(),
    ///     None => "(ask, with Outcome::InputRequired)".to_owned(),
    /// })
    /// # }
    /// ```
    pub fn elicitation_as<T: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<Elicited<T>>, ErrorObject> {
        let Some(answer) = self.elicitation(key) else {
            return Ok(None);
        };
        Ok(Some(match answer.content_as::<T>() {
            Ok(Some(content)) => Elicited::Accepted(content),
            Ok(None) if answer.action == ElicitAction::Decline => Elicited::Declined,
            Ok(None) => Elicited::Cancelled,
            Err(e) => {
                return Err(ErrorObject::invalid_params(format!(
                    "the answer to {key} does not fit the form: {e}"
                )));
            }
        }))
    }

    /// The answer to the sampling request asked under `key`.
    pub fn sampling(&self, key: &str) -> Option<CreateMessageResult> {
        self.input_responses()
            .get(key)?
            .to_create_message_result()
            .ok()
    }

    /// The answer to the roots request asked under `key`.
    pub fn roots(&self, key: &str) -> Option<ListRootsResult> {
        self.input_responses().get(key)?.to_list_roots_result().ok()
    }

    /// The JSON-RPC id of the request.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The request's validated `_meta`.
    pub fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// What the request's access token allows (its subject, scopes,
    /// expiry, the validator's claims): [`RequestMeta::token_info`].
    /// `None` unless the HTTP server validated a token for it.
    pub fn token_info(&self) -> Option<&crate::server::request_meta::TokenInfo> {
        self.meta.token_info()
    }

    /// Whether the client cancelled the request (or the server is shutting
    /// down past its grace period, or the request's task outlived its TTL:
    /// it is forgotten, and nobody could cancel it any more). Poll it
    /// between units of work.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// A clone of the request's cancel token, for helpers and scoped
    /// threads. A task's token trips by itself at the task's TTL: a
    /// helper polling or waiting on its clone sees it as the handler does.
    pub fn cancel_token(&self) -> CancelToken {
        self.token.clone()
    }

    /// Sleeps for up to `timeout`, waking early on cancellation (a task's
    /// TTL included). Returns whether the request is cancelled.
    pub fn wait_cancelled(&self, timeout: Duration) -> bool {
        self.token.wait_timeout(timeout)
    }

    /// Runs `wait`, a wait for something outside the server (another
    /// service, a lock, a person's answer), while this request holds no
    /// slot of its connection: the requests queued behind it
    /// ([`ServerBuilder::max_running`](crate::ServerBuilder::max_running))
    /// may start meanwhile, where a pooled handler that waits with its slot
    /// held keeps them waiting. It takes its slot again when `wait` returns
    /// (for a moment past `max_running`, if need be).
    ///
    /// Returns `None`, without running `wait`, when as many requests of the
    /// connection wait like this as it has slots: past that, the requests
    /// behind them could fill the queue and stop the server reading, and
    /// so reading what the waits may be waiting for. A handler with no
    /// slot to give up (an inline one, a task's) just runs `wait`.
    ///
    /// ```
    /// # fn handler(ctx: &mcp_stdio::RequestContext, lock: &std::sync::Mutex<()>) -> Result<(), mcp_stdio::ErrorObject> {
    /// let guard = ctx
    ///     .wait_without_slot(|| lock.lock())
    ///     .ok_or_else(|| mcp_stdio::ErrorObject::internal_error("too busy: try again"))?;
    /// # drop(guard); Ok(()) }
    /// ```
    pub fn wait_without_slot<T>(&self, wait: impl FnOnce() -> T) -> Option<T> {
        let Sink::Conn { outlet, seq } = &self.sink else {
            return Some(wait());
        };
        match outlet.stop_holding(&self.id, *seq) {
            Holding::Full => None,
            Holding::NoSlot => Some(wait()),
            Holding::Released => {
                // Taken again even if `wait` panics: the counts stay true.
                let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(wait));
                outlet.hold_again(&self.id, *seq);
                Some(waited.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            }
        }
    }

    /// Fails with `-32021` unless the request declared the client
    /// capability at `path` (see [`RequestMeta::has_client_capability`]):
    ///
    /// ```
    /// # fn handler(ctx: &mcp_stdio::RequestContext) -> Result<(), mcp_stdio::ErrorObject> {
    /// ctx.require_client_capability("sampling")?;
    /// # Ok(()) }
    /// ```
    pub fn require_client_capability(&self, path: &str) -> Result<(), ErrorObject> {
        if self.meta.has_client_capability(path) {
            return Ok(());
        }
        let mut required = Value::Object(Map::new());
        for part in path.rsplit('.') {
            let mut map = Map::new();
            map.insert(part.to_owned(), required);
            required = Value::Object(map);
        }
        // The innermost object stands for "declared, with no settings".
        Err(ErrorObject::missing_required_client_capability(required))
    }

    /// Inside a task (Tasks extension): its id. `None` for a request
    /// answered directly.
    pub fn task_id(&self) -> Option<&str> {
        match &self.sink {
            Sink::Task(link) => Some(&link.task_id),
            _ => None,
        }
    }

    /// Asks the client for input in the middle of the work, and blocks
    /// until every request is answered: the answers, by the keys of
    /// `requests`.
    ///
    /// Only a task can wait like this: the task shows `input_required`
    /// with these requests until the client answers them with
    /// `tasks/update`. It fails (`-32603`) when the task is cancelled or
    /// expires meanwhile, when no answer comes within
    /// [`ServerBuilder::task_input_timeout`](crate::ServerBuilder::task_input_timeout)
    /// (default one hour: the questions are taken back, and the task is
    /// `working` until the handler returns), and outside a task, where the way to ask is to
    /// return [`Outcome::InputRequired`](crate::Outcome::InputRequired)
    /// (which works inside a task too: the handler then runs again with
    /// the answers, as on a retry).
    ///
    /// ```
    /// # use mcp_stdio::{RequestContext, ErrorObject};
    /// # use mcp_stdio::types::{ElicitAction, InputRequest, InputRequests};
    /// # fn handler(ctx: &RequestContext, ask: InputRequest) -> Result<bool, ErrorObject> {
    /// // ... an hour of work, then:
    /// let answers = ctx.ask(InputRequests::from([("go".to_owned(), ask)]))?;
    /// let go = answers["go"]
    ///     .to_elicit_result()
    ///     .is_ok_and(|a| a.action == ElicitAction::Accept);
    /// # Ok(go) }
    /// ```
    pub fn ask(&self, requests: InputRequests) -> Result<InputResponses, ErrorObject> {
        match &self.sink {
            Sink::Task(link) => link.ask(requests, &self.meta),
            _ => Err(ErrorObject::internal_error(
                "RequestContext::ask works only inside a task; return Outcome::InputRequired to ask for input",
            )),
        }
    }

    /// Sends `notifications/progress` for this request: only when it carried
    /// `_meta.progressToken`, only when `progress` is greater than the last
    /// value sent (anything else is dropped), and never after cancellation.
    ///
    /// Inside a task nothing is sent (the extension forbids it); `message`
    /// becomes the task's `statusMessage`.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Sink::Task(link) = &self.sink {
            if let Some(message) = message
                && !self.is_cancelled()
            {
                link.status_message(message);
            }
            return;
        }
        let Some(token) = &self.meta.progress_token else {
            return;
        };
        if self.is_cancelled() || !progress.is_finite() {
            return;
        }
        let bits = progress.to_bits();
        let increased = self
            .last_progress
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                (progress > f64::from_bits(last)).then_some(bits)
            })
            .is_ok();
        if !increased {
            return;
        }
        let params = ProgressNotificationParams {
            progress_token: token.clone(),
            progress,
            total,
            message: message.map(str::to_owned),
            meta: None,
        };
        self.send(method::NOTIFICATION_PROGRESS, &params);
    }

    /// Sends `notifications/message` for this request: only when it set
    /// `io.modelcontextprotocol/logLevel` and `level` is at or above it, and
    /// never after cancellation.
    pub fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        match self.meta.log_level() {
            Some(min) if level >= min => {}
            _ => return,
        }
        if self.is_cancelled() {
            return;
        }
        let params = LoggingMessageNotificationParams {
            level,
            logger: logger.map(str::to_owned),
            data,
            meta: None,
        };
        self.send(method::NOTIFICATION_MESSAGE, &params);
    }

    fn send<P: Serialize>(&self, method: &str, params: &P) {
        let mut line = Vec::with_capacity(128);
        if encode_notification(&mut line, method, params).is_err() {
            return;
        }
        match &self.sink {
            // Nothing for a request that was answered or cancelled.
            Sink::Conn { outlet, seq } => outlet.notify(&self.id, *seq, line),
            Sink::Task(_) => {}
        }
    }
}
