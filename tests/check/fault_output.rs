//! The fault server's output: whole lines, each through the fault
//! (`filter_out`), to stdout, or held back until the input releases them.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fault_server::Shared;

/// The server's output: whole lines, through the fault, to stdout (or
/// held).
pub struct FaultOut {
    pub shared: Arc<Mutex<Shared>>,
    pub partial: Vec<u8>,
}

impl Write for FaultOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(at) = self.partial.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.partial.drain(..=at).collect();
            line.pop();
            let mut shared = self.shared.lock().unwrap();
            if shared.fault == "slow-unknown-method"
                && serde_json::from_slice::<Value>(&line)
                    .is_ok_and(|v| v.pointer("/error/code") == Some(&json!(-32601)))
            {
                // Late, and everything after it waits behind it.
                std::thread::sleep(Duration::from_millis(2500));
            }
            let line = filter_out(&shared.fault, line);
            if shared.hold {
                shared.held.push(line);
            } else {
                shared.write_now(&line);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The JSON text serde_json's `Value` refuses (RFC 8259 lets a reader
/// refuse each) that an `unreadable-*` fault puts in an extra member of
/// an answer.
fn unreadable_value(fault: &str) -> Option<String> {
    Some(match fault.rsplit('+').next()? {
        "past-a-double" => "1e400".to_owned(),
        "lone-surrogate" => r#""\ud800""#.to_owned(),
        "nested-past-128" => ["[".repeat(200), "]".repeat(200)].concat(),
        _ => return None,
    })
}

/// `unreadable-WHAT+VALUE`: the answers WHAT names (`handshake`: the
/// `server/discover` and `initialize` results; `discover`: the
/// `server/discover` result alone; `tools-list`: each
/// `tools/list` result; `errors`: each error) with a member
/// `x-unreadable` whose value is VALUE (`unreadable_value`), in a place
/// no check reads: a valid answer the checker cannot read.
fn unreadable_answer(fault: &str, v: &Value) -> Option<Vec<u8>> {
    let what = fault.strip_prefix("unreadable-")?.split('+').next()?;
    let value = unreadable_value(fault)?;
    let at = match what {
        "handshake" if v.pointer("/result/capabilities").is_some() => "result",
        "discover" if v.pointer("/result/supportedVersions").is_some() => "result",
        "tools-list" if v.pointer("/result/tools").is_some() => "result",
        "prompts-list" if v.pointer("/result/prompts").is_some() => "result",
        "input-required" if v.pointer("/result/inputRequests").is_some() => "result",
        "errors" if v.get("error").is_some() => "error",
        _ => return None,
    };
    let mut v = v.clone();
    v[at]["x-unreadable"] = json!("UNREADABLE");
    Some(v.to_string().replace("\"UNREADABLE\"", &value).into_bytes())
}

/// `tools-list-KIND`: each `tools/list` answer malformed as KIND says
/// (`result-twice`, and beside `1e400`: `result-twice`, `id-twice`,
/// `null-result`).
fn malformed_answer(fault: &str, v: &Value) -> Option<Vec<u8>> {
    // `discover-result-twice`, `initialize-result-twice`: that handshake's
    // answer with `result` twice (review of check14).
    let handshake = match fault {
        "discover-result-twice" => v.pointer("/result/supportedVersions"),
        "initialize-result-twice" => v.pointer("/result/protocolVersion"),
        _ => None,
    };
    if handshake.is_some() {
        let (id, result) = (&v["id"], &v["result"]);
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result},"result":{result}}}"#);
        return Some(line.into_bytes());
    }
    let kind = fault.strip_prefix("tools-list-")?;
    v.pointer("/result/tools")?;
    let (id, result) = (&v["id"], &v["result"]);
    let line = match kind {
        "result-twice" => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result},"result":{result}}}"#)
        }
        "result-twice+past-a-double" => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"x":1e400}},"result":{result}}}"#)
        }
        "id-twice+past-a-double" => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"id":{id},"result":{result},"x":1e400}}"#)
        }
        "null-result+past-a-double" => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null,"x":1e400}}"#)
        }
        _ => return None,
    };
    Some(line.into_bytes())
}

