//! Classifies one input line: a request, a notification, a response, or
//! something that must be answered with an error.
//!
//! The line is parsed once into borrowed pieces (`&RawValue`), so params stay
//! unparsed text until the handler that wants them reads them into its own
//! type. Every way a line can be wrong maps to one JSON-RPC error here:
//!
//! | input | answer |
//! |---|---|
//! | not UTF-8, not JSON, trailing garbage | `-32700`, id `null` |
//! | an array (batch), a scalar, no or wrong `jsonrpc`, no or non-string `method`, `id` null / object / fraction, `params` not an object | `-32600`, with the id when it is usable |
//! | a response (`result` or `error` without `method`) | nothing: peers must not send them, so it is only noted |

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::jsonrpc::{ErrorObject, RequestId};

/// One classified input line.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A request: it must get exactly one reply unless it is cancelled.
    Request {
        id: RequestId,
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// A notification: never answered.
    Notification {
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// A response (or error response) sent by the peer: to one of the
    /// server's own requests to a legacy client, or to nothing.
    Response {
        id: Option<RequestId>,
        // Only the legacy era's asks are answered by the client.
        #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
        reply: Result<Box<RawValue>, ErrorObject>,
    },
    /// A line that gets an error reply.
    Invalid {
        id: Option<RequestId>,
        error: ErrorObject,
    },
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
pub(crate) fn classify(line: &[u8]) -> Incoming {
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
fn response(env: &Envelope<'_>) -> Option<Incoming> {
    if env.method.is_some() {
        return None;
    }
    let reply = match (env.result, env.error) {
        (_, Some(error)) => Err(serde_json::from_str(error.get()).unwrap_or_else(|_| {
            ErrorObject::internal_error(format!("a malformed error: {}", short(error.get())))
        })),
        (Some(result), None) => Ok(result.to_owned()),
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
fn method_and_params(env: &Envelope<'_>) -> Result<(String, Option<Box<RawValue>>), ErrorObject> {
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
fn method(raw: Option<&RawValue>) -> Result<String, ErrorObject> {
    let Some(raw) = raw else {
        return Err(ErrorObject::invalid_request("missing method"));
    };
    serde_json::from_str::<String>(raw.get()).map_err(|_| {
        ErrorObject::invalid_request(format!("method must be a string, got {}", short(raw.get())))
    })
}

/// Keeps the params as unparsed text; when present they must be an object.
fn params(raw: Option<&RawValue>) -> Result<Option<Box<RawValue>>, ErrorObject> {
    match raw {
        None => Ok(None),
        Some(raw) if raw.get().starts_with('{') => Ok(Some(raw.to_owned())),
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
pub(crate) fn cancelled_id(params: Option<&RawValue>) -> Option<RequestId> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cancelled {
        request_id: RequestId,
    }
    let params: Cancelled = serde_json::from_str(params?.get()).ok()?;
    Some(params.request_id)
}

impl Incoming {
    /// What a line too long to keep stands for, from its envelope: an
    /// error for the request (spec 2026-07-28 basic/index: with the
    /// request's id whenever it could be read, and the scan reads it
    /// wherever it is in the line; `null` only when there was none), a
    /// failed answer to one of the server's own requests to a legacy
    /// client, or, for a notification, nothing (never answered).
    pub(crate) fn too_long(
        envelope: crate::envelope_scan::Envelope,
        error: ErrorObject,
    ) -> Option<Incoming> {
        if envelope.is_response() {
            return Some(Incoming::Response {
                id: envelope.id,
                reply: Err(error),
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
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_names_its_request_or_is_ignored() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert_eq!(
            cancelled_id(Some(&raw(r#"{"requestId":"a","reason":"x"}"#))),
            Some(RequestId::from("a"))
        );
        assert_eq!(cancelled_id(Some(&raw(r#"{"id":1}"#))), None);
        assert_eq!(cancelled_id(None), None);
    }

    fn error_of(line: &str) -> (Option<RequestId>, i32) {
        match classify(line.as_bytes()) {
            Incoming::Invalid { id, error } => (id, error.code),
            other => panic!("expected an error for {line}, got {other:?}"),
        }
    }

    #[test]
    fn requests_and_notifications() {
        match classify(br#"{"jsonrpc":"2.0","id":"7","method":"a/b","params":{"x":1}}"#) {
            Incoming::Request { id, method, params } => {
                assert_eq!(id, RequestId::from("7"));
                assert_eq!(method, "a/b");
                assert_eq!(params.unwrap().get(), r#"{"x":1}"#);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"n"}"#),
            Incoming::Notification { params: None, .. }
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Incoming::Response {
                id: Some(RequestId::Number(1)),
                ..
            }
        ));
    }

    #[test]
    fn bad_shapes() {
        assert_eq!(error_of("{not json"), (None, -32700));
        assert_eq!(error_of(r#"{"jsonrpc":"2.0"} x"#), (None, -32700));
        assert_eq!(error_of("[1,2]"), (None, -32600));
        assert_eq!(error_of("42"), (None, -32600));
        assert_eq!(
            error_of(r#"{"id":1,"method":"m"}"#),
            (Some(1.into()), -32600)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#),
            (Some(1.into()), -32600)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1}"#),
            (Some(1.into()), -32600)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            (Some(1.into()), -32600)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#),
            (None, -32600)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#),
            (None, -32600)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#),
            (None, -32600)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":"x","method":"m","params":[1]}"#),
            (Some("x".into()), -32600)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#),
            (None, -32600)
        );
        assert!(classify(b"\xff\xfe").is_parse_error());
        assert!(classify(b"\x0c\x0c").is_parse_error());
    }

    #[test]
    fn escapes_mean_what_they_say() {
        match classify(br#"{"jsonrpc":"2\u002e0","id":"\u0037","\u006dethod":"a\/b"}"#) {
            Incoming::Request { id, method, .. } => {
                assert_eq!(id, RequestId::from("7"));
                assert_eq!(method, "a/b");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            error_of(r#"{"jsonrpc":"2\u002e1","id":1,"method":"m"}"#),
            (Some(1.into()), -32600)
        );
    }

    #[test]
    fn integer_ids_of_any_size_keep_their_text() {
        for text in [
            "-9223372036854775809",
            "18446744073709551616",
            "1000000000000000000000000",
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"m"}}"#);
            match classify(line.as_bytes()) {
                Incoming::Request { id, .. } => {
                    assert_eq!(id, RequestId::BigNumber(text.into()));
                    assert_eq!(serde_json::to_string(&id).unwrap(), text);
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1e3,"method":"m"}"#),
            (None, -32600)
        );
    }

    impl Incoming {
        fn is_parse_error(&self) -> bool {
            matches!(self, Incoming::Invalid { error, .. } if error.code == -32700)
        }
    }
}
