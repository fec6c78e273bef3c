//! One message's POST and its whole answer, on a worker (`workers`): each
//! message of the answer goes to the link (`Inbox::deliver`) as it comes.
//! A request's answer ends its reading: a stream the server leaves open
//! after it is closed (its connection dropped), not read until the client
//! closes.
//!
//! Its parts: `connection.rs` the connection a request goes on (an idle
//! one or a new one) and the request written on it, up to its answer's
//! head; `answer.rs` one exchange, the answer's head judged and its body
//! read; `refusal.rs` why an exchange brought no usable answer, and new
//! credentials after a refusal for want of them.

mod answer;
mod connection;
mod refusal;

use std::cell::Cell;

use crate::client::http::exchange::Cursor;
use crate::client::http::messages::{Answer, answer_to, answers_another, error_line, refusal_line};
use crate::client::http::{Outgoing, OutgoingParams, Shared};
use crate::jsonrpc::error_code as rpc_code;
use crate::note_limiter::NoteLimiter;
use crate::sync::lock;
use crate::types::method;

pub(super) use connection::Kept;
pub(super) use refusal::{Failed, Refusal, wants_credentials};

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
}
