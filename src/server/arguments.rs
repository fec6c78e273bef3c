//! A typed tool's arguments: the bound its type meets ([`ToolArguments`]),
//! the schema a registration advertises for it, and what the model is told
//! when a call's arguments do not fit it.
//!
//! Spec 2026-07-28 server/tools, "Error Handling" (2025-11-25 the same):
//! input validation errors are tool execution errors, reported in the
//! result with `isError: true` so that the model can read them and correct
//! its call. JSON-RPC errors are for an unknown tool and for params that
//! break the `CallToolRequest` schema (`arguments` that is not an object);
//! the dispatcher answers those before a handler is reached.
//!
//! serde_json says what was expected in Rust's words (`expected u64`) and
//! where as a position in text the model never wrote (`at line 1 column
//! 10`), and for a wrong type it does not name the field at all. The
//! arguments are valid JSON by the time they are read (they came in a line
//! that parsed), so a short scan turns the position back into the path of
//! the value it falls in (`address.city`, `tags[2]`), and a table turns
//! Rust's type names into JSON's. `serde_path_to_error` would find the path
//! too, for one more dependency on the path of every call; the scan runs
//! only when the arguments were wrong.

use serde::de::DeserializeOwned;
use serde_json::error::Category;

use crate::types::{CallToolResult, Tool};

/// What a typed tool handler reads its arguments into: any
/// `DeserializeOwned` type, and with the `schemars` feature (on by
/// default) one that is `schemars::JsonSchema` too, whose schema the tool
/// then advertises as its `inputSchema`. Implemented for every such type;
/// there is nothing to implement.
///
/// A tool's own `inputSchema` wins: the derived one replaces only the
/// `{"type":"object"}` of [`Tool::new`]. `serde_json::Value` takes the
/// arguments raw and advertises `{"type":"object"}`.
///
/// Why the bound grows with the feature: a generic function cannot ask
/// whether its type happens to implement a trait (not without tricks
/// that rely on method resolution), and a tool whose handler reads typed
/// arguments but whose schema lists none is a silent mistake: the model
/// sees a tool without parameters. With `schemars` on, a missing
/// `#[derive(JsonSchema)]` is a compile error instead. A type that cannot
/// derive it can take `Value` and hand-write its schema, or build without
/// the feature (`default-features = false`; mind that another crate in
/// the build that turns it on turns it on for everyone).
#[cfg(feature = "schemars")]
pub trait ToolArguments: DeserializeOwned + schemars::JsonSchema {}

#[cfg(feature = "schemars")]
impl<T: DeserializeOwned + schemars::JsonSchema> ToolArguments for T {}

/// What a typed tool handler reads its arguments into: any
/// `DeserializeOwned` type. With the `schemars` feature the type must also
/// be `schemars::JsonSchema`, and the tool advertises its schema.
#[cfg(not(feature = "schemars"))]
pub trait ToolArguments: DeserializeOwned {}

#[cfg(not(feature = "schemars"))]
impl<T: DeserializeOwned> ToolArguments for T {}

/// The tool as a typed registration advertises it: with `schemars`, the
/// input schema derived from `T` unless the tool has one of its own
/// (anything but [`Tool::new`]'s `{"type":"object"}`) or `T` takes any
/// JSON.
///
/// # Panics
///
/// With `schemars`, when the derived schema is not an object schema (`T`
/// is not a struct or a map), as `Tool::input` does.
#[cfg_attr(
    not(feature = "schemars"),
    expect(
        clippy::extra_unused_type_parameters,
        reason = "the same call with and without the feature; without it `T` has nothing to say"
    )
)]
pub(crate) fn advertised<T: ToolArguments>(tool: Tool) -> Tool {
    #[cfg(feature = "schemars")]
    if tool.input_schema == serde_json::json!({ "type": "object" })
        && let Some(schema) = crate::schema::input_schema_of::<T>()
    {
        return tool.input_schema(schema);
    }
    tool
}

/// Reads a call's arguments into `T` (a call without any reads as `{}`),
/// or gives the tool result that tells the model what did not fit.
///
/// A whole number written as a float (`3.0`, `3e0`, `-0`) is an integer
/// to JSON Schema, whose `"type": "integer"` the tool advertises, and some
/// hosts send every number as a double; serde's integers take no float.
/// When the arguments do not read as sent, they are read once more with
/// such numbers written as integers ([`whole_numbers`]); the model is told
/// what did not fit in the arguments as sent.
pub(crate) fn read_arguments<T: DeserializeOwned>(args: Option<&str>) -> Result<T, CallToolResult> {
    let text = args.unwrap_or("{}");
    serde_json::from_str(text).or_else(|e| {
        whole_numbers(text)
            .and_then(|rewritten| serde_json::from_str(&rewritten).ok())
            .ok_or_else(|| CallToolResult::error_text(explain(&e, text)))
    })
}

