//! The connection a request goes on: an idle one the server has not
//! closed, or a new one; the request written on it (registered as its
//! request's stream, which a cancellation closes) and its answer's head
//! read, the request sent again on a new connection only when that is
//! safe.

use std::io::BufReader;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::http::exchange::{self, Connection, Head};
use crate::client::http::{ACCEPT_TIMEOUT, CONNECT_TIMEOUT, Shared};
use crate::sync::lock;

/// The largest request written from its caller's thread
/// ([`Shared::write_ahead`]): far less than a socket's send buffer, so the
/// write never waits for the server.
const WRITE_AHEAD_BYTES: usize = 16 * 1024;

/// How long a POST waits for its answer: a request (`id`), as long as its
/// caller does (a cancellation closes its stream); anything else,
/// [`ACCEPT_TIMEOUT`].
fn read_timeout(id: Option<&str>) -> Option<Duration> {
    id.is_none().then_some(ACCEPT_TIMEOUT)
}

/// Whether `error`, from writing a request on a kept-alive connection or
/// reading its answer's head, says the server closed that connection.
fn closed_meanwhile(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
    )
}

/// Why a request that may not be repeated failed when its reused
/// connection ended before any answer ([`Shared::start`]).
fn not_sent_again(url: &str) -> String {
    format!(
        "the connection to {url} ended after the request was sent, before any answer: not sent again, since the server may have acted on it (send it again if that is safe)"
    )
}

/// A connection to the server, kept between requests.
pub(in crate::client::http) struct Kept {
    pub(super) conn: Connection,
    /// Its TCP socket again (under the TLS, for `https://`), shared with
    /// the streams of the requests it carries (`Shared::streams`), through
    /// which a cancellation closes it; its timeouts are set through it.
    pub(super) socket: Arc<TcpStream>,
    /// The read timeout it has.
    read_timeout: Option<Duration>,
}

impl Kept {
    /// The connection, to read an answer's body from.
    pub(in crate::client::http) fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Whether this idle connection can carry a request: nothing has come
    /// on it since its last answer (not its end, a reset, nor bytes no
    /// request asked for), looked at without waiting. A server closes an
    /// idle connection when it likes (its keep-alive timeout); seen here,
    /// the request goes on another one instead of being written where the
    /// server is gone, and then maybe sent twice ([`Shared::start`]).
    fn still_open(&self) -> bool {
        if !self.conn.buffer().is_empty() {
            return false;
        }
        #[cfg(unix)]
        {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            use std::os::fd::AsFd;
            // An end, a reset or an error is readable too (POLLHUP and
            // POLLERR come unasked).
            let mut fds = [PollFd::new(self.socket.as_fd(), PollFlags::POLLIN)];
            poll(&mut fds, PollTimeout::ZERO).is_ok_and(|ready| ready == 0)
        }
        #[cfg(not(unix))]
        {
            if self.socket.set_nonblocking(true).is_err() {
                return false;
            }
            let looked = self.socket.peek(&mut [0]);
            let restored = self.socket.set_nonblocking(false).is_ok();
            restored && looked.is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock)
        }
    }

    /// Ends a connection the client is done with (`Stream::end`: TLS's
    /// `close_notify`), whatever it buffered unread.
    pub(in crate::client::http) fn end(self) {
        self.conn.into_inner().end();
    }
}

