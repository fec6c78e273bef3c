use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use super::{
    Envelope, FRESH, Heard, LOOK, QUIET, REPLY, STALE_RESYNC_EVERY, Subscriber, unix_ms, verify,
};
use crate::note_limiter::NoteLimiter;
use crate::server::change_feed::Change;

impl Subscriber<'_> {
    /// Delivers what the other replicas publish until the feed is
    /// dropped; subscribes again when the connection broke or went silent,
    /// and then delivers [`Change::Reconnected`].
    pub(super) fn run(&self, deliver: &(dyn Fn(Change) + Send + Sync)) {
        let mut heard = Heard::new();
        let mut subscribed_before = false;
        while !self.stopped.load(Ordering::Acquire) {
            let Ok(mut connection) = self.client.get_connection_with_timeout(LOOK) else {
                thread::sleep(LOOK);
                continue;
            };
            // Every wait is bounded, the subscription's answer included: a
            // silent network must not hold this thread.
            if connection.set_read_timeout(Some(REPLY)).is_err()
                || connection.set_write_timeout(Some(REPLY)).is_err()
            {
                thread::sleep(LOOK);
                continue;
            }
            let mut pubsub = connection.as_pubsub();
            if pubsub.subscribe(self.channel).is_err()
                || pubsub.set_read_timeout(Some(LOOK)).is_err()
            {
                thread::sleep(LOOK);
                continue;
            }
            if subscribed_before {
                deliver(Change::Reconnected);
            }
            subscribed_before = true;
            self.listen(&mut pubsub, &mut heard, deliver);
        }
    }

    /// Delivers from one subscription until it breaks, goes silent, or the
    /// feed is dropped.
    fn listen(
        &self,
        pubsub: &mut redis::PubSub<'_>,
        heard: &mut Heard,
        deliver: &(dyn Fn(Change) + Send + Sync),
    ) {
        let mut quiet_since = Instant::now();
        while !self.stopped.load(Ordering::Acquire) {
            match pubsub.get_message() {
                Ok(message) => {
                    quiet_since = Instant::now();
                    if let Some(change) = self.open(message.get_payload_bytes(), heard) {
                        deliver(change);
                    }
                }
                Err(e) if e.is_timeout() => {
                    if quiet_since.elapsed() < QUIET {
                        continue;
                    }
                    // Quiet for long: is anyone there? The answer may take
                    // `REPLY`; messages that come first are kept for
                    // `get_message`.
                    let alive = pubsub.set_read_timeout(Some(REPLY)).is_ok()
                        && pubsub.ping::<redis::Value>().is_ok()
                        && pubsub.set_read_timeout(Some(LOOK)).is_ok();
                    if !alive {
                        // Leaving the subscription waits for an answer on
                        // this dead connection: not for long.
                        let _ = pubsub.set_read_timeout(Some(Duration::from_millis(10)));
                        return;
                    }
                    quiet_since = Instant::now();
                }
                // Broken: subscribe again on a new connection.
                Err(_) => return,
            }
        }
    }

    /// The change in a message from another replica: `None` for this
    /// replica's own, for one that does not verify (with a key) or does
    /// not read, and for one taken already (its number is not past the
    /// last from its sender). One stamped more than [`FRESH`] from this
    /// replica's clock is dropped too, but it read (and verified, with a
    /// key), so a change is lost (a replica whose clock is off sends no
    /// other kind): it is [`Change::Reconnected`] here, once per
    /// [`STALE_RESYNC_EVERY`] at most, and the listens hear what it
    /// changed from the store.
    fn open(&self, payload: &[u8], heard: &mut Heard) -> Option<Change> {
        let body = match self.key {
            Some(key) => verify(key, self.channel, payload),
            None => Some(payload),
        };
        let Some(envelope) = body.and_then(|body| serde_json::from_slice::<Envelope>(body).ok())
        else {
            heard.unverified += 1;
            self.note(&mut heard.unverified_notes, &format!(
                "the change feed on channel {:?} dropped a message that {} ({} so far): do all the replicas share one request_state_key (a rotation half done, a typo)? Or something else publishes on the channel",
                self.channel,
                if self.key.is_some() { "does not verify under this replica's key" } else { "this replica, which has no key, cannot read" },
                heard.unverified
            ));
            return None;
        };
        if envelope.from == self.replica {
            return None;
        }
        let now = unix_ms(SystemTime::now());
        let apart = now.abs_diff(envelope.at);
        let fresh = u128::from(apart) <= FRESH.as_millis();
        if !heard.take(&envelope.from, envelope.seq) {
            return None;
        }
        if fresh {
            return Some(envelope.change);
        }
        heard.stale += 1;
        self.note(&mut heard.stale_notes, &format!(
            "the change feed on channel {:?} dropped a message stamped {} s from this replica's clock ({} so far), and reads what it may have changed from the store instead, every {} s at most: are the replicas' clocks more than {} s apart? Or a client of Redis replays old messages",
            self.channel,
            apart / 1000,
            heard.stale,
            STALE_RESYNC_EVERY.as_secs(),
            FRESH.as_secs()
        ));
        if heard
            .stale_resync
            .is_some_and(|at| at.elapsed() < STALE_RESYNC_EVERY)
        {
            return None;
        }
        heard.stale_resync = Some(Instant::now());
        Some(Change::Reconnected)
    }

    fn note(&self, notes: &mut NoteLimiter, text: &str) {
        if let Some(trace) = &self.trace {
            notes.note(&**trace, text);
        }
    }
}
