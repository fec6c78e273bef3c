//! The legacy front end: what a legacy client's messages go through before
//! the core, which knows one era (2026-07-28). One [`Front`] per
//! connection (on stdio, the reader's; over HTTP, each POST's and each
//! session's GET stream's).
//!
//! - It owns the session: `initialize` opens it, `logging/setLevel` and
//!   `resources/subscribe` change it, `notifications/initialized` marks it;
//!   it answers those requests (and `ping`) itself.
//! - A request of the session is turned into the core's shape: prepared
//!   with the request metadata the session stands for
//!   (`dispatch::prepare`), its work wrapped (`legacy::wrap`: the reply
//!   made a legacy one; a handler that needs input asks the client), then
//!   begun like any other (`ConnHandle::begin`). A modern request (with
//!   modern `_meta`) passes through untouched.
//! - The session's notifications (its resource updates, and list changes
//!   once initialized; untagged, as that era has them) come to it as to a
//!   connection of its own among the server's connections
//!   (`Connection::publish`), once a session is open.
//! - The server's requests to the client (asks, see `legacy::input`) are
//!   kept in its [`Asks`]; it routes the client's answers and
//!   cancellations there.
//!
//! The session is only read or replaced under its lock, never held while
//! acting on the connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::json;

use crate::incoming::{Incoming, Params, cancelled_id};
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::Inner;
use crate::server::conn::LineKind;
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::connections::Connection;
use crate::server::dispatch::{Prepared, prepare};
use crate::server::event::ServerEvent;
use crate::server::legacy::asks::Asks;
use crate::server::legacy::session::{
    LegacyRequest, LegacySession, initialize_result, session_request,
};
use crate::server::legacy::wrap::Wrap;
use crate::server::meta::{MetaView, legacy_progress_token};
use crate::server::reader::FrontEnd;
use crate::types::method;

/// A connection's legacy front end. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Front(Arc<Shared>);

struct Shared {
    inner: Arc<Inner>,
    conn: ConnHandle,
    /// Opened by `initialize` (or given, over HTTP); shared with the
    /// requests prepared under it.
    session: Mutex<Option<Arc<LegacySession>>>,
    /// A session is open: looked at without the lock, so that a modern
    /// client's requests take none.
    opened: AtomicBool,
    asks: Arc<Asks>,
    hearing: Mutex<Hearing>,
    /// What the access token of the HTTP request this front end serves
    /// allows (`Front::token_info`): its requests' handlers read it.
    token: std::sync::OnceLock<Arc<crate::server::request_meta::TokenInfo>>,
}

/// Whether a front end hears its session's notifications.
#[derive(Default)]
struct Hearing {
    /// Its key among the server's connections while it does.
    key: Option<u64>,
    /// They go out on another connection: never here.
    elsewhere: bool,
}

impl Front {
    /// The front end of `conn`.
    pub fn new(inner: &Arc<Inner>, conn: &ConnHandle) -> Front {
        Front(Arc::new(Shared {
            inner: Arc::clone(inner),
            conn: conn.clone(),
            session: Mutex::new(None),
            opened: AtomicBool::new(false),
            asks: Arc::new(Asks::new(conn)),
            hearing: Mutex::default(),
            token: std::sync::OnceLock::new(),
        }))
    }

    /// What the access token of the HTTP request this front end serves
    /// allows (set once, before its request): stamped on the metadata of
    /// the requests it prepares, as a modern request's is.
    #[cfg(feature = "http")]
    pub fn token_info(&self, token: Arc<crate::server::request_meta::TokenInfo>) {
        let _ = self.0.token.set(token);
    }

    /// The session, if one is open.
    pub fn session(&self) -> Option<Arc<LegacySession>> {
        lock(&self.0.session).clone()
    }

    /// Serves the connection under `session` from here on (over HTTP, a
    /// session comes from `Mcp-Session-Id`).
    pub fn set_session(&self, session: Arc<LegacySession>) {
        *lock(&self.0.session) = Some(session);
        self.0.opened.store(true, Ordering::Release);
    }

