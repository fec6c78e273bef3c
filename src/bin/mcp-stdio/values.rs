//! What a tool is sent for `key=value`: each value converted by the type
//! the tool's `inputSchema` gives its property (a `string` gets `"42"`, an
//! `integer` gets `42`, an `array` of them splits at commas), as the MCP
//! Inspector's CLI does; where the schema says nothing, the value is JSON
//! when it parses as JSON and a string otherwise. A property's type is its
//! `type` (one or a list), or the types of its `anyOf` or `oneOf` members
//! (Pydantic writes `Optional[str]` as `anyOf: [string, null]`).
//!
//! Numbers are sent with the value they were written with. The client
//! holds a request's params as `serde_json::Value`, whose numbers are 64-bit
//! integers or doubles: a number neither holds exactly (an integer past
//! 64 bits, a decimal with more digits than a double keeps) would reach the
//! server rounded, so it is refused, saying so, rather than sent as another
//! number. A whole number written `1e2` or `100.0` where the schema wants
//! an `integer` is sent as `100`, at the top level or inside a JSON array or
//! object (by its `items` and `properties`): JSON Schema calls it an
//! integer, and most servers' integer parsers take digits only. An integer
//! written `-0` is sent as `0`: a `Value` holds it only as the double
//! `-0.0`, which a server would read as a float.

use std::borrow::Cow;

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

/// Arguments given as one JSON object, their whole numbers made integers
/// where the tool's input schema (`None`: not known) wants integers.
pub fn object_by_schema(
    arguments: &Map<String, Value>,
    schema: Option<&Value>,
) -> Map<String, Value> {
    let mut value = Value::Object(arguments.clone());
    retype(&mut value, schema);
    match value {
        Value::Object(map) => map,
        _ => arguments.clone(),
    }
}

/// One value, as its property's schema (if any) types it.
fn convert(text: &str, property: Option<&Value>) -> Result<Value, String> {
    let types = property.map(types).unwrap_or_default();
    if text == "null" && types.iter().any(|(t, _)| *t == "null") {
        return Ok(Value::Null);
    }
    match one_type(&types) {
        Some((only, schema)) => as_type(text, only, schema),
        // Several types, or none: the rule for a schema that says nothing.
        None => untyped(text),
    }
}

/// The types a property's schema allows, each with the schema that
/// declares it: its `type` (one or a list), else the types of its `anyOf`
/// or `oneOf` members (none when a member's are not known), else `string`
/// for an `enum` or `const` of strings.
fn types(property: &Value) -> Vec<(&str, &Value)> {
    match property.get("type") {
        Some(Value::String(t)) => return vec![(t.as_str(), property)],
        Some(Value::Array(list)) => {
            return list
                .iter()
                .filter_map(Value::as_str)
                .map(|t| (t, property))
                .collect();
        }
        _ => {}
    }
    let members = ["anyOf", "oneOf"]
        .iter()
        .find_map(|k| property.get(*k).and_then(Value::as_array));
    if let Some(members) = members {
        let mut all = Vec::new();
        for member in members {
            let theirs = types(member);
            if theirs.is_empty() {
                return Vec::new();
            }
            all.extend(theirs);
        }
        return all;
    }
    let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    let string_enum = property.get("enum").is_some_and(strings);
    let string_const = property.get("const").is_some_and(Value::is_string);
    if string_enum || string_const {
        vec![("string", property)]
    } else {
        Vec::new()
    }
}

/// The one type other than `null` among `types`, with its schema; `None`
/// when there are several, or none.
fn one_type<'a>(types: &[(&'a str, &'a Value)]) -> Option<(&'a str, &'a Value)> {
    let mut typed = types.iter().filter(|(t, _)| *t != "null");
    match (typed.next(), typed.next()) {
        (Some(&(only, schema)), None) => Some((only, schema)),
        _ => None,
    }
}

