//! One message's POST and its whole answer, on a worker (`workers`): each
//! message of the answer goes to the link (`Inbox::deliver`) as it comes.
//! A request's answer ends its reading: a stream the server leaves open
//! after it is closed (its connection dropped), not read until the client
//! closes.

use std::cell::Cell;
use std::io::BufReader;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::exchange::{self, Body, Connection, Cursor, Head};
use super::messages::{
    Answer, answer_to, answers_another, error_line, error_text, is_rpc_error, refusal_line,
    status_error, with_id,
};
use super::{ACCEPT_TIMEOUT, CONNECT_TIMEOUT, IDLE_CONNECTIONS, Outgoing, OutgoingParams, Shared};
use crate::client::oauth::Authorizer;
use crate::jsonrpc::error_code as rpc_code;
use crate::note_limiter::NoteLimiter;
use crate::sync::lock;
use crate::types::method;

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

/// Whether `head` asks for credentials: a `401`, or a `403` whose
/// challenge says `insufficient_scope` (RFC 6750 section 3.1).
pub(super) fn wants_credentials(head: &Head) -> bool {
    head.status == 401
        || (head.status == 403
            && head
                .headers
                .get_all("www-authenticate")
                .any(|v| v.contains("insufficient_scope")))
}

/// A connection to the server, kept between requests.
pub(super) struct Kept {
    conn: Connection,
    /// Its TCP socket again (under the TLS, for `https://`), shared with
    /// the streams of the requests it carries (`Shared::streams`), through
    /// which a cancellation closes it; its timeouts are set through it.
    socket: Arc<TcpStream>,
    /// The read timeout it has.
    read_timeout: Option<Duration>,
}

