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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    /// Threads waiting for the lock (or holding it): a writer that sees
    /// another behind it leaves the flush to that one (see
    /// [`Locked::flush_unless_followed`]).
    writers: AtomicUsize,
}

struct State {
    /// `None` once closed: nothing more is written.
    out: Option<BufWriter<Box<dyn Write + Send>>>,
    /// The first failed write; after it nothing more is written.
    error: Option<io::Error>,
    /// A writer left its flush to the thread waiting behind it.
    flush_owed: bool,
}

/// The output, locked: write, flush, open and close gates.
pub(crate) struct Locked<'a> {
    state: MutexGuard<'a, State>,
    writers: &'a AtomicUsize,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // The last holder of a run pays the flush an earlier writer left
        // to it (whether or not it wrote itself).
        if self.state.flush_owed && self.writers.load(Ordering::Acquire) == 1 {
            self.flush();
        }
        self.writers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl SharedOutput {
    pub fn new(writer: Box<dyn Write + Send>) -> SharedOutput {
        SharedOutput {
            state: Mutex::new(State {
                out: Some(BufWriter::with_capacity(8 * 1024, writer)),
                error: None,
                flush_owed: false,
            }),
            writers: AtomicUsize::new(0),
        }
    }

    pub fn lock(&self) -> Locked<'_> {
        // Counted before it waits: the holder sees it is followed.
        self.writers.fetch_add(1, Ordering::AcqRel);
        Locked {
            state: self.state.lock().unwrap_or_else(|e| e.into_inner()),
            writers: &self.writers,
        }
    }

    /// Whether a write has failed.
    pub fn failed(&self) -> bool {
        self.lock().state.error.is_some()
    }

    /// Flushes, and closes the output (the peer sees the end of it), even
    /// while a stray worker still holds the output: returns the first
    /// write error, if any.
    pub fn close(&self) -> Option<io::Error> {
        let mut locked = self.lock();
        locked.flush();
        locked.state.out = None;
        locked.state.error.take()
    }
}

impl Locked<'_> {
    /// Writes one message with `body`, then its newline. After a failed
    /// write, or once closed, nothing more is written.
    pub fn write_line(&mut self, body: impl FnOnce(&mut dyn Write) -> io::Result<()>) {
        let state = &mut *self.state;
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

    /// Flushes, unless another thread waits for the lock: then the flush
    /// is owed, and the last holder of the lock in that run pays it when
    /// it lets go (see `Drop`), so the last writer of a burst flushes for
    /// all of them. Under pipelined load this saves a `write` per reply
    /// (BENCHMARKS.md, issue 19).
    pub fn flush_unless_followed(&mut self) {
        if self.writers.load(Ordering::Acquire) <= 1 {
            self.flush();
        } else {
            self.state.flush_owed = true;
        }
    }

    pub fn flush(&mut self) {
        let state = &mut *self.state;
        state.flush_owed = false;
        if state.error.is_none()
            && let Some(out) = state.out.as_mut()
            && let Err(e) = out.flush()
        {
            state.error = Some(e);
        }
    }

    pub fn failed(&self) -> bool {
        self.state.error.is_some()
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

    /// What reached the writer: the bytes flushed so far.
    #[derive(Clone, Default)]
    struct Flushed(Arc<Mutex<Vec<u8>>>);

    impl Write for Flushed {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_flush_left_to_the_next_holder_is_paid_even_if_it_writes_nothing() {
        let flushed = Flushed::default();
        let output = Arc::new(SharedOutput::new(Box::new(flushed.clone())));
        let mut locked = output.lock();
        // Another thread waits for the lock: a cancelled request's worker,
        // say, that will only close its gate.
        let waiter = {
            let output = Arc::clone(&output);
            std::thread::spawn(move || {
                let locked = output.lock();
                locked.close_gate(&open_gate());
            })
        };
        while output.writers.load(Ordering::Acquire) < 2 {
            std::thread::yield_now();
        }
        locked.write(b"reply");
        locked.flush_unless_followed();
        // Still holding the lock: nobody flushed, the waiter owes it.
        assert!(locked.state.flush_owed);
        assert!(flushed.0.lock().unwrap().is_empty(), "left to the waiter");
        drop(locked);
        waiter.join().unwrap();
        assert_eq!(*flushed.0.lock().unwrap(), b"reply\n");
        // Alone, a writer flushes at once.
        let mut locked = output.lock();
        locked.write(b"next");
        locked.flush_unless_followed();
        assert_eq!(*flushed.0.lock().unwrap(), b"reply\nnext\n");
    }
}
