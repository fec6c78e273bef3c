//! The shapes of application handlers, and what they may return.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::context::RequestContext;
use crate::jsonrpc::ErrorObject;
use crate::types::{
    CallToolResult, CompleteRequestParams, CompleteResult, GetPromptResult, InputRequiredResult,
    ReadResourceResult,
};

/// What a tool, resource or prompt handler produced: the final result, or
/// a request for more input from the client (multi round-trip requests,
/// spec 2026-07-28 basic/patterns/mrtr).
///
/// Handlers usually return the final result type directly; it converts
/// into `Outcome::Complete`.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The request is done; this is its result.
    Complete(T),
    /// The client must answer these input requests and retry.
    InputRequired(InputRequiredResult),
}

impl<T> From<T> for Outcome<T> {
    fn from(result: T) -> Outcome<T> {
        Outcome::Complete(result)
    }
}

/// The outcome of a tool call.
pub type ToolOutcome = Outcome<CallToolResult>;

/// What a resource handler is asked to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// The URI the client asked for.
    pub uri: String,
    /// For a resource template, the values of its `{variables}` (percent-
    /// decoded); empty for a static resource.
    pub variables: BTreeMap<String, String>,
}

/// A prompt's arguments, by name.
pub type PromptArguments = BTreeMap<String, String>;

/// A stored tool handler: `arguments` is the JSON text of the arguments
/// object the client sent, `None` when it sent none.
pub(crate) type ToolFn =
    dyn Fn(&RequestContext, Option<&str>) -> Result<ToolOutcome, ErrorObject> + Send + Sync;

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
