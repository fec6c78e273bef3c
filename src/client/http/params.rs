//! `x-mcp-header` (spec 2026-07-28 basic/transports/streamable-http,
//! "Custom Headers"): a tool's `inputSchema` may mark arguments that a
//! client mirrors in `Mcp-Param-{Name}` headers. The bridge learns the
//! marks from every `tools/list` answer it carries, and adds the headers
//! to each `tools/call` of a tool it has seen listed.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::http::encode_sentinel;

/// The marked arguments of each listed tool: header name and the chain of
/// `properties` keys that leads to the argument.
#[derive(Debug, Default)]
pub(crate) struct ParamHeaders {
    tools: HashMap<String, Vec<(String, Vec<String>)>>,
}

impl ParamHeaders {
    /// Learns the marks of the tools in a `tools/list` answer.
    pub fn learn(&mut self, message: &[u8]) {
        #[derive(Deserialize)]
        struct Reply {
            result: Option<Listed>,
        }
        #[derive(Deserialize)]
        struct Listed {
            tools: Vec<Listed1>,
        }
        #[derive(Deserialize)]
        struct Listed1 {
            name: String,
            #[serde(default, rename = "inputSchema")]
            input_schema: Value,
        }
        let Ok(Reply {
            result: Some(listed),
        }) = serde_json::from_slice(message)
        else {
            return;
        };
        for tool in listed.tools {
            let mut marks = Vec::new();
            marked(&tool.input_schema, &mut Vec::new(), &mut marks);
            if marks.is_empty() {
                self.tools.remove(&tool.name);
            } else {
                self.tools.insert(tool.name, marks);
            }
        }
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

/// Collects the `x-mcp-header` marks reachable through `properties` only.
fn marked(schema: &Value, path: &mut Vec<String>, marks: &mut Vec<(String, Vec<String>)>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(header) = property.get("x-mcp-header").and_then(Value::as_str) {
            marks.push((header.to_owned(), path.clone()));
        }
        marked(property, path, marks);
        path.pop();
    }
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
        table.learn(listed.to_string().as_bytes());
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
}
