//! A connection's output: whole lines into an 8 KiB buffer in front of the
//! writer. It is part of the connection state (`Conn`), under its lock:
//! lines are written in the order of the changes that wrote them.
//!
//! Spec 2026-07-28 basic/transports/stdio: messages are delimited by
//! newlines and stdout carries nothing but MCP messages.
//! [`Output::write_line`] is the only code that writes to a connection's
//! output: one message, then its newline, and nothing at all after the
//! first failed write.
//!
//! The buffer is sent without the lock, by one thread at a time
//! ([`Output::detach`], `handle::send`): meanwhile the others write into a
//! buffer of their own, which that thread sends next. So a `write(2)`
//! never holds the lock, and the lines still leave in their order.

use std::io::{self, Write};

use crate::server::out::{Detached, Out};

/// The buffer's size.
const BUFFER: usize = 8 * 1024;
/// How much may wait behind a send in progress before writers wait for it:
/// half the buffer, so that the buffer only grows for a large message.
const BACKLOG: usize = BUFFER / 2;

/// One connection's output.
pub(super) struct Output {
    /// `None` once closed: nothing more is written.
    out: Option<Out>,
    /// The buffer that takes the place of the one a send takes out.
    spare: Box<[u8]>,
    /// The first failed write; after it nothing more is written.
    error: Option<io::Error>,
    /// Lines are in the buffer that no flush has sent yet.
    pub unflushed: bool,
    /// A thread is sending without the lock (see the module docs).
    pub sending: bool,
}

impl Output {
    pub fn new(writer: Box<dyn Write + Send>) -> Output {
        Output {
            out: Some(Out::new(BUFFER, writer)),
            spare: vec![0; BUFFER].into_boxed_slice(),
            error: None,
            unflushed: false,
            sending: false,
        }
    }

    /// Writes one message with `body`, then its newline. After a failed
    /// write, or once closed, nothing more is written. Returns whether
    /// this write is the one that failed.
    pub fn write_line(&mut self, body: impl FnOnce(&mut Out) -> io::Result<()>) -> bool {
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

    /// Takes out what is to be sent, and the writer, for the caller to
    /// send without the lock; `None` when nothing is, or another thread
    /// sends already (it sends this too, when it is back).
    pub fn detach(&mut self) -> Option<Detached> {
        // After a failure, or once closed, there is nothing to send.
        if self.sending || !std::mem::take(&mut self.unflushed) || self.error.is_some() {
            return None;
        }
        let detached = self.out.as_mut()?.detach(std::mem::take(&mut self.spare))?;
        self.sending = true;
        Some(detached)
    }

    /// The send of `detached` is over, with `sent`. Returns whether it is
    /// the write that failed.
    pub fn attach(&mut self, detached: Detached, sent: io::Result<()>) -> bool {
        self.sending = false;
        if let Some(out) = self.out.as_mut() {
            let spare = out.attach(detached);
            // A buffer that grew for a large message is not kept.
            self.spare = match spare.len() {
                BUFFER => spare,
                _ => vec![0; BUFFER].into_boxed_slice(),
            };
        }
        match sent {
            Err(e) if self.error.is_none() => {
                self.error = Some(e);
                true
            }
            _ => false,
        }
    }

    /// Whether so much waits behind a send in progress that writers should
    /// wait for it (a client slower than the server's writers).
    pub fn backlogged(&self) -> bool {
        self.sending && self.out.as_ref().is_some_and(|out| out.len() > BACKLOG)
    }

    /// Flushes and closes the output (the peer sees its end): the first
    /// write error, if any. Not while a send is in progress.
    pub fn close(&mut self) -> Option<io::Error> {
        if let Some(mut out) = self.out.take()
            && self.error.is_none()
            && let Err(e) = out.flush()
        {
            self.error = Some(e);
        }
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
    fn lines_go_out_when_flushed_and_nothing_once_closed() {
        let flushed = Flushed::default();
        let mut output = Output::new(Box::new(flushed.clone()));
        output.write_line(|out| out.write_all(b"reply"));
        assert!(flushed.0.lock().unwrap().is_empty(), "buffered");
        let mut detached = output.detach().expect("something to send");
        // Written while the send is in progress: sent next.
        output.write_line(|out| out.write_all(b"next"));
        assert!(output.detach().is_none(), "one send at a time");
        let sent = detached.send();
        assert!(!output.attach(detached, sent));
        assert_eq!(*flushed.0.lock().unwrap(), b"reply\n");
        let mut detached = output.detach().expect("what waited");
        let sent = detached.send();
        output.attach(detached, sent);
        assert_eq!(*flushed.0.lock().unwrap(), b"reply\nnext\n");
        output.write_line(|out| out.write_all(b"last"));
        assert!(output.close().is_none());
        output.write_line(|out| out.write_all(b"after close"));
        assert!(output.detach().is_none());
        assert_eq!(*flushed.0.lock().unwrap(), b"reply\nnext\nlast\n");
    }

    #[test]
    fn writers_wait_only_for_a_backlog_behind_a_send() {
        let mut output = Output::new(Box::new(Flushed::default()));
        let line = [b'x'; 1024];
        for _ in 0..2 * BACKLOG / line.len() {
            output.write_line(|out| out.write_all(&line));
        }
        assert!(
            !output.backlogged(),
            "no send in progress: the buffer went out as it filled"
        );
        let detached = output.detach().unwrap();
        while output.out.as_ref().unwrap().len() <= BACKLOG {
            assert!(!output.backlogged());
            output.write_line(|out| out.write_all(&line));
        }
        assert!(output.backlogged());
        output.attach(detached, Ok(()));
        assert!(!output.backlogged());
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
        let mut detached = output.detach().unwrap();
        let sent = detached.send();
        assert!(output.attach(detached, sent), "this send failed");
        assert!(!output.write_line(|out| out.write_all(b"x")));
        assert!(output.detach().is_none(), "nothing after a failure");
        assert!(!output.unflushed, "and nothing left to send");
        assert_eq!(
            output.close().map(|e| e.kind()),
            Some(io::ErrorKind::BrokenPipe)
        );
    }
}
