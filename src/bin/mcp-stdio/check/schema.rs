//! A small JSON Schema validator: the keywords the spec's `schema.json`
//! uses, and a shape check of a tool's own schema.
//!
//! Why not a JSON Schema crate: the spec's schemas use fourteen keywords
//! (`type`, `$ref`, `properties`, `required`, `const`, `items`, `anyOf`,
//! `allOf`, `additionalProperties`, `enum`, `minimum`, `maximum`,
//! `maxItems`, `format`), and a full 2020-12 validator with its regex and
//! URI dependencies would add more to the binary than this whole checker.
//! Beyond those, this one knows `oneOf`, `not`, `minItems`,
//! `minLength`/`maxLength`, `exclusiveMinimum`/`exclusiveMaximum`,
//! `minProperties`/`maxProperties`, `uniqueItems`, `patternProperties`
//! (keys compared literally), `$defs`/`definitions` and
//! `prefixItems`; `format` and `pattern` are annotations here (a value is
//! never refused for them), and any other keyword makes the answer
//! `Unknown` rather than a guess.
//!
//! The schemas are the spec's `schema.json` files with their descriptions
//! taken out (`schema/*.json`; `tests/check.rs` compares them with
//! `tests/spec/`): 77 KB in the binary instead of 356 KB.

use serde_json::{Map, Value};

/// The 2026-07-28 schema.
pub const MODERN: &str = include_str!("schema/2026-07-28.json");
/// The 2025-11-25 schema.
pub const LEGACY: &str = include_str!("schema/2025-11-25.json");

/// A schema document and its `$defs`.
pub struct Document {
    root: Value,
}

/// What validation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Valid,
    /// Each reason names the path (`/tools/0/name`) and what is wrong.
    Invalid(Vec<String>),
    /// A keyword this validator does not know decides it.
    Unknown(String),
}

impl Document {
    pub fn parse(text: &str) -> Document {
        Document {
            root: serde_json::from_str(text).expect("the embedded schema is JSON"),
        }
    }

    /// A document whose root is `schema` (a tool's input schema).
    pub fn of(schema: &Value) -> Document {
        Document {
            root: schema.clone(),
        }
    }

    /// Whether `$defs` has `name`.
    #[cfg(test)]
    pub fn has(&self, name: &str) -> bool {
        self.root.pointer(&format!("/$defs/{name}")).is_some()
    }

    /// Validates `value` against the definition `name`.
    pub fn validate_def(&self, name: &str, value: &Value) -> Found {
        let Some(schema) = self.root.pointer(&format!("/$defs/{name}")) else {
            return Found::Unknown(format!("the schema has no definition {name}"));
        };
        self.validate_with(schema, value)
    }

    /// Validates `value` against the document's root.
    pub fn validate(&self, value: &Value) -> Found {
        self.validate_with(&self.root, value)
    }

    fn validate_with(&self, schema: &Value, value: &Value) -> Found {
        let mut walk = Walk {
            doc: self,
            errors: Vec::new(),
            unknown: None,
            depth: 0,
        };
        walk.check(schema, value, "");
        match (walk.errors.is_empty(), walk.unknown) {
            (false, _) => Found::Invalid(walk.errors),
            (true, Some(keyword)) => Found::Unknown(keyword),
            (true, None) => Found::Valid,
        }
    }
}

/// Keywords that assert nothing about the value (annotations, and the
/// ones other keywords read).
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "pattern",
    "contentMediaType",
    "contentEncoding",
    "x-mcp-header",
    "enumNames",
];

struct Walk<'a> {
    doc: &'a Document,
    errors: Vec<String>,
    unknown: Option<String>,
    depth: usize,
}

