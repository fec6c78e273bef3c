//! A legacy client's session, and the requests only the legacy era has:
//! `initialize` opens it, `logging/setLevel` and `resources/subscribe`
//! change it, `ping` is answered at any time.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::jsonrpc::ErrorObject;
use crate::server::event::ServerEvent;
use crate::server::request_meta::{LiveLevel, RequestMeta};
use crate::server::{Inner, UriHold};
use crate::types::{LoggingLevel, ProgressToken, ServerCapabilities, method};
use crate::version::LEGACY_VERSIONS;

/// The most `initialize` params (capabilities, client info) a session
/// keeps: a larger `initialize` is refused. Over HTTP a listener keeps up
/// to `HttpOptions::max_sessions` sessions, so each must be small.
pub(crate) const MAX_INITIALIZE_BYTES: usize = 64 * 1024;

/// The most bytes of URIs a session subscribes to (besides their count,
/// `ServerBuilder::max_subscriptions`).
pub(crate) const MAX_SUBSCRIBED_BYTES: usize = 256 * 1024;

/// A legacy client's session: what its `initialize` established, and what
/// it set since. Cheap to clone: what may be large is shared, and copied
/// only when it changes.
#[derive(Debug, Clone)]
pub(crate) struct LegacySession {
    pub version: String,
    pub client_capabilities: Arc<Map<String, Value>>,
    pub client_info: Option<crate::types::Implementation>,
    /// `notifications/initialized` arrived: list changes may be sent.
    pub initialized: bool,
    /// `logging/setLevel`, for the whole connection.
    pub log_level: Option<LoggingLevel>,
    /// The same level, shared with the requests prepared under the session
    /// (and, over HTTP, with its other POSTs) so that a level set while
    /// they run holds for their later logs; set when a change is answered
    /// ([`LegacySession::apply_level`]).
    pub live_level: Arc<LiveLevel>,
    /// `resources/subscribe`, for the whole connection: one set that
    /// every copy of the session shares and changes in place (one URI
    /// added or removed, its bytes counted as it is: a subscribe costs the
    /// same however many the session has).
    pub subscribed: Arc<Mutex<Subscribed>>,
}

/// The URIs a session subscribed to, each with what it holds while it is
/// subscribed (`UriHold`), and their bytes; over HTTP, with what the
/// session is charged against the budget of the listener's sessions.
#[derive(Debug, Default)]
pub(crate) struct Subscribed {
    uris: HashMap<String, UriHold>,
    bytes: usize,
    /// The budget this session's bytes count against (`None`: none, on
    /// stdio or a stateless POST, or once the session was forgotten).
    budget: Option<Arc<Budget>>,
    /// The bytes of its `initialize` params, charged with its URIs.
    fixed: usize,
}

/// The bytes the legacy sessions of one HTTP listener keep together
/// (`HttpOptions::max_session_bytes`), and each one's share of them.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicUsize,
    max: usize,
    share: usize,
}

impl Budget {
    /// A budget of `max` bytes for at most `sessions` sessions.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub fn new(max: usize, sessions: usize) -> Budget {
        Budget {
            used: AtomicUsize::new(0),
            max,
            share: max / sessions.max(1),
        }
    }

    /// The bytes kept now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Whether `more` bytes may be kept beside those used now.
    pub fn fits(&self, more: usize) -> bool {
        self.used().saturating_add(more) <= self.max
    }
}

impl Subscribed {
    /// A new session's set, its `fixed` bytes charged against `budget`.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub fn charged(budget: &Arc<Budget>, fixed: usize) -> Subscribed {
        budget.used.fetch_add(fixed, Ordering::AcqRel);
        Subscribed {
            uris: HashMap::new(),
            bytes: 0,
            budget: Some(Arc::clone(budget)),
            fixed,
        }
    }

    /// The session is forgotten: its bytes no longer count against its
    /// budget (they are let go with its last copy).
    pub fn discharge(&mut self) {
        if let Some(budget) = self.budget.take() {
            (budget.used).fetch_sub(self.bytes + self.fixed, Ordering::AcqRel);
        }
    }

    fn insert(&mut self, uri: String, hold: UriHold) {
        let len = uri.len();
        if self.uris.insert(uri, hold).is_none() {
            self.bytes += len;
            if let Some(budget) = &self.budget {
                budget.used.fetch_add(len, Ordering::AcqRel);
            }
        }
    }

    fn remove(&mut self, uri: &str) -> Option<UriHold> {
        let removed = self.uris.remove(uri);
        if removed.is_some() {
            self.bytes -= uri.len();
            if let Some(budget) = &self.budget {
                budget.used.fetch_sub(uri.len(), Ordering::AcqRel);
            }
        }
        removed
    }

    /// Whether the session keeps more bytes than its share of the budget
    /// (the budget over the most sessions kept).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub fn over_share(&self) -> bool {
        (self.budget.as_ref()).is_some_and(|budget| self.bytes + self.fixed > budget.share)
    }

    /// Why `more` bytes of URIs may not be kept: past the listener's
    /// budget, by a session that holds more than its share.
    fn over_budget(&self, more: usize) -> Option<ErrorObject> {
        let budget = self.budget.as_ref()?;
        let own = self.bytes + self.fixed + more;
        if own <= budget.share || budget.fits(more) {
            return None;
        }
        let error = ErrorObject::internal_error(format!(
            "the server's legacy sessions keep {} bytes, their budget (max_session_bytes), and this session {own} of them, more than its share of {}: unsubscribe from one first",
            budget.max, budget.share
        ))
        .with_data(json!({ "limitBytes": budget.max, "shareBytes": budget.share }));
        Some(error)
    }
}

