//! The validated per-request metadata a handler reads
//! ([`RequestContext::meta`](crate::RequestContext::meta)).

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::types::{ClientCapabilities, Implementation, LoggingLevel, ProgressToken};

/// The validated per-request metadata of a modern request
/// (spec 2026-07-28 basic/index, "Per-request protocol fields").
#[derive(Debug, Clone)]
pub struct RequestMeta {
    /// One of this crate's versions (borrowed) or a legacy session's.
    pub(crate) protocol_version: Cow<'static, str>,
    pub(crate) client_capabilities: Map<String, Value>,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) log_level: Option<LoggingLevel>,
    /// A level that changes while the request runs (a legacy session's,
    /// which `logging/setLevel` sets for the whole session): read instead
    /// of `log_level` when there is one.
    pub(crate) live_level: Option<Arc<LiveLevel>>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) raw: Option<Box<RawValue>>,
    /// What the request's access token allows, when the HTTP server
    /// validated one (see [`RequestMeta::token_info`]).
    pub(crate) token: Option<Arc<TokenInfo>>,
}

/// What a validated access token allows: what the application's token
/// validator returned for the request's `Authorization: Bearer` token
/// (see `HttpOptions::protected_resource`, feature `http`). The token
/// itself is not kept: a handler never sees it, so it cannot leak it into
/// a result, a log or another server (spec 2026-07-28
/// basic/authorization: MCP servers MUST NOT pass a client's token on).
///
/// ```
/// let info = mcp_stdio::TokenInfo::new()
///     .subject("alice")
///     .scopes(["files:read", "files:write"]);
/// assert!(info.has_scope("files:write"));
/// assert!(!info.has_scope("admin"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenInfo {
    /// Whom the token stands for (a JWT's or an introspection's `sub`).
    pub subject: Option<String>,
    /// The client it was issued to (`client_id`).
    pub client_id: Option<String>,
    /// The authorization server that issued it (a JWT's or an
    /// introspection's `iss`). Set it when the validator trusts more than
    /// one: a subject (or client) is then someone only with its issuer
    /// ([`TokenInfo::owner`]), so the user `alice` of one is not `alice` of
    /// another. `None`: the subject alone names the owner, as it did
    /// before this field.
    pub issuer: Option<String>,
    /// The scopes it grants.
    pub scopes: Vec<String>,
    /// When it expires: past it the server answers `401` without asking
    /// the validator again, and a stream the token opened (a listen, a
    /// legacy session's GET stream) ends.
    pub expires_at: Option<std::time::SystemTime>,
    /// Anything else the validator wants handlers to see (claims, a
    /// tenant, roles); `null` by default.
    pub claims: Value,
}

impl TokenInfo {
    /// No subject, no scopes, no expiry.
    pub fn new() -> TokenInfo {
        TokenInfo::default()
    }

    /// Sets [`TokenInfo::subject`].
    pub fn subject(mut self, subject: &str) -> Self {
        self.subject = Some(subject.to_owned());
        self
    }

    /// Sets [`TokenInfo::client_id`].
    pub fn client_id(mut self, client_id: &str) -> Self {
        self.client_id = Some(client_id.to_owned());
        self
    }

    /// Sets [`TokenInfo::issuer`].
    pub fn issuer(mut self, issuer: &str) -> Self {
        self.issuer = Some(issuer.to_owned());
        self
    }

