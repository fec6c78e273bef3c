//! A legacy session the server no longer knows is started again (spec
//! 2025-11-25 basic/transports, "Session Management": a client that gets
//! `404` for a request carrying its session id MUST start a new session
//! by sending a new `InitializeRequest` without a session ID).
//!
//! The carrier keeps what set the session up (`Kept`: the `initialize`
//! params, the last `logging/setLevel`, the resource subscriptions) and,
//! on the first `404`, sends them again: `initialize` (answered here),
//! `notifications/initialized` and the level, and only then adopts the
//! new session id (2025-11-25 basic/lifecycle: the client MUST send
//! `notifications/initialized` after a successful `initialize`, and a
//! server may refuse any request before it). The request that got the
//! `404` is then sent once more, in the new session, and after it the
//! subscriptions ([`Shared::resubscribe`]: up to 10,000 round trips,
//! which no request waits for). One POST starts it; the others, still
//! naming the dead id, get their `404` and wait for it, then find the new
//! one.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::value::RawValue;

use super::exchange::Cursor;
use super::messages::{Answer, answer_to};
use super::{Outgoing, OutgoingParams, Shared, text};
use crate::sync::lock;

/// The most subscriptions kept to set again (the server bounds its own).
const MAX_KEPT: usize = 10_000;

/// What a renewal leaves to the one that started it, to do after its own
/// request: the subscriptions to send again, each one's params.
#[must_use]
pub(super) struct Renewed {
    subscriptions: Vec<String>,
}

/// What set a legacy session up, as sent, to set a new one up the same.
#[derive(Default, Clone)]
pub(super) struct Kept {
    /// The params of the `initialize` that opened it.
    initialize: Option<String>,
    /// The params of the last `logging/setLevel`.
    level: Option<String>,
    /// The URIs subscribed to (and not unsubscribed from, nor refused:
    /// `Shared::unkeep`), each with the
    /// params it was subscribed with.
    subscribed: Vec<(String, String)>,
}

impl Shared {
    /// Keeps what a message of `method` with `params` sets up (module
    /// docs); nothing for any other.
    pub(super) fn keep(
        &self,
        method: Option<&str>,
        params: &Option<&RawValue>,
        read: &OutgoingParams<'_>,
    ) {
        let Some(method) = method else { return };
        let params = || params.map_or_else(|| "{}".to_owned(), |p| p.get().to_owned());
        match method {
            "initialize" => lock(&self.kept).initialize = Some(params()),
            "logging/setLevel" => lock(&self.kept).level = Some(params()),
            "resources/subscribe" | "resources/unsubscribe" => {
                let Some(uri) = text(read.uri) else { return };
                let mut kept = lock(&self.kept);
                kept.subscribed.retain(|(kept, _)| *kept != uri);
                if method == "resources/subscribe" && kept.subscribed.len() < MAX_KEPT {
                    kept.subscribed.push((uri.into_owned(), params()));
                }
            }
            _ => {}
        }
    }

