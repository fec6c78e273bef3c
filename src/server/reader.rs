//! The reader thread: the only code that touches the input. It reads one
//! line at a time (never more than the maximum line length in memory),
//! classifies it, and sends it to the owner's inbox, taking a credit first
//! so that it stops reading once `queue_limit` lines are in hand.
//!
//! When the owner has no line of the reader's in hand, the line goes to
//! `direct` first (see `serve::direct`): a request for a pooled handler
//! starts there, on this thread, without waking the owner.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use crate::envelope_scan::Envelope;
use crate::incoming::{Incoming, classify};
use crate::jsonrpc::ErrorObject;
use crate::server::event::Event;
use crate::transport::{Line, read_line, too_long_error};

/// How far the reader may read ahead of the owner: at most `lines` lines
/// and, past one line, about `bytes` bytes read but not yet handled.
///
/// Why both: a line count alone lets 256 lines of 4 MiB sit in memory at
/// once. The line credits are a bounded channel (the reader blocks sending,
/// the owner frees one with `try_recv`); the byte count is an atomic the
/// reader waits on, woken by the owner through a one-slot channel, so no
/// wake-up is lost.
pub(crate) struct ReadAhead {
    line_credits: Sender<()>,
    line_returns: Receiver<()>,
    bytes: AtomicUsize,
    byte_limit: usize,
    wake: Sender<()>,
    woken: Receiver<()>,
    /// The reader's large line buffer while it waits for the next line:
    /// the owner frees it if the server goes idle first.
    parked: Mutex<Vec<u8>>,
    /// Lines (and prepared requests) sent to the owner's inbox that it has
    /// not handled yet: a line may skip the inbox only when this is 0.
    in_inbox: AtomicUsize,
}

impl ReadAhead {
    pub fn new(lines: usize, bytes: usize) -> ReadAhead {
        let (line_credits, line_returns) = crossbeam_channel::bounded(lines.max(1));
        let (wake, woken) = crossbeam_channel::bounded(1);
        ReadAhead {
            line_credits,
            line_returns,
            bytes: AtomicUsize::new(0),
            byte_limit: bytes.max(1),
            wake,
            woken,
            parked: Mutex::new(Vec::new()),
            in_inbox: AtomicUsize::new(0),
        }
    }

