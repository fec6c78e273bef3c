//! What a tool is sent for `key=value`: each value converted by the type
//! the tool's `inputSchema` gives its property (a `string` gets `"42"`, an
//! `integer` gets `42`, an `array` of them splits at commas), as the MCP
//! Inspector's CLI does; where the schema says nothing, the value is JSON
//! when it parses as JSON and a string otherwise.
//!
//! Numbers are sent with the value they were written with. The client
//! holds a request's params as `serde_json::Value`, whose numbers are 64-bit
//! integers or doubles: a number neither holds exactly (an integer past
//! 64 bits, a decimal with more digits than a double keeps) would reach the
//! server rounded, so it is refused, saying so, rather than sent as another
//! number. A whole number written `1e2` or `100.0` for an `integer`
//! property is sent as `100`: JSON Schema calls it an integer, and most
//! servers' integer parsers take digits only.

use serde_json::{Map, Number, Value};

/// The arguments for a tool whose input schema is `schema` (`None`: not
/// known), from `key=value` pairs; an error names the pair and what its
/// property wants.
pub fn by_schema(
    pairs: &[(String, String)],
    schema: Option<&Value>,
) -> Result<Map<String, Value>, String> {
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let mut map = Map::new();
    for (key, text) in pairs {
        let property = properties.and_then(|p| p.get(key));
        let value = convert(text, property).map_err(|e| format!("{key}={text}: {e}"))?;
        map.insert(key.clone(), value);
    }
    Ok(map)
}

/// One value, as its property's schema (if any) types it.
fn convert(text: &str, property: Option<&Value>) -> Result<Value, String> {
    let types = property.map(types).unwrap_or_default();
    if text == "null" && types.contains(&"null") {
        return Ok(Value::Null);
    }
    let typed: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
    match typed.as_slice() {
        [only] => as_type(text, only, property),
        // Several types, or none: the rule for a schema that says nothing.
        _ => untyped(text),
    }
}

/// The types a property's schema allows: its `type` (one or a list), or
/// `string` for an `enum` or `const` of strings.
fn types(property: &Value) -> Vec<&str> {
    match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => {
            let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
            let string_enum = property.get("enum").is_some_and(strings);
            let string_const = property.get("const").is_some_and(Value::is_string);
            if string_enum || string_const {
                vec!["string"]
            } else {
                Vec::new()
            }
        }
    }
}

fn as_type(text: &str, kind: &str, property: Option<&Value>) -> Result<Value, String> {
    match kind {
        "string" => Ok(Value::String(text.to_owned())),
        "integer" => integer(text.trim()),
        "number" => {
            number(text.trim()).ok_or_else(|| "the tool's schema wants a number".to_owned())?
        }
        "boolean" => match text.trim() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err("the tool's schema wants true or false".to_owned()),
        },
        "object" => match json(text)? {
            Some(Value::Object(map)) => Ok(Value::Object(map)),
            _ => Err("the tool's schema wants a JSON object, {...}".to_owned()),
        },
        "array" => array(text, property.and_then(|p| p.get("items"))),
        "null" => Err("the tool's schema wants null".to_owned()),
        // A type this does not know: the rule for a schema that says
        // nothing.
        _ => untyped(text),
    }
}