    /// The connection's asks (see `legacy::asks`): over HTTP a session's
    /// answers and cancellations reach them through its open POSTs.
    #[cfg(feature = "http")]
    pub fn asks(&self) -> &Arc<Asks> {
        &self.0.asks
    }

    /// From here on the connection hears the session's notifications (see
    /// the module docs), unless they go elsewhere; until the end.
    pub fn hear(&self) {
        let mut hearing = lock(&self.0.hearing);
        if hearing.key.is_none() && !hearing.elsewhere {
            let connection: Arc<dyn Connection> = self.0.clone();
            hearing.key = Some(self.0.inner.connections.connect(connection));
        }
    }

    /// The session's notifications go out another way (over HTTP, on the
    /// stream the sessions' listener picks): none here from now on,
    /// whatever comes.
    pub fn hear_none(&self) {
        let mut hearing = lock(&self.0.hearing);
        hearing.elsewhere = true;
        if let Some(key) = hearing.key.take() {
            self.0.inner.connections.disconnect(key);
        }
    }

    /// The end of the connection: it hears nothing more, and no ask waits
    /// (their handlers stop waiting).
    pub fn finish(&self) {
        self.hear_none();
        self.0.asks.close();
    }

    /// A request: one only the legacy era has, answered here; one of the
    /// session, begun in the core's shape; or (handed back) one for the
    /// core as it is: a modern one, or one sent before any session.
    fn request<'a>(
        &self,
        id: RequestId,
        method: std::borrow::Cow<'a, str>,
        params: Option<Params<'a>>,
        bytes: usize,
    ) -> Option<Incoming<'a>> {
        // Without a session, only `initialize` and `ping` may be the legacy
        // era's: the rest goes to the core as it is, unread here.
        let legacy_only = method == "initialize" || method == "ping";
        if !legacy_only && !self.0.opened.load(Ordering::Acquire) {
            return Some(Incoming::Request { id, method, params });
        }
        // Its era is its own shape (spec 2026-07-28 basic/versioning):
        // with modern `_meta` it is modern, even for a method only the
        // legacy era has (which the core then does not find). Params the
        // envelope cannot read get the core's error.
        let (modern, progress) = match params.as_ref().map(Params::fields) {
            Some(Err(_)) => (true, Ok(None)),
            fields => {
                let fields = fields.and_then(Result::ok).unwrap_or_default();
                let view = MetaView::new(fields.meta);
                (view.is_modern(), legacy_progress_token(&view))
            }
        };
        if modern {
            return Some(Incoming::Request { id, method, params });
        }
        let inner = &self.0.inner;
        let session = self.session();
        let text = params.as_ref().map_or("{}", |p| p.raw().get());
        if let Some(request) = session_request(inner, &method, text, session.as_deref()) {
            self.session_request(&id, request);
            return None;
        }
        // Before `initialize`, the core's: `_meta` is missing.
        let Some(session) = session else {
            return Some(Incoming::Request { id, method, params });
        };
        let wrap = Wrap::new(inner, &method, text, &session, &self.0.asks);
        let prepared = progress
            .map(|progress| {
                let mut meta = session.meta(progress);
                meta.token = self.0.token.get().cloned();
                meta
            })
            .and_then(|meta| prepare(inner, &method, params, Some(meta)))
            .map(|prepared| match prepared {
                Prepared::Run(runnable) => Prepared::Run(wrap.apply(runnable)),
                other => other,
            });
        let conn = &self.0.conn;
        if let Some(inline) = conn.begin(id, prepared, bytes) {
            conn.run_inline(inline);
        }
        None
    }

    /// A request only the legacy era has (or the one that opens a
    /// session): refused like any other request (`Conn::refusal`: an id in
    /// use, shutting down), or answered at once.
    fn session_request(&self, id: &RequestId, request: Result<LegacyRequest, ErrorObject>) {
        let inner = &self.0.inner;
        let max = inner.config.max_subscriptions;
        let opens = matches!(request, Ok(LegacyRequest::Initialize(_)));
        // Only a level change sets the level the session's requests read:
        // another request's copy of the session may be older than a level
        // set meanwhile (over HTTP, by another POST of the session).
        let sets_level = matches!(request, Ok(LegacyRequest::SetLevel(_)));
        // The session as it will be if the request is answered: a
        // request refused (an id in use, shutting down) changes nothing.
        // Its subscription change is made at once, and undone then.
        let (reply, changed, change) = match request {
            Ok(LegacyRequest::Initialize(session)) => {
                (Ok(initialize_result(inner, &session)), Some(*session), None)
            }
            Ok(other) => match self.session() {
                Some(session) => {
                    let mut changed = LegacySession::clone(&session);
                    let (reply, change) = changed.apply(other, max);
                    (reply, Some(changed), change)
                }
                None => (Ok(json!({})), None, None),
            },
            Err(error) => (Err(error), None, None),
        };
        let answered = self.0.conn.act(Sending::BeforeRead, |c| {
            c.lines += 1;
            if let Some(refusal) = c.refusal(id) {
                c.write_error(Some(id), &refusal);
                return false;
            }
            let mut line = Vec::with_capacity(256);
            match &reply {
                // Plain data into a Vec: encoding cannot fail.
                Ok(result) => drop(crate::jsonrpc::encode_result(&mut line, id, result)),
                Err(error) => crate::jsonrpc::encode_error(&mut line, Some(id), error),
            };
            let error = reply.as_ref().err().map(|e| e.code);
            c.write_line(line, LineKind::Response { error });
            true
        });
        match (answered, changed) {
            (true, Some(session)) => {
                if opens {
                    // No ask before its `notifications/initialized`.
                    self.0.asks.set_uninitialized(true);
                }
                if sets_level {
                    session.apply_level();
                }
                self.set_session(Arc::new(session));
                self.hear();
            }
            (false, Some(session)) => {
                if let Some(change) = change {
                    session.undo(change);
                }
            }
            _ => {}
        }
    }
}

