//! JSON Schemas derived from Rust types with `schemars` (feature
//! `schemars`): a tool's input and output schemas, a prompt's arguments, an
//! elicitation form. The type is the single source of truth; `schemars`
//! reads serde's attributes (`rename`, `default`, `skip`, ...) and doc
//! comments (descriptions).
//!
//! Schemas are JSON Schema 2020-12 (the spec's default dialect) with every
//! subschema inlined: many clients and models handle `$ref` poorly. Only a
//! recursive type keeps a `$ref`.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::jsonrpc::ErrorObject;
use crate::types::{ElicitRequestedSchema, PrimitiveSchemaDefinition, PromptArgument};

/// The schema of `T`, as JSON.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The schema of `T`, which must be an object schema (`"type": "object"`
/// at the root, as the spec requires of `inputSchema` and `outputSchema`).
///
/// # Panics
///
/// When `T` is not a struct (or a map, or `serde_json::Value`): a
/// programming error, found the first time the tool is built.
pub(crate) fn object_schema_of<T: JsonSchema>(what: &str) -> Value {
    let mut schema = schema_of::<T>();
    // A type that takes any JSON (`serde_json::Value`) takes any object.
    if let Some(map) = schema.as_object_mut()
        && !map.contains_key("type")
        && !map.contains_key("$ref")
        && !map
            .keys()
            .any(|k| k.ends_with("Of") || k == "enum" || k == "const")
    {
        map.insert("type".into(), "object".into());
    }
    assert!(
        schema.get("type").and_then(Value::as_str) == Some("object"),
        "the {what} of a tool must be an object schema (a struct), but {} is {}",
        T::schema_name(),
        schema
    );
    schema
}

/// A typed tool's input schema unless it names one: `T`'s object schema,
/// or `None` for a type that takes any JSON (`serde_json::Value`), whose
/// tool keeps `{"type":"object"}`.
///
/// # Panics
///
/// As [`object_schema_of`].
pub(crate) fn input_schema_of<T: JsonSchema>() -> Option<Value> {
    let schema = schema_of::<T>();
    let says_something = schema.as_object().is_some_and(|map| {
        map.keys()
            .any(|k| !matches!(k.as_str(), "$schema" | "title" | "description"))
    });
    says_something.then(|| object_schema_of::<T>("input schema"))
}

/// A prompt's arguments from the fields of `T`: name, title and
/// description from the schema, required unless the field is optional.
pub(crate) fn prompt_arguments_of<T: JsonSchema>() -> Vec<PromptArgument> {
    let schema = object_schema_of::<T>("arguments");
    let required = required(&schema);
    properties(&schema)
        .map(|(name, field)| PromptArgument {
            name: name.clone(),
            title: text(field, "title"),
            description: text(field, "description"),
            required: Some(required.contains(&name.as_str())),
        })
        .collect()
}

/// An elicitation form's `requestedSchema` from the fields of `T`, or an
/// error that names the first field a form cannot ask for (spec 2026-07-28
/// client/elicitation: a flat object of string, number, integer, boolean
/// and enum fields).
pub(crate) fn form_of<T: JsonSchema>() -> Result<ElicitRequestedSchema, ErrorObject> {
    let schema = schema_of::<T>();
    let name = T::schema_name();
    let cannot = |why: String| {
        ErrorObject::internal_error(format!(
            "{name} cannot be asked for as an elicitation form: {why}"
        ))
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(cannot("a form is an object (a struct)".into()));
    }
    let required = required(&schema);
    let mut form = ElicitRequestedSchema::default();
    for (field, property) in properties(&schema) {
        let property =
            form_field(property).map_err(|why| cannot(format!("field {field}: {why}")))?;
        form = form.property(field.clone(), property, required.contains(&field.as_str()));
    }
    Ok(form)
}

