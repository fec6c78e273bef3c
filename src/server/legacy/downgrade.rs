//! Rewriting a reply for a legacy client: what only 2026-07-28 results
//! carry is dropped, and a request for input that could not be asked
//! becomes something the client can show.

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::jsonrpc::{ErrorObject, error_code};
use crate::types::{meta_key, method};

/// Rewrites a reply for a legacy client: drops what only 2026-07-28
/// results carry, and turns a request for input that could not be asked
/// (a capability the client did not declare, or too many rounds; see
/// `input`) into an error it can show.
pub(crate) fn downgrade(line: Vec<u8>, method_name: &str, version: &str) -> Vec<u8> {
    let Ok(mut resp) = serde_json::from_slice::<Value>(&line) else {
        return line;
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
    encode_with_original_id(&line, &resp).unwrap_or(line)
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
        let out = downgrade(line.to_vec(), "tools/list", "2025-11-25");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#
        );
        // An id beyond 64 bits keeps its text through the rewrite.
        let line =
            br#"{"jsonrpc":"2.0","id":-9223372036854775809,"result":{"resultType":"complete"}}"#;
        let out = downgrade(line.to_vec(), "ping", "2025-11-25");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":-9223372036854775809,"result":{}}"#
        );
    }
}