impl FrontEnd for Front {
    fn take<'a>(&mut self, incoming: Incoming<'a>, bytes: usize) -> Option<Incoming<'a>> {
        match incoming {
            Incoming::Request { id, method, params } => self.request(id, method, params, bytes),
            Incoming::Notification { method, params } => {
                if method == method::NOTIFICATION_CANCELLED {
                    if let Some(id) = cancelled_id(params.as_ref()) {
                        self.0.asks.cancel(&id, Sending::BeforeRead);
                    }
                    return None;
                }
                if method == "notifications/initialized" {
                    if let Some(session) = lock(&self.0.session).as_mut() {
                        Arc::make_mut(session).initialized = true;
                        self.0.asks.set_uninitialized(false);
                    }
                    return None;
                }
                Some(Incoming::Notification { method, params })
            }
            Incoming::Response { id, reply } => match self.0.asks.answer(id.as_ref(), reply) {
                Ok(()) => None,
                Err(reply) => Some(Incoming::Response { id, reply }),
            },
            invalid @ Incoming::Invalid { .. } => Some(invalid),
        }
    }

    fn end(&mut self) {
        self.finish();
    }
}

impl Connection for Shared {
    /// A published event the session hears of (see
    /// `LegacySession::notification`), untagged.
    fn publish(&self, event: &ServerEvent) {
        let line = lock(&self.session)
            .as_ref()
            .and_then(|s| s.notification(event));
        if let Some(line) = line {
            self.conn.act(Sending::Now, |c| {
                c.write_line(line.into_bytes(), LineKind::Event)
            });
        }
    }

    /// The server stops: the client will answer no ask.
    fn stop(&self) {
        self.asks.close();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
