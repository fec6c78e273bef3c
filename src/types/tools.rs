//! Tools: listing them and calling them (spec server/tools).
//!
//! These are the types on the hot path of a server, so they use only plain
//! derives: no `flatten`, no `untagged`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CacheScope, ContentBlock, Cursor, Icon, InputResponses, JsonObject, Meta, ResultType};

/// A tool the client can call (schema `Tool`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; its `type` must be `"object"`.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` in the result, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Tool {
    /// A tool taking any object: its input schema is `{"type":"object"}`.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Tool {
        Tool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: serde_json::json!({ "type": "object" }),
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// The same tool with this input schema.
    pub fn input_schema(mut self, schema: Value) -> Tool {
        self.input_schema = schema;
        self
    }

    /// The same tool with this output schema.
    pub fn output_schema(mut self, schema: Value) -> Tool {
        self.output_schema = Some(schema);
        self
    }

    /// The same tool with this display title.
    pub fn title(mut self, title: impl Into<String>) -> Tool {
        self.title = Some(title.into());
        self
    }

    /// The same tool with these annotations.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Tool {
        self.annotations = Some(annotations);
        self
    }

    /// The same tool with these icons.
    pub fn icons(mut self, icons: Vec<Icon>) -> Tool {
        self.icons = Some(icons);
        self
    }
}

/// Hints about a tool's behaviour (schema `ToolAnnotations`); untrusted
/// unless the server is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeated calls with the same arguments have no extra effect (default
    /// false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities (default
    /// true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Params of `tools/call` (schema `CallToolRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// The arguments, checked against the tool's input schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Answers to a previous `InputRequiredResult`, on a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of a previous `InputRequiredResult`, echoed verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata; see [`super::meta_key`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CallToolRequestParams {
    /// A call of `name` with no arguments.
    pub fn new(name: impl Into<String>) -> CallToolRequestParams {
        CallToolRequestParams {
            name: name.into(),
            arguments: None,
            input_responses: None,
            request_state: None,
            meta: None,
        }
    }

    /// The same call with these arguments.
    pub fn with_arguments(mut self, arguments: JsonObject) -> CallToolRequestParams {
        self.arguments = Some(arguments);
        self
    }
}

/// The complete result of `tools/call` (schema `CallToolResult`).
///
/// A tool that failed in a way the model should see returns this with
/// `is_error: Some(true)`; a protocol failure is a JSON-RPC error instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result, matching the tool's output schema if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed; absent means false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CallToolResult {
    /// A complete, successful result with this content.
    pub fn new(content: Vec<ContentBlock>) -> CallToolResult {
        CallToolResult {
            content,
            structured_content: None,
            is_error: None,
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }

    /// A successful result holding one text block.
    pub fn text(text: impl Into<String>) -> CallToolResult {
        CallToolResult::new(vec![ContentBlock::text(text)])
    }

    /// Every text block of the result, joined by newlines: what most
    /// callers want from a tool. Other blocks (images, audio, resources)
    /// are left out.
    ///
    /// ```
    /// use mcp_stdio::types::{CallToolResult, ContentBlock};
    ///
    /// let res = CallToolResult::new(vec![ContentBlock::text("one"), ContentBlock::text("two")]);
    /// assert_eq!(res.text_content(), "one\ntwo");
    /// ```
    pub fn text_content(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        texts.join("\n")
    }

    /// Whether the tool failed (`isError: true`): the text says why, for
    /// the model to read.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// A failed result (`isError: true`) holding one text block for the model.
    pub fn error_text(text: impl Into<String>) -> CallToolResult {
        let mut res = CallToolResult::text(text);
        res.is_error = Some(true);
        res
    }

    /// A successful result whose structured content is `value`, with the
    /// same JSON as a text block for clients that only read `content` (the
    /// spec's SHOULD for structured results).
    pub fn structured(value: Value) -> CallToolResult {
        CallToolResult::text(value.to_string()).with_structured(value)
    }

    /// The same result with this structured content.
    pub fn with_structured(mut self, structured: Value) -> CallToolResult {
        self.structured_content = Some(structured);
        self
    }
}

#[cfg(feature = "schemars")]
#[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
impl Tool {
    /// The same tool with its input schema derived from `T`, the type its
    /// handler reads the arguments into: doc comments become descriptions,
    /// `Option` fields are not required, serde's `rename` and `default` are
    /// honoured.
    ///
    /// ```
    /// use mcp_stdio::types::Tool;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Greet {
    ///     /// Who to greet.
    ///     name: String,
    /// }
    ///
    /// let tool = Tool::new("greet", "Greets someone by name.").input::<Greet>();
    /// assert_eq!(tool.input_schema["properties"]["name"]["description"], "Who to greet.");
    /// assert_eq!(tool.input_schema["required"], serde_json::json!(["name"]));
    /// ```
    ///
    /// # Panics
    ///
    /// When `T`'s schema is not an object schema (`T` is not a struct or a
    /// map): the spec requires `"type": "object"`.
    pub fn input<T: schemars::JsonSchema>(self) -> Tool {
        self.input_schema(crate::schema::object_schema_of::<T>("input schema"))
    }

    /// The same tool with its output schema derived from `T`, the type of
    /// its results' `structuredContent` (see
    /// `ServerBuilder::structured_tool`,
    /// which sets both schemas).
    ///
    /// # Panics
    ///
    /// When `T` is not a struct or a map, as for [`Tool::input`].
    pub fn output<T: schemars::JsonSchema>(self) -> Tool {
        self.output_schema(crate::schema::object_schema_of::<T>("output schema"))
    }
}

/// The result of `tools/list` (schema `ListToolsResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// How long the result may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ListToolsResult {
    /// A complete, single-page result.
    pub fn new(tools: Vec<Tool>) -> ListToolsResult {
        ListToolsResult {
            tools,
            next_cursor: None,
            ttl_ms: None,
            cache_scope: None,
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_tool_result_helpers() {
        let res = CallToolResult::error_text("boom").with_structured(serde_json::json!([1]));
        assert_eq!(
            serde_json::to_string(&res).unwrap(),
            r#"{"content":[{"type":"text","text":"boom"}],"structuredContent":[1],"isError":true,"resultType":"complete"}"#
        );
        let res = CallToolResult::structured(serde_json::json!({ "n": 1 }));
        assert_eq!(
            serde_json::to_string(&res).unwrap(),
            r#"{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1},"resultType":"complete"}"#
        );
        // An old server that omits `resultType` still parses.
        let res: CallToolResult = serde_json::from_str(r#"{"content":[]}"#).unwrap();
        assert_eq!(res.result_type, None);
    }

    #[test]
    fn tool_defaults_to_object_schema() {
        let tool = Tool::new("echo", "Echoes").title("Echo");
        assert_eq!(
            serde_json::to_string(&tool).unwrap(),
            r#"{"name":"echo","title":"Echo","description":"Echoes","inputSchema":{"type":"object"}}"#
        );
    }

    #[test]
    fn call_params_without_arguments() {
        let params: CallToolRequestParams =
            serde_json::from_str(r#"{"name":"t","_meta":{"progressToken":1}}"#).unwrap();
        assert_eq!(params.arguments, None);
        assert!(params.meta.is_some_and(|m| m.contains_key("progressToken")));
    }
}
