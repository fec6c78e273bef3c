//! Reading a request's body ([`read_body`]), once its head said how it
//! is framed: a `Content-Length`, or chunks (RFC 9112 section 7.1).

use std::io::{self, BufRead};

use super::{
    Ending, Framing, HttpError, HttpRequest, Limits, bad, is_ows, is_timeout, read_line_within,
    too_large,
};

/// Reads the body the head announced into `request.body`.
pub(crate) fn read_body(
    input: &mut dyn BufRead,
    request: &mut HttpRequest,
    limits: &Limits,
) -> Result<(), HttpError> {
    let result = match request.framing {
        Framing::Empty => Ok(()),
        Framing::Length(len) => read_exact(input, &mut request.body, len),
        Framing::Chunked => read_chunked(input, &mut request.body, limits),
    };
    result.map_err(|e| match e {
        HttpError::Io(e) if is_timeout(&e) => {
            HttpError::Status(408, "the request's body did not arrive in time".into())
        }
        HttpError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            bad("the connection ended inside the request's body")
        }
        other => other,
    })
}

/// Reads `len` more bytes of the body onto `body`, which grows as they
/// arrive: a declared length (or chunk size) is a promise, not a size to
/// allocate, so a peer that announces the largest body and sends a byte
/// costs a byte (64 such connections took 256 MiB when the whole length
/// was allocated and zeroed up front).
fn read_exact(input: &mut dyn BufRead, body: &mut Vec<u8>, len: usize) -> Result<(), HttpError> {
    let mut left = len;
    while left > 0 {
        let buf = match input.fill_buf() {
            Ok([]) => return Err(HttpError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(HttpError::Io(e)),
        };
        let take = buf.len().min(left);
        body.extend_from_slice(&buf[..take]);
        input.consume(take);
        left -= take;
    }
    Ok(())
}

/// A chunked body (RFC 9112 section 7.1): sizes in hex, extensions
/// ignored, the trailer read and dropped.
///
/// The chunks' framing (each size line and the line end after its data)
/// is charged to a budget of its own, as large as the body limit (or the
/// head limit, if that is larger): a body within its limit may come in
/// chunks of any size a client streams it in (64 KiB in 16-byte chunks is
/// 24 KiB of framing), and one in chunks too small for its size is `413`.
/// The trailer, header fields after the body, has the head's limit.
fn read_chunked(
    input: &mut dyn BufRead,
    body: &mut Vec<u8>,
    limits: &Limits,
) -> Result<(), HttpError> {
    let mut framing = limits.max_body_bytes.max(limits.max_head_bytes);
    let mut line = Vec::with_capacity(32);
    loop {
        if chunk_line(input, &mut line, &mut framing, limits)? == 0 {
            return Err(HttpError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        // `1*HEXDIG`, whitespace only before an extension's `;` (BWS): a
        // size with whitespace before it, or after it with no extension,
        // is read differently by different parsers (" 2" as 2, as 0, or
        // refused), so a proxy in front could end the body elsewhere.
        let mut parts = line.splitn(2, |&b| b == b';');
        let size = parts.next().unwrap_or(&[]);
        let size = match parts.next() {
            Some(_) => {
                &size[..size
                    .iter()
                    .rposition(|b| !is_ows(*b))
                    .map_or(0, |at| at + 1)]
            }
            None => size,
        };
        let size = std::str::from_utf8(size)
            .ok()
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|s| usize::from_str_radix(s, 16).ok())
            .ok_or_else(|| {
                bad(format!(
                    "'{}' is not a chunk size",
                    String::from_utf8_lossy(&line)
                ))
            })?;
        if size == 0 {
            break;
        }
        if body.len().saturating_add(size) > limits.max_body_bytes {
            return Err(too_large(limits));
        }
        read_exact(input, body, size)?;
        if chunk_line(input, &mut line, &mut framing, limits)? == 0 || !line.is_empty() {
            return Err(bad("a chunk is longer than its size says"));
        }
    }
    // The trailer: fields until an empty line, ignored.
    let mut budget = limits.max_head_bytes;
    loop {
        let read = read_line_within(input, &mut line, &mut budget, Ending::Crlf, || {
            HttpError::Status(
                431,
                "the request line or header fields are larger than this server accepts".into(),
            )
        })?;
        if read == 0 {
            return Err(HttpError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        if line.is_empty() {
            return Ok(());
        }
    }
}

/// One line of a chunked body's framing, charged to `framing`; a line
/// longer than the head limit is refused on its own.
fn chunk_line(
    input: &mut dyn BufRead,
    line: &mut Vec<u8>,
    framing: &mut usize,
    limits: &Limits,
) -> Result<usize, HttpError> {
    let mut budget = (*framing).min(limits.max_head_bytes);
    let read = read_line_within(input, line, &mut budget, Ending::Crlf, || {
        if *framing >= limits.max_head_bytes {
            bad(format!(
                "a chunk size line is longer than {} bytes",
                limits.max_head_bytes
            ))
        } else {
            HttpError::Status(
                413,
                format!(
                    "the request body's chunks are too small for its size: their framing passed this server's limit of {} bytes; send larger chunks",
                    limits.max_body_bytes.max(limits.max_head_bytes)
                ),
            )
        }
    })?;
    *framing -= read;
    Ok(read)
}
