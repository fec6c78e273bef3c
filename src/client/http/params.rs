//! `x-mcp-header` (spec 2026-07-28 basic/transports/streamable-http,
//! "Custom Headers"): a tool's `inputSchema` may mark arguments that a
//! client mirrors in `Mcp-Param-{Name}` headers. The bridge learns the
//! marks from every `tools/list` answer it carries, leaves out of that
//! answer each tool whose marks are invalid (the page's MUST), and adds the
//! headers to each `tools/call` of a tool it has seen listed.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::http::encode_sentinel;

/// The marked arguments of each listed tool: header name and the chain of
/// `properties` keys that leads to the argument.
#[derive(Debug, Default)]
pub(crate) struct ParamHeaders {
    tools: HashMap<String, Vec<(String, Vec<String>)>>,
}

impl ParamHeaders {
    /// Learns the marks of the tools in a `tools/list` answer, and returns
    /// the answer without the tools whose marks break the page's
    /// constraints (a client on HTTP **MUST** leave them out), calling
    /// `rejected` with each one's name and why. An answer with nothing to
    /// leave out is returned as it came.
    pub fn learn(&mut self, message: Vec<u8>, rejected: &mut dyn FnMut(&str, &str)) -> Vec<u8> {
        let Ok(mut reply) = serde_json::from_slice::<Value>(&message) else {
            return message;
        };
        let Some(tools) = reply
            .pointer_mut("/result/tools")
            .and_then(Value::as_array_mut)
        else {
            return message;
        };
        let before = tools.len();
        tools.retain(|tool| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                return true;
            };
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match marks(schema) {
                Ok(marks) if marks.is_empty() => {
                    self.tools.remove(name);
                    true
                }
                Ok(marks) => {
                    self.tools.insert(name.to_owned(), marks);
                    true
                }
                Err(why) => {
                    self.tools.remove(name);
                    rejected(name, &why);
                    false
                }
            }
        });
        if tools.len() == before {
            return message;
        }
        serde_json::to_vec(&reply).unwrap_or(message)
    }

    /// Whether `tool` has marked arguments (its calls' `arguments` are then
    /// read for [`ParamHeaders::headers`]).
    pub fn marked(&self, tool: &str) -> bool {
        self.tools.contains_key(tool)
    }

    /// The `Mcp-Param-*` headers of a call of `tool` with `arguments`: one
    /// per marked argument that has a primitive value.
    pub fn headers(&self, tool: &str, arguments: Option<&Value>) -> Vec<(String, String)> {
        let (Some(marks), Some(arguments)) = (self.tools.get(tool), arguments) else {
            return Vec::new();
        };
        marks
            .iter()
            .filter_map(|(header, path)| {
                let value = path.iter().try_fold(arguments, |v, key| v.get(key))?;
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                    _ => return None,
                };
                Some((format!("Mcp-Param-{header}"), encode_sentinel(&text)))
            })
            .collect()
    }
}

/// A marked argument: its header name and the chain of `properties` keys
/// that leads to it.
type Mark = (String, Vec<String>);

/// The `x-mcp-header` marks of an `inputSchema`, or why they make the tool
/// invalid (spec 2026-07-28 basic/transports/streamable-http, "Schema
/// Extension"): each name an HTTP token, unique without regard to case, on
/// a `string`, `integer` or `boolean` property reached from the root
/// through `properties` keys only.
fn marks(schema: &Value) -> Result<Vec<Mark>, String> {
    let mut marks = Vec::new();
    walk(schema, true, &mut Vec::new(), &mut marks)?;
    let mut seen = HashSet::new();
    for (name, _) in &marks {
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(format!(
                "the x-mcp-header name {name:?} is used twice (names are case-insensitive)"
            ));
        }
    }
    Ok(marks)
}

