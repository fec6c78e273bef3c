//! Validating the per-request `_meta` of a modern request
//! (spec 2026-07-28 basic/index, "Per-request protocol fields").

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::request_meta::RequestMeta;
use crate::types::{LoggingLevel, ProgressToken, meta_key};
use crate::version::SUPPORTED_VERSIONS;

/// The reserved `_meta` keys, borrowed.
#[derive(Deserialize)]
struct MetaFields<'a> {
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    protocol_version: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    client_capabilities: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    client_info: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    log_level: Option<&'a RawValue>,
    #[serde(
        rename = "progressToken",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    progress_token: Option<&'a RawValue>,
}

/// A request's `_meta`, read once: its text and its reserved keys.
pub(crate) struct MetaView<'a> {
    raw: Option<&'a RawValue>,
    fields: Option<MetaFields<'a>>,
}

impl<'a> MetaView<'a> {
    /// Reads the reserved keys of `_meta` (absent, `null` or not an object:
    /// none; serde would read a struct from an array by position).
    pub fn new(raw: Option<&'a RawValue>) -> MetaView<'a> {
        let raw = raw.filter(|r| r.get() != "null");
        let fields = raw
            .filter(|r| r.get().starts_with('{'))
            .and_then(|r| serde_json::from_str(r.get()).ok());
        MetaView { raw, fields }
    }

    /// Whether it carries the modern protocol version: the mark of a
    /// modern request (spec 2026-07-28 basic/versioning).
    #[cfg(feature = "legacy")]
    pub fn is_modern(&self) -> bool {
        self.protocol_version().is_some()
    }

    /// The protocol version as sent (`null` included), when `_meta` is
    /// readable: what makes a request modern, so that HTTP's header check
    /// (`server::http::mirror`) and the kernel tell the era alike.
    #[cfg_attr(not(any(feature = "legacy", feature = "http")), allow(dead_code))]
    pub fn protocol_version(&self) -> Option<&'a RawValue> {
        self.fields.as_ref().and_then(|f| f.protocol_version)
    }
}

/// Checks the per-request protocol fields (spec 2026-07-28 basic/index,
/// "Per-request protocol fields"): a request missing a required one is
/// malformed and MUST be rejected with `-32602`.
pub(crate) fn validate_meta(view: &MetaView<'_>) -> Result<RequestMeta, ErrorObject> {
    let missing = |key: &str| ErrorObject::invalid_params(format!("missing _meta[\"{key}\"]"));
    let Some(raw) = view.raw else {
        return Err(missing(meta_key::PROTOCOL_VERSION));
    };
    let Some(fields) = &view.fields else {
        if !raw.get().starts_with('{') {
            return Err(ErrorObject::invalid_params(format!(
                "_meta must be an object, got {}",
                raw.get().chars().take(40).collect::<String>()
            )));
        }
        // An object that does not read names a reserved key twice (each
        // is read as any JSON value); say which, or what serde found.
        let error = serde_json::from_str::<MetaFields<'_>>(raw.get()).err();
        let detail = error.map_or_else(String::new, |e| e.to_string());
        let twice = detail
            .strip_prefix("duplicate field `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(key, _)| key);
        return Err(ErrorObject::invalid_params(match twice {
            Some(key) => format!("_meta names {key} more than once: send it once"),
            None => format!("_meta is invalid: {detail}"),
        }));
    };
    let version_raw = fields
        .protocol_version
        .ok_or_else(|| missing(meta_key::PROTOCOL_VERSION))?;
    let protocol_version = supported_version(version_raw)?;
    let caps_raw = fields
        .client_capabilities
        .ok_or_else(|| missing(meta_key::CLIENT_CAPABILITIES))?;
    let client_capabilities: Map<String, Value> =
        serde_json::from_str(caps_raw.get()).map_err(|_| {
            ErrorObject::invalid_params(format!(
                "_meta[\"{}\"] must be an object",
                meta_key::CLIENT_CAPABILITIES
            ))
        })?;
    let client_info = match fields.client_info {
        None => None,
        Some(raw) => Some(serde_json::from_str(raw.get()).map_err(|e| {
            ErrorObject::invalid_params(format!(
                "_meta[\"{}\"] is invalid: {e}",
                meta_key::CLIENT_INFO
            ))
        })?),
    };
    let log_level = match fields.log_level {
        None => None,
        Some(raw) => Some(
            serde_json::from_str::<LoggingLevel>(raw.get()).map_err(|_| {
                ErrorObject::invalid_params(format!(
                    "_meta[\"{}\"] is not a log level: {}",
                    meta_key::LOG_LEVEL,
                    raw.get()
                ))
            })?,
        ),
    };
    let progress_token = progress_token(fields.progress_token)?;
    Ok(RequestMeta {
        live_level: None,
        protocol_version: Cow::Borrowed(protocol_version),
        client_capabilities,
        client_info,
        log_level,
        progress_token,
        raw: Some(raw.to_owned()),
        token: None,
    })
}

/// The version a request names, one of [`SUPPORTED_VERSIONS`]: compared
/// as written first (no string is read out), then read, which finds an
/// escaped spelling or says what is wrong.
fn supported_version(raw: &RawValue) -> Result<&'static str, ErrorObject> {
    let plain = crate::jsonrpc::plain_string(raw);
    if let Some(version) = SUPPORTED_VERSIONS
        .iter()
        .copied()
        .find(|v| Some(*v) == plain)
    {
        return Ok(version);
    }
    let sent: String = serde_json::from_str(raw.get()).map_err(|_| {
        ErrorObject::invalid_params(format!(
            "_meta[\"{}\"] must be a string",
            meta_key::PROTOCOL_VERSION
        ))
    })?;
    SUPPORTED_VERSIONS
        .iter()
        .find(|v| **v == sent)
        .copied()
        .ok_or_else(|| ErrorObject::unsupported_protocol_version(&sent, SUPPORTED_VERSIONS))
}

/// The progress token of a legacy request's `_meta`, if any.
#[cfg(feature = "legacy")]
pub(crate) fn legacy_progress_token(
    view: &MetaView<'_>,
) -> Result<Option<ProgressToken>, ErrorObject> {
    match &view.fields {
        Some(fields) => progress_token(fields.progress_token),
        None => Ok(None),
    }
}

/// Reads `_meta.progressToken` straight from its text: a string, or an
/// integer of any size, kept exactly.
fn progress_token(raw: Option<&RawValue>) -> Result<Option<ProgressToken>, ErrorObject> {
    raw.map(|raw| {
        RequestId::from_json(raw.get()).ok_or_else(|| {
            ErrorObject::invalid_params("_meta[\"progressToken\"] must be a string or an integer")
        })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_found_however_it_is_spelled() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert_eq!(
            supported_version(&raw(r#""2026-07-28""#)).unwrap(),
            "2026-07-28"
        );
        assert_eq!(
            supported_version(&raw(r#""2026\u002d07-28""#)).unwrap(),
            "2026-07-28"
        );
        assert_eq!(
            supported_version(&raw(r#""1999-01-01""#)).unwrap_err().code,
            -32022
        );
        assert_eq!(
            supported_version(&raw("20260728")).unwrap_err().code,
            -32602
        );
    }
}
