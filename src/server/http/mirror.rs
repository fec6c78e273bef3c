//! The request metadata headers checked against the body (spec 2026-07-28
//! basic/transports/streamable-http, "Request Metadata" and "Server
//! Validation"): `MCP-Protocol-Version` against `_meta`'s protocol
//! version, `Mcp-Method` against `method`, `Mcp-Name` against
//! `params.name` or `params.uri`, and every `Mcp-Param-{Name}` a tool's
//! `x-mcp-header` annotations call for against its arguments. Names are
//! matched without regard to case, values exactly, after the Base64
//! sentinel is decoded. A failure is `-32020` (`HeaderMismatch`),
//! answered `400`.
//!
//! Each check reads exactly the members it needs, each on its own: the
//! params' members as the kernel reads them (`Params::fields`, so the
//! check and the handler see the same `name`), then the one member a
//! header mirrors. A member it needs that it cannot read (not a string,
//! twice) refuses the request; a member it does not need is never read,
//! so no other member of the wrong type can make it compare nothing.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::http::{HttpHeaders, decode_sentinel};
use crate::incoming::{Fields, Params};
use crate::jsonrpc::{ErrorObject, error_code};
use crate::server::Inner;
use crate::server::meta::{MetaView, validate_meta};
use crate::server::request_meta::RequestMeta;
use crate::types::method;
use crate::version::SUPPORTED_VERSIONS;

/// The era a POST speaks, by its version header and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Era {
    /// A modern request (the body's `_meta` or the header names a version
    /// of the modern era, or neither names a legacy one).
    Modern,
    /// A legacy request: no modern version in the body, and the header is
    /// absent (2025-03-26) or names a legacy version.
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    Legacy(String),
}

fn mismatch(message: String) -> ErrorObject {
    ErrorObject::new(
        error_code::HEADER_MISMATCH,
        format!("Header mismatch: {message}"),
    )
}

/// The params' members as the kernel reads them, or `-32020` when they
/// cannot be read (a member twice): then no header can be checked, and
/// the request is refused rather than let through unchecked.
pub(crate) fn members<'p>(params: Option<&'p Params<'_>>) -> Result<Fields<'p>, ErrorObject> {
    match params {
        None => Ok(Fields::default()),
        Some(params) => params.fields().map_err(|e| {
            mismatch(format!(
                "the params cannot be read to check the headers against them ({}): send each member once",
                e.message
            ))
        }),
    }
}

/// Which era a request speaks over HTTP, or the error that refuses it:
/// `-32022` for a version this server does not speak, `-32020` for a
/// version header that does not match the body. The body's version is
/// read as the kernel reads it (`meta`, the body's `_meta` read once), so
/// both tell the same era.
pub(crate) fn era(headers: &HttpHeaders, meta: &MetaView<'_>) -> Result<Era, ErrorObject> {
    let header = headers.get("mcp-protocol-version").map(str::trim);
    if let Some(body) = meta.protocol_version() {
        let Some(header) = header else {
            return Err(mismatch(
                "the MCP-Protocol-Version header is required: send the version of the body's _meta in it".into(),
            ));
        };
        if serde_json::from_str::<Cow<'_, str>>(body.get())
            .ok()
            .as_deref()
            != Some(header)
        {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header value '{header}' does not match body value {}",
                body.get()
            )));
        }
        // An unsupported version is the kernel's `-32022`, as on stdio.
        return Ok(Era::Modern);
    }
    match header {
        Some(v) if SUPPORTED_VERSIONS.contains(&v) => Ok(Era::Modern),
        #[cfg(feature = "legacy")]
        Some(v) if crate::version::LEGACY_VERSIONS.contains(&v) => Ok(Era::Legacy(v.to_owned())),
        // Spec 2026-07-28: a request without the header MAY be taken as
        // 2025-03-26 by a server that speaks that version.
        #[cfg(feature = "legacy")]
        None => Ok(Era::Legacy("2025-03-26".into())),
        #[cfg(not(feature = "legacy"))]
        None => Err(mismatch(
            "the MCP-Protocol-Version header is required".into(),
        )),
        Some(v) => {
            #[cfg(feature = "legacy")]
            let supported: Vec<&str> = SUPPORTED_VERSIONS
                .iter()
                .chain(crate::version::LEGACY_VERSIONS)
                .copied()
                .collect();
            #[cfg(not(feature = "legacy"))]
            let supported = SUPPORTED_VERSIONS.to_vec();
            Err(ErrorObject::unsupported_protocol_version(v, &supported))
        }
    }
}

