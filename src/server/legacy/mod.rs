//! Serving legacy clients: the `initialize` era (2025-11-25 and earlier)
//! on the same connection as modern requests (spec 2026-07-28
//! basic/versioning, "Backward Compatibility with Initialization-Based
//! Versions").
//!
//! The era of a request is decided by its own shape: a request whose
//! `_meta` carries `io.modelcontextprotocol/protocolVersion` is modern and
//! served statelessly; `initialize` without it opens a legacy session for
//! the connection, and later requests without it are served under that
//! session (its version, its capabilities, its log level, its resource
//! subscriptions). `ping` without modern `_meta` is answered at any time,
//! as 2025-11-25 allows before initialization.
//!
//! Legacy versions served: 2025-11-25, 2025-06-18, 2025-03-26 and
//! 2024-11-05. The same registered tools, resources, prompts and
//! completion serve them; results drop what only 2026-07-28 has
//! (`resultType`, `ttlMs`, `cacheScope`, `serverInfo` in `_meta`). Fields
//! newer than a client's version (`structuredContent`, `title`, `icons`,
//! resource links, ...) are optional extras that older clients ignore.

mod downgrade;
mod input;

use std::collections::HashSet;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::jsonrpc::ErrorObject;
use crate::server::Inner;
use crate::server::reply::Reply;
use crate::server::request_meta::RequestMeta;
use crate::server::work::Work;
use crate::types::{LoggingLevel, ProgressToken, method};
use crate::version::LEGACY_VERSIONS;

pub(crate) use downgrade::downgrade;
pub(crate) use input::{AskFailed, AskReply, Reprepare};

/// A legacy client's session: what its `initialize` established, and what
/// it set since.
#[derive(Debug, Clone)]
pub(crate) struct LegacySession {
    pub version: String,
    pub client_capabilities: Map<String, Value>,
    pub client_info: Option<crate::types::Implementation>,
    /// `notifications/initialized` arrived: list changes may be sent.
    pub initialized: bool,
    /// `logging/setLevel`, for the whole connection.
    pub log_level: Option<LoggingLevel>,
    /// `resources/subscribe`, for the whole connection.
    pub subscribed: HashSet<String>,
}

/// What a legacy-only request asks of the owner.
#[derive(Debug)]
pub(crate) enum LegacyRequest {
    /// `ping` (2025-11-25 basic/utilities/ping: answered at any time, an
    /// empty result).
    Ping,
    Initialize(Box<LegacySession>),
    SetLevel(LoggingLevel),
    Subscribe(String),
    Unsubscribe(String),
}

impl LegacySession {
    /// The request metadata a legacy request stands for: the session's
    /// version, capabilities and log level, and its own progress token.
    pub fn meta(&self, progress_token: Option<ProgressToken>) -> RequestMeta {
        RequestMeta {
            protocol_version: self.version.clone(),
            client_capabilities: self.client_capabilities.clone(),
            client_info: self.client_info.clone(),
            log_level: self.log_level,
            progress_token,
            raw: None,
        }
    }
}

/// Reads an `initialize` request (2025-11-25 basic/lifecycle): the answer
/// is the requested version if this server speaks it, otherwise its newest
/// legacy version.
pub(crate) fn initialize(params: &str) -> Result<LegacySession, ErrorObject> {
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
    Ok(LegacySession {
        version,
        client_capabilities: params.capabilities,
        client_info: params.client_info,
        initialized: false,
        log_level: None,
        subscribed: HashSet::new(),
    })
}

/// The `InitializeResult` for a session.
pub(crate) fn initialize_result(inner: &Inner, session: &LegacySession) -> Value {
    let mut result = json!({
        "protocolVersion": session.version,
        "capabilities": inner.capabilities(),
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
    let has_resources = inner
        .registry
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .has_resources;
    Some(match method {
        "logging/setLevel" => set_level(params).map(LegacyRequest::SetLevel),
        "resources/subscribe" if has_resources => {
            subscription_uri(params).map(LegacyRequest::Subscribe)
        }
        "resources/unsubscribe" if has_resources => {
            subscription_uri(params).map(LegacyRequest::Unsubscribe)
        }
        method::SUBSCRIPTIONS_LISTEN => Err(ErrorObject::method_not_found(method)),
        _ => return None,
    })
}

/// Which round of a request is being prepared: only the first one of a
/// legacy request is wrapped (the wrapper runs the later ones itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    First,
    Retry,
}

/// How the work of a legacy request is wrapped: its reply drops what only
/// 2026-07-28 results carry, and one whose handler may ask for input asks
/// the client from the pool (it waits for the answers).
pub(crate) enum Wrap {
    Downgrade { method: String, version: String },
    Bridge(Box<input::Bridge>),
}

impl Wrap {
    /// The wrap of the first round of a legacy request of `method` with
    /// `params`; `None` for a later round. `reprepare` prepares the later
    /// rounds (the kernel's own preparation, handed down so that this
    /// module never calls up into it).
    pub fn new(
        inner: &Arc<Inner>,
        method: &str,
        params: &str,
        session: &LegacySession,
        round: Round,
        reprepare: Reprepare,
    ) -> Option<Wrap> {
        if round == Round::Retry {
            return None;
        }
        Some(if input::may_ask(method) {
            Wrap::Bridge(Box::new(input::Bridge {
                inner: Arc::clone(inner),
                method: method.to_owned(),
                params: params.to_owned(),
                session: session.clone(),
                reprepare,
            }))
        } else {
            Wrap::Downgrade {
                method: method.to_owned(),
                version: session.version.clone(),
            }
        })
    }

    /// Wraps `work`; a request that may ask waits for answers, so it runs
    /// on the pool whatever it was registered as.
    pub fn apply(self, work: Work, inline: bool) -> (Work, bool) {
        match self {
            Wrap::Bridge(bridge) => (bridge.wrap(work), false),
            Wrap::Downgrade { method, version } => (
                Box::new(move |ctx| {
                    Reply::Line(downgrade(work(ctx).into_line(), &method, &version))
                }),
                inline,
            ),
        }
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
}