/// Collects the marks under `node`; `reachable` while every step from the
/// root was a `properties` key. Instance values (`const`, `default`,
/// `enum`, `examples`) are data, not schemas, and are not searched.
fn walk(
    node: &Value,
    reachable: bool,
    path: &mut Vec<String>,
    marks: &mut Vec<Mark>,
) -> Result<(), String> {
    match node {
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| walk(item, false, path, marks)),
        Value::Object(map) => {
            if let Some(header) = map.get("x-mcp-header") {
                marks.push(mark(header, map.get("type"), reachable, path)?);
            }
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("x-mcp-header" | "const" | "default" | "enum" | "examples", _) => {}
                    ("properties", Value::Object(properties)) => {
                        for (name, property) in properties {
                            path.push(name.clone());
                            walk(property, reachable, path, marks)?;
                            path.pop();
                        }
                    }
                    _ => walk(value, false, path, marks)?,
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// One `x-mcp-header` annotation, checked.
fn mark(
    header: &Value,
    kind: Option<&Value>,
    reachable: bool,
    path: &[String],
) -> Result<Mark, String> {
    let at = if path.is_empty() {
        "the schema's root".to_owned()
    } else {
        format!("`{}`", path.join("."))
    };
    if !reachable || path.is_empty() {
        return Err(format!(
            "an x-mcp-header at {at} is not on a property reached through `properties` alone"
        ));
    }
    let Some(name) = header.as_str().filter(|name| is_token(name)) else {
        return Err(format!(
            "the x-mcp-header of {at} is not an HTTP field-name token: {header}"
        ));
    };
    match kind.and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => Ok((name.to_owned(), path.to_vec())),
        _ => Err(format!(
            "the x-mcp-header {name:?} is on {at}, whose type is not string, integer or boolean"
        )),
    }
}

/// RFC 9110's `token` (`1*tchar`).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marked_arguments_become_param_headers() {
        let mut table = ParamHeaders::default();
        let listed = json!({ "jsonrpc": "2.0", "id": 1, "result": { "tools": [{
            "name": "execute_sql",
            "inputSchema": { "type": "object", "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "opts": { "type": "object", "properties": {
                    "shard": { "type": "integer", "x-mcp-header": "Shard" } } },
                "query": { "type": "string" } } } }] } });
        table.learn(listed.to_string().into_bytes(), &mut |_, _| panic!("valid"));
        let args = json!({ "region": "us-west1", "opts": { "shard": 3 }, "query": "x" });
        let mut headers = table.headers("execute_sql", Some(&args));
        headers.sort();
        assert_eq!(
            headers,
            [
                ("Mcp-Param-Region".to_owned(), "us-west1".to_owned()),
                ("Mcp-Param-Shard".to_owned(), "3".to_owned()),
            ]
        );
        let args = json!({ "region": "日本" });
        assert_eq!(
            table.headers("execute_sql", Some(&args)),
            [(
                "Mcp-Param-Region".to_owned(),
                "=?base64?5pel5pys?=".to_owned()
            )]
        );
        assert!(table.headers("other", Some(&args)).is_empty());
    }

    /// Lists `tools` and returns the names kept and the reasons given.
    fn listed(tools: Value) -> (Vec<String>, Vec<String>) {
        let mut table = ParamHeaders::default();
        let reply = json!({ "jsonrpc": "2.0", "id": 1, "result": { "tools": tools } });
        let mut why = Vec::new();
        let kept = table.learn(reply.to_string().into_bytes(), &mut |tool, reason| {
            why.push(format!("{tool}: {reason}"))
        });
        let kept: Value = serde_json::from_slice(&kept).unwrap();
        let names = kept["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        (names, why)
    }

    fn tool(name: &str, properties: Value) -> Value {
        json!({ "name": name, "inputSchema": { "type": "object", "properties": properties } })
    }

    #[test]
    fn tools_with_invalid_marks_are_left_out_of_the_list() {
        let string = |header: &str| json!({ "type": "string", "x-mcp-header": header });
        let (kept, why) = listed(json!([
            tool(
                "good",
                json!({ "a": string("Region"), "b": { "type": "object", "properties": { "c": { "type": "boolean", "x-mcp-header": "Flag" } } } })
            ),
            tool("empty", json!({ "a": string("") })),
            tool("space", json!({ "a": string("Re gion") })),
            tool("newline", json!({ "a": string("Region\r\nX-Evil: 1") })),
            tool(
                "twice",
                json!({ "a": string("Region"), "b": string("region") })
            ),
            tool(
                "number",
                json!({ "a": { "type": "number", "x-mcp-header": "N" } })
            ),
            tool("untyped", json!({ "a": { "x-mcp-header": "N" } })),
            tool(
                "items",
                json!({ "a": { "type": "array", "items": string("Item") } })
            ),
            tool("any_of", json!({ "a": { "anyOf": [string("A")] } })),
            tool("defs", json!({ "a": { "$ref": "#/$defs/x" } })),
            tool(
                "not_a_string",
                json!({ "a": { "type": "string", "x-mcp-header": 5 } })
            ),
            tool("plain", json!({ "a": { "type": "string" } })),
            tool(
                "data",
                json!({ "a": { "type": "object", "default": { "x-mcp-header": "Data" } } })
            ),
        ]));
        assert_eq!(kept, ["good", "defs", "plain", "data"], "{why:#?}");
        assert_eq!(why.len(), 9, "{why:#?}");
        assert!(
            why[0].starts_with("empty: the x-mcp-header of `a` is not an HTTP field-name token"),
            "{}",
            why[0]
        );
        assert!(why[3].contains("is used twice"), "{}", why[3]);
        assert!(
            why[4].contains("whose type is not string, integer or boolean"),
            "{}",
            why[4]
        );
        assert!(
            why[6].contains("is not on a property reached through `properties` alone"),
            "{}",
            why[6]
        );
        // A $defs entry is not reached through properties either.
        let (kept, _) = listed(json!([{ "name": "defs", "inputSchema": {
            "type": "object", "$defs": { "x": string("Hidden") } } }]));
        assert!(kept.is_empty());
    }

    #[test]
    fn a_list_with_nothing_to_leave_out_is_passed_on_as_it_came() {
        let mut table = ParamHeaders::default();
        let text = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"x"}}"#;
        let kept = table.learn(text.as_bytes().to_vec(), &mut |_, _| panic!("valid"));
        assert_eq!(kept, text.as_bytes());
    }
}