/// One form field from a property's schema: `Option`'s `null` dropped,
/// number formats (`uint32`, ...) dropped, documented enum variants given
/// their doc comment as their label. Whatever the form's field type could
/// not carry is an error, never silently dropped.
fn form_field(property: &Value) -> Result<PrimitiveSchemaDefinition, String> {
    let mut field = property
        .as_object()
        .cloned()
        .ok_or("its schema is not an object")?;
    // `Option<T>` of an enum with documented variants: `anyOf` of its
    // schema and `null`; the field is simply not required.
    if let Some(Value::Array(any_of)) = field.get("anyOf")
        && let [one] = &any_of
            .iter()
            .filter(|s| s.get("type").is_none_or(|t| t != "null"))
            .collect::<Vec<_>>()[..]
        && let Some(one) = one.as_object().cloned()
    {
        field.remove("anyOf");
        for (key, value) in one {
            field.entry(key).or_insert(value);
        }
    }
    // `Option<T>`: `"type": ["T", "null"]`; the field is simply not required.
    if let Some(Value::Array(types)) = field.get("type") {
        let types: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        let [only] = types[..] else {
            return Err("a form field has exactly one type".into());
        };
        field.insert("type".into(), only.clone());
    }
    // ... and an `Option` of a plain enum lists `null` among its values.
    if let Some(Value::Array(values)) = field.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    // Documented unit variants: a `oneOf` of string `const`s, with no
    // `type` of its own.
    if field.get("type").is_none() && field.get("oneOf").is_some() {
        field.insert("type".into(), "string".into());
    }
    match field.get("type").and_then(Value::as_str) {
        Some("integer" | "number") => {
            // `uint32`, `double`, ...: what the Rust type is, not a form's
            // concern.
            field.remove("format");
        }
        Some("string") => {
            label_one_of(&mut field);
            // Spec 2026-07-28 client/elicitation: "Supported formats:
            // email, uri, date, date-time".
            if let Some(format) = field.get("format").and_then(Value::as_str)
                && !["email", "uri", "date", "date-time"].contains(&format)
            {
                return Err(format!(
                    "format {format:?} is not one a form supports (email, uri, date, date-time)"
                ));
            }
        }
        _ => {}
    }
    let field = Value::Object(field);
    let parsed: PrimitiveSchemaDefinition = serde_json::from_value(field.clone())
        .map_err(|e| format!("a form field is a string, number, integer, boolean or enum ({e})"))?;
    // Everything the property said must survive in the form's field.
    let kept = serde_json::to_value(&parsed).map_err(|e| e.to_string())?;
    for (key, value) in field.as_object().into_iter().flatten() {
        if !kept.get(key).is_some_and(|kept| same(kept, value)) {
            return Err(format!(
                "{key} ({value}) cannot be expressed in a form field"
            ));
        }
    }
    Ok(parsed)
}

/// Whether two JSON values are equal, numbers compared by value (a form
/// keeps numbers as `f64`: `0` comes back as `0.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// An enum whose variants have doc comments is a `oneOf` of `const`s with
/// descriptions; a form's titled choice labels each with `title`.
fn label_one_of(field: &mut Map<String, Value>) {
    let Some(Value::Array(options)) = field.get_mut("oneOf") else {
        return;
    };
    for option in options.iter_mut().filter_map(Value::as_object_mut) {
        option.remove("type");
        if !option.contains_key("title") {
            let label = option
                .remove("description")
                .or_else(|| option.get("const").cloned());
            if let Some(label) = label {
                option.insert("title".into(), label);
            }
        }
    }
}

/// The properties of an object schema, in name order.
fn properties(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// The names of the required properties of an object schema.
fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// A string member of a schema.
fn text(schema: &Value, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[allow(dead_code, reason = "only the schema is read")]
    #[derive(JsonSchema)]
    struct Form {
        /// Your name.
        name: String,
        /// Your age.
        #[schemars(range(min = 0, max = 150))]
        age: Option<u8>,
        subscribe: bool,
        #[serde(default)]
        score: f64,
        color: Color,
        tagged: Option<Titled>,
        colors: Vec<Color>,
    }

    #[allow(dead_code, reason = "only the schema is read")]
    #[derive(JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Color {
        Red,
        Green,
    }

    #[allow(dead_code, reason = "only the schema is read")]
    #[derive(JsonSchema)]
    enum Titled {
        /// The first.
        A,
        /// The second.
        B,
    }

    #[allow(dead_code, reason = "only the schema is read")]
    #[derive(JsonSchema)]
    struct Nested {
        inner: Form,
    }

    #[test]
    fn a_struct_becomes_a_form() {
        let form = form_of::<Form>().unwrap();
        assert_eq!(
            serde_json::to_value(&form).unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "Your name." },
                    "age": { "type": "integer", "description": "Your age.", "minimum": 0, "maximum": 150 },
                    "subscribe": { "type": "boolean" },
                    "score": { "type": "number", "default": 0 },
                    "color": { "type": "string", "enum": ["red", "green"] },
                    "tagged": { "type": "string", "oneOf": [
                        { "const": "A", "title": "The first." },
                        { "const": "B", "title": "The second." }
                    ] },
                    "colors": { "type": "array", "items": { "type": "string", "enum": ["red", "green"] } }
                },
                "required": ["color", "colors", "name", "subscribe"]
            })
        );
    }

    #[allow(dead_code, reason = "only the schema is read")]
    #[derive(JsonSchema)]
    struct Patterned {
        #[schemars(regex(pattern = "^[a-z]+$"))]
        code: String,
    }

    #[allow(dead_code, reason = "only the schema is read")]
    #[derive(JsonSchema)]
    struct Formatted {
        #[schemars(extend("format" = "uuid"))]
        id: String,
    }

    #[test]
    fn what_a_form_cannot_ask_is_an_error_naming_the_field() {
        let error = form_of::<Patterned>().unwrap_err();
        assert!(
            error.message.contains("field code: pattern"),
            "{}",
            error.message
        );
        let error = form_of::<Formatted>().unwrap_err();
        assert!(
            error.message.contains("field id: format \"uuid\""),
            "{}",
            error.message
        );
        let error = form_of::<Nested>().unwrap_err();
        assert!(error.message.contains("Nested"), "{}", error.message);
        assert!(error.message.contains("field inner"), "{}", error.message);
        let error = form_of::<String>().unwrap_err();
        assert!(
            error.message.contains("a form is an object"),
            "{}",
            error.message
        );
    }
}
