//! [`Out`]: the buffer replies are encoded into, a connection's output
//! and a line of its own alike. One type for both, so that each result
//! type's encoder is compiled once; and a write that fits is one bounds
//! check and one copy, small enough to inline into every encoder (a
//! `Vec<u8>`'s is a call per write: 13% more instructions per inline call,
//! BENCHMARKS.md "Who sends, and when").

use std::io::{self, Write};

/// A growable buffer of bytes.
#[derive(Default)]
pub(crate) struct Out {
    /// Bytes `..filled` are written. A boxed slice rather than a `Vec`:
    /// see the module docs.
    buf: Box<[u8]>,
    filled: usize,
}

impl Out {
    /// An empty buffer of `capacity` bytes (it grows past them).
    pub fn with_capacity(capacity: usize) -> Out {
        Out {
            buf: vec![0; capacity.max(1)].into_boxed_slice(),
            filled: 0,
        }
    }

    /// How many bytes are written.
    pub fn len(&self) -> usize {
        self.filled
    }

    /// Whether nothing is written.
    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// How many bytes it holds before it grows.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The bytes written.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.filled]
    }

    /// Forgets what was written, keeping the room.
    pub fn clear(&mut self) {
        self.filled = 0;
    }

    /// Forgets what was written past `len` bytes.
    pub fn truncate(&mut self, len: usize) {
        self.filled = self.filled.min(len);
    }

    /// What was written, as a `Vec` (no copy).
    pub fn into_vec(self) -> Vec<u8> {
        let mut bytes = self.buf.into_vec();
        bytes.truncate(self.filled);
        bytes
    }

    /// Appends `data`.
    #[inline]
    pub fn push(&mut self, data: &[u8]) {
        // The common case, small enough to inline into the encoders.
        match self.buf.get_mut(self.filled..self.filled + data.len()) {
            Some(room) => {
                room.copy_from_slice(data);
                self.filled += data.len();
            }
            None => self.grow(data),
        }
    }

    /// A write that does not fit: the buffer doubles (or more).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, data: &[u8]) {
        let wanted = (self.filled + data.len()).max(2 * self.buf.len());
        let mut grown = std::mem::take(&mut self.buf).into_vec();
        grown.resize(wanted, 0);
        self.buf = grown.into_boxed_slice();
        self.buf[self.filled..self.filled + data.len()].copy_from_slice(data);
        self.filled += data.len();
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
        self.push(data);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_writes_gather_and_a_large_one_grows_the_buffer() {
        let mut out = Out::with_capacity(8);
        out.write_all(b"abc").unwrap();
        out.write_all(b"def").unwrap();
        assert_eq!(out.capacity(), 8);
        out.write_all(&[b'x'; 100]).unwrap();
        assert!(out.capacity() >= 106);
        assert_eq!(&out.as_slice()[..6], b"abcdef");
        out.truncate(3);
        assert_eq!(out.into_vec(), b"abc");
    }
}