/// What a forgotten session's last copy lets go: its bytes' count in the
/// budget (`Subscribed::discharge`, made at once when it is forgotten).
impl Drop for Subscribed {
    fn drop(&mut self) {
        self.discharge();
    }
}

/// What [`LegacySession::apply`] changed in the session's subscriptions,
/// to undo when its request is refused after all ([`LegacySession::undo`]).
#[derive(Debug)]
pub(crate) enum Change {
    Subscribed(String),
    Unsubscribed(String, UriHold),
}

/// What a legacy-only request asks of the owner.
#[derive(Debug)]
pub(crate) enum LegacyRequest {
    /// `ping` (2025-11-25 basic/utilities/ping: answered at any time, an
    /// empty result).
    Ping,
    Initialize(Box<LegacySession>),
    SetLevel(LoggingLevel),
    /// A URI the application accepted, with its hold.
    Subscribe(String, UriHold),
    Unsubscribe(String),
}

impl LegacySession {
    /// This session's level made the one its running requests read (once
    /// the request that set it is answered: a refused one changes
    /// nothing).
    pub fn apply_level(&self) {
        self.live_level.set(self.log_level);
    }

    /// The request metadata a legacy request stands for: the session's
    /// version, capabilities and log level, and its own progress token.
    pub fn meta(&self, progress_token: Option<ProgressToken>) -> RequestMeta {
        RequestMeta {
            protocol_version: Cow::Owned(self.version.clone()),
            client_capabilities: Map::clone(&self.client_capabilities),
            client_info: self.client_info.clone(),
            log_level: self.log_level,
            live_level: Some(Arc::clone(&self.live_level)),
            progress_token,
            raw: None,
            token: None,
        }
    }
}

/// Reads an `initialize` request (2025-11-25 basic/lifecycle): the answer
/// is the requested version if this server speaks it, otherwise its newest
/// legacy version. Params larger than [`MAX_INITIALIZE_BYTES`] are
/// refused: a session keeps them for its whole life.
pub(crate) fn initialize(params: &str) -> Result<LegacySession, ErrorObject> {
    if params.len() > MAX_INITIALIZE_BYTES {
        return Err(ErrorObject::invalid_params(format!(
            "initialize params of {} bytes: a session keeps at most {MAX_INITIALIZE_BYTES}; declare fewer capabilities",
            params.len()
        ))
        .with_data(json!({ "limit": MAX_INITIALIZE_BYTES })));
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        protocol_version: String,
        #[serde(default)]
        capabilities: Map<String, Value>,
        #[serde(default)]
        client_info: Option<crate::types::Implementation>,
    }
    let params: Params = serde_json::from_str(params)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid initialize params: {e}")))?;
    let version = if LEGACY_VERSIONS.contains(&params.protocol_version.as_str()) {
        params.protocol_version
    } else {
        LEGACY_VERSIONS[0].to_owned()
    };
    // Extensions (the Tasks extension) are of the modern era: whatever a
    // legacy client names there, none is negotiated (`initialize_result`
    // offers none), and no request of the session declares one.
    let mut capabilities = params.capabilities;
    capabilities.remove("extensions");
    Ok(LegacySession {
        version,
        client_capabilities: Arc::new(capabilities),
        client_info: params.client_info,
        initialized: false,
        log_level: None,
        live_level: Arc::default(),
        subscribed: Arc::default(),
    })
}