/// `text` with every number outside a string that is whole but written
/// with a fraction or an exponent (and within `i64` or `u64`) written as
/// an integer; `None` when there is none. Everything else is left as it
/// is, byte for byte (a repeated key is still refused, a big integer
/// still read exactly).
fn whole_numbers(text: &str) -> Option<String> {
    // 2^63 and 2^64, exact as floats.
    const I64_BOUND: f64 = 9_223_372_036_854_775_808.0;
    const U64_BOUND: f64 = 18_446_744_073_709_551_616.0;
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut at, mut copied, mut changed) = (0, 0, false);
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at < bytes.len()
                    && matches!(bytes[at], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    at += 1;
                }
                let token = &text[start..at];
                // serde_json reads `-0` as a float too.
                if !token.contains(['.', 'e', 'E']) && token != "-0" {
                    continue;
                }
                // Read as serde_json reads a number (its parser is in the
                // binary already; std's `str::parse::<f64>` adds 15 KB and
                // takes `1.`, which is not JSON).
                let Ok(number) = serde_json::from_str::<f64>(token) else {
                    continue;
                };
                let whole = if number.fract() != 0.0 {
                    None
                } else if (-I64_BOUND..I64_BOUND).contains(&number) {
                    Some((number as i64).to_string())
                } else if (0.0..U64_BOUND).contains(&number) {
                    Some((number as u64).to_string())
                } else {
                    None
                };
                if let Some(whole) = whole {
                    out.push_str(&text[copied..start]);
                    out.push_str(&whole);
                    copied = at;
                    changed = true;
                }
            }
            _ => at += 1,
        }
    }
    out.push_str(text.get(copied..)?);
    changed.then_some(out)
}

/// The model's account of why `text` did not read: which value, what was
/// expected, what it got, and what to do.
fn explain(e: &serde_json::Error, text: &str) -> String {
    let message = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let message = message.strip_suffix(&position).unwrap_or(&message);
    // A syntax error here is serde_json's recursion limit: there is no
    // value to point at.
    let path = match e.classify() {
        Category::Data => path_at(text, offset(text, e.line(), e.column())),
        _ => String::new(),
    };
    let detail = if let Some((got, expected)) = mismatch(message) {
        let (expected, got) = (json_expected(expected), json_got(got));
        if path.is_empty() {
            format!("expected {expected}, got {got}")
        } else {
            format!("`{path}` must be {expected}, not {got}")
        }
    } else if let Some(field) = missing_field(message) {
        let field = if path.is_empty() {
            field.to_owned()
        } else {
            format!("{path}.{field}")
        };
        format!("the required field `{field}` is missing")
    } else if path.is_empty() {
        message.replace("unknown variant", "unknown value")
    } else {
        format!(
            "`{path}`: {}",
            message.replace("unknown variant", "unknown value")
        )
    };
    format!("Invalid arguments: {detail}. Correct the arguments and call the tool again.")
}

/// serde's "invalid type: U, expected E" and "invalid value: U, expected
/// E", split into what it got and what was expected. The last `, expected`
/// splits them: what it got may quote the caller's text, which may hold
/// anything.
fn mismatch(message: &str) -> Option<(&str, &str)> {
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))?;
    rest.rsplit_once(", expected ")
}

/// The field named by serde's "missing field `name`".
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.strip_suffix('`')
}

/// What serde says was expected, in JSON's words: Rust's integer types as
/// the integers they take, a struct or map as an object, a sequence as an
/// array.
fn json_expected(expected: &str) -> String {
    let json = match expected {
        "i8" => "an integer from -128 to 127",
        "u8" => "an integer from 0 to 255",
        "i16" => "an integer from -32768 to 32767",
        "u16" => "an integer from 0 to 65535",
        "i32" => "an integer from -2147483648 to 2147483647",
        "u32" => "an integer from 0 to 4294967295",
        "i64" | "i128" | "isize" => "an integer",
        "u64" | "u128" | "usize" => "a non-negative integer",
        "f32" | "f64" => "a number",
        "a sequence" => "an array",
        "a map" => "an object",
        "unit" => "null",
        other if other.starts_with("struct ") => "an object",
        other if other.starts_with("tuple") || other.starts_with("a tuple") => "an array",
        other => other,
    };
    json.to_owned()
}

