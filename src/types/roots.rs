//! Roots: `roots/list`, which a server sends to the client inside
//! `inputRequests` (spec client/roots).

use serde::{Deserialize, Serialize};

use super::Meta;

/// A directory or file the server may work in (schema `Root`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The client's answer to `roots/list` (schema `ListRootsResult`), sent back
/// inside `inputResponses`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}
