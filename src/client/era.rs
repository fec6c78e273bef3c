//! Which era of the protocol the server speaks
//! (spec 2026-07-28 basic/transports/stdio, "Backward Compatibility";
//! basic/versioning).
//!
//! The probe: `server/discover` with the preferred modern version.
//! A `DiscoverResult` means modern. Any other error, or silence for the
//! probe timeout, means legacy: the `initialize` handshake of 2025-11-25
//! follows. The fallback is not keyed to one error code.
//!
//! Silence counts only once the server has read the probe. A server that
//! has not (a first `npx` or `uvx` run fetches and installs packages before
//! the server runs, which can take longer than the probe timeout) is still
//! starting, and a modern one would be taken for legacy if its silence
//! counted: the probe waits for it up to the start's deadline
//! (`ClientBuilder::start_timeout`, else the request timeout), and its
//! probe timeout runs from the moment it read the probe (looked at every
//! [`STARTING_LOOK`](wait::STARTING_LOOK) from the send on, so that a server that reads at 3.5 s
//! has its 5 s from 3.5 s). Whether it read is known where the client can
//! see into its stdin pipe (a spawned server, on Linux: `Link::unread`);
//! elsewhere silence counts from the probe, as before. A spawned server
//! that exited is not starting, whatever its pipe holds (a child of it may
//! keep the pipe open, unread): the probe gives up on it at the next look.
//!
//! When the start's deadline is near, the probe timeout is cut to half of
//! what is left once the server read it: `initialize` after it gets the
//! other half, and the legacy reason says the wait that was made.
//!
//! `-32022` means a modern server (spec 2026-07-28 basic/transports/stdio,
//! "Backward Compatibility": "Do **not** fall back to `initialize`"), and
//! names the versions it supports: with none in common the connection
//! fails; otherwise the probe is sent once more with the newest common
//! version, and anything but a `DiscoverResult` to that retry (an error, a
//! second `-32022`, silence, the connection's end) fails the connection
//! too, saying what the server did. Never `initialize`, and never a new
//! start with it: only a connection that ends under the first probe counts
//! as a server that exited on the probe (`Unsettled::died_on_probe`).
//!
//! The parts: `probe.rs` the modern probe (`server/discover`, and its one
//! retry after `-32022`), `initialize.rs` the legacy handshake (with
//! `legacy`), `wait.rs` one round trip and how long it waits.

#[cfg(feature = "legacy")]
mod initialize;
mod probe;
mod wait;

use std::sync::Arc;
use std::time::Instant;

use crate::client::ClientBuilder;
use crate::client::link::Link;
use crate::error::Error;
use crate::types::{DiscoverResult, Implementation, ServerCapabilities};
use crate::version::SUPPORTED_VERSIONS;
#[cfg(feature = "legacy")]
use initialize::initialize;
use probe::probe;

/// What the client knows about the server it talks to.
#[derive(Debug, Clone)]
pub(crate) struct ServerFacts {
    pub era: Era,
    pub capabilities: ServerCapabilities,
    pub info: Option<Implementation>,
    pub instructions: Option<String>,
    pub discover: Option<DiscoverResult>,
    /// Why the probe found the server legacy (`Client::legacy_reason`).
    pub legacy_reason: Option<String>,
}

/// Which era the client may speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraPolicy {
    /// Probe with `server/discover`; fall back to `initialize` for a legacy
    /// server (the default).
    #[default]
    Auto,
    /// Modern only: a legacy server is an error that says what it answered.
    ModernOnly,
    /// Legacy only: go straight to `initialize`.
    LegacyOnly,
}

/// The era and protocol version agreed with the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    /// Per-request `_meta`, no handshake (2026-07-28 and later).
    Modern {
        /// The version stamped on every request.
        version: String,
    },
    /// The `initialize` handshake (2025-11-25 and earlier).
    Legacy {
        /// The version the server agreed to.
        version: String,
    },
}

/// Why the era could not be settled: the error, and whether the
/// connection ended under the first `server/discover` probe, unanswered
/// (an older legacy server that crashes on an unknown method), or under
/// the `initialize` that followed a probe it never answered (one that
/// ignores the probe and is left unable to go on: `mcp-server-sqlite` on
/// `mcp` 1.6). Either way the probe is what broke it, and a new start
/// with `initialize` alone may succeed.
#[derive(Debug)]
pub(crate) struct Unsettled {
    pub error: Error,
    pub died_on_probe: bool,
}

/// Why a server is not modern, from its answer to the probe.
struct NotModern {
    /// For the note about the fallback.
    reason: String,
    /// It did not answer at all (within the probe timeout).
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    unanswered: bool,
}

impl From<Error> for Unsettled {
    fn from(error: Error) -> Unsettled {
        Unsettled {
            error,
            died_on_probe: false,
        }
    }
}

/// Works out the era and learns what the server offers, by `deadline`
/// if there is one (`ClientBuilder::start_timeout`): past it the start
/// fails with [`Error::Timeout`].
/// Without the `legacy` feature a legacy server is refused (as
/// [`EraPolicy::ModernOnly`] does), with an error that says why.
/// `exited`: whether the spawned server has exited (`false` when there is
/// no process to look at).
pub(crate) fn establish(
    options: &ClientBuilder,
    link: &Arc<Link>,
    deadline: Option<Instant>,
    exited: &dyn Fn() -> bool,
) -> Result<ServerFacts, Unsettled> {
    if options.era == EraPolicy::LegacyOnly {
        #[cfg(not(feature = "legacy"))]
        return Err(Error::Protocol(
            "EraPolicy::LegacyOnly needs the `legacy` feature of mcp-stdio, which this build leaves out".into(),
        ).into());
        #[cfg(feature = "legacy")]
        return Ok(initialize(options, link, deadline, exited)?);
    }
    let probed = match probe(options, link, SUPPORTED_VERSIONS[0], true, deadline, exited) {
        Ok(probed) => probed,
        Err(Error::Disconnected) => {
            return Err(Unsettled {
                error: Error::Disconnected,
                died_on_probe: true,
            });
        }
        Err(e) => return Err(e.into()),
    };
    match probed {
        Ok(facts) => Ok(facts),
        #[cfg(not(feature = "legacy"))]
        Err(NotModern { reason, .. }) => Err(Error::Protocol(format!(
            "the server does not speak MCP {}: {reason} (a legacy server needs the `legacy` feature of mcp-stdio, which this build leaves out)",
            SUPPORTED_VERSIONS.join(", ")
        ))
        .into()),
        #[cfg(feature = "legacy")]
        Err(NotModern { reason, unanswered }) if options.era == EraPolicy::Auto => {
            options.notes.info(&format!(
                "the server is legacy ({reason}): falling back to initialize"
            ));
            let mut facts = initialize(options, link, deadline, exited).map_err(|error| Unsettled {
                died_on_probe: unanswered && matches!(error, Error::Disconnected),
                error,
            })?;
            facts.legacy_reason = Some(reason);
            Ok(facts)
        }
        #[cfg(feature = "legacy")]
        Err(NotModern { reason, .. }) => Err(Error::Protocol(format!(
            "the server does not speak MCP {}: {reason}",
            SUPPORTED_VERSIONS.join(", ")
        ))
        .into()),
    }
}
