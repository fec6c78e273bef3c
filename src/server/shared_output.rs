//! A connection's output, shared by its owner and its pool workers, and
//! the gate of each pooled request.
//!
//! A pooled handler's reply (and its progress and log notifications) is
//! written by the worker that ran it, not handed back to the owner: each
//! thread hand-off costs a wake-up, and that one was on the path of every
//! pooled call (BENCHMARKS.md, issue 19). What made "only the owner writes"
//! safe moves under one mutex: every write takes the output's lock, and a
//! pooled request's gate (open while its reply is still wanted) is read
//! and closed only under that same lock. So:
//!
//! - a cancelled request never gets a reply or a notification: the owner
//!   closes its gate under the lock, and a worker writes only while
//!   holding the lock with the gate open;
//! - no request gets two replies: the worker that writes the reply closes
//!   the gate in the same step;
//! - a client that reuses an id the moment its reply arrives is never
//!   refused as "already in use": the gate is closed before the reply is
//!   written, and the owner takes a closed gate for a finished request
//!   even before it collects the worker's end (`InFlight::is_busy`).
//!
//! The owner still writes everything else (inline replies, errors,
//! acknowledgments, subscription notifications), under the same lock. And
//! a pooled handler that published events (a tool that announces a change)
//! hands its reply back to the owner (`Event::Reply`): the events are in
//! the owner's inbox ahead of it, so they reach the client before the
//! reply, as an inline handler's do.

use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Whether a pooled request may still write: open from its start until
/// its reply is written or it is cancelled. Read and changed only under
/// the output's lock ([`Locked::close_gate`], [`Locked::is_open`]).
pub(crate) type Gate = Arc<AtomicBool>;

/// A new, open gate.
pub(crate) fn open_gate() -> Gate {
    Arc::new(AtomicBool::new(true))
}

/// The output of one connection.
pub(crate) struct SharedOutput {
    state: Mutex<State>,
}

struct State {
    /// `None` once closed: nothing more is written.
    out: Option<BufWriter<Box<dyn Write + Send>>>,
    /// The first failed write; after it nothing more is written.
    error: Option<io::Error>,
}

/// The output, locked: write, flush, open and close gates.
pub(crate) struct Locked<'a>(MutexGuard<'a, State>);

impl SharedOutput {
    pub fn new(writer: Box<dyn Write + Send>) -> SharedOutput {
        SharedOutput {
            state: Mutex::new(State {
                out: Some(BufWriter::with_capacity(8 * 1024, writer)),
                error: None,
            }),
        }
    }

    pub fn lock(&self) -> Locked<'_> {
        Locked(self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether a write has failed.
    pub fn failed(&self) -> bool {
        self.lock().0.error.is_some()
    }

    /// Flushes, and closes the output (the peer sees the end of it), even
    /// while a stray worker still holds the output: returns the first
    /// write error, if any.
    pub fn close(&self) -> Option<io::Error> {
        let mut locked = self.lock();
        locked.flush();
        locked.0.out = None;
        locked.0.error.take()
    }
}

impl Locked<'_> {
    /// Writes one message with `body`, then its newline. After a failed
    /// write, or once closed, nothing more is written.
    pub fn write_line(&mut self, body: impl FnOnce(&mut dyn Write) -> io::Result<()>) {
        let state = &mut *self.0;
        if state.error.is_some() {
            return;
        }
        let Some(out) = state.out.as_mut() else {
            return;
        };
        let res = body(out).and_then(|()| out.write_all(b"\n"));
        if let Err(e) = res {
            state.error = Some(e);
        }
    }

    /// Writes one encoded message.
    pub fn write(&mut self, line: &[u8]) {
        self.write_line(|out| out.write_all(line));
    }

    pub fn flush(&mut self) {
        let state = &mut *self.0;
        if state.error.is_none()
            && let Some(out) = state.out.as_mut()
            && let Err(e) = out.flush()
        {
            state.error = Some(e);
        }
    }

    pub fn failed(&self) -> bool {
        self.0.error.is_some()
    }

    /// Whether a request with this gate may still write.
    pub fn is_open(&self, gate: &Gate) -> bool {
        gate.load(Ordering::Acquire)
    }

    /// Closes a gate: returns whether it was open (then the caller is the
    /// one that ends the request's writes).
    pub fn close_gate(&self, gate: &Gate) -> bool {
        gate.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::memory_pipe;
    use std::io::Read;

    #[test]
    fn a_closed_gate_writes_nothing_and_close_ends_the_output() {
        let (writer, mut reader) = memory_pipe();
        let output = SharedOutput::new(Box::new(writer));
        let gate = open_gate();
        {
            let mut locked = output.lock();
            assert!(locked.is_open(&gate));
            locked.write(b"one");
            assert!(locked.close_gate(&gate));
            assert!(!locked.close_gate(&gate), "closed once only");
            if locked.is_open(&gate) {
                locked.write(b"never");
            }
        }
        assert!(output.close().is_none());
        output.lock().write(b"after close");
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        assert_eq!(text, "one\n");
    }
}
