//! Byte streams and line framing: one JSON-RPC message per line.
//!
//! A [`Transport`] is a pair of byte streams, an input to read lines from and
//! an output to write lines to. [`Transport::stdio`] is the common case;
//! [`Transport::new`] takes any pair (a Unix socket, a TCP stream, a child
//! process's pipes) and [`Transport::memory`] makes two connected in-memory
//! ends for tests.
//!
//! Framing rules (spec 2026-07-28 basic/transports/stdio): messages are
//! delimited by `\n` and never contain a raw newline (serde_json's compact
//! encoding escapes newlines inside strings). On input a trailing `\r` is
//! dropped, blank lines are skipped, and so is a UTF-8 byte order mark at
//! the start of a line. A line longer than the configured maximum is
//! consumed and thrown away in pieces, so a 64 MiB line never sits in
//! memory whole; its top-level `id` is still read on the way (see
//! `envelope_scan`), so that the request or the call it stands for gets
//! its answer.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};

use crossbeam_channel::{Receiver, Sender};

use crate::envelope_scan::{Envelope, EnvelopeScan, is_json_whitespace};
use crate::jsonrpc::ErrorObject;

/// The default maximum length of one input line: 16 MiB, on both sides.
///
/// Why this much: the TypeScript SDK accepts lines up to 10 MiB and the
/// Python SDK has no limit, and real messages get large (a reference
/// filesystem server reading a 3 MB file answers with a 6 MB line, its text
/// twice, escaped). Memory stays bounded by the limit: a longer line is
/// never held whole.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// An input and an output byte stream carrying newline-delimited JSON-RPC.
pub struct Transport {
    pub(crate) reader: Box<dyn BufRead + Send>,
    pub(crate) writer: Box<dyn Write + Send>,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport").finish_non_exhaustive()
    }
}

impl Transport {
    /// The process's own stdin and stdout.
    ///
    /// Once a server serves over this transport, nothing else in the process
    /// may write to stdout: it carries only MCP messages.
    pub fn stdio() -> Transport {
        Transport::new(BufReader::new(io::stdin()), io::stdout())
    }

    /// Any pair of byte streams: lines are read from `reader` and written to
    /// `writer`. The writer is buffered by whoever writes to it, so pass it
    /// unbuffered: the write timeout counts what the client took as the
    /// writer's `write` returns, and a buffer of more than 16 KiB hides the
    /// client's pace (behind a full `BufWriter` of 256 KiB a client reading
    /// 100 KiB a second was let go at a write timeout of 1 s:
    /// `slow_client::a_steady_reader_behind_a_large_buf_writer_is_not_let_go`).
    ///
    /// A server writes what it publishes into every connection's output
    /// before the publisher goes on, and the server's worker threads send
    /// it: a peer that stops reading holds up no publisher. Once more than
    /// a megabyte waits for it, each of its subscriptions keeps the latest
    /// event about each thing (a list, a resource, a task), and only once
    /// more than a megabyte is held so do publishers wait for it (what
    /// waits stays bounded). A peer that takes less than 16 KiB of a send in the
    /// write timeout (`ServerBuilder::write_timeout`, 10 s), whether a
    /// publisher waits or not, is let go (its `serve` returns `TimedOut`).
    /// For a server of many
    /// connections, give a
    /// socket a write timeout before handing it over (`set_write_timeout`,
    /// as `serve_http` does): a write that times out ends that connection
    /// only.
    ///
    /// ```no_run
    /// # use std::io::BufReader;
    /// # use std::os::unix::net::UnixStream;
    /// let stream = UnixStream::connect("/tmp/mcp.sock")?;
    /// let transport = mcp_stdio::Transport::new(BufReader::new(stream.try_clone()?), stream);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(
        reader: impl BufRead + Send + 'static,
        writer: impl Write + Send + 'static,
    ) -> Transport {
        Transport {
            reader: Box::new(reader),
            writer: Box::new(writer),
        }
    }

    /// Two connected in-memory ends: what one writes, the other reads.
    /// Dropping an end closes its output, which the other end reads as end
    /// of file.
    pub fn memory() -> (Transport, Transport) {
        let (a_out, b_in) = memory_pipe();
        let (b_out, a_in) = memory_pipe();
        (Transport::new(a_in, a_out), Transport::new(b_in, b_out))
    }

    /// Splits the transport into its reader and writer.
    pub fn into_parts(self) -> (Box<dyn BufRead + Send>, Box<dyn Write + Send>) {
        (self.reader, self.writer)
    }
}