/// The `InitializeResult` for a session.
pub(crate) fn initialize_result(inner: &Inner, session: &LegacySession) -> Value {
    // The Tasks extension is of the modern era (a legacy client cannot
    // declare it per request): not offered here.
    let capabilities = ServerCapabilities {
        extensions: None,
        ..inner.capabilities()
    };
    let mut result = json!({
        "protocolVersion": session.version,
        "capabilities": capabilities,
        "serverInfo": inner.info,
    });
    if let Some(instructions) = &inner.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}

/// `logging/setLevel` params.
pub(crate) fn set_level(params: &str) -> Result<LoggingLevel, ErrorObject> {
    #[derive(Deserialize)]
    struct Params {
        level: LoggingLevel,
    }
    serde_json::from_str::<Params>(params)
        .map(|p| p.level)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid logging/setLevel params: {e}")))
}

/// `resources/subscribe` and `resources/unsubscribe` params.
pub(crate) fn subscription_uri(params: &str) -> Result<String, ErrorObject> {
    #[derive(Deserialize)]
    struct Params {
        uri: String,
    }
    serde_json::from_str::<Params>(params)
        .map(|p| p.uri)
        .map_err(|e| {
            ErrorObject::invalid_params(format!("a resource subscription needs a uri: {e}"))
        })
}

/// The requests only the legacy era has, for a request without modern
/// `_meta`: `initialize` and `ping` at any time, the others within a
/// session (and `subscriptions/listen`, which that era lacks, is not
/// found). `None`: a request both eras have.
pub(crate) fn session_request(
    inner: &Inner,
    method: &str,
    params: &str,
    session: Option<&LegacySession>,
) -> Option<Result<LegacyRequest, ErrorObject>> {
    match method {
        "initialize" => {
            return Some(initialize(params).map(|s| LegacyRequest::Initialize(Box::new(s))));
        }
        "ping" => return Some(Ok(LegacyRequest::Ping)),
        _ => {}
    }
    session?;
    // A request for what the server does not declare is not found (as a
    // method it does not serve is).
    Some(match method {
        "logging/setLevel" if inner.capabilities().logging.is_some() => {
            set_level(params).map(LegacyRequest::SetLevel)
        }
        "resources/subscribe" if inner.subscribable() => subscription_uri(params).and_then(|uri| {
            if let Some(hold) = inner.accepts_uri(&uri) {
                Ok(LegacyRequest::Subscribe(uri, hold))
            } else {
                // 2025-11-25 server/resources, "Error Handling".
                Err(ErrorObject::new(-32002, "Resource not found").with_data(json!({ "uri": uri })))
            }
        }),
        "resources/unsubscribe" if inner.subscribable() => {
            subscription_uri(params).map(LegacyRequest::Unsubscribe)
        }
        method::SUBSCRIPTIONS_LISTEN => Err(ErrorObject::method_not_found(method)),
        _ => return None,
    })
}

impl LegacySession {
    /// A request that changes the session (or only reads it): `ping`,
    /// `logging/setLevel`, `resources/subscribe` (at most `max` URIs, and
    /// [`MAX_SUBSCRIBED_BYTES`] of them) and `resources/unsubscribe`. Its
    /// result, or why it failed, and the change it made to the shared
    /// subscriptions (made at once, in one step with its checks, for every
    /// copy of the session: see [`LegacySession::subscribed`]).
    pub fn apply(
        &mut self,
        request: LegacyRequest,
        max: usize,
    ) -> (Result<Value, ErrorObject>, Option<Change>) {
        let mut change = None;
        match request {
            LegacyRequest::Ping | LegacyRequest::Initialize(_) => {}
            LegacyRequest::SetLevel(level) => self.log_level = Some(level),
            LegacyRequest::Subscribe(uri, hold) => {
                let mut subscribed = self.subscriptions();
                if subscribed.uris.contains_key(&uri) {
                    return (Ok(json!({})), None);
                }
                if subscribed.uris.len() >= max {
                    let error = ErrorObject::internal_error(format!(
                        "too many resource subscriptions on this connection (at most {max}): unsubscribe from one first"
                    ))
                    .with_data(json!({ "limit": max }));
                    return (Err(error), None);
                }
                let bytes = subscribed.bytes + uri.len();
                if bytes > MAX_SUBSCRIBED_BYTES {
                    let error = ErrorObject::internal_error(format!(
                        "the resource subscriptions of this connection would take {bytes} bytes of URIs, more than the {MAX_SUBSCRIBED_BYTES} it keeps: unsubscribe from one first"
                    ))
                    .with_data(json!({ "limitBytes": MAX_SUBSCRIBED_BYTES }));
                    return (Err(error), None);
                }
                if let Some(error) = subscribed.over_budget(uri.len()) {
                    return (Err(error), None);
                }
                subscribed.insert(uri.clone(), hold);
                change = Some(Change::Subscribed(uri));
            }
            LegacyRequest::Unsubscribe(uri) => {
                if let Some(hold) = self.subscriptions().remove(&uri) {
                    change = Some(Change::Unsubscribed(uri, hold));
                }
            }
        }
        (Ok(json!({})), change)
    }

