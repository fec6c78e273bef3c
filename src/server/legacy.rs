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

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::jsonrpc::{ErrorObject, error_code};
use crate::server::Inner;
use crate::server::request_meta::RequestMeta;
use crate::types::{LoggingLevel, ProgressToken, meta_key, method};
use crate::version::LEGACY_VERSIONS;

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

/// Rewrites a reply for a legacy client: drops what only 2026-07-28
/// results carry, and turns a request for input that could not be asked
/// (a capability the client did not declare, or too many rounds; see
/// `legacy_input`) into an error it can show.
pub(crate) fn downgrade(line: Vec<u8>, method_name: &str, version: &str) -> Vec<u8> {
    let Ok(mut resp) = serde_json::from_slice::<Value>(&line) else {
        return line;
    };
    let needs_input = resp["result"]["resultType"] == "input_required"
        || resp["error"]["code"] == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY;
    if needs_input {
        let what = if method_name == method::TOOLS_CALL {
            "this tool"
        } else {
            method_name
        };
        let text = match resp["error"]["data"]["requiredCapabilities"].as_object() {
            Some(required) => {
                let names: Vec<&str> = required.keys().map(String::as_str).collect();
                format!(
                    "{what} needs the client capabilities {}, which this client (MCP {version}) did not declare when it initialized",
                    names.join(", ")
                )
            }
            None => format!("{what} kept asking the client for input and never finished"),
        };
        if let Some(map) = resp.as_object_mut() {
            map.remove("error");
            map.remove("result");
            if method_name == method::TOOLS_CALL {
                map.insert(
                    "result".into(),
                    json!({ "content": [{ "type": "text", "text": text }], "isError": true }),
                );
            } else {
                let error = ErrorObject::new(error_code::INTERNAL_ERROR, text);
                map.insert(
                    "error".into(),
                    serde_json::to_value(error).unwrap_or(Value::Null),
                );
            }
        }
    } else if let Some(result) = resp.get_mut("result").and_then(Value::as_object_mut) {
        // (The rewrite goes through a `Value`; the id is put back from the
        // original text below, so that an id of any size is kept exactly.)
        result.remove("resultType");
        result.remove("ttlMs");
        result.remove("cacheScope");
        let empty_meta = match result.get_mut("_meta").and_then(Value::as_object_mut) {
            Some(meta) => {
                meta.remove(meta_key::SERVER_INFO);
                meta.is_empty()
            }
            None => false,
        };
        if empty_meta {
            result.remove("_meta");
        }
    }
    encode_with_original_id(&line, &resp).unwrap_or(line)
}

/// Encodes a rewritten response with the id taken verbatim from the
/// original line: a `Value` holds an integer beyond 64 bits as a float.
fn encode_with_original_id(original: &[u8], resp: &Value) -> Option<Vec<u8>> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    #[derive(serde::Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a Value>,
    }
    let head: Head<'_> = serde_json::from_slice(original).ok()?;
    serde_json::to_vec(&Response {
        jsonrpc: "2.0",
        id: head.id,
        result: resp.get("result"),
        error: resp.get("error"),
    })
    .ok()
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

    #[test]
    fn replies_are_downgraded() {
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}"#;
        let out = downgrade(line.to_vec(), "tools/list", "2025-11-25");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#
        );
        // An id beyond 64 bits keeps its text through the rewrite.
        let line =
            br#"{"jsonrpc":"2.0","id":-9223372036854775809,"result":{"resultType":"complete"}}"#;
        let out = downgrade(line.to_vec(), "ping", "2025-11-25");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":-9223372036854775809,"result":{}}"#
        );
    }
}
