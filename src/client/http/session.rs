//! A legacy session the server no longer knows is started again (spec
//! 2025-11-25 basic/transports, "Session Management": a client that gets
//! `404` for a request carrying its session id MUST start a new session
//! by sending a new `InitializeRequest` without a session ID).
//!
//! The carrier keeps what set the session up (`Kept`: the `initialize`
//! params, the last `logging/setLevel`, the resource subscriptions) and,
//! on the first `404`, sends them again: `initialize` (answered here, the
//! new session id adopted as any), `notifications/initialized`, the level
//! and the subscriptions. The request that got the `404` is then sent once
//! more, in the new session. One POST starts it; the others that got a
//! `404` for the same session meanwhile find the new one.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::value::RawValue;

use super::exchange::Cursor;
use super::messages::{Answer, answer_to};
use super::{Outgoing, OutgoingParams, Shared, text};
use crate::sync::lock;

/// The most subscriptions kept to set again (the server bounds its own).
const MAX_KEPT: usize = 10_000;

/// What set a legacy session up, as sent, to set a new one up the same.
#[derive(Default, Clone)]
pub(super) struct Kept {
    /// The params of the `initialize` that opened it.
    initialize: Option<String>,
    /// The params of the last `logging/setLevel`.
    level: Option<String>,
    /// The URIs subscribed to (and not unsubscribed from), each with the
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

    /// The session named in `headers` is not known to the server (`404`):
    /// starts a new one, set up as it was, unless another POST did
    /// already. Returns whether a session is now open (or the server
    /// answered `initialize` keeping none), to send the request again in;
    /// `false` leaves the dead id in place for the next `404` to renew.
    pub(super) fn renew(&self, headers: &[(String, String)]) -> bool {
        static RENEWALS: AtomicU64 = AtomicU64::new(1);
        let Some((_, gone)) = headers.iter().find(|(name, _)| name == "Mcp-Session-Id") else {
            return false;
        };
        let _one_at_a_time = lock(&self.renewal);
        if self.is_closed() {
            return false;
        }
        let current = lock(&self.session).clone();
        if current.as_deref() != Some(gone.as_str()) {
            return current.is_some();
        }
        let kept = lock(&self.kept).clone();
        let Some(initialize) = kept.initialize else {
            return false;
        };
        self.notes.info(&format!(
            "the server does not know the session {gone} any more (404): starting a new one"
        ));
        // The dead id stays until the answer assigns a new one: a request
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
        self.post_quietly(&request(0, "initialize", &initialize), |message| {
            if matches!(
                answer_to(message, &format!("\"mcp-stdio-renew-{round}-0\"")),
                Some(Answer::Result)
            ) {
                self.learn_legacy_version(message);
                opened = true;
            }
        });
        // Closed while the `initialize` was answered (its head assigns the
        // session, whether or not its body was read to the end): the new
        // session is ended here unless `close` took it
        // (`Shared::end_session`).
        if self.is_closed() {
            self.end_session();
            return false;
        }
        if !opened {
            return false;
        }
        {
            // An answer that assigned no session: the server keeps none
            // now, and the dead id is not sent again.
            let mut session = lock(&self.session);
            if session.as_deref() == Some(gone.as_str()) {
                *session = None;
            }
        }
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        self.post_quietly(initialized, |_| {});
        let level = kept.level.iter().map(|params| ("logging/setLevel", params));
        let subscribed =
            (kept.subscribed.iter()).map(|(_, params)| ("resources/subscribe", params));
        for (n, (method, params)) in level.chain(subscribed).enumerate() {
            self.post_quietly(&request(n + 1, method, params), |_| {});
        }
        true
    }

    /// POSTs `line` (the carrier's own) with the headers it needs, and
    /// hands what comes back to `seen`, not to the link.
    fn post_quietly(&self, line: &str, mut seen: impl FnMut(&[u8])) {
        let Ok(outgoing) = serde_json::from_str::<Outgoing<'_>>(line) else {
            return;
        };
        let headers = self.headers(&outgoing, &OutgoingParams::of(&outgoing));
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
