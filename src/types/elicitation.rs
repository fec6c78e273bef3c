//! Elicitation: `elicitation/create`, which a server sends to the client
//! inside `inputRequests`, and the client's `ElicitResult` (spec
//! client/elicitation). The schemas of requested fields are in
//! [`super::elicitation_schema`].
//!
//! Form mode may omit `mode` (form is the default), so
//! `ElicitRequestFormParams::mode` is optional and keeps whether it was sent;
//! [`ElicitRequestParams`] dispatches on the `mode` string by hand.

use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeOwned, Error as _, MapAccess, Visitor};
use serde::ser::SerializeMap;
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
        #[derive(Deserialize)]
        struct Mode {
            mode: Option<Value>,
        }
        // Buffered once: `mode` may come after the fields it governs, and
        // this is off the hot path. Not as a `Value`, whose objects are
        // sorted by key: a form's fields keep their order (`Properties`).
        let buffered = super::ordered::Ordered::deserialize(deserializer)?;
        let Mode { mode } = super::ordered::read(&buffered)?;
        match mode {
            None => {}
            Some(Value::String(mode)) if mode == "form" => {}
            Some(Value::String(mode)) if mode == "url" => {
                return super::ordered::read(&buffered).map(ElicitRequestParams::Url);
            }
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "unknown elicitation mode {other}"
                )));
            }
        }
        super::ordered::read(&buffered).map(ElicitRequestParams::Form)
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
    /// The fields, by name, in the order the schema lists them.
    pub properties: Properties,
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
            properties: Properties::default(),
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

/// The fields of a form (`properties` of schema `ElicitRequestedSchema`), in
/// the order the schema lists them. A JSON object's members have no order
/// of their own, but a form's author wrote its fields in one (a name before
/// an email address) and every client shows them so: a map sorted by name
/// would ask the questions in another order, and answers typed in the
/// author's order would land in the wrong fields.
///
/// ```
/// use mcp_stdio::types::{ElicitRequestedSchema, StringSchema};
///
/// let form: ElicitRequestedSchema = serde_json::from_str(
///     r#"{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"}}}"#,
/// )?;
/// let names: Vec<&String> = form.properties.keys().collect();
/// assert_eq!(names, ["zeta", "alpha"]);
/// assert!(form.properties.get("alpha").is_some());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Properties(Vec<(String, PrimitiveSchemaDefinition)>);

impl Properties {
    /// The schema of field `name`.
    pub fn get(&self, name: &str) -> Option<&PrimitiveSchemaDefinition> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// Whether there is a field `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Adds field `name` last, or replaces the field of that name where it
    /// is; the schema it replaced.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
    ) -> Option<PrimitiveSchemaDefinition> {
        let (name, schema) = (name.into(), schema.into());
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => Some(std::mem::replace(old, schema)),
            None => {
                self.0.push((name, schema));
                None
            }
        }
    }

    /// The fields' names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(n, _)| n)
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &PrimitiveSchemaDefinition)> {
        self.0.iter().map(|(n, s)| (n, s))
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no field.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Properties {
    type Item = (&'a String, &'a PrimitiveSchemaDefinition);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, PrimitiveSchemaDefinition)>,
        fn(&'a (String, PrimitiveSchemaDefinition)) -> (&'a String, &'a PrimitiveSchemaDefinition),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(n, s)| (n, s))
    }
}

impl<S: Into<PrimitiveSchemaDefinition>> FromIterator<(String, S)> for Properties {
    fn from_iter<I: IntoIterator<Item = (String, S)>>(fields: I) -> Properties {
        let mut properties = Properties::default();
        for (name, schema) in fields {
            properties.insert(name, schema);
        }
        properties
    }
}

impl Serialize for Properties {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, schema) in &self.0 {
            map.serialize_entry(name, schema)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Properties {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Properties, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Properties;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of field schemas")
            }

            /// In time linear in the fields (a hostile server may send
            /// tens of thousands): each name is looked up in a hash map of
            /// where it stands, not searched for among those before it. A
            /// field whose schema is not one a form may hold (the spec's
            /// `PrimitiveSchemaDefinition`: no object) is an error that
            /// names it.
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Properties, A::Error> {
                let mut fields: Vec<(String, PrimitiveSchemaDefinition)> = Vec::new();
                let mut at: HashMap<String, usize> = HashMap::new();
                while let Some(name) = map.next_key::<String>()? {
                    let schema = map
                        .next_value::<PrimitiveSchemaDefinition>()
                        .map_err(|e| A::Error::custom(format_args!("form field {name:?}: {e}")))?;
                    // A name given twice: the later schema, in the first
                    // one's place (as a JSON object read into a map keeps
                    // the later).
                    match at.get(&name) {
                        Some(&i) => fields[i].1 = schema,
                        None => {
                            at.insert(name.clone(), fields.len());
                            fields.push((name, schema));
                        }
                    }
                }
                Ok(Properties(fields))
            }
        }
        deserializer.deserialize_map(Fields)
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