impl Shared {
    /// Writes the request on an idle connection or a new one (unless it
    /// was `written` already), and reads the answer's head. An idle
    /// connection the server closed is not used ([`Kept::still_open`]).
    /// One that ends (an end, a reset) under the request is replaced by a
    /// new one, once, and the request sent again there only when that is
    /// safe: its write failed (the server never had it whole), or it may
    /// be repeated (a notification, an answer, a GET). Anything else the
    /// server may have read and acted on before the connection ended, and
    /// a POST is not idempotent (RFC 9110 section 9.2.2: a client SHOULD
    /// NOT retry it automatically unless it knows the first was never
    /// applied): it fails, saying so, rather than a `tools/call` running
    /// twice. A request (`id`) waits for its answer as long as its caller
    /// does (a cancellation closes its stream); anything else for
    /// [`ACCEPT_TIMEOUT`].
    pub(in crate::client::http) fn start(
        &self,
        written: Option<Kept>,
        verb: &str,
        body: &[u8],
        id: Option<&str>,
        headers: &[(String, String)],
    ) -> Result<(Kept, Head), String> {
        let url = self.endpoint.url();
        // A notification's or an answer's final status is waited for
        // `ACCEPT_TIMEOUT` at most, however many interim ones come.
        let deadline = read_timeout(id).map(|wait| Instant::now() + wait);
        let mut reused = written.map(|kept| (kept, true));
        if reused.is_none() {
            reused = self.idle_connection().map(|kept| (kept, false));
        }
        let repeatable = id.is_none() || verb == "GET";
        loop {
            let was_reused = reused.is_some();
            let (mut kept, sent) = match reused.take() {
                Some(reused) => reused,
                None => (
                    self.open_connection()
                        .map_err(|e| format!("could not connect to {url}: {e}"))?,
                    false,
                ),
            };
            if !sent && let Err(e) = self.write(&mut kept, verb, body, id, headers) {
                // Not written whole: the server cannot have acted on it.
                if was_reused && closed_meanwhile(&e) {
                    continue;
                }
                return Err(format!("the request to {url} failed: {e}"));
            }
            match exchange::read_head(&mut kept.conn, verb == "HEAD", deadline) {
                Ok(Some(head)) => return Ok((kept, head)),
                // A reused connection that ended under the request (an
                // end, a reset): sent again on a new one if it may be.
                // Never after a timeout, nor a head it could not read:
                // the server has the request.
                Ok(None) if was_reused && repeatable => continue,
                Err(e) if was_reused && repeatable && closed_meanwhile(&e) => continue,
                Ok(None) if was_reused => return Err(not_sent_again(&url)),
                Err(e) if was_reused && closed_meanwhile(&e) => {
                    return Err(not_sent_again(&url));
                }
                Ok(None) => return Err(format!("{url} closed the connection without an answer")),
                Err(e) => return Err(format!("the request to {url} failed: {e}")),
            }
        }
    }

    /// Writes the request on `kept`, registered first as request `id`'s
    /// stream (which a cancellation closes). Its read timeout is set for
    /// the answer (only when it changes: a system call saved per request).
    fn write(
        &self,
        kept: &mut Kept,
        verb: &str,
        body: &[u8],
        id: Option<&str>,
        headers: &[(String, String)],
    ) -> std::io::Result<()> {
        let wanted = read_timeout(id);
        if kept.read_timeout != wanted {
            kept.socket.set_read_timeout(wanted)?;
            kept.read_timeout = wanted;
        }
        if let Some(id) = id {
            match lock(&self.streams).get_mut(id) {
                Some(slot) => *slot = Some(Arc::clone(&kept.socket)),
                // Cancelled before it was sent.
                None => return Err(std::io::Error::other("cancelled")),
            }
        }
        exchange::write_request(kept.conn.get_mut(), verb, &self.endpoint, headers, body)
    }

    /// Writes a small request's POST on an idle connection from the
    /// caller's thread, before its worker is woken: the server works on it
    /// while the worker wakes, which then only reads the answer (a wake-up
    /// less on the call's way). `None` when no connection is idle, the
    /// request is large (a write of it might wait for the server), or the
    /// write failed: the worker then does it all.
    pub(in crate::client::http) fn write_ahead(
        &self,
        line: &[u8],
        id: &str,
        headers: &[(String, String)],
    ) -> Option<Kept> {
        if line.len() > WRITE_AHEAD_BYTES {
            return None;
        }
        let mut kept = self.idle_connection()?;
        self.write(&mut kept, "POST", line, Some(id), headers)
            .ok()?;
        Some(kept)
    }

    /// An idle connection the server has not closed, if there is one
    /// ([`Kept::still_open`]); those it closed are dropped.
    fn idle_connection(&self) -> Option<Kept> {
        loop {
            let kept = lock(&self.idle).pop()?;
            if kept.still_open() {
                return Some(kept);
            }
        }
    }

    /// A new connection (`Connector::connect`), set up once: a write
    /// timeout ([`ACCEPT_TIMEOUT`]).
    fn open_connection(&self) -> std::io::Result<Kept> {
        let stream = self.connector.connect(&self.endpoint, CONNECT_TIMEOUT)?;
        stream.socket().set_write_timeout(Some(ACCEPT_TIMEOUT))?;
        let socket = Arc::new(stream.socket().try_clone()?);
        Ok(Kept {
            conn: BufReader::new(stream),
            socket,
            read_timeout: None,
        })
    }
}
