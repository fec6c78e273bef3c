//! The client over Streamable HTTP (spec 2026-07-28
//! basic/transports/streamable-http; 2025-11-25 basic/transports for a
//! legacy server): a carrier (`link::Carrier`) under the ordinary
//! `Link`, so that routing, MRTR, tasks, progress, subscriptions and the
//! era probe stay one copy for stdio and HTTP.
//!
//! ```text
//! caller ──► Link::try_send ──► HttpCarrier::send: the headers, then a worker (`workers`)
//! worker: the POST on a kept-alive connection, its answer read as it comes
//!         (a JSON body, or each SSE `data:` event) ──► Inbox::deliver ──► the caller's channel
//! ```
//!
//! Why a carrier under the link and not a transport of its own: the link
//! owns every rule about what a message means; HTTP only decides how it
//! travels. Why not a byte-stream pair, as it was: a call then crossed four
//! threads (caller, the link's writer, a thread per POST, the link's
//! reader), and a message the server never answered held the writer, and
//! every message behind it. Now a call crosses two (to a worker and back),
//! no thread is started per request (workers are kept while there is work,
//! `workers`), and no message waits for another: notifications and answers
//! go to workers too, each with a time limit ([`ACCEPT_TIMEOUT`]), but for
//! `notifications/initialized`, which what follows must not overtake: its
//! caller POSTs it itself. The carrier reads no more of a message than its
//! `id`, `method`, `params.name`/`params.uri`/`params.taskId`, the
//! protocol version and (for a tool with marked arguments) `arguments`,
//! which it needs for the headers.
//!
//! Cancellation: in the modern era closing a request's response stream is
//! the cancellation, so the link's `notifications/cancelled` closes that
//! connection instead of being posted; a legacy server gets it POSTed (and
//! its stream is closed too); a request whose late answer the link still
//! hears (a `tools/call` that may have made a task) has its stream shut
//! for sending only and read on for that answer, for a bounded time
//! (`late`). An answer that is not JSON-RPC (a `4xx` or
//! `5xx` with a text body, a refused connection) becomes a JSON-RPC error
//! for the request that caused it, so the era probe and every caller see it
//! the way they would on stdio. A response stream that ends without the
//! answer is an error for its request at once; one the server leaves open
//! after the answer is closed. Sessions (legacy): an `Mcp-Session-Id` the
//! server assigns is sent back on every later request, a `DELETE` ends it
//! when the client closes, and a `404` for it starts a new one (`session`).
//! A legacy server also gets the GET streams of its era (`get_stream`): the
//! standalone one, opened once initialized, for what belongs to no request,
//! and the resumption of a request's stream that ended early.

pub(crate) mod exchange;
mod get_stream;
pub(crate) mod host;
mod late;
mod messages;
mod params;
mod post;
mod relist;
mod session;
mod settings;
pub(crate) mod stream;
#[cfg(feature = "https")]
pub(crate) mod tls;
pub(crate) mod url;
mod workers;

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::client::link::{Carrier, Inbox};
use crate::client::notes::Notes;
use crate::error::Error;
use crate::http::encode_sentinel;
use crate::sync::lock;
use crate::types::method;
pub(crate) use messages::no_answer;
use params::ParamHeaders;
use post::Post;
pub use settings::HeaderSource;
pub(crate) use settings::HttpSettings;
use stream::Connector;
use url::Endpoint;
use workers::{Job, Workers};

/// How many idle connections the pool keeps; a request finds one there or
/// opens its own, so this bounds idle sockets, not concurrency.
const IDLE_CONNECTIONS: usize = 8;

