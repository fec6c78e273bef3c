//! Reading one HTTP/1.1 request: its head ([`read_head`]: request line and
//! header fields), then its body ([`read_body`]: `Content-Length` or
//! chunked), each within a limit. Split in two so that a request refused
//! on its headers (a wrong path, a bad origin, a body too large) is
//! answered before its body is read, and `Expect: 100-continue` can be
//! honoured in between.
//!
//! Strict where RFC 9112 allows a choice: obsolete line folding, a space
//! before a field's colon, control characters in a value, `Content-Length`
//! and `Transfer-Encoding` together, a transfer coding other than
//! `chunked`, and whitespace around a chunk size (but before an
//! extension's `;`) are all refused; an HTTP/1.0 request with a transfer
//! coding is answered, then its connection closed. Bare LF line endings
//! are accepted in the head, as RFC 9112 section 2.2 allows, not in a
//! chunked body's framing or trailer (section 7.1: CRLF).

use std::io::{self, BufRead};

use super::headers::HttpHeaders;

mod body;
pub(crate) use body::read_body;

/// How much of a request this server reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The request line and header fields (and a chunked body's trailer).
    pub max_head_bytes: usize,
    /// The body, decoded.
    pub max_body_bytes: usize,
}

/// Why a request could not be read.
#[derive(Debug)]
pub(crate) enum HttpError {
    /// The peer sent what this server refuses: answer with this status and
    /// message, then close the connection.
    Status(u16, String),
    /// Reading failed (the peer went away, or was silent too long before
    /// sending anything): close without answering.
    Io(io::Error),
}

/// How a request's body is delimited (RFC 9112 section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body.
    Empty,
    /// `Content-Length` bytes.
    Length(usize),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// One request: its head, and its body once [`read_body`] has read it.
#[derive(Debug)]
pub(crate) struct HttpRequest {
    /// `POST`, `GET`, ... (case-sensitive, RFC 9110 section 9.1).
    pub method: String,
    /// The request target as sent (origin form: `/mcp?x=1`).
    pub target: String,
    /// HTTP/1.0 (no keep-alive unless asked, no chunked responses).
    pub http10: bool,
    /// The header fields.
    pub headers: HttpHeaders,
    /// How the body is framed.
    pub framing: Framing,
    /// The body (empty until read).
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The target's path, without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// Whether the connection stays open after the response (RFC 9112
    /// section 9.3). Never after an HTTP/1.0 request with a transfer
    /// coding (section 6.1: its framing is taken as faulty, "and close the
    /// connection after processing the message"): an HTTP/1.0
    /// intermediary in front knows no chunked, and may have taken the
    /// chunks for the next request.
    pub fn keep_alive(&self) -> bool {
        if self.headers.lists("connection", "close")
            || (self.http10 && self.framing == Framing::Chunked)
        {
            return false;
        }
        !self.http10 || self.headers.lists("connection", "keep-alive")
    }

    /// Whether the client waits for `100 Continue` before it sends the
    /// body (RFC 9110 section 10.1.1).
    pub fn expects_continue(&self) -> bool {
        !self.http10
            && self.framing != Framing::Empty
            && self
                .headers
                .get("expect")
                .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    }
}

fn bad(message: impl Into<String>) -> HttpError {
    HttpError::Status(400, message.into())
}

/// What a header field costs the head's limit besides its bytes: its place
/// among the fields and its two strings, about as much kept however short
/// the field. Without it a head of `a:` lines (3 bytes each) held over 5,000
/// fields, half a MiB, within a limit of 16 KiB (review http8,
/// `http_hostile::many_tiny_header_fields_cost_memory_in_proportion_to_their_bytes`);
/// with it, at most a few hundred.
const FIELD_COST: usize = 64;

