//! One HTTP/1.1 exchange on a kept-alive connection: the request written
//! whole, the response's head read, and its body read as it comes, so an
//! SSE stream hands out each event when it arrives.
//!
//! The server side of the crate reads requests (`crate::http`); this is
//! the mirror image for responses, as strict as it needs to be to find
//! where a body ends (`Content-Length`, chunked, or the connection's end)
//! and no stricter: a client cannot answer a bad response with a status.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

use super::stream::Stream;
use super::url::Endpoint;
use crate::http::HttpHeaders;

/// The most a response's head (status line and header fields) may take.
const MAX_HEAD_BYTES: u64 = 64 * 1024;

/// A connection to the server (plain or TLS), buffered for reading.
pub(crate) type Connection = BufReader<Stream>;

/// A response's status line and header fields.
#[derive(Debug)]
pub(crate) struct Head {
    /// The status code.
    pub status: u16,
    /// The header fields.
    pub headers: HttpHeaders,
    framing: Framing,
}

impl Head {
    /// Whether the body is an SSE stream.
    pub fn is_event_stream(&self) -> bool {
        self.headers.get("content-type").is_some_and(|t| {
            t.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
    }

    /// Whether the connection may carry another request after this body.
    pub fn keeps_alive(&self) -> bool {
        !self.headers.lists("connection", "close") && self.framing != Framing::UntilClose
    }
}

/// How a response's body is delimited (RFC 9112 section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// Writes one request: `method` to the endpoint, with `headers` and `body`.
pub(crate) fn write_request(
    stream: &mut Stream,
    method: &str,
    endpoint: &Endpoint,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut out = Vec::with_capacity(256 + body.len());
    write!(
        out,
        "{method} {} HTTP/1.1\r\nHost: {}\r\n",
        endpoint.target, endpoint.host_header
    )?;
    for (name, value) in headers {
        // A value with a line break would smuggle a header in: refused by
        // the caller's encoding; dropped here as a last guard.
        if !value.contains(['\r', '\n']) && !name.contains(['\r', '\n', ':']) {
            write!(out, "{name}: {value}\r\n")?;
        }
    }
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    out.extend_from_slice(body);
    stream.write_all(&out)?;
    stream.flush()
}

/// Reads a response's head, skipping interim `1xx` responses. `Ok(None)`:
/// the connection ended before the response began (a kept-alive
/// connection the server closed meanwhile). Past `deadline` the read
/// fails: a socket's read timeout bounds only its silences, and a server
/// may send interim responses, each in time, for ever, or one line a byte
/// at a time; so each read from the socket may wait only what is left
/// ([`arm`]).
pub(crate) fn read_head(
    conn: &mut Connection,
    head_request: bool,
    deadline: Option<Instant>,
) -> io::Result<Option<Head>> {
    let in_time = || match deadline {
        Some(deadline) if Instant::now() >= deadline => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no final response in time (interim responses only)",
        )),
        _ => Ok(()),
    };
    loop {
        in_time()?;
        let mut budget = MAX_HEAD_BYTES;
        let mut line = String::new();
        if read_line_by(conn, &mut line, &mut budget, deadline)? == 0 {
            return Ok(None);
        }
        let status = line
            .strip_prefix("HTTP/1.")
            .and_then(|rest| rest.get(2..5))
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| invalid(format!("'{}' is not an HTTP status line", line.trim_end())))?;
        let mut headers = HttpHeaders::default();
        loop {
            in_time()?;
            line.clear();
            if read_line_by(conn, &mut line, &mut budget, deadline)? == 0 {
                return Err(invalid(
                    "the connection ended inside a response's header".into(),
                ));
            }
            let field = line.trim_end_matches(['\r', '\n']);
            if field.is_empty() {
                break;
            }
            let (name, value) = field
                .split_once(':')
                .ok_or_else(|| invalid(format!("'{field}' is not a header field")))?;
            headers.push(name.trim().to_owned(), value.trim().to_owned());
        }
        if (100..200).contains(&status) {
            continue;
        }
        let framing = if head_request || status == 204 || status == 304 {
            Framing::Length(0)
        } else if headers.lists("transfer-encoding", "chunked") {
            Framing::Chunked
        } else if let Some(len) = headers.get("content-length") {
            Framing::Length(
                len.parse()
                    .map_err(|_| invalid(format!("Content-Length '{len}' is not a number")))?,
            )
        } else {
            Framing::UntilClose
        };
        return Ok(Some(Head {
            status,
            headers,
            framing,
        }));
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Before a read of `conn` that may wait for the socket (nothing is
/// buffered), sets its read timeout to what is left before `deadline`:
/// a read then waits no longer than that, however the server trickles its
/// bytes; past it, `TimedOut`. Nothing without a deadline. The timeout so
/// set stays after the read: only exchanges with a deadline (a
/// notification's, an answer's, a `DELETE`'s) read with it, each setting
/// it again, and `Shared::write` sets a request's own before its
/// exchange.
fn arm(conn: &Connection, deadline: Option<Instant>) -> io::Result<()> {
    let Some(deadline) = deadline else {
        return Ok(());
    };
    if !conn.buffer().is_empty() {
        return Ok(());
    }
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the answer took longer than its time limit",
        ));
    }
    conn.get_ref().socket().set_read_timeout(Some(left))
}

