//! Elicitation: `elicitation/create`, which a server sends to the client
//! inside `inputRequests`, and the client's `ElicitResult` (spec
//! client/elicitation). The schemas of requested fields are in
//! [`super::elicitation_schema`].
//!
//! Form mode may omit `mode` (form is the default), so
//! `ElicitRequestFormParams::mode` is optional and keeps whether it was sent;
//! [`ElicitRequestParams`] dispatches on the `mode` string by hand.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{JsonObject, PrimitiveSchemaDefinition};
#[cfg(feature = "schemars")]
use crate::jsonrpc::ErrorObject;

/// Params of `elicitation/create` (schema `ElicitRequestParams`): form mode
/// or URL mode, decided by `mode` (absent means form).
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitRequestParams {
    /// Ask for structured data in the client's UI.
    Form(ElicitRequestFormParams),
    /// Send the user to a URL, for data that must not pass through the client.
    Url(ElicitRequestURLParams),
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(p) => p.serialize(serializer),
            ElicitRequestParams::Url(p) => p.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ElicitRequestParams, D::Error> {
        use serde::de::Error;
        // Buffered once: `mode` may come after the fields it governs, and
        // this is off the hot path.
        let value = Value::deserialize(deserializer)?;
        match value.get("mode") {
            None => {}
            Some(Value::String(mode)) if mode == "form" => {}
            Some(Value::String(mode)) if mode == "url" => {
                return ElicitRequestURLParams::deserialize(value)
                    .map(ElicitRequestParams::Url)
                    .map_err(D::Error::custom);
            }
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "unknown elicitation mode {other}"
                )));
            }
        }
        ElicitRequestFormParams::deserialize(value)
            .map(ElicitRequestParams::Form)
            .map_err(D::Error::custom)
    }
}

/// Form-mode params of `elicitation/create` (schema `ElicitRequestFormParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `Some("form")` if sent; the spec lets it be omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What to ask the user.
    pub message: String,
    /// The fields to fill in.
    pub requested_schema: ElicitRequestedSchema,
}

impl ElicitRequestFormParams {
    /// Form params with `mode: "form"` spelled out.
    pub fn new(
        message: impl Into<String>,
        requested_schema: ElicitRequestedSchema,
    ) -> ElicitRequestFormParams {
        ElicitRequestFormParams {
            mode: Some("form".to_owned()),
            message: message.into(),
            requested_schema,
        }
    }
}

/// URL-mode params of `elicitation/create` (schema `ElicitRequestURLParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestURLParams {
    /// Always `"url"`.
    pub mode: String,
    /// Why the user should open the URL.
    pub message: String,
    /// The URL to open.
    pub url: String,
}

impl ElicitRequestURLParams {
    /// URL params with `mode: "url"`.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> ElicitRequestURLParams {
        ElicitRequestURLParams {
            mode: "url".to_owned(),
            message: message.into(),
            url: url.into(),
        }
    }
}

/// The `requestedSchema` of schema `ElicitRequestFormParams`: a flat object
/// of primitive fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestedSchema {
    /// The JSON Schema dialect, if not the default.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    pub r#type: String,
    /// The fields, by name.
    pub properties: BTreeMap<String, PrimitiveSchemaDefinition>,
    /// Names of the fields that must be filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
}

impl Default for ElicitRequestedSchema {
    /// An object schema with no fields.
    fn default() -> ElicitRequestedSchema {
        ElicitRequestedSchema {
            schema: None,
            r#type: "object".to_owned(),
            properties: BTreeMap::new(),
            required: None,
        }
    }
}

impl ElicitRequestedSchema {
    /// The same schema with one more field.
    pub fn property(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
        required: bool,
    ) -> ElicitRequestedSchema {
        let name = name.into();
        if required {
            self.required
                .get_or_insert_with(Vec::new)
                .push(name.clone());
        }
        self.properties.insert(name, schema.into());
        self
    }
}

