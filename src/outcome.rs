//! What a request that may need the client's input ends with: its result,
//! or a request for more input (multi round-trip requests, spec 2026-07-28
//! basic/patterns/mrtr). Server handlers return it and the client's typed
//! methods return it.

use std::collections::BTreeMap;

use crate::types::{CallToolResult, InputRequiredResult};

/// What a tool, resource or prompt handler produced: the final result, or
/// a request for more input from the client (multi round-trip requests,
/// spec 2026-07-28 basic/patterns/mrtr).
///
/// Handlers usually return the final result type directly; it converts
/// into `Outcome::Complete`. The client's typed methods return it too
/// (with the input handlers it was built with, it answers and retries by
/// itself, so it sees `InputRequired` only for requests it cannot answer).
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

/// A prompt's arguments, by name.
pub type PromptArguments = BTreeMap<String, String>;