/// A modern request's `_meta` (`meta`, read once for the era and this),
/// checked as dispatch checks it: a request missing a required field is
/// refused with `400 Bad Request` (SEP-2575; the conformance suite's
/// `server-stateless`), not `200`. The request metadata it stands for is
/// handed to the kernel (`dispatch::prepare`), which then reads no
/// `_meta` again.
pub(crate) fn check_meta(meta: &MetaView<'_>) -> Result<RequestMeta, ErrorObject> {
    validate_meta(meta)
}

/// Checks `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` headers of a
/// modern request against its body.
pub(crate) fn check(
    inner: &Inner,
    headers: &HttpHeaders,
    method: &str,
    fields: &Fields<'_>,
) -> Result<(), ErrorObject> {
    match headers.get("mcp-method") {
        None => {
            return Err(mismatch(
                "the Mcp-Method header is required: send the body's method in it".into(),
            ));
        }
        Some(h) if h != method => {
            return Err(mismatch(format!(
                "Mcp-Method header value '{h}' does not match body value '{method}'"
            )));
        }
        Some(_) => {}
    }
    let named = match method {
        method::TOOLS_CALL | method::PROMPTS_GET => Some(("params.name", fields.name)),
        method::RESOURCES_READ => Some(("params.uri", fields.uri)),
        // The Tasks extension: these name their task, so that a balancer
        // can route them to the instance that holds it.
        method::TASKS_GET | method::TASKS_UPDATE | method::TASKS_CANCEL => {
            Some(("params.taskId", fields.task_id))
        }
        _ => None,
    };
    let Some((field, raw)) = named else {
        return Ok(());
    };
    let Some(body) = string_member(raw, field)? else {
        // No name to mirror: the kernel's "missing" error is the answer.
        return Ok(());
    };
    let Some(raw) = headers.get("mcp-name") else {
        return Err(mismatch(format!(
            "the Mcp-Name header is required for {method}: send {field} in it"
        )));
    };
    let header = decoded("Mcp-Name", raw)?;
    if header != body {
        return Err(mismatch(format!(
            "Mcp-Name header value '{header}' does not match body value '{body}'"
        )));
    }
    if method == method::TOOLS_CALL {
        check_params(inner, headers, &body, fields.arguments)?;
    }
    Ok(())
}

/// A member a header mirrors, read alone: `None` when absent or `null`
/// (the kernel's reading too); a member of another type cannot be
/// compared with a header, so it refuses the request.
fn string_member(raw: Option<&RawValue>, field: &str) -> Result<Option<String>, ErrorObject> {
    match raw {
        None => Ok(None),
        Some(raw) if raw.get() == "null" => Ok(None),
        Some(raw) => serde_json::from_str(raw.get()).map(Some).map_err(|_| {
            mismatch(format!(
                "{field} is {}, not a string, so no header can match it: send it as a string",
                kind(raw)
            ))
        }),
    }
}

/// JSON's name for the type of a value, by its first character.
fn kind(raw: &RawValue) -> &'static str {
    match raw.get().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// A header value, decoded from the Base64 sentinel when it uses it, or
/// why it is malformed (RFC 9110 field values: visible ASCII, space, tab).
fn decoded(name: &str, raw: &str) -> Result<String, ErrorObject> {
    if !raw
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return Err(mismatch(format!(
            "the {name} header holds characters that are not visible ASCII: Base64-encode the value"
        )));
    }
    decode_sentinel(raw).map_err(|e| mismatch(format!("the {name} header: {e}")))
}

