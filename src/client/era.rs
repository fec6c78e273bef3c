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
//! probe timeout runs from the moment it read the probe. Whether it read
//! is known where the client can see into its stdin pipe (a spawned
//! server, on Linux: `Link::unread`); elsewhere silence counts from the
//! probe, as before.
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

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;

#[cfg(feature = "legacy")]
use serde::Deserialize;
use serde_json::{Value, json};

use crate::client::ClientBuilder;
use crate::client::link::{Delivery, Link};
use crate::client::notes::Notes;
use crate::error::Error;
use crate::jsonrpc::{ErrorObject, error_code};
use crate::jsonrpc::{encode_notification, encode_request};
use crate::types::{DiscoverResult, Implementation, ServerCapabilities, meta_key, method};
#[cfg(feature = "legacy")]
use crate::version::LEGACY_VERSIONS;
use crate::version::SUPPORTED_VERSIONS;

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
pub(crate) fn establish(
    options: &ClientBuilder,
    link: &Arc<Link>,
    deadline: Option<Instant>,
) -> Result<ServerFacts, Unsettled> {
    if options.era == EraPolicy::LegacyOnly {
        #[cfg(not(feature = "legacy"))]
        return Err(Error::Protocol(
            "EraPolicy::LegacyOnly needs the `legacy` feature of mcp-stdio, which this build leaves out".into(),
        ).into());
        #[cfg(feature = "legacy")]
        return Ok(initialize(options, link, deadline)?);
    }
    let probed = match probe(options, link, SUPPORTED_VERSIONS[0], true, deadline) {
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
            let mut facts = initialize(options, link, deadline).map_err(|error| Unsettled {
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

/// `Ok(Ok(facts))`: modern. `Ok(Err(why))`: not modern. `Err`: the
/// connection failed, or a modern server shares no version with us.
fn probe(
    options: &ClientBuilder,
    link: &Arc<Link>,
    version: &str,
    may_retry: bool,
    deadline: Option<Instant>,
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
    let wait = Wait::Probe {
        grace: options.probe_timeout,
        limit: deadline.unwrap_or_else(|| crate::deadline::from_now(options.request_timeout)),
        notes: &options.notes,
        unread: Cell::new(false),
    };
    let reply = match roundtrip(link, method::SERVER_DISCOVER, &params, &wait, true)? {
        Some(reply) => reply,
        None if wait.gave_up_unread() => {
            options.notes.info(&format!(
                "the server has read nothing of its input (server/discover) within {}: it has not started",
                seconds(started.elapsed())
            ));
            return Err(Error::Timeout);
        }
        None => {
            return Ok(Err(NotModern {
                reason: format!(
                    "no answer to server/discover within {}",
                    seconds(options.probe_timeout)
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
                Some(common) if may_retry => retry(options, link, &common, deadline),
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
) -> Result<Result<ServerFacts, NotModern>, Error> {
    let failed = |what: String| {
        Error::Protocol(format!(
            "the server refused the first server/discover with -32022, naming {version}, and {what}: a server that answers -32022 is modern, and is not spoken to with initialize"
        ))
    };
    match probe(options, link, version, false, deadline) {
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

#[cfg(feature = "legacy")]
/// The 2025-11-25 handshake: `initialize`, then `notifications/initialized`.
fn initialize(
    options: &ClientBuilder,
    link: &Arc<Link>,
    deadline: Option<Instant>,
) -> Result<ServerFacts, Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct InitializeResult {
        protocol_version: String,
        #[serde(default)]
        capabilities: ServerCapabilities,
        #[serde(default)]
        server_info: Option<Implementation>,
        #[serde(default)]
        instructions: Option<String>,
    }
    // A legacy server may ask the client things (ping among them) from
    // the handshake on.
    link.answer_server_requests(options.input.clone());
    let params = json!({
        "protocolVersion": LEGACY_VERSIONS[0],
        "capabilities": options.capabilities,
        "clientInfo": options.info,
    });
    // Spec 2025-11-25 basic/utilities/cancellation: `initialize` is never
    // cancelled.
    let timeout = match deadline {
        Some(deadline) => {
            (deadline.saturating_duration_since(Instant::now())).min(options.request_timeout)
        }
        None => options.request_timeout,
    };
    let reply = roundtrip(link, "initialize", &params, &Wait::For(timeout), false)?
        .ok_or(Error::Timeout)?
        .map_err(Error::Rpc)?;
    let result: InitializeResult = serde_json::from_value(reply)?;
    if !LEGACY_VERSIONS.contains(&result.protocol_version.as_str()) {
        return Err(Error::Protocol(format!(
            "the server wants protocol version {}, which this client does not speak",
            result.protocol_version
        )));
    }
    let mut line = Vec::new();
    encode_notification(&mut line, "notifications/initialized", &json!({}))?;
    if !link.send(line) {
        return Err(Error::Disconnected);
    }
    Ok(ServerFacts {
        era: super::Era::Legacy {
            version: result.protocol_version,
        },
        capabilities: result.capabilities,
        info: result.server_info,
        instructions: result.instructions,
        discover: None,
        legacy_reason: None,
    })
}

/// How long a round trip waits for its answer.
enum Wait<'a> {
    /// This long.
    #[cfg_attr(
        not(feature = "legacy"),
        allow(
            dead_code,
            reason = "`initialize`, the one wait of its kind, is legacy"
        )
    )]
    For(Duration),
    /// The probe: `grace` once the server has read it; while it has not
    /// (it is still starting), as long as that takes, up to `limit`.
    /// `unread`: at the last look the server had not read it (looked at
    /// before a cancellation is sent, which the server has not read
    /// either).
    Probe {
        grace: Duration,
        limit: Instant,
        notes: &'a Notes,
        unread: Cell<bool>,
    },
}

/// How often the probe looks whether a server still starting has read it:
/// the most its grace can start late.
const STARTING_LOOK: Duration = Duration::from_millis(100);

impl Wait<'_> {
    /// The first deadline, from `sent`.
    fn first(&self, sent: Instant) -> Instant {
        match self {
            Wait::For(timeout) => crate::deadline::after(sent, *timeout),
            Wait::Probe { grace, limit, .. } => crate::deadline::after(sent, *grace).min(*limit),
        }
    }

    /// The next deadline once `now` passed the last one with no answer, or
    /// `None` to give up.
    fn next(&self, link: &Link, now: Instant) -> Option<Instant> {
        let Wait::Probe {
            grace,
            limit,
            notes,
            unread,
        } = self
        else {
            return None;
        };
        let was_unread = unread.get();
        unread.set(link.unread().is_some_and(|n| n > 0));
        if now >= *limit {
            return None;
        }
        match (was_unread, unread.get()) {
            (false, true) => {
                notes.info(&format!(
                    "the server has not read server/discover after {}: it is still starting; waiting for it",
                    seconds(*grace)
                ));
                Some((now + STARTING_LOOK).min(*limit))
            }
            (true, true) => Some((now + STARTING_LOOK).min(*limit)),
            // Read since the last look: its grace runs from now.
            (true, false) => Some(crate::deadline::after(now, *grace).min(*limit)),
            (false, false) => None,
        }
    }

    /// Whether the server had not read the request when the wait gave up.
    fn gave_up_unread(&self) -> bool {
        matches!(self, Wait::Probe { unread, .. } if unread.get())
    }
}

/// `5 s`, `0.3 s`: to a tenth of a second.
fn seconds(duration: Duration) -> String {
    let tenths = (duration.as_secs_f64() * 10.0).round() / 10.0;
    format!("{tenths} s")
}

/// Sends one request and waits as `wait` says: `None` when no answer came
/// (the request is then forgotten, so a late answer is dropped, and, when
/// `cancel` is set, cancelled with `notifications/cancelled`).
fn roundtrip(
    link: &Arc<Link>,
    method: &str,
    params: &Value,
    wait: &Wait<'_>,
    cancel: bool,
) -> Result<Option<Result<Value, ErrorObject>>, Error> {
    let id = link.next_id();
    let rx = link.register(&id, None, false);
    if !link.send(encode_request(&id, method, params)?) {
        link.forget(&id);
        return Err(Error::Disconnected);
    }
    let sent = Instant::now();
    let mut deadline = wait.first(sent);
    loop {
        return match rx.recv_deadline(deadline) {
            Ok(Delivery::Reply(Ok(raw))) => Ok(Some(Ok(serde_json::from_str(raw.get())?))),
            Ok(Delivery::Reply(Err(Error::Rpc(error)))) => Ok(Some(Err(error))),
            Ok(Delivery::Reply(Err(unreadable))) => Err(unreadable),
            Ok(Delivery::Disconnected) => Err(Error::Disconnected),
            // Nothing asked for these; keep waiting for the answer.
            Ok(Delivery::Progress(..) | Delivery::Log(..)) => continue,
            Err(RecvTimeoutError::Timeout) if let Some(next) = wait.next(link, Instant::now()) => {
                deadline = next;
                continue;
            }
            Err(RecvTimeoutError::Timeout) if !link.forget(&id) && link.is_alive() => {
                // Answered as it timed out: the reader took the request out,
                // and its reply is on its way.
                deadline = crate::deadline::after(std::time::Instant::now(), Duration::MAX);
                continue;
            }
            Err(_) => {
                if cancel {
                    // Spec 2026-07-28 basic/patterns/cancellation: a request
                    // the client stops waiting for SHOULD be cancelled.
                    let mut line = Vec::new();
                    let params = json!({
                        "requestId": id,
                        "reason": format!("no answer within {}", seconds(sent.elapsed())),
                    });
                    if encode_notification(&mut line, method::NOTIFICATION_CANCELLED, &params)
                        .is_ok()
                    {
                        // A dead connection needs no cancellation.
                        let _ = link.send(line);
                    }
                }
                if link.is_alive() {
                    Ok(None)
                } else {
                    Err(Error::Disconnected)
                }
            }
        };
    }
}

/// The newest version this client speaks that is in `theirs`.
fn newest_common(theirs: &[String]) -> Option<String> {
    SUPPORTED_VERSIONS
        .iter()
        .find(|ours| theirs.iter().any(|t| t == *ours))
        .map(|v| v.to_string())
}
