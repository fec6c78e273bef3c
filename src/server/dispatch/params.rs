//! Reading a request's params: the string members read out of the ones
//! the kernel looks at (`incoming::Fields`, found with the envelope).

use std::sync::Arc;

use serde_json::value::RawValue;

use crate::incoming::Fields;
use crate::jsonrpc::ErrorObject;
use crate::server::Inner;
use crate::server::mrtr::Retry;
use crate::server::request_meta::RequestMeta;

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
    /// `method`, whose request `digest` describes, made with `meta` (whose
    /// token must stand for the principal the state was sealed for);
    /// `None` for a first round.
    pub fn verify(
        &self,
        inner: &Arc<Inner>,
        meta: &RequestMeta,
        method: &str,
        digest: &dyn Fn() -> String,
    ) -> Result<Option<Retry>, ErrorObject> {
        if self.state.is_none() && self.responses.is_none() {
            return Ok(None);
        }
        inner
            .sealer
            .open(self.state.as_deref(), self.responses, method, digest, meta)
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
