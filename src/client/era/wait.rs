//! One round trip of the era's settling (the probe, `initialize`): the
//! request sent, and its answer waited for as long as the server's state
//! says (`Wait`): a server still starting is waited for, one that exited
//! is not.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use serde_json::{Value, json};

use crate::client::link::{Delivery, Link};
use crate::client::notes::Notes;
use crate::error::Error;
use crate::jsonrpc::ErrorObject;
use crate::jsonrpc::{encode_notification, encode_request};
use crate::types::method;

/// How long a round trip waits for its answer.
pub(super) enum Wait<'a> {
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
pub(super) struct Probe<'a> {
    pub(super) grace: Duration,
    pub(super) limit: Instant,
    pub(super) notes: &'a Notes,
    /// Whether the spawned server has exited.
    pub(super) exited: &'a dyn Fn() -> bool,
    pub(super) state: Cell<ProbeState>,
}

/// What the probe's looks saw.
#[derive(Clone, Copy)]
pub(super) struct ProbeState {
    pub(super) sent: Instant,
    /// When the server was last seen not to have read the probe: it read
    /// it after that, by the next look. `None`: never seen so (it read it
    /// at once, or its pipe cannot be looked into): the grace runs from
    /// `sent`.
    pub(super) read: Option<Instant>,
    /// At the last look it had not read it (a cancellation sent after
    /// that it has not read either).
    pub(super) unread: bool,
    /// The note on a server still starting was made.
    pub(super) told: bool,
    /// At the last look it had exited: the wait ends at the next one (a
    /// reply it wrote before it exited is given that moment to arrive).
    pub(super) exited: bool,
}

/// How often the probe looks whether the server has read it (or exited):
/// the most its grace can start early.
pub(super) const STARTING_LOOK: Duration = Duration::from_millis(100);

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
    pub(super) fn gave_up_unread(&self) -> bool {
        matches!(self, Wait::Probe(probe) if probe.state.get().unread)
    }

    /// Whether the server had exited when the wait gave up.
    pub(super) fn exited(&self) -> bool {
        match self {
            Wait::For { gone, .. } => gone.get(),
            Wait::Probe(probe) => probe.state.get().exited,
        }
    }

    /// How long the server was given to answer once it read the request
    /// (the wait made, not when the waiting thread woke).
    pub(super) fn silence(&self) -> Duration {
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
pub(super) fn seconds(duration: Duration) -> String {
    let tenths = (duration.as_secs_f64() * 10.0).round() / 10.0;
    format!("{tenths} s")
}

/// Sends one request and waits as `wait` says: `None` when no answer came
/// (the request is then forgotten, so a late answer is dropped, and, when
/// `cancel` is set, cancelled with `notifications/cancelled`).
pub(super) fn roundtrip(
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
