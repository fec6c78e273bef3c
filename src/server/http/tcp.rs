//! One TCP connection, on a thread of its own: requests read one after
//! another (HTTP/1.1 keep-alive), each checked (`guard`) before its body
//! is read, then served (`exchange`). Bad HTTP is answered with the
//! status that says what was wrong and the connection closed; it never
//! reaches the server's core.

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

use super::auth;
use super::exchange::Exchange;
use super::guard;
use super::open::{OpenConnections, would_wait};
use super::options::HttpOptions;
use super::refusal::{Refusal, refuse, refuse_with};
#[cfg(feature = "legacy")]
use super::sessions::Sessions;
use crate::http::{HttpError, HttpRequest, Limits, read_body, read_head, write_response};
use crate::jsonrpc::ErrorObject;
use crate::server::Inner;
use crate::server::request_meta::TokenInfo;
use crate::server::subscriptions::Followers;

/// A socket whose reads end at a deadline: the first byte of a request
/// must arrive by it, then the whole request by the next. While a request
/// is read, the first read that has to wait for bytes tells the cap
/// (`OpenConnections::stalled`): a connection whose request trickles in
/// may give way to a new one, one whose request came whole never does.
struct TimedSocket<'a> {
    socket: TcpStream,
    deadline: Option<Instant>,
    /// The connections open, and this one's key.
    open: &'a OpenConnections,
    key: u64,
    /// This request's reads had to wait for bytes (the cap was told).
    stalled: bool,
}

impl Read for TimedSocket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(at) = self.deadline {
            if !self.stalled && would_wait(&self.socket) {
                self.stalled = true;
                self.open.stalled(self.key);
            }
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.socket.set_read_timeout(Some(left))?;
        }
        self.socket.read(buf)
    }
}

/// What the thread of one connection shares with the listener.
pub(crate) struct Site {
    pub inner: Arc<Inner>,
    pub options: HttpOptions,
    /// The listener is on a loopback address (see `guard::host`).
    pub loopback: bool,
    #[cfg(feature = "legacy")]
    pub sessions: Sessions,
    /// The connections open, for the cap and the end.
    pub open: OpenConnections,
    /// How many listens follow each task, over all the listener's POSTs:
    /// the cap on one task's listens (`MAX_LISTENS_PER_TASK`) binds one
    /// client here, where each listen is a connection of its own.
    pub followers: Followers,
}

/// Serves one connection (`open`, its key in `Site::open`) until it
/// closes, fails, idles out, gives way at the cap, is refused, or the
/// server stops: each request's head, then the request.
pub(crate) fn serve_connection(site: &Site, socket: TcpStream, open: u64) {
    let options = &site.options;
    let Some(mut input) = reading_side(&socket, options, &site.open, open) else {
        return;
    };
    let exchange = Exchange {
        inner: &site.inner,
        options,
        socket: &socket,
        #[cfg(feature = "legacy")]
        sessions: &site.sessions,
        cors: Default::default(),
        head: Default::default(),
        token: Default::default(),
        open: &site.open,
        key: open,
        followers: &site.followers,
    };
    // Until its first request's head is in, a connection is on the header
    // clock from its start: one that sends nothing is let go at
    // `header_timeout`, not kept for the idle timeout.
    let mut wait = Wait::Head(crate::deadline::from_now(options.header_timeout));
    loop {
        let Some(request) = next_head(site, &exchange, &mut input, open, wait) else {
            return;
        };
        if !serve_request(site, &exchange, &mut input, open, request) {
            return;
        }
        wait = Wait::Idle;
    }
}

/// How long a connection waits for its next request.
#[derive(Clone, Copy)]
enum Wait {
    /// The whole head must be in by then (a connection's first request).
    Head(Instant),
    /// The idle timeout for its first byte, then `header_timeout` for the
    /// rest of the request (a kept-alive connection's next one).
    Idle,
}

/// The connection's input, its reads bounded by a deadline; its write
/// timeout set (a client that takes nothing for `write_timeout` is gone:
/// a write to it fails, which ends its connection).
fn reading_side<'a>(
    socket: &TcpStream,
    options: &HttpOptions,
    open: &'a OpenConnections,
    key: u64,
) -> Option<BufReader<TimedSocket<'a>>> {
    let read_half = socket.try_clone().ok()?;
    let _ = socket.set_nodelay(true);
    socket.set_write_timeout(Some(options.write_timeout)).ok()?;
    Some(BufReader::new(TimedSocket {
        socket: read_half,
        deadline: None,
        open,
        key,
        stalled: false,
    }))
}

