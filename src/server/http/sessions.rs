//! The legacy era over HTTP (2025-11-25 basic/transports, "Streamable
//! HTTP"): `initialize` over POST opens a session whose id goes back in
//! `Mcp-Session-Id`; a later POST that names it is served under it (its
//! version, capabilities and log level), and `DELETE` ends it (the
//! requests still served under it are cancelled). A POST with
//! no session id is served statelessly, under a session made up from its
//! `MCP-Protocol-Version` header (2025-03-26 when there is none) with no
//! client capabilities.
//!
//! The server's own requests (elicitation, sampling, roots, see
//! `legacy::input`) go out on the stream of the POST whose handler asks,
//! and the client answers each with a POST of its own, a JSON-RPC
//! response carrying the same `Mcp-Session-Id` (answered `202`). So the
//! session keeps its open POSTs, each with its connection's legacy front
//! end (`legacy::Front`): an answer goes to the one that asked
//! (`Front::answer`, the rule that an answer goes to its ask), and a
//! `notifications/cancelled` POST to the one serving that request
//! (`Front::cancel`, the same cancellation as on stdio; its stream then
//! ends without a reply). Ask ids come from one
//! counter of the process (`legacy::input`), so no two POSTs of a session
//! ever hold the same one. Why the open POSTs and not a table of ask ids:
//! each front end already keeps its asks, and a second table would have
//! to follow every ask, answer, withdrawal and cancellation of theirs; a
//! session has a handful of POSTs open at a time, and the answer is looked
//! for among them.
//!
//! A POST served statelessly (no `Mcp-Session-Id`) cannot be asked
//! anything: an answer would arrive on another connection with nothing to
//! say which request it belongs to, and routing by ask id across the whole
//! listener would let any client answer any other client's asks. Such a
//! POST has no client capabilities, so its handler is told the client
//! cannot answer (`-32021` for a handler that needs input). The same goes
//! for a POST whose `Accept` lacks `text/event-stream`: an ask could not
//! reach it, so it runs without the session's elicitation, sampling and
//! roots capabilities.
//!
//! Sessions are bounded in number (`HttpOptions::max_sessions`) and each
//! in size (`legacy::session`: 64 KiB of `initialize` params, 256 KiB of
//! subscribed URIs; what may be large is shared between a session's
//! copies, not copied on each change, and the subscriptions are one set
//! that a `resources/subscribe` changes by its URI alone), and together
//! in bytes (`HttpOptions::max_session_bytes`: each session's `initialize`
//! params and URIs charged to one `legacy::session::Budget`). Past the
//! number, or the bytes, a new session makes sessions give way
//! ([`Store::evict`]): those that never did anything after their
//! `initialize` first, so that a flood of `initialize` POSTs pushes out
//! only its own kind, not the sessions in use; a session past its share of
//! the bytes subscribes to no more once they are all taken.
//!
//! What the server publishes reaches each session on one stream only
//! (2025-11-25 "Multiple Connections": the server MUST NOT send a message
//! on more than one): the sessions hear it as one connection of the
//! server's connections ([`Sessions::listener`]), which picks one stream
//! for each session that hears it. The session's GET stream (2025-11-25
//! "Listening for Messages from the Server"; one per session, a new one
//! ends the last; a connection of its own, `http::stream`) when it has
//! one: its list changes and resource updates go there. Without one, a
//! resource update goes on the stream of the session's newest POST still
//! open that takes an event stream and whose token has not expired
//! (whichever request published it: the listener does not know which
//! did; a POST whose token expired carries its own request's progress and
//! result only). What a legacy HTTP client does not get: resumable
//! streams.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime};

use super::body::Body;
use crate::http::HttpRequest;
use crate::incoming::Reply;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::conn::LineKind;
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::connections::Connection;
use crate::server::event::ServerEvent;
use crate::server::legacy::Front;
use crate::server::legacy::session::{Budget, LegacySession, Subscribed};
use crate::server::request_meta::{Owner, TokenInfo};

