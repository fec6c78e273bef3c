//! One exchange: the request sent (`connection`), its answer's head judged
//! (a session assigned, a session gone, a refusal, an era probe's
//! answer), each message of its body handed on as it comes, and the
//! connection kept for the next request when it is whole.

use std::sync::Arc;
use std::time::Instant;

use super::{Failed, Kept, Refusal, wants_credentials};
use crate::client::http::exchange::{self, Body, Cursor};
use crate::client::http::messages::{answer_to, error_text, is_rpc_error, status_error, with_id};
use crate::client::http::{ACCEPT_TIMEOUT, IDLE_CONNECTIONS, Shared};
use crate::sync::lock;
use crate::types::method;

impl Shared {
    /// Sends one request and hands each message of the answer to
    /// `deliver`, until it returns false. `Err` says, in one line, why
    /// there is no usable answer.
    pub(in crate::client::http) fn exchange(
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
    pub(super) fn exchange_on(
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
}
