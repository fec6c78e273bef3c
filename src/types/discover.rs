//! `server/discover`: the server's supported versions, capabilities and
//! instructions (spec server/discover).

use serde::{Deserialize, Serialize};

use super::{CacheScope, LATEST_PROTOCOL_VERSION, Meta, ResultType, ServerCapabilities};

/// The result of `server/discover` (schema `DiscoverResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Protocol versions the server supports, such as `"2026-07-28"`.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata, such as `io.modelcontextprotocol/serverInfo`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl DiscoverResult {
    /// A complete result supporting [`LATEST_PROTOCOL_VERSION`] only.
    pub fn new(capabilities: ServerCapabilities) -> DiscoverResult {
        DiscoverResult {
            supported_versions: vec![LATEST_PROTOCOL_VERSION.to_owned()],
            capabilities,
            instructions: None,
            ttl_ms: None,
            cache_scope: None,
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }
}