/// The legacy methods that change the session they run under
/// (`LegacyRequest::SetLevel`, `Subscribe`, `Unsubscribe`).
const CHANGES_SESSION: [&str; 3] = [
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The client capabilities that let the server ask the client.
const ASKS: [&str; 3] = ["elicitation", "sampling", "roots"];

/// The legacy sessions of one HTTP listener, by id.
pub(crate) struct Sessions {
    state: Arc<Mutex<Store>>,
    /// How many are kept at most (`HttpOptions::max_sessions`).
    max: usize,
    /// The bytes they keep together (`HttpOptions::max_session_bytes`).
    budget: Arc<Budget>,
}

#[derive(Default)]
struct Store {
    by_id: HashMap<String, Kept>,
    /// The POSTs being served under each session: where the client's
    /// answers and cancellations go.
    open: HashMap<String, Vec<OpenPost>>,
    /// Each session's GET stream, if it has one open.
    streams: HashMap<String, Stream>,
    /// Numbers the open POSTs and streams.
    next_key: u64,
}

/// A session as kept, with what decides which one gives way past the most
/// kept ([`Sessions::store`]).
struct Kept {
    session: Arc<LegacySession>,
    /// Whom the token of its `initialize` stood for (`owner`), when the
    /// server validates tokens: only requests with a token for the same
    /// find it.
    owner: Option<Owner>,
    /// The session is live: a message named it after its `initialize`
    /// that did something its client would lose with it (a request other
    /// than `ping`, which any flood can send: a call, a list, a
    /// subscription, a level; an answer to the server's ask; a
    /// cancellation; a GET stream). See [`Store::evict`].
    used: bool,
    /// When a message last named it.
    seen: Instant,
}

impl Kept {
    /// The session is forgotten: its bytes leave the budget now, not when
    /// the POSTs still running under a copy of it end.
    fn forget(&self) {
        let subscribed = &self.session.subscribed;
        (subscribed.lock().unwrap_or_else(PoisonError::into_inner)).discharge();
    }

    /// The session was named by a message (`used`: one that does
    /// something; see [`Kept::used`]).
    fn seen(&mut self, used: bool) {
        self.used |= used;
        self.seen = Instant::now();
    }
}

/// A session's GET stream: the connection its notifications go to.
#[derive(Clone)]
struct Stream {
    key: u64,
    conn: ConnHandle,
    body: Body,
}

/// A POST being served under a session.
#[derive(Clone)]
struct OpenPost {
    key: u64,
    request: RequestId,
    front: Front,
    /// The POST's connection: a notification of the session may go there.
    conn: ConnHandle,
    body: Body,
    /// Set by the first cancellation: one that came before the request
    /// was in flight is made again once it is ([`Sessions::opened`]).
    cancelled: Arc<AtomicBool>,
    /// When the token the POST came with expires (`TokenInfo::expires_at`):
    /// from then on no notification of the session is chosen to go on its
    /// stream (`Listener::publish`). Its own request's progress and result
    /// still go out: it was authorized when it came.
    expires_at: Option<SystemTime>,
}

impl OpenPost {
    /// Cancels the POST's request (`Conn::cancel`) and ends its response
    /// without a reply; one already answered is left to end with its
    /// reply. One not yet in flight (the POST found its session and has
    /// not begun its request) is cancelled once it is.
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.cancel_in_flight();
    }

    fn cancel_in_flight(&self) {
        // A POST's connection serves its one request: not in flight, it
        // was answered (the reply may still be on its way to the body), or
        // it has not begun. What the cancellation wrote (its asks'
        // cancellations) is sent before `cancel` returns, and so before
        // the response ends.
        if self.front.asks().cancel(&self.request, Sending::Now) {
            self.body.end_unanswered();
        }
    }
}

/// A legacy POST's session: the id it is kept under, if any.
pub(crate) struct Entered {
    id: Option<String>,
    /// Whom the POST's token stands for: a session it opens is theirs.
    owner: Option<Owner>,
    /// Its number among the session's open POSTs (`None`: `initialize`,
    /// which is not asked anything and cannot be cancelled by another POST).
    key: Option<u64>,
    /// The session the connection was given: a POST that leaves it
    /// unchanged has nothing to store.
    given: Option<Arc<LegacySession>>,
    /// The POST among the session's open ones (`None` with `key`).
    post: Option<OpenPost>,
}

/// A legacy POST refused before it runs.
pub(crate) struct UnknownSession(String);

