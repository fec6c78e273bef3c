//! Requests from a legacy (initialize-era) server. Before 2026-07-28 a
//! server may ask the client things mid-request (spec 2025-11-25
//! client/elicitation, client/sampling, client/roots, basic/utilities/ping),
//! and every request needs an answer (basic/index: "Responses MUST be
//! sent"). The client answers `ping` itself and the three input requests
//! with the same handlers that answer multi round-trip input requests
//! ([`ClientBuilder::on_elicitation`](crate::ClientBuilder::on_elicitation)
//! and friends); anything else gets -32601.
//!
//! `ping` is answered on the reader; every other request on a thread of its
//! own, since a handler may wait for a person, at most
//! `link::MAX_ANSWERING` (32) at once: past that a request is answered
//! `-32603` at once, so a server that asks without end costs a bounded
//! number of threads. A request the server cancels (`notifications/cancelled`
//! naming its own id) while its handler runs gets no answer.
//!
//! A modern server sends no requests over stdio, so on a modern connection
//! they are ignored with a trace note (`Link::route`).

use serde_json::{Value, json};

use crate::client::input::InputHandlers;
use crate::jsonrpc::ErrorObject;
use crate::types::InputRequest;

/// The answer to one server request: its result, or the error to send.
pub(crate) fn answer(
    handlers: &InputHandlers,
    request: &str,
    params: &str,
) -> Result<Value, ErrorObject> {
    if request == "ping" {
        return Ok(json!({}));
    }
    // The same shape as a multi round-trip input request, read from the
    // text as it came (not a `Value`, whose objects are sorted: a form's
    // fields keep the server's order).
    let method = serde_json::to_string(request).map_err(ErrorObject::internal_error)?;
    let input: InputRequest =
        serde_json::from_str(&format!(r#"{{"method":{method},"params":{params}}}"#))
            .map_err(ErrorObject::invalid_params)?;
    match handlers.answer_one(&input) {
        Some(answer) => answer.map_err(ErrorObject::internal_error),
        None => Err(ErrorObject::method_not_found(request)),
    }
}
