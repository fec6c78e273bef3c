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

    /// The same resource with this display title.
    pub fn title(mut self, title: impl Into<String>) -> Resource {
        self.title = Some(title.into());
        self
    }

    /// The same resource with this description, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Resource {
        self.description = Some(description.into());
        self
    }

    /// The same resource with this MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Resource {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The same resource with these annotations.
    pub fn annotations(mut self, annotations: Annotations) -> Resource {
        self.annotations = Some(annotations);
        self
    }

    /// The same resource with this size in bytes (before any encoding).
    pub fn size(mut self, size: u64) -> Resource {
        self.size = Some(size);
        self
    }

    /// The same resource with these icons.
    pub fn icons(mut self, icons: Vec<Icon>) -> Resource {
        self.icons = Some(icons);
        self
    }

    /// The same resource with this `_meta`.
    pub fn meta(mut self, meta: Meta) -> Resource {
        self.meta = Some(meta);
        self
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

    /// The same template with this display title.
    pub fn title(mut self, title: impl Into<String>) -> ResourceTemplate {
        self.title = Some(title.into());
        self
    }

    /// The same template with this description, for the model.
    pub fn description(mut self, description: impl Into<String>) -> ResourceTemplate {
        self.description = Some(description.into());
        self
    }

    /// The same template with the MIME type of every resource it matches.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> ResourceTemplate {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The same template with these annotations.
    pub fn annotations(mut self, annotations: Annotations) -> ResourceTemplate {
        self.annotations = Some(annotations);
        self
    }

    /// The same template with these icons.
    pub fn icons(mut self, icons: Vec<Icon>) -> ResourceTemplate {
        self.icons = Some(icons);
        self
    }

    /// The same template with this `_meta`.
    pub fn meta(mut self, meta: Meta) -> ResourceTemplate {
        self.meta = Some(meta);
        self
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_builders_set_every_field_of_the_schema() {
        let mut meta = Meta::new();
        meta.insert("k".into(), serde_json::json!(1));
        let resource = Resource::new("file:///a.txt", "a")
            .title("A")
            .description("The letter a.")
            .mime_type("text/plain")
            .annotations(Annotations::default())
            .size(1)
            .icons(vec![])
            .meta(meta.clone());
        assert_eq!(
            serde_json::to_string(&resource).unwrap(),
            r#"{"uri":"file:///a.txt","name":"a","title":"A","description":"The letter a.","mimeType":"text/plain","annotations":{},"size":1,"icons":[],"_meta":{"k":1}}"#
        );
        let template = ResourceTemplate::new("file:///{path}", "files")
            .title("Files")
            .description("Any file.")
            .mime_type("text/plain")
            .annotations(Annotations::default())
            .icons(vec![])
            .meta(meta);
        assert_eq!(
            serde_json::to_string(&template).unwrap(),
            r#"{"uriTemplate":"file:///{path}","name":"files","title":"Files","description":"Any file.","mimeType":"text/plain","annotations":{},"icons":[],"_meta":{"k":1}}"#
        );
    }
}