/// Reads one line into `line`, with its LF, taking at most `*budget`
/// bytes (counted down: a line that reaches it ends there, without its
/// LF), each read from the socket [`arm`]ed for `deadline`. The count
/// read, 0 at the connection's end.
fn read_line_by(
    conn: &mut Connection,
    line: &mut String,
    budget: &mut u64,
    deadline: Option<Instant>,
) -> io::Result<usize> {
    let mut bytes = Vec::new();
    while *budget > 0 {
        arm(conn, deadline)?;
        let buf = conn.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let room = usize::try_from(*budget)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let (used, ended) = match memchr::memchr(b'\n', &buf[..room]) {
            Some(at) => (at + 1, true),
            None => (room, false),
        };
        bytes.extend_from_slice(&buf[..used]);
        conn.consume(used);
        *budget -= used as u64;
        if ended {
            break;
        }
    }
    let read = bytes.len();
    line.push_str(
        std::str::from_utf8(&bytes)
            .map_err(|_| invalid("a response's head or chunk line is not UTF-8".into()))?,
    );
    Ok(read)
}

/// A response's body, decoded from its framing as it is read.
pub(crate) struct Body<'a> {
    conn: &'a mut Connection,
    framing: Framing,
    /// Bytes left in the body (`Length`) or in the current chunk.
    left: u64,
    done: bool,
    /// Past it, a read fails ([`Body::until`]).
    until: Option<Instant>,
}

impl<'a> Body<'a> {
    /// The body that `head` announced, on `conn`.
    pub fn new(conn: &'a mut Connection, head: &Head) -> Body<'a> {
        let left = match head.framing {
            Framing::Length(n) => n,
            _ => 0,
        };
        Body {
            conn,
            framing: head.framing,
            left,
            done: head.framing == Framing::Length(0),
            until: None,
        }
    }

    /// Reading ends at `deadline` (a read then fails, `TimedOut`), however
    /// the server keeps the body going: a socket's read timeout bounds
    /// only its silences, and a stream of keep-alive comments has none;
    /// each read from the socket (a chunk's size line, its data) waits
    /// only what is left ([`arm`]).
    pub fn until(&mut self, deadline: Instant) {
        self.until = Some(deadline);
    }

    /// Whether the body was read to its end (the connection can be used
    /// again).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Reads the end of a chunked body if it has arrived already (it is in
    /// the connection's buffer), never waiting: a stream left after its
    /// answer is usually over by then (the server writes the answer's event
    /// and the last chunk together), and the connection can then be used
    /// again; one that is not is left unread.
    pub fn end_if_arrived(&mut self) {
        const LAST_CHUNK: &[u8] = b"0\r\n\r\n";
        let at_chunk = self.framing == Framing::Chunked && self.left == 0 && !self.done;
        if at_chunk && self.conn.buffer().starts_with(LAST_CHUNK) {
            self.conn.consume(LAST_CHUNK.len());
            self.done = true;
        }
    }

    fn chunk_line(&mut self) -> io::Result<String> {
        let mut line = String::new();
        read_line_by(self.conn, &mut line, &mut 4096, self.until)?;
        if !line.ends_with('\n') {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(line.trim_end().to_owned())
    }
}

impl Read for Body<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.until.is_some_and(|until| Instant::now() >= until) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the answer took longer than its time limit",
            ));
        }
        if self.framing == Framing::Chunked && self.left == 0 {
            let line = self.chunk_line()?;
            let size = line.split(';').next().unwrap_or("").trim();
            self.left = u64::from_str_radix(size, 16)
                .map_err(|_| invalid(format!("'{line}' is not a chunk size")))?;
            if self.left == 0 {
                // The trailer: fields until an empty line, ignored.
                while !self.chunk_line()?.is_empty() {}
                self.done = true;
                return Ok(0);
            }
        }
        let want = match self.framing {
            Framing::UntilClose => buf.len(),
            _ => buf
                .len()
                .min(usize::try_from(self.left).unwrap_or(usize::MAX)),
        };
        arm(self.conn, self.until)?;
        let n = self.conn.read(&mut buf[..want])?;
        if n == 0 {
            if self.framing == Framing::UntilClose {
                self.done = true;
                return Ok(0);
            }
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if self.framing != Framing::UntilClose {
            self.left -= n as u64;
            if self.left == 0 {
                match self.framing {
                    Framing::Length(_) => self.done = true,
                    _ => {
                        if !self.chunk_line()?.is_empty() {
                            return Err(invalid("a chunk is longer than its size says".into()));
                        }
                    }
                }
            }
        }
        Ok(n)
    }
}

