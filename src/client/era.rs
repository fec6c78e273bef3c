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
//! [`STARTING_LOOK`] from the send on, so that a server that reads at 3.5 s
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

/// `Ok(Ok(facts))`: modern. `Ok(Err(why))`: not modern. `Err`: the
/// connection failed, or a modern server shares no version with us.
fn probe(
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

#[cfg(feature = "legacy")]
/// The 2025-11-25 handshake: `initialize`, then `notifications/initialized`.
fn initialize(
    options: &ClientBuilder,
    link: &Arc<Link>,
    deadline: Option<Instant>,
    exited: &dyn Fn() -> bool,
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
    let wait = Wait::For {
        timeout,
        exited,
        end: Cell::new(None),
        gone: Cell::new(false),
    };
    let reply = match roundtrip(link, "initialize", &params, &wait, false)? {
        Some(reply) => reply.map_err(Error::Rpc)?,
        // Gone, though a child of it holds its output open.
        None if wait.exited() => return Err(Error::Disconnected),
        None => return Err(Error::Timeout),
    };
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
    /// `timeout`, or until the next look once the spawned server has
    /// exited (looked at every [`STARTING_LOOK`]).
    #[cfg_attr(
        not(feature = "legacy"),
        allow(
            dead_code,
            reason = "`initialize`, the one wait of its kind, is legacy"
        )
    )]
    For {
        timeout: Duration,
        exited: &'a dyn Fn() -> bool,
        /// `sent` + `timeout`, once sent.
        end: Cell<Option<Instant>>,
        /// It had exited at the last look.
        gone: Cell<bool>,
    },
    /// The probe's wait.
    Probe(Probe<'a>),
}

/// The probe's wait: `grace` from the moment the server read it (cut to
/// half of what is left before `limit` then, when that is less); while it
/// has not read it (it is still starting), as long as that takes, up to
/// `limit`; until the next look once the server has exited.
struct Probe<'a> {
    grace: Duration,
    limit: Instant,
    notes: &'a Notes,
    /// Whether the spawned server has exited.
    exited: &'a dyn Fn() -> bool,
    state: Cell<ProbeState>,
}

/// What the probe's looks saw.
#[derive(Clone, Copy)]
struct ProbeState {
    sent: Instant,
    /// When the server was last seen not to have read the probe: it read
    /// it after that, by the next look. `None`: never seen so (it read it
    /// at once, or its pipe cannot be looked into): the grace runs from
    /// `sent`.
    read: Option<Instant>,
    /// At the last look it had not read it (a cancellation sent after
    /// that it has not read either).
    unread: bool,
    /// The note on a server still starting was made.
    told: bool,
    /// At the last look it had exited: the wait ends at the next one (a
    /// reply it wrote before it exited is given that moment to arrive).
    exited: bool,
}

/// How often the probe looks whether the server has read it (or exited):
/// the most its grace can start early.
const STARTING_LOOK: Duration = Duration::from_millis(100);

impl Wait<'_> {
    /// The first deadline, from `sent`.
    fn first(&self, link: &Link, sent: Instant) -> Instant {
        match self {
            Wait::For { timeout, end, .. } => {
                let last = crate::deadline::after(sent, *timeout);
                end.set(Some(last));
                (sent + STARTING_LOOK).min(last)
            }
            // Looked at soon where it can be, so that the moment of the
            // read is known; else the grace from the send.
            Wait::Probe(probe) if link.unread().is_some() => {
                (sent + STARTING_LOOK).min(probe.limit)
            }
            Wait::Probe(probe) => probe.grace_end(sent),
        }
    }

    /// The next deadline once `now` passed the last one with no answer, or
    /// `None` to give up.
    fn next(&self, link: &Link, now: Instant) -> Option<Instant> {
        let probe = match self {
            Wait::For {
                exited, end, gone, ..
            } => {
                if gone.get() {
                    return None;
                }
                if exited() {
                    // A reply written before the exit has this moment.
                    gone.set(true);
                    return Some(now + STARTING_LOOK);
                }
                let end = end.get().unwrap_or(now);
                return (now < end).then(|| (now + STARTING_LOOK).min(end));
            }
            Wait::Probe(probe) => probe,
        };
        let mut state = probe.state.get();
        let next = probe.look(link, now, &mut state);
        probe.state.set(state);
        next
    }

    /// Whether the server had not read the request when the wait gave up.
    fn gave_up_unread(&self) -> bool {
        matches!(self, Wait::Probe(probe) if probe.state.get().unread)
    }

    /// Whether the server had exited when the wait gave up.
    fn exited(&self) -> bool {
        match self {
            Wait::For { gone, .. } => gone.get(),
            Wait::Probe(probe) => probe.state.get().exited,
        }
    }

    /// How long the server was given to answer once it read the request
    /// (the wait made, not when the waiting thread woke).
    fn silence(&self) -> Duration {
        match self {
            Wait::For { timeout, .. } => *timeout,
            Wait::Probe(probe) => {
                let state = probe.state.get();
                let read = state.read.unwrap_or(state.sent);
                probe.grace_end(read).saturating_duration_since(read)
            }
        }
    }
}

impl Probe<'_> {
    /// The end of the grace for a probe read at `read`: the probe timeout,
    /// or half of what is left before `limit` when that is less (the other
    /// half is `initialize`'s).
    fn grace_end(&self, read: Instant) -> Instant {
        let half = self.limit.saturating_duration_since(read) / 2;
        crate::deadline::after(read, self.grace.min(half))
    }

    /// One look at the server at `now`, past the last deadline: the next
    /// deadline, or `None` to give up.
    fn look(&self, link: &Link, now: Instant, state: &mut ProbeState) -> Option<Instant> {
        if state.exited {
            return None;
        }
        if (self.exited)() {
            state.exited = true;
            state.unread = link.unread().is_some_and(|n| n > 0);
            return Some(now + STARTING_LOOK);
        }
        match link.unread() {
            // Not known: the grace from the send.
            None => Some(self.grace_end(state.sent)).filter(|end| now < *end),
            Some(0) => {
                state.unread = false;
                Some(self.grace_end(state.read.unwrap_or(state.sent))).filter(|end| now < *end)
            }
            Some(_) => {
                state.unread = true;
                state.read = Some(now);
                if now >= self.limit {
                    return None;
                }
                if !state.told && now >= crate::deadline::after(state.sent, self.grace) {
                    state.told = true;
                    self.notes.info(&format!(
                        "the server has not read server/discover after {}: it is still starting; waiting for it",
                        seconds(self.grace)
                    ));
                }
                Some((now + STARTING_LOOK).min(self.limit))
            }
        }
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
    let mut deadline = wait.first(link, sent);
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