/// Reads a request's head. `Ok(None)`: the connection ended (or stayed
/// silent past its read timeout) before a request began.
pub(crate) fn read_head(
    input: &mut dyn BufRead,
    limits: &Limits,
) -> Result<Option<HttpRequest>, HttpError> {
    let mut budget = limits.max_head_bytes;
    let mut line = Vec::with_capacity(256);
    // RFC 9112 section 2.2: empty lines before the request line are ignored.
    loop {
        match read_line(input, &mut line, &mut budget) {
            Ok(0) => return Ok(None),
            Ok(_) if line.is_empty() => continue,
            Ok(_) => break,
            Err(HttpError::Io(e)) if is_quiet_end(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    let (method, target, http10) = request_line(&line)?;
    let mut headers = HttpHeaders::default();
    loop {
        match read_line(input, &mut line, &mut budget) {
            Ok(0) => return Err(bad("the connection ended inside the request's header")),
            Ok(_) if line.is_empty() => break,
            Ok(_) => {
                let (name, value) = field(&line)?;
                budget = budget.checked_sub(FIELD_COST).ok_or_else(|| {
                    HttpError::Status(
                        431,
                        "the request line or header fields are larger than this server accepts"
                            .into(),
                    )
                })?;
                headers.push(name, value);
            }
            Err(HttpError::Io(e)) if is_timeout(&e) => {
                return Err(HttpError::Status(
                    408,
                    "the request's header did not arrive in time".into(),
                ));
            }
            Err(e) => return Err(e),
        }
    }
    let framing = framing(&headers, limits)?;
    Ok(Some(HttpRequest {
        method,
        target,
        http10,
        headers,
        framing,
        body: Vec::new(),
    }))
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn is_quiet_end(e: &io::Error) -> bool {
    is_timeout(e)
        || matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
        )
}

/// `METHOD SP request-target SP HTTP/1.x`.
fn request_line(line: &[u8]) -> Result<(String, String, bool), HttpError> {
    let text = std::str::from_utf8(line).map_err(|_| bad("the request line is not ASCII"))?;
    let mut parts = text.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad(
            "the request line must be METHOD, a space, the target, a space, and HTTP/1.1",
        ));
    };
    if method.is_empty() || !method.bytes().all(is_tchar) {
        return Err(bad(format!("'{method}' is not a request method")));
    }
    if target.is_empty() || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad(
            "the request target is empty or holds a character that is not visible ASCII",
        ));
    }
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        v if v.starts_with("HTTP/") => {
            return Err(HttpError::Status(
                505,
                format!("{v} is not supported: speak HTTP/1.1"),
            ));
        }
        v => return Err(bad(format!("'{v}' is not an HTTP version"))),
    };
    Ok((method.to_owned(), target.to_owned(), http10))
}

/// `name: value`, the value without the spaces and tabs around it (RFC
/// 9110 section 5.5: OWS is SP and HTAB alone). Any other control
/// character, at either end too, refuses the request: an intermediary that
/// keeps a form feed at a value's end would read another value than this
/// server.
fn field(line: &[u8]) -> Result<(String, String), HttpError> {
    if line[0] == b' ' || line[0] == b'\t' {
        return Err(bad("obsolete line folding in the header is not accepted"));
    }
    let colon = memchr::memchr(b':', line).ok_or_else(|| bad("a header field without a colon"))?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().copied().all(is_tchar) {
        return Err(bad(format!(
            "'{}' is not a header field name (no space is allowed before the colon)",
            String::from_utf8_lossy(name)
        )));
    }
    let value = trim_ows(&line[colon + 1..]);
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(bad(format!(
            "the value of header {} holds a control character",
            String::from_utf8_lossy(name)
        )));
    }
    Ok((
        String::from_utf8_lossy(name).into_owned(),
        String::from_utf8_lossy(value).into_owned(),
    ))
}

/// Whether `b` is optional whitespace: a space or a horizontal tab.
fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `bytes` without the spaces and horizontal tabs at either end.
fn trim_ows(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !is_ows(*b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_ows(*b))
        .map_or(start, |at| at + 1);
    &bytes[start..end]
}

