//! Rewriting a reply for a legacy client: what only 2026-07-28 results
//! carry is dropped, and a request for input that could not be asked
//! becomes something the client can show.
//!
//! A complete result (the common case) is never rewritten: what only
//! 2026-07-28 carries is taken back before it is encoded ([`for_legacy`],
//! `Stamp::unstamp`). One already encoded is rewritten member by member,
//! its values copied as written (`result_for_legacy`), and keeps the order
//! of its members; anything else is read whole.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::jsonrpc::{ErrorObject, error_code};
use crate::server::reply::Reply;
use crate::types::{meta_key, method};

/// The reply a legacy client gets for `reply`: a complete result is
/// encoded without what only 2026-07-28 results carry; anything else is
/// encoded, then rewritten ([`downgrade`]).
pub(crate) fn for_legacy(reply: Reply, method_name: &str, version: &str) -> Reply {
    match unstamped_or_line(reply) {
        Ok(unstamped) => unstamped,
        Err(line) => downgraded(line, method_name, version),
    }
}

/// [`downgrade`] as a reply, with the code of the error it is, if any.
pub(crate) fn downgraded(line: Vec<u8>, method_name: &str, version: &str) -> Reply {
    let (line, error) = downgrade(line, method_name, version);
    Reply::Line { line, error }
}

/// A complete result, made the one a legacy client gets
/// (`Stamp::unstamp`), or else the reply's line, for `downgrade` (or,
/// asking the client first, `input`) to rewrite.
pub(crate) fn unstamped_or_line(reply: Reply) -> Result<Reply, Vec<u8>> {
    match reply {
        Reply::Result(mut result) => {
            if result.unstamp() {
                return Ok(Reply::Result(result));
            }
            Err(result.encode_line())
        }
        Reply::Line { line, .. } => Err(line),
        later @ Reply::Later(_) => Ok(later),
    }
}

/// Rewrites a reply for a legacy client: drops what only 2026-07-28
/// results carry, and turns a request for input that could not be asked
/// (a capability the client did not declare, or too many rounds; see
/// `input`) into an error it can show.
/// With the line, the code of the error response it is, if any.
pub(crate) fn downgrade(line: Vec<u8>, method_name: &str, version: &str) -> (Vec<u8>, Option<i32>) {
    if let Some(downgraded) = result_for_legacy(&line) {
        return (downgraded, None);
    }
    let Ok(mut resp) = serde_json::from_slice::<Value>(&line) else {
        // Not JSON: no line a server writes (an error's code read, it
        // would be one).
        return (line, None);
    };
    let needs_input = resp["result"]["resultType"] == "input_required"
        || resp["error"]["code"] == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY;
    if needs_input {
        let what = if method_name == method::TOOLS_CALL {
            "this tool"
        } else {
            method_name
        };
        let text = match resp["error"]["data"]["requiredCapabilities"].as_object() {
            Some(required) => {
                let names: Vec<&str> = required.keys().map(String::as_str).collect();
                format!(
                    "{what} needs the client capabilities {}, which this client (MCP {version}) did not declare when it initialized",
                    names.join(", ")
                )
            }
            None => format!("{what} kept asking the client for input and never finished"),
        };
        if let Some(map) = resp.as_object_mut() {
            map.remove("error");
            map.remove("result");
            if method_name == method::TOOLS_CALL {
                map.insert(
                    "result".into(),
                    json!({ "content": [{ "type": "text", "text": text }], "isError": true }),
                );
            } else {
                let error = ErrorObject::new(error_code::INTERNAL_ERROR, text);
                map.insert(
                    "error".into(),
                    serde_json::to_value(error).unwrap_or(Value::Null),
                );
            }
        }
    } else if let Some(result) = resp.get_mut("result").and_then(Value::as_object_mut) {
        // (The rewrite goes through a `Value`; the id is put back from the
        // original text below, so that an id of any size is kept exactly.)
        result.remove("resultType");
        result.remove("ttlMs");
        result.remove("cacheScope");
        let empty_meta = match result.get_mut("_meta").and_then(Value::as_object_mut) {
            Some(meta) => {
                meta.remove(meta_key::SERVER_INFO);
                meta.is_empty()
            }
            None => false,
        };
        if empty_meta {
            result.remove("_meta");
        }
    }
    let error = resp["error"]["code"]
        .as_i64()
        .and_then(|code| i32::try_from(code).ok());
    (encode_with_original_id(&line, &resp).unwrap_or(line), error)
}

