//! The legacy era over HTTP (2025-11-25 basic/transports, "Streamable
//! HTTP"): `initialize` over POST opens a session whose id goes back in
//! `Mcp-Session-Id`; a later POST that names it is served under it (its
//! version, capabilities and log level), and `DELETE` ends it. A POST with
//! no session id is served statelessly, under a session made up from its
//! `MCP-Protocol-Version` header (2025-03-26 when there is none) with no
//! client capabilities.
//!
//! What a legacy HTTP client does not get: the GET stream (`405`), so no
//! list-change or resource-update notifications; resumable streams; and
//! the server's own requests (elicitation, sampling, roots), whose answers
//! would arrive on another connection: a session's client capabilities
//! are stored without them, so a handler that asks is told the client
//! cannot answer.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Map;

use super::body::Body;
use crate::http::HttpRequest;
use crate::jsonrpc::ErrorObject;
use crate::server::conn::handle::ConnHandle;
use crate::server::legacy::session::LegacySession;

/// Sessions kept at most: the oldest is forgotten past this.
const MAX_SESSIONS: usize = 1024;

/// The legacy sessions of one HTTP listener, by id.
#[derive(Default)]
pub(crate) struct Sessions {
    state: Mutex<Store>,
}

#[derive(Default)]
struct Store {
    by_id: HashMap<String, Arc<LegacySession>>,
    /// Ids, oldest first.
    order: VecDeque<String>,
}

/// A legacy POST's session: the id it is kept under, if any.
pub(crate) struct Entered {
    id: Option<String>,
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
    /// Gives `conn` the session a legacy POST runs under; an `initialize`
    /// gets a new id (sent back with `body`'s headers).
    pub fn enter(
        &self,
        conn: &ConnHandle,
        body: &Body,
        request: &HttpRequest,
        method: &str,
        version: &str,
    ) -> Result<Entered, UnknownSession> {
        if method == "initialize" {
            let id = new_id();
            body.header("Mcp-Session-Id", id.clone());
            return Ok(Entered { id: Some(id) });
        }
        let session = match request.headers.get("mcp-session-id") {
            Some(id) => {
                let Some(session) = self.lock().by_id.get(id).cloned() else {
                    return Err(UnknownSession(id.to_owned()));
                };
                body.header("Mcp-Session-Id", id.to_owned());
                conn.lock().set_session(session);
                return Ok(Entered {
                    id: Some(id.to_owned()),
                });
            }
            None => LegacySession {
                version: version.to_owned(),
                client_capabilities: Map::new(),
                client_info: None,
                initialized: false,
                log_level: None,
                subscribed: HashSet::new(),
            },
        };
        conn.lock().set_session(Arc::new(session));
        Ok(Entered { id: None })
    }

    /// Keeps what the POST made of its session (opened by `initialize`,
    /// changed by `logging/setLevel`).
    pub fn leave(&self, conn: &ConnHandle, entered: Entered) {
        let Some(id) = entered.id else { return };
        let Some(session) = conn.lock().session() else {
            return;
        };
        let mut session = (*session).clone();
        // No list changes on a POST's stream, and no asks whose answers
        // could not come back (module docs).
        session.initialized = false;
        for asked in ["elicitation", "sampling", "roots"] {
            session.client_capabilities.remove(asked);
        }
        let mut store = self.lock();
        if !store.by_id.contains_key(&id) {
            store.order.push_back(id.clone());
            if store.order.len() > MAX_SESSIONS
                && let Some(oldest) = store.order.pop_front()
            {
                store.by_id.remove(&oldest);
            }
        }
        store.by_id.insert(id, Arc::new(session));
    }

    /// Ends a session (`DELETE`). Returns whether it existed.
    pub fn delete(&self, id: &str) -> bool {
        let mut store = self.lock();
        store.order.retain(|o| o != id);
        store.by_id.remove(id).is_some()
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