impl UnknownSession {
    /// 2025-11-25: a request with an id the server does not know is
    /// answered `404`, and the client starts a new session with
    /// `initialize`. This is the error in that answer's body.
    pub fn error(&self) -> ErrorObject {
        ErrorObject::invalid_request(format!(
            "session '{}' is not known (it ended, or the server restarted): send initialize for a new one",
            self.0
        ))
    }
}

impl Sessions {
    /// No session yet; at most `max` kept, and `max_bytes` bytes of them.
    pub fn new(max: usize, max_bytes: usize) -> Sessions {
        Sessions {
            state: Arc::default(),
            max,
            budget: Arc::new(Budget::new(max_bytes, max)),
        }
    }

    /// Gives `front` (the POST's legacy front end) the session a legacy
    /// POST of request `id` runs under (with `token`, what its validated
    /// token allows: a session is found only by whom it stood for, and the
    /// POST carries the session's notifications only until it expires);
    /// an `initialize` gets a new id (sent back with `body`'s headers, and
    /// its answer held until [`Sessions::opened`] stored the session), and
    /// so does the answer of a method that changes the session.
    pub fn enter(
        &self,
        (front, conn): (&Front, &ConnHandle),
        body: &Body,
        request: &HttpRequest,
        (id, method): (&RequestId, &str),
        version: &str,
        token: Option<&TokenInfo>,
    ) -> Result<Entered, UnknownSession> {
        let owner = token.and_then(TokenInfo::owner);
        if method == "initialize" {
            // Its id goes out with its answer only if the session opens
            // (`Sessions::opened`): a failed `initialize` names none.
            let session_id = new_id();
            body.hold();
            return Ok(Entered {
                id: Some(session_id),
                owner,
                key: None,
                given: None,
                post: None,
            });
        }
        let Some(session_id) = request.headers.get("mcp-session-id") else {
            let session = Arc::new(LegacySession {
                version: version.to_owned(),
                client_capabilities: Arc::default(),
                client_info: None,
                initialized: false,
                log_level: None,
                live_level: Default::default(),
                subscribed: Arc::default(),
            });
            front.set_session(session);
            return Ok(Entered {
                id: None,
                owner: None,
                key: None,
                given: None,
                post: None,
            });
        };
        let mut store = self.lock();
        let kept = store.kept(session_id, owner.as_ref())?;
        // A `ping` keeps a session seen, not live (`Kept::used`).
        kept.seen(method != "ping");
        let mut session = Arc::clone(&kept.session);
        if CHANGES_SESSION.contains(&method) {
            // Its answer waits until the change is stored (`opened`): the
            // client's next POST, sent on that answer, must see it.
            body.hold();
        }
        if !body.streams()
            && ASKS
                .iter()
                .any(|c| session.client_capabilities.contains_key(*c))
        {
            let mut without = (*session).clone();
            let capabilities = Arc::make_mut(&mut without.client_capabilities);
            for asked in ASKS {
                capabilities.remove(asked);
            }
            session = Arc::new(without);
        }
        let key = store.next_key;
        store.next_key += 1;
        let post = OpenPost {
            key,
            request: id.clone(),
            front: front.clone(),
            conn: conn.clone(),
            body: body.clone(),
            cancelled: Arc::default(),
            expires_at: token.and_then(|info| info.expires_at),
        };
        (store.open.entry(session_id.to_owned()).or_default()).push(post.clone());
        drop(store);
        body.header("Mcp-Session-Id", session_id.to_owned());
        front.set_session(Arc::clone(&session));
        Ok(Entered {
            id: Some(session_id.to_owned()),
            owner: None,
            key: Some(key),
            given: Some(session),
            post: Some(post),
        })
    }

    /// After the POST's request was dispatched: the session an
    /// `initialize` opened (an `initialize` that failed opened none), or
    /// the change a `logging/setLevel` or `resources/subscribe` made, is
    /// stored before its answer goes out, so that the client's next POST,
    /// sent on that answer, runs under it.
    ///
    /// A cancellation (a `DELETE`, `notifications/cancelled`) that came
    /// while the request was not yet in flight is made again now that it
    /// is: none is lost between finding the session and beginning the
    /// request.
    pub fn opened(&self, front: &Front, body: &Body, entered: &Entered) {
        if let Some(post) = &entered.post
            && post.cancelled.load(Ordering::Acquire)
        {
            post.cancel_in_flight();
        }
        if let Some(id) = &entered.id {
            let session = front.session();
            match (session, &entered.given) {
                (Some(session), None) => {
                    self.store(id, &session, None, entered.owner.clone());
                    body.header("Mcp-Session-Id", id.clone());
                }
                (Some(session), Some(given)) if !Arc::ptr_eq(given, &session) => {
                    self.store(id, &session, Some(given), None);
                }
                _ => {}
            }
        }
        body.release();
    }

