use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::{LOOK, NOTE_EVERY, Publisher, RESYNC_EVERY, publisher_connection, sign, unix_ms};
use crate::note_limiter::NoteLimiter;
use crate::server::change_feed::Change;

impl Publisher {
    /// Sends what is queued, in order, each until Redis took it, and a
    /// resync after the outbox overflowed, one per [`RESYNC_EVERY`] at
    /// most; until the feed is dropped.
    pub(super) fn run(&self, mut connection: Option<redis::Connection>, queue: &Receiver<Vec<u8>>) {
        let resync = serde_json::to_vec(&Change::Reconnected).unwrap_or_default();
        let mut notes = NoteLimiter::new(1, NOTE_EVERY);
        let mut seq = 0;
        let mut resynced: Option<Instant> = None;
        loop {
            let change = match queue.recv_timeout(LOOK) {
                Ok(change) => {
                    self.queued.fetch_sub(change.len(), Ordering::AcqRel);
                    Some(change)
                }
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            // A resync not due yet waits (`overflowed` stays set): the
            // next look, a second at most, sends it.
            if resynced.is_none_or(|at| at.elapsed() >= RESYNC_EVERY)
                && self.overflowed.swap(false, Ordering::AcqRel)
            {
                resynced = Some(Instant::now());
                seq += 1;
                if !self.send(&mut connection, seq, &resync, &mut notes) {
                    return;
                }
            }
            if let Some(change) = change {
                seq += 1;
                if !self.send(&mut connection, seq, &change, &mut notes) {
                    return;
                }
                self.published.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// Publishes `change` as message `seq`, again and again (on a new
    /// connection each time, every second at most) until Redis takes it;
    /// `false` when the feed was dropped first. One whose reply did not
    /// come may have gone out: sent again with the same number, it is
    /// taken once.
    fn send(
        &self,
        connection: &mut Option<redis::Connection>,
        seq: u64,
        change: &[u8],
        notes: &mut NoteLimiter,
    ) -> bool {
        let mut pause = Duration::from_millis(50);
        loop {
            if self.stopped.load(Ordering::Acquire) {
                return false;
            }
            let failed = match connection.as_mut() {
                None => match publisher_connection(&self.client) {
                    Ok(open) => {
                        *connection = Some(open);
                        continue;
                    }
                    Err(e) => e,
                },
                Some(open) => {
                    let message = self.message(seq, change);
                    let done: redis::RedisResult<i64> = redis::cmd("PUBLISH")
                        .arg(&self.channel)
                        .arg(&message)
                        .query(open);
                    match done {
                        Ok(_) => return true,
                        Err(e) => e,
                    }
                }
            };
            // Broken, refused, or silent for `REPLY`: never reused.
            *connection = None;
            if let Some(trace) = self.trace.get() {
                let note = format!(
                    "the change feed cannot publish on channel {:?} (changes wait, and are sent when it can): {}",
                    self.channel,
                    failed.to_string().replace(['\r', '\n'], " ")
                );
                notes.note(&**trace, &note);
            }
            thread::sleep(pause);
            pause = (pause * 2).min(LOOK);
        }
    }

    /// Message `seq` for `change`: the envelope, signed when the replicas
    /// share a key.
    fn message(&self, seq: u64, change: &[u8]) -> Vec<u8> {
        let mut body = format!(
            r#"{{"from":"{}","at":{},"seq":{seq},"change":"#,
            self.replica,
            unix_ms(SystemTime::now())
        )
        .into_bytes();
        body.extend_from_slice(change);
        body.push(b'}');
        match self.key.get() {
            Some(key) => sign(key, &self.channel, &body),
            None => body,
        }
    }
}
