//! The GET streams of a legacy server (spec 2025-11-25 basic/transports,
//! "Listening for Messages from the Server" and "Resumability and
//! Redelivery"): the standalone stream the client opens once initialized,
//! on which the server sends what belongs to no request (list changes,
//! resource updates, its own requests), and the resumption of a POST's
//! stream that ended before its answer.
//!
//! Both read events the way a POST's stream is read and hand every
//! message to the link (`Inbox::deliver`), so what arrives on them is
//! routed like anything else. A `404` for the standalone stream's session
//! starts a new session (`session`), whose stream is opened after a pause
//! (a `404` is a failure, renewed or not: a longer pause each time, and
//! given up after [`MAX_FAILURES`] in a row). A
//! reconnection waits the `retry:` the server last asked for (one second
//! when it asked nothing) and sends the last event id as `Last-Event-ID`. The 2026-07-28 revision has neither stream: there a
//! response stream that ends without the answer is an error.

use std::cell::Cell;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::Shared;
use super::exchange::{self, Body, Cursor};
use super::post::{Refusal, wants_credentials};
use crate::note_limiter::NoteLimiter;
use crate::sync::lock;

/// The wait before a reconnection when the server asked for none.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// The longest wait between reconnections of the standalone stream.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Reconnections of the standalone stream in a row that bring nothing
/// before it is given up (with a note).
const MAX_FAILURES: u32 = 5;

/// Resumptions of one request's stream, in a row without a new event,
/// before the request fails.
const MAX_RESUMES: u32 = 3;

/// How long opening a legacy session waits at most for the server to
/// answer its standalone GET ([`Shared::start_listening`]): a server
/// answers it at once, or holds its head until its first event (some do
/// not flush their headers before), and that costs each connection this.
const OPEN_WAIT: Duration = Duration::from_secs(1);

/// The wait for the GET stream's head: [`OPEN_WAIT`], or less when the
/// application bounds the probe or the whole start more tightly.
pub(super) fn open_wait(probe_timeout: Duration, start_timeout: Option<Duration>) -> Duration {
    OPEN_WAIT
        .min(probe_timeout)
        .min(start_timeout.unwrap_or(Duration::MAX))
}

/// The key of the standalone stream among [`Shared::streams`]: no request
/// id's JSON text is a bare word, and [`Shared::close`] closes it with
/// the rest.
const STANDALONE: &str = "GET";

impl Shared {
    /// A legacy session is open: the server may now talk on its own
    /// ("Listening for Messages from the Server"), on the stream
    /// [`Shared::listen`] keeps, on a thread of its own. Returns once the
    /// server has answered the GET (a stream, or a refusal), or after
    /// [`open_wait`]: called on the link's writer before the message after
    /// `notifications/initialized`, so the client's next request finds the
    /// stream open. A server may drop what it sends on its own while no GET
    /// stream is open (the TypeScript SDK's transport does): a request it
    /// makes from inside the client's `tools/call` would be lost.
    pub(super) fn start_listening(shared: &Arc<Shared>) {
        let listening = Arc::clone(shared);
        let (opened, answered) = std::sync::mpsc::sync_channel(1);
        let started = thread::Builder::new()
            .name("mcp-client-http-get".into())
            .spawn(move || listening.listen(opened));
        if started.is_err() {
            shared
                .notes
                .problem("could not start a thread for the server's GET stream");
            return;
        }
        // `Err` once the first GET ended without a head: nothing to wait for.
        let _ = answered.recv_timeout(shared.settings.open_wait);
    }

    /// The stream of request `id` ended at `cursor` without its answer:
    /// a legacy server's that named an event is resumed
    /// ([`Shared::resume`]); any other is an error for the request.
    pub(super) fn unanswered(
        &self,
        id: &str,
        cursor: &mut Cursor,
        answered: &Cell<bool>,
        deliver: impl FnMut(Vec<u8>) -> bool,
    ) -> Result<(), String> {
        if cursor.last_id.is_some() && lock(&self.legacy_version).is_some() {
            self.resume(id, cursor, answered, deliver)
        } else {
            Err("the server ended the response stream without answering".into())
        }
    }

