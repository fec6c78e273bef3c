use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::{Kept, Sessions, Store, Stream, UnknownSession};
use crate::server::legacy::session::{LegacySession, Subscribed};
use crate::server::request_meta::Owner;

impl Sessions {
    /// Whether session `session_id` is known (a notification names it):
    /// `Err` says it is not.
    pub fn known(&self, session_id: &str, owner: Option<&Owner>) -> Result<(), UnknownSession> {
        self.lock().kept(session_id, owner)?.seen(false);
        Ok(())
    }

    /// Ends a session (`DELETE`): the requests still served under it are
    /// cancelled (nothing could answer their asks any more: a POST that
    /// names the session is `404` from now on), and their responses end
    /// without a reply; its GET stream ends. Returns whether it existed.
    pub fn delete(&self, id: &str, owner: Option<&Owner>) -> bool {
        let mut store = self.lock();
        if store.kept(id, owner).is_err() {
            return false;
        }
        let removed = store.by_id.remove(id);
        if let Some(kept) = &removed {
            kept.forget();
        }
        let existed = removed.is_some();
        let open = store.open.get(id).cloned().unwrap_or_default();
        let stream = store.streams.remove(id);
        drop(store);
        for post in open {
            post.cancel();
        }
        if let Some(stream) = stream {
            stream.body.end_unanswered();
        }
        existed
    }

    /// Session `session_id` did something its client would lose with it
    /// (`Kept::used`): an answer found its ask, a cancellation its request.
    pub(super) fn used(&self, session_id: &str) {
        if let Some(kept) = self.lock().by_id.get_mut(session_id) {
            kept.seen(true);
        }
    }

    /// Stores `session` under `id`: a new one (`given` is `None`), or one a
    /// POST changed from `given`, whose change alone (its level) is made
    /// to the session as stored (which keeps its client capabilities: the
    /// POST may have run without some, see [`Sessions::enter`]; and what
    /// concurrent POSTs changed). Its subscriptions need no storing: every
    /// copy of a session shares one set, changed in place
    /// (`LegacySession::subscribed`). A session deleted meanwhile stays deleted. A new one past the most kept makes
    /// one give way ([`Store::evict`]).
    pub(super) fn store(
        &self,
        id: &str,
        session: &LegacySession,
        given: Option<&Arc<LegacySession>>,
        owner: Option<Owner>,
    ) {
        let mut session = session.clone();
        // No list changes on a POST's stream: they go on the GET stream.
        session.initialized = false;
        let mut store = self.lock();
        let mut forgotten = Vec::new();
        if let Some(given) = given {
            let Some(stored) = store.by_id.get_mut(id) else {
                return;
            };
            // What this POST changed, onto the session as stored now:
            // another POST of the session may have changed it since this
            // one was given it, and its change must hold too.
            let mut merged = LegacySession::clone(&stored.session);
            if session.log_level != given.log_level {
                merged.log_level = session.log_level;
            }
            // Its subscriptions are the stored session's own set, changed
            // in place (`LegacySession::subscribed`): nothing to merge.
            stored.session = Arc::new(merged);
        } else {
            // Its bytes count against the sessions' budget, with its
            // subscriptions to come (a set of its own from here on).
            let fixed = initialize_bytes(&session);
            let mut ended = Vec::new();
            while store.by_id.len() >= self.max || !self.budget.fits(fixed) {
                match store.evict(!self.budget.fits(fixed)) {
                    Some(stream) => ended.extend(stream),
                    None => break,
                }
            }
            forgotten = ended;
            session.subscribed = Arc::new(Mutex::new(Subscribed::charged(&self.budget, fixed)));
            let kept = Kept {
                session: Arc::new(session),
                owner,
                used: false,
                seen: Instant::now(),
            };
            store.by_id.insert(id.to_owned(), kept);
        }
        drop(store);
        // A forgotten session's stream ends, as a deleted one's does.
        for stream in forgotten {
            stream.body.end_unanswered();
        }
    }
}

impl Store {
    /// Session `id`, if it is known to a request whose token stands for
    /// `owner`: a session opened with a token is bound to whom it stood
    /// for (spec 2025-11-25 basic/transports points to the "Session
    /// Hijacking" mitigations: bind the session id to the user; a session
    /// is no credential, every request is authorized on its own), and is
    /// not known to anyone else, a request without a token included. One opened without
    /// a token (or with one that names nobody) is known to any request.
    pub(super) fn kept(
        &mut self,
        id: &str,
        owner: Option<&Owner>,
    ) -> Result<&mut Kept, UnknownSession> {
        match self.by_id.get_mut(id) {
            Some(kept) if Owner::admits(kept.owner.as_ref(), owner) => Ok(kept),
            _ => Err(UnknownSession(id.to_owned())),
        }
    }

    /// Forgets the session that gives way to a new one (issue 47, item 9:
    /// a flood of `initialize` must not push out the sessions in use):
    /// among those with nothing open (no POST, no GET stream), one that
    /// is not live before one that is, the one idle longest first; only
    /// when every session has something open, the one idle longest of
    /// them. Live ([`Kept::used`]): after its `initialize` the session
    /// made a request other than `ping` (so it holds its subscriptions,
    /// its level, or work its client waits on), answered an ask
    /// the server made or cancelled a request it serves, or opened
    /// a GET stream; an `initialize` followed by `ping`s, stray answers or
    /// cancellations, which anyone can send by the thousand, is not. Past
    /// the byte budget (`for_bytes`), among the live (or among the not
    /// live) a session over its share goes before one within it, so the
    /// one that filled the budget gives way, not a small live one; a
    /// session not live still goes before any live one. Returns its
    /// GET stream, to end (`None` when there was none to forget; `Some`
    /// of `None` when the one forgotten had no stream). Its bytes leave
    /// the sessions' budget at once.
    fn evict(&mut self, for_bytes: bool) -> Option<Option<Stream>> {
        let busy = |id: &String| self.open.contains_key(id) || self.streams.contains_key(id);
        // Past the budget, a session over its share goes first among
        // those as live as it: the one that filled it, not a small one.
        let within_share = |kept: &Kept| {
            !for_bytes
                || !(kept.session.subscribed.lock())
                    .unwrap_or_else(PoisonError::into_inner)
                    .over_share()
        };
        let victim = (self.by_id.iter())
            .min_by_key(|(id, kept)| (busy(id), kept.used, within_share(kept), kept.seen))
            .map(|(id, _)| id.clone())?;
        if let Some(kept) = self.by_id.remove(&victim) {
            kept.forget();
        }
        Some(self.streams.remove(&victim))
    }
}

/// The bytes a new session keeps of its `initialize`: its client's
/// capabilities and information, as they would be sent again.
fn initialize_bytes(session: &LegacySession) -> usize {
    let capabilities = serde_json::to_vec(&*session.client_capabilities).map_or(0, |v| v.len());
    let info = serde_json::to_vec(&session.client_info).map_or(0, |v| v.len());
    capabilities + info + session.version.len()
}