    /// The POST is over: it leaves its session's open POSTs. What it
    /// changed in the session was stored by [`Sessions::opened`] (the
    /// methods that change one are answered while they are dispatched).
    pub fn leave(&self, entered: Entered) {
        let Some(id) = entered.id else { return };
        if let Some(key) = entered.key {
            let mut store = self.lock();
            if let Some(open) = store.open.get_mut(&id) {
                open.retain(|post| post.key != key);
                if open.is_empty() {
                    store.open.remove(&id);
                }
            }
        }
    }

    /// A client's JSON-RPC response under session `session_id`: the answer
    /// to an ask of one of its open POSTs. Returns whether it answered one.
    pub fn answer(
        &self,
        (session_id, owner): (&str, Option<&Owner>),
        id: Option<&RequestId>,
        reply: Reply,
    ) -> Result<bool, UnknownSession> {
        let open = self.open_posts(session_id, owner)?;
        let Some(id) = id else { return Ok(false) };
        let mut reply = reply;
        for post in open {
            match post.front.asks().answer(Some(id), reply) {
                Ok(()) => {
                    self.used(session_id);
                    return Ok(true);
                }
                Err(again) => reply = again,
            }
        }
        Ok(false)
    }

    /// Whether session `session_id` is known (a notification names it):
    /// `Err` says it is not.
    pub fn known(&self, session_id: &str, owner: Option<&Owner>) -> Result<(), UnknownSession> {
        self.lock().kept(session_id, owner)?.seen(false);
        Ok(())
    }

    /// `notifications/cancelled` under session `session_id`: the POST
    /// serving request `request` is cancelled, and its response ends
    /// without a reply.
    pub fn cancel(
        &self,
        (session_id, owner): (&str, Option<&Owner>),
        request: &RequestId,
    ) -> Result<(), UnknownSession> {
        for post in self.open_posts(session_id, owner)? {
            if post.request == *request {
                post.cancel();
                self.used(session_id);
            }
        }
        Ok(())
    }

    /// Ends a session (`DELETE`): the requests still served under it are
    /// cancelled (nothing could answer their asks any more: a POST that
    /// names the session is `404` from now on), and their responses end
    /// without a reply; its GET stream ends. Returns whether it existed.
    pub fn delete(&self, id: &str, owner: Option<&Owner>) -> bool {
        let mut store = self.lock();
        if store.kept(id, owner).is_err() {
            return false;
        }
        let removed = store.by_id.remove(id);
        if let Some(kept) = &removed {
            kept.forget();
        }
        let existed = removed.is_some();
        let open = store.open.get(id).cloned().unwrap_or_default();
        let stream = store.streams.remove(id);
        drop(store);
        for post in open {
            post.cancel();
        }
        if let Some(stream) = stream {
            stream.body.end_unanswered();
        }
        existed
    }

    /// Opens session `id`'s GET stream, its connection `conn` writing to
    /// `body`: from here on the session's notifications go there, and on
    /// none of its POSTs. A stream the session had open ends: a client
    /// that reconnects (its old connection lost without a word, as a
    /// dropped network leaves it) is not refused for a stream the server
    /// still thinks open. `404` for a session not known. Returns the key
    /// [`Sessions::close_stream`] takes.
    pub fn open_stream(
        &self,
        (id, owner): (&str, Option<&Owner>),
        conn: &ConnHandle,
        body: &Body,
    ) -> Result<u64, UnknownSession> {
        let mut store = self.lock();
        store.kept(id, owner)?.seen(true);
        let key = store.next_key;
        store.next_key += 1;
        let stream = Stream {
            key,
            conn: conn.clone(),
            body: body.clone(),
        };
        let replaced = store.streams.insert(id.to_owned(), stream);
        drop(store);
        if let Some(replaced) = replaced {
            replaced.body.end_unanswered();
        }
        Ok(key)
    }

