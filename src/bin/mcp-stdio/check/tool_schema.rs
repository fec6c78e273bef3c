//! A tool's own input schema: whether it is a JSON Schema at all
//! (`shape_errors`), and arguments it certainly refuses
//! (`refused_arguments`), for `tools.input-schema` and
//! `tools.wrong-arguments`.

use serde_json::{Map, Value};

use super::schema::{Document, Found, type_name};

/// What is wrong with the shape of a tool's schema as a JSON Schema
/// (2020-12, or draft 7 where it says so): each keyword that asserts
/// something holds a value of the kind the dialect requires. Empty when
/// nothing is.
pub fn shape_errors(schema: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    shape(schema, "", &mut errors, 0);
    errors
}

fn shape(schema: &Value, path: &str, errors: &mut Vec<String>, depth: usize) {
    if depth > 64 || errors.len() >= 10 {
        return;
    }
    let map = match schema {
        Value::Bool(_) => return,
        Value::Object(map) => map,
        other => {
            errors.push(format!(
                "{}: a schema must be an object or a boolean, is {}",
                if path.is_empty() { "/" } else { path },
                type_name(other)
            ));
            return;
        }
    };
    let mut wrong = |keyword: &str, what: &str| {
        errors.push(format!("{path}/{keyword}: must be {what}"));
    };
    const TYPES: &[&str] = &[
        "null", "boolean", "object", "array", "number", "string", "integer",
    ];
    let mut nested: Vec<(String, &Value)> = Vec::new();
    for (keyword, arg) in map {
        match keyword.as_str() {
            "type" => {
                let ok = match arg {
                    Value::String(t) => TYPES.contains(&t.as_str()),
                    Value::Array(ts) => {
                        !ts.is_empty()
                            && ts
                                .iter()
                                .all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t)))
                    }
                    _ => false,
                };
                if !ok {
                    wrong(
                        "type",
                        "a type name (null, boolean, object, array, number, string, integer) or an array of them",
                    );
                }
            }
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                match arg.as_object() {
                    Some(members) => nested.extend(
                        members
                            .iter()
                            .map(|(name, s)| (format!("{path}/{keyword}/{name}"), s)),
                    ),
                    None => wrong(keyword, "an object of schemas"),
                }
            }
            "required" => {
                let ok = arg
                    .as_array()
                    .is_some_and(|names| names.iter().all(Value::is_string));
                if !ok {
                    wrong("required", "an array of strings");
                }
            }
            "enum"
                if !arg.is_array() => {
                    wrong("enum", "an array");
                }
            "items" => match arg {
                // Draft 7 (and older) allow an array of schemas.
                Value::Array(schemas) => nested.extend(
                    schemas
                        .iter()
                        .enumerate()
                        .map(|(i, s)| (format!("{path}/items/{i}"), s)),
                ),
                s => nested.push((format!("{path}/items"), s)),
            },
            "additionalProperties"
            | "additionalItems"
            | "not"
            | "contains"
            | "propertyNames"
            | "if"
            | "then"
            | "else"
            | "unevaluatedProperties"
            | "unevaluatedItems" => nested.push((format!("{path}/{keyword}"), arg)),
            "anyOf" | "allOf" | "oneOf" | "prefixItems" => match arg.as_array() {
                Some(schemas) if !schemas.is_empty() => nested.extend(
                    schemas
                        .iter()
                        .enumerate()
                        .map(|(i, s)| (format!("{path}/{keyword}/{i}"), s)),
                ),
                _ => wrong(keyword, "a non-empty array of schemas"),
            },
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
                // Draft 4's boolean exclusive bounds are allowed too.
                if !(arg.is_number() || (keyword.starts_with("exclusive") && arg.is_boolean())) => {
                    wrong(keyword, "a number");
                }
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties"
                if !(arg.is_u64() || arg.as_f64().is_some_and(|f| f >= 0.0 && f.fract() == 0.0)) => {
                    wrong(keyword, "a non-negative integer");
                }
            "$ref" | "pattern" | "format" | "$schema" | "$id" | "title" | "description"
            | "$comment" | "$anchor"
                if !arg.is_string() => {
                    wrong(keyword, "a string");
                }
            "uniqueItems" | "readOnly" | "writeOnly" | "deprecated" if !arg.is_boolean() => {
                wrong(keyword, "a boolean")
            }
            _ => {}
        }
    }
    for (at, s) in nested {
        shape(s, &at, errors, depth + 1);
    }
}

