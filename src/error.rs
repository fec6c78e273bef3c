//! The crate's error type.
//!
//! Two planes, as in ureq: the peer answered with a JSON-RPC error
//! ([`Error::Rpc`], its code, message and data kept as sent), or there was no
//! usable answer at all (every other variant).

use std::fmt;
use std::io;

use crate::jsonrpc::ErrorObject;

/// Everything that can go wrong in this crate.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The peer answered with a JSON-RPC error.
    Rpc(ErrorObject),
    /// Reading or writing the transport failed, or a thread could not be
    /// started.
    Io(io::Error),
    /// A message could not be encoded or decoded.
    Json(serde_json::Error),
    /// No answer came in time.
    Timeout,
    /// The request was cancelled.
    Cancelled,
    /// The connection closed before an answer came.
    Disconnected,
    /// The peer broke the protocol, or the two sides cannot agree on it
    /// (no common version, an unknown `resultType`, a legacy server when
    /// modern was required); the text says what happened.
    Protocol(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Rpc(e) => write!(f, "the peer answered with an error: {e}"),
            Error::Io(e) => write!(f, "transport i/o failed: {e}"),
            Error::Json(e) => write!(f, "invalid json: {e}"),
            Error::Timeout => f.write_str("no answer within the timeout"),
            Error::Cancelled => f.write_str("the request was cancelled"),
            Error::Disconnected => f.write_str("the connection closed"),
            Error::Protocol(what) => write!(f, "protocol error: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Rpc(e) => Some(e),
            Error::Io(e) => Some(e),
            Error::Json(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error::Json(e)
    }
}

impl From<ErrorObject> for Error {
    fn from(e: ErrorObject) -> Error {
        Error::Rpc(e)
    }
}