fn as_type(text: &str, kind: &str, property: &Value) -> Result<Value, String> {
    match kind {
        "string" => Ok(Value::String(text.to_owned())),
        "integer" => integer(text.trim())
            .map_err(|e| e.unwrap_or_else(|| "the tool's schema wants an integer".to_owned())),
        "number" => {
            number(text.trim()).ok_or_else(|| "the tool's schema wants a number".to_owned())?
        }
        "boolean" => match text.trim() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err("the tool's schema wants true or false".to_owned()),
        },
        "object" => match json(text)? {
            Some(mut object @ Value::Object(_)) => {
                retype(&mut object, Some(property));
                Ok(object)
            }
            _ => Err("the tool's schema wants a JSON object, {...}".to_owned()),
        },
        "array" => array(text, property),
        "null" => Err("the tool's schema wants null".to_owned()),
        // A type this does not know: the rule for a schema that says
        // nothing.
        _ => untyped(text),
    }
}

/// An `array`: JSON when written `[...]`, else the text split at commas,
/// each item converted by the `items` schema (`tags=a,b`; empty: `[]`).
fn array(text: &str, property: &Value) -> Result<Value, String> {
    if text.trim_start().starts_with('[') {
        return match json(text)? {
            Some(mut array @ Value::Array(_)) => {
                retype(&mut array, Some(property));
                Ok(array)
            }
            _ => Err("the tool's schema wants a JSON array, [...]".to_owned()),
        };
    }
    if text.is_empty() {
        return Ok(Value::Array(Vec::new()));
    }
    let items = property.get("items");
    text.split(',')
        .map(|item| {
            // Which item was wrong, when there are several.
            convert(item, items).map_err(|e| format!("{e}, not {item:?}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// Makes the whole numbers in `value` integers where `schema` wants an
/// `integer`, through `items` (of an array) and `properties` (of an
/// object; else `additionalProperties`). Only whole numbers within 64
/// bits change, and they were written exactly (`json` saw to that): the
/// value stays the one written.
fn retype(value: &mut Value, schema: Option<&Value>) {
    let Some((kind, schema)) = schema.map(types).as_deref().and_then(one_type) else {
        return;
    };
    match value {
        Value::Number(n) if kind == "integer" => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                && !(n.is_i64() || n.is_u64())
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) if kind == "array" => {
            for item in items {
                retype(item, schema.get("items"));
            }
        }
        Value::Object(members) if kind == "object" => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let others = schema.get("additionalProperties").filter(|s| s.is_object());
            for (name, member) in members.iter_mut() {
                retype(member, properties.and_then(|p| p.get(name)).or(others));
            }
        }
        _ => {}
    }
}

/// The rule where the schema says nothing: JSON when the text parses as
/// JSON (its numbers sent exactly), a string otherwise.
fn untyped(text: &str) -> Result<Value, String> {
    Ok(json(text)?.unwrap_or_else(|| Value::String(text.to_owned())))
}

/// `text` as JSON, `None` when it is not JSON; an error when it is, but a
/// number in it cannot be sent as written. An integer written `-0` is
/// read as `0` (see the module's doc).
pub fn json(text: &str) -> Result<Option<Value>, String> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Ok(None);
    };
    match exact_numbers(text)? {
        Cow::Borrowed(_) => Ok(Some(value)),
        Cow::Owned(zeroed) => Ok(serde_json::from_str(&zeroed).ok()),
    }
}

/// An `integer`: digits, or a whole number however written (`1e2`).
/// `Err(None)`: not an integer; `Err(Some(why))`: one that cannot be sent
/// exactly.
pub fn integer(text: &str) -> Result<Value, Option<String>> {
    if let Ok(n) = text.parse::<i64>() {
        return Ok(Value::from(n));
    }
    if let Ok(n) = text.parse::<u64>() {
        return Ok(Value::from(n));
    }
    let Some(Ok(Value::Number(n))) = number(text) else {
        return Err(None);
    };
    let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) else {
        return Err(None);
    };
    // Whole, and exactly what was written (`number` saw to that): within
    // what an i64 holds it is sent as digits.
    if f.abs() < 9.2e18 {
        return Ok(Value::from(f as i64));
    }
    Err(Some(format!(
        "{text} cannot be sent exactly (past 64-bit integers)"
    )))
}

/// A JSON number written `text`, exactly: `None` when it is not one.
pub fn number(text: &str) -> Option<Result<Value, String>> {
    let n: Number = serde_json::from_str(text).ok()?;
    Some(if exact(text) {
        // `-0` (see `json`), or the number as written.
        Ok(
            if n.as_f64() == Some(0.0) && !text.contains(['.', 'e', 'E']) {
                Value::from(0)
            } else {
                Value::Number(n)
            },
        )
    } else {
        Err(inexact(text))
    })
}