impl Walk<'_> {
    fn fail(&mut self, path: &str, what: String) {
        if self.errors.len() < 20 {
            let at = if path.is_empty() { "/" } else { path };
            self.errors.push(format!("{at}: {what}"));
        }
    }

    /// Whether `value` is valid against `schema`, without recording, and
    /// the keyword that left it undecided, if one did.
    fn probe(&self, schema: &Value, value: &Value, path: &str) -> (bool, Option<String>) {
        let mut inner = Walk {
            doc: self.doc,
            errors: Vec::new(),
            unknown: None,
            depth: self.depth,
        };
        inner.check(schema, value, path);
        let valid = inner.errors.is_empty();
        (valid, if valid { inner.unknown } else { None })
    }

    /// Whether `value` is valid against `schema`; an undecided one counts
    /// as valid, and the answer becomes `Unknown` unless something else
    /// is wrong.
    fn passes(&mut self, schema: &Value, value: &Value, path: &str) -> bool {
        let (valid, unknown) = self.probe(schema, value, path);
        if let Some(keyword) = unknown {
            self.unknown.get_or_insert(keyword);
        }
        valid
    }

    fn check(&mut self, schema: &Value, value: &Value, path: &str) {
        self.depth += 1;
        if self.depth > 64 {
            self.unknown = Some("a schema nested more than 64 deep".into());
            self.depth -= 1;
            return;
        }
        match schema {
            Value::Bool(true) => {}
            Value::Bool(false) => self.fail(path, "no value is allowed here".into()),
            Value::Object(map) => self.keywords(map, value, path),
            _ => self.unknown = Some("a schema that is neither an object nor a boolean".into()),
        }
        self.depth -= 1;
    }

    fn keywords(&mut self, map: &Map<String, Value>, value: &Value, path: &str) {
        for (keyword, arg) in map {
            match keyword.as_str() {
                "$ref" => self.reference(arg, value, path),
                "type" => self.type_(arg, value, path),
                "const" => {
                    if value != arg {
                        self.fail(path, format!("must be {arg}, is {}", show(value)));
                    }
                }
                "enum" => {
                    let allowed = arg.as_array().is_some_and(|a| a.contains(value));
                    if !allowed {
                        self.fail(path, format!("must be one of {arg}, is {}", show(value)));
                    }
                }
                "properties" => self.properties(arg, value, path),
                "required" => self.required(arg, value, path),
                "additionalProperties" => self.additional(map, arg, value, path),
                "patternProperties"
                | "propertyNames"
                | "dependentRequired"
                | "dependentSchemas"
                | "unevaluatedProperties"
                | "unevaluatedItems"
                | "contains"
                | "if"
                | "then"
                | "else" => {
                    // Decided only when the value is not an object or array
                    // these would look into.
                    if (value.is_object() || value.is_array())
                        && !(keyword == "patternProperties"
                            && map.contains_key("additionalProperties"))
                    {
                        self.unknown.get_or_insert(keyword.clone());
                    }
                }
                "items" => self.items(map, arg, value, path),
                "prefixItems" => {
                    if let (Some(schemas), Some(items)) = (arg.as_array(), value.as_array()) {
                        for (i, (s, v)) in schemas.iter().zip(items).enumerate() {
                            self.check(s, v, &format!("{path}/{i}"));
                        }
                    }
                }
                "anyOf" => self.any_of(arg, value, path),
                "oneOf" => self.one_of(arg, value, path),
                "allOf" => {
                    for s in arg.as_array().into_iter().flatten() {
                        self.check(s, value, path);
                    }
                }
                "not" => match self.probe(arg, value, path) {
                    (true, None) => self.fail(path, format!("must not match {arg}")),
                    (true, Some(keyword)) => {
                        self.unknown.get_or_insert(keyword);
                    }
                    (false, _) => {}
                },
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                    self.bound(keyword, arg, value, path)
                }
                "minItems" | "maxItems" => {
                    if let (Some(n), Some(items)) = (arg.as_u64(), value.as_array()) {
                        let len = items.len() as u64;
                        if (keyword == "minItems" && len < n) || (keyword == "maxItems" && len > n)
                        {
                            self.fail(path, format!("{keyword} {n}, has {len} items"));
                        }
                    }
                }
                "minLength" | "maxLength" => {
                    if let (Some(n), Some(text)) = (arg.as_u64(), value.as_str()) {
                        let len = text.chars().count() as u64;
                        if (keyword == "minLength" && len < n)
                            || (keyword == "maxLength" && len > n)
                        {
                            self.fail(path, format!("{keyword} {n}, has {len} characters"));
                        }
                    }
                }
                "minProperties" | "maxProperties" => {
                    if let (Some(n), Some(members)) = (arg.as_u64(), value.as_object()) {
                        let len = members.len() as u64;
                        if (keyword == "minProperties" && len < n)
                            || (keyword == "maxProperties" && len > n)
                        {
                            self.fail(path, format!("{keyword} {n}, has {len} members"));
                        }
                    }
                }
                "uniqueItems" => {
                    if let (Some(true), Some(items)) = (arg.as_bool(), value.as_array()) {
                        let mut seen: Vec<&Value> = Vec::new();
                        for item in items {
                            if seen.contains(&item) {
                                self.fail(path, format!("items must be unique: {item} repeats"));
                                break;
                            }
                            seen.push(item);
                        }
                    }
                }
                "multipleOf" => {
                    if let (Some(m), Some(n)) = (arg.as_f64(), value.as_f64())
                        && m > 0.0
                        && (n / m).fract() != 0.0
                    {
                        self.fail(path, format!("must be a multiple of {m}"));
                    }
                }
                k if ANNOTATIONS.contains(&k) => {}
                k => {
                    self.unknown.get_or_insert(k.to_owned());
                }
            }
        }
    }

    fn reference(&mut self, arg: &Value, value: &Value, path: &str) {
        let target = arg
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| self.doc.root.pointer(pointer));
        match target {
            Some(schema) => {
                let schema = schema.clone();
                self.check(&schema, value, path);
            }
            None => self.unknown = Some(format!("$ref {arg}")),
        }
    }

    fn type_(&mut self, arg: &Value, value: &Value, path: &str) {
        let names: Vec<&str> = match arg {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => return,
        };
        if !names.iter().any(|name| is_type(name, value)) {
            self.fail(
                path,
                format!("must be {}, is {}", names.join(" or "), type_name(value)),
            );
        }
    }

    fn properties(&mut self, arg: &Value, value: &Value, path: &str) {
        let (Some(schemas), Some(members)) = (arg.as_object(), value.as_object()) else {
            return;
        };
        for (name, schema) in schemas {
            if let Some(member) = members.get(name) {
                self.check(schema, member, &format!("{path}/{name}"));
            }
        }
    }

    fn required(&mut self, arg: &Value, value: &Value, path: &str) {
        let Some(members) = value.as_object() else {
            return;
        };
        for name in arg
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !members.contains_key(name) {
                self.fail(path, format!("{name} is required"));
            }
        }
    }

    fn additional(&mut self, map: &Map<String, Value>, arg: &Value, value: &Value, path: &str) {
        let Some(members) = value.as_object() else {
            return;
        };
        let declared = map.get("properties").and_then(Value::as_object);
        let patterns = map.get("patternProperties").and_then(Value::as_object);
        for (name, member) in members {
            if declared.is_some_and(|d| d.contains_key(name)) {
                continue;
            }
            if patterns.is_some_and(|p| !p.is_empty()) {
                // A pattern may take it: not decided here.
                self.unknown.get_or_insert("patternProperties".into());
                continue;
            }
            match arg {
                Value::Bool(false) => self.fail(path, format!("{name} is not allowed here")),
                schema => self.check(schema, member, &format!("{path}/{name}")),
            }
        }
    }

    fn items(&mut self, map: &Map<String, Value>, arg: &Value, value: &Value, path: &str) {
        let Some(items) = value.as_array() else {
            return;
        };
        // Draft 7's tuple form; 2020-12's items after prefixItems.
        let skip = map
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match arg {
            Value::Array(schemas) => {
                for (i, (s, v)) in schemas.iter().zip(items).enumerate() {
                    self.check(s, v, &format!("{path}/{i}"));
                }
            }
            schema => {
                for (i, item) in items.iter().enumerate().skip(skip) {
                    self.check(schema, item, &format!("{path}/{i}"));
                }
            }
        }
    }

    fn any_of(&mut self, arg: &Value, value: &Value, path: &str) {
        let Some(branches) = arg.as_array() else {
            return;
        };
        if branches.iter().any(|b| self.passes(b, value, path)) {
            return;
        }
        // The branch whose errors say the most: the one that failed
        // deepest, or the first.
        let mut best: Option<Vec<String>> = None;
        for branch in branches {
            let mut inner = Walk {
                doc: self.doc,
                errors: Vec::new(),
                unknown: None,
                depth: self.depth,
            };
            inner.check(branch, value, path);
            let deepest = |errors: &[String]| errors.iter().map(|e| e.matches('/').count()).max();
            if best
                .as_ref()
                .is_none_or(|b| deepest(&inner.errors) > deepest(b))
            {
                best = Some(inner.errors);
            }
        }
        let detail = best.unwrap_or_default().join("; ");
        self.fail(
            path,
            format!("matches none of {} forms ({detail})", branches.len()),
        );
    }

    fn one_of(&mut self, arg: &Value, value: &Value, path: &str) {
        let Some(branches) = arg.as_array() else {
            return;
        };
        let probes: Vec<_> = branches
            .iter()
            .map(|b| self.probe(b, value, path))
            .collect();
        if let Some(keyword) = probes.iter().find_map(|(_, unknown)| unknown.clone()) {
            self.unknown.get_or_insert(keyword);
            return;
        }
        let matched = probes.iter().filter(|(valid, _)| *valid).count();
        if matched != 1 {
            self.fail(
                path,
                format!(
                    "must match exactly one form of {}, matches {matched}",
                    branches.len()
                ),
            );
        }
    }

    fn bound(&mut self, keyword: &str, arg: &Value, value: &Value, path: &str) {
        let (Some(limit), Some(n)) = (arg.as_f64(), value.as_f64()) else {
            return;
        };
        let wrong = match keyword {
            "minimum" => n < limit,
            "maximum" => n > limit,
            "exclusiveMinimum" => n <= limit,
            _ => n >= limit,
        };
        if wrong {
            self.fail(path, format!("{keyword} {limit}, is {n}"));
        }
    }
}