/// Waits for the next request and reads its head; `None` when the
/// connection ends instead (closed, silent too long, gave way at the cap,
/// refused, or the server stopped).
fn next_head(
    site: &Site,
    exchange: &Exchange<'_>,
    input: &mut BufReader<TimedSocket<'_>>,
    open: u64,
    wait: Wait,
) -> Option<HttpRequest> {
    // Between requests: a stop closes the connection.
    if !site.open.between(open) {
        return None;
    }
    let options = &site.options;
    let until = match wait {
        Wait::Head(until) => until,
        Wait::Idle => crate::deadline::from_now(options.idle_timeout),
    };
    match request_begins(site, input, open, until) {
        Begins::Yes => {}
        Begins::No => return None,
        Begins::GaveWay => {
            gave_way(exchange.socket);
            return None;
        }
    }
    if site.inner.connections.is_stopped() {
        refuse(exchange.socket, 503, "the server is shutting down", &[]);
        return None;
    }
    input.get_mut().deadline = Some(match wait {
        Wait::Head(until) => until,
        Wait::Idle => crate::deadline::from_now(options.header_timeout),
    });
    let limits = limits(options);
    let failed = match read_head(input, &limits) {
        Ok(Some(request)) => return Some(request),
        Ok(None) | Err(HttpError::Io(_)) => None,
        Err(HttpError::Status(status, message)) => Some((status, message)),
    };
    // A connection that gave way reads the end of its input: it answers
    // `503`, whatever the read made of it.
    if site.open.gave_way(open) {
        gave_way(exchange.socket);
    } else if let Some((status, message)) = failed {
        refuse(exchange.socket, status, &message, &[]);
    }
    None
}

/// Whether a request began on a connection waiting for one.
enum Begins {
    /// Its first byte came; the connection is reading it.
    Yes,
    /// The connection closed, failed, or stayed silent until its deadline.
    No,
    /// Its first byte came, but the connection gave way at the cap first.
    GaveWay,
}

/// Waits until `until` for the first byte of a request. First a look that
/// does not wait, so that a client that sent its request at once is never
/// counted idle; after it the connection is idle, and at the cap it may
/// give way to a new one (`OpenConnections::enter`). The byte is looked at,
/// not read, until the connection counts as reading: until then the cap
/// sees it waiting in the socket and leaves this connection alone.
fn request_begins(
    site: &Site,
    input: &mut BufReader<TimedSocket<'_>>,
    open: u64,
    until: Instant,
) -> Begins {
    // Bytes of the next request read with the last one (pipelining) are
    // in hand already.
    if input.buffer().is_empty() {
        let socket = &input.get_ref().socket;
        match look(socket, None) {
            Ok(true) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                site.open.idle(open);
                if !matches!(look(socket, Some(until)), Ok(true)) {
                    return Begins::No;
                }
            }
            _ => return Begins::No,
        }
    }
    input.get_mut().stalled = false;
    if site.open.reading(open) {
        Begins::Yes
    } else {
        Begins::GaveWay
    }
}

/// Looks at `socket` without reading it: `Ok(true)` when bytes wait,
/// `Ok(false)` at its end, an error of kind `WouldBlock` or `TimedOut`
/// when nothing came by `until` (`None`: nothing waits now).
fn look(socket: &TcpStream, until: Option<Instant>) -> io::Result<bool> {
    let mut byte = [0u8; 1];
    let looked = match until {
        // The socket is this thread's alone between requests: nothing
        // else reads or writes it while it does not block.
        None => {
            socket.set_nonblocking(true)?;
            let looked = socket.peek(&mut byte);
            socket.set_nonblocking(false)?;
            looked
        }
        Some(until) => loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            socket.set_read_timeout(Some(left))?;
            match socket.peek(&mut byte) {
                // A signal (a read with a timeout is not restarted).
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                looked => break looked,
            }
        },
    };
    looked.map(|n| n > 0)
}

/// A connection that gave way at the cap while it read a request (see
/// `open`): its client is told to retry, and it closes.
fn gave_way(socket: &TcpStream) {
    let message = "too many connections: retry in a moment";
    refuse(socket, 503, message, &[("Retry-After", "1")]);
}

