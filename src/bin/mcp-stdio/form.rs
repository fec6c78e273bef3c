//! A form asked field by field: each field of an elicitation's requested
//! schema (text, number, yes/no, one or several of a list; its default,
//! whether it is required) from `--answer`, from a person on stdin, or from
//! its default. Pure: the questions and the answers go through closures,
//! so the whole dialogue is tested here without a terminal.

use std::collections::BTreeMap;

use mcp_stdio::types::{ElicitRequestFormParams, PrimitiveSchemaDefinition as Schema};
use serde_json::{Map, Value};

/// A filled form (`None`: the person cancelled), or why it could not be
/// filled.
pub type Filled = Result<Option<Map<String, Value>>, String>;

/// A question for one line of input; `None` is the end of input.
pub type AskFn<'a> = dyn FnMut(&str) -> Option<String> + 'a;

/// Fills a form: each field from `answers`, else from `ask` (when a person
/// can be asked), else its default; a required field left without a value
/// is an error naming the `--answer` that would give it. `Ok(None)`: the
/// person ended the input (cancel).
pub fn fill(
    form: &ElicitRequestFormParams,
    answers: &BTreeMap<String, String>,
    mut ask: Option<&mut AskFn<'_>>,
    say: &mut dyn FnMut(&str),
) -> Filled {
    let schema = &form.requested_schema;
    let required: Vec<&str> = schema
        .required
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let fields: Vec<Field> = schema
        .properties
        .iter()
        .map(|(name, s)| Field::new(name, s, required.contains(&name.as_str())))
        .collect();
    let missing: Vec<&Field> = fields
        .iter()
        .filter(|f| f.required && f.default.is_none() && !answers.contains_key(&f.name))
        .collect();
    if ask.is_none() && !missing.is_empty() {
        let flags: Vec<String> = missing
            .iter()
            .map(|f| format!("--answer {}={}", f.name, f.placeholder()))
            .collect();
        return Err(format!(
            "the server asks {:?} and no one can be asked here: pass {}, or --decline, or run in a terminal",
            form.message,
            flags.join(" ")
        ));
    }
    if ask.is_some() {
        say(&format!("the server asks: {}", form.message));
    }
    let mut content = Map::new();
    for field in &fields {
        if let Some(text) = answers.get(&field.name) {
            let value = field
                .convert(text)
                .map_err(|e| format!("--answer {}={text}: {e}", field.name))?;
            content.insert(field.name.clone(), value);
            continue;
        }
        let Some(ask) = ask.as_deref_mut() else {
            if let Some(default) = &field.default {
                content.insert(field.name.clone(), default.clone());
            }
            continue;
        };
        if let Some(description) = &field.description {
            say(&format!("  {}: {description}", field.label));
        }
        if let Kind::Choice { options } | Kind::Choices { options, .. } = &field.kind {
            for (n, (value, title)) in options.iter().enumerate() {
                match title {
                    Some(title) => say(&format!("    {}) {title} ({value})", n + 1)),
                    None => say(&format!("    {}) {value}", n + 1)),
                }
            }
        }
        loop {
            let Some(text) = ask(&field.prompt()) else {
                return Ok(None);
            };
            let text = text.trim();
            if text.is_empty() {
                match (&field.default, field.required) {
                    (Some(default), _) => {
                        content.insert(field.name.clone(), default.clone());
                        break;
                    }
                    (None, false) => break,
                    (None, true) => {
                        say("    a value is required");
                        continue;
                    }
                }
            }
            match field.convert(text) {
                Ok(value) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Err(e) => say(&format!("    {e}")),
            }
        }
    }
    Ok(Some(content))
}

/// One field of a form, whatever its schema shape.
struct Field {
    name: String,
    label: String,
    description: Option<String>,
    kind: Kind,
    default: Option<Value>,
    required: bool,
}