    /// Sets [`TokenInfo::scopes`].
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`TokenInfo::expires_at`].
    pub fn expires_at(mut self, at: std::time::SystemTime) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// Sets [`TokenInfo::claims`].
    pub fn claims(mut self, claims: Value) -> Self {
        self.claims = claims;
        self
    }

    /// Whether the token grants `scope` (compared exactly: a validator
    /// that knows scope hierarchies lists the narrower scopes a broader
    /// one implies, as spec 2026-07-28 basic/authorization asks).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// Whom the token stands for: its subject, else the client it was
    /// issued to, each with the token's issuer when the validator gave one
    /// ([`TokenInfo::issuer`]); `None` when it names neither. An empty
    /// subject, client id or issuer names no one (a `sub` of `""` would
    /// otherwise be one owner shared by every token that carries it).
    ///
    /// ```
    /// use mcp_stdio::{Owner, TokenInfo};
    /// let user = TokenInfo::new().subject("alice").client_id("app");
    /// assert_eq!(user.owner(), Some(Owner::subject(None, "alice")));
    /// let machine = TokenInfo::new().client_id("alice");
    /// assert_eq!(machine.owner(), Some(Owner::client(None, "alice")));
    /// let unnamed = TokenInfo::new().subject("").client_id("app");
    /// assert_eq!(unnamed.owner(), Some(Owner::client(None, "app")));
    /// assert_eq!(TokenInfo::new().subject("").client_id("").owner(), None);
    /// // Two authorization servers' `alice` are two owners.
    /// let a = TokenInfo::new().issuer("https://a.example").subject("alice");
    /// let b = TokenInfo::new().issuer("https://b.example").subject("alice");
    /// assert_ne!(a.owner(), b.owner());
    /// assert_eq!(a.owner(), Some(Owner::subject(Some("https://a.example"), "alice")));
    /// ```
    pub fn owner(&self) -> Option<Owner> {
        let named = |name: &Option<String>| name.clone().filter(|n| !n.is_empty());
        let issuer = named(&self.issuer);
        match (named(&self.subject), named(&self.client_id)) {
            (Some(subject), _) => Some(Owner::Subject { issuer, subject }),
            (None, Some(client_id)) => Some(Owner::Client { issuer, client_id }),
            (None, None) => None,
        }
    }
}

/// Whom a validated token stands for ([`TokenInfo::owner`]): its subject
/// (a user), else the client it was issued to, each with the
/// authorization server that issued the token when the validator says
/// which ([`TokenInfo::issuer`]: a subject is unique only within its
/// issuer, OpenID Connect Core 1.0 section 2). What a request with a token
/// creates is bound to it: a task ([`StoredTask::owner`](crate::StoredTask::owner))
/// and, over HTTP, a legacy session. Subjects and clients are different
/// namespaces (a client may register the name of a user, and some
/// authorization servers take a client's chosen name as its id): a
/// client-credentials token of a client named `alice` is not the user
/// `alice`. An owner without an issuer is not one with an issuer: a
/// validator that begins to set [`TokenInfo::issuer`] makes new owners,
/// and what was bound before to the subject alone is not reached by them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// The token's `sub`.
    Subject {
        /// The token's issuer, when the validator gave it.
        issuer: Option<String>,
        /// The token's `sub`.
        subject: String,
    },
    /// The token's `client_id`, when it names no subject.
    Client {
        /// The token's issuer, when the validator gave it.
        issuer: Option<String>,
        /// The token's `client_id`.
        client_id: String,
    },
}

impl Owner {
    /// The subject `subject` of `issuer` (or of no issuer said).
    pub fn subject(issuer: Option<&str>, subject: &str) -> Owner {
        Owner::Subject {
            issuer: issuer.map(str::to_owned),
            subject: subject.to_owned(),
        }
    }

    /// The client `client_id` of `issuer` (or of no issuer said).
    pub fn client(issuer: Option<&str>, client_id: &str) -> Owner {
        Owner::Client {
            issuer: issuer.map(str::to_owned),
            client_id: client_id.to_owned(),
        }
    }

    /// Whether a request whose token stands for `caller` may reach what is
    /// bound to `bound` (a task, a legacy session): the same owner only
    /// (the same issuer too: one said and one not are two owners).
    /// What is bound to nobody (made without a token, or with one that
    /// names nobody) is reached by requests of nobody: on a server without
    /// authorization every request, as it always was; with authorization,
    /// tokens that name nobody, never a named subject or client (who would
    /// otherwise reach whatever an anonymous token made). The one rule for
    /// both: an id that leaks (a log, a shared screen, a proxy) is no
    /// credential (spec 2025-11-25 basic/transports points a session to the
    /// "Session Hijacking" mitigations: bind it to the user; the Tasks
    /// extension lets a server take a task id for a bearer token, which
    /// this one does only without authorization).
    pub(crate) fn admits(bound: Option<&Owner>, caller: Option<&Owner>) -> bool {
        bound == caller
    }
}