    /// Owner: a line (or prepared request) from the inbox is handled. Called
    /// while the owner's state is locked, so that a reader that then finds
    /// nothing in the inbox and locks that state sees everything it did.
    pub fn handled(&self) {
        self.in_inbox.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether every line sent to the owner was handled.
    fn owner_has_no_line(&self) -> bool {
        self.in_inbox.load(Ordering::Acquire) == 0
    }

    /// Owner, idle: frees the reader's large buffer if it is parked.
    pub fn free_parked(&self) {
        drop(std::mem::take(&mut *self.parked()));
    }

    fn parked(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reader: waits until another line may be read. `false` when the
    /// owner is gone.
    fn acquire(self: &Arc<Self>) -> bool {
        while self.bytes.load(Ordering::Acquire) > self.byte_limit {
            // The owner holds the other reference; without it nobody
            // frees bytes any more.
            if Arc::strong_count(self) == 1 {
                return false;
            }
            // The owner frees bytes, then wakes us; a wake-up that came
            // before we got here waits in the channel. The timeout only
            // bounds how late a gone owner is noticed.
            let _ = self.woken.recv_timeout(Duration::from_millis(100));
        }
        // Both ends of the credit channel live here, so a send can never
        // fail on its own: poll for a gone owner while it is full.
        loop {
            match self
                .line_credits
                .send_timeout((), Duration::from_millis(100))
            {
                Ok(()) => return true,
                Err(_) if Arc::strong_count(self) > 1 => {}
                Err(_) => return false,
            }
        }
    }

    /// Owner: a line of `bytes` bytes was handled (or its request started).
    pub fn release(&self, bytes: usize) {
        // A credit is held for every line in hand, so one is there to take.
        let _ = self.line_returns.try_recv();
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        // Full means a wake-up is already pending.
        let _ = self.wake.try_send(());
    }
}

/// The reader thread: one classified line at a time into the inbox, or
/// to `direct` when the owner has no line in hand. `direct` gets the line
/// with its bytes counted, and returns `None` when it took care of it
/// (and of its credit), or the event for the owner.
pub(crate) fn read_loop(
    mut reader: Box<dyn io::BufRead + Send>,
    inbox: Sender<Event>,
    ahead: Arc<ReadAhead>,
    max_line: usize,
    trace: &(dyn Fn(&str) + Send + Sync),
    direct: &mut dyn FnMut(Incoming, usize) -> Option<Event>,
) {
    let mut buf = Vec::new();
    loop {
        // Blocks while `queue_limit` lines or `queue_bytes` bytes are in
        // hand: that is the backpressure. `false`: the owner is gone.
        if !ahead.acquire() {
            return;
        }
        let event = match read_line(&mut *reader, &mut buf, max_line) {
            Ok(Line::Message) => Event::Line(classify(&buf), buf.len()),
            Ok(Line::TooLong { len, envelope }) => {
                match too_long_line(envelope, too_long_error(len, max_line)) {
                    Some(incoming) => Event::Line(incoming, 0),
                    None => {
                        trace(&format!(
                            "dropped a notification of {len} bytes: longer than the maximum line length of {max_line} bytes"
                        ));
                        ahead.release(0);
                        continue;
                    }
                }
            }
            Ok(Line::Eof) => Event::Eof,
            Err(e) => {
                trace(&format!("reading input failed: {e}"));
                Event::Eof
            }
        };
        let event = match event {
            Event::Line(incoming, bytes) => {
                ahead.bytes.fetch_add(bytes, Ordering::AcqRel);
                if ahead.owner_has_no_line() {
                    direct(incoming, bytes)
                } else {
                    Some(Event::Line(incoming, bytes))
                }
            }
            other => Some(other),
        };
        if let Some(event) = event {
            let eof = matches!(event, Event::Eof);
            if !eof {
                ahead.in_inbox.fetch_add(1, Ordering::AcqRel);
            }
            if inbox.send(event).is_err() || eof {
                return;
            }
        }
        reuse_or_shrink(&mut buf);
        if buf.capacity() > 1024 * 1024 {
            // Wait for input without it: read_line then finds the same
            // bytes (or the same error) in the reader.
            *ahead.parked() = std::mem::take(&mut buf);
            let _ = reader.fill_buf();
            buf = std::mem::take(&mut *ahead.parked());
        }
    }
}

/// What a line too long to keep stands for, from its envelope: an error
/// for the request (spec 2026-07-28 basic/index: with the request's id
/// whenever it could be read, and the scan reads it wherever it is in the
/// line; `null` only when there was none), a failed answer to one of the
/// server's own requests to a legacy client, or, for a notification,
/// nothing (notifications are never answered).
fn too_long_line(envelope: Envelope, error: ErrorObject) -> Option<Incoming> {
    if envelope.is_response() {
        return Some(Incoming::Response {
            id: envelope.id,
            reply: Err(error),
        });
    }
    if envelope.is_notification() {
        return None;
    }
    Some(Incoming::Invalid {
        id: envelope.id,
        error,
    })
}

/// After a line: keeps a large buffer through a run of large lines, and
/// gives it back at the first line that fills less than a quarter of it.
///
/// A fresh buffer per large line would be new pages to fault in each time,
/// and the freed ones stay resident with the allocator: BENCHMARKS.md
/// measured 1 MiB more peak memory on 1 MiB lines that way.
fn reuse_or_shrink(buf: &mut Vec<u8>) {
    if buf.capacity() > 1024 * 1024 && buf.len() < buf.capacity() / 4 {
        *buf = Vec::with_capacity(64 * 1024);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_buffer_is_kept_through_large_lines_and_given_back_after() {
        let mut buf = vec![b'x'; 1024 * 1024 + 200];
        buf.reserve(1024 * 1024);
        let large = buf.capacity();
        reuse_or_shrink(&mut buf);
        assert_eq!(buf.capacity(), large, "a large line keeps the buffer");
        buf.truncate(100);
        reuse_or_shrink(&mut buf);
        assert_eq!(buf.capacity(), 64 * 1024, "a small line gives it back");
        reuse_or_shrink(&mut buf);
        assert_eq!(buf.capacity(), 64 * 1024, "an ordinary buffer stays");
    }

    #[test]
    fn a_reader_waiting_for_credit_lets_go_when_the_owner_is_gone() {
        let owner = Arc::new(ReadAhead::new(1, 1024));
        let reader = Arc::clone(&owner);
        assert!(reader.acquire());
        // The only credit is in hand: the next acquire waits...
        let waiting = std::thread::spawn(move || reader.acquire());
        // ...until the owner's end goes away, and then says so.
        drop(owner);
        assert!(!waiting.join().unwrap());
    }

    #[test]
    fn the_byte_budget_admits_one_line_then_waits_for_bytes() {
        let owner = Arc::new(ReadAhead::new(10, 100));
        let reader = Arc::clone(&owner);
        assert!(reader.acquire());
        reader.bytes.fetch_add(500, Ordering::AcqRel);
        let (done_tx, done) = crossbeam_channel::bounded(1);
        let waiting = std::thread::spawn(move || {
            let ok = reader.acquire();
            done_tx.send(()).unwrap();
            ok
        });
        // Over budget: no second line until the owner frees the bytes.
        assert!(done.recv_timeout(Duration::from_millis(50)).is_err());
        owner.release(500);
        assert!(waiting.join().unwrap());
    }
}