    /// Forgets the `resources/subscribe` `line` that the server refused
    /// or never answered ([`Shared::keep`] kept it as it was sent): a new
    /// session would be asked for it again, and get what the caller was
    /// told it does not have.
    pub(super) fn unkeep(&self, line: &[u8]) {
        let Ok(outgoing) = serde_json::from_slice::<Outgoing<'_>>(line) else {
            return;
        };
        let Some(uri) = text(OutgoingParams::of(&outgoing).uri) else {
            return;
        };
        lock(&self.kept).subscribed.retain(|(kept, _)| *kept != uri);
    }

    /// The session named in `headers` is not known to the server (`404`):
    /// starts a new one, set up as it was, unless another POST did
    /// already. Returns whether a session is now open (or the server
    /// answered `initialize` keeping none), to send the request again in,
    /// with the subscriptions to send again after it (none unless this
    /// call renewed it); `None` leaves the dead id in place for the next
    /// `404` to renew.
    pub(super) fn renew(&self, headers: &[(String, String)]) -> Option<Renewed> {
        static RENEWALS: AtomicU64 = AtomicU64::new(1);
        let (_, gone) = headers.iter().find(|(name, _)| name == "Mcp-Session-Id")?;
        let _one_at_a_time = lock(&self.renewal);
        if self.is_closed() {
            return None;
        }
        let current = lock(&self.session).clone();
        if current.as_deref() != Some(gone.as_str()) {
            return current.is_some().then_some(Renewed {
                subscriptions: Vec::new(),
            });
        }
        let kept = lock(&self.kept).clone();
        let initialize = kept.initialize?;
        self.notes.info(&format!(
            "the server does not know the session {gone} any more (404): starting a new one"
        ));
        // The dead id stays until the new session is set up: a request
        // sent meanwhile names it, gets its `404` and waits here for this
        // renewal, and a renewal that fails leaves the next `404` to try
        // again (with no id, no request would ever get one).
        let round = RENEWALS.fetch_add(1, Ordering::Relaxed);
        let request = |n: usize, method: &str, params: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":"mcp-stdio-renew-{round}-{n}","method":"{method}","params":{params}}}"#
            )
        };
        let mut opened = false;
        lock(&self.renewed).take();
        self.post_quietly(None, &request(0, "initialize", &initialize), |message| {
            if matches!(
                answer_to(message, &format!("\"mcp-stdio-renew-{round}-0\"")),
                Some(Answer::Result)
            ) {
                self.learn_legacy_version(message);
                opened = true;
            }
        });
        // The new session (`None`: the server keeps none now), used by
        // what sets it up, and by everything else only after that.
        let fresh = lock(&self.renewed).take();
        if !opened {
            return None;
        }
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        self.post_quietly(fresh.as_deref(), initialized, |_| {});
        if let Some(params) = &kept.level {
            let line = request(1, "logging/setLevel", params);
            self.post_quietly(fresh.as_deref(), &line, |_| {});
        }
        let mut session = lock(&self.session);
        // Closed meanwhile: `close` marked the client closed before it
        // took the session to end (`Shared::end_session`), and found the
        // dead one; the new one is ended here. Looked at under the
        // session's lock, so a session adopted before `close` took it is
        // ended by `close`.
        if self.is_closed() {
            drop(session);
            if let Some(fresh) = fresh {
                self.delete_session(fresh);
            }
            return None;
        }
        if session.as_deref() == Some(gone.as_str()) {
            *session = fresh;
        }
        Some(Renewed {
            subscriptions: kept.subscribed.into_iter().map(|(_, p)| p).collect(),
        })
    }

    /// Sends again, in the session now open, the subscriptions a renewal
    /// left ([`Renewed`]), one at a time, until the client closes. Its
    /// caller is the one that started the renewal, after its own request:
    /// the renewal's lock is not held, so the requests that waited for the
    /// renewal go at once, not after thousands of round trips. An update
    /// the server sends before its subscription is back is not heard, as
    /// none is while the session is renewed.
    pub(super) fn resubscribe(&self, renewed: Renewed) {
        static ROUNDS: AtomicU64 = AtomicU64::new(1);
        let round = ROUNDS.fetch_add(1, Ordering::Relaxed);
        for (n, params) in renewed.subscriptions.iter().enumerate() {
            if self.is_closed() {
                return;
            }
            let session = lock(&self.session).clone();
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":"mcp-stdio-resubscribe-{round}-{n}","method":"resources/subscribe","params":{params}}}"#
            );
            self.post_quietly(session.as_deref(), &line, |_| {});
        }
    }

    /// POSTs `line` (the carrier's own) with the headers it needs, in
    /// `session` (not the one adopted), and hands what comes back to
    /// `seen`, not to the link.
    fn post_quietly(&self, session: Option<&str>, line: &str, mut seen: impl FnMut(&[u8])) {
        let Ok(outgoing) = serde_json::from_str::<Outgoing<'_>>(line) else {
            return;
        };
        let mut headers = self.headers(&outgoing, &OutgoingParams::of(&outgoing));
        headers.retain(|(name, _)| name != "Mcp-Session-Id");
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id".to_owned(), session.to_owned()));
        }
        let _ = self.exchange(
            "POST",
            line.as_bytes(),
            None,
            &headers,
            &mut Cursor::default(),
            |message| {
                seen(&message);
                true
            },
        );
    }
}