    /// The standalone GET stream, on a thread of its own, until the
    /// client closes: a server that offers none answers `405` (any `4xx`
    /// is taken as that; retrying would not change it). But a client that
    /// authorizes itself (`ClientBuilder::oauth`) and is refused for its
    /// credentials (a `401`: a token that expired while the stream was
    /// open) refreshes its token ([`Shared::refreshed_again`]) and opens
    /// the stream again at once. It never sends the user to authorize for
    /// a stream the POSTs do not need (a server may refuse its GETs alone):
    /// when there is nothing to refresh, the refresh fails, or the GET
    /// right after it is refused too, it gives the stream up, with one
    /// note, and the POSTs keep their token. `opened`
    /// hears when the first GET's head has come, and is let go after that
    /// GET.
    fn listen(&self, opened: std::sync::mpsc::SyncSender<()>) {
        let Some(inbox) = self.inbox() else {
            return;
        };
        let mut opened = Some(opened);
        let mut notes = NoteLimiter::default();
        lock(&self.streams).insert(STANDALONE.to_owned(), None);
        let mut cursor = Cursor::default();
        let mut failures = 0;
        // Whether the last GET's refusal was answered with a refresh.
        let mut refreshed = false;
        while !self.is_closed() {
            let delivered = Cell::new(false);
            let at = cursor.last_id.clone();
            let session = lock(&self.session).clone();
            let on_head = || {
                if let Some(opened) = &opened {
                    let _ = opened.try_send(());
                }
            };
            let ended = self.get(STANDALONE, &mut cursor, on_head, |message| {
                delivered.set(true);
                inbox.deliver(&message, &mut notes)
            });
            if !matches!(ended, Err(Refused::Unauthorized(..))) {
                refreshed = false;
            }
            // The first GET is over: whoever waited for its head goes on.
            opened = None;
            // A stream that moved on (a message, or a new event id: a
            // server that closes its stream for the client to poll) is
            // progress; one that brought nothing is a failure.
            if delivered.get() || cursor.last_id != at {
                failures = 0;
            } else {
                failures += 1;
            }
            match ended {
                Err(Refused::Status(404)) if session.is_some() && failures >= MAX_FAILURES => {
                    if !self.is_closed() {
                        self.notes.problem(&format!(
                            "gave up the server's GET stream after it was refused (404) {failures} times in a row, in new sessions too: list changes and the server's own requests will not arrive"
                        ));
                    }
                    return;
                }
                // The session is gone: a new one, whose stream is opened
                // after the pause. A failure still (a renewal is no
                // progress): a server that refuses the stream of every new
                // session (a replica that never saw it, one that forgets
                // at once) is not asked for new sessions in a tight loop,
                // and is given up as any other failure.
                Err(Refused::Status(404)) if session.is_some() => {
                    let gone = [("Mcp-Session-Id".to_owned(), session.unwrap_or_default())];
                    if let Some(renewed) = self.renew(&gone) {
                        cursor = Cursor::default();
                        self.resubscribe(renewed);
                    }
                }
                Err(Refused::Status(_)) => return,
                Err(Refused::Unauthorized(refusal, sent)) => {
                    // Refreshed once: the GET right after is refused too.
                    let again = if std::mem::take(&mut refreshed) {
                        Err(format!("{}, with a refreshed token too", refusal.why()))
                    } else {
                        self.refreshed_again(&refusal, &sent)
                    };
                    match again {
                        Ok(()) => {
                            refreshed = true;
                            continue;
                        }
                        Err(why) => {
                            if !self.is_closed() {
                                self.notes.problem(&format!(
                                    "gave up the server's GET stream ({why}): list changes and the server's own requests will not arrive"
                                ));
                            }
                            return;
                        }
                    }
                }
                Err(Refused::Why(why)) if failures >= MAX_FAILURES && !self.is_closed() => {
                    self.notes.problem(&format!(
                        "gave up the server's GET stream after {failures} tries ({why}): list changes and the server's own requests will not arrive"
                    ));
                    return;
                }
                Ok(()) if failures >= MAX_FAILURES && !self.is_closed() => {
                    self.notes.problem(&format!(
                        "gave up the server's GET stream after it ended {failures} times with nothing: list changes and the server's own requests will not arrive"
                    ));
                    return;
                }
                _ => {}
            }
            let wait = cursor.retry.unwrap_or(DEFAULT_RETRY) * 2u32.pow(failures.min(5));
            if !self.pause(wait.min(MAX_RETRY), STANDALONE) {
                return;
            }
        }
    }

