//! Reading the messages a POST's answer carries just enough to route
//! them, and an answer that is not JSON-RPC turned into a JSON-RPC error
//! for the request that caused it.

use serde::Deserialize;
use serde_json::Value;

use super::exchange::Head;

/// Whether `message` is a JSON-RPC error response.
pub(super) fn is_rpc_error(message: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Map<String, Value>>(message)
        .is_ok_and(|m| m.get("error").is_some_and(Value::is_object))
}

/// What a response to a request carries.
pub(super) enum Answer {
    /// A result.
    Result,
    /// An error, with its code if it has one.
    Error(Option<i64>),
}

/// `message` read as the answer to request `id` (given as JSON text), or
/// `None` when it is none: a request, a notification, another request's
/// answer. One light parse, once per message of a request's stream.
pub(super) fn answer_to(message: &[u8], id: &str) -> Option<Answer> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
        method: Option<serde::de::IgnoredAny>,
        // Any shape: a malformed error is still this request's answer
        // (the link says what is wrong with it).
        error: Option<Value>,
    }
    let envelope = serde_json::from_slice::<Envelope<'_>>(message).ok()?;
    if envelope.method.is_some() || envelope.id.is_none_or(|i| i.get() != id) {
        return None;
    }
    Some(match envelope.error {
        None => Answer::Result,
        Some(error) => Answer::Error(error.get("code").and_then(Value::as_i64)),
    })
}

/// Whether `message` is a response (no `method`, an `id` that is not
/// `null`) to a request other than `id` (JSON text). One on a POST's
/// stream is not this client's to route: the stream answers that POST's
/// request alone (spec 2025-11-25 basic/transports, "Sending Messages to
/// the Server": the SSE stream "SHOULD eventually include JSON-RPC
/// response for the JSON-RPC request sent in the POST body"), and a
/// server that names another request there would answer a caller it was
/// never given. So is one serde cannot read (a key with a lone surrogate
/// escape, say): the link would scan its envelope for the id
/// (`EnvelopeScan`, as here) and fail that other request with it.
pub(super) fn answers_another(message: &[u8], id: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
        method: Option<serde::de::IgnoredAny>,
    }
    match serde_json::from_slice::<Envelope<'_>>(message) {
        Ok(envelope) => {
            envelope.method.is_none()
                && envelope
                    .id
                    .is_some_and(|i| i.get() != "null" && i.get() != id)
        }
        Err(_) => {
            let mut scan = crate::envelope_scan::EnvelopeScan::new();
            scan.feed(message);
            let envelope = scan.finish();
            let own = serde_json::from_str::<crate::jsonrpc::RequestId>(id).ok();
            envelope.is_response() && envelope.id.is_some_and(|other| Some(other) != own)
        }
    }
}

/// An error response made the answer to request `id`: the status line
/// says it answers this POST, whatever id its body has (a legacy server
/// that refuses a request without its session answers with a null id, or
/// the Python SDK's `"server-error"`).
pub(super) fn with_id(message: Vec<u8>, id: &str) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Map<String, Value>>(&message) {
        Ok(mut m) => {
            if let Ok(id) = serde_json::from_str::<Value>(id) {
                m.insert("id".into(), id);
            }
            serde_json::to_vec(&m).unwrap_or(message)
        }
        _ => message,
    }
}

/// A JSON-RPC error message's error, for a line: `message (code)`.
pub(super) fn error_text(message: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Message {
        error: crate::jsonrpc::ErrorObject,
    }
    match serde_json::from_slice::<Message>(message) {
        Ok(Message { error }) => format!("{} ({})", error.message, error.code),
        Err(_) => "an error that could not be read".to_owned(),
    }
}

/// What an HTTP status with no JSON-RPC error in its body means, in one
/// line.
pub(super) fn status_error(head: &Head, url: &str) -> String {
    let hint = match head.status {
        401 | 403 => {
            ": the server wants credentials (ClientBuilder::oauth, bearer_token or header)"
        }
        404 => ": wrong path, or the session ended",
        405 => ": the server does not take POST at this URL",
        _ => "",
    };
    format!("{url} answered HTTP {}{hint}", head.status)
}

/// A JSON-RPC error answering request `id` (JSON text) with `message`,
/// made up by this client when the exchange ended without the server's
/// answer (refused, broken, a stream that ended first); its `data` says
/// so (`{"transport": "no answer from the server"}`, [`no_answer`]).
pub(super) fn error_line(id: &str, message: &str) -> Vec<u8> {
    let error = serde_json::json!({
        "code": crate::jsonrpc::error_code::INTERNAL_ERROR,
        "message": message,
        "data": { "transport": crate::error::NO_ANSWER },
    });
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}").into_bytes()
}

/// A JSON-RPC error answering the era probe `id` (JSON text) with
/// `message`: the server refused it with an HTTP status a legacy server
/// gives a modern request, and no JSON-RPC error in the body. Made up by
/// this client, but the server's answer, which the probe reads as a
/// legacy server's (spec 2026-07-28 streamable-http, "Backward
/// Compatibility": an empty body, or one that is no modern error, means
/// falling back): no transport mark.
pub(super) fn refusal_line(id: &str, message: &str) -> Vec<u8> {
    let error = serde_json::json!({
        "code": crate::jsonrpc::error_code::INTERNAL_ERROR,
        "message": message,
    });
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}").into_bytes()
}

/// Whether `error` is one this client made up ([`error_line`]): the
/// server never answered, so a subscription so ended was not ended by the
/// server, its connection dropped.
pub(crate) fn no_answer(error: &crate::Error) -> bool {
    error.is_transport_failure()
}
