//! A form asked field by field: each field of an elicitation's requested
//! schema (text, number, yes/no, one or several of a list; its default,
//! whether it is required) from `--answer`, from a person on stdin, or from
//! its default. Pure: the questions and the answers go through closures,
//! so the whole dialogue is tested here without a terminal.

use std::collections::{BTreeMap, HashSet};

use mcp_stdio::types::ElicitRequestFormParams;
use serde_json::{Map, Value};

use crate::field::{Field, Kind};

/// How many missing fields an error names.
const MAX_NAMED: usize = 10;

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
    // A set: a form may have tens of thousands of fields.
    let required: HashSet<&str> = schema
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
        // One line however many fields a server asks for.
        let mut flags: Vec<String> = missing
            .iter()
            .take(MAX_NAMED)
            .map(|f| format!("--answer {}={}", f.name, f.placeholder()))
            .collect();
        if missing.len() > MAX_NAMED {
            flags.push(format!("({} more)", missing.len() - MAX_NAMED));
        }
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