/// The `Mcp-Param-{Name}` headers of a tool call: each annotated argument
/// present in the body must be mirrored, exactly; none may be sent for an
/// argument the body lacks.
fn check_params(
    inner: &Inner,
    headers: &HttpHeaders,
    tool: &str,
    arguments: Option<&RawValue>,
) -> Result<(), ErrorObject> {
    let annotated = {
        let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = registry.tools.get(tool) else {
            // An unknown tool is the kernel's answer to give.
            return Ok(());
        };
        let mut annotated = Vec::new();
        annotations(&entry.tool.input_schema, &mut Vec::new(), &mut annotated);
        annotated
    };
    param_fields_once(headers, &annotated)?;
    for (path, name) in annotated {
        let header_name = format!("Mcp-Param-{name}");
        let body = argument(arguments, &path)?;
        let header = headers.get(&header_name);
        match (header, body) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "the {header_name} header is required: argument '{}' is in the body",
                    path.join(".")
                )));
            }
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "{header_name} header is sent but argument '{}' is not in the body",
                    path.join(".")
                )));
            }
            (Some(raw), Some(body)) => {
                let header = decoded(&header_name, raw)?;
                if !same(&header, body).map_err(|why| {
                    mismatch(format!(
                        "argument '{}' is {}, {why}, so no {header_name} header can match it",
                        path.join("."),
                        body.get()
                    ))
                })? {
                    return Err(mismatch(format!(
                        "{header_name} header value '{header}' does not match body value {}",
                        body.get()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Each `Mcp-Param-*` field the tool marks is sent once, a `_` counted as
/// a `-` (as `guard::single_fields` does for the fixed names): CGI-style
/// gateways read `Mcp-Param-Region` and `Mcp_Param_Region` as one
/// variable, so the two are the same field sent twice, and a gateway may
/// route on the one the check did not read. Unless the tool itself marks
/// two names that differ only so (`Region_Code` and `Region-Code`, which
/// 2026-07-28 allows): then each spelling is a field of its own, and only
/// the same spelling twice is refused (`guard::single_fields`). A field
/// the tool marks once, sent with a `_` its mark does not have, is refused
/// too: the check looks up the name as marked, and would compare nothing.
/// Sent as marked (`Mcp-Param-Region_Code` for a mark `Region_Code`), it
/// is read (review http8).
fn param_fields_once(
    headers: &HttpHeaders,
    annotated: &[(Vec<String>, String)],
) -> Result<(), ErrorObject> {
    let fold = |name: &str| name.to_ascii_lowercase().replace('_', "-");
    // Each folded name the tool marks: how many marks fold to it, and the
    // name as marked (the one the check looks up).
    let mut marks: HashMap<String, (usize, String)> = HashMap::new();
    for (_, name) in annotated {
        let marked = format!("Mcp-Param-{name}");
        marks.entry(fold(&marked)).or_insert((0, marked)).0 += 1;
    }
    let mut sent: HashMap<String, usize> = HashMap::new();
    for (name, _) in headers.iter() {
        let folded = fold(name);
        if let Some((1, marked)) = marks.get(&folded) {
            // Sent once but spelled with a `_` the mark does not have:
            // the check looks for the name as marked and would compare
            // nothing, while a gateway reads it as the field. A mark that
            // has a `_` itself (`Region_Code`, a `1*tchar` as 2026-07-28
            // allows) is sent as marked, and read.
            if name.contains('_') && !name.eq_ignore_ascii_case(marked) {
                return Err(mismatch(format!(
                    "the {name} header is spelled with a `_`: send it as {marked}"
                )));
            }
            let count = sent.entry(folded).or_default();
            *count += 1;
            if *count > 1 {
                return Err(mismatch(format!(
                    "the {name} header is sent more than once (a `_` in a header's name counts as a `-`): send it once"
                )));
            }
        }
    }
    Ok(())
}

/// The argument at `path`, each level read on its own (only the member on
/// the path; the others are skipped unread): `None` when a level is
/// absent, `null` or not an object; `-32020` when a level names the
/// member twice, since a handler might read either.
fn argument<'a>(
    arguments: Option<&'a RawValue>,
    path: &[String],
) -> Result<Option<&'a RawValue>, ErrorObject> {
    let mut at = arguments;
    for key in path {
        let Some(object) = at.filter(|raw| raw.get().starts_with('{')) else {
            return Ok(None);
        };
        let mut input = serde_json::Deserializer::from_str(object.get());
        at = Member(key).deserialize(&mut input).map_err(|e| {
            mismatch(format!(
                "argument '{}' cannot be checked against its header ({e}): send each member once",
                path.join(".")
            ))
        })?;
    }
    Ok(at.filter(|raw| raw.get() != "null"))
}

/// One member of a JSON object, by name: `None` when absent, an error when
/// it is there twice.
struct Member<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for Member<'_> {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Member<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key != self.0 {
                map.next_value::<IgnoredAny>()?;
            } else if found.is_some() {
                return Err(de::Error::custom(format_args!(
                    "'{}' appears twice",
                    self.0
                )));
            } else {
                found = Some(map.next_value::<&'de RawValue>()?);
            }
        }
        Ok(found)
    }
}