fn inexact(text: &str) -> String {
    format!(
        "{text} cannot be sent exactly (past 64-bit integers and double precision): write it as a string, \"{text}\", if the tool takes one"
    )
}

/// Every number in the JSON `text` can be sent exactly: the text, with any
/// integer written `-0` made `0` (see `json`).
pub fn exact_numbers(text: &str) -> Result<Cow<'_, str>, String> {
    let bytes = text.as_bytes();
    let (mut at, mut in_string) = (0, false);
    let mut zeroed: Option<String> = None;
    let mut copied = 0;
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
            if token == "-0" {
                let out = zeroed.get_or_insert_with(String::new);
                out.push_str(&text[copied..at]);
                out.push('0');
                copied = end;
            }
            at = end;
        } else {
            at += 1;
        }
    }
    Ok(match zeroed {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(text),
    })
}

/// Whether the JSON number `text` reaches the server with the value it
/// was written with: an integer within 64 bits, or a decimal whose double
/// is written back as the same decimal.
fn exact(text: &str) -> bool {
    let integer = !text.contains(['.', 'e', 'E']);
    if integer {
        return text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok();
    }
    match (text.parse::<f64>(), decimal(text)) {
        (Ok(f), Some(written)) if f.is_finite() => Some(written) == decimal(&format!("{f:e}")),
        _ => false,
    }
}

/// A decimal number's sign, significant digits and exponent, for
/// comparing two ways of writing it: `1e2`, `100.0` and `1.00e+2` are all
/// `(false, "1", 2)`; zero is `(false, "", 0)`, whatever its sign and
/// exponent. `None` when the exponent is past what an `i64` holds (no
/// double is that number).
fn decimal(text: &str) -> Option<(bool, String, i64)> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = rest.split_once(['e', 'E']).unwrap_or((rest, "0"));
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_matches('0').to_owned();
    if significant.is_empty() {
        return Some((false, significant, 0));
    }
    let leading = digits.len() - digits.trim_start_matches('0').len();
    let exponent = exponent
        .trim_start_matches('+')
        .parse::<i64>()
        .ok()?
        .checked_add(i64::try_from(whole.len()).ok()?)?
        .checked_sub(1 + i64::try_from(leading).ok()?)?;
    Some((negative, significant, exponent))
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
        // An exponent at the edge of an i64: refused, not an overflow.
        assert!(!exact("0.1e-9223372036854775808"));
        assert!(!exact("1e99999999999999999999"));
        assert_eq!(decimal("0.1e-9223372036854775808"), None);
        assert!(exact_numbers(r#"{"a":"123456789012345678901234567890","b":[1,2.5]}"#).is_ok());
        assert_eq!(
            exact_numbers(r#"{"a":"-0","b":[-0,-0.0,-0e1,10]}"#).unwrap(),
            r#"{"a":"-0","b":[0,-0.0,-0e1,10]}"#
        );
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
        let nested = json!({ "properties": {
            "sizes": { "type": "array", "items": { "type": "integer" } },
            "box": { "type": "object", "properties": { "w": { "type": "integer" }, "r": { "type": "number" } } },
            "name": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
            "ref": { "anyOf": [{ "$ref": "#/$defs/x" }, { "type": "null" }] },
        }});
        let pairs: Vec<(String, String)> = [
            ("sizes", "[1e2, 7]"),
            ("box", r#"{"w": 3.0, "r": 1e2}"#),
            ("name", "42"),
            ("ref", "42"),
            ("loose", "[-0, 1e2]"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            serde_json::to_string(&by_schema(&pairs, Some(&nested)).unwrap()).unwrap(),
            r#"{"box":{"r":100.0,"w":3},"loose":[0,100.0],"name":"42","ref":42,"sizes":[100,7]}"#
        );
        let wrong = [("i".to_owned(), "1.5".to_owned())];
        assert_eq!(
            by_schema(&wrong, Some(&schema)).unwrap_err(),
            "i=1.5: the tool's schema wants an integer"
        );
    }
}
