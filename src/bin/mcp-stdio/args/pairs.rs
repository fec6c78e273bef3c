//! The arguments of `call`, `prompt` and `complete`: one JSON object, or
//! `key=value` pairs; a mistake is a usage error that says where.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{UsageError, usage};

/// A tool's arguments, as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// One JSON object, sent as it is (its numbers checked, and its whole
    /// numbers made integers where the schema wants them: `values`).
    Object(Map<String, Value>),
    /// `key=value` pairs, whose values the tool's schema types
    /// (`values::by_schema`).
    Pairs(Vec<(String, String)>),
}

/// A tool's arguments: one JSON object, or `key=value` pairs.
pub fn tool_arguments(args: &[String]) -> Result<Arguments, UsageError> {
    let Some(first) = args.first() else {
        return Ok(Arguments::Object(Map::new()));
    };
    let trimmed = first.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if args.len() > 1 {
            return Err(usage(
                "give the arguments as one JSON object or as key=value pairs, not both",
            ));
        }
        return match serde_json::from_str::<Value>(first) {
            Ok(Value::Object(map)) => {
                // Its numbers checked, and an integer `-0` read as `0`.
                match crate::values::json(first).map_err(usage)? {
                    Some(Value::Object(exact)) => Ok(Arguments::Object(exact)),
                    _ => Ok(Arguments::Object(map)),
                }
            }
            Ok(_) => Err(usage("the arguments must be a JSON object, {...}")),
            Err(e) => Err(usage(format!(
                "the arguments are not valid JSON: {e}: {}",
                pointed(first, e.line(), e.column())
            ))),
        };
    }
    args.iter()
        .map(|arg| pair(arg, "an argument"))
        .collect::<Result<_, _>>()
        .map(Arguments::Pairs)
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
