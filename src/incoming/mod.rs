//! Classifies one input line: a request, a notification, a response, or
//! something that must be answered with an error.
//!
//! The line is parsed once into borrowed pieces (`&RawValue`): the
//! envelope and, in the same pass, the members of the params the server
//! looks at ([`Fields`]); a handler reads its own members (the arguments)
//! into its own type. A line that pass does not take as a well-formed
//! request or notification (a response, an error of any kind, a
//! duplicate member of the params) is read again the plain way, which
//! finds what it is: so every way a line can be wrong maps to one JSON-RPC
//! error, decided in one place (the second pass):
//!
//! | input | answer |
//! |---|---|
//! | not UTF-8, not JSON, trailing garbage | `-32700`, id `null` |
//! | an array (batch), a scalar, no or wrong `jsonrpc`, no or non-string `method`, `id` null / object / fraction, `params` not an object | `-32600`, with the id when it is usable |
//! | a response (`result` or `error` without `method`) | nothing: peers must not send them, so it is only noted |

use std::borrow::Cow;

use serde::de::{MapAccess, Visitor, value::MapAccessDeserializer};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::jsonrpc::{ErrorObject, RequestId};

/// One classified input line, borrowed from it.
#[derive(Debug)]
pub(crate) enum Incoming<'a> {
    /// A request: it must get exactly one reply unless it is cancelled.
    Request {
        id: RequestId,
        method: Cow<'a, str>,
        params: Option<Params<'a>>,
    },
    /// A notification: never answered.
    Notification {
        method: Cow<'a, str>,
        params: Option<Params<'a>>,
    },
    /// A response (or error response) sent by the peer: to one of the
    /// server's own requests to a legacy client, or to nothing.
    Response {
        id: Option<RequestId>,
        // Only the legacy era's asks are answered by the client.
        #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
        reply: Reply,
    },
    /// A line that gets an error reply.
    Invalid {
        id: Option<RequestId>,
        error: ErrorObject,
    },
}

/// What a response from the peer carries. Its `error` is kept as sent and
/// read only by the ask it answers (`Reply::into_result`): a response
/// that answers nothing (all of them, without the legacy era) is never
/// read further.
#[derive(Debug)]
#[cfg_attr(not(feature = "legacy"), allow(dead_code))]
pub(crate) enum Reply {
    /// Its `result`, as sent.
    Result(Box<RawValue>),
    /// Its `error`, as sent.
    Error(Box<RawValue>),
    /// The error that stands for a response too long to keep.
    Failed(ErrorObject),
}

impl Reply {
    /// The result, or the error object (one that does not read as an
    /// error object is a `-32603` quoting it).
    #[cfg(feature = "legacy")]
    pub fn into_result(self) -> Result<Box<RawValue>, ErrorObject> {
        match self {
            Reply::Result(result) => Ok(result),
            Reply::Error(error) => Err(serde_json::from_str(error.get()).unwrap_or_else(|_| {
                ErrorObject::internal_error(format!("a malformed error: {}", short(error.get())))
            })),
            Reply::Failed(error) => Err(error),
        }
    }
}

/// A request's or notification's params (an object).
#[derive(Debug)]
pub(crate) enum Params<'a> {
    /// Read with the envelope: the members the server looks at, borrowed
    /// from `line`, which is read again only if the whole params text is
    /// wanted ([`Params::raw`]).
    Read { line: &'a str, fields: Fields<'a> },
    /// The params as text: from a line read the plain way, or a legacy
    /// request's later round.
    Raw(Box<RawValue>),
}

impl Params<'_> {
    /// The params as sent.
    pub fn raw(&self) -> &RawValue {
        match self {
            Params::Read { line, .. } => match serde_json::from_str::<Envelope<'_>>(line) {
                Ok(Envelope {
                    params: Some(raw), ..
                }) => raw,
                // The line was read once already, with params.
                _ => unreachable!("a line read with its params reads again"),
            },
            Params::Raw(raw) => raw,
        }
    }

    /// The members the server looks at; `-32602` when they are not
    /// readable (a member twice).
    pub fn fields(&self) -> Result<Fields<'_>, ErrorObject> {
        match self {
            Params::Read { fields, .. } => Ok(fields.clone()),
            Params::Raw(raw) => {
                serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)
            }
        }
    }
}