    /// Resumes the stream of request `id` (JSON text) that ended at
    /// `cursor` before its answer: a GET with `Last-Event-ID` after the
    /// server's `retry:`, as often as a stream brings new events and up to
    /// [`MAX_RESUMES`] times in a row that do not. `answered` says when
    /// `deliver` has handed over the answer. `Err` says why the request
    /// has no answer; a request cancelled meanwhile ends `Ok`.
    fn resume(
        &self,
        id: &str,
        cursor: &mut Cursor,
        answered: &Cell<bool>,
        mut deliver: impl FnMut(Vec<u8>) -> bool,
    ) -> Result<(), String> {
        let mut tries = 0;
        while !answered.get() {
            if tries == MAX_RESUMES {
                return Err(format!(
                    "the server ended the response stream {tries} times without answering"
                ));
            }
            if !self.pause(cursor.retry.unwrap_or(DEFAULT_RETRY), id) {
                return Ok(());
            }
            let at = cursor.last_id.clone();
            match self.get(id, cursor, || {}, &mut deliver) {
                Ok(()) => {}
                Err(Refused::Status(status)) => {
                    return Err(format!(
                        "the server ended the response stream without answering and cannot resume it (GET answered HTTP {status})"
                    ));
                }
                // Refused for its credentials: new ones, and the next try
                // carries them.
                Err(Refused::Unauthorized(refusal, sent)) => {
                    self.authorized_again(&refusal, &sent).map_err(|why| {
                        format!(
                            "the server ended the response stream without answering, and refused to resume it: {why}"
                        )
                    })?;
                }
                Err(Refused::Why(why)) => {
                    return Err(format!(
                        "the server ended the response stream without answering, and resuming it failed: {why}"
                    ));
                }
            }
            tries = if cursor.last_id == at { tries + 1 } else { 0 };
        }
        Ok(())
    }

    /// One GET stream: its events go to `deliver` until it ends. `key` is
    /// its entry among the streams (a request's id, or the standalone
    /// stream's), through which a cancellation or the client's close ends
    /// it. `on_head` is called once the server's answer has begun (any
    /// status).
    fn get(
        &self,
        key: &str,
        cursor: &mut Cursor,
        on_head: impl FnOnce(),
        deliver: impl FnMut(Vec<u8>) -> bool,
    ) -> Result<(), Refused> {
        let mut headers = vec![("Accept".to_owned(), "text/event-stream".to_owned())];
        if let Some(version) = lock(&self.legacy_version).clone() {
            headers.push(("MCP-Protocol-Version".to_owned(), version));
        }
        if let Some(session) = lock(&self.session).clone() {
            headers.push(("Mcp-Session-Id".to_owned(), session));
        }
        if let Some(last) = &cursor.last_id {
            headers.push(("Last-Event-ID".to_owned(), last.clone()));
        }
        headers.extend(self.settings.headers());
        let (mut kept, head) = self.start(None, "GET", b"", Some(key), &headers)?;
        on_head();
        if self.settings.authorizer.is_some() && wants_credentials(&head) {
            let refusal = Refusal::of(&head, &self.endpoint.url());
            return Err(Refused::Unauthorized(refusal, headers));
        }
        if (400..500).contains(&head.status) {
            return Err(Refused::Status(head.status));
        }
        if !(200..300).contains(&head.status) || !head.is_event_stream() {
            return Err(Refused::Why(format!(
                "GET answered HTTP {}{}",
                head.status,
                if head.is_event_stream() {
                    ""
                } else {
                    " without an event stream"
                }
            )));
        }
        let mut body = Body::new(kept.connection(), &head);
        let read = exchange::read_events(&mut body, self.max_message, cursor, deliver)
            .map_err(|e| Refused::Why(format!("the GET stream broke: {e}")));
        kept.end();
        read
    }

    /// Waits `wait`, or less when the client closes or stream `key` is
    /// cancelled (then `false`).
    fn pause(&self, wait: Duration, key: &str) -> bool {
        let until = Instant::now() + wait;
        loop {
            if self.is_closed() || !lock(&self.streams).contains_key(key) {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            thread::sleep(left.min(Duration::from_millis(20)));
        }
    }
}

/// Why a GET brought no stream.
enum Refused {
    /// A `4xx` (`405`: the server offers no GET stream).
    Status(u16),
    /// Refused for its credentials, to a client that authorizes itself
    /// (`ClientBuilder::oauth`), with the headers the GET was sent with.
    Unauthorized(Refusal, Vec<(String, String)>),
    /// Anything else, in one line.
    Why(String),
}

impl From<String> for Refused {
    fn from(why: String) -> Refused {
        Refused::Why(why)
    }
}
