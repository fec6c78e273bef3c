//! One POST: its JSON-RPC message, served as a connection of its own
//! whose output is the response body (see `body`). The message goes
//! through the same core as a stdio line (`reader::dispatch` on a fresh
//! `ConnHandle`): the same refusals, kernel, handlers, cancellation and
//! subscriptions, nothing copied.
//!
//! While the request runs, the thread that read it watches its socket:
//! the client closing it is the cancellation (spec 2026-07-28
//! basic/transports/streamable-http, "Cancellation"): `Conn::cancel` takes
//! the request out of the map and trips its token, and the body writes
//! nothing more. Not for a legacy request (2025-11-25 basic/transports: a
//! disconnection "SHOULD NOT be interpreted as the client cancelling its
//! request"; that era cancels with `notifications/cancelled`): it runs to
//! its end, its thread waiting, and what it writes goes nowhere
//! (`Body::outlive_client`). The watch waits for the response, and looks
//! at the socket every [`WATCH`]; it also sends the keep-alive comments of
//! a quiet stream, notices a stop, and cuts a stream whose token expired
//! (a listen: see [`Watched::Expired`]).
//!
//! A legacy client's POSTs that carry no request reach the requests of
//! its session on other connections (see `sessions`): a JSON-RPC response
//! answers the server's request on the stream of the POST that asked, and
//! `notifications/cancelled` cancels the POST serving that request.

use std::borrow::Cow;
use std::cell::RefCell;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::auth;
use super::body::{Body, status_for};
use super::mirror::{self, Era};
use super::open::OpenConnections;
use super::options::HttpOptions;
#[cfg(feature = "legacy")]
use super::sessions::Sessions;
use crate::http::{HttpRequest, write_response};
#[cfg(feature = "legacy")]
use crate::incoming::Reply;
use crate::incoming::{Incoming, Params, classify};
use crate::jsonrpc::{ErrorObject, RequestId, encode_error};
use crate::server::Inner;
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::conn::{End, Writer};
use crate::server::dispatch::prepare;
use crate::server::meta::MetaView;
use crate::server::reader;
#[cfg(feature = "legacy")]
use crate::server::request_meta::Owner;
use crate::server::request_meta::{RequestMeta, TokenInfo};
use crate::server::subscriptions::Followers;

/// How long the watch waits for the response before it looks at the
/// socket again: the longest a client's close, or a token's expiry, goes
/// unnoticed.
const WATCH: Duration = Duration::from_millis(50);

/// How [`Exchange::watch`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Watched {
    /// The response is complete, or never will be (the client went away,
    /// the server stopped, a write failed).
    Over,
    /// A legacy request's client went away, and its connection gave way
    /// at the cap to a new one: the caller cancels the request.
    GaveWay,
    /// The token the stream was opened with expired (`Body::end_at`): the
    /// stream is cut, the connection's sending side shut, and the
    /// connection ends. Spec 2026-07-28 basic/authorization: an expired
    /// token MUST get `401`, and a stream is no exception. It ends without
    /// a listen's final result, on purpose (basic/patterns/subscriptions:
    /// "a transport that closes without it indicates an unexpected
    /// disconnect, which the client MAY treat as a trigger to reconnect"):
    /// the client reconnects with a fresh token, or is answered `401`.
    Expired,
}

/// What the thread serving the connection needs for a POST.
pub(crate) struct Exchange<'a> {
    pub inner: &'a Arc<Inner>,
    pub options: &'a HttpOptions,
    pub socket: &'a TcpStream,
    #[cfg(feature = "legacy")]
    pub sessions: &'a Sessions,
    /// The CORS fields of the responses to the request being served
    /// (`guard::cors`; none unless a browser on an allowed origin sent
    /// it), set before each request: every answer carries them.
    pub cors: RefCell<Vec<(&'static str, String)>>,
    /// What the request's access token allows (`auth::authenticate`),
    /// set before each request when the server validates tokens: its
    /// handlers read it.
    pub token: RefCell<Option<Arc<TokenInfo>>>,
    /// The listener's open connections, and this one's key: a legacy
    /// request whose client went away learns there that its connection
    /// gave way at the cap (`open`).
    pub open: &'a OpenConnections,
    pub key: u64,
    /// How many of the listener's listens follow each task (`Site::followers`).
    pub followers: &'a Followers,
}

