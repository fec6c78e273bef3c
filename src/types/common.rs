//! Small types shared by every spec section: `ResultType`, `CacheScope`,
//! `Implementation`, `Icon`, `Annotations`, `Role`, `Cursor`, and the
//! params object that carries nothing but `_meta`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Meta;

/// A free-form JSON object (schema `JSONObject`).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// An opaque pagination token (schema `Cursor`).
pub type Cursor = String;

/// The kind of a result (schema `ResultType`).
///
/// Extensions may add values, so an unknown string deserializes into
/// [`ResultType::Other`] instead of failing; the spec says a client must treat
/// such a result as invalid, and that is the caller's decision to make, not
/// the parser's. An absent `resultType` means `complete` (spec basic/index).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// `"complete"`: the result holds the final content.
    Complete,
    /// `"input_required"`: the result is an `InputRequiredResult`.
    InputRequired,
    /// `"task"`: the result is a `CreateTaskResult` (Tasks extension).
    Task,
    /// Any other value, kept verbatim.
    Other(String),
}

impl ResultType {
    /// The value as it appears on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
            ResultType::Other(s) => s,
        }
    }
}

impl From<&str> for ResultType {
    fn from(s: &str) -> ResultType {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            "task" => ResultType::Task,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ResultType, D::Error> {
        struct ResultTypeVisitor;
        impl serde::de::Visitor<'_> for ResultTypeVisitor {
            type Value = ResultType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a result type string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ResultType, E> {
                Ok(ResultType::from(s))
            }
        }
        deserializer.deserialize_str(ResultTypeVisitor)
    }
}

/// Who may cache a cacheable result (`cacheScope` of schema `CacheableResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// `"public"`: the result is the same for every client.
    Public,
    /// `"private"`: the result is specific to this client or user.
    Private,
}

/// The sender or recipient of a message (schema `Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `"user"`.
    User,
    /// `"assistant"`.
    Assistant,
}

/// The background an icon is designed for (`theme` of schema `Icon`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// `"light"`.
    Light,
    /// `"dark"`.
    Dark,
}

/// An icon for a tool, resource, prompt or implementation (schema `Icon`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `http(s):` or `data:` URI of the image.
    pub src: String,
    /// The MIME type, if the server's is missing or generic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The background the icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

impl Icon {
    /// An icon with only its `src`.
    pub fn new(src: impl Into<String>) -> Icon {
        Icon {
            src: src.into(),
            mime_type: None,
            sizes: None,
            theme: None,
        }
    }
}

/// Name and version of a client or server (schema `Implementation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// The programmatic name.
    pub name: String,
    /// The version string.
    pub version: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A website for the implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
}

impl Implementation {
    /// An implementation with only `name` and `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Implementation {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
            icons: None,
        }
    }
}

/// Hints to the client about how to use an object (schema `Annotations`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the object is intended for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last modification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// Params that hold only `_meta` (schema `RequestParams`), as sent with
/// `server/discover`; also used for the optional params of `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    /// Request metadata; see [`super::meta_key`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of the list requests (schema `PaginatedRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedRequestParams {
    /// Where to continue, from a previous result's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Request metadata; see [`super::meta_key`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_type_known_and_unknown() {
        let rt: ResultType = serde_json::from_str(r#""complete""#).unwrap();
        assert_eq!(rt, ResultType::Complete);
        let rt: ResultType = serde_json::from_str(r#""input_required""#).unwrap();
        assert_eq!(rt, ResultType::InputRequired);
        let rt: ResultType = serde_json::from_str(r#""task""#).unwrap();
        assert_eq!(rt, ResultType::Task);
        assert_eq!(serde_json::to_string(&rt).unwrap(), r#""task""#);
        let rt: ResultType = serde_json::from_str(r#""deferred""#).unwrap();
        assert_eq!(rt, ResultType::Other("deferred".into()));
        assert_eq!(serde_json::to_string(&rt).unwrap(), r#""deferred""#);
        assert_eq!(
            serde_json::to_string(&ResultType::InputRequired).unwrap(),
            r#""input_required""#
        );
        assert!(serde_json::from_str::<ResultType>("1").is_err());
        // From a `Value` too, as the runtime deserializes params from one.
        let rt = ResultType::deserialize(&serde_json::json!("complete")).unwrap();
        assert_eq!(rt, ResultType::Complete);
    }

    #[test]
    fn cache_scope_and_role_are_lowercase() {
        assert_eq!(
            serde_json::to_string(&CacheScope::Private).unwrap(),
            r#""private""#
        );
        assert_eq!(
            serde_json::to_string(&Role::Assistant).unwrap(),
            r#""assistant""#
        );
        assert!(serde_json::from_str::<CacheScope>(r#""Public""#).is_err());
    }
}