impl Kept {
    /// The connection, to read an answer's body from.
    pub(super) fn connection(&mut self) -> &mut Connection {
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
    pub(super) fn end(self) {
        self.conn.into_inner().end();
    }
}

/// One message to POST, with its headers.
pub(super) struct Post {
    pub line: Vec<u8>,
    /// A request's id, as JSON text; `None` for a notification or an
    /// answer.
    pub id: Option<String>,
    pub method: Option<String>,
    pub headers: Vec<(String, String)>,
    /// The connection its caller wrote it on already (`write_ahead`).
    pub written: Option<Kept>,
}

/// Why an exchange brought no usable answer.
pub(super) enum Failed {
    /// The server does not know the session the request named (`404`
    /// without an answer to the request): a new one may be started
    /// (`session`).
    SessionGone,
    /// The era probe (`server/discover`) refused with a status a legacy
    /// server gives a modern request (`400`, `404`, `405`) and no
    /// JSON-RPC error: the server's answer, in one line.
    Refused(String),
    /// The server wants (other) credentials: a `401`, or a `403` with
    /// `insufficient_scope`, to a client that authorizes itself
    /// (`ClientBuilder::oauth`).
    Unauthorized(Refusal),
    /// Anything else, in one line.
    Why(String),
}

/// A refusal for want of credentials: its status, its `WWW-Authenticate`
/// fields, and what it means in one line.
pub(super) struct Refusal {
    status: u16,
    challenges: Vec<String>,
    why: String,
}

impl Refusal {
    /// The refusal `head` is, of a request to `url`.
    pub(super) fn of(head: &Head, url: &str) -> Refusal {
        Refusal {
            status: head.status,
            challenges: head
                .headers
                .get_all("www-authenticate")
                .map(str::to_owned)
                .collect(),
            why: status_error(head, url),
        }
    }
    /// What it means, in one line.
    pub(super) fn why(&self) -> &str {
        &self.why
    }
}

impl From<String> for Failed {
    fn from(why: String) -> Failed {
        Failed::Why(why)
    }
}

impl Failed {
    pub(super) fn into_why(self) -> String {
        match self {
            Failed::SessionGone => {
                "the server does not know the session any more (404), and a new one could not be started".into()
            }
            Failed::Unauthorized(refusal) => refusal.why,
            Failed::Refused(why) | Failed::Why(why) => why,
        }
    }
}

impl Shared {
    /// POSTs `post` and hands each message of its answer to the link.
    /// Failures become an error for the request (if it is one), and so does
    /// a stream that ends without the answer, unless a legacy server's
    /// stream can be resumed (`get_stream`); nothing is reported for a
    /// request cancelled meanwhile. A `404` for a legacy session starts a
    /// new one, and a request is sent once more in it.
    pub(super) fn post(&self, post: Post) {
        let Some(inbox) = self.inbox() else {
            return;
        };
        let mut notes = NoteLimiter::default();
        let Post {
            line,
            id,
            method,
            mut headers,
            written,
        } = post;
        let Some(id) = id else {
            // A notification or an answer: accepted (`202`) or not, within
            // `ACCEPT_TIMEOUT`; what a server sends back anyway is routed.
            let mut deliver = |message: Vec<u8>| inbox.deliver(&message, &mut notes);
            let mut sent = self.exchange(
                "POST",
                &line,
                None,
                &headers,
                &mut Cursor::default(),
                &mut deliver,
            );
            if let Err(Failed::Unauthorized(refusal)) = &sent
                && self.authorized_again(refusal, &headers).is_ok()
                && let Ok(outgoing) = serde_json::from_slice::<Outgoing<'_>>(&line)
            {
                headers = self.headers(&outgoing, &OutgoingParams::of(&outgoing));
                let mut cursor = Cursor::default();
                sent = self.exchange("POST", &line, None, &headers, &mut cursor, &mut deliver);
            }
            if let Err(Failed::SessionGone) = sent
                && let Some(renewed) = self.renew(&headers)
            {
                self.resubscribe(renewed);
            }
            return;
        };
        let answered = Cell::new(false);
        // A subscription refused (or never answered) is not kept for a
        // new session; forgotten before the caller hears of it.
        let subscribe = method.as_deref() == Some("resources/subscribe");
        // A tools/call refused for its headers is held back, once: the
        // tools are listed again and the call retried (`relist`).
        let hold_mismatch = Cell::new(method.as_deref() == Some(method::TOOLS_CALL));
        let mismatched = Cell::new(false);
        // On this POST's stream (and its resumptions): what the server
        // sends on its own, and this request's answer; an answer to
        // another request is dropped (`answers_another`).
        let mut deliver = |message: Vec<u8>| {
            if answers_another(&message, &id) {
                notes.problem(
                    &self.notes,
                    &format!(
                        "dropped a response on the stream of request {id}: it answers another request"
                    ),
                );
                return true;
            }
            match answer_to(&message, &id) {
                Some(Answer::Error(Some(code)))
                    if hold_mismatch.get() && code == i64::from(rpc_code::HEADER_MISMATCH) =>
                {
                    mismatched.set(true);
                    return false;
                }
                Some(answer) => {
                    answered.set(true);
                    if subscribe && !matches!(answer, Answer::Result) {
                        self.unkeep(&line);
                    }
                }
                None => {}
            }
            let message = match method.as_deref() {
                Some("initialize") => {
                    self.learn_legacy_version(&message);
                    message
                }
                Some(method::TOOLS_LIST) => {
                    let notes = &self.notes;
                    lock(&self.params).learn(message, &mut |tool, why| {
                        notes.problem(&format!(
                            "tools/list: left out the tool {tool:?}: {why} (spec: Streamable HTTP, Custom Headers from Tool Parameters)"
                        ))
                    })
                }
                _ => message,
            };
            // Once answered, nothing more is read: a stream the server
            // leaves open is closed.
            inbox.deliver(&message, &mut notes) && !answered.get()
        };
        let mut cursor = Cursor::default();
        let mut res = self.exchange_on(
            written,
            "POST",
            &line,
            Some(&id),
            &headers,
            &mut cursor,
            &mut deliver,
        );
        // A request given up meanwhile (its stream held to hear a late
        // answer, `late`) is not authorized again nor retried: what its
        // held stream brought is its answer, or nothing.
        let given_up = || !lock(&self.streams).contains_key(&id);
        if let Err(Failed::Unauthorized(refusal)) = &res
            && !given_up()
        {
            match self.authorized_again(refusal, &headers) {
                Ok(()) => {
                    if let Ok(outgoing) = serde_json::from_slice::<Outgoing<'_>>(&line) {
                        headers = self.headers(&outgoing, &OutgoingParams::of(&outgoing));
                    }
                    cursor = Cursor::default();
                    res = self.exchange(
                        "POST",
                        &line,
                        Some(&id),
                        &headers,
                        &mut cursor,
                        &mut deliver,
                    );
                }
                Err(why) => res = Err(Failed::Why(why)),
            }
        }
        let mut renewed = None;
        if let Err(Failed::SessionGone) = res {
            renewed = self.renew(&headers);
        }
        if renewed.is_some()
            && let Ok(outgoing) = serde_json::from_slice::<Outgoing<'_>>(&line)
        {
            headers = self.headers(&outgoing, &OutgoingParams::of(&outgoing));
            cursor = Cursor::default();
            res = self.exchange(
                "POST",
                &line,
                Some(&id),
                &headers,
                &mut cursor,
                &mut deliver,
            );
        }
        if mismatched.get() && !given_up() {
            hold_mismatch.set(false);
            cursor = Cursor::default();
            res = self
                .retry_with_new_marks(&line, Some(&id), &headers, &mut cursor, &mut deliver)
                .map_err(Failed::Why);
        }
        if let (Ok(()), false) = (&res, answered.get()) {
            res = (self.unanswered(&id, &mut cursor, &answered, &mut deliver)).map_err(Failed::Why);
        }
        if subscribe && !answered.get() {
            self.unkeep(&line);
        }
        let cancelled = lock(&self.streams).remove(&id).is_none();
        self.let_go(&id);
        if let (Err(why), false) = (res, cancelled || self.is_closed()) {
            // Made up here: no wire hook sees it as received.
            let line = match why {
                Failed::Refused(why) => refusal_line(&id, &why),
                why => error_line(&id, &why.into_why()),
            };
            inbox.made_up(&line, &mut notes);
        }
        if let Some(renewed) = renewed {
            self.resubscribe(renewed);
        }
    }

