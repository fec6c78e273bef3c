//! The arguments of `call`, `prompt` and `complete`: one JSON object, or
//! `key=value` pairs; a mistake is a usage error that says where.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{UsageError, usage};

/// A tool's arguments: one JSON object, or `key=value` pairs whose values
/// are JSON when they parse as JSON and strings otherwise.
pub fn tool_arguments(args: &[String]) -> Result<Map<String, Value>, UsageError> {
    let Some(first) = args.first() else {
        return Ok(Map::new());
    };
    let trimmed = first.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if args.len() > 1 {
            return Err(usage(
                "give the arguments as one JSON object or as key=value pairs, not both",
            ));
        }
        return match serde_json::from_str::<Value>(first) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(usage("the arguments must be a JSON object, {...}")),
            Err(e) => Err(usage(format!(
                "the arguments are not valid JSON: {e}: {}",
                pointed(first, e.line(), e.column())
            ))),
        };
    }
    let mut map = Map::new();
    for arg in args {
        let (key, text) = pair(arg, "an argument")?;
        let value = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
        map.insert(key, value);
    }
    Ok(map)
}

/// `key=value` pairs taken as strings (prompt arguments, completion
/// context).
pub(super) fn string_pairs(args: &[String]) -> Result<BTreeMap<String, String>, UsageError> {
    args.iter().map(|arg| pair(arg, "an argument")).collect()
}

/// Splits `key=value`.
pub(super) fn pair(text: &str, what: &str) -> Result<(String, String), UsageError> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        Some(_) => Err(usage(format!(
            "{what} {text:?} has no key before its \"=\" (expected key=value)"
        ))),
        None => Err(usage(format!(
            "{what} {text:?} is not key=value (nor a JSON object)"
        ))),
    }
}

/// The line of `text` that holds the error, with `»` before the column
/// serde_json points at (1-based).
fn pointed(text: &str, line: usize, column: usize) -> String {
    let Some(row) = text.lines().nth(line.saturating_sub(1)) else {
        return text.to_owned();
    };
    let at = row
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(row.len(), |(i, _)| i);
    format!("{}»{}", &row[..at], &row[at..])
}