#[cfg(feature = "schemars")]
#[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
impl ElicitRequestedSchema {
    /// The form for the fields of `T`: each field's doc comment as its
    /// description, required unless it is an `Option`; `String`, numbers,
    /// `bool`, unit-variant enums and `Vec`s of them. A type a form cannot
    /// express (a nested struct, a map, a variant with data) is an error
    /// naming the field, which a handler passes on with `?` (`-32603`),
    /// before anything is sent. Read the answer back with
    /// [`ElicitResult::content_as`] or
    /// `RequestContext::elicitation_as`.
    ///
    /// ```
    /// use mcp_stdio::types::ElicitRequestedSchema;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Contact {
    ///     /// Your name.
    ///     name: String,
    ///     /// Your age, if you will say.
    ///     age: Option<u8>,
    /// }
    ///
    /// let form = ElicitRequestedSchema::for_type::<Contact>()?;
    /// assert_eq!(form.required, Some(vec!["name".to_owned()]));
    /// # Ok::<(), mcp_stdio::ErrorObject>(())
    /// ```
    pub fn for_type<T: schemars::JsonSchema>() -> Result<ElicitRequestedSchema, ErrorObject> {
        crate::schema::form_of::<T>()
    }
}

/// What the user did with an elicitation (`action` of schema `ElicitResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// `"accept"`: submitted (form) or consented (URL).
    Accept,
    /// `"decline"`: explicitly refused.
    Decline,
    /// `"cancel"`: dismissed without choosing.
    Cancel,
}

/// The client's answer to `elicitation/create` (schema `ElicitResult`), sent
/// back inside `inputResponses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted fields, on form-mode accept: each a string, integer,
    /// number, boolean or array of strings. Kept as JSON so the server can
    /// check it against the schema it sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
}

impl ElicitResult {
    /// An `accept` with these fields.
    pub fn accept(content: JsonObject) -> ElicitResult {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// An `accept` with the fields of `value` (a struct that serializes
    /// to an object, such as the type the form was built from).
    pub fn accept_fields<T: Serialize>(value: &T) -> Result<ElicitResult, serde_json::Error> {
        match serde_json::to_value(value)? {
            Value::Object(content) => Ok(ElicitResult::accept(content)),
            other => Err(serde::ser::Error::custom(format!(
                "a form's answer is an object, not {other}"
            ))),
        }
    }

    /// The submitted fields read into `T` (typically the type the form was
    /// built from); `None` unless the user accepted.
    pub fn content_as<T: DeserializeOwned>(&self) -> Result<Option<T>, serde_json::Error> {
        match (&self.action, &self.content) {
            (ElicitAction::Accept, Some(content)) => {
                T::deserialize(Value::Object(content.clone())).map(Some)
            }
            (ElicitAction::Accept, None) => {
                T::deserialize(Value::Object(JsonObject::new())).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A `decline`.
    pub fn decline() -> ElicitResult {
        ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// A `cancel`.
    pub fn cancel() -> ElicitResult {
        ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StringSchema;

    #[test]
    fn mode_dispatch() {
        let form = r#"{"message":"m","requestedSchema":{"type":"object","properties":{}}}"#;
        let p: ElicitRequestParams = serde_json::from_str(form).unwrap();
        assert!(matches!(&p, ElicitRequestParams::Form(f) if f.mode.is_none()));
        assert_eq!(serde_json::to_string(&p).unwrap(), form);
        let url = r#"{"url":"https://x","mode":"url","message":"m"}"#;
        let p: ElicitRequestParams = serde_json::from_str(url).unwrap();
        assert!(matches!(&p, ElicitRequestParams::Url(u) if u.url == "https://x"));
        assert!(
            serde_json::from_str::<ElicitRequestParams>(r#"{"mode":"x","message":"m"}"#).is_err()
        );
    }

    #[test]
    fn requested_schema_builder() {
        let schema =
            ElicitRequestedSchema::default().property("name", StringSchema::default(), true);
        let p = ElicitRequestFormParams::new("Who?", schema);
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"mode":"form","message":"Who?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}"#
        );
    }
}
