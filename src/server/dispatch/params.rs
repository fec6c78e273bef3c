//! Reading a request's params: the members the kernel looks at, found in
//! one pass and borrowed from the line, and the string members read out
//! of them.

use std::ops::Range;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::jsonrpc::ErrorObject;
use crate::server::Inner;
use crate::server::mrtr::Retry;

/// The members of params the kernel looks at, borrowed from the line. One
/// pass over the params finds all of them.
#[derive(Deserialize, Default)]
pub(super) struct Fields<'a> {
    #[serde(
        rename = "_meta",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    pub meta: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    pub name: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    pub arguments: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    pub uri: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    pub cursor: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "crate::incoming::present")]
    pub notifications: Option<&'a RawValue>,
    #[serde(
        rename = "taskId",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    pub task_id: Option<&'a RawValue>,
    #[serde(
        rename = "inputResponses",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    pub input_responses: Option<&'a RawValue>,
    #[serde(
        rename = "requestState",
        borrow,
        default,
        deserialize_with = "crate::incoming::present"
    )]
    pub request_state: Option<&'a RawValue>,
}

/// What makes a request a retry of a multi round-trip request
/// (spec 2026-07-28 basic/patterns/mrtr): its `requestState` and
/// `inputResponses`, as sent. Both are checked before the handler runs.
pub(super) struct RetryFields<'a> {
    state: Option<String>,
    responses: Option<&'a str>,
}

impl<'a> RetryFields<'a> {
    /// Reads them; a `requestState` that is not a string is `-32602`.
    pub fn read(fields: &Fields<'a>) -> Result<RetryFields<'a>, ErrorObject> {
        Ok(RetryFields {
            state: optional_string(fields.request_state, "requestState")?,
            responses: fields.input_responses.map(RawValue::get),
        })
    }

    /// Opens the sealed state and reads the answers of a retry of
    /// `method`, whose request `digest` describes; `None` for a first
    /// round.
    pub fn verify(
        &self,
        inner: &Arc<Inner>,
        method: &str,
        digest: &dyn Fn() -> String,
    ) -> Result<Option<Retry>, ErrorObject> {
        if self.state.is_none() && self.responses.is_none() {
            return Ok(None);
        }
        inner
            .sealer
            .open(self.state.as_deref(), self.responses, method, digest)
            .map(Some)
    }
}

/// A string member that must be there.
pub(super) fn required_string(raw: Option<&RawValue>, name: &str) -> Result<String, ErrorObject> {
    optional_string(raw, name)?
        .ok_or_else(|| ErrorObject::invalid_params(format!("missing {name}")))
}

/// A string member that may be absent or `null`.
pub(super) fn optional_string(
    raw: Option<&RawValue>,
    name: &str,
) -> Result<Option<String>, ErrorObject> {
    match raw {
        None => Ok(None),
        Some(raw) if raw.get() == "null" => Ok(None),
        Some(raw) => serde_json::from_str(raw.get())
            .map(Some)
            .map_err(|_| ErrorObject::invalid_params(format!("{name} must be a string"))),
    }
}

/// The byte range of `part` inside `whole`; `part` is a slice of `whole`.
pub(super) fn span(whole: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}
