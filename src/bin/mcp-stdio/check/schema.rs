//! A small JSON Schema validator: the keywords the spec's `schema.json`
//! uses (a tool's own schema is looked at by `tool_schema.rs`).
//!
//! Why not a JSON Schema crate: the spec's schemas use fourteen keywords
//! (`type`, `$ref`, `properties`, `required`, `const`, `items`, `anyOf`,
//! `allOf`, `additionalProperties`, `enum`, `minimum`, `maximum`,
//! `maxItems`, `format`), and a full 2020-12 validator with its regex and
//! URI dependencies would add more to the binary than this whole checker.
//! Beyond those, this one knows `oneOf`, `not`, `minItems`,
//! `minLength`/`maxLength`, `exclusiveMinimum`/`exclusiveMaximum`,
//! `minProperties`/`maxProperties`, `uniqueItems`, `patternProperties`
//! (keys compared literally), `propertyNames` (which the Tasks
//! extension's schema uses), `$defs`/`definitions` and `prefixItems`; `format` and `pattern` are annotations here (a value is
//! never refused for them), and any other keyword makes the answer
//! `Unknown` rather than a guess.
//!
//! The schemas are the spec's `schema.json` files with their descriptions
//! taken out (`schema/*.json`; `tests/check/` compares them with
//! `tests/spec/`): 107 KB in the binary instead of 455 KB.
//!
//! The walk of a value through a schema is here; the keywords that look
//! into a value (`$ref`, `type`, the properties, the items, `anyOf`,
//! `oneOf`, the bounds) each have their method in `schema/keywords.rs`.

mod keywords;

use serde_json::{Map, Value};

/// The 2026-07-28 schema.
pub const MODERN: &str = include_str!("schema/2026-07-28.json");
/// The 2025-11-25 schema.
pub const LEGACY: &str = include_str!("schema/2025-11-25.json");
/// The Tasks extension's schema (`extensions/tasks/schema.json`).
pub const TASKS: &str = include_str!("schema/tasks.json");

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
            steps: &std::cell::Cell::new(0),
            max_steps: MAX_STEPS.saturating_add(STEPS_PER_NODE.saturating_mul(nodes(value))),
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
    /// The schemas visited so far by this validation and every probe of
    /// it: past `MAX_STEPS` it is undecided (a schema whose `$ref`s
    /// branch, `{"oneOf": [{"$ref": "#"}, {"$ref": "#"}]}`, would
    /// otherwise take 2^64 steps within the depth bound).
    steps: &'a std::cell::Cell<usize>,
    max_steps: usize,
}

/// The most schemas one validation visits, and as many more for each
/// node of the value (a long list is not undecided for its length).
const MAX_STEPS: usize = 1 << 20;
const STEPS_PER_NODE: usize = 64;

/// The values in `value`, itself included.
fn nodes(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(nodes).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(nodes).sum::<usize>(),
        _ => 1,
    }
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
            steps: self.steps,
            max_steps: self.max_steps,
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
        self.steps.set(self.steps.get() + 1);
        if self.steps.get() > self.max_steps {
            self.unknown = Some(format!(
                "a schema that takes more than {} steps to apply",
                self.max_steps
            ));
            return;
        }
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
                "propertyNames" => {
                    if let Some(members) = value.as_object() {
                        for name in members.keys() {
                            self.check(
                                arg,
                                &Value::String(name.clone()),
                                &format!("{path}/{name}"),
                            );
                        }
                    }
                }
                "patternProperties"
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

#[cfg(test)]
mod tests;
