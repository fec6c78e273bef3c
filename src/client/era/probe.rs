//! The modern probe: `server/discover` with a version, what its answer
//! says of the server's era, and the one retry after `-32022` with the
//! newest version in common.

use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::wait::{Probe, ProbeState, Wait, roundtrip, seconds};
use super::{NotModern, ServerFacts};
use crate::client::ClientBuilder;
use crate::client::link::Link;
use crate::error::Error;
use crate::jsonrpc::error_code;
use crate::types::{DiscoverResult, Implementation, meta_key, method};
use crate::version::SUPPORTED_VERSIONS;

/// `Ok(Ok(facts))`: modern. `Ok(Err(why))`: not modern. `Err`: the
/// connection failed, or a modern server shares no version with us.
pub(super) fn probe(
    options: &ClientBuilder,
    link: &Arc<Link>,
    version: &str,
    may_retry: bool,
    deadline: Option<Instant>,
    exited: &dyn Fn() -> bool,
) -> Result<Result<ServerFacts, NotModern>, Error> {
    let answered = |reason: String| NotModern {
        reason,
        unanswered: false,
    };
    let params = json!({ "_meta": {
        meta_key::PROTOCOL_VERSION: version,
        meta_key::CLIENT_INFO: options.info,
        meta_key::CLIENT_CAPABILITIES: options.capabilities,
    }});
    let started = Instant::now();
    let wait = Wait::Probe(Probe {
        grace: options.probe_timeout,
        limit: deadline.unwrap_or_else(|| crate::deadline::from_now(options.request_timeout)),
        notes: &options.notes,
        exited,
        state: Cell::new(ProbeState {
            sent: started,
            read: None,
            unread: false,
            told: false,
            exited: false,
        }),
    });
    let reply = match roundtrip(link, method::SERVER_DISCOVER, &params, &wait, true)? {
        Some(reply) => reply,
        None if wait.gave_up_unread() => {
            if wait.exited() {
                // Not starting: gone, and nothing reads its input (a child
                // of it holds the pipe). The caller says how it exited.
                return Err(Error::ServerExited {
                    status: None,
                    stderr: Vec::new(),
                });
            }
            options.notes.info(&format!(
                "the server has read nothing of its input (server/discover) within {}: it has not started",
                seconds(started.elapsed())
            ));
            return Err(Error::Timeout);
        }
        // It read the probe and exited without an answer: as a
        // connection that ended under it (`Unsettled::died_on_probe`).
        None if wait.exited() => return Err(Error::Disconnected),
        None => {
            return Ok(Err(NotModern {
                reason: format!(
                    "no answer to server/discover within {}",
                    seconds(wait.silence())
                ),
                unanswered: true,
            }));
        }
    };
    match reply {
        Ok(result) => {
            let Ok(discover) = serde_json::from_value::<DiscoverResult>(result) else {
                return Ok(Err(answered(
                    "its answer to server/discover is not a DiscoverResult".into(),
                )));
            };
            let Some(version) = newest_common(&discover.supported_versions) else {
                return Err(Error::Protocol(format!(
                    "no protocol version in common: the server supports {:?}, this client {:?}",
                    discover.supported_versions, SUPPORTED_VERSIONS
                )));
            };
            let info = discover
                .meta
                .as_ref()
                .and_then(|m| m.get(meta_key::SERVER_INFO))
                .and_then(|v| serde_json::from_value::<Implementation>(v.clone()).ok());
            Ok(Ok(ServerFacts {
                era: super::Era::Modern { version },
                capabilities: discover.capabilities.clone(),
                info,
                instructions: discover.instructions.clone(),
                discover: Some(discover),
                legacy_reason: None,
            }))
        }
        Err(error) if error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION => {
            // A modern server: retry once with a version it named; with
            // none in common, fail (never fall back to initialize).
            let supported: Vec<String> = error
                .data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .unwrap_or_default();
            match newest_common(&supported) {
                Some(common) if may_retry => retry(options, link, &common, deadline, exited),
                Some(_) if supported.iter().any(|v| v == version) => Err(Error::Protocol(format!(
                    "the server refused protocol version {version} (-32022) though it names it among those it supports, {supported:?}"
                ))),
                Some(_) => Err(Error::Protocol(format!(
                    "the server refused protocol version {version} (-32022), which it had named, and now names {supported:?}"
                ))),
                None => Err(Error::Protocol(format!(
                    "no protocol version in common: the server supports {supported:?}, this client {SUPPORTED_VERSIONS:?}"
                ))),
            }
        }
        // The transport failed (a connection refused, an HTTP status of
        // the server's own refusal): no answer, so no era, and nothing a
        // fallback to `initialize` would get past.
        Err(error) if Error::Rpc(error.clone()).is_transport_failure() => Err(Error::Rpc(error)),
        Err(error) => Ok(Err(answered(format!(
            "it answered server/discover with {error}"
        )))),
    }
}

/// The probe once more, with `version`, after the server refused the
/// first with `-32022`: the server is modern, so anything but a
/// `DiscoverResult` fails the connection (never `initialize`), and its
/// end here is no death on the first probe (`Unsettled::died_on_probe`:
/// no new start with `initialize` either).
fn retry(
    options: &ClientBuilder,
    link: &Arc<Link>,
    version: &str,
    deadline: Option<Instant>,
    exited: &dyn Fn() -> bool,
) -> Result<Result<ServerFacts, NotModern>, Error> {
    let failed = |what: String| {
        Error::Protocol(format!(
            "the server refused the first server/discover with -32022, naming {version}, and {what}: a server that answers -32022 is modern, and is not spoken to with initialize"
        ))
    };
    match probe(options, link, version, false, deadline, exited) {
        Ok(Ok(facts)) => Ok(Ok(facts)),
        Ok(Err(why)) => Err(failed(format!(
            "then, asked with {version}: {}",
            why.reason
        ))),
        Err(Error::Disconnected) => Err(failed(format!(
            "then closed the connection when asked with {version}"
        ))),
        Err(e) => Err(e),
    }
}

/// The newest version this client speaks that is in `theirs`.
fn newest_common(theirs: &[String]) -> Option<String> {
    SUPPORTED_VERSIONS
        .iter()
        .find(|ours| theirs.iter().any(|t| t == *ours))
        .map(|v| v.to_string())
}