/// Arguments that a tool's `schema` refuses, found without a guess: the
/// required properties left out (no arguments), else (when `any_way`) a
/// declared property of one type given another, else a member the schema
/// forbids. `None` when no such arguments are certain, so that no tool is
/// ever called with arguments it accepts.
///
/// Without `any_way` only the first way is tried: a server that does not
/// validate its inputs (spec 2026-07-28 server/tools, Security: "Servers
/// MUST: Validate all tool inputs") then runs a handler that lacks what it
/// requires, rather than one given a value of another type, which a lax
/// handler could act on.
pub fn refused_arguments(schema: &Value, any_way: bool) -> Option<(Value, String)> {
    let map = schema.as_object()?;
    let doc = Document::of(schema);
    let refused = |args: Value, why: String| match doc.validate(&args) {
        Found::Invalid(_) => Some((args, why)),
        _ => None,
    };
    if let Some(first) = map
        .get("required")
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .and_then(Value::as_str)
        && let Some(found) = refused(
            Value::Object(Map::new()),
            format!("no arguments, though {first} is required"),
        )
    {
        return Some(found);
    }
    if !any_way {
        return None;
    }
    for (name, prop) in map
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Some(ty) = prop.get("type").and_then(Value::as_str) else {
            continue;
        };
        let wrong = match ty {
            "string" => serde_json::json!(12345),
            "number" | "integer" => serde_json::json!("not a number"),
            "boolean" => serde_json::json!("not a boolean"),
            "array" | "object" | "null" => serde_json::json!("a string"),
            _ => continue,
        };
        let mut args = Map::new();
        args.insert(name.clone(), wrong.clone());
        if let Some(found) = refused(
            Value::Object(args),
            format!(
                "{name} given as {} where the schema says {ty}",
                type_name(&wrong)
            ),
        ) {
            return Some(found);
        }
    }
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        let args = serde_json::json!({ "mcp_stdio_check_unexpected": 1 });
        return refused(
            args,
            "a member the schema does not allow (additionalProperties: false)".into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refused_arguments_are_refused_and_none_are_made_up() {
        let schema = json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] });
        assert_eq!(
            refused_arguments(&schema, false).map(|(a, _)| a),
            Some(json!({}))
        );
        let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } } });
        assert_eq!(
            refused_arguments(&schema, true).map(|(a, _)| a),
            Some(json!({ "n": "not a number" }))
        );
        let schema = json!({ "type": "object", "additionalProperties": false });
        assert!(refused_arguments(&schema, true).is_some());
        // Anything goes: nothing is certain to be refused.
        assert_eq!(refused_arguments(&json!({ "type": "object" }), true), None);
        // A property whose type an anyOf decides: not certain.
        let schema = json!({ "type": "object", "properties": { "x": { "anyOf": [{ "type": "string" }, { "type": "integer" }] } } });
        assert_eq!(refused_arguments(&schema, true), None);
    }

    #[test]
    fn shape_errors_name_the_keyword() {
        assert!(
            shape_errors(&json!({ "type": "object", "properties": { "a": { "type": "string" } } }))
                .is_empty()
        );
        assert_eq!(
            shape_errors(&json!({ "type": "object", "properties": { "a": { "type": "text" } } })),
            vec![
                "/properties/a/type: must be a type name (null, boolean, object, array, number, string, integer) or an array of them"
            ]
        );
        assert_eq!(
            shape_errors(&json!({ "type": "object", "required": "a" })),
            vec!["/required: must be an array of strings"]
        );
    }
}
