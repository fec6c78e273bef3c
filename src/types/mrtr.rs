//! Multi round-trip requests: `InputRequiredResult`, the `inputRequests` a
//! server sends in it, and the `inputResponses` the client sends back on
//! its retry (spec basic/patterns/mrtr).
//!
//! An input response carries no tag saying which request it answers; only
//! the server knows, from the key it chose. So [`InputResponse`] keeps the
//! raw JSON, and the server parses it with the accessor for the request it
//! sent (`to_elicit_result` and friends), turning a mismatch into its own
//! `-32602` or a fresh `InputRequiredResult`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ListRootsResult, Meta, RequestParams, ResultType, method,
};

/// Requests for the client to fulfil, by server-chosen key (schema
/// `InputRequests`).
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answers, by the keys of `InputRequests` (schema
/// `InputResponses`).
pub type InputResponses = BTreeMap<String, InputResponse>;

/// A result saying the server needs more input before it can finish
/// (schema `InputRequiredResult`). At least one field besides `resultType`
/// must be present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// What the client must gather before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque server state the client echoes on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// The kind of result; `input_required` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl InputRequiredResult {
    /// An `input_required` result with these requests.
    pub fn new(input_requests: InputRequests) -> InputRequiredResult {
        InputRequiredResult {
            input_requests: Some(input_requests),
            request_state: None,
            result_type: Some(ResultType::InputRequired),
            meta: None,
        }
    }

    /// The same result with this `requestState`.
    ///
    /// On a server, the state is sealed before it leaves (HMAC-SHA256 under
    /// `ServerBuilder::request_state_key`) and
    /// comes back to the handler only on a retry of the same method with
    /// the same parameters, from the same principal (whom the request's
    /// token stands for, over HTTP with authorization), before its
    /// lifetime (`ServerBuilder::request_state_ttl`)
    /// ends. It is not encrypted (the client can read it) and it is not
    /// single-use: within its lifetime the same retry may be sent again,
    /// and a handler for which a state must be used at most once (a
    /// payment, a one-time redemption) records its use itself (spec
    /// 2026-07-28 basic/patterns/mrtr, Server Requirements 5).
    pub fn with_request_state(mut self, state: impl Into<String>) -> InputRequiredResult {
        self.request_state = Some(state.into());
        self
    }
}

/// One request for the client, dispatched on its `method` (schema
/// `InputRequest`: `ElicitRequest | CreateMessageRequest | ListRootsRequest`).
///
/// On the wire it is `{"method": ..., "params": ...}` with no `jsonrpc` or
/// `id`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create` (schema `ElicitRequest`).
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage` (schema `CreateMessageRequest`).
    CreateMessage(CreateMessageRequestParams),
    /// `roots/list` (schema `ListRootsRequest`); its params are optional.
    ListRoots(Option<RequestParams>),
    /// A method this crate does not know, kept so that one unknown request
    /// does not make the whole `InputRequiredResult` unreadable.
    Other {
        /// The method name.
        method: String,
        /// The params, if any.
        params: Option<Value>,
    },
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &str {
        match self {
            InputRequest::Elicit(_) => method::ELICITATION_CREATE,
            InputRequest::CreateMessage(_) => method::SAMPLING_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => method::ROOTS_LIST,
            InputRequest::Other { method, .. } => method,
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a, P: Serialize> {
            method: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a P>,
        }
        let method = self.method();
        match self {
            InputRequest::Elicit(p) => Wire {
                method,
                params: Some(p),
            }
            .serialize(serializer),
            InputRequest::CreateMessage(p) => Wire {
                method,
                params: Some(p),
            }
            .serialize(serializer),
            InputRequest::ListRoots(p) => Wire {
                method,
                params: p.as_ref(),
            }
            .serialize(serializer),
            InputRequest::Other { params, .. } => Wire {
                method,
                params: params.as_ref(),
            }
            .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<InputRequest, D::Error> {
        use super::ordered::{Ordered, read};
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Wire {
            method: String,
            // Not a `Value` (whose objects are sorted by key): a form's
            // fields keep the order the server wrote them in.
            #[serde(default)]
            params: Option<Ordered>,
        }
        let wire = Wire::deserialize(deserializer)?;
        let params = wire.params;
        let given =
            |params: Option<Ordered>| params.ok_or_else(|| D::Error::missing_field("params"));
        // Spec principle: dispatch on the method string, never on shape.
        match wire.method.as_str() {
            method::ELICITATION_CREATE => read(&given(params)?).map(InputRequest::Elicit),
            method::SAMPLING_CREATE_MESSAGE => {
                read(&given(params)?).map(InputRequest::CreateMessage)
            }
            method::ROOTS_LIST => match params {
                Some(params) => read(&params).map(|p| InputRequest::ListRoots(Some(p))),
                None => Ok(InputRequest::ListRoots(None)),
            },
            _ => Ok(InputRequest::Other {
                params: params.as_ref().map(read).transpose()?,
                method: wire.method,
            }),
        }
    }
}

/// The client's answer to one input request (schema `InputResponse`), kept
/// as raw JSON.
///
/// The answer carries no tag saying which request it answers; only the
/// server knows, from the key it chose. So the server parses it with the
/// accessor for the request it sent (`to_elicit_result` and friends) and
/// turns a mismatch into its own error or a fresh `InputRequiredResult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputResponse(pub Value);