/// RFC 9110 section 5.6.2: the characters of a token.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// How the body is framed, from `Transfer-Encoding` and `Content-Length`.
fn framing(headers: &HttpHeaders, limits: &Limits) -> Result<Framing, HttpError> {
    let lengths: Vec<&str> = headers.get_all("content-length").collect();
    if headers.count("transfer-encoding") > 0 {
        if !lengths.is_empty() {
            return Err(bad(
                "both Transfer-Encoding and Content-Length: send one of them",
            ));
        }
        let codings: Vec<&str> = headers
            .get_all("transfer-encoding")
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        if codings.len() == 1 && codings[0].eq_ignore_ascii_case("chunked") {
            return Ok(Framing::Chunked);
        }
        return Err(HttpError::Status(
            501,
            format!(
                "transfer coding '{}' is not supported: send the body plain or chunked",
                codings.join(", ")
            ),
        ));
    }
    let Some(first) = lengths.first() else {
        return Ok(Framing::Empty);
    };
    if lengths.iter().any(|l| l != first) {
        return Err(bad("Content-Length is given twice with different values"));
    }
    if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(format!("Content-Length '{first}' is not a number")));
    }
    let len: usize = first.parse().unwrap_or(usize::MAX);
    if len > limits.max_body_bytes {
        return Err(too_large(limits));
    }
    Ok(if len == 0 {
        Framing::Empty
    } else {
        Framing::Length(len)
    })
}

fn too_large(limits: &Limits) -> HttpError {
    HttpError::Status(
        413,
        format!(
            "the request body is larger than this server's limit of {} bytes",
            limits.max_body_bytes
        ),
    )
}

/// Reads one line of the head or a chunked body's trailer into `line`
/// (without its line ending), charging its length to `budget`: past it,
/// `431`. Returns the bytes consumed (0: end of input).
fn read_line(
    input: &mut dyn BufRead,
    line: &mut Vec<u8>,
    budget: &mut usize,
) -> Result<usize, HttpError> {
    read_line_within(input, line, budget, Ending::Lf, || {
        HttpError::Status(
            431,
            "the request line or header fields are larger than this server accepts".into(),
        )
    })
}

/// How a line may end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// CRLF or a bare LF: the start line and the header fields (RFC 9112
    /// section 2.2 lets a recipient take a bare LF there).
    Lf,
    /// CRLF alone: a chunked body's framing and its trailer (RFC 9112
    /// section 7.1). A bare LF there is refused: a proxy in front that
    /// reads it as part of a chunk's extension would end the body
    /// elsewhere than this server (request smuggling).
    Crlf,
}

/// [`read_line`], the line ending as `ending` allows, answering
/// `too_long()` when the line would take more than `budget`.
fn read_line_within(
    input: &mut dyn BufRead,
    line: &mut Vec<u8>,
    budget: &mut usize,
    ending: Ending,
    too_long: impl Fn() -> HttpError,
) -> Result<usize, HttpError> {
    line.clear();
    let mut consumed = 0;
    loop {
        // A read with a timeout that a stop signal interrupted (the kernel
        // does not restart it: signal(7)) is read again; the socket's
        // deadline still bounds it.
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(HttpError::Io(e)),
        };
        if buf.is_empty() {
            if consumed == 0 {
                return Ok(0);
            }
            return Err(HttpError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        if take > *budget {
            return Err(too_long());
        }
        *budget -= take;
        line.extend_from_slice(&buf[..take]);
        input.consume(take);
        consumed += take;
        if done {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            } else if ending == Ending::Crlf {
                return Err(bad(
                    "a line of the chunked body's framing ends in a bare LF: end it with CRLF",
                ));
            }
            if line.contains(&b'\r') {
                return Err(bad("a bare carriage return in the request's head"));
            }
            return Ok(consumed);
        }
    }
}

/// Reads a whole request, head and body, for tests.
#[cfg(test)]
pub(crate) fn read_request(
    input: &mut dyn BufRead,
    limits: &Limits,
) -> Result<Option<HttpRequest>, HttpError> {
    let Some(mut request) = read_head(input, limits)? else {
        return Ok(None);
    };
    read_body(input, &mut request, limits)?;
    Ok(Some(request))
}

#[cfg(test)]
mod tests;