    /// The sessions as one of the server's connections: what is published
    /// reaches each session that hears it on one of its streams (see the
    /// module docs). Registered for as long as the listener serves.
    pub fn listener(&self) -> Arc<dyn Connection> {
        Arc::new(Listener(Arc::clone(&self.state)))
    }

    /// The GET stream with `key` ended: the session's POSTs that begin from
    /// here on hear its notifications again.
    pub fn close_stream(&self, id: &str, key: u64) {
        let mut store = self.lock();
        if store.streams.get(id).is_some_and(|s| s.key == key) {
            store.streams.remove(id);
        }
    }

    /// The open POSTs of a known session (a client's answer or
    /// cancellation names it). Seen, not yet live: only an answer that
    /// found its ask or a cancellation that found its request makes the
    /// session live ([`Sessions::used`]); a stray one is as cheap for a
    /// flood as a `ping`.
    fn open_posts(
        &self,
        session_id: &str,
        owner: Option<&Owner>,
    ) -> Result<Vec<OpenPost>, UnknownSession> {
        let mut store = self.lock();
        store.kept(session_id, owner)?.seen(false);
        Ok(store.open.get(session_id).cloned().unwrap_or_default())
    }

    /// Session `session_id` did something its client would lose with it
    /// (`Kept::used`): an answer found its ask, a cancellation its request.
    fn used(&self, session_id: &str) {
        if let Some(kept) = self.lock().by_id.get_mut(session_id) {
            kept.seen(true);
        }
    }