/// How long a `DELETE` of the session may take when the client closes.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a notification's or an answer's POST may wait for the server
/// to accept it (`202`), and any write for the server to take some of it:
/// a server that never does holds that one POST's worker, no longer.
const ACCEPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Makes the carrier of an HTTP connection to `endpoint` (each opened by
/// `connector`), handing the server's messages to `inbox`: every message
/// the link sends is POSTed.
pub(crate) fn open(
    endpoint: Endpoint,
    connector: Connector,
    settings: &HttpSettings,
    max_message: usize,
    notes: Notes,
    inbox: Inbox,
) -> Box<dyn Carrier> {
    Box::new(HttpCarrier(Arc::new(Shared {
        endpoint,
        connector,
        settings: settings.clone(),
        max_message,
        notes,
        session: Mutex::new(None),
        renewed: Mutex::new(None),
        legacy_version: Mutex::new(None),
        params: Mutex::new(ParamHeaders::default()),
        idle: Mutex::new(Vec::new()),
        streams: Mutex::new(HashMap::new()),
        held: Mutex::new(HashMap::new()),
        inbox: Mutex::new(Some(inbox)),
        workers: Workers::new(),
        kept: Mutex::default(),
        renewal: Mutex::new(()),
        refused: Mutex::default(),
        closed: AtomicBool::new(false),
    })))
}

/// The carrier of one HTTP client.
struct HttpCarrier(Arc<Shared>);

impl Carrier for HttpCarrier {
    fn send(&self, line: Vec<u8>) -> Result<(), Error> {
        Shared::send(&self.0, line)
    }

    fn close(&self) {
        self.0.close();
    }

    /// While a request waits for its authorization (the user may take a
    /// while), the era probe is not given up: `Some(1)`.
    fn unread(&self) -> Option<usize> {
        let authorizer = self.0.settings.authorizer.as_ref()?;
        Some(usize::from(authorizer.is_authorizing()))
    }
}

/// What the POSTs of one client share.
struct Shared {
    endpoint: Endpoint,
    /// Opens its connections, plain or TLS (`stream`).
    connector: Connector,
    settings: HttpSettings,
    max_message: usize,
    notes: Notes,
    /// The legacy session the server assigned (`Mcp-Session-Id`).
    session: Mutex<Option<String>>,
    /// The session the answer to a renewal's `initialize` assigned, not
    /// yet adopted: `session::renew` adopts it once it is set up.
    renewed: Mutex<Option<String>>,
    /// The version a legacy server agreed to in `initialize`, sent as
    /// `MCP-Protocol-Version` from then on.
    legacy_version: Mutex<Option<String>>,
    /// The `x-mcp-header` marks of the tools listed so far.
    params: Mutex<ParamHeaders>,
    /// Kept-alive connections nobody is using.
    idle: Mutex<Vec<post::Kept>>,
    /// Each request in flight, by its id as JSON, with its connection's
    /// TCP socket once it has one: shut to cancel it (a read inside TLS
    /// ends too). A cancellation removes the entry,
    /// which tells the POST to report nothing.
    streams: Mutex<HashMap<String, Option<Arc<TcpStream>>>>,
    /// The streams of given-up requests read on for their late answer
    /// (`late`), at most `late::MAX_HELD`.
    held: Mutex<HashMap<String, late::Held>>,
    /// Where the server's messages go; `None` once closed (the link's
    /// reading ends when the last POST lets go of its clone).
    inbox: Mutex<Option<Inbox>>,
    workers: Arc<Workers>,
    /// What a legacy session was set up with, for a new one (`session`).
    kept: Mutex<session::Kept>,
    /// Held while a new session is started: one at a time.
    renewal: Mutex<()>,
    /// Limits the notes on messages no worker took (a server may cause
    /// many: `workers`).
    refused: Mutex<crate::note_limiter::NoteLimiter>,
    closed: AtomicBool,
}

/// The members of an outgoing message the headers need, borrowed.
#[derive(Deserialize)]
struct Outgoing<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// The members of an outgoing message's params the headers need.
#[derive(Deserialize, Default)]
struct OutgoingParams<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "taskId")]
    task_id: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "requestId")]
    request_id: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
}

/// The protocol version in a `_meta`.
#[derive(Deserialize)]
struct MetaVersion<'a> {
    #[serde(borrow, default, rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<Cow<'a, str>>,
}

impl OutgoingParams<'_> {
    /// The params of `outgoing`, as far as they can be read.
    fn of<'a>(outgoing: &Outgoing<'a>) -> OutgoingParams<'a> {
        (outgoing.params)
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default()
    }

    /// The protocol version `_meta` names, if any.
    fn version(&self) -> Option<String> {
        let meta: MetaVersion<'_> = serde_json::from_str(self.meta?.get()).ok()?;
        meta.version.map(Cow::into_owned)
    }
}