/// Whether a header's text is the body's primitive value: a string as is,
/// a boolean as `true` or `false`, an integer compared as a number,
/// exactly (spec 2026-07-28, "Server Validation": `42.0` is `42`). Through
/// `f64`, 2^53 and 2^53 + 1 were one number: a balancer could route on
/// one while the handler read the other. So a body number must be an
/// integer within JavaScript's safe range, ±(2^53 − 1), as the spec
/// requires of a mirrored integer (its "Custom Headers" constraints);
/// any other is `Err`, why it cannot be compared.
fn same(header: &str, body: &RawValue) -> Result<bool, &'static str> {
    match body.get().as_bytes().first() {
        // An object or an array is never a header's value: not read.
        Some(b'{' | b'[') => Ok(false),
        Some(b'"') => {
            Ok(serde_json::from_str::<Cow<'_, str>>(body.get()).is_ok_and(|s| s == header))
        }
        Some(b't') => Ok(header == "true"),
        Some(b'f') => Ok(header == "false"),
        Some(b'-' | b'0'..=b'9') => {
            let body = safe_integer(body.get()).ok_or("not an integer within ±(2^53 − 1)")?;
            Ok(safe_integer(header) == Some(body))
        }
        _ => Ok(false),
    }
}

/// `part`, if it is one or more decimal digits.
fn digits_of(part: &[u8]) -> Option<&[u8]> {
    (!part.is_empty() && part.iter().all(u8::is_ascii_digit)).then_some(part)
}

/// JavaScript's `Number.MAX_SAFE_INTEGER`, 2^53 − 1.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The integer a decimal text stands for (a JSON number, or a header's
/// `42`, `-7`, `42.0`, `4.2e1`: `[+-]digits[.digits][(e|E)[+-]digits]`,
/// nothing around it), read exactly; `None` unless it is an integer within
/// ±(2^53 − 1).
fn safe_integer(text: &str) -> Option<i64> {
    let (negative, rest) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        rest => (false, rest),
    };
    let (mantissa, exponent) = match rest.iter().position(|&b| b == b'e' || b == b'E') {
        Some(at) => {
            let (negative, power) = match &rest[at + 1..] {
                [b'-', power @ ..] => (true, power),
                [b'+', power @ ..] => (false, power),
                power => (false, power),
            };
            // Saturating: past ±10^18 no safe integer is near, whatever
            // the digits.
            let power = digits_of(power)?.iter().fold(0i64, |n, d| {
                n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
            });
            (&rest[..at], if negative { -power } else { power })
        }
        None => (rest, 0),
    };
    let (whole, fraction) = match mantissa.iter().position(|&b| b == b'.') {
        Some(at) => (digits_of(&mantissa[..at])?, digits_of(&mantissa[at + 1..])?),
        None => (digits_of(mantissa)?, &[][..]),
    };
    // The significant digits, and the power of ten of the last one.
    let mut digits: Vec<u8> = whole.iter().chain(fraction).map(|d| d - b'0').collect();
    let mut exponent = exponent.saturating_sub(i64::try_from(fraction.len()).ok()?);
    while digits.last() == Some(&0) {
        digits.pop();
        exponent = exponent.saturating_add(1);
    }
    let leading = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..leading);
    if digits.is_empty() {
        return Some(0);
    }
    // 16 digits hold every safe integer; more never fit one.
    let places = i64::try_from(digits.len()).ok()?.saturating_add(exponent);
    if exponent < 0 || places > 16 {
        return None;
    }
    let mut n = digits.iter().fold(0i64, |n, &d| n * 10 + i64::from(d));
    for _ in 0..exponent {
        n *= 10;
    }
    (n <= MAX_SAFE_INTEGER).then_some(if negative { -n } else { n })
}

/// The `x-mcp-header` annotations of a schema reachable through
/// `properties` alone: (property path, header name).
fn annotations(schema: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, sub) in properties {
        path.push(key.clone());
        if let Some(name) = sub.get("x-mcp-header").and_then(Value::as_str) {
            out.push((path.clone(), name.to_owned()));
        }
        annotations(sub, path, out);
        path.pop();
    }
}

#[cfg(test)]
mod tests;
