//! Streamable HTTP: the driver's HTTP link. Not yet written: `--url` is
//! refused with a one-line reason, and the transport's own checks
//! (headers, Origin, sessions, statuses) are to come.

use super::Check;
use super::driver::{Session, Transcript};

pub const CHECKS: &[Check] = &[];

/// Opens a session with an HTTP server.
pub fn connect(url: &str, _headers: &[(String, String)], _transcript: &Transcript) -> Result<Session, String> {
    Err(format!(
        "cannot check {url}: this mcp-stdio checks stdio servers only so far (HTTP is to come)"
    ))
}
