//! [`Out`]: what replies are encoded into. A connection's output is one,
//! buffered in front of its writer; a reply encoded on its own (before a
//! lock, or to be rewritten) goes into one that only collects. One type
//! for both, so that each result type's encoder is compiled once and its
//! many small writes are appends to a `Vec`.

use std::io::{self, Write};

/// A buffer in front of a writer (like `std::io::BufWriter`), or a buffer
/// alone that collects one line.
pub(crate) struct Out {
    /// Bytes `..filled` are written and not sent yet. A boxed slice
    /// rather than a `Vec`: a write that fits is one bounds check and one
    /// copy, small enough to inline into every encoder.
    buf: Box<[u8]>,
    filled: usize,
    /// `None`: the buffer collects (and grows), and nothing is sent.
    writer: Option<Box<dyn Write + Send>>,
}

impl Out {
    /// A buffer of `capacity` bytes in front of `writer`.
    pub fn new(capacity: usize, writer: Box<dyn Write + Send>) -> Out {
        Out {
            buf: vec![0; capacity.max(1)].into_boxed_slice(),
            filled: 0,
            writer: Some(writer),
        }
    }

    /// A buffer that collects what is written ([`Out::into_line`]).
    pub fn line() -> Out {
        Out {
            buf: vec![0; 256].into_boxed_slice(),
            filled: 0,
            writer: None,
        }
    }

    /// How many bytes wait in the buffer.
    pub fn len(&self) -> usize {
        self.filled
    }

    /// What a collecting buffer holds.
    pub fn into_line(self) -> Vec<u8> {
        let mut line = self.buf.into_vec();
        line.truncate(self.filled);
        line
    }

    /// A write that does not fit. Sending: the whole lines in the buffer
    /// go first, and the line being written stays; all of it goes too
    /// when it does not fit with `data` (a line longer than the buffer),
    /// and then `data` itself when it is as large as the buffer.
    /// Collecting: the buffer grows.
    #[cold]
    #[inline(never)]
    fn write_past_capacity(&mut self, data: &[u8]) -> io::Result<()> {
        if self.writer.is_none() {
            let wanted = (self.filled + data.len()).max(2 * self.buf.len());
            let mut grown = std::mem::take(&mut self.buf).into_vec();
            grown.resize(wanted, 0);
            self.buf = grown.into_boxed_slice();
        } else {
            self.send_lines()?;
            if self.filled + data.len() > self.buf.len() {
                self.send()?;
                if data.len() >= self.buf.len() {
                    return self.writer.as_mut().map_or(Ok(()), |w| w.write_all(data));
                }
            }
        }
        self.buf[self.filled..self.filled + data.len()].copy_from_slice(data);
        self.filled += data.len();
        Ok(())
    }

    /// Sends the whole lines in the buffer, and keeps the start of the
    /// line being written: so a writer that is itself line-buffered (the
    /// process's stdout) passes each write straight on, in one
    /// `write(2)`, and what reaches the peer ends at a line's end.
    fn send_lines(&mut self) -> io::Result<()> {
        let (Some(writer), Some(last)) = (
            self.writer.as_mut(),
            memchr::memrchr(b'\n', &self.buf[..self.filled]),
        ) else {
            return Ok(());
        };
        let sent = writer.write_all(&self.buf[..=last]);
        self.buf.copy_within(last + 1..self.filled, 0);
        self.filled -= last + 1;
        sent
    }

    /// Takes out the writer and what the buffer holds, to be sent without
    /// the connection's lock ([`Detached::send`]); `spare` becomes the
    /// buffer, which collects (and grows) until [`Out::attach`]. `None`
    /// when there is no writer.
    pub fn detach(&mut self, spare: Box<[u8]>) -> Option<Detached> {
        let writer = self.writer.take()?;
        Some(Detached {
            writer,
            buf: std::mem::replace(&mut self.buf, spare),
            filled: std::mem::take(&mut self.filled),
        })
    }

    /// Puts back the writer of `detached`; returns its buffer, emptied,
    /// for the next [`Out::detach`].
    pub fn attach(&mut self, detached: Detached) -> Box<[u8]> {
        self.writer = Some(detached.writer);
        detached.buf
    }

    /// Sends the buffer to the writer; after an error the buffer is
    /// dropped (the output fails for good, see `conn::output`).
    fn send(&mut self) -> io::Result<()> {
        let Some(writer) = self.writer.as_mut() else {
            return Ok(());
        };
        let sent = writer.write_all(&self.buf[..self.filled]);
        self.filled = 0;
        sent
    }
}

/// A writer and the bytes it is to send, taken out of an [`Out`].
pub(crate) struct Detached {
    writer: Box<dyn Write + Send>,
    buf: Box<[u8]>,
    filled: usize,
}

impl Detached {
    /// Sends the bytes and flushes the writer.
    pub fn send(&mut self) -> io::Result<()> {
        let filled = std::mem::take(&mut self.filled);
        self.writer.write_all(&self.buf[..filled])?;
        self.writer.flush()
    }
}

impl Write for Out {
    #[inline]
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.write_all(data)?;
        Ok(data.len())
    }

    #[inline]
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        // The common case, small enough to inline into the encoders.
        match self.buf.get_mut(self.filled..self.filled + data.len()) {
            Some(room) => {
                room.copy_from_slice(data);
                self.filled += data.len();
                Ok(())
            }
            None => self.write_past_capacity(data),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()?;
        match self.writer.as_mut() {
            Some(writer) => writer.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    struct Shared(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn small_writes_gather_and_a_large_one_goes_straight_through() {
        let writes = Arc::new(Mutex::new(Vec::new()));
        let mut out = Out::new(8, Box::new(Shared(Arc::clone(&writes))));
        out.write_all(b"abc").unwrap();
        out.write_all(b"def").unwrap();
        assert!(writes.lock().unwrap().is_empty(), "6 bytes fit in 8");
        out.write_all(b"ghi").unwrap();
        out.write_all(b"0123456789").unwrap();
        out.write_all(b"j").unwrap();
        out.flush().unwrap();
        assert_eq!(
            *writes.lock().unwrap(),
            [
                b"abcdef".to_vec(),
                b"ghi".to_vec(),
                b"0123456789".to_vec(),
                b"j".to_vec()
            ]
        );
    }

    #[test]
    fn whole_lines_go_out_and_the_line_being_written_stays() {
        let writes = Arc::new(Mutex::new(Vec::new()));
        let mut out = Out::new(8, Box::new(Shared(Arc::clone(&writes))));
        out.write_all(b"ab\ncd").unwrap();
        out.write_all(b"efg").unwrap();
        out.write_all(b"h\n").unwrap();
        out.flush().unwrap();
        assert_eq!(
            *writes.lock().unwrap(),
            [b"ab\n".to_vec(), b"cdefgh\n".to_vec()]
        );
    }

    #[test]
    fn a_line_collects_everything() {
        let mut out = Out::line();
        out.write_all(&[b'x'; 10_000]).unwrap();
        out.flush().unwrap();
        assert_eq!(out.into_line().len(), 10_000);
    }
}