/// A member that is a string, read.
fn text<'a>(raw: Option<&'a RawValue>) -> Option<Cow<'a, str>> {
    serde_json::from_str(raw?.get()).ok()
}

impl Shared {
    /// Sends one message: on a worker (`post`), or, for the cancellation
    /// of a modern request, by closing its stream; a legacy session's
    /// `notifications/initialized` is POSTed here, so that nothing sent
    /// after it reaches the server first.
    fn send(shared: &Arc<Shared>, line: Vec<u8>) -> Result<(), Error> {
        if shared.is_closed() {
            return Err(Error::Disconnected);
        }
        let Ok(outgoing) = serde_json::from_slice::<Outgoing<'_>>(&line) else {
            shared
                .notes
                .problem("not sending a message that is not JSON over HTTP");
            return Ok(());
        };
        let params = OutgoingParams::of(&outgoing);
        // A request's id: an answer's (no method) names the server's
        // request, not one of the client's, and waits for nothing.
        let id = (outgoing.id)
            .filter(|_| outgoing.method.is_some())
            .map(|id| id.get().to_owned());
        let method = outgoing.method.as_deref().map(str::to_owned);
        let legacy = lock(&shared.legacy_version).is_some();
        if method.as_deref() == Some(method::NOTIFICATION_CANCELLED) {
            // Spec 2026-07-28 basic/transports/streamable-http: closing the
            // SSE response stream is the cancellation; no notification.
            // Read on if the link still hears a late answer (`late`).
            if let Some(target) = params.request_id {
                shared.close_stream(target.get());
            }
            if !legacy {
                return Ok(());
            }
        }
        shared.keep(method.as_deref(), &outgoing.params, &params);
        let headers = shared.headers(&outgoing, &params);
        let mut post = Post {
            line,
            id,
            method,
            headers,
            written: None,
        };
        if post.method.as_deref() == Some("notifications/initialized") {
            shared.post(post);
            if legacy {
                Shared::start_listening(shared);
            }
            return Ok(());
        }
        if let Some(id) = &post.id {
            // Before the worker takes it: a cancellation meanwhile is seen.
            lock(&shared.streams).insert(id.clone(), None);
            post.written = shared.write_ahead(&post.line, id, &post.headers);
        }
        let (posting, failing) = (Arc::clone(shared), Arc::clone(shared));
        let request = post.id.clone();
        let carried = request.clone();
        let job = Job::new(
            move || posting.post(post),
            move |what| failing.panicked(carried.as_deref(), what),
        );
        let submitted = match request {
            Some(_) => shared.workers.submit(job),
            // A notification or an answer: one of a bounded few (`workers`).
            None => shared.workers.submit_brief(job),
        };
        if submitted {
            return Ok(());
        }
        if let Some(id) = request {
            lock(&shared.streams).remove(&id);
        }
        if shared.is_closed() {
            return Err(Error::Disconnected);
        }
        lock(&shared.refused).problem(
            &shared.notes,
            "could not hand an HTTP message to a worker: no thread could be started, or 4,096 notifications and answers wait already",
        );
        Err(Error::Io(std::io::Error::other(
            "the client could not hand the message to a worker (no thread could be started, or too many notifications and answers wait): try again later",
        )))
    }

    /// The headers of one POST (spec 2026-07-28 "Standard Headers").
    fn headers(
        &self,
        outgoing: &Outgoing<'_>,
        params: &OutgoingParams<'_>,
    ) -> Vec<(String, String)> {
        let mut headers = vec![
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        let version = params
            .version()
            .or_else(|| lock(&self.legacy_version).clone());
        if let Some(version) = version {
            headers.push(("MCP-Protocol-Version".to_owned(), version));
        }
        if let Some(name) = &outgoing.method {
            headers.push(("Mcp-Method".to_owned(), encode_sentinel(name)));
            let source = match &**name {
                method::TOOLS_CALL | method::PROMPTS_GET => params.name,
                method::RESOURCES_READ => params.uri,
                // The Tasks extension names the task, for routing.
                method::TASKS_GET | method::TASKS_UPDATE | method::TASKS_CANCEL => params.task_id,
                _ => None,
            };
            if let Some(value) = text(source) {
                headers.push(("Mcp-Name".to_owned(), encode_sentinel(&value)));
                let marks = lock(&self.params);
                if name == method::TOOLS_CALL && marks.marked(&value) {
                    let arguments = (params.arguments)
                        .and_then(|a| serde_json::from_str::<Value>(a.get()).ok());
                    headers.extend(marks.headers(&value, arguments.as_ref()));
                }
            }
        }
        // A new session begins with initialize: it carries none.
        if outgoing.method.as_deref() != Some("initialize")
            && let Some(session) = lock(&self.session).clone()
        {
            headers.push(("Mcp-Session-Id".to_owned(), session));
        }
        headers.extend(self.settings.headers());
        headers
    }

    /// Whether the client closed (`close`).
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The inbox, while the client is open.
    fn inbox(&self) -> Option<Inbox> {
        lock(&self.inbox).clone()
    }

    /// Takes the version a legacy server agreed to from its `initialize`
    /// result.
    fn learn_legacy_version(&self, message: &[u8]) {
        #[derive(Deserialize)]
        struct Reply {
            result: Option<Agreed>,
        }
        #[derive(Deserialize)]
        struct Agreed {
            #[serde(rename = "protocolVersion")]
            protocol_version: String,
        }
        if let Ok(Reply {
            result: Some(agreed),
        }) = serde_json::from_slice(message)
        {
            *lock(&self.legacy_version) = Some(agreed.protocol_version);
        }
    }

    /// Ends the session (a `DELETE` with its id, spec 2025-11-25
    /// basic/transports "Session Management"), closes every stream still
    /// open, and lets the inbox go: the link's reading ends once every POST
    /// under way has ended.
    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.workers.close();
        self.end_session();
        for kept in lock(&self.idle).drain(..) {
            kept.end();
        }
        for (_, stream) in lock(&self.streams).drain() {
            let Some(stream) = stream else { continue };
            let _ = stream.shutdown(Shutdown::Both);
        }
        for (_, held) in lock(&self.held).drain() {
            held.shut();
        }
        lock(&self.inbox).take();
    }

    /// Ends the session, if one is open: taken out (whoever takes it ends
    /// it, once) and `DELETE`d. Called by `close`, after it marked the
    /// client closed; a renewal that finds the client closed before it
    /// adopts its new session ends that one itself (`session::renew`): a
    /// session adopted before `close` took it is ended by `close`, one not
    /// adopted by the renewal.
    fn end_session(&self) {
        let Some(session) = lock(&self.session).take() else {
            return;
        };
        self.delete_session(session);
    }

    /// `DELETE`s `session` (the server may refuse or be gone).
    fn delete_session(&self, session: String) {
        {
            let mut headers = vec![("Mcp-Session-Id".to_owned(), session)];
            if let Some(version) = lock(&self.legacy_version).clone() {
                headers.push(("MCP-Protocol-Version".to_owned(), version));
            }
            headers.extend(self.settings.headers());
            // The server may refuse (405: it does not let clients end
            // sessions) or be gone: either way the client is done with it.
            if let Ok(stream) = self.connector.connect(&self.endpoint, DELETE_TIMEOUT) {
                let _ = stream.socket().set_read_timeout(Some(DELETE_TIMEOUT));
                let _ = stream.socket().set_write_timeout(Some(DELETE_TIMEOUT));
                let mut conn = std::io::BufReader::new(stream);
                let written = exchange::write_request(
                    conn.get_mut(),
                    "DELETE",
                    &self.endpoint,
                    &headers,
                    b"",
                );
                if written.is_ok() {
                    let deadline = Instant::now() + DELETE_TIMEOUT;
                    let _ = exchange::read_head(&mut conn, false, Some(deadline));
                }
                conn.into_inner().end();
            }
        }
    }
}
