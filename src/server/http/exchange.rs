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
//!
//! The files, by job: this one takes a POST's message (a request, a
//! notification, a legacy client's answer) and writes the responses;
//! `request.rs` serves a request (its headers checked against its body,
//! its scopes, its dispatch on a connection of its own) and `watch.rs`
//! watches the socket while it runs.

mod request;
mod watch;

use std::cell::RefCell;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use super::body::{Body, status_for};
use super::open::OpenConnections;
use super::options::HttpOptions;
#[cfg(feature = "legacy")]
use super::sessions::Sessions;
use crate::http::{HttpRequest, write_head_answer, write_response};
#[cfg(feature = "legacy")]
use crate::incoming::Reply;
use crate::incoming::{Incoming, classify};
use crate::jsonrpc::{ErrorObject, RequestId, encode_error};
use crate::server::Inner;
#[cfg(feature = "legacy")]
use crate::server::request_meta::Owner;
use crate::server::request_meta::TokenInfo;
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
    /// The request being served is a `HEAD`: its answers carry no content
    /// (RFC 9110 section 9.3.2) and no `Content-Length`
    /// (`write_head_answer`), set before each request as `cors` is.
    pub head: std::cell::Cell<bool>,
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
        let written = if self.head.get() {
            write_head_answer(&mut socket, status, &all, keep_alive)
        } else {
            write_response(&mut socket, status, &all, body, keep_alive)
        };
        written.is_ok() && keep_alive
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