/// A log level shared by the requests it applies to, set while they run.
#[derive(Debug, Default)]
pub(crate) struct LiveLevel(Mutex<Option<LoggingLevel>>);

impl LiveLevel {
    /// The level now.
    pub fn get(&self) -> Option<LoggingLevel> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the level for every request that reads it from now on.
    #[cfg(feature = "legacy")]
    pub fn set(&self, level: Option<LoggingLevel>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = level;
    }
}

impl RequestMeta {
    #[cfg(test)]
    pub(crate) fn for_tests(client_capabilities: Value) -> RequestMeta {
        RequestMeta {
            protocol_version: Cow::Borrowed("2026-07-28"),
            client_capabilities: client_capabilities.as_object().cloned().unwrap_or_default(),
            client_info: None,
            log_level: None,
            live_level: None,
            progress_token: None,
            raw: None,
            token: None,
        }
    }

    /// `io.modelcontextprotocol/protocolVersion`.
    pub fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    /// `io.modelcontextprotocol/clientCapabilities`, as sent.
    pub fn client_capabilities_raw(&self) -> &Map<String, Value> {
        &self.client_capabilities
    }

    /// `io.modelcontextprotocol/clientCapabilities`, typed. Fields the
    /// client sent in a shape this crate does not know are left out.
    pub fn client_capabilities(&self) -> ClientCapabilities {
        serde_json::from_value(Value::Object(self.client_capabilities.clone())).unwrap_or_default()
    }

    /// `io.modelcontextprotocol/clientInfo`, when the client sent it.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.client_info.as_ref()
    }

    /// `io.modelcontextprotocol/logLevel`, when the client asked for logs
    /// (a legacy client's session level, as it is now).
    pub fn log_level(&self) -> Option<LoggingLevel> {
        match &self.live_level {
            Some(live) => live.get(),
            None => self.log_level,
        }
    }

    /// What the request's access token allows, when the HTTP server
    /// validated one (`HttpOptions::protected_resource`, feature
    /// `http`); `None` on stdio and on a server without
    /// authorization. A tool that needs a scope checks it here.
    pub fn token_info(&self) -> Option<&TokenInfo> {
        self.token.as_deref()
    }

    /// `progressToken`, when the client asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress_token.as_ref()
    }

    /// Any `_meta` entry by key (for example `traceparent`), parsed on
    /// demand.
    pub fn get(&self, key: &str) -> Option<Value> {
        let raw = self.raw.as_ref()?;
        let mut map: Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
        map.remove(key)
    }

    /// Whether the request declared the extension `name` under
    /// `clientCapabilities.extensions` (for example
    /// [`TASKS_EXTENSION`](crate::types::TASKS_EXTENSION)). Decided per
    /// request, never from an earlier one.
    pub fn has_extension(&self, name: &str) -> bool {
        match self.client_capabilities.get("extensions") {
            Some(Value::Object(extensions)) => {
                !matches!(extensions.get(name), None | Some(Value::Null))
            }
            _ => false,
        }
    }

    /// Whether the request declared a client capability. `path` is a
    /// capability name, optionally with sub-capabilities separated by dots:
    /// `"sampling"`, `"elicitation.url"`, `"sampling.tools"`. One set to
    /// `false` (or `null`) is not declared: that says no as plainly as
    /// leaving it out.
    pub fn has_client_capability(&self, path: &str) -> bool {
        let mut map = &self.client_capabilities;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            match map.get(part) {
                None | Some(Value::Null | Value::Bool(false)) => return false,
                Some(Value::Object(inner)) => map = inner,
                Some(_) => return parts.peek().is_none(),
            }
        }
        true
    }
}
