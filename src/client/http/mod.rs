//! The client over Streamable HTTP (spec 2026-07-28
//! basic/transports/streamable-http; 2025-11-25 basic/transports for a
//! legacy server): a byte-stream pair for the ordinary [`Link`], so that
//! routing, MRTR, tasks, progress, subscriptions and the era probe stay
//! one copy for stdio and HTTP.
//!
//! ```text
//! link writer ──► HttpInput: one line = one message ──► a POST on a pooled connection
//!                                                        (a thread per request in flight)
//! POST response: a JSON body, or each SSE `data:` event ──► one line each ──► link reader
//! ```
//!
//! Why a byte-stream pair and not a transport trait under the link: the
//! link already owns every rule about what a line means; HTTP only
//! decides how a line travels. The bridge reads no more of a message than
//! its `id`, `method`, `params.name`/`params.uri`, and the protocol version,
//! which it needs for the headers.
//!
//! Cancellation: in the modern era closing a request's response stream is
//! the cancellation, so the link's `notifications/cancelled` closes that
//! connection instead of being posted; a legacy server gets it POSTed (and
//! its stream is closed too). An answer that is not JSON-RPC (a `4xx` or
//! `5xx` with a text body, a refused connection) becomes a JSON-RPC error
//! for the request that caused it, so the era probe and every caller see it
//! the way they would on stdio. A response stream that ends without the
//! answer is an error for its request at once. Sessions (legacy): an
//! `Mcp-Session-Id` the server assigns is sent back on every later
//! request, and a `DELETE` ends it when the client closes. A legacy
//! server also gets the GET streams of its era (`get_stream`): the
//! standalone one, opened once initialized, for what belongs to no request,
//! and the resumption of a request's stream that ended early.

mod exchange;
mod get_stream;
mod messages;
mod params;
mod relist;
mod settings;
mod url;

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{self, BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::Sender;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::client::notes::Notes;
use crate::error::Error;
use crate::http::encode_sentinel;
use crate::jsonrpc::error_code as rpc_code;
use crate::sync::lock;
use crate::types::{meta_key, method};
use exchange::{Body, Connection, Cursor, Head};
pub(crate) use messages::no_answer;
use messages::{
    Answer, Messages, answer_to, error_line, is_rpc_error, one_line, status_error, with_id,
};
use params::ParamHeaders;
pub use settings::HeaderSource;
pub(crate) use settings::HttpSettings;
use url::Endpoint;

/// The writing side of [`open`]'s pair.
pub(crate) type HttpWriter = Box<dyn Write + Send>;

/// How many idle connections the pool keeps; a request finds one there or
/// opens its own, so this bounds idle sockets, not concurrency.
const IDLE_CONNECTIONS: usize = 8;

/// How long a `DELETE` of the session may take when the client closes.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// Opens the byte-stream pair of an HTTP connection to `url`: the reader
/// yields the server's messages, one per line; every line written is
/// POSTed.
pub(crate) fn open(
    url: &str,
    settings: &HttpSettings,
    max_message: usize,
    notes: Notes,
) -> Result<(Box<dyn io::BufRead + Send>, HttpWriter), Error> {
    let endpoint = Endpoint::parse(url)?;
    let (tx, rx) = crossbeam_channel::unbounded();
    let shared = Arc::new(Shared {
        endpoint,
        settings: settings.clone(),
        max_message,
        notes,
        session: Mutex::new(None),
        legacy_version: Mutex::new(None),
        params: Mutex::new(ParamHeaders::default()),
        idle: Mutex::new(Vec::new()),
        streams: Mutex::new(HashMap::new()),
        to_reader: Mutex::new(Some(tx)),
        closed: AtomicBool::new(false),
    });
    let reader = BufReader::new(Messages {
        rx,
        current: Vec::new(),
        at: 0,
    });
    let writer = HttpInput {
        shared,
        buffer: Vec::new(),
    };
    Ok((Box::new(reader), Box::new(writer)))
}

/// What the POSTs of one client share.
struct Shared {
    endpoint: Endpoint,
    settings: HttpSettings,
    max_message: usize,
    notes: Notes,
    /// The legacy session the server assigned (`Mcp-Session-Id`).
    session: Mutex<Option<String>>,
    /// The version a legacy server agreed to in `initialize`, sent as
    /// `MCP-Protocol-Version` from then on.
    legacy_version: Mutex<Option<String>>,
    /// The `x-mcp-header` marks of the tools listed so far.
    params: Mutex<ParamHeaders>,
    /// Kept-alive connections nobody is using.
    idle: Mutex<Vec<Connection>>,
    /// Each request in flight, by its id as JSON, with its connection once
    /// it has one: closed to cancel it. A cancellation removes the entry,
    /// which tells the POST's thread to report nothing.
    streams: Mutex<HashMap<String, Option<TcpStream>>>,
    /// Where messages for the link's reader go; `None` once closed, and
    /// the reader sees its end when the last POST thread drops its clone.
    to_reader: Mutex<Option<Sender<Vec<u8>>>>,
    closed: AtomicBool,
}

/// The fields of an outgoing message the headers need.
#[derive(Deserialize)]
struct Outgoing<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<OutgoingParams>,
}

