//! Handlers with typed output and typed prompt arguments (feature
//! `schemars`, whose derived schemas describe them to the client): the
//! wrappers that turn them into the stored handler shapes of `handlers`.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::jsonrpc::ErrorObject;
use crate::outcome::{Outcome, PromptArguments};
use crate::server::context::RequestContext;
use crate::server::handlers::{PromptFn, ToolFn, prompt_fn, typed_tool};
use crate::types::{CallToolResult, GetPromptResult};

/// What a structured tool's handler returns: its output type `O`, or an
/// [`Outcome<O>`] when it may ask the client for input. Implemented for
/// every `Serialize + JsonSchema` type and for `Outcome` of one; there is
/// nothing to implement. (A trait rather than `Into<Outcome<O>>`, which
/// would leave `O` ambiguous for a handler that returns an `Outcome`.)
pub trait StructuredOutput {
    /// The type of the result's `structuredContent`.
    type Output: Serialize + schemars::JsonSchema;
    /// The outcome this return value stands for.
    fn into_outcome(self) -> Outcome<Self::Output>;
}

impl<O: Serialize + schemars::JsonSchema> StructuredOutput for O {
    type Output = O;
    fn into_outcome(self) -> Outcome<O> {
        Outcome::Complete(self)
    }
}

impl<O: Serialize + schemars::JsonSchema> StructuredOutput for Outcome<O> {
    type Output = O;
    fn into_outcome(self) -> Outcome<O> {
        self
    }
}

/// Wraps a structured tool handler: arguments as for `typed_tool`; a
/// complete result becomes `structuredContent` plus the same JSON as a
/// text block (the spec's SHOULD for clients that read only `content`).
/// A result that does not serialize to an object is `-32603`.
pub(crate) fn structured_tool<T, R, F>(handler: F) -> Arc<ToolFn>
where
    T: DeserializeOwned,
    R: StructuredOutput,
    F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
{
    typed_tool(move |ctx: &RequestContext, args: T| {
        Ok(match handler(ctx, args)?.into_outcome() {
            Outcome::Complete(output) => Outcome::Complete(structured_result(&output)?),
            Outcome::InputRequired(input) => Outcome::InputRequired(input),
        })
    })
}

/// A tool's typed output as a result: `structuredContent` and a text block.
fn structured_result<O: Serialize>(output: &O) -> Result<CallToolResult, ErrorObject> {
    match serde_json::to_value(output) {
        Ok(value @ Value::Object(_)) => Ok(CallToolResult::structured(value)),
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            };
            Err(ErrorObject::internal_error(format!(
                "the tool's result must serialize to an object (structuredContent), not {kind}"
            )))
        }
        Err(e) => Err(ErrorObject::internal_error(format!(
            "the tool's result could not be serialized: {e}"
        ))),
    }
}

/// Wraps a typed prompt handler: the arguments (strings, by name) are read
/// into `T`; a mismatch is `-32602` with serde's message. Missing required
/// arguments never get here: the kernel checks the prompt's declared
/// arguments first.
pub(crate) fn typed_prompt_fn<T, R, F>(handler: F) -> Arc<PromptFn>
where
    T: DeserializeOwned,
    R: Into<Outcome<GetPromptResult>>,
    F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
{
    prompt_fn(move |ctx: &RequestContext, args: PromptArguments| {
        let args = args
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let args: T = serde_json::from_value(Value::Object(args))
            .map_err(|e| ErrorObject::invalid_params(format!("invalid prompt arguments: {e}")))?;
        handler(ctx, args)
    })
}
