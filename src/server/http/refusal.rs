//! [`Refusal`]: how a request is turned away before it is served (by
//! `guard`'s checks, or `auth`'s): a status, a one-line reason, headers.

use crate::jsonrpc::{ErrorObject, error_code};

/// A refusal: the status, the reason, and headers to send with it.
pub(crate) struct Refusal {
    pub status: u16,
    pub message: String,
    pub headers: Vec<(&'static str, String)>,
    /// The JSON-RPC error of its body: `-32600`, or `-32020` for a header
    /// mirrored from the body that is malformed (`guard::single_fields`).
    pub mismatch: bool,
}

impl Refusal {
    pub(crate) fn new(status: u16, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
            headers: Vec::new(),
            mismatch: false,
        }
    }

    /// The JSON-RPC error of the refusal's body.
    pub fn error(&self) -> ErrorObject {
        match self.mismatch {
            true => ErrorObject::new(
                error_code::HEADER_MISMATCH,
                format!("Header mismatch: {}", self.message),
            ),
            false => ErrorObject::invalid_request(&self.message),
        }
    }
}