/// The members of params the server looks at, borrowed from the line.
#[derive(Deserialize, Default, Clone, Debug)]
pub(crate) struct Fields<'a> {
    #[serde(rename = "_meta", borrow, default, deserialize_with = "present")]
    pub meta: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub name: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub arguments: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub uri: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub cursor: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub notifications: Option<&'a RawValue>,
    #[serde(rename = "taskId", borrow, default, deserialize_with = "present")]
    pub task_id: Option<&'a RawValue>,
    #[serde(
        rename = "inputResponses",
        borrow,
        default,
        deserialize_with = "present"
    )]
    pub input_responses: Option<&'a RawValue>,
    #[serde(rename = "requestState", borrow, default, deserialize_with = "present")]
    pub request_state: Option<&'a RawValue>,
}

/// A request or notification read in one pass, the params' members
/// included. Its `params` must be an object ([`object_fields`]).
#[derive(Deserialize)]
struct ReadEnvelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "object_fields")]
    params: Option<Fields<'a>>,
    // Read so that a line with two of either is refused as before (a
    // request with one is a request: `response` says why).
    #[serde(default, borrow, deserialize_with = "present")]
    #[allow(dead_code, reason = "present to be checked, not used")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    #[allow(dead_code, reason = "present to be checked, not used")]
    error: Option<&'a RawValue>,
}

/// The params' members, from an object only (a derived struct would also
/// take an array, by position).
fn object_fields<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Fields<'de>>, D::Error> {
    struct Object;
    impl<'de> Visitor<'de> for Object {
        type Value = Fields<'de>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Fields<'de>, A::Error> {
            Fields::deserialize(MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(Object).map(Some)
}

/// The members of a JSON-RPC object, each `Some` when present (even when
/// its value is `null`).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Deserializes a member that is present, `null` included (a plain
/// `Option` would read `null` as absent).
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Classifies one line (without its newline). The checks run in this order,
/// and the first that fails decides the error a malformed line gets.
pub(crate) fn classify(line: &[u8]) -> Incoming<'_> {
    if let Some(incoming) = read_in_one_pass(line) {
        return incoming;
    }
    let env = match envelope(line) {
        Ok(env) => env,
        Err(error) => return Incoming::Invalid { id: None, error },
    };
    if let Some(response) = response(&env) {
        return response;
    }
    let id = match request_id(env.id) {
        Ok(id) => id,
        Err(error) => return Incoming::Invalid { id: None, error },
    };
    match method_and_params(&env) {
        Ok((method, params)) => match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
        },
        Err(error) => Incoming::Invalid { id, error },
    }
}

/// A well-formed request or notification, read with its params' members
/// in one pass; `None` for anything else, which [`classify`] reads again
/// the plain way (and so answers as it always did).
fn read_in_one_pass(line: &[u8]) -> Option<Incoming<'_>> {
    let text = std::str::from_utf8(line).ok()?;
    let env: ReadEnvelope<'_> = serde_json::from_str(text).ok()?;
    check_version(env.jsonrpc).ok()?;
    let id = request_id(env.id).ok()?;
    let method = method(env.method).ok()?;
    let params = env.params.map(|fields| Params::Read { line: text, fields });
    Some(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    })
}

/// Parses the line into its members: UTF-8, then one JSON object, then
/// members of the right kind (a duplicate member is `-32600`).
fn envelope(line: &[u8]) -> Result<Envelope<'_>, ErrorObject> {
    let text = std::str::from_utf8(line)
        .map_err(|e| ErrorObject::parse_error(format!("invalid UTF-8: {e}")))?;
    check_object(text)?;
    serde_json::from_str(text).map_err(|e| {
        if e.is_data() {
            ErrorObject::invalid_request(e)
        } else {
            ErrorObject::parse_error(e)
        }
    })
}

/// Rejects a line that does not start like an object: not JSON at all
/// (`-32700`), or JSON that is a batch or a scalar (`-32600`).
fn check_object(text: &str) -> Result<(), ErrorObject> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return Ok(());
    }
    // Tell "not JSON" from "JSON, but not an object".
    Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Err(e) => ErrorObject::parse_error(e),
        Ok(_) if trimmed.starts_with('[') => {
            ErrorObject::invalid_request("batches are not supported: send one message per line")
        }
        Ok(_) => ErrorObject::invalid_request("a message must be a JSON object"),
    })
}