/// Serves a request whose head is read. Returns whether the connection
/// goes on to the next.
fn serve_request(
    site: &Site,
    exchange: &Exchange<'_>,
    input: &mut BufReader<TimedSocket<'_>>,
    open: u64,
    mut request: HttpRequest,
) -> bool {
    let socket = exchange.socket;
    *exchange.cors.borrow_mut() = guard::cors(&request, &site.options);
    exchange.head.set(request.method == "HEAD");
    // No request is served with the last one's token.
    *exchange.token.borrow_mut() = None;
    if let Some(protection) = &site.options.protection
        && auth::is_metadata_path(protection, &site.options.path, request.path())
    {
        if !site.open.serving(open) {
            gave_way(socket);
            return false;
        }
        return metadata(protection, exchange, &request);
    }
    let token = match check(site, &request) {
        Ok(token) => token,
        Err(refusal) => return refused(exchange, &request, refusal),
    };
    *exchange.token.borrow_mut() = token;
    // A request without a body is in whole: it is served (unless its
    // connection gave way meanwhile); a POST once its body is read.
    if request.method != "POST" && !site.open.serving(open) {
        gave_way(socket);
        return false;
    }
    match request.method.as_str() {
        "OPTIONS" => return options(site, exchange, &request),
        #[cfg(feature = "legacy")]
        "GET" => return stream(site, exchange, open, &request),
        #[cfg(feature = "legacy")]
        "DELETE" => return delete(site, exchange, &request),
        "POST" => {}
        // `check` lets GET and DELETE through only with `legacy`.
        _ => return false,
    }
    let cors = exchange.cors.borrow().clone();
    let cors: Vec<(&str, &str)> = cors.iter().map(|(n, v)| (*n, v.as_str())).collect();
    if request.framing == crate::http::Framing::Empty {
        let message = "a POST must carry one JSON-RPC message as its body";
        refuse(socket, 400, message, &cors);
        return false;
    }
    if request.expects_continue() {
        let mut out = socket;
        if write_response(&mut out, 100, &[], b"", true).is_err() {
            return false;
        }
    }
    let read = read_body(input, &mut request, &limits(&site.options));
    // A connection that gave way while its body came reads the end of its
    // input (or its body whole, just then): it answers `503`.
    let here = match read {
        Ok(()) => site.open.serving(open),
        Err(_) => !site.open.gave_way(open),
    };
    if !here {
        gave_way(socket);
        return false;
    }
    match read {
        Ok(()) => {}
        Err(HttpError::Io(_)) => return false,
        Err(HttpError::Status(status, message)) => {
            refuse(socket, status, &message, &cors);
            return false;
        }
    }
    input.get_mut().deadline = None;
    // The token was valid when the head came: it must still be, now that
    // the body is in (`auth::still_valid`).
    let token = exchange.token.borrow().clone();
    if let (Some(protection), Some(info)) = (&site.options.protection, token)
        && let Err(refusal) = auth::still_valid(protection, &info)
    {
        return refused(exchange, &request, refusal);
    }
    // After a stop the connection ends with the response in hand.
    if !exchange.post(&request) || site.inner.connections.is_stopped() {
        let _ = (&*socket).flush();
        return false;
    }
    true
}

/// Answers a refusal of the checks before the body (or of the token's
/// expiry once it is read). Returns whether the connection goes on: only
/// after a `405` to a request without a body.
fn refused(exchange: &Exchange<'_>, request: &HttpRequest, refusal: Refusal) -> bool {
    let cors = exchange.cors.borrow();
    let headers: Vec<(&str, &str)> = (refusal.headers.iter())
        .chain(cors.iter())
        .map(|(n, v)| (*n, v.as_str()))
        .collect();
    let empty = request.framing == crate::http::Framing::Empty;
    let error = refusal.error();
    if refusal.status == 405 && empty && request.keep_alive() {
        return exchange.error_with(refusal.status, None, &error, &headers, true);
    }
    // The body is not read (or, read, is refused for an expired token):
    // the connection does not carry another request.
    let content = request.method != "HEAD";
    refuse_with(exchange.socket, refusal.status, &error, &headers, content);
    false
}

/// The protected-resource metadata (RFC 9728 section 3.2): `GET`, `200`
/// and the JSON document, readable from any origin (it is public, and a
/// browser-based client reads it before it has a token); `OPTIONS`, the
/// preflight of such a read. Returns whether the connection goes on.
fn metadata(protection: &auth::Protection, exchange: &Exchange<'_>, request: &HttpRequest) -> bool {
    // The endpoint's CORS fields name one origin: these name any.
    exchange.cors.borrow_mut().clear();
    let keep_alive = request.keep_alive() && request.framing == crate::http::Framing::Empty;
    let any = ("Access-Control-Allow-Origin", "*");
    match request.method.as_str() {
        "GET" => {
            let document = protection.metadata.document().to_string();
            let headers = [any, ("Content-Type", "application/json")];
            exchange.respond(200, &headers, document.as_bytes(), keep_alive)
        }
        "OPTIONS" => {
            let asked = request.headers.get("access-control-request-headers");
            let mut headers = vec![
                any,
                ("Access-Control-Allow-Methods", "GET"),
                ("Allow", "GET, OPTIONS"),
            ];
            if let Some(asked) = asked {
                headers.push(("Access-Control-Allow-Headers", asked));
            }
            exchange.respond(204, &headers, b"", keep_alive)
        }
        _ => {
            let error = ErrorObject::invalid_request(format!(
                "{} is not served here: GET the protected-resource metadata",
                request.method
            ));
            exchange.error_with(405, None, &error, &[("Allow", "GET, OPTIONS")], keep_alive)
        }
    }
}