/// A result's line without what only 2026-07-28 results carry
/// (`resultType`, `ttlMs`, `cacheScope`, the server's `_meta` entry), its
/// other members copied as written. `None` for anything else (an error,
/// a request for input, a `_meta` that is not an object): `downgrade`
/// reads those whole.
fn result_for_legacy(line: &[u8]) -> Option<Vec<u8>> {
    #[derive(serde::Deserialize)]
    struct Response<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
        #[serde(borrow)]
        result: Members<'a>,
    }
    let response: Response<'_> = serde_json::from_slice(line).ok()?;
    let mut out = Vec::with_capacity(line.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(response.id.get().as_bytes());
    out.extend_from_slice(br#","result":"#);
    let mut kept = Vec::with_capacity(response.result.0.len());
    for (key, value) in response.result.0 {
        match &*key {
            "resultType"
                if serde_json::from_str::<Cow<'_, str>>(value.get()).ok()? != "complete" =>
            {
                return None;
            }
            "resultType" | "ttlMs" | "cacheScope" => {}
            "_meta" => {
                let meta: Members<'_> = serde_json::from_str(value.get()).ok()?;
                let meta: Vec<_> = (meta.0.into_iter())
                    .filter(|(key, _)| key != meta_key::SERVER_INFO)
                    .map(|(key, value)| (key, value.get().as_bytes()))
                    .collect();
                if !meta.is_empty() {
                    let mut object = Vec::new();
                    write_object(&mut object, &meta)?;
                    kept.push((key, Cow::Owned(object)));
                }
            }
            _ => kept.push((key, Cow::Borrowed(value.get().as_bytes()))),
        }
    }
    write_object(&mut out, &kept)?;
    out.push(b'}');
    Some(out)
}

/// Writes `{"key":value,...}`, each value as written.
fn write_object<V: AsRef<[u8]>>(out: &mut Vec<u8>, members: &[(Cow<'_, str>, V)]) -> Option<()> {
    out.push(b'{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key).ok()?;
        out.push(b':');
        out.extend_from_slice(value.as_ref());
    }
    out.push(b'}');
    Some(())
}

/// A JSON object's members in the order they were written, their values
/// unread (a `Value` would sort them).
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// A member's name, borrowed unless it has escapes.
        #[derive(serde::Deserialize)]
        struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

        struct Object;

        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(Key(key)) = map.next_key()? {
                    members.push((key, map.next_value()?));
                }
                Ok(Members(members))
            }
        }

        deserializer.deserialize_map(Object)
    }
}

/// Encodes a rewritten response with the id taken verbatim from the
/// original line: a `Value` holds an integer beyond 64 bits as a float.
fn encode_with_original_id(original: &[u8], resp: &Value) -> Option<Vec<u8>> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    #[derive(serde::Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a Value>,
    }
    let head: Head<'_> = serde_json::from_slice(original).ok()?;
    serde_json::to_vec(&Response {
        jsonrpc: "2.0",
        id: head.id,
        result: resp.get("result"),
        error: resp.get("error"),
    })
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_downgraded() {
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":0,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}"#;
        let (out, error) = downgrade(line.to_vec(), "tools/list", "2025-11-25");
        assert_eq!(error, None);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#
        );
        // An id beyond 64 bits keeps its text through the rewrite.
        let line =
            br#"{"jsonrpc":"2.0","id":-9223372036854775809,"result":{"resultType":"complete"}}"#;
        let (out, _) = downgrade(line.to_vec(), "ping", "2025-11-25");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":-9223372036854775809,"result":{}}"#
        );
        // Members keep their order; a `_meta` keeps what is not the server's.
        let line = br#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi \"x\""}],"isError":false,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"},"k\u00e9y":1}}}"#;
        let (out, _) = downgrade(line.to_vec(), "tools/call", "2025-11-25");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi \"x\""}],"isError":false,"_meta":{"kéy":1}}}"#
        );
    }

    #[test]
    fn a_request_for_input_or_an_error_is_read_whole() {
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#;
        assert_eq!(result_for_legacy(line), None);
        let line = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}"#;
        assert_eq!(result_for_legacy(line), None);
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"_meta":[]}}"#;
        assert_eq!(result_for_legacy(line), None);
    }

    #[test]
    fn a_downgraded_error_keeps_its_code_and_a_request_for_input_becomes_one() {
        let line = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}"#;
        assert_eq!(
            downgrade(line.to_vec(), "prompts/get", "2025-11-25").1,
            Some(-32601)
        );
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#;
        assert_eq!(
            downgrade(line.to_vec(), "prompts/get", "2025-11-25").1,
            Some(-32603)
        );
        assert_eq!(downgrade(line.to_vec(), "tools/call", "2025-11-25").1, None);
    }
}
