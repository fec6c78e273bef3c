//! Prompts: listing them and getting one (spec server/prompts).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CacheScope, ContentBlock, Cursor, Icon, InputResponses, Meta, ResultType, Role};

/// A prompt template the server offers (schema `Prompt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments the prompt accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Prompt {
    /// A prompt with a name and description and no arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Prompt {
        Prompt {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            arguments: None,
            icons: None,
            meta: None,
        }
    }

    /// The same prompt with one more argument.
    pub fn argument(mut self, argument: PromptArgument) -> Prompt {
        self.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }
}

#[cfg(feature = "schemars")]
#[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
impl Prompt {
    /// The same prompt with its arguments derived from the fields of `T`
    /// (replacing any it had): each field's name, its doc comment as the
    /// description, required unless it is an `Option`. Prompt arguments
    /// are strings, so `T`'s fields should be `String` or
    /// `Option<String>`.
    /// `ServerBuilder::typed_prompt`
    /// does this and hands the handler a `T`.
    ///
    /// # Panics
    ///
    /// When `T` is not a struct or a map.
    pub fn arguments_from<T: schemars::JsonSchema>(mut self) -> Prompt {
        self.arguments = Some(crate::schema::prompt_arguments_of::<T>());
        self
    }
}

/// An argument a prompt accepts (schema `PromptArgument`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the argument must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl PromptArgument {
    /// An argument with a name, a description and whether it is required.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> PromptArgument {
        PromptArgument {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            required: Some(required),
        }
    }
}

/// One message of a prompt (schema `PromptMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A text message from `role`.
    pub fn text(role: Role, text: impl Into<String>) -> PromptMessage {
        PromptMessage {
            role,
            content: ContentBlock::text(text),
        }
    }
}

/// Params of `prompts/get` (schema `GetPromptRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// The prompt to get.
    pub name: String,
    /// Values for the prompt's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
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

impl GetPromptRequestParams {
    /// A get of `name` with no arguments.
    pub fn new(name: impl Into<String>) -> GetPromptRequestParams {
        GetPromptRequestParams {
            name: name.into(),
            arguments: None,
            input_responses: None,
            request_state: None,
            meta: None,
        }
    }
}

/// The complete result of `prompts/get` (schema `GetPromptResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// What the prompt is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages of the prompt.
    pub messages: Vec<PromptMessage>,
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl GetPromptResult {
    /// A complete result with these messages.
    pub fn new(messages: Vec<PromptMessage>) -> GetPromptResult {
        GetPromptResult {
            description: None,
            messages,
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }
}

/// The result of `prompts/list` (schema `ListPromptsResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
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

impl ListPromptsResult {
    /// A complete, single-page result.
    pub fn new(prompts: Vec<Prompt>) -> ListPromptsResult {
        ListPromptsResult {
            prompts,
            next_cursor: None,
            ttl_ms: None,
            cache_scope: None,
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }
}
