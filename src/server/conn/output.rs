//! A connection's output: whole lines into an 8 KiB buffer, under a lock
//! of its own, and when the buffer goes out.
//!
//! Spec 2026-07-28 basic/transports/stdio: messages are delimited by
//! newlines and stdout carries nothing but MCP messages.
//! [`OutputGuard::write_line`] is the only code that writes to a
//! connection's output: one message, then its newline, and nothing at all
//! after the first failed write.
//!
//! Flushing is grouped. A writer that sees another thread waiting for the
//! output leaves the flush to it ([`OutputGuard::flush_unless_followed`]),
//! and the last holder of such a run pays it when it lets go (`Drop`); a
//! writer leaves it to the reader, too, while the reader has lines in hand
//! (it flushes when it runs out, `ConnHandle::reading`): under load one
//! `write(2)` carries many replies.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::server::out::Out;

/// The output and the count of threads at its lock.
pub(super) struct SharedOutput {
    state: Mutex<Output>,
    /// Threads holding the lock or waiting for it.
    writers: AtomicUsize,
    /// The reader has complete lines in hand, and flushes when it runs out.
    pub reader_busy: AtomicBool,
}

/// One connection's output.
pub(super) struct Output {
    /// `None` once closed: nothing more is written.
    out: Option<Out>,
    /// The first failed write; after it nothing more is written.
    error: Option<io::Error>,
    /// Lines are in the buffer that no flush has sent yet.
    unflushed: bool,
    /// A writer left its flush to the thread behind it at the lock.
    flush_owed: bool,
}

/// The output, locked.
pub(super) struct OutputGuard<'a> {
    state: MutexGuard<'a, Output>,
    shared: &'a SharedOutput,
}

impl SharedOutput {
    pub fn new(writer: Box<dyn Write + Send>) -> SharedOutput {
        SharedOutput {
            state: Mutex::new(Output {
                out: Some(Out::new(8 * 1024, writer)),
                error: None,
                unflushed: false,
                flush_owed: false,
            }),
            writers: AtomicUsize::new(0),
            reader_busy: AtomicBool::new(false),
        }
    }

    pub fn lock(&self) -> OutputGuard<'_> {
        // Counted before it waits: the holder sees it is followed.
        self.writers.fetch_add(1, Ordering::AcqRel);
        OutputGuard {
            state: self.state.lock().unwrap_or_else(PoisonError::into_inner),
            shared: self,
        }
    }
}

impl Drop for OutputGuard<'_> {
    fn drop(&mut self) {
        // The last holder of a run pays the flush an earlier writer left.
        if self.state.flush_owed && self.shared.writers.load(Ordering::Acquire) == 1 {
            self.flush();
        }
        // Uncounted while still holding the lock: the next holder must see
        // whether anyone is behind it, or an owed flush is never paid.
        self.shared.writers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl OutputGuard<'_> {
    /// Writes one message with `body`, then its newline. After a failed
    /// write, or once closed, nothing more is written. Returns whether
    /// this write is the one that failed.
    pub fn write_line(&mut self, body: impl FnOnce(&mut Out) -> io::Result<()>) -> bool {
        let state = &mut *self.state;
        if state.error.is_some() {
            return false;
        }
        let Some(out) = state.out.as_mut() else {
            return false;
        };
        state.unflushed = true;
        match body(out).and_then(|()| out.write_all(b"\n")) {
            Ok(()) => false,
            Err(e) => {
                state.error = Some(e);
                true
            }
        }
    }

    /// Sends what is buffered. Returns whether this flush is the one that
    /// failed.
    pub fn flush(&mut self) -> bool {
        let state = &mut *self.state;
        state.flush_owed = false;
        if !std::mem::take(&mut state.unflushed) || state.error.is_some() {
            return false;
        }
        match state.out.as_mut().map(Write::flush) {
            Some(Err(e)) => {
                state.error = Some(e);
                true
            }
            _ => false,
        }
    }

    /// Flushes now when no other thread waits for the lock and the reader
    /// has no lines in hand. Otherwise the flush is owed to the last holder
    /// of the run, or left to the reader, which flushes when it runs out of
    /// lines: it stores that it did before it takes this lock to flush, so
    /// a writer that saw it busy wrote before that flush.
    pub fn flush_unless_followed(&mut self) -> bool {
        if self.shared.writers.load(Ordering::Acquire) > 1 {
            self.state.flush_owed = self.state.unflushed;
            false
        } else if self.shared.reader_busy.load(Ordering::Acquire) {
            false
        } else {
            self.flush()
        }
    }

    /// Flushes and closes the output (the peer sees its end): the first
    /// write error, if any.
    pub fn close(&mut self) -> Option<io::Error> {
        self.flush();
        self.state.out = None;
        self.state.error.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

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
        // Another thread waits for the lock, and will only look.
        let waiter = {
            let output = Arc::clone(&output);
            std::thread::spawn(move || drop(output.lock()))
        };
        while output.writers.load(Ordering::Acquire) < 2 {
            std::thread::yield_now();
        }
        locked.write_line(|out| out.write_all(b"reply"));
        assert!(!locked.flush_unless_followed());
        assert!(flushed.0.lock().unwrap().is_empty(), "left to the waiter");
        drop(locked);
        waiter.join().unwrap();
        assert_eq!(*flushed.0.lock().unwrap(), b"reply\n");
        // Alone, a writer flushes at once; nothing is written once closed.
        let mut locked = output.lock();
        locked.write_line(|out| out.write_all(b"next"));
        locked.flush_unless_followed();
        assert_eq!(*flushed.0.lock().unwrap(), b"reply\nnext\n");
        assert!(locked.close().is_none());
        locked.write_line(|out| out.write_all(b"after close"));
        locked.flush();
        assert_eq!(*flushed.0.lock().unwrap(), b"reply\nnext\n");
    }

    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }

    #[test]
    fn the_first_failure_is_reported_once_and_kept() {
        let output = SharedOutput::new(Box::new(Broken));
        let mut locked = output.lock();
        assert!(!locked.write_line(|out| out.write_all(b"buffered")));
        assert!(locked.flush(), "this flush failed");
        assert!(!locked.write_line(|out| out.write_all(b"x")));
        assert_eq!(
            locked.close().map(|e| e.kind()),
            Some(io::ErrorKind::BrokenPipe)
        );
    }
}