/// Whether `value` is of the JSON Schema type `name`.
fn is_type(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// The JSON type of `value`, as a schema names it.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value, short, for a reason.
fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 60 {
        format!("{}…", &text[..text.floor_char_boundary(57)])
    } else {
        text
    }
}

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
    fn the_spec_schemas_parse_and_name_the_results() {
        for (text, names) in [
            (
                MODERN,
                &["DiscoverResult", "ListToolsResult", "CallToolResult"][..],
            ),
            (LEGACY, &["InitializeResult", "ListToolsResult"][..]),
        ] {
            let doc = Document::parse(text);
            for name in names {
                assert!(doc.has(name), "{name}");
            }
        }
    }

    #[test]
    fn a_discover_result_is_valid_and_a_broken_one_is_not() {
        let doc = Document::parse(MODERN);
        let good = json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "cacheScope": "public", "ttlMs": 0,
            "capabilities": { "tools": {} },
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "x", "version": "1" } }
        });
        assert_eq!(doc.validate_def("DiscoverResult", &good), Found::Valid);
        let mut bad = good.clone();
        bad["supportedVersions"] = json!("2026-07-28");
        let Found::Invalid(errors) = doc.validate_def("DiscoverResult", &bad) else {
            panic!("accepted {bad}");
        };
        assert!(
            errors[0].starts_with("/supportedVersions: must be array"),
            "{errors:?}"
        );
    }

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