/// An `array`: JSON when written `[...]`, else the text split at commas,
/// each item converted by the `items` schema (`tags=a,b`; empty: `[]`).
fn array(text: &str, items: Option<&Value>) -> Result<Value, String> {
    if text.trim_start().starts_with('[') {
        return match json(text)? {
            Some(Value::Array(items)) => Ok(Value::Array(items)),
            _ => Err("the tool's schema wants a JSON array, [...]".to_owned()),
        };
    }
    if text.is_empty() {
        return Ok(Value::Array(Vec::new()));
    }
    let kinds = items.map(types).unwrap_or_default();
    text.split(',')
        .map(|item| {
            let value = match kinds.as_slice() {
                [only] if *only != "null" => as_type(item, only, items),
                _ => untyped(item),
            };
            // Which item was wrong, when there are several.
            value.map_err(|e| format!("{e}, not {item:?}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// The rule where the schema says nothing: JSON when the text parses as
/// JSON (its numbers sent exactly), a string otherwise.
fn untyped(text: &str) -> Result<Value, String> {
    Ok(json(text)?.unwrap_or_else(|| Value::String(text.to_owned())))
}

/// `text` as JSON, `None` when it is not JSON; an error when it is, but a
/// number in it cannot be sent as written.
pub fn json(text: &str) -> Result<Option<Value>, String> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Ok(None);
    };
    exact_numbers(text)?;
    Ok(Some(value))
}

/// An `integer`: digits, or a whole number however written (`1e2`).
fn integer(text: &str) -> Result<Value, String> {
    let wants = || "the tool's schema wants an integer".to_owned();
    if let Ok(n) = text.parse::<i64>() {
        return Ok(Value::from(n));
    }
    if let Ok(n) = text.parse::<u64>() {
        return Ok(Value::from(n));
    }
    let Some(Ok(Value::Number(n))) = number(text) else {
        return Err(wants());
    };
    let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) else {
        return Err(wants());
    };
    // Whole, and exactly what was written (`number` saw to that): within
    // what an i64 holds it is sent as digits.
    if f.abs() < 9.2e18 {
        return Ok(Value::from(f as i64));
    }
    Err(format!(
        "{text} cannot be sent exactly (past 64-bit integers)"
    ))
}

/// A JSON number written `text`, exactly: `None` when it is not one.
fn number(text: &str) -> Option<Result<Value, String>> {
    let n: Number = serde_json::from_str(text).ok()?;
    Some(if exact(text) {
        Ok(Value::Number(n))
    } else {
        Err(inexact(text))
    })
}

fn inexact(text: &str) -> String {
    format!(
        "{text} cannot be sent exactly (past 64-bit integers and double precision): write it as a string, \"{text}\", if the tool takes one"
    )
}

/// Every number in the JSON `text` can be sent exactly.
pub fn exact_numbers(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let (mut at, mut in_string) = (0, false);
    while at < bytes.len() {
        let c = bytes[at];
        if in_string {
            match c {
                b'\\' => at += 1,
                b'"' => in_string = false,
                _ => {}
            }
            at += 1;
        } else if c == b'"' {
            in_string = true;
            at += 1;
        } else if c == b'-' || c.is_ascii_digit() {
            let end = bytes[at..]
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .map_or(bytes.len(), |n| at + n);
            let token = &text[at..end];
            if !exact(token) {
                return Err(inexact(token));
            }
            at = end;
        } else {
            at += 1;
        }
    }
    Ok(())
}

/// Whether the JSON number `text` reaches the server with the value it
/// was written with: an integer within 64 bits, or a decimal whose double
/// is written back as the same decimal.
fn exact(text: &str) -> bool {
    let integer = !text.contains(['.', 'e', 'E']);
    if integer {
        return text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok();
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() => decimal(text) == decimal(&format!("{f:e}")),
        _ => false,
    }
}

/// A decimal number's sign, significant digits and exponent, for
/// comparing two ways of writing it: `1e2`, `100.0` and `1.00e+2` are all
/// `(false, "1", 2)`; zero is `(false, "", 0)`, whatever its sign.
fn decimal(text: &str) -> (bool, String, i64) {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i64>().unwrap_or(0)),
        None => (rest, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let mut exponent = exponent + whole.len() as i64 - 1;
    let leading = digits.len() - digits.trim_start_matches('0').len();
    exponent -= leading as i64;
    let significant = digits.trim_matches('0').to_owned();
    if significant.is_empty() {
        return (false, significant, 0);
    }
    (negative, significant, exponent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_exact_or_refused() {
        for ok in [
            "0",
            "-0",
            "7",
            "-9223372036854775808",
            "18446744073709551615",
            "0.1",
            "1e2",
            "100.0",
            "2.5e-3",
            "1.7976931348623157e308",
        ] {
            assert!(exact(ok), "{ok}");
        }
        for no in [
            "18446744073709551616",
            "123456789012345678901234567890",
            "0.1000000000000000000001",
            "1e400",
        ] {
            assert!(!exact(no), "{no}");
        }
        assert_eq!(decimal("1e2"), decimal("100.0"));
        assert_eq!(decimal("0.0025"), decimal("2.5e-3"));
        assert!(exact_numbers(r#"{"a":"123456789012345678901234567890","b":[1,2.5]}"#).is_ok());
        assert!(exact_numbers(r#"{"a":123456789012345678901234567890}"#).is_err());
    }

    #[test]
    fn values_follow_the_schema() {
        let schema = json!({ "properties": {
            "s": { "type": "string" },
            "i": { "type": "integer" },
            "e": { "enum": ["x", "y"] },
            "n": { "type": ["number", "null"] },
            "a": { "type": "array", "items": { "type": "integer" } },
        }});
        let pairs: Vec<(String, String)> = [
            ("s", "42"),
            ("i", "1e2"),
            ("e", "7"),
            ("n", "null"),
            ("a", "1,2"),
            ("other", "[1]"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            Value::Object(by_schema(&pairs, Some(&schema)).unwrap()),
            json!({ "s": "42", "i": 100, "e": "7", "n": null, "a": [1, 2], "other": [1] })
        );
        let wrong = [("i".to_owned(), "1.5".to_owned())];
        assert_eq!(
            by_schema(&wrong, Some(&schema)).unwrap_err(),
            "i=1.5: the tool's schema wants an integer"
        );
    }
}
