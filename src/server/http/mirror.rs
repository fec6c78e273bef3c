//! The request metadata headers checked against the body (spec 2026-07-28
//! basic/transports/streamable-http, "Request Metadata" and "Server
//! Validation"): `MCP-Protocol-Version` against `_meta`'s protocol
//! version, `Mcp-Method` against `method`, `Mcp-Name` against
//! `params.name` or `params.uri`, and every `Mcp-Param-{Name}` a tool's
//! `x-mcp-header` annotations call for against its arguments. Names are
//! matched without regard to case, values exactly, after the Base64
//! sentinel is decoded. A failure is `-32020` (`HeaderMismatch`),
//! answered `400`.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::http::{HttpHeaders, decode_sentinel};
use crate::jsonrpc::{ErrorObject, error_code};
use crate::server::Inner;
use crate::server::meta::{MetaView, validate_meta};
use crate::types::method;
use crate::version::SUPPORTED_VERSIONS;

/// The parts of `params` the headers mirror.
#[derive(Deserialize, Default)]
struct Mirrored<'a> {
    name: Option<String>,
    uri: Option<String>,
    #[serde(rename = "taskId")]
    task_id: Option<String>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: Option<MirroredMeta>,
}

#[derive(Deserialize, Default)]
struct MirroredMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<Value>,
}

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

/// The protocol version of the body's `_meta`, if it names one.
pub(crate) fn body_version(params: Option<&RawValue>) -> Option<Value> {
    let params = params?;
    let mirrored: Mirrored<'_> = serde_json::from_str(params.get()).ok()?;
    mirrored.meta?.protocol_version
}

/// Which era a request speaks over HTTP, or the error that refuses it:
/// `-32022` for a version this server does not speak, `-32020` for a
/// version header that does not match the body.
pub(crate) fn era(headers: &HttpHeaders, params: Option<&RawValue>) -> Result<Era, ErrorObject> {
    let header = headers.get("mcp-protocol-version").map(str::trim);
    let body = body_version(params);
    if let Some(body) = &body {
        let Some(header) = header else {
            return Err(mismatch(
                "the MCP-Protocol-Version header is required: send the version of the body's _meta in it".into(),
            ));
        };
        if body.as_str() != Some(header) {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header value '{header}' does not match body value {body}"
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

/// A modern request's `_meta`, checked as dispatch will check it, so that
/// a request missing a required field is refused with `400 Bad Request`
/// (SEP-2575; the conformance suite's `server-stateless`), not `200`.
pub(crate) fn check_meta(params: Option<&RawValue>) -> Result<(), ErrorObject> {
    #[derive(Deserialize, Default)]
    struct WithMeta<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    let with: WithMeta<'_> = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    validate_meta(&MetaView::new(with.meta)).map(drop)
}

/// Checks `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` headers of a
/// modern request against its body.
pub(crate) fn check(
    inner: &Inner,
    headers: &HttpHeaders,
    method: &str,
    params: Option<&RawValue>,
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
    let mirrored: Mirrored<'_> = match params {
        Some(p) => serde_json::from_str(p.get()).unwrap_or_default(),
        None => Mirrored::default(),
    };
    let named = match method {
        method::TOOLS_CALL | method::PROMPTS_GET => Some(("params.name", &mirrored.name)),
        method::RESOURCES_READ => Some(("params.uri", &mirrored.uri)),
        // The Tasks extension: these name their task, so that a balancer
        // can route them to the instance that holds it.
        method::TASKS_GET | method::TASKS_UPDATE | method::TASKS_CANCEL => {
            Some(("params.taskId", &mirrored.task_id))
        }
        _ => None,
    };
    if let Some((field, Some(body))) = named {
        let Some(raw) = headers.get("mcp-name") else {
            return Err(mismatch(format!(
                "the Mcp-Name header is required for {method}: send {field} in it"
            )));
        };
        let header = decoded("Mcp-Name", raw)?;
        if header != *body {
            return Err(mismatch(format!(
                "Mcp-Name header value '{header}' does not match body value '{body}'"
            )));
        }
    }
    if let (method::TOOLS_CALL, Some(name)) = (method, &mirrored.name) {
        check_params(inner, headers, name, mirrored.arguments)?;
    }
    Ok(())
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
    if annotated.is_empty() {
        return Ok(());
    }
    let arguments: Value = arguments
        .and_then(|a| serde_json::from_str(a.get()).ok())
        .unwrap_or(Value::Null);
    for (path, name) in annotated {
        let header_name = format!("Mcp-Param-{name}");
        let body = path
            .iter()
            .try_fold(&arguments, |v, key| v.get(key))
            .filter(|v| !v.is_null());
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
                if !same(&header, body) {
                    return Err(mismatch(format!(
                        "{header_name} header value '{header}' does not match body value {body}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Whether a header's text is the body's primitive value: a string as is,
/// an integer compared as a number, a boolean as `true` or `false`.
fn same(header: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => s == header,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => header
            .trim()
            .parse::<f64>()
            .ok()
            .zip(n.as_f64())
            .is_some_and(|(h, b)| h == b),
        _ => false,
    }
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_compare_as_numbers_and_booleans_in_lowercase() {
        assert!(same("42", &json!(42)));
        assert!(same("42.0", &json!(42)));
        assert!(!same("43", &json!(42)));
        assert!(same("true", &json!(true)));
        assert!(!same("True", &json!(true)));
        assert!(same("us-west1", &json!("us-west1")));
    }

    #[test]
    fn annotations_are_found_through_properties_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "nested": { "type": "object", "properties": {
                    "id": { "type": "integer", "x-mcp-header": "Id" }
                }},
                "list": { "type": "array", "items": { "x-mcp-header": "Never" } }
            }
        });
        let mut out = Vec::new();
        annotations(&schema, &mut Vec::new(), &mut out);
        out.sort();
        assert_eq!(
            out,
            [
                (vec!["nested".to_owned(), "id".to_owned()], "Id".to_owned()),
                (vec!["region".to_owned()], "Region".to_owned()),
            ]
        );
    }
}
