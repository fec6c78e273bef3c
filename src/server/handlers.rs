//! The shapes of application handlers as the registry stores them, and the
//! wrappers that read a handler's typed parameters.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use serde_json::Value;

use crate::jsonrpc::ErrorObject;
use crate::outcome::{Outcome, PromptArguments, ToolOutcome};
use crate::server::arguments::read_arguments;
use crate::server::context::RequestContext;
use crate::types::{CompleteRequestParams, CompleteResult, GetPromptResult, ReadResourceResult};

/// What a resource handler is asked to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// The URI the client asked for.
    pub uri: String,
    /// For a resource template, the values of its `{variables}` (percent-
    /// decoded); empty for a static resource.
    pub variables: BTreeMap<String, String>,
}

/// A stored tool handler: `arguments` is the JSON text of the arguments
/// object the client sent, `None` when it sent none.
pub(crate) type ToolFn =
    dyn Fn(&RequestContext, Option<&str>) -> Result<ToolOutcome, ErrorObject> + Send + Sync;

/// A stored task gate, run before a task is created (the arguments as for
/// [`ToolFn`]): `None` to create the task, or the answer to give instead
/// (the arguments did not fit, or the gate asks for input first; see
/// [`ServerBuilder::task_tool_with_gate`](crate::ServerBuilder::task_tool_with_gate)).
pub(crate) type GateFn =
    dyn Fn(&RequestContext, Option<&str>) -> Result<Option<ToolOutcome>, ErrorObject> + Send + Sync;

/// A stored resource handler.
pub(crate) type ResourceFn = dyn Fn(&RequestContext, &ResourceRequest) -> Result<Outcome<ReadResourceResult>, ErrorObject>
    + Send
    + Sync;

/// A stored prompt handler.
pub(crate) type PromptFn = dyn Fn(&RequestContext, PromptArguments) -> Result<Outcome<GetPromptResult>, ErrorObject>
    + Send
    + Sync;

/// A stored completion handler.
pub(crate) type CompletionFn = dyn Fn(&RequestContext, CompleteRequestParams) -> Result<CompleteResult, ErrorObject>
    + Send
    + Sync;

/// A stored handler for an application-defined method.
pub(crate) type MethodFn =
    dyn Fn(&RequestContext, Value) -> Result<Value, ErrorObject> + Send + Sync;

/// Wraps a typed tool handler: the arguments object is read into `T` (an
/// absent `arguments` reads as `{}`); when it does not fit, the call's
/// result is the tool error that tells the model why, and the handler is
/// not called.
pub(crate) fn typed_tool<T, R, F>(handler: F) -> Arc<ToolFn>
where
    T: DeserializeOwned,
    R: Into<ToolOutcome>,
    F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
{
    Arc::new(
        move |ctx: &RequestContext, args: Option<&str>| match read_arguments(args) {
            Ok(args) => handler(ctx, args).map(Into::into),
            Err(wrong) => Ok(Outcome::Complete(wrong)),
        },
    )
}

/// Wraps a typed task gate: the arguments read as for [`typed_tool`],
/// before the gate runs and before any task exists.
pub(crate) fn typed_gate<T, G>(gate: G) -> Arc<GateFn>
where
    T: DeserializeOwned,
    G: Fn(&RequestContext, &T) -> Result<Outcome<()>, ErrorObject> + Send + Sync + 'static,
{
    Arc::new(move |ctx: &RequestContext, args: Option<&str>| {
        let args: T = match read_arguments(args) {
            Ok(args) => args,
            Err(wrong) => return Ok(Some(Outcome::Complete(wrong))),
        };
        Ok(match gate(ctx, &args)? {
            Outcome::Complete(()) => None,
            Outcome::InputRequired(asked) => Some(Outcome::InputRequired(asked)),
        })
    })
}

pub(crate) fn resource_fn<R, F>(handler: F) -> Arc<ResourceFn>
where
    R: Into<Outcome<ReadResourceResult>>,
    F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
{
    Arc::new(move |ctx: &RequestContext, req: &ResourceRequest| handler(ctx, req).map(Into::into))
}

pub(crate) fn prompt_fn<R, F>(handler: F) -> Arc<PromptFn>
where
    R: Into<Outcome<GetPromptResult>>,
    F: Fn(&RequestContext, PromptArguments) -> Result<R, ErrorObject> + Send + Sync + 'static,
{
    Arc::new(move |ctx: &RequestContext, args: PromptArguments| handler(ctx, args).map(Into::into))
}