    /// Undoes `change`, made by [`LegacySession::apply`] for a request
    /// that was refused after all (an id in use, shutting down).
    pub fn undo(&self, change: Change) {
        match change {
            Change::Subscribed(uri) => drop(self.subscriptions().remove(&uri)),
            Change::Unsubscribed(uri, hold) => self.subscriptions().insert(uri, hold),
        }
    }

    /// Whether the session subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions().uris.contains_key(uri)
    }

    fn subscriptions(&self) -> std::sync::MutexGuard<'_, Subscribed> {
        (self.subscribed.lock()).unwrap_or_else(PoisonError::into_inner)
    }

    /// The notification a published event is for this session, if any:
    /// resource updates for the URIs it subscribed to, list changes once
    /// it is initialized (without a subscription id; 2025-11-25 has none).
    pub fn notification(&self, event: &ServerEvent) -> Option<String> {
        self.notification_on(event, self.initialized)
    }

    /// [`LegacySession::notification`] on a stream that carries list
    /// changes (`lists`) or not.
    pub fn notification_on(&self, event: &ServerEvent, lists: bool) -> Option<String> {
        let (method, params) = match event {
            ServerEvent::ResourceUpdated(uri) if self.is_subscribed(uri) => (
                method::NOTIFICATION_RESOURCES_UPDATED,
                Some(json!({ "uri": &**uri })),
            ),
            ServerEvent::ToolsListChanged if lists => {
                (method::NOTIFICATION_TOOLS_LIST_CHANGED, None)
            }
            ServerEvent::PromptsListChanged if lists => {
                (method::NOTIFICATION_PROMPTS_LIST_CHANGED, None)
            }
            ServerEvent::ResourcesListChanged if lists => {
                (method::NOTIFICATION_RESOURCES_LIST_CHANGED, None)
            }
            _ => return None,
        };
        let mut line = json!({ "jsonrpc": "2.0", "method": method });
        if let Some(params) = params {
            line["params"] = params;
        }
        Some(line.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_negotiated() {
        let s = initialize(r#"{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#).unwrap();
        assert_eq!(s.version, "2025-03-26");
        let s = initialize(r#"{"protocolVersion":"1999-01-01"}"#).unwrap();
        assert_eq!(s.version, "2025-11-25");
        assert!(initialize(r#"{}"#).is_err());
    }

    /// The byte total follows every change, an undone one too: a session
    /// at the byte limit that unsubscribes (or whose subscribe is undone)
    /// has that room again, and a copy of the session sees the same set.
    #[test]
    fn subscriptions_count_their_bytes_through_every_change() {
        let mut session = initialize(r#"{"protocolVersion":"2025-11-25"}"#).unwrap();
        let copy = session.clone();
        let big = |c: char| format!("mem://{}", c.to_string().repeat(MAX_SUBSCRIBED_BYTES / 2));
        let (a, b) = (big('a'), big('b'));
        let (ok, change) =
            session.apply(LegacyRequest::Subscribe(a.clone(), UriHold::default()), 100);
        assert!(ok.is_ok() && matches!(change, Some(Change::Subscribed(_))));
        assert!(copy.is_subscribed(&a), "one set for every copy");
        let (refused, _) =
            session.apply(LegacyRequest::Subscribe(b.clone(), UriHold::default()), 100);
        assert!(refused.is_err(), "past the byte limit");
        let (ok, change) = session.apply(LegacyRequest::Unsubscribe(a.clone()), 100);
        assert!(ok.is_ok() && !copy.is_subscribed(&a));
        session.undo(change.unwrap());
        assert!(
            copy.is_subscribed(&a),
            "an undone unsubscribe subscribes again"
        );
        let (_, change) = session.apply(LegacyRequest::Unsubscribe(a.clone()), 100);
        assert!(change.is_some());
        let (ok, change) =
            session.apply(LegacyRequest::Subscribe(b.clone(), UriHold::default()), 100);
        assert!(ok.is_ok(), "room again: {ok:?}");
        session.undo(change.unwrap());
        assert!(!session.is_subscribed(&b));
        assert_eq!(session.subscriptions().bytes, 0);
    }
}