fn limits(options: &HttpOptions) -> Limits {
    Limits {
        max_head_bytes: options.max_head_bytes,
        max_body_bytes: options.max_body_bytes,
    }
}

/// A legacy session's GET stream. Returns whether the connection goes on.
#[cfg(feature = "legacy")]
fn stream(site: &Site, exchange: &Exchange<'_>, open: u64, request: &HttpRequest) -> bool {
    // While the stream is open the connection may give way to a new one
    // at the cap (`open`).
    site.open.streaming(open, true);
    let goes_on = exchange.stream(request);
    site.open.streaming(open, false);
    // A body sent with the GET is not read: the connection ends rather
    // than take it for the next request.
    let empty = request.framing == crate::http::Framing::Empty;
    goes_on && empty && !site.inner.connections.is_stopped()
}

/// The checks before the body, in order: the path, no token in the query,
/// the fields that must come once, `Host`, `Origin`, the method,
/// authorization, the media types. What the request's token allows,
/// when the server validates tokens.
fn check(site: &Site, request: &HttpRequest) -> Result<Option<Arc<TokenInfo>>, Refusal> {
    let options = &site.options;
    if request.path() != options.path {
        return Err(Refusal {
            status: 404,
            message: format!(
                "there is no MCP endpoint at '{}': it is at '{}'",
                request.path(),
                options.path
            ),
            headers: Vec::new(),
            mismatch: false,
        });
    }
    auth::no_token_in_query(request)?;
    guard::single_fields(request)?;
    guard::host(request, options, site.loopback)?;
    guard::origin(request, options)?;
    match request.method.as_str() {
        "POST" => {}
        // A CORS preflight carries no credentials (browsers send none on
        // it): answered before authorization.
        "OPTIONS" => return Ok(None),
        // A legacy session's stream, and its end (`sessions`).
        #[cfg(feature = "legacy")]
        "GET" | "DELETE" if request.headers.get("mcp-session-id").is_some() => {
            return guard::authorized(request, options);
        }
        _ => {
            // Spec 2026-07-28 "Backward Compatibility": GET and DELETE are
            // `405` outside a legacy session: 2026-07-28 has no GET stream,
            // and no session to end.
            return Err(Refusal {
                status: 405,
                message: format!(
                    "{} is not served at the MCP endpoint: send each JSON-RPC message as a POST",
                    request.method
                ),
                headers: vec![("Allow", ALLOW.to_owned())],
                mismatch: false,
            });
        }
    }
    let token = guard::authorized(request, options)?;
    guard::media_types(request)?;
    Ok(token)
}

/// The methods the endpoint takes.
const ALLOW: &str = if cfg!(feature = "legacy") {
    "GET, POST, DELETE"
} else {
    "POST"
};

/// `OPTIONS`: the methods the endpoint takes, and for a browser's CORS
/// preflight from an allowed origin what it may send (`guard::preflight`);
/// `204`, no body. Returns whether the connection goes on.
fn options(site: &Site, exchange: &Exchange<'_>, request: &HttpRequest) -> bool {
    let mut fields = guard::preflight(request, &site.options, ALLOW);
    fields.push(("Allow", ALLOW.to_owned()));
    let headers: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let keep_alive = request.keep_alive() && request.framing == crate::http::Framing::Empty;
    exchange.respond(204, &headers, b"", keep_alive)
}

/// `DELETE` with a legacy session id: the session ends (2025-11-25).
/// Returns whether the connection goes on.
#[cfg(feature = "legacy")]
fn delete(site: &Site, exchange: &Exchange<'_>, request: &HttpRequest) -> bool {
    let id = request.headers.get("mcp-session-id").unwrap_or_default();
    let keep_alive = request.keep_alive() && request.framing == crate::http::Framing::Empty;
    if site.sessions.delete(id, exchange.owner().as_ref()) {
        exchange.respond(200, &[], b"", keep_alive)
    } else {
        let error = ErrorObject::invalid_request(format!("session '{id}' is not known"));
        exchange.error_with(404, None, &error, &[], keep_alive)
    }
}
