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
//!
//! The files, by job: this one holds the sessions' types; `posts.rs` what
//! a POST does under a session (it enters, its change is stored before
//! its answer goes out, it leaves; the client's answers and cancellations
//! that reach it), `keep.rs` the sessions kept (found only by their owner,
//! stored, deleted, giving way past the bounds) and `streams.rs` a
//! session's GET stream and the listener that publishes to the sessions.

mod keep;
mod posts;
mod streams;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime};

use super::body::Body;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::legacy::Front;
use crate::server::legacy::session::{Budget, LegacySession};
use crate::server::request_meta::Owner;

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

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
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
