//! Argument completion: `completion/complete` (spec
//! server/utilities/completion).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::{Meta, ResultType};

/// Params of `completion/complete` (schema `CompleteRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteRequestParams {
    /// The prompt or resource template whose argument is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument and what the user typed so far.
    pub argument: CompleteArgument,
    /// Values of arguments already filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// Request metadata; see [`super::meta_key`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The `ref` of schema `CompleteRequestParams`, tagged by `"type"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// `"ref/prompt"` (schema `PromptReference`).
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `"ref/resource"` (schema `ResourceTemplateReference`).
    #[serde(rename = "ref/resource")]
    Resource(ResourceTemplateReference),
}

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CompletionReference, D::Error> {
        const TAGS: &[&str] = &["ref/prompt", "ref/resource"];
        super::tagged::deserialize(deserializer, TAGS, |tag| {
            Some(match tag {
                "ref/prompt" => |v| Deserialize::deserialize(v).map(CompletionReference::Prompt),
                "ref/resource" => {
                    |v| Deserialize::deserialize(v).map(CompletionReference::Resource)
                }
                _ => return None,
            })
        })
    }
}

/// A prompt by name (schema `PromptReference`, without its `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// A resource template by URI template (schema `ResourceTemplateReference`,
/// without its `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplateReference {
    /// The URI template.
    pub uri: String,
}

/// The `argument` of schema `CompleteRequestParams`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
}

/// The `context` of schema `CompleteRequestParams`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteContext {
    /// Arguments already resolved, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// The result of `completion/complete` (schema `CompleteResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CompleteResult {
    /// A complete result with these values and nothing more to come.
    pub fn new(values: Vec<String>) -> CompleteResult {
        CompleteResult {
            completion: Completion {
                values,
                total: None,
                has_more: None,
            },
            result_type: Some(ResultType::Complete),
            meta: None,
        }
    }
}

/// The `completion` of schema `CompleteResult`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 suggestions.
    pub values: Vec<String>,
    /// How many suggestions exist in all, which may exceed `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more suggestions than `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_tags() {
        let r: CompletionReference =
            serde_json::from_str(r#"{"type":"ref/resource","uri":"file:///{p}"}"#).unwrap();
        assert!(matches!(&r, CompletionReference::Resource(t) if t.uri == "file:///{p}"));
        let p = CompletionReference::Prompt(PromptReference {
            name: "x".into(),
            title: None,
        });
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"type":"ref/prompt","name":"x"}"#
        );
        assert!(serde_json::from_str::<CompletionReference>(r#"{"type":"ref/x"}"#).is_err());
    }
}
