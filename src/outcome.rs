//! What a request that may need the client's input ends with: its result,
//! or a request for more input (multi round-trip requests, spec 2026-07-28
//! basic/patterns/mrtr). Server handlers return it and the client's typed
//! methods return it.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::types::{CallToolResult, InputRequest, InputRequiredResult};

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

impl<T> Outcome<T> {
    /// The final result; a request for input is an error saying what the
    /// server asked for and how to answer it. On the client, whose input
    /// handlers answer and retry by themselves, this is the short path:
    /// `client.get_prompt(name, args)?.into_result()?`.
    ///
    /// ```
    /// use mcp_stdio::Outcome;
    /// use mcp_stdio::types::{CallToolResult, InputRequiredResult};
    ///
    /// let done: Outcome<CallToolResult> = CallToolResult::text("hi").into();
    /// assert_eq!(done.into_result().unwrap().text_content(), "hi");
    /// let asked: Outcome<CallToolResult> = Outcome::InputRequired(InputRequiredResult::default());
    /// assert!(asked.into_result().is_err());
    /// ```
    pub fn into_result(self) -> Result<T, Error> {
        match self {
            Outcome::Complete(result) => Ok(result),
            Outcome::InputRequired(asked) => {
                let methods: Vec<&str> = asked
                    .input_requests
                    .iter()
                    .flat_map(|requests| requests.values())
                    .map(InputRequest::method)
                    .collect();
                Err(Error::Protocol(format!(
                    "the server asked for input this client did not give ({}): set a handler for it on the client (on_elicitation, on_sampling, on_roots), or take the Outcome and answer it yourself",
                    methods.join(", ")
                )))
            }
        }
    }
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
