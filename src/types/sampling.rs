//! Sampling: `sampling/createMessage`, which a server sends to the client
//! inside `inputRequests` (spec client/sampling).
//!
//! A message's `content` is one block or an array of blocks on the wire;
//! [`SamplingContent`] keeps which, so a round trip is exact.

use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{AudioContent, ContentBlock, ImageContent, JsonObject, Meta, Role, TextContent, Tool};

/// One message of a sampling conversation (schema `SamplingMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: SamplingContent,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl SamplingMessage {
    /// A text message from `role`.
    pub fn text(role: Role, text: impl Into<String>) -> SamplingMessage {
        SamplingMessage {
            role,
            content: SamplingContent::Single(SamplingMessageContentBlock::Text(TextContent::new(
                text,
            ))),
            meta: None,
        }
    }
}

/// The `content` of `SamplingMessage` and `CreateMessageResult`: one block
/// or an array of blocks. Decided by the JSON kind (object or array), not by
/// trying each shape.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingContent {
    /// A single block (a JSON object).
    Single(SamplingMessageContentBlock),
    /// Several blocks (a JSON array).
    Multiple(Vec<SamplingMessageContentBlock>),
}

impl SamplingContent {
    /// The blocks, one or many.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingContent::Single(b) => std::slice::from_ref(b),
            SamplingContent::Multiple(v) => v,
        }
    }
}

impl Serialize for SamplingContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingContent::Single(b) => b.serialize(serializer),
            SamplingContent::Multiple(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SamplingContent, D::Error> {
        struct ContentVisitor;
        impl<'de> serde::de::Visitor<'de> for ContentVisitor {
            type Value = SamplingContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block or an array of content blocks")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<SamplingContent, A::Error> {
                SamplingMessageContentBlock::deserialize(MapAccessDeserializer::new(map))
                    .map(SamplingContent::Single)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<SamplingContent, A::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(seq)).map(SamplingContent::Multiple)
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

/// A block of a sampling message (schema `SamplingMessageContentBlock`),
/// tagged by `"type"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SamplingMessageContentBlock {
    /// `"text"` (schema `TextContent`).
    Text(TextContent),
    /// `"image"` (schema `ImageContent`).
    Image(ImageContent),
    /// `"audio"` (schema `AudioContent`).
    Audio(AudioContent),
    /// `"tool_use"` (schema `ToolUseContent`).
    ToolUse(ToolUseContent),
    /// `"tool_result"` (schema `ToolResultContent`).
    ToolResult(ToolResultContent),
}

impl<'de> Deserialize<'de> for SamplingMessageContentBlock {
    fn deserialize<D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SamplingMessageContentBlock, D::Error> {
        type Block = SamplingMessageContentBlock;
        const TAGS: &[&str] = &["text", "image", "audio", "tool_use", "tool_result"];
        super::tagged::deserialize(deserializer, TAGS, |tag| {
            Some(match tag {
                "text" => |v| Deserialize::deserialize(v).map(Block::Text),
                "image" => |v| Deserialize::deserialize(v).map(Block::Image),
                "audio" => |v| Deserialize::deserialize(v).map(Block::Audio),
                "tool_use" => |v| Deserialize::deserialize(v).map(Block::ToolUse),
                "tool_result" => |v| Deserialize::deserialize(v).map(Block::ToolResult),
                _ => return None,
            })
        })
    }
}

/// The model asks to call a tool (schema `ToolUseContent`, without its
/// `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUseContent {
    /// Identifies this call; a `ToolResultContent` refers to it.
    pub id: String,
    /// The tool to call.
    pub name: String,
    /// The arguments.
    pub input: JsonObject,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The outcome of a tool call (schema `ToolResultContent`, without its
/// `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The `id` of the `ToolUseContent` this answers.
    pub tool_use_id: String,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `sampling/createMessage` (schema `CreateMessageRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Which model the server would like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may use or ignore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which servers' context to include (soft-deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The most tokens to generate.
    pub max_tokens: u64,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may call; needs the client's `sampling.tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use `tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

impl CreateMessageRequestParams {
    /// A request with these messages and token limit and nothing else.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> CreateMessageRequestParams {
        CreateMessageRequestParams {
            messages,
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            max_tokens,
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
        }
    }
}

/// The `includeContext` of schema `CreateMessageRequestParams`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// `"none"`.
    None,
    /// `"thisServer"`.
    ThisServer,
    /// `"allServers"`.
    AllServers,
}

/// How the model may use tools (schema `ToolChoice`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolChoice {
    /// The mode; absent means `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
}

/// The `mode` of schema `ToolChoice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// `"auto"`: the model decides.
    Auto,
    /// `"required"`: the model must call a tool.
    Required,
    /// `"none"`: the model must not call a tool.
    None,
}

/// The server's model preferences (schema `ModelPreferences`); priorities
/// range from 0 to 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model names or families to prefer, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// How much speed matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// How much capability matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
}

/// A model name hint (schema `ModelHint`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelHint {
    /// A full or partial model name, such as `"claude-3-5-sonnet"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The client's answer to `sampling/createMessage` (schema
/// `CreateMessageResult`), sent back inside `inputResponses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who speaks; normally `assistant`.
    pub role: Role,
    /// What the model produced.
    pub content: SamplingContent,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped, such as `"endTurn"` or `"toolUse"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_single_vs_array() {
        let one = r#"{"role":"user","content":{"type":"text","text":"hi"}}"#;
        let msg: SamplingMessage = serde_json::from_str(one).unwrap();
        assert!(matches!(msg.content, SamplingContent::Single(_)));
        assert_eq!(serde_json::to_string(&msg).unwrap(), one);
        let many = r#"{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"t","input":{}}]}"#;
        let msg: SamplingMessage = serde_json::from_str(many).unwrap();
        assert!(matches!(&msg.content, SamplingContent::Multiple(v) if v.len() == 1));
        assert_eq!(serde_json::to_string(&msg).unwrap(), many);
        // Also through a `Value`, as `InputRequest` parses params from one.
        let value: Value = serde_json::from_str(many).unwrap();
        assert_eq!(SamplingMessage::deserialize(&value).unwrap(), msg);
        assert!(serde_json::from_str::<SamplingContent>(r#""text""#).is_err());
    }
}