impl InputResponse {
    /// The raw JSON.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The raw JSON, by value.
    pub fn into_value(self) -> Value {
        self.0
    }

    /// Parses the answer to an `elicitation/create` request.
    pub fn to_elicit_result(&self) -> Result<ElicitResult, serde_json::Error> {
        ElicitResult::deserialize(&self.0)
    }

    /// Parses the answer to a `sampling/createMessage` request.
    pub fn to_create_message_result(&self) -> Result<CreateMessageResult, serde_json::Error> {
        CreateMessageResult::deserialize(&self.0)
    }

    /// Parses the answer to a `roots/list` request.
    pub fn to_list_roots_result(&self) -> Result<ListRootsResult, serde_json::Error> {
        ListRootsResult::deserialize(&self.0)
    }
}

impl From<Value> for InputResponse {
    fn from(value: Value) -> InputResponse {
        InputResponse(value)
    }
}

/// Converts a typed answer; serializing these plain structs into a `Value`
/// cannot fail (string keys only), so the `Null` fallback is never taken.
fn to_response<T: Serialize>(res: &T) -> InputResponse {
    InputResponse(serde_json::to_value(res).unwrap_or(Value::Null))
}

impl From<ElicitResult> for InputResponse {
    fn from(res: ElicitResult) -> InputResponse {
        to_response(&res)
    }
}

impl From<CreateMessageResult> for InputResponse {
    fn from(res: CreateMessageResult) -> InputResponse {
        to_response(&res)
    }
}

impl From<ListRootsResult> for InputResponse {
    fn from(res: ListRootsResult) -> InputResponse {
        to_response(&res)
    }
}

/// The retry fields every MRTR-capable request shares (schema
/// `InputResponseRequestParams`); useful for a custom method's params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResponseRequestParams {
    /// Answers to a previous `InputRequiredResult`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of a previous `InputRequiredResult`, echoed verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata; see [`super::meta_key`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ElicitAction, SamplingMessage};

    #[test]
    fn input_request_dispatches_on_method() {
        let json = r#"{"params":{"mode":"url","message":"m","url":"https://x"},"method":"elicitation/create"}"#;
        let req: InputRequest = serde_json::from_str(json).unwrap();
        assert!(matches!(
            &req,
            InputRequest::Elicit(ElicitRequestParams::Url(_))
        ));
        let req: InputRequest = serde_json::from_str(r#"{"method":"roots/list"}"#).unwrap();
        assert_eq!(req, InputRequest::ListRoots(None));
        assert_eq!(
            serde_json::to_string(&req).unwrap(),
            r#"{"method":"roots/list"}"#
        );
        let req: InputRequest =
            serde_json::from_str(r#"{"method":"x/y","params":{"a":1}}"#).unwrap();
        assert_eq!(req.method(), "x/y");
        assert_eq!(
            serde_json::to_string(&req).unwrap(),
            r#"{"method":"x/y","params":{"a":1}}"#
        );
        // A known method with bad params is an error, not `Other`.
        assert!(
            serde_json::from_str::<InputRequest>(r#"{"method":"sampling/createMessage"}"#).is_err()
        );
        assert!(
            serde_json::from_str::<InputRequest>(
                r#"{"method":"sampling/createMessage","params":{"messages":[]}}"#
            )
            .is_err()
        );
        let sampling = InputRequest::CreateMessage(CreateMessageRequestParams::new(
            vec![SamplingMessage::text(crate::types::Role::User, "hi")],
            10,
        ));
        assert_eq!(
            serde_json::to_string(&sampling).unwrap(),
            r#"{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}}"#
        );
    }

    #[test]
    fn input_response_parses_per_kind() {
        let res = InputResponse::from(ElicitResult::decline());
        assert_eq!(res.as_value(), &serde_json::json!({ "action": "decline" }));
        assert_eq!(
            res.to_elicit_result().unwrap().action,
            ElicitAction::Decline
        );
        assert!(res.to_create_message_result().is_err());
        assert!(res.to_list_roots_result().is_err());
    }
}