/// Makes a one-way in-memory byte pipe.
///
/// Written bytes travel as chunks over an unbounded channel; a test pipe is
/// drained by its reader, so nothing needs a bound here.
pub fn memory_pipe() -> (MemoryWriter, BufReader<MemoryReader>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    (
        MemoryWriter { tx },
        BufReader::new(MemoryReader {
            rx,
            chunk: Vec::new(),
            pos: 0,
        }),
    )
}

/// The writing end of [`memory_pipe`].
#[derive(Debug)]
pub struct MemoryWriter {
    tx: Sender<Vec<u8>>,
}

impl Write for MemoryWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.tx
            .send(buf.to_vec())
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "memory pipe reader is gone"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The reading end of [`memory_pipe`]; end of file once every writer is
/// dropped and all bytes are read.
#[derive(Debug)]
pub struct MemoryReader {
    rx: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl Read for MemoryReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.chunk.len() {
            match self.rx.recv() {
                Ok(chunk) => {
                    self.chunk = chunk;
                    self.pos = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.pos);
        buf[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// `-32600` for a line of `len` bytes over the maximum `max`: how a server
/// answers a request it could not read for its length (and this crate's
/// client, a legacy server's request).
pub(crate) fn too_long_error(len: usize, max: usize) -> ErrorObject {
    ErrorObject::invalid_request(format!(
        "message of {len} bytes exceeds the maximum line length of {max} bytes"
    ))
}

/// The line length past which [`read_line`] reserves the maximum at once.
const GROW_TO_MAX_PAST: usize = 1024 * 1024;

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A non-blank line is in the buffer, without its `\r\n` or `\n`.
    Message,
    /// A line longer than the maximum was read and discarded: how many
    /// bytes it had (more than the maximum), and what its top-level members
    /// said (its id, whether it is a response).
    TooLong { len: usize, envelope: Envelope },
    /// End of input.
    Eof,
}

/// Reads the next non-blank line into `buf` (cleared first), holding at
/// most `max` bytes of it in memory. A longer line is scanned for its
/// envelope as it goes by (see `envelope_scan`), then dropped.
///
/// A final line without a trailing newline counts as a line. A blank line
/// is one of JSON whitespace only (RFC 8259: space, tab, CR, LF); any other
/// byte, a form feed say, makes it a message, which then fails to parse.
pub(crate) fn read_line(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    loop {
        buf.clear();
        let mut too_long: Option<(usize, EnvelopeScan)> = None;
        let mut saw_any = false;
        loop {
            let available = match reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if !saw_any {
                    return Ok(Line::Eof);
                }
                break;
            }
            saw_any = true;
            let (chunk, found_newline) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], true),
                None => (available, false),
            };
            let used = chunk.len() + usize::from(found_newline);
            match &mut too_long {
                Some((total, scan)) => {
                    *total += chunk.len();
                    scan.feed(chunk);
                }
                None if buf.len() + chunk.len() > max => {
                    let mut scan = EnvelopeScan::new();
                    scan.feed(buf);
                    scan.feed(chunk);
                    too_long = Some((buf.len() + chunk.len(), scan));
                    // Release what was kept so far: the line is thrown away.
                    *buf = Vec::new();
                }
                None => {
                    let needed = buf.len() + chunk.len();
                    if needed > buf.capacity() && needed > GROW_TO_MAX_PAST {
                        // A large line: grow straight to the maximum rather
                        // than by doubling. Doubling copies the line into a
                        // buffer twice its size, so a line near the maximum
                        // would briefly hold 1.5 times it; pages of the
                        // reserve that the line never reaches are never
                        // touched, so they cost no memory.
                        buf.reserve_exact(max - buf.len());
                    }
                    buf.extend_from_slice(chunk);
                }
            }
            reader.consume(used);
            if found_newline {
                break;
            }
        }
        if let Some((len, scan)) = too_long {
            let envelope = scan.finish();
            return Ok(Line::TooLong { len, envelope });
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        if buf.starts_with(b"\xEF\xBB\xBF") {
            buf.drain(..3);
        }
        if buf.iter().copied().all(is_json_whitespace) {
            if !saw_any {
                return Ok(Line::Eof);
            }
            continue;
        }
        return Ok(Line::Message);
    }
}

