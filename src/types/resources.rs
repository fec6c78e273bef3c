//! Resources: listing them, their templates, reading them, and the
//! notification that one changed (spec server/resources).

use serde::{Deserialize, Serialize};

use super::{
    Annotations, CacheScope, Cursor, Icon, InputResponses, Meta, ResourceContents, ResourceLink,
    ResultType,
};

/// A resource the server can read (schema `Resource`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The URI of the resource.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The size in bytes before any encoding, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Resource {
    /// A resource with only `uri` and `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Resource {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            size: None,
            icons: None,
            meta: None,
        }
    }
}

impl From<Resource> for ResourceLink {
    /// A link carrying every field of the resource.
    fn from(r: Resource) -> ResourceLink {
        ResourceLink {
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            annotations: r.annotations,
            size: r.size,
            icons: r.icons,
            meta: r.meta,
        }
    }
}

/// A parameterized family of resources (schema `ResourceTemplate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// An RFC 6570 URI template.
    pub uri_template: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type shared by all matching resources, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ResourceTemplate {
    /// A template with only `uriTemplate` and `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> ResourceTemplate {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }
}

/// Params of `resources/read` (schema `ReadResourceRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// The URI to read.
    pub uri: String,
    /// Answers to a previous `InputRequiredResult`, on a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of a previous `InputRequiredResult`, echoed verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata; see [`super::meta_key`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ReadResourceRequestParams {
    /// A read of `uri`.
    pub fn new(uri: impl Into<String>) -> ReadResourceRequestParams {
        ReadResourceRequestParams {
            uri: uri.into(),
            input_responses: None,
            request_state: None,
            meta: None,
        }
    }
}

/// The complete result of `resources/read` (schema `ReadResourceResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents; a directory-like URI may yield several.
    pub contents: Vec<ResourceContents>,
    /// How long the result may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ReadResourceResult {
    /// A complete result with these contents.
    pub fn new(contents: Vec<ResourceContents>) -> ReadResourceResult {
        ReadResourceResult {
            contents,
            ttl_ms: None,
            cache_scope: None,
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }
}

/// The result of `resources/list` (schema `ListResourcesResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// The resources on this page.
    pub resources: Vec<Resource>,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// How long the result may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ListResourcesResult {
    /// A complete, single-page result.
    pub fn new(resources: Vec<Resource>) -> ListResourcesResult {
        ListResourcesResult {
            resources,
            next_cursor: None,
            ttl_ms: None,
            cache_scope: None,
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }
}

/// The result of `resources/templates/list` (schema
/// `ListResourceTemplatesResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The templates on this page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// How long the result may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ListResourceTemplatesResult {
    /// A complete, single-page result.
    pub fn new(resource_templates: Vec<ResourceTemplate>) -> ListResourceTemplatesResult {
        ListResourceTemplatesResult {
            resource_templates,
            next_cursor: None,
            ttl_ms: None,
            cache_scope: None,
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }
}

/// Params of `notifications/resources/updated` (schema
/// `ResourceUpdatedNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUpdatedNotificationParams {
    /// The URI that changed; possibly a sub-resource of the subscribed one.
    pub uri: String,
    /// Notification metadata, such as `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
