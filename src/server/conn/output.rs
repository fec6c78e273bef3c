//! A connection's output: whole lines into an 8 KiB buffer, and when the
//! buffer goes out.
//!
//! Spec 2026-07-28 basic/transports/stdio: messages are delimited by
//! newlines and stdout carries nothing but MCP messages. [`Output::write_line`]
//! is the only code that writes to a connection's output: one message, then
//! its newline, and nothing at all after the first failed write.
//!
//! Flushing is grouped. A worker or a publisher that wrote leaves the flush
//! to the next thread waiting for the connection's lock, if there is one
//! ([`Output::flush_unless_followed`]), and the last holder of a run pays it
//! (`ConnGuard`'s drop): under load one `write(2)` carries many replies. The
//! reader leaves what it wrote unflushed until its input has no complete
//! line left ([`Output::flush`] from `reader`), as the floor does.

use std::io::{self, BufWriter, Write};

/// One connection's output.
pub(crate) struct Output {
    /// `None` once closed: nothing more is written.
    out: Option<BufWriter<Box<dyn Write + Send>>>,
    /// The first failed write; after it nothing more is written.
    error: Option<io::Error>,
    /// Lines are in the buffer that no flush has sent yet.
    unflushed: bool,
    /// A writer left its flush to the thread behind it at the lock.
    pub(super) flush_owed: bool,
}

impl Output {
    pub fn new(writer: Box<dyn Write + Send>) -> Output {
        Output {
            out: Some(BufWriter::with_capacity(8 * 1024, writer)),
            error: None,
            unflushed: false,
            flush_owed: false,
        }
    }

    /// Writes one message with `body`, then its newline. After a failed
    /// write, or once closed, nothing more is written. Returns whether
    /// this write is the one that failed.
    pub fn write_line(&mut self, body: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> bool {
        if self.error.is_some() {
            return false;
        }
        let Some(out) = self.out.as_mut() else {
            return false;
        };
        self.unflushed = true;
        match body(out).and_then(|()| out.write_all(b"\n")) {
            Ok(()) => false,
            Err(e) => {
                self.error = Some(e);
                true
            }
        }
    }

    /// Sends what is buffered. Returns whether this flush is the one that
    /// failed.
    pub fn flush(&mut self) -> bool {
        self.flush_owed = false;
        if !std::mem::take(&mut self.unflushed) || self.error.is_some() {
            return false;
        }
        match self.out.as_mut().map(Write::flush) {
            Some(Err(e)) => {
                self.error = Some(e);
                true
            }
            _ => false,
        }
    }

    /// Flushes now when no other thread waits for the lock (`lockers`
    /// counts the holder too); otherwise the flush is owed, and the last
    /// holder of the run pays it.
    pub fn flush_unless_followed(&mut self, lockers: usize) -> bool {
        if lockers <= 1 {
            self.flush()
        } else {
            self.flush_owed = self.unflushed;
            false
        }
    }

    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Flushes and closes the output (the peer sees its end): the first
    /// write error, if any.
    pub fn close(&mut self) -> Option<io::Error> {
        self.flush();
        self.out = None;
        self.error.take()
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
    fn lines_go_out_whole_and_nothing_after_close() {
        let flushed = Flushed::default();
        let mut output = Output::new(Box::new(flushed.clone()));
        output.write_line(|out| out.write_all(b"one"));
        assert!(flushed.0.lock().unwrap().is_empty(), "buffered");
        assert!(!output.flush_unless_followed(2));
        assert!(output.flush_owed, "left to the thread behind");
        output.flush_unless_followed(1);
        assert_eq!(*flushed.0.lock().unwrap(), b"one\n");
        assert!(output.close().is_none());
        output.write_line(|out| out.write_all(b"after close"));
        output.flush();
        assert_eq!(*flushed.0.lock().unwrap(), b"one\n");
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
        let mut output = Output::new(Box::new(Broken));
        assert!(!output.write_line(|out| out.write_all(b"buffered")));
        assert!(output.flush(), "this flush failed");
        assert!(!output.write_line(|out| out.write_all(b"x")));
        assert!(output.failed());
        assert_eq!(
            output.close().map(|e| e.kind()),
            Some(io::ErrorKind::BrokenPipe)
        );
    }
}