impl Exchange<'_> {
    /// Serves a POST whose body is read. Returns whether the connection
    /// may carry another request.
    pub fn post(&self, request: &HttpRequest) -> bool {
        let keep_alive = request.keep_alive();
        match classify(&request.body) {
            Incoming::Request { id, method, params } => self.request(request, id, method, params),
            Incoming::Notification { method, params } => {
                // 2025-11-25 "Session Management": a session the server
                // does not know is `404`, whatever the message.
                #[cfg(feature = "legacy")]
                if let Some(session) = self.legacy_session(request) {
                    let known = match crate::incoming::cancelled_id(params.as_ref()) {
                        Some(id) if method == crate::types::method::NOTIFICATION_CANCELLED => {
                            self.sessions.cancel((session, self.owner().as_ref()), &id)
                        }
                        _ => self.sessions.known(session, self.owner().as_ref()),
                    };
                    if let Err(unknown) = known {
                        return self.error_with(404, None, &unknown.error(), &[], keep_alive);
                    }
                }
                #[cfg(not(feature = "legacy"))]
                let _ = (method, params);
                // Spec 2026-07-28: an accepted notification is `202`, no
                // body. A modern request's cancellation is the closing of
                // its own stream; a legacy session's requests are found
                // through the session.
                self.respond(202, &[], b"", keep_alive)
            }
            Incoming::Response { id, reply } => {
                #[cfg(feature = "legacy")]
                if !self.modern_header(request) {
                    return self.answer(request, id, reply);
                }
                #[cfg(not(feature = "legacy"))]
                let _ = (id, reply);
                let error = ErrorObject::invalid_request(
                    "a client must not send responses over Streamable HTTP (2026-07-28): send requests and notifications only",
                );
                self.error(None, &error, keep_alive)
            }
            Incoming::Invalid { id, error } => self.error(id.as_ref(), &error, keep_alive),
        }
    }

    /// A legacy client's answer to one of the server's requests (see
    /// `sessions`): `202` (2025-11-25 basic/transports: an accepted
    /// response), also when it answers nothing open any more (an ask
    /// withdrawn meanwhile), or when the POST names no session, which no
    /// ask is ever sent without; `404` for a session that is not known.
    #[cfg(feature = "legacy")]
    fn answer(&self, request: &HttpRequest, id: Option<RequestId>, reply: Reply) -> bool {
        let keep_alive = request.keep_alive();
        let answered = match self.legacy_session(request) {
            Some(session) => {
                match (self.sessions).answer((session, self.owner().as_ref()), id.as_ref(), reply) {
                    Ok(answered) => answered,
                    Err(unknown) => {
                        return self.error_with(404, None, &unknown.error(), &[], keep_alive);
                    }
                }
            }
            None => false,
        };
        if !answered {
            let id = id.map_or_else(|| "null".to_owned(), |id| id.to_string());
            self.inner.trace(&format!(
                "ignoring a response (id {id}) from the client: it answers no open request of its session"
            ));
        }
        self.respond(202, &[], b"", keep_alive)
    }

    /// Whom the request's token stands for (its subject, else the client
    /// it was issued to, never taken for a subject of the same name): a
    /// legacy session it opens is bound to them (`Sessions`). `None`
    /// without a validated token.
    #[cfg(feature = "legacy")]
    pub(super) fn owner(&self) -> Option<Owner> {
        self.token.borrow().as_deref()?.owner()
    }

    /// The `Mcp-Session-Id` of a legacy client's POST.
    #[cfg(feature = "legacy")]
    fn legacy_session<'r>(&self, request: &'r HttpRequest) -> Option<&'r str> {
        if self.modern_header(request) {
            return None;
        }
        request.headers.get("mcp-session-id")
    }

    #[cfg(feature = "legacy")]
    fn modern_header(&self, request: &HttpRequest) -> bool {
        request
            .headers
            .get("mcp-protocol-version")
            .is_some_and(|v| crate::version::SUPPORTED_VERSIONS.contains(&v.trim()))
    }

    fn request(
        &self,
        request: &HttpRequest,
        id: RequestId,
        method: Cow<'_, str>,
        params: Option<Params<'_>>,
    ) -> bool {
        let keep_alive = request.keep_alive();
        let (era, mut meta) = match self.checked(request, &method, params.as_ref()) {
            Ok(checked) => checked,
            Err((status, error)) => {
                return self.error_with(status, Some(&id), &error, &[], keep_alive);
            }
        };
        let token = self.token.borrow().clone();
        // A listen ends when its token expires (`Watched::Expired`). Any
        // other request, authorized when it came, runs to its end.
        let listen = method == crate::types::method::SUBSCRIPTIONS_LISTEN;
        let ends_at = listen
            .then(|| token.as_ref().and_then(|info| info.expires_at))
            .flatten();
        if let (Some(protection), Some(info)) = (&self.options.protection, &token) {
            let operations = operations(&method, params.as_ref());
            if let Err(refusal) = auth::authorize_operation(protection, info, &operations) {
                let headers: Vec<(&str, &str)> = (refusal.headers.iter())
                    .map(|(n, v)| (*n, v.as_str()))
                    .collect();
                return self.error_with(
                    refusal.status,
                    Some(&id),
                    &refusal.error(),
                    &headers,
                    keep_alive,
                );
            }
        }
        if let Some(meta) = &mut meta {
            meta.token = token.clone();
        }
        let events = request.headers.lists("accept", "text/event-stream")
            || request.headers.lists("accept", "*/*");
        let Ok(socket) = self.socket.try_clone() else {
            let error = ErrorObject::internal_error(
                "the server is out of file descriptors: retry in a moment",
            );
            return self.error_with(503, Some(&id), &error, &[("Retry-After", "1")], false);
        };
        let body = self.body(socket, events, request);
        if matches!(era, Era::Legacy(_)) {
            body.outlive_client();
        }
        if let Some(at) = ends_at {
            body.end_at(at);
        }
        let (end_tx, end) = crossbeam_channel::unbounded();
        let conn = ConnHandle::new(self.inner, Writer::Lines(Box::new(body.clone())), end_tx);
        // Its listens count per task with the listener's others.
        conn.act(Sending::Now, |c| c.share_followers(self.followers));
        // A legacy POST goes through the legacy front end, with its session.
        #[cfg(feature = "legacy")]
        let legacy = match &era {
            Era::Legacy(version) => {
                let front = crate::server::legacy::Front::new(self.inner, &conn);
                if let Some(token) = &token {
                    front.token_info(Arc::clone(token));
                }
                // A session's notifications reach one of its streams
                // through the sessions' listener (`sessions`), never a
                // POST's front end on its own.
                front.hear_none();
                match (self.sessions).enter(
                    (&front, &conn),
                    &body,
                    request,
                    (&id, &method),
                    version,
                    token.as_deref(),
                ) {
                    Ok(session) => Some((front, session)),
                    Err(unknown) => {
                        return self.error_with(404, None, &unknown.error(), &[], keep_alive);
                    }
                }
            }
            Era::Modern => None,
        };
        #[cfg(not(feature = "legacy"))]
        let _ = era;
        let key = self.inner.connections.connect(conn.as_connection());
        let bytes = request.body.len();
        match meta {
            // A modern request, its metadata read once (`checked`): as
            // `reader::dispatch` begins a request, with that metadata.
            Some(meta) => {
                let prepared = prepare(self.inner, &method, params, Some(meta));
                if let Some(job) = conn.begin(id.clone(), prepared, bytes) {
                    conn.run_inline(job);
                }
            }
            None => {
                let incoming = Incoming::Request {
                    id: id.clone(),
                    method,
                    params,
                };
                #[cfg(feature = "legacy")]
                let incoming = match &legacy {
                    Some((front, _)) => reader::FrontEnd::take(&mut front.clone(), incoming, bytes),
                    None => Some(incoming),
                };
                #[cfg(not(feature = "legacy"))]
                let incoming = Some(incoming);
                if let Some(incoming) = incoming {
                    reader::dispatch(self.inner, &conn, incoming, bytes);
                }
            }
        }
        #[cfg(feature = "legacy")]
        if let Some((front, session)) = &legacy {
            self.sessions.opened(front, &body, session);
        }
        // A listen is a stream as a legacy session's GET stream is: at the
        // cap it may give way to a new connection (`open`), or clients
        // that open listens and stop reading them would lock every later
        // client out (review http8). Marked before its acknowledgment goes
        // out: a client that read it and connects again at the cap finds
        // it a stream (CI run 39: under load the new client came first
        // and was answered 503).
        if listen {
            self.open.streaming(self.key, true);
        }
        // A POST has no next line to read: what the dispatch held back for
        // the reader's next read goes out now (`reader::dispatch`).
        conn.send_held();
        let watched = self.watch(&conn, &body, &end, Some(&id));
        if listen {
            self.open.streaming(self.key, false);
        }
        // A legacy request whose client went away, cancelled for the room
        // its connection gave way to (`open`): its asks are withdrawn too.
        #[cfg(feature = "legacy")]
        if watched == Watched::GaveWay
            && let Some((front, _)) = &legacy
        {
            front.asks().cancel(&id, Sending::Now);
        }
        #[cfg(feature = "legacy")]
        let front = legacy.map(|(front, session)| {
            self.sessions.leave(session);
            front
        });
        // Nothing is in flight by now (answered or cancelled), unless the
        // server stopped: then what is left is answered `-32603`.
        let _ = conn.shut_down(false);
        #[cfg(feature = "legacy")]
        if let Some(front) = front {
            front.finish();
        }
        self.inner.connections.disconnect(key);
        body.complete() && keep_alive && watched != Watched::Expired
    }

    /// The era of a request, its headers checked against its body (see
    /// `mirror`), with a modern request's metadata (its `_meta` read once,
    /// here, for the kernel too); or the status and error that refuse it.
    fn checked(
        &self,
        request: &HttpRequest,
        method: &str,
        params: Option<&Params<'_>>,
    ) -> Result<(Era, Option<RequestMeta>), (u16, ErrorObject)> {
        let status = |error: ErrorObject| (status_for(Some(error.code)), error);
        let fields = match mirror::members(params) {
            Ok(fields) => fields,
            // Params the kernel cannot read either (a member twice): it
            // refuses them in both eras (`-32602`), so a legacy request
            // gets its era's answer there; a modern one is refused here.
            Err(error) => {
                return match mirror::era(&request.headers, &MetaView::new(None)) {
                    Ok(Era::Legacy(version)) => Ok((Era::Legacy(version), None)),
                    _ => Err(status(error)),
                };
            }
        };
        let meta = MetaView::new(fields.meta);
        let era = mirror::era(&request.headers, &meta).map_err(status)?;
        if era != Era::Modern {
            return Ok((era, None));
        }
        // Spec 2026-07-28: `Mcp-Session-Id` is ignored, never echoed.
        mirror::check(self.inner, &request.headers, method, &fields).map_err(status)?;
        let meta = mirror::check_meta(&meta).map_err(|error| (400, error))?;
        Ok((era, Some(meta)))
    }

    /// Waits for the response to be complete (woken by it, so a client
    /// that reads to the connection's close gets it at once), looking at
    /// the socket every [`WATCH`]: a close cancels request `id` (spec
    /// 2026-07-28), unless the request outlives its client (a legacy one,
    /// `Body::outlive_client`), which then runs to its end with nothing
    /// more written, until its connection gives way at the cap to a new
    /// one (`open`: a client gone holds no place): then this returns
    /// [`Watched::GaveWay`], and the caller cancels it. A stream that
    /// answers no request (`id` is `None`, see `stream`) ends at a stop,
    /// with no grace period. A look a signal interrupted is no news of the
    /// client (a process stopped and continued gets `EINTR`); a request
    /// given up on an error shuts its socket down, so that no client waits
    /// on a stream left open without its end. A stream whose token expired
    /// (`Body::end_at`) is cut: nothing more is written, request `id` is
    /// cancelled (a listen leaves its subscriptions), and the socket's
    /// sending side is shut, so the client reads the end at once
    /// ([`Watched::Expired`]).
    pub(super) fn watch(
        &self,
        conn: &ConnHandle,
        body: &Body,
        end: &Receiver<End>,
        id: Option<&RequestId>,
    ) -> Watched {
        let mut next_comment = crate::deadline::from_now(self.options.keep_alive_interval);
        let mut grace_until: Option<Instant> = None;
        let mut peek = [0u8; 1];
        let mut client_gone = false;
        // From here on a client that went away leaves its place at the cap
        // (`open`), not while an inline handler ran on this thread.
        self.open.watching(self.key);
        while !body.wait_done(WATCH) {
            match end.try_recv() {
                Ok(End::Stop) if id.is_none() => return Watched::Over,
                Ok(End::Stop) if grace_until.is_none() => {
                    // What the stop wrote (a listen's final result) is
                    // this thread's to send (`Sending::AtShutdown`).
                    conn.send_held();
                    grace_until = Some(crate::deadline::from_now(self.inner.config.shutdown_grace));
                }
                Ok(End::OutputFailed) => break,
                _ => {}
            }
            let now = Instant::now();
            if grace_until.is_some_and(|at| now >= at) {
                // `ConnHandle::shut_down` (by the caller) answers it `-32603`.
                return Watched::Over;
            }
            if body.expired() {
                body.cancel();
                if let Some(id) = id {
                    conn.act(Sending::Now, |c| c.cancel(id));
                }
                let _ = self.socket.shutdown(std::net::Shutdown::Write);
                return Watched::Expired;
            }
            if client_gone {
                if self.open.gave_way(self.key) {
                    return Watched::GaveWay;
                }
                continue;
            }
            if now >= next_comment {
                body.keep_alive();
                next_comment = crate::deadline::after(now, self.options.keep_alive_interval);
            }
            // A short look (the body's writer shares the socket, so it
            // stays blocking): a read timeout of 1 µs, which the kernel
            // rounds up to a clock tick (4-16 ms here). Only a response
            // that takes longer than `WATCH` can complete during one.
            let _ = self.socket.set_read_timeout(Some(Duration::from_micros(1)));
            match self.socket.peek(&mut peek) {
                Ok(0) if id.is_some() && body.outlives_client() => {
                    // A legacy request goes on; nothing more is written.
                    body.detach();
                    client_gone = true;
                }
                Ok(0) => {
                    // The client closed the stream: the request is
                    // cancelled, and nothing more is written for it.
                    body.cancel();
                    if let Some(id) = id {
                        conn.act(Sending::Now, |c| c.cancel(id));
                    }
                    return Watched::Over;
                }
                // The next request arrived early (pipelining): the wait
                // for the response goes on.
                Ok(_) => {}
                // Nothing yet; or a signal: a read with a timeout is not
                // restarted after one, and a process stopped (SIGSTOP) and
                // continued gets `EINTR` here (signal(7)). The client is
                // still there: a listen taken for gone then was cancelled,
                // its stream left open without an end (issue 48).
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(_) if id.is_some() && body.outlives_client() => {
                    body.detach();
                    client_gone = true;
                }
                Err(_) => {
                    body.cancel();
                    if let Some(id) = id {
                        conn.act(Sending::Now, |c| c.cancel(id));
                    }
                    // Taken for gone, so the stream ends: never left open
                    // without its end, for a client that may still read.
                    let _ = self.socket.shutdown(std::net::Shutdown::Both);
                    return Watched::Over;
                }
            }
        }
        Watched::Over
    }

    /// Answers with a JSON-RPC error, its status from its code.
    pub(crate) fn error(
        &self,
        id: Option<&RequestId>,
        error: &ErrorObject,
        keep_alive: bool,
    ) -> bool {
        let status = status_for(Some(error.code));
        self.error_with(status, id, error, &[], keep_alive)
    }

    /// Answers `status` with a JSON-RPC error body.
    pub(crate) fn error_with(
        &self,
        status: u16,
        id: Option<&RequestId>,
        error: &ErrorObject,
        headers: &[(&str, &str)],
        keep_alive: bool,
    ) -> bool {
        let mut body = Vec::with_capacity(128);
        encode_error(&mut body, id, error);
        let mut all = headers.to_vec();
        all.push(("Content-Type", "application/json"));
        self.respond(status, &all, &body, keep_alive)
    }

    /// Answers a whole response (with the request's CORS fields).
    /// Returns whether the connection goes on.
    pub(crate) fn respond(
        &self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
        keep_alive: bool,
    ) -> bool {
        let cors = self.cors.borrow();
        let mut all = headers.to_vec();
        all.extend(cors.iter().map(|(n, v)| (*n, v.as_str())));
        let mut socket = self.socket;
        write_response(&mut socket, status, &all, body, keep_alive).is_ok() && keep_alive
    }

    /// The body of a response to `request` on `socket` (an event stream
    /// if `events` allows), with the request's CORS fields.
    pub(super) fn body(&self, socket: TcpStream, events: bool, request: &HttpRequest) -> Body {
        let body = Body::new(socket, events, request.http10, request.keep_alive());
        for (name, value) in self.cors.borrow().iter() {
            body.header(name, value.clone());
        }
        body
    }
}