/// What serde says it got (its `Unexpected`), in JSON's words.
fn json_got(got: &str) -> String {
    let plain = |rest: &str| rest.trim_matches('`').to_owned();
    if let Some(rest) = got.strip_prefix("integer ") {
        format!("the integer {}", plain(rest))
    } else if let Some(rest) = got.strip_prefix("floating point ") {
        format!("the number {}", plain(rest))
    } else if let Some(rest) = got.strip_prefix("boolean ") {
        plain(rest)
    } else if let Some(rest) = got.strip_prefix("string ") {
        format!("the string {rest}")
    } else {
        match got {
            "unit value" => "null",
            "sequence" => "an array",
            "map" => "an object",
            other => other,
        }
        .to_owned()
    }
}

/// The byte offset of serde_json's `line` and `column` in `text` (its
/// column counts bytes from the start of the line, from 0).
fn offset(text: &str, line: usize, column: usize) -> usize {
    let before: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    before + column
}

/// One step of a path: an object's key or an array's index.
enum Step {
    Key(String),
    Index(usize),
}

/// The path of the innermost value of `text` (valid JSON) that holds byte
/// `at`, as a model would write it (`address.city`, `tags[2]`); empty for
/// the whole text. serde_json reports a wrong scalar, and a container that
/// misses a field, just past its last byte, and a container of the wrong
/// type at its first byte: a container holding `at` there is the value
/// itself, not one of its members.
fn path_at(text: &str, at: usize) -> String {
    let mut path = String::new();
    let mut pos = skip_space(text.as_bytes(), 0);
    // serde_json's recursion limit: nothing deeper was read.
    for _ in 0..128 {
        let Some((step, start)) = member_holding(text, pos, at) else {
            break;
        };
        match step {
            Step::Key(key) if path.is_empty() => path = key,
            Step::Key(key) => path = format!("{path}.{key}"),
            Step::Index(i) => path = format!("{path}[{i}]"),
        }
        if start == at {
            break;
        }
        pos = start;
    }
    path
}

/// For the object or array that starts at `open`, the member whose value
/// holds byte `at`, and where that value starts.
fn member_holding(text: &str, open: usize, at: usize) -> Option<(Step, usize)> {
    let bytes = text.as_bytes();
    let object = match bytes.get(open)? {
        b'{' => true,
        b'[' => false,
        _ => return None,
    };
    let mut pos = open + 1;
    let mut index = 0;
    loop {
        pos = skip_space(bytes, pos);
        if matches!(bytes.get(pos)?, b'}' | b']') {
            return None;
        }
        let step = if object {
            let end = skip_value(bytes, pos)?;
            let key = serde_json::from_str(text.get(pos..end)?).ok()?;
            // Past the key and its colon.
            pos = skip_space(bytes, skip_space(bytes, end) + 1);
            Step::Key(key)
        } else {
            Step::Index(index)
        };
        let end = skip_value(bytes, pos)?;
        if (pos..=end).contains(&at) {
            return Some((step, pos));
        }
        pos = skip_space(bytes, end);
        if bytes.get(pos) != Some(&b',') {
            return None;
        }
        pos += 1;
        index += 1;
    }
}

/// Where the value that starts at `start` ends (one past its last byte).
fn skip_value(bytes: &[u8], start: usize) -> Option<usize> {
    match bytes.get(start)? {
        b'"' => skip_string(bytes, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut pos = start;
            loop {
                match bytes.get(pos)? {
                    b'"' => {
                        pos = skip_string(bytes, pos)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(pos + 1);
                        }
                    }
                    _ => {}
                }
                pos += 1;
            }
        }
        _ => {
            let len = bytes[start..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(bytes.len() - start);
            Some(start + len)
        }
    }
}

/// Where the string that starts at `start` (its opening quote) ends.
fn skip_string(bytes: &[u8], start: usize) -> Option<usize> {
    let mut pos = start + 1;
    loop {
        match bytes.get(pos)? {
            b'\\' => pos += 2,
            b'"' => return Some(pos + 1),
            _ => pos += 1,
        }
    }
}

/// The first byte at or after `pos` that is not JSON whitespace.
fn skip_space(bytes: &[u8], pos: usize) -> usize {
    pos + bytes
        .get(pos..)
        .unwrap_or_default()
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .count()
}

#[cfg(test)]
mod tests;