#[derive(Deserialize)]
struct OutgoingParams {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    uri: Option<Value>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default, rename = "taskId")]
    task_id: Option<Value>,
    #[serde(default, rename = "requestId")]
    request_id: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<serde_json::Map<String, Value>>,
}

/// The link's input: each complete line is one message to POST.
struct HttpInput {
    shared: Arc<Shared>,
    buffer: Vec<u8>,
}

impl Write for HttpInput {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.shared.is_closed() {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        self.buffer.extend_from_slice(bytes);
        while let Some(at) = memchr::memchr(b'\n', &self.buffer) {
            let line: Vec<u8> = self.buffer.drain(..=at).take(at).collect();
            if !line.trim_ascii().is_empty() {
                Shared::send(&self.shared, line);
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for HttpInput {
    /// The link closed its input (the client closes): end the session,
    /// close every stream, and let the reader see its end.
    fn drop(&mut self) {
        self.shared.close();
    }
}

impl Shared {
    /// Sends one message: a POST on a thread of its own, or, for the
    /// cancellation of a modern request, the close of its stream.
    fn send(shared: &Arc<Shared>, line: Vec<u8>) {
        let Ok(outgoing) = serde_json::from_slice::<Outgoing<'_>>(&line) else {
            shared
                .notes
                .problem("not sending a message that is not JSON over HTTP");
            return;
        };
        let id = outgoing.id.map(|id| id.get().to_owned());
        let method = outgoing.method.clone();
        let legacy = lock(&shared.legacy_version).is_some();
        if method.as_deref() == Some(method::NOTIFICATION_CANCELLED) {
            let target = outgoing
                .params
                .as_ref()
                .and_then(|p| p.request_id.as_ref())
                .map(Value::to_string);
            // Spec 2026-07-28 basic/transports/streamable-http: closing the
            // SSE response stream is the cancellation; no notification.
            if let Some(Some(stream)) = target.and_then(|t| lock(&shared.streams).remove(&t)) {
                let _ = stream.shutdown(Shutdown::Both);
            }
            if !legacy {
                return;
            }
        }
        let headers = shared.headers(&outgoing);
        let Some(to_reader) = lock(&shared.to_reader).clone() else {
            return;
        };
        // A notification or a response is answered at once (`202`): POSTed
        // here, on the link's writer thread, so they keep their order with
        // what follows (`notifications/initialized` before the first
        // request). A request may stream for long: a thread of its own.
        if outgoing.method.is_none() || id.is_none() {
            let initialized = method.as_deref() == Some("notifications/initialized");
            shared.post(&line, None, method, &headers, &to_reader);
            if initialized && legacy {
                Shared::start_listening(shared);
            }
            return;
        }
        let posting = Arc::clone(shared);
        let started = thread::Builder::new()
            .name("mcp-client-http".into())
            .spawn(move || posting.post(&line, id, method, &headers, &to_reader));
        if started.is_err() {
            shared
                .notes
                .problem("could not start a thread for an HTTP request");
        }
    }

    /// The headers of one POST (spec 2026-07-28 "Standard Headers").
    fn headers(&self, outgoing: &Outgoing<'_>) -> Vec<(String, String)> {
        let mut headers = vec![
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        let params = outgoing.params.as_ref();
        let version = params
            .and_then(|p| p.meta.as_ref())
            .and_then(|m| m.get(meta_key::PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| lock(&self.legacy_version).clone());
        if let Some(version) = version {
            headers.push(("MCP-Protocol-Version".to_owned(), version));
        }
        if let Some(name) = &outgoing.method {
            headers.push(("Mcp-Method".to_owned(), encode_sentinel(name)));
            let source = match name.as_str() {
                method::TOOLS_CALL | method::PROMPTS_GET => params.and_then(|p| p.name.as_ref()),
                method::RESOURCES_READ => params.and_then(|p| p.uri.as_ref()),
                // The Tasks extension names the task, for routing.
                method::TASKS_GET | method::TASKS_UPDATE | method::TASKS_CANCEL => {
                    params.and_then(|p| p.task_id.as_ref())
                }
                _ => None,
            };
            if let Some(value) = source.and_then(Value::as_str) {
                headers.push(("Mcp-Name".to_owned(), encode_sentinel(value)));
                if name == method::TOOLS_CALL {
                    let arguments = params.and_then(|p| p.arguments.as_ref());
                    headers.extend(lock(&self.params).headers(value, arguments));
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

    /// One POST and its whole answer, each message of which goes to the
    /// link's reader. Failures become an error for the request (if it is
    /// one), and so does a stream that ends without the answer, unless a
    /// legacy server's stream can be resumed (`get_stream`); nothing is
    /// reported for a request cancelled meanwhile.
    fn post(
        &self,
        line: &[u8],
        id: Option<String>,
        method: Option<String>,
        headers: &[(String, String)],
        to_reader: &Sender<Vec<u8>>,
    ) {
        if let Some(id) = &id {
            lock(&self.streams).insert(id.clone(), None);
        }
        let answered = Cell::new(false);
        // A tools/call refused for its headers is held back, once: the
        // tools are listed again and the call retried (`relist`).
        let hold_mismatch = Cell::new(method.as_deref() == Some(method::TOOLS_CALL));
        let mismatched = Cell::new(false);
        let mut deliver = |message: Vec<u8>| {
            match id.as_deref().and_then(|id| answer_to(&message, id)) {
                Some(Answer::Error(Some(code)))
                    if hold_mismatch.get() && code == i64::from(rpc_code::HEADER_MISMATCH) =>
                {
                    mismatched.set(true);
                    return true;
                }
                Some(_) => answered.set(true),
                None => {}
            }
            let message = match method.as_deref() {
                Some("initialize") => {
                    self.learn_legacy_version(&message);
                    message
                }
                Some(method::TOOLS_LIST) => {
                    let notes = &self.notes;
                    lock(&self.params).learn(message, &mut |tool, why| {
                        notes.problem(&format!(
                            "tools/list: left out the tool {tool:?}: {why} (spec: Streamable HTTP, Custom Headers from Tool Parameters)"
                        ))
                    })
                }
                _ => message,
            };
            to_reader.send(one_line(message)).is_ok()
        };
        let mut cursor = Cursor::default();
        let mut res = self.exchange(
            "POST",
            line,
            id.as_deref(),
            headers,
            &mut cursor,
            &mut deliver,
        );
        if mismatched.get() {
            hold_mismatch.set(false);
            cursor = Cursor::default();
            res =
                self.retry_with_new_marks(line, id.as_deref(), headers, &mut cursor, &mut deliver);
        }
        if let (Ok(()), Some(id), false) = (&res, &id, answered.get()) {
            res = self.unanswered(id, &mut cursor, &answered, &mut deliver);
        }
        let cancelled = match &id {
            Some(id) => lock(&self.streams).remove(id).is_none(),
            None => false,
        };
        if let (Err(why), Some(id), false) = (res, &id, cancelled || self.is_closed()) {
            let _ = to_reader.send(error_line(id, &why));
        }
    }

    /// Sends one request and hands each message of the answer to
    /// `deliver`. `Err` says, in one line, why there is no usable answer.
    fn exchange(
        &self,
        verb: &str,
        body: &[u8],
        id: Option<&str>,
        headers: &[(String, String)],
        cursor: &mut Cursor,
        mut deliver: impl FnMut(Vec<u8>) -> bool,
    ) -> Result<(), String> {
        let url = format!("http://{}{}", self.endpoint.authority, self.endpoint.target);
        let initialize = headers
            .iter()
            .any(|(n, v)| n == "Mcp-Method" && v == "initialize");
        let (mut conn, head) = self.start(verb, body, id, headers)?;
        // Spec 2025-11-25 basic/transports "Session Management": the
        // session is the one the answer to a (successful) initialize
        // assigns; the Python SDK also names one on refusals.
        let assigned = (200..300).contains(&head.status) && initialize;
        if let Some(session) = head.headers.get("mcp-session-id").filter(|_| assigned) {
            let mut slot = lock(&self.session);
            if slot.as_deref() != Some(session) {
                *slot = Some(session.to_owned());
            }
        }
        let mut body = Body::new(&mut conn, &head);
        let read = if !(200..300).contains(&head.status) {
            let messages = exchange::read_json(&mut body, self.max_message).unwrap_or_default();
            let rpc = messages.into_iter().find(|m| is_rpc_error(m));
            match (rpc, id) {
                (Some(message), Some(id)) => {
                    deliver(with_id(message, id));
                    Ok(())
                }
                _ => Err(status_error(&head, &url)),
            }
        } else if head.is_event_stream() {
            exchange::read_events(&mut body, self.max_message, cursor, &mut deliver)
                .map_err(|e| format!("the event stream from {url} broke: {e}"))
        } else if head.status == 202 || head.status == 204 {
            Ok(())
        } else {
            match exchange::read_json(&mut body, self.max_message) {
                Ok(messages) => {
                    for message in messages {
                        deliver(message);
                    }
                    Ok(())
                }
                Err(e) => Err(format!("the answer from {url} could not be read: {e}")),
            }
        };
        let reusable = body.is_done() && head.keeps_alive();
        if reusable && !self.is_closed() {
            let mut idle = lock(&self.idle);
            if idle.len() < IDLE_CONNECTIONS {
                idle.push(conn);
            }
        }
        read
    }

    /// Writes the request on an idle connection or a new one, and reads the
    /// answer's head. A kept-alive connection the server closed meanwhile
    /// is replaced by a new one, once.
    fn start(
        &self,
        verb: &str,
        body: &[u8],
        id: Option<&str>,
        headers: &[(String, String)],
    ) -> Result<(Connection, Head), String> {
        let url = format!("http://{}{}", self.endpoint.authority, self.endpoint.target);
        let mut reused = lock(&self.idle).pop();
        loop {
            let was_reused = reused.is_some();
            let mut conn = match reused.take() {
                Some(conn) => conn,
                None => TcpStream::connect(&self.endpoint.authority)
                    .map(BufReader::new)
                    .map_err(|e| format!("could not connect to {url}: {e}"))?,
            };
            let _ = conn.get_ref().set_nodelay(true);
            if let (Some(id), Ok(stream)) = (id, conn.get_ref().try_clone()) {
                match lock(&self.streams).get_mut(id) {
                    Some(slot) => *slot = Some(stream),
                    // Cancelled before it was sent.
                    None => return Err("cancelled".into()),
                }
            }
            let written =
                exchange::write_request(conn.get_mut(), verb, &self.endpoint, headers, body);
            let head = match written {
                Ok(()) => exchange::read_head(&mut conn, verb == "HEAD"),
                Err(e) => Err(e),
            };
            match head {
                Ok(Some(head)) => return Ok((conn, head)),
                Ok(None) | Err(_) if was_reused => continue,
                Ok(None) => return Err(format!("{url} closed the connection without an answer")),
                Err(e) => return Err(format!("the request to {url} failed: {e}")),
            }
        }
    }

    /// Whether the client closed (`close`).
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
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
    /// open, and drops the reader's channel.
    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(session) = lock(&self.session).clone() {
            let mut headers = vec![("Mcp-Session-Id".to_owned(), session)];
            if let Some(version) = lock(&self.legacy_version).clone() {
                headers.push(("MCP-Protocol-Version".to_owned(), version));
            }
            headers.extend(self.settings.headers());
            // The server may refuse (405: it does not let clients end
            // sessions) or be gone: either way the client is done with it.
            if let Ok(mut stream) = TcpStream::connect(&self.endpoint.authority) {
                let _ = stream.set_read_timeout(Some(DELETE_TIMEOUT));
                let _ = stream.set_write_timeout(Some(DELETE_TIMEOUT));
                if exchange::write_request(&mut stream, "DELETE", &self.endpoint, &headers, b"")
                    .is_ok()
                {
                    let mut conn = BufReader::new(stream);
                    let _ = exchange::read_head(&mut conn, false);
                }
            }
        }
        lock(&self.idle).clear();
        for (_, stream) in lock(&self.streams).drain() {
            let Some(stream) = stream else { continue };
            let _ = stream.shutdown(Shutdown::Both);
        }
        lock(&self.to_reader).take();
    }
}