/// Reads an SSE stream (WHATWG HTML, "Server-sent events"), handing each
/// message an event's `data` carries to `deliver` (see [`messages_of`]);
/// stops early when `deliver` returns false. Events longer than
/// `max_event` bytes are skipped without being held whole, and so are
/// events with empty data; `id:` and `retry:` fields move `cursor`. A byte
/// order mark before the first line is ignored, as the SSE rules say.
pub(crate) fn read_events(
    body: &mut Body<'_>,
    max_event: usize,
    cursor: &mut Cursor,
    mut deliver: impl FnMut(Vec<u8>) -> bool,
) -> io::Result<()> {
    let mut input = BufReader::new(body);
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    let mut too_long = false;
    let mut line = Vec::new();
    // Room for a field name before a value of `max_event` bytes.
    let cap = max_event.saturating_add(16);
    let mut first = true;
    while let Some(long) = read_line_capped(&mut input, &mut line, cap)? {
        if std::mem::take(&mut first) && line.starts_with(b"\xEF\xBB\xBF") {
            line.drain(..3);
        }
        while line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            // An event with empty data only moves the cursor (the priming
            // event of 2025-11-25 "Resumability and Redelivery").
            let message = has_data && !too_long && !data.trim_ascii().is_empty();
            if message {
                for message in messages_of(std::mem::take(&mut data)) {
                    if !deliver(message) {
                        return Ok(());
                    }
                }
            }
            data.clear();
            has_data = false;
            too_long = false;
            continue;
        }
        let (field, value) = match memchr::memchr(b':', &line) {
            Some(at) => (
                &line[..at],
                line[at + 1..].strip_prefix(b" ").unwrap_or(&line[at + 1..]),
            ),
            None => (&line[..], &b""[..]),
        };
        match field {
            b"data" => {
                too_long |= long || data.len() + usize::from(has_data) + value.len() > max_event;
                if !too_long {
                    if has_data {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(value);
                }
                has_data = true;
            }
            // A field cut short is not what the server sent: ignored.
            _ if long => {}
            // The SSE rules: an id with NUL is ignored, a retry that is
            // not all digits too.
            b"id" if !value.contains(&0) => {
                cursor.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("").parse::<u64>() {
                    cursor.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Reads one line into `line`, without its LF, keeping at most `cap`
/// bytes of it: the rest of a longer line is read and dropped, so a line
/// without end costs no memory. `None` at the end of the stream, else
/// whether the line was longer than `cap`.
fn read_line_capped(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<bool>> {
    line.clear();
    let (mut read, mut long) = (false, false);
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(read.then_some(long));
        }
        read = true;
        let (part, used, ended) = match memchr::memchr(b'\n', buf) {
            Some(at) => (&buf[..at], at + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = cap.saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        long |= part.len() > room;
        input.consume(used);
        if ended {
            return Ok(Some(long));
        }
    }
}

/// The messages an event's data carries, one line each for the link. The
/// LF that joins an event's `data:` lines is whitespace between JSON
/// tokens, and becomes a space; one inside a string (where JSON allows no
/// raw LF) is left, and the link refuses what it splits. A JSON-RPC batch
/// array (2025-03-26 let a server send one) gives each of its elements.
fn messages_of(mut data: Vec<u8>) -> Vec<Vec<u8>> {
    let (mut in_string, mut escaped) = (false, false);
    for byte in &mut data {
        if escaped {
            escaped = false;
            continue;
        }
        match *byte {
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b'\n' if !in_string => *byte = b' ',
            _ => {}
        }
    }
    split_batch(&data).unwrap_or_else(|_| vec![data])
}

/// Each element of a JSON array, or the one message that `text` is.
fn split_batch(text: &[u8]) -> Result<Vec<Vec<u8>>, serde_json::Error> {
    let text = text.trim_ascii();
    if !text.starts_with(b"[") {
        return Ok(vec![text.to_vec()]);
    }
    let items: Vec<&serde_json::value::RawValue> = serde_json::from_slice(text)?;
    Ok(items.iter().map(|m| m.get().as_bytes().to_vec()).collect())
}

/// Where an event stream got to, for a reconnection: the last event id
/// (sent back as `Last-Event-ID`) and the delay the server asked for
/// (SSE `id:` and `retry:` fields).
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    /// The last `id:` seen.
    pub last_id: Option<String>,
    /// The last `retry:` seen.
    pub retry: Option<Duration>,
}

/// Reads a JSON body whole (up to `max` bytes) and splits it into the
/// messages it carries: one object, or each element of a batch array.
pub(crate) fn read_json(body: &mut Body<'_>, max: usize) -> io::Result<Vec<Vec<u8>>> {
    let mut bytes = Vec::new();
    body.take(max as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > max {
        return Err(invalid(format!(
            "a response body is larger than {max} bytes"
        )));
    }
    if bytes.trim_ascii().is_empty() {
        return Ok(Vec::new());
    }
    split_batch(&bytes).map_err(|e| invalid(e.to_string()))
}

#[cfg(test)]
mod tests;
