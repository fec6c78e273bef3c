//! JSON-RPC 2.0 as MCP uses it: request ids, error objects, error codes, and
//! the compact encoding of outgoing messages.
//!
//! Incoming lines are classified by the `incoming` module; this module holds the
//! plain data both directions share.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON-RPC request id: a string or an integer, never `null`.
///
/// `"7"` and `7` are different ids; both are preserved exactly on the wire.
/// JSON puts no bound on integers and peers written in Python use any size,
/// so an integer outside `i64` is kept as its exact text
/// ([`RequestId::BigNumber`]) and echoed back as sent: an id is never
/// changed, rounded or refused for its size.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
    /// An integer id outside the range of `i64`, kept as its decimal text
    /// exactly as it came (for example `-9223372036854775809`).
    BigNumber(String),
}

impl RequestId {
    /// Reads an id from a JSON value; `None` for anything that is not a
    /// string or an integer (null, fractions, objects, ...).
    ///
    /// A `Value` holds integers beyond `u64` as floats, so their exact
    /// text is already gone: read such ids from the raw text with
    /// [`RequestId::from_json`] instead.
    pub fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) => match n.as_i64() {
                Some(n) => Some(RequestId::Number(n)),
                None if n.is_u64() => Some(RequestId::BigNumber(n.to_string())),
                None => None,
            },
            _ => None,
        }
    }

    /// Reads an id from its JSON text (surrounding whitespace allowed): a
    /// string, or an integer of any size; `None` for anything else.
    ///
    /// ```
    /// use mcp_stdio::RequestId;
    /// assert_eq!(RequestId::from_json(" 7 "), Some(RequestId::Number(7)));
    /// assert_eq!(RequestId::from_json(r#""\u0037""#), Some(RequestId::from("7")));
    /// assert_eq!(
    ///     RequestId::from_json("-9223372036854775809"),
    ///     Some(RequestId::BigNumber("-9223372036854775809".into()))
    /// );
    /// assert_eq!(RequestId::from_json("1.5"), None);
    /// assert_eq!(RequestId::from_json("null"), None);
    /// ```
    pub fn from_json(text: &str) -> Option<RequestId> {
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
        if text.starts_with('"') {
            return serde_json::from_str(text).ok().map(RequestId::String);
        }
        // RFC 8259 section 6: int = zero / ( digit1-9 *DIGIT ), after an
        // optional minus; a fraction or an exponent makes it no integer.
        let digits = text.strip_prefix('-').unwrap_or(text);
        let is_integer = match digits.as_bytes() {
            [b'0'] => true,
            [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
            _ => false,
        };
        if !is_integer {
            return None;
        }
        Some(match text.parse::<i64>() {
            Ok(n) => RequestId::Number(n),
            Err(_) => RequestId::BigNumber(text.to_owned()),
        })
    }

    /// The id as a JSON value. A [`RequestId::BigNumber`] beyond `u64`
    /// becomes the nearest float there: serialize the id itself to keep
    /// its text.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(s.as_str()),
            RequestId::BigNumber(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }
}

/// A map keyed by request id, hashed with [`IdHasher`].
pub(crate) type IdMap<V> =
    std::collections::HashMap<RequestId, V, std::hash::BuildHasherDefault<IdHasher>>;

/// A multiply-and-rotate hash for request ids (rustc's FxHash), a few
/// instructions where std's SipHash takes about two hundred per lookup
/// (four lookups per call). Ids are chosen by the one peer of a
/// connection and the maps are bounded by its requests in flight, so a
/// peer that made its ids collide on purpose would slow only itself.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_i64(&mut self, word: i64) {
        self.write_u64(word as u64);
    }

    fn write_isize(&mut self, word: isize) {
        self.write_u64(word as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl fmt::Display for RequestId {
    /// Shows the id as it looks on the wire: `7` or `"7"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
            RequestId::BigNumber(text) => f.write_str(text),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> RequestId {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> RequestId {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> RequestId {
        RequestId::String(s)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
            // Its text is a JSON integer (checked when it was read), so it
            // goes out verbatim. Outside serde_json the integer cannot be
            // represented, and is an error.
            RequestId::BigNumber(text) => RawValue::from_string(text.clone())
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    /// Reads the id from its raw JSON text, so that an integer of any size
    /// keeps its exact value (see [`RequestId::from_json`]).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RequestId, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        RequestId::from_json(raw.get()).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "expected a string or an integer, got {}",
                raw.get()
            ))
        })
    }
}

