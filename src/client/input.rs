//! Multi round-trip requests on the client (spec 2026-07-28
//! basic/patterns/mrtr): when a result comes back `input_required`, the
//! client runs the caller's handlers for every input request and retries
//! the original request with their answers.
//!
//! The retry is a new request (new id) with the same params plus
//! `inputResponses`, keyed like the requests, and the server's
//! `requestState` exactly as received (it is opaque: never parsed). The
//! retry state lives in that one call; nothing is shared with other
//! requests in flight.
//!
//! A task's `inputRequests` (Tasks extension) are answered by the same
//! handlers, through `tasks/update` instead of a retry (see `tasks`).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::Error;
use crate::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    InputRequest, InputRequiredResult, ListRootsResult,
};

pub(crate) type ElicitFn =
    dyn Fn(&ElicitRequestParams) -> Result<ElicitResult, Error> + Send + Sync;
pub(crate) type SamplingFn =
    dyn Fn(&CreateMessageRequestParams) -> Result<CreateMessageResult, Error> + Send + Sync;
pub(crate) type RootsFn = dyn Fn() -> Result<ListRootsResult, Error> + Send + Sync;

/// The caller's answers to the three kinds of input request.
#[derive(Clone, Default)]
pub(crate) struct InputHandlers {
    pub elicitation: Option<Arc<ElicitFn>>,
    pub sampling: Option<Arc<SamplingFn>>,
    pub roots: Option<Arc<RootsFn>>,
}

impl InputHandlers {
    /// Whether every input request has a handler (checked before any
    /// handler runs, so no user is asked a question whose answer would be
    /// thrown away).
    pub fn can_answer(&self, result: &InputRequiredResult) -> bool {
        result
            .input_requests
            .iter()
            .flatten()
            .all(|(_, request)| self.handles(request))
    }

    /// Whether there is a handler for this kind of input request.
    pub fn handles(&self, request: &InputRequest) -> bool {
        match request {
            InputRequest::Elicit(_) => self.elicitation.is_some(),
            InputRequest::CreateMessage(_) => self.sampling.is_some(),
            InputRequest::ListRoots(_) => self.roots.is_some(),
            _ => false,
        }
    }

    /// The client capabilities these handlers stand for.
    pub fn capabilities(&self) -> Map<String, Value> {
        let mut caps = Map::new();
        if self.elicitation.is_some() {
            caps.insert(
                "elicitation".into(),
                serde_json::json!({ "form": {}, "url": {} }),
            );
        }
        if self.sampling.is_some() {
            caps.insert("sampling".into(), serde_json::json!({}));
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), serde_json::json!({}));
        }
        caps
    }

    /// Answers every input request, or `None` when one of them has no
    /// handler (the caller then gets the result to handle by hand).
    pub fn answer(
        &self,
        result: &InputRequiredResult,
    ) -> Result<Option<Map<String, Value>>, Error> {
        if !self.can_answer(result) {
            return Ok(None);
        }
        let mut responses = Map::new();
        for (key, request) in result.input_requests.iter().flatten() {
            let Some(answer) = self.answer_one(request) else {
                return Ok(None);
            };
            responses.insert(key.clone(), answer?);
        }
        Ok(Some(responses))
    }

    /// Runs the handler for one input request (multi round-trip, or a
    /// legacy server's own request); `None` when there is none for its
    /// kind.
    pub fn answer_one(&self, request: &InputRequest) -> Option<Result<Value, Error>> {
        let answer = match request {
            InputRequest::Elicit(params) => to_value(self.elicitation.as_ref()?(params)),
            InputRequest::CreateMessage(params) => to_value(self.sampling.as_ref()?(params)),
            InputRequest::ListRoots(_) => to_value(self.roots.as_ref()?()),
            _ => return None,
        };
        Some(answer)
    }
}

/// A handler's answer as JSON.
fn to_value<T: serde::Serialize>(answer: Result<T, Error>) -> Result<Value, Error> {
    Ok(serde_json::to_value(answer?)?)
}