enum Kind {
    Text {
        min: Option<u64>,
        max: Option<u64>,
        format: Option<String>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    /// One of `(value, title)`.
    Choice {
        options: Vec<(String, Option<String>)>,
    },
    /// Any number of `(value, title)`.
    Choices {
        options: Vec<(String, Option<String>)>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

impl Field {
    fn new(name: &str, schema: &Schema, required: bool) -> Field {
        let untitled = |values: &[String]| values.iter().map(|v| (v.clone(), None)).collect();
        let (title, description, kind, default) = match schema {
            Schema::String(s) => (
                &s.title,
                &s.description,
                Kind::Text {
                    min: s.min_length,
                    max: s.max_length,
                    format: s.format.clone(),
                },
                s.default.clone().map(Value::String),
            ),
            Schema::Number(s) => (
                &s.title,
                &s.description,
                Kind::Number {
                    integer: s.r#type == "integer",
                    min: s.minimum,
                    max: s.maximum,
                },
                s.default.map(|d| number_value(d, s.r#type == "integer")),
            ),
            Schema::Boolean(s) => (
                &s.title,
                &s.description,
                Kind::Boolean,
                s.default.map(Value::Bool),
            ),
            Schema::UntitledSingleSelectEnum(s) => (
                &s.title,
                &s.description,
                Kind::Choice {
                    options: untitled(&s.r#enum),
                },
                s.default.clone().map(Value::String),
            ),
            Schema::TitledSingleSelectEnum(s) => (
                &s.title,
                &s.description,
                Kind::Choice {
                    options: s
                        .one_of
                        .iter()
                        .map(|o| (o.r#const.clone(), Some(o.title.clone())))
                        .collect(),
                },
                s.default.clone().map(Value::String),
            ),
            Schema::LegacyTitledEnum(s) => (
                &s.title,
                &s.description,
                Kind::Choice {
                    options: s
                        .r#enum
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            let title = s.enum_names.as_ref().and_then(|n| n.get(i)).cloned();
                            (v.clone(), title)
                        })
                        .collect(),
                },
                s.default.clone().map(Value::String),
            ),
            Schema::UntitledMultiSelectEnum(s) => (
                &s.title,
                &s.description,
                Kind::Choices {
                    options: untitled(&s.items.r#enum),
                    min: s.min_items,
                    max: s.max_items,
                },
                s.default
                    .clone()
                    .map(|d| d.into_iter().map(Value::String).collect()),
            ),
            Schema::TitledMultiSelectEnum(s) => (
                &s.title,
                &s.description,
                Kind::Choices {
                    options: s
                        .items
                        .any_of
                        .iter()
                        .map(|o| (o.r#const.clone(), Some(o.title.clone())))
                        .collect(),
                    min: s.min_items,
                    max: s.max_items,
                },
                s.default
                    .clone()
                    .map(|d| d.into_iter().map(Value::String).collect()),
            ),
        };
        Field {
            name: name.to_owned(),
            label: title.clone().unwrap_or_else(|| name.to_owned()),
            description: description.clone(),
            kind,
            default,
            required,
        }
    }

    /// `name (integer 1..10, required) [5]: `
    fn prompt(&self) -> String {
        let mut kind = self.kind_text();
        if self.required {
            kind.push_str(", required");
        }
        let default = match &self.default {
            Some(Value::String(s)) => format!(" [{s}]"),
            Some(Value::Array(items)) => format!(
                " [{}]",
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Some(other) => format!(" [{other}]"),
            None => String::new(),
        };
        format!("  {} ({kind}){default}: ", self.label)
    }

    /// What to type, for an `--answer` hint.
    fn placeholder(&self) -> String {
        match &self.kind {
            Kind::Text { .. } => "TEXT".to_owned(),
            Kind::Number { .. } => "NUMBER".to_owned(),
            Kind::Boolean => "true|false".to_owned(),
            Kind::Choice { options } => options
                .iter()
                .map(|(v, _)| v.as_str())
                .collect::<Vec<_>>()
                .join("|"),
            Kind::Choices { .. } => "A,B".to_owned(),
        }
    }

    fn kind_text(&self) -> String {
        let range = |min: Option<String>, max: Option<String>| match (min, max) {
            (None, None) => String::new(),
            (min, max) => format!(" {}..{}", min.unwrap_or_default(), max.unwrap_or_default()),
        };
        match &self.kind {
            Kind::Text { min, max, format } => {
                let mut text = format.clone().unwrap_or_else(|| "text".to_owned());
                if min.is_some() || max.is_some() {
                    text.push_str(&format!(
                        ",{} characters",
                        range(min.map(|n| n.to_string()), max.map(|n| n.to_string()))
                    ));
                }
                text
            }
            Kind::Number { integer, min, max } => format!(
                "{}{}",
                if *integer { "integer" } else { "number" },
                range(min.map(|n| n.to_string()), max.map(|n| n.to_string()))
            ),
            Kind::Boolean => "y/n".to_owned(),
            Kind::Choice { .. } => "a number or a value".to_owned(),
            Kind::Choices { .. } => "numbers or values, comma-separated".to_owned(),
        }
    }

    /// The typed value of what was typed (or given with `--answer`).
    fn convert(&self, text: &str) -> Result<Value, String> {
        match &self.kind {
            Kind::Text { min, max, .. } => {
                let len = text.chars().count() as u64;
                if min.is_some_and(|m| len < m) || max.is_some_and(|m| len > m) {
                    return Err(format!("{len} characters, not within {}", self.kind_text()));
                }
                Ok(Value::String(text.to_owned()))
            }
            Kind::Number { integer, min, max } => {
                let n: f64 = text
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n: &f64| n.is_finite())
                    .ok_or_else(|| format!("{text:?} is not a number"))?;
                if *integer && n.fract() != 0.0 {
                    return Err(format!("{text:?} is not a whole number"));
                }
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(format!("{text} is not within {}", self.kind_text()));
                }
                Ok(number_value(n, *integer))
            }
            Kind::Boolean => match text.trim().to_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Ok(Value::Bool(true)),
                "n" | "no" | "false" | "0" => Ok(Value::Bool(false)),
                _ => Err(format!("{text:?} is not yes or no")),
            },
            Kind::Choice { options } => choose(options, text).map(Value::String),
            Kind::Choices { options, min, max } => {
                let picked: Vec<String> = if text.trim_start().starts_with('[') {
                    serde_json::from_str::<Vec<String>>(text)
                        .map_err(|e| format!("not a JSON array of strings: {e}"))?
                } else {
                    text.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                };
                let mut values: Vec<Value> = Vec::new();
                for item in picked {
                    let value = Value::String(choose(options, &item)?);
                    if !values.contains(&value) {
                        values.push(value);
                    }
                }
                let n = values.len() as u64;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(format!(
                        "{n} chosen; choose {}..{}",
                        min.unwrap_or(0),
                        max.map_or(String::new(), |m| m.to_string())
                    ));
                }
                Ok(Value::Array(values))
            }
        }
    }
}

/// The option `text` names: its value, its title (any case), or its
/// number in the list.
fn choose(options: &[(String, Option<String>)], text: &str) -> Result<String, String> {
    let text = text.trim();
    if let Some((value, _)) = options.iter().find(|(v, _)| v == text) {
        return Ok(value.clone());
    }
    let by_title = options
        .iter()
        .find(|(_, t)| t.as_deref().is_some_and(|t| t.eq_ignore_ascii_case(text)));
    if let Some((value, _)) = by_title {
        return Ok(value.clone());
    }
    if let Some((value, _)) = text
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| options.get(i))
    {
        return Ok(value.clone());
    }
    let values: Vec<&str> = options.iter().map(|(v, _)| v.as_str()).collect();
    Err(format!("{text:?} is not one of {}", values.join(", ")))
}

/// A number as JSON: an integer field gets an integer.
fn number_value(n: f64, integer: bool) -> Value {
    if integer && n.abs() < 9e15 {
        Value::from(n as i64)
    } else {
        Value::from(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> ElicitRequestFormParams {
        serde_json::from_value(json!({ "message": "Tell me", "requestedSchema": schema })).unwrap()
    }

    fn answers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Fills `form` asking a person who types `typed`, one line each.
    fn typed(
        form: &ElicitRequestFormParams,
        given: &[(&str, &str)],
        typed: &[&str],
    ) -> (Filled, Vec<String>) {
        let mut lines = typed.iter().map(|s| s.to_string());
        let mut said = Vec::new();
        let mut ask = |prompt: &str| {
            said.push(prompt.to_owned());
            lines.next()
        };
        let mut heard = Vec::new();
        let res = fill(form, &answers(given), Some(&mut ask), &mut |t| {
            heard.push(t.to_owned())
        });
        said.extend(heard);
        (res, said)
    }

    fn everything_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "title": "Your name", "minLength": 1 },
                "age": { "type": "integer", "minimum": 0, "maximum": 150 },
                "ok": { "type": "boolean", "default": true },
                "size": { "type": "string", "enum": ["s", "m", "l"], "default": "m" },
                "colour": { "type": "string", "oneOf": [ { "const": "r", "title": "Red" }, { "const": "g", "title": "Green" } ] },
                "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b", "c"] }, "maxItems": 2 }
            },
            "required": ["name", "age", "colour"]
        })
    }

    #[test]
    fn a_person_fills_the_form_field_by_field() {
        let form = form(everything_schema());
        // Fields in name order: age, colour, name, ok, size, tags.
        let (res, said) = typed(
            &form,
            &[],
            &["old", "200", "42", "green", "", "Ada", "n", "", "1,c"],
        );
        assert_eq!(
            Value::Object(res.unwrap().unwrap()),
            json!({ "age": 42, "colour": "g", "name": "Ada", "ok": false, "size": "m", "tags": ["a", "c"] })
        );
        let said = said.join("\n");
        assert!(
            said.contains("  age (integer 0..150, required): "),
            "{said}"
        );
        assert!(said.contains("    \"old\" is not a number"), "{said}");
        assert!(
            said.contains("    200 is not within integer 0..150"),
            "{said}"
        );
        assert!(said.contains("    2) Green (g)"), "{said}");
        assert!(said.contains("    a value is required"), "{said}");
        assert!(
            said.contains("  size (a number or a value) [m]: "),
            "{said}"
        );
    }

    #[test]
    fn answers_fill_fields_and_defaults_the_rest() {
        let form = form(everything_schema());
        let given = answers(&[
            ("name", "Ada"),
            ("age", "7"),
            ("colour", "Red"),
            ("tags", "[\"b\"]"),
        ]);
        let res = fill(&form, &given, None, &mut |_| {}).unwrap().unwrap();
        assert_eq!(
            Value::Object(res),
            json!({ "age": 7, "colour": "r", "name": "Ada", "ok": true, "size": "m", "tags": ["b"] })
        );
    }

    #[test]
    fn without_a_person_a_missing_answer_is_an_error() {
        let form = form(everything_schema());
        let e = fill(&form, &answers(&[("name", "Ada")]), None, &mut |_| {}).unwrap_err();
        assert_eq!(
            e,
            "the server asks \"Tell me\" and no one can be asked here: pass --answer age=NUMBER --answer colour=r|g, or --decline, or run in a terminal"
        );
        let e = fill(
            &form,
            &answers(&[("name", "Ada"), ("age", "x"), ("colour", "r")]),
            None,
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(e, "--answer age=x: \"x\" is not a number");
        let e = fill(
            &form,
            &answers(&[
                ("name", "Ada"),
                ("age", "1"),
                ("colour", "r"),
                ("tags", "a,b,c"),
            ]),
            None,
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(e, "--answer tags=a,b,c: 3 chosen; choose 0..2");
    }

    #[test]
    fn end_of_input_cancels() {
        let form = form(everything_schema());
        let (res, _) = typed(&form, &[], &["42"]);
        assert_eq!(res, Ok(None));
    }

    #[test]
    fn legacy_titled_enum_takes_names() {
        let form = form(
            json!({ "type": "object", "properties": { "p": { "type": "string", "enum": ["x", "y"], "enumNames": ["Ex", "Why"] } } }),
        );
        let res = fill(&form, &answers(&[("p", "why")]), None, &mut |_| {})
            .unwrap()
            .unwrap();
        assert_eq!(res.get("p"), Some(&json!("y")));
    }
}