/// A line buffer this large is given back while its reader waits.
#[cfg(feature = "server")]
const LARGE_LINE: usize = 1024 * 1024;

/// Gives back a large line buffer: its reader is about to wait for input.
#[cfg(feature = "server")]
pub(crate) fn give_back_large(buf: &mut Vec<u8>) {
    if buf.capacity() > LARGE_LINE {
        *buf = Vec::new();
    }
}

/// After a line: keeps a large buffer through a run of large lines, and
/// gives it back at the first line that fills less than a quarter of it.
///
/// A fresh buffer per large line would be new pages to fault in each time,
/// and the freed ones stay resident with the allocator: BENCHMARKS.md
/// measured 1 MiB more peak memory on 1 MiB lines that way.
#[cfg(feature = "server")]
pub(crate) fn reuse_or_shrink(buf: &mut Vec<u8>) {
    if buf.capacity() > LARGE_LINE && buf.len() < buf.capacity() / 4 {
        *buf = Vec::with_capacity(64 * 1024);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::RequestId;

    #[cfg(feature = "server")]
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

    fn lines(input: &[u8], max: usize) -> Vec<Result<String, usize>> {
        let mut reader = BufReader::with_capacity(16, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_line(&mut reader, &mut buf, max).unwrap() {
                Line::Message => out.push(Ok(String::from_utf8(buf.clone()).unwrap())),
                Line::TooLong { len, .. } => out.push(Err(len)),
                Line::Eof => return out,
            }
        }
    }

    #[test]
    fn framing() {
        let input = b"\xEF\xBB\xBF{\"a\":1}\r\n\n  \r\n{\"b\":2}\n{\"c\":3}";
        assert_eq!(
            lines(input, 100),
            vec![
                Ok("{\"a\":1}".into()),
                Ok("{\"b\":2}".into()),
                Ok("{\"c\":3}".into())
            ]
        );
    }

    #[test]
    fn long_lines_are_dropped_in_pieces() {
        let mut input = vec![b'x'; 1000];
        input.extend_from_slice(b"\n{}\n");
        assert_eq!(lines(&input, 64), vec![Err(1000), Ok("{}".into())]);
        // Exactly the maximum still fits.
        let mut input = vec![b'y'; 64];
        input.push(b'\n');
        assert_eq!(lines(&input, 64), vec![Ok("y".repeat(64))]);
    }

    #[test]
    fn only_json_whitespace_makes_a_line_blank() {
        assert_eq!(
            lines(b" \t\r\n\x0c\x0c\n\x0b\n", 100),
            vec![Ok("\x0c\x0c".into()), Ok("\x0b".into())]
        );
    }

    #[test]
    fn a_long_line_is_scanned_for_its_id_as_it_goes_by() {
        let line = format!(
            "{{\"result\":{{\"text\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":42}}\n{{}}\n",
            "z".repeat(1000)
        );
        let mut reader = BufReader::with_capacity(16, line.as_bytes());
        let mut buf = Vec::new();
        let Line::TooLong { len, envelope } = read_line(&mut reader, &mut buf, 64).unwrap() else {
            panic!("expected a long line");
        };
        assert_eq!(len, line.len() - 4);
        assert_eq!(envelope.id, Some(RequestId::Number(42)));
        assert!(envelope.is_response());
        assert_eq!(read_line(&mut reader, &mut buf, 64).unwrap(), Line::Message);
    }

    #[test]
    fn memory_pipe_carries_bytes_and_closes() {
        let (mut w, mut r) = memory_pipe();
        w.write_all(b"hello\nworld\n").unwrap();
        drop(w);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 100).unwrap(), Line::Message);
        assert_eq!(buf, b"hello");
        assert_eq!(read_line(&mut r, &mut buf, 100).unwrap(), Line::Message);
        assert_eq!(read_line(&mut r, &mut buf, 100).unwrap(), Line::Eof);
    }
}