    /// What a POST whose work panicked leaves (`workers::Job::run` caught
    /// it): a note, and for a request not cancelled meanwhile, an error
    /// made up at once, so that its caller is not left waiting out its
    /// timeout for an answer no thread will read.
    pub(super) fn panicked(&self, id: Option<&str>, what: &str) {
        self.notes.problem(&format!(
            "the thread carrying an HTTP message panicked ({what}): caught"
        ));
        let Some(id) = id else {
            return;
        };
        let cancelled = lock(&self.streams).remove(id).is_none();
        self.let_go(id);
        if cancelled || self.is_closed() {
            return;
        }
        if let Some(inbox) = self.inbox() {
            let why = format!(
                "the client's thread carrying the request panicked ({what}): the request failed, and may have reached the server"
            );
            inbox.made_up(&error_line(id, &why), &mut NoteLimiter::default());
        }
    }

    /// Sends one request and hands each message of the answer to
    /// `deliver`, until it returns false. `Err` says, in one line, why
    /// there is no usable answer.
    pub(super) fn exchange(
        &self,
        verb: &str,
        body: &[u8],
        id: Option<&str>,
        headers: &[(String, String)],
        cursor: &mut Cursor,
        deliver: impl FnMut(Vec<u8>) -> bool,
    ) -> Result<(), Failed> {
        self.exchange_on(None, verb, body, id, headers, cursor, deliver)
    }