/// A response from the peer (`result` or `error`, no `method`), whatever
/// its id looks like: the owner routes it to an ask of its own or only
/// notes it.
fn response<'a>(env: &Envelope<'_>) -> Option<Incoming<'a>> {
    if env.method.is_some() {
        return None;
    }
    let reply = match (env.result, env.error) {
        (_, Some(error)) => Reply::Error(error.to_owned()),
        (Some(result), None) => Reply::Result(result.to_owned()),
        (None, None) => return None,
    };
    let id = env.id.and_then(|raw| RequestId::from_json(raw.get()));
    Some(Incoming::Response { id, reply })
}

/// Reads the id of a request: none for a notification, an error when it is
/// not a string or an integer.
fn request_id(raw: Option<&RawValue>) -> Result<Option<RequestId>, ErrorObject> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match RequestId::from_json(raw.get()) {
        Some(id) => Ok(Some(id)),
        None => Err(ErrorObject::invalid_request(format!(
            "id must be a string or an integer, got {}",
            short(raw.get())
        ))),
    }
}

/// Checks the rest of a request or notification, in order: the version,
/// the method, the params.
fn method_and_params<'a>(
    env: &Envelope<'a>,
) -> Result<(Cow<'a, str>, Option<Params<'a>>), ErrorObject> {
    check_version(env.jsonrpc)?;
    let method = method(env.method)?;
    let params = params(env.params)?;
    Ok((method, params))
}

/// Checks that `jsonrpc` is present and says `"2.0"`.
fn check_version(raw: Option<&RawValue>) -> Result<(), ErrorObject> {
    match raw {
        Some(v) if crate::jsonrpc::is_version_2(v) => Ok(()),
        Some(v) => Err(ErrorObject::invalid_request(format!(
            "jsonrpc must be \"2.0\", got {}",
            short(v.get())
        ))),
        None => Err(ErrorObject::invalid_request("missing \"jsonrpc\": \"2.0\"")),
    }
}

/// Reads the method name, which must be present and a string.
fn method(raw: Option<&RawValue>) -> Result<Cow<'_, str>, ErrorObject> {
    let Some(raw) = raw else {
        return Err(ErrorObject::invalid_request("missing method"));
    };
    if let Some(name) = crate::jsonrpc::plain_string(raw) {
        return Ok(Cow::Borrowed(name));
    }
    serde_json::from_str::<String>(raw.get())
        .map(Cow::Owned)
        .map_err(|_| {
            ErrorObject::invalid_request(format!(
                "method must be a string, got {}",
                short(raw.get())
            ))
        })
}

/// Keeps the params as unparsed text; when present they must be an object.
fn params<'a>(raw: Option<&RawValue>) -> Result<Option<Params<'a>>, ErrorObject> {
    match raw {
        None => Ok(None),
        Some(raw) if raw.get().starts_with('{') => Ok(Some(Params::Raw(raw.to_owned()))),
        Some(raw) => Err(ErrorObject::invalid_request(format!(
            "params must be an object, got {}",
            short(raw.get())
        ))),
    }
}

/// The start of a JSON value, for error messages.
fn short(raw: &str) -> &str {
    match raw.char_indices().nth(40) {
        Some((i, _)) => &raw[..i],
        None => raw,
    }
}

/// The request id of `notifications/cancelled`; `None` for malformed
/// params, which are ignored (spec 2026-07-28 basic/patterns/cancellation,
/// "Error Handling").
pub(crate) fn cancelled_id(params: Option<&Params<'_>>) -> Option<RequestId> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cancelled {
        request_id: RequestId,
    }
    let params: Cancelled = serde_json::from_str(params?.raw().get()).ok()?;
    Some(params.request_id)
}

impl Incoming<'_> {
    /// What a line too long to keep stands for, from its envelope: an
    /// error for the request (spec 2026-07-28 basic/index: with the
    /// request's id whenever it could be read, and the scan reads it
    /// wherever it is in the line; `null` only when there was none), a
    /// failed answer to one of the server's own requests to a legacy
    /// client, or, for a notification, nothing (never answered).
    pub(crate) fn too_long(
        envelope: crate::envelope_scan::Envelope,
        error: ErrorObject,
    ) -> Option<Incoming<'static>> {
        if envelope.is_response() {
            return Some(Incoming::Response {
                id: envelope.id,
                reply: Reply::Failed(error),
            });
        }
        if envelope.is_notification() {
            return None;
        }
        Some(Incoming::Invalid {
            id: envelope.id,
            error,
        })
    }
}

#[cfg(test)]
mod tests;