    /// Stores `session` under `id`: a new one (`given` is `None`), or one a
    /// POST changed from `given`, whose change alone (its level) is made
    /// to the session as stored (which keeps its client capabilities: the
    /// POST may have run without some, see [`Sessions::enter`]; and what
    /// concurrent POSTs changed). Its subscriptions need no storing: every
    /// copy of a session shares one set, changed in place
    /// (`LegacySession::subscribed`). A session deleted meanwhile stays deleted. A new one past the most kept makes
    /// one give way ([`Store::evict`]).
    fn store(
        &self,
        id: &str,
        session: &LegacySession,
        given: Option<&Arc<LegacySession>>,
        owner: Option<Owner>,
    ) {
        let mut session = session.clone();
        // No list changes on a POST's stream: they go on the GET stream.
        session.initialized = false;
        let mut store = self.lock();
        let mut forgotten = Vec::new();
        if let Some(given) = given {
            let Some(stored) = store.by_id.get_mut(id) else {
                return;
            };
            // What this POST changed, onto the session as stored now:
            // another POST of the session may have changed it since this
            // one was given it, and its change must hold too.
            let mut merged = LegacySession::clone(&stored.session);
            if session.log_level != given.log_level {
                merged.log_level = session.log_level;
            }
            // Its subscriptions are the stored session's own set, changed
            // in place (`LegacySession::subscribed`): nothing to merge.
            stored.session = Arc::new(merged);
        } else {
            // Its bytes count against the sessions' budget, with its
            // subscriptions to come (a set of its own from here on).
            let fixed = initialize_bytes(&session);
            let mut ended = Vec::new();
            while store.by_id.len() >= self.max || !self.budget.fits(fixed) {
                match store.evict(!self.budget.fits(fixed)) {
                    Some(stream) => ended.extend(stream),
                    None => break,
                }
            }
            forgotten = ended;
            session.subscribed = Arc::new(Mutex::new(Subscribed::charged(&self.budget, fixed)));
            let kept = Kept {
                session: Arc::new(session),
                owner,
                used: false,
                seen: Instant::now(),
            };
            store.by_id.insert(id.to_owned(), kept);
        }
        drop(store);
        // A forgotten session's stream ends, as a deleted one's does.
        for stream in forgotten {
            stream.body.end_unanswered();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store {
    /// Session `id`, if it is known to a request whose token stands for
    /// `owner`: a session opened with a token is bound to whom it stood
    /// for (spec 2025-11-25 basic/transports points to the "Session
    /// Hijacking" mitigations: bind the session id to the user; a session
    /// is no credential, every request is authorized on its own), and is
    /// not known to anyone else, a request without a token included. One opened without
    /// a token (or with one that names nobody) is known to any request.
    fn kept(&mut self, id: &str, owner: Option<&Owner>) -> Result<&mut Kept, UnknownSession> {
        match self.by_id.get_mut(id) {
            Some(kept) if Owner::admits(kept.owner.as_ref(), owner) => Ok(kept),
            _ => Err(UnknownSession(id.to_owned())),
        }
    }

    /// Forgets the session that gives way to a new one (issue 47, item 9:
    /// a flood of `initialize` must not push out the sessions in use):
    /// among those with nothing open (no POST, no GET stream), one that
    /// is not live before one that is, the one idle longest first; only
    /// when every session has something open, the one idle longest of
    /// them. Live ([`Kept::used`]): after its `initialize` the session
    /// made a request other than `ping` (so it holds its subscriptions,
    /// its level, or work its client waits on), answered an ask
    /// the server made or cancelled a request it serves, or opened
    /// a GET stream; an `initialize` followed by `ping`s, stray answers or
    /// cancellations, which anyone can send by the thousand, is not. Past
    /// the byte budget (`for_bytes`), among the live (or among the not
    /// live) a session over its share goes before one within it, so the
    /// one that filled the budget gives way, not a small live one; a
    /// session not live still goes before any live one. Returns its
    /// GET stream, to end (`None` when there was none to forget; `Some`
    /// of `None` when the one forgotten had no stream). Its bytes leave
    /// the sessions' budget at once.
    fn evict(&mut self, for_bytes: bool) -> Option<Option<Stream>> {
        let busy = |id: &String| self.open.contains_key(id) || self.streams.contains_key(id);
        // Past the budget, a session over its share goes first among
        // those as live as it: the one that filled it, not a small one.
        let within_share = |kept: &Kept| {
            !for_bytes
                || !(kept.session.subscribed.lock())
                    .unwrap_or_else(PoisonError::into_inner)
                    .over_share()
        };
        let victim = (self.by_id.iter())
            .min_by_key(|(id, kept)| (busy(id), kept.used, within_share(kept), kept.seen))
            .map(|(id, _)| id.clone())?;
        if let Some(kept) = self.by_id.remove(&victim) {
            kept.forget();
        }
        Some(self.streams.remove(&victim))
    }
}

/// The sessions of a listener, as one connection of the server's.
struct Listener(Arc<Mutex<Store>>);

impl Connection for Listener {
    /// `event` for each session that hears it, on one of its streams: its
    /// GET stream (list changes and resource updates), else its newest
    /// POST that can still carry it and whose token has not expired
    /// (`OpenPost::expires_at`; resource updates only: a list change
    /// concerns no request). Written after the sessions' lock is let go:
    /// a connection's write may wait for a client slow to read.
    fn publish(&self, event: &ServerEvent) {
        let targets: Vec<(ConnHandle, String)> = {
            let store = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            let streamed = (store.streams.iter()).filter_map(|(id, stream)| {
                Some((&store.by_id.get(id)?.session, stream.conn.clone(), true))
            });
            let now = SystemTime::now();
            let posted = (store.open.iter())
                .filter(|(id, _)| !store.streams.contains_key(*id))
                .filter_map(|(id, posts)| {
                    let post = (posts.iter().rev()).find(|post| {
                        post.body.takes_events() && post.expires_at.is_none_or(|at| at > now)
                    })?;
                    Some((&store.by_id.get(id)?.session, post.conn.clone(), false))
                });
            (streamed.chain(posted))
                .filter_map(|(session, conn, lists)| {
                    Some((conn, session.notification_on(event, lists)?))
                })
                .collect()
        };
        for (conn, line) in targets {
            conn.act(Sending::Now, |c| {
                c.write_line(line.into_bytes(), LineKind::Event)
            });
        }
    }

    /// The server stops: no client will answer an ask of a session's POST.
    fn stop(&self) {
        let store = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for post in store.open.values().flatten() {
            post.front.asks().close();
        }
    }
}

/// The bytes a new session keeps of its `initialize`: its client's
/// capabilities and information, as they would be sent again.
fn initialize_bytes(session: &LegacySession) -> usize {
    let capabilities = serde_json::to_vec(&*session.client_capabilities).map_or(0, |v| v.len());
    let info = serde_json::to_vec(&session.client_info).map_or(0, |v| v.len());
    capabilities + info + session.version.len()
}

/// A session id: 128 random bits in hex (visible ASCII, as 2025-11-25
/// requires), unguessable.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness: unique still, from the clock and a count.
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (t ^ u128::from(n) << 64).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