    /// [`Shared::exchange`], the request written already on `written`
    /// (by its caller, [`Shared::write_ahead`]), if it is given.
    #[allow(
        clippy::too_many_arguments,
        reason = "exchange's, and the connection the request went on"
    )]
    fn exchange_on(
        &self,
        written: Option<Kept>,
        verb: &str,
        body: &[u8],
        id: Option<&str>,
        headers: &[(String, String)],
        cursor: &mut Cursor,
        mut deliver: impl FnMut(Vec<u8>) -> bool,
    ) -> Result<(), Failed> {
        let url = self.endpoint.url();
        let named = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v);
        let initialize = named("Mcp-Method").is_some_and(|m| m == "initialize");
        let (mut kept, head) = self.start(written, verb, body, id, headers)?;
        // Spec 2025-11-25 basic/transports "Session Management": the
        // session is the one the answer to a (successful) initialize
        // assigns; the Python SDK also names one on refusals. A renewal's
        // own `initialize` (POSTed without a request id, `session::renew`)
        // leaves it for the renewal to adopt once the session is set up.
        let assigned = (200..300).contains(&head.status) && initialize;
        if let Some(session) = head.headers.get("mcp-session-id").filter(|_| assigned) {
            let mut slot = lock(match id {
                Some(_) => &self.session,
                None => &self.renewed,
            });
            if slot.as_deref() != Some(session) {
                *slot = Some(session.to_owned());
            }
        }
        let mut body = Body::new(&mut kept.conn, &head);
        if id.is_none() {
            // Not a request: its answer is a `202` (2025-11-25), and a
            // body kept going anyway (an event stream of keep-alive
            // comments, which no read timeout ends) is read for
            // `ACCEPT_TIMEOUT` at most.
            body.until(Instant::now() + ACCEPT_TIMEOUT);
        }
        let read = if !(200..300).contains(&head.status) {
            let messages = exchange::read_json(&mut body, self.max_message).unwrap_or_default();
            let rpc = messages.into_iter().find(|m| is_rpc_error(m));
            let answers = rpc
                .as_ref()
                .zip(id)
                .is_some_and(|(message, id)| answer_to(message, id).is_some());
            // Spec 2026-07-28 streamable-http, "Backward Compatibility": a
            // legacy server refuses the modern probe with a `400` (some
            // with a `404` or `405`), whatever its body: its era's answer.
            // Any other status (a body limit's `413`, `401`, a `5xx`) is
            // the server refusing for reasons of its own: no era, and the
            // probe fails saying so (a legacy fallback would be refused
            // the same way, and the user told the wrong thing).
            let probe = named("Mcp-Method").is_some_and(|m| m == method::SERVER_DISCOVER);
            let era_answer = matches!(head.status, 400 | 404 | 405);
            match (rpc, id) {
                // 2025-11-25 "Session Management": a `404` for a request
                // with a session id is the session's end, unless it
                // answers the request (a method not found, say).
                _ if head.status == 404 && named("Mcp-Session-Id").is_some() && !answers => {
                    Err(Failed::SessionGone)
                }
                _ if self.settings.authorizer.is_some() && wants_credentials(&head) => {
                    Err(Failed::Unauthorized(Refusal::of(&head, &url)))
                }
                (Some(message), Some(_)) if probe && !era_answer => Err(Failed::Why(format!(
                    "{}: {}",
                    status_error(&head, &url),
                    error_text(&message)
                ))),
                (Some(message), Some(id)) => {
                    deliver(with_id(message, id));
                    Ok(())
                }
                (None, Some(_)) if probe && era_answer => {
                    Err(Failed::Refused(status_error(&head, &url)))
                }
                _ => Err(Failed::Why(status_error(&head, &url))),
            }
        } else if head.is_event_stream() {
            let read = exchange::read_events(&mut body, self.max_message, cursor, &mut deliver)
                .map_err(|e| Failed::Why(format!("the event stream from {url} broke: {e}")));
            body.end_if_arrived();
            read
        } else if head.status == 202 || head.status == 204 {
            Ok(())
        } else {
            match exchange::read_json(&mut body, self.max_message) {
                Ok(messages) => {
                    for message in messages {
                        if !deliver(message) {
                            break;
                        }
                    }
                    Ok(())
                }
                Err(e) => Err(Failed::Why(format!(
                    "the answer from {url} could not be read: {e}"
                ))),
            }
        };
        let reusable = body.is_done() && head.keeps_alive();
        if reusable && !self.is_closed() {
            // The request is done with this connection: its stream no
            // longer names it, so that its cancellation, or `close`,
            // does not cut the POST that takes it next (a session's
            // renewal, on the connection its `404` came on: `close`
            // then cut the renewal, whose new session was never ended).
            // Under `streams`' lock, where a give-up takes it: one held
            // after its give-up (`late`) is shut for sending, never reused.
            if let Some(id) = id {
                let mut streams = lock(&self.streams);
                if self.is_held(id) {
                    drop(streams);
                    kept.end();
                    return read;
                }
                if let Some(slot) = streams.get_mut(id)
                    && slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, &kept.socket))
                {
                    *slot = None;
                }
            }
            // Closed meanwhile: `close` took the idle ones already.
            let mut idle = lock(&self.idle);
            if idle.len() < IDLE_CONNECTIONS && !self.is_closed() {
                idle.push(kept);
                return read;
            }
        }
        kept.end();
        read
    }

    /// Obtains new credentials after `refusal` of a request sent with
    /// `headers` (`ClientBuilder::oauth`): `Ok`, send it again, once;
    /// `Err`, why not, in one line. A POST's and a resumed POST stream's
    /// (`get_stream.rs`).
    pub(super) fn authorized_again(
        &self,
        refusal: &Refusal,
        headers: &[(String, String)],
    ) -> Result<(), String> {
        self.recover(refusal, headers, Authorizer::recover)
    }

    /// As [`Shared::authorized_again`], but by a refresh only
    /// ([`Authorizer::refresh_for`]): the legacy standalone GET stream's,
    /// which the user never asked for and must not open a browser.
    pub(super) fn refreshed_again(
        &self,
        refusal: &Refusal,
        headers: &[(String, String)],
    ) -> Result<(), String> {
        self.recover(refusal, headers, Authorizer::refresh_for)
    }

    fn recover(
        &self,
        refusal: &Refusal,
        headers: &[(String, String)],
        how: impl FnOnce(&Authorizer, u16, &[&str], Option<&str>) -> Result<(), String>,
    ) -> Result<(), String> {
        let Some(authorizer) = &self.settings.authorizer else {
            return Err(refusal.why.clone());
        };
        let sent = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
            .map(|(_, value)| value.as_str());
        let challenges: Vec<&str> = refusal.challenges.iter().map(String::as_str).collect();
        how(authorizer, refusal.status, &challenges, sent)
            .map_err(|e| format!("{}; authorization failed: {e}", refusal.why))
    }

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
    pub(super) fn start(
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
    pub(super) fn write_ahead(
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
