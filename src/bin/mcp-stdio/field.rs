//! One field of an elicitation form, whatever its schema's shape (text,
//! number, yes/no, one or several of a list): how it is asked, and how a
//! typed answer becomes its JSON value. `form` asks the fields.

use mcp_stdio::types::EnumOption;
use mcp_stdio::types::PrimitiveSchemaDefinition as Schema;
use serde_json::Value;

/// One field of a form, whatever its schema shape.
pub struct Field {
    /// The property's name, the key of its value.
    pub name: String,
    /// What the person is shown: its title, else its name.
    pub label: String,
    pub description: Option<String>,
    pub kind: Kind,
    pub default: Option<Value>,
    pub required: bool,
}

/// The shape of a field's value.
pub enum Kind {
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
    /// The field `name` of a requested schema, `required` or not.
    pub fn new(name: &str, schema: &Schema, required: bool) -> Field {
        let (title, description) = labels(schema);
        let (kind, default) = kind(schema);
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
    pub fn prompt(&self) -> String {
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
    pub fn placeholder(&self) -> String {
        match &self.kind {
            Kind::Text { format, .. } => match format.as_deref() {
                Some("email") => "EMAIL",
                Some("uri") => "URI",
                Some("date") => "YYYY-MM-DD",
                Some("date-time") => "DATE-TIME",
                _ => "TEXT",
            }
            .to_owned(),
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
    pub fn convert(&self, text: &str) -> Result<Value, String> {
        match &self.kind {
            Kind::Text { min, max, format } => {
                let len = text.chars().count() as u64;
                if min.is_some_and(|m| len < m) || max.is_some_and(|m| len > m) {
                    return Err(format!("{len} characters, not within {}", self.kind_text()));
                }
                if let Some(format) = format {
                    check_format(text, format)?;
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
                // Sent as written (`values`): not through the `f64` the
                // checks above read, which holds integers to 2^53 only.
                let text = text.trim();
                let exact = if *integer {
                    crate::values::integer(text).map_err(|e| e.is_some())
                } else {
                    crate::values::number(text)
                        .unwrap_or(Err(String::new()))
                        .map_err(|e| !e.is_empty())
                };
                exact.map_err(|past| match past {
                    true => format!(
                        "{text} cannot be sent exactly (past 64-bit integers and double precision)"
                    ),
                    false => format!("{text:?} is not a number as JSON writes one (0.5, -3, 1e3)"),
                })
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

/// Checks `text` against a string field's `format`, the four the spec's
/// `StringSchema` names (spec 2026-07-28 client/elicitation): a form that
/// announces `(email)` takes an email address. The checks are the shape a
/// person could get wrong, not every rule of the RFCs; the server checks
/// again.
fn check_format(text: &str, format: &str) -> Result<(), String> {
    let ok = match format {
        "email" => text.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && domain.contains('.')
                && !domain.contains('@')
                && !text.contains(char::is_whitespace)
        }),
        "uri" => text.split_once(':').is_some_and(|(scheme, rest)| {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !text.contains(char::is_whitespace)
        }),
        "date" => is_date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(date, time)| is_date(date) && is_time(time)),
        // A format the spec does not name: the server's to check.
        _ => true,
    };
    if ok {
        return Ok(());
    }
    let what = match format {
        "email" => "an email address",
        "uri" => "a URI (scheme:...)",
        "date" => "a date (YYYY-MM-DD)",
        _ => "a date and time (RFC 3339: 2026-07-28T09:30:00Z)",
    };
    Err(format!("{text:?} is not {what}"))
}

/// `YYYY-MM-DD`, a day that exists.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return false;
    };
    let number = |s: &str, len: usize| {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().ok())?
    };
    let (Some(year), Some(month), Some(day)) = (number(year, 4), number(month, 2), number(day, 2))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339's time: `HH:MM:SS`, a fraction, then `Z` or `+HH:MM`.
fn is_time(text: &str) -> bool {
    let two = |s: &str, max: u32| {
        s.len() == 2
            && s.bytes().all(|b| b.is_ascii_digit())
            && s.parse::<u32>().is_ok_and(|n| n <= max)
    };
    let (clock, offset) = match text.find(['Z', 'z', '+', '-']) {
        Some(at) => text.split_at(at),
        None => return false,
    };
    let offset_ok = matches!(offset, "Z" | "z")
        || offset[1..]
            .split_once(':')
            .is_some_and(|(h, m)| two(h, 23) && two(m, 59));
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    let parts: Vec<&str> = clock.split(':').collect();
    offset_ok
        && !fraction.is_empty()
        && fraction.bytes().all(|b| b.is_ascii_digit())
        && matches!(parts.as_slice(), [h, m, s] if two(h, 23) && two(m, 59) && two(s, 60))
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

/// The title and description of a field's schema, whatever its type.
fn labels(schema: &Schema) -> (&Option<String>, &Option<String>) {
    match schema {
        Schema::String(s) => (&s.title, &s.description),
        Schema::Number(s) => (&s.title, &s.description),
        Schema::Boolean(s) => (&s.title, &s.description),
        Schema::UntitledSingleSelectEnum(s) => (&s.title, &s.description),
        Schema::TitledSingleSelectEnum(s) => (&s.title, &s.description),
        Schema::LegacyTitledEnum(s) => (&s.title, &s.description),
        Schema::UntitledMultiSelectEnum(s) => (&s.title, &s.description),
        Schema::TitledMultiSelectEnum(s) => (&s.title, &s.description),
    }
}

/// The kind of answer a field's schema asks for, and its default.
fn kind(schema: &Schema) -> (Kind, Option<Value>) {
    let untitled = |values: &[String]| values.iter().map(|v| (v.clone(), None)).collect();
    let titled = |options: &[EnumOption]| {
        let option = |o: &EnumOption| (o.r#const.clone(), Some(o.title.clone()));
        options.iter().map(option).collect()
    };
    let text = |default: &Option<String>| default.clone().map(Value::String);
    let texts = |default: &Option<Vec<String>>| {
        (default.clone()).map(|d| d.into_iter().map(Value::String).collect())
    };
    match schema {
        Schema::String(s) => {
            let (min, max, format) = (s.min_length, s.max_length, s.format.clone());
            (Kind::Text { min, max, format }, text(&s.default))
        }
        Schema::Number(s) => {
            let integer = s.r#type == "integer";
            let (min, max) = (s.minimum, s.maximum);
            let default = s.default.map(|d| number_value(d, integer));
            (Kind::Number { integer, min, max }, default)
        }
        Schema::Boolean(s) => (Kind::Boolean, s.default.map(Value::Bool)),
        Schema::UntitledSingleSelectEnum(s) => {
            let options = untitled(&s.r#enum);
            (Kind::Choice { options }, text(&s.default))
        }
        Schema::TitledSingleSelectEnum(s) => {
            let options = titled(&s.one_of);
            (Kind::Choice { options }, text(&s.default))
        }
        Schema::LegacyTitledEnum(s) => {
            let title = |i: usize| s.enum_names.as_ref().and_then(|n| n.get(i)).cloned();
            let options = (s.r#enum.iter().enumerate())
                .map(|(i, v)| (v.clone(), title(i)))
                .collect();
            (Kind::Choice { options }, text(&s.default))
        }
        Schema::UntitledMultiSelectEnum(s) => {
            let (min, max) = (s.min_items, s.max_items);
            let options = untitled(&s.items.r#enum);
            (Kind::Choices { options, min, max }, texts(&s.default))
        }
        Schema::TitledMultiSelectEnum(s) => {
            let (min, max) = (s.min_items, s.max_items);
            let options = titled(&s.items.any_of);
            (Kind::Choices { options, min, max }, texts(&s.default))
        }
    }
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
    use super::check_format;

    #[test]
    fn formats_are_checked() {
        for (format, ok) in [
            ("email", "ada@example.org"),
            ("uri", "https://example.org/a b".split(' ').next().unwrap()),
            ("uri", "urn:isbn:0451450523"),
            ("date", "2024-02-29"),
            ("date-time", "2026-07-28T09:30:00Z"),
            ("date-time", "2026-07-28t09:30:00.25+02:00"),
            ("hostname", "anything: not a format the spec names"),
        ] {
            assert_eq!(check_format(ok, format), Ok(()), "{format} {ok}");
        }
        for (format, wrong) in [
            ("email", "not-an-email"),
            ("email", "a@b"),
            ("email", "a b@c.org"),
            ("uri", "example.org"),
            ("date", "2023-02-29"),
            ("date", "2026-7-28"),
            ("date-time", "2026-07-28 09:30:00Z"),
            ("date-time", "2026-07-28T09:30:00"),
        ] {
            assert!(check_format(wrong, format).is_err(), "{format} {wrong}");
        }
        assert_eq!(
            check_format("x", "email").unwrap_err(),
            "\"x\" is not an email address"
        );
    }
}