/// One line of output through the fault.
fn filter_out(fault: &str, line: Vec<u8>) -> Vec<u8> {
    if fault == "bom" {
        // Each line after a byte order mark, as a Windows console may.
        return [&b"\xef\xbb\xbf"[..], &line].concat();
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(&line) else {
        return line;
    };
    if let Some(unreadable) = unreadable_answer(fault, &v) {
        return unreadable;
    }
    if let Some(malformed) = malformed_answer(fault, &v) {
        return malformed;
    }
    if fault == "answers-invalid-utf8" && v.get("result").is_some_and(Value::is_object) {
        // Every result with a string whose bytes are not UTF-8 in it.
        v["result"]["note"] = json!("caf\u{e9}");
        let mut bytes = v.to_string().into_bytes();
        let at = bytes.windows(2).position(|w| w == [0xc3, 0xa9]).unwrap();
        bytes.splice(at..at + 2, [0xe9]);
        return bytes;
    }
    match fault {
        "id-as-string" => {
            // Ids that do not fit 1..2^31 come back as strings.
            if let Some(n) = v
                .get("id")
                .and_then(|id| id.as_i64().map(i128::from).or(id.as_u64().map(i128::from)))
                && !(1..(1 << 31)).contains(&n)
            {
                v["id"] = json!(n.to_string());
            }
        }
        "schema-break" if v.pointer("/result/tools").is_some() => {
            v["result"]["ttlMs"] = json!("soon")
        }
        "no-is-error" if v.pointer("/result/isError").is_some() => {
            v["result"].as_object_mut().unwrap().remove("isError");
        }
        "mrtr-empty" if v.pointer("/result/resultType") == Some(&json!("input_required")) => {
            let result = v["result"].as_object_mut().unwrap();
            result.remove("inputRequests");
            result.remove("requestState");
        }
        "task-unresolved" if v.pointer("/result/resultType") == Some(&json!("task")) => {
            // A task id no tasks/get resolves.
            let id = v["result"]["taskId"].as_str().unwrap_or_default();
            v["result"]["taskId"] = json!(format!("not-yet-{id}"));
        }
        "id-always-string" if v.get("result").is_some() || v.get("error").is_some() => {
            let Some(n) = v.get("id").and_then(Value::as_i64) else {
                return line;
            };
            v["id"] = json!(n.to_string());
        }
        "no-listen" if v.pointer("/error/code") == Some(&json!(-32601)) => {
            v["error"]["code"] = json!(-32602);
        }
        "no-listen"
            if v.pointer("/result/capabilities")
                .is_some_and(Value::is_object) =>
        {
            // Nothing to listen to.
            for cap in v["result"]["capabilities"]
                .as_object_mut()
                .unwrap()
                .values_mut()
            {
                if let Some(cap) = cap.as_object_mut() {
                    cap.remove("listChanged");
                    cap.remove("subscribe");
                }
            }
        }
        "schema-bomb" if v.pointer("/result/tools/0").is_some() => {
            // Every tool's schema refers to itself in two branches.
            for tool in v["result"]["tools"].as_array_mut().unwrap() {
                tool["inputSchema"] = json!({
                    "type": "object",
                    "properties": { "a": { "type": "string" } },
                    "required": ["a"],
                    "oneOf": [{ "$ref": "#" }, { "$ref": "#" }]
                });
            }
        }
        "evil-tool-name" if v.pointer("/result/tools/0").is_some() => {
            v["result"]["tools"][0]["name"] = json!("\u{1b}]0;pwned\u{7}echo");
        }
        "c1-tool-name" if v.pointer("/error/code").is_some() => {
            // A tool result instead of an error, its text the same.
            let text = "\u{9b}2J\u{202e}no such tool";
            v = json!({ "jsonrpc": "2.0", "id": v["id"],
                "result": { "content": [{ "type": "text", "text": text }], "isError": true } });
        }
        "c1-tool-name" if v.pointer("/result/tools/0").is_some() => {
            v["result"]["tools"][0]["name"] = json!("\u{9b}2J\u{202e}echo");
        }
        "huge-tools-list" if v.pointer("/result/tools/0").is_some() => {
            // One valid line of 5 MiB.
            v["result"]["tools"][0]["description"] = json!("x".repeat(5 << 20));
        }
        "result-type-unknown" if v.pointer("/result/resultType") == Some(&json!("complete")) => {
            v["result"]["resultType"] = json!("done");
        }
        "unknown-method-unreadable-result" if v.pointer("/error/code") == Some(&json!(-32601)) => {
            // A result, not the error due, holding what `Value` refuses.
            return format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","x":1e400}}}}"#,
                v["id"]
            )
            .into_bytes();
        }
        "empty-results-unreadable-errors" if v.get("result") == Some(&json!({})) => {
            // An error where an empty result is due (ping's), holding what
            // `Value` refuses.
            return format!(
                r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32603,"message":"busy","data":1e400}}}}"#,
                v["id"]
            )
            .into_bytes();
        }
        "unknown-method-array" if v.pointer("/error/code") == Some(&json!(-32601)) => {
            // Not a message: an array with the id and the error in it.
            return format!(
                r#"[{},null,{{"code":-32601,"message":"Method not found","data":1e400}}]"#,
                v["id"]
            )
            .into_bytes();
        }
        "unknown-method-result" if v.pointer("/error/code") == Some(&json!(-32601)) => {
            v = json!({ "jsonrpc": "2.0", "id": v["id"], "result": { "resultType": "complete" } });
        }
        _ => return line,
    }
    v.to_string().into_bytes()
}