/// The operations a request is held to the scopes of
/// (`ProtectedResource::require_scopes_for`): its own, with what it
/// names ([`operation_name`]), and those of what it reaches besides: a
/// `completion/complete` draws on the prompt its `ref` names
/// (`prompts/get`) or the resource template (`resources/read` of the
/// template's URI); a `subscriptions/listen` hears of each URI of its
/// `resourceSubscriptions`, and a legacy `resources/subscribe` of its
/// `uri` (`resources/read`). Params that cannot be read add nothing:
/// dispatch refuses them as well (`-32602`).
fn operations(method: &str, params: Option<&Params<'_>>) -> Vec<(String, Option<String>)> {
    use crate::types::{
        CompleteRequestParams, CompletionReference, SubscriptionsListenRequestParams,
    };
    let mut operations = vec![(method.to_owned(), operation_name(method, params))];
    let Some(params) = params else {
        return operations;
    };
    // Read with the types dispatch reads them with: what is found here
    // is what the handler is given.
    let raw = params.raw().get();
    match method {
        "completion/complete" => {
            if let Ok(complete) = serde_json::from_str::<CompleteRequestParams>(raw) {
                operations.push(match complete.reference {
                    CompletionReference::Prompt(p) => ("prompts/get".into(), Some(p.name)),
                    CompletionReference::Resource(r) => ("resources/read".into(), Some(r.uri)),
                });
            }
        }
        "subscriptions/listen" => {
            if let Ok(listen) = serde_json::from_str::<SubscriptionsListenRequestParams>(raw) {
                for uri in listen
                    .notifications
                    .resource_subscriptions
                    .unwrap_or_default()
                {
                    operations.push(("resources/read".into(), Some(uri)));
                }
            }
        }
        "resources/subscribe" => {
            let uri = operations[0].1.clone();
            operations.push(("resources/read".into(), uri));
        }
        _ => {}
    }
    operations
}

/// What a request names, for the scopes an operation needs
/// (`ProtectedResource::require_scopes_for`): a `resources/read`'s (or
/// subscribe's) `uri`, any other's `name` (a tool's, a prompt's).
fn operation_name(method: &str, params: Option<&Params<'_>>) -> Option<String> {
    let fields = params?.fields().ok()?;
    let raw = match method {
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => fields.uri,
        _ => fields.name,
    }?;
    serde_json::from_str(raw.get()).ok()
}