/// The standard JSON-RPC and MCP error codes.
pub mod error_code {
    /// The line is not valid JSON (or not valid UTF-8).
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON is not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i32 = -32600;
    /// The method does not exist (or is not served).
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// The parameters are invalid.
    pub const INVALID_PARAMS: i32 = -32602;
    /// An internal error (for example a handler that panicked).
    pub const INTERNAL_ERROR: i32 = -32603;
    /// HTTP only: a header disagrees with the body. Never sent over stdio.
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability it did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// The request's protocol version is not supported by the server.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code, see [`error_code`].
    pub code: i32,
    /// A short description of the error.
    pub message: String,
    /// Additional information about the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message and no data.
    pub fn new(code: i32, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` attached.
    pub fn with_data(mut self, data: Value) -> ErrorObject {
        self.data = Some(data);
        self
    }

    /// `-32700`: the line could not be parsed.
    pub fn parse_error(detail: impl fmt::Display) -> ErrorObject {
        ErrorObject::new(error_code::PARSE_ERROR, format!("parse error: {detail}"))
    }

    /// `-32600`: the message is not a valid JSON-RPC request.
    pub fn invalid_request(detail: impl fmt::Display) -> ErrorObject {
        ErrorObject::new(
            error_code::INVALID_REQUEST,
            format!("invalid request: {detail}"),
        )
    }

    /// `-32601`: the method is not served.
    pub fn method_not_found(method: &str) -> ErrorObject {
        ErrorObject::new(
            error_code::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// `-32602`: the parameters are invalid.
    pub fn invalid_params(detail: impl fmt::Display) -> ErrorObject {
        ErrorObject::new(
            error_code::INVALID_PARAMS,
            format!("invalid params: {detail}"),
        )
    }

    /// `-32603`: something went wrong inside the server.
    pub fn internal_error(detail: impl fmt::Display) -> ErrorObject {
        ErrorObject::new(
            error_code::INTERNAL_ERROR,
            format!("internal error: {detail}"),
        )
    }

    /// `-32022` with `data.supported` and `data.requested`, as the spec
    /// requires for an unsupported protocol version.
    pub fn unsupported_protocol_version(requested: &str, supported: &[&str]) -> ErrorObject {
        ErrorObject::new(
            error_code::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// `-32021` with `data.requiredCapabilities`, a `ClientCapabilities`
    /// object naming what the request should have declared, for example
    /// `{"sampling": {}}`.
    pub fn missing_required_client_capability(required: Value) -> ErrorObject {
        let names = match &required {
            Value::Object(map) => map.keys().cloned().collect::<Vec<_>>().join(", "),
            _ => String::new(),
        };
        ErrorObject::new(
            error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!("missing required client capability: {names}"),
        )
        .with_data(serde_json::json!({ "requiredCapabilities": required }))
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A JSON-RPC error response as it goes on the wire. `id` is `None` only
/// when the id of the offending message could not be read.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorResponse<'a> {
    pub jsonrpc: &'static str,
    pub id: Option<&'a RequestId>,
    pub error: &'a ErrorObject,
}

/// A JSON-RPC result response as it goes on the wire.
#[derive(Debug, Serialize)]
#[cfg_attr(not(any(feature = "server", feature = "legacy")), allow(dead_code))]
pub(crate) struct ResultResponse<'a, T: Serialize + ?Sized> {
    pub jsonrpc: &'static str,
    pub id: &'a RequestId,
    pub result: &'a T,
}

/// A JSON-RPC request or notification as it goes on the wire.
#[derive(Debug, Serialize)]
pub(crate) struct OutgoingMessage<'a, P: Serialize> {
    pub jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a RequestId>,
    pub method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<&'a P>,
}

/// Appends the compact encoding of an error response to `out` (no newline).
pub(crate) fn encode_error(out: &mut Vec<u8>, id: Option<&RequestId>, error: &ErrorObject) {
    let resp = ErrorResponse {
        jsonrpc: "2.0",
        id,
        error,
    };
    // Serializing plain data into a Vec cannot fail.
    let _ = serde_json::to_writer(out, &resp);
}

/// Appends the compact encoding of a result response to `out` (no
/// newline). The server's results go through `server::reply` instead.
#[cfg_attr(not(any(feature = "server", feature = "legacy")), allow(dead_code))]
pub(crate) fn encode_result<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    result: &T,
) -> Result<(), serde_json::Error> {
    let resp = ResultResponse {
        jsonrpc: "2.0",
        id,
        result,
    };
    serde_json::to_writer(out, &resp)
}

/// The compact encoding of a request (no newline).
#[cfg_attr(not(any(feature = "legacy", feature = "client")), allow(dead_code))]
pub(crate) fn encode_request<P: Serialize>(
    id: &RequestId,
    method: &str,
    params: &P,
) -> Result<Vec<u8>, serde_json::Error> {
    let msg = OutgoingMessage {
        jsonrpc: "2.0",
        id: Some(id),
        method,
        params: Some(params),
    };
    serde_json::to_vec(&msg)
}

/// Appends the compact encoding of a notification to `out` (no newline).
pub(crate) fn encode_notification<P: Serialize>(
    out: &mut Vec<u8>,
    method: &str,
    params: &P,
) -> Result<(), serde_json::Error> {
    let notif = OutgoingMessage {
        jsonrpc: "2.0",
        id: None,
        method,
        params: Some(params),
    };
    serde_json::to_writer(out, &notif)
}

/// A JSON string written without escapes: the text between its quotes,
/// which is then the string itself. `None` for anything else (a string
/// with an escape is read the plain way by the caller).
#[cfg(feature = "server")]
pub(crate) fn plain_string(raw: &serde_json::value::RawValue) -> Option<&str> {
    let inner = raw.get().strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

/// Whether a `jsonrpc` member says `"2.0"`. Compared as a string, not as
/// text: any character may be escaped (RFC 8259 section 7), so
/// `"2\u002e0"` is `"2.0"` too.
pub(crate) fn is_version_2(raw: &serde_json::value::RawValue) -> bool {
    raw.get() == "\"2.0\""
        || (raw.get().contains('\\')
            && serde_json::from_str::<String>(raw.get()).is_ok_and(|v| v == "2.0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_keep_their_kind() {
        let n: RequestId = serde_json::from_str("7").unwrap();
        let s: RequestId = serde_json::from_str("\"7\"").unwrap();
        assert_ne!(n, s);
        assert_eq!(serde_json::to_string(&n).unwrap(), "7");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"7\"");
        assert!(serde_json::from_str::<RequestId>("1.5").is_err());
        assert!(serde_json::from_str::<RequestId>("null").is_err());
        assert!(serde_json::from_str::<RequestId>("{}").is_err());
    }

    /// Review of the size commit 7157a65 (`encode_result` into a Vec):
    /// the same bytes, appended after what `out` holds; a raw result as
    /// sent (its escapes and spacing kept), an id of any size exact.
    #[test]
    fn result_response_wire() {
        let id: RequestId = serde_json::from_str("18446744073709551617").unwrap();
        let raw = RawValue::from_string(r#"{ "k" : "\u00e9\n" }"#.to_owned()).unwrap();
        let mut out = b"x".to_vec();
        encode_result(&mut out, &id, &raw).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"x{"jsonrpc":"2.0","id":18446744073709551617,"result":{ "k" : "\u00e9\n" }}"#
        );
        let id: RequestId = serde_json::from_str(r#""a\"\u2028""#).unwrap();
        let mut out = Vec::new();
        encode_result(
            &mut out,
            &id,
            &serde_json::json!({ "b": "\u{7f}\u{1}", "a": 1.5 }),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"\u{2028}\",\"result\":{\"a\":1.5,\"b\":\"\u{7f}\\u0001\"}}"
        );
    }

    #[test]
    fn error_response_wire() {
        let mut out = Vec::new();
        encode_error(&mut out, None, &ErrorObject::new(-32700, "bad"));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#
        );
        let mut out = Vec::new();
        let err = ErrorObject::unsupported_protocol_version("v9", &["2026-07-28"]);
        encode_error(&mut out, Some(&RequestId::from("a")), &err);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":"v9","supported":["2026-07-28"]}}}"#
        );
    }
}
