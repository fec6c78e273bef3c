//! Requests from a legacy (initialize-era) server. Before 2026-07-28 a
//! server may ask the client things mid-request (spec 2025-11-25
//! client/elicitation, client/sampling, client/roots, basic/utilities/ping),
//! and every request needs an answer (basic/index: "Responses MUST be
//! sent"). The client answers `ping` itself and the three input requests
//! with the same handlers that answer multi round-trip input requests
//! ([`ClientBuilder::on_elicitation`](crate::ClientBuilder::on_elicitation)
//! and friends); anything else gets -32601.
//!
//! A modern server sends no requests over stdio, so on a modern connection
//! they are ignored with a trace note (`Link::route`).

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::client::input::InputHandlers;
use crate::jsonrpc::ErrorObject;
use crate::types::{CreateMessageRequestParams, ElicitRequestParams, method};

/// The answer to one server request: its result, or the error to send.
pub(crate) fn answer(
    handlers: &InputHandlers,
    request: &str,
    params: &str,
) -> Result<Value, ErrorObject> {
    let unhandled = || ErrorObject::method_not_found(request);
    match request {
        "ping" => Ok(json!({})),
        method::ELICITATION_CREATE => {
            let handler = handlers.elicitation.as_ref().ok_or_else(unhandled)?;
            to_result(handler(&parse::<ElicitRequestParams>(params)?))
        }
        method::SAMPLING_CREATE_MESSAGE => {
            let handler = handlers.sampling.as_ref().ok_or_else(unhandled)?;
            to_result(handler(&parse::<CreateMessageRequestParams>(params)?))
        }
        method::ROOTS_LIST => {
            let handler = handlers.roots.as_ref().ok_or_else(unhandled)?;
            to_result(handler())
        }
        _ => Err(unhandled()),
    }
}

fn parse<T: DeserializeOwned>(params: &str) -> Result<T, ErrorObject> {
    serde_json::from_str(params).map_err(ErrorObject::invalid_params)
}

/// A handler's answer as a result, or its failure as -32603.
fn to_result<T: serde::Serialize>(answer: Result<T, crate::Error>) -> Result<Value, ErrorObject> {
    let answer = answer.map_err(ErrorObject::internal_error)?;
    serde_json::to_value(answer).map_err(ErrorObject::internal_error)
}
