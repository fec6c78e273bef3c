//! Writing a response: whole ([`write_response`], with `Content-Length`),
//! or streamed ([`write_stream_head`], then [`write_chunk`] for each piece
//! and [`write_last_chunk`]): chunked for HTTP/1.1, delimited by closing
//! the connection for HTTP/1.0, which has no chunks.

use std::io::{self, Write};

/// The reason phrase of the statuses this server sends.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

fn head(out: &mut Vec<u8>, status: u16, headers: &[(&str, &str)], keep_alive: bool) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        let _ = write!(out, "{name}: {value}\r\n");
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
}

/// Writes a whole response with `body` (none for a `202`, a `204` or a `100`),
/// in one `write`.
pub(crate) fn write_response(
    w: &mut dyn Write,
    status: u16,
    headers: &[(&str, &str)],
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    write_whole(w, status, headers, Some(body), keep_alive)
}

/// Writes the answer to a `HEAD`: its head alone, without content (RFC
/// 9110 section 9.3.2) and without `Content-Length`, which section 8.6
/// lets it leave out and forbids unless it is the length of the `GET`'s
/// content (`0` was not).
pub(crate) fn write_head_answer(
    w: &mut dyn Write,
    status: u16,
    headers: &[(&str, &str)],
    keep_alive: bool,
) -> io::Result<()> {
    write_whole(w, status, headers, None, keep_alive)
}

/// [`write_response`], or with `body` `None` [`write_head_answer`].
fn write_whole(
    w: &mut dyn Write,
    status: u16,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    keep_alive: bool,
) -> io::Result<()> {
    let mut out = Vec::with_capacity(128 + body.map_or(0, <[u8]>::len));
    head(&mut out, status, headers, keep_alive);
    // RFC 9110 section 8.6: none with a 1xx or a 204, nor to a HEAD.
    if let Some(body) = body
        && status != 100
        && status != 204
    {
        let _ = write!(out, "Content-Length: {}\r\n", body.len());
    }
    let body = body.unwrap_or_default();
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    w.write_all(&out)?;
    w.flush()
}

/// Starts a streamed response: chunked when `chunked` (HTTP/1.1), else
/// ended by closing the connection.
pub(crate) fn write_stream_head(
    out: &mut Vec<u8>,
    status: u16,
    headers: &[(&str, &str)],
    chunked: bool,
) {
    head(out, status, headers, chunked);
    if chunked {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends one piece of a streamed response (never empty: an empty chunk
/// would end the body).
pub(crate) fn write_chunk(out: &mut Vec<u8>, data: &[u8], chunked: bool) {
    if data.is_empty() {
        return;
    }
    if chunked {
        let _ = write!(out, "{:x}\r\n", data.len());
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(data);
    }
}

/// Appends the end of a chunked body.
pub(crate) fn write_last_chunk(out: &mut Vec<u8>, chunked: bool) {
    if chunked {
        out.extend_from_slice(b"0\r\n\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_and_a_streamed_response_are_framed_exactly() {
        let mut whole = Vec::new();
        write_response(&mut whole, 202, &[("A", "b")], b"", false).unwrap();
        assert_eq!(
            String::from_utf8(whole).unwrap(),
            "HTTP/1.1 202 Accepted\r\nA: b\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        );
        let mut head_only = Vec::new();
        write_head_answer(&mut head_only, 405, &[("Allow", "POST")], true).unwrap();
        assert_eq!(
            String::from_utf8(head_only).unwrap(),
            "HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\n\r\n"
        );
        let mut streamed = Vec::new();
        write_stream_head(
            &mut streamed,
            200,
            &[("Content-Type", "text/event-stream")],
            true,
        );
        write_chunk(&mut streamed, b"data: x\n\n", true);
        write_chunk(&mut streamed, b"", true);
        write_last_chunk(&mut streamed, true);
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n9\r\ndata: x\n\n\r\n0\r\n\r\n"
        );
    }
}
