//! A legacy server's own requests (2025-11-25: elicitation, sampling,
//! roots), answered by the application's input handlers, each on a thread
//! of its own, at most [`MAX_ANSWERING`] at once; `ping` is answered on
//! the reader (`route.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use super::{Link, MAX_ANSWERING};
use crate::client::input::InputHandlers;
use crate::client::server_requests;
use crate::jsonrpc::{ErrorObject, RequestId, encode_error, encode_result, error_code};
use crate::sync::lock;

/// How the note on a server request the client could not read begins:
/// `could not read the server's request elicitation/create (7), answered
/// -32602: form field "addr": unknown field type "object"`.
const UNREADABLE_REQUEST: &str = "could not read the server's request";

/// The longest an answer waits for its note to reach the trace.
const NOTE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

impl Link {
    /// Answers a legacy server's request on a thread of its own: a handler
    /// may block on a user, and the reader must go on reading. At most
    /// [`MAX_ANSWERING`] at once, and one per id; past that, or if no
    /// thread can be started, the request is answered with an error at
    /// once (spec 2025-11-25 basic/index: every request gets a response).
    /// A request the server cancels meanwhile gets no answer
    /// (basic/utilities/cancellation: the receiver SHOULD not send one).
    pub(super) fn answer_request(
        self: &Arc<Link>,
        handlers: InputHandlers,
        id: RequestId,
        request: String,
        params: String,
    ) {
        let cancelled = Arc::new(AtomicBool::new(false));
        let refusal = {
            let mut answering = lock(&self.answering);
            if answering.contains_key(&id) {
                Some(ErrorObject::invalid_request(format!(
                    "request id {id} is already in use by a request the client is answering"
                )))
            } else if answering.len() >= MAX_ANSWERING {
                Some(ErrorObject::internal_error(format!(
                    "the client is answering {MAX_ANSWERING} requests of the server already, the most it answers at once: send it again once one is answered"
                )))
            } else {
                answering.insert(id.clone(), Arc::clone(&cancelled));
                None
            }
        };
        if let Some(error) = refusal {
            return self.send_error(&id, &error);
        }
        let link = Arc::clone(self);
        let answer_id = id.clone();
        let answering = thread::Builder::new()
            .name("mcp-client-answer".into())
            .spawn(move || {
                let id = answer_id;
                // A handler's panic is the server's -32603, as a server
                // handler's is the client's.
                let answer = link
                    .notes
                    .guard("input handler", || {
                        server_requests::answer(&handlers, &request, &params)
                    })
                    .unwrap_or_else(|what| {
                        Err(ErrorObject::internal_error(format!(
                            "handler panicked: {what}"
                        )))
                    });
                if let Err(error) = &answer
                    && error.code == error_code::INVALID_PARAMS
                {
                    // A request the client could not read (a form with a
                    // field no form may have): the application's handler
                    // never saw it, so its trace is told, before the
                    // server has the answer and can answer the request it
                    // asked for (the note thread is waited for, briefly).
                    // At most 10 a second: a server may send any number.
                    lock(&link.unreadable).problem(
                        &link.notes,
                        &format!(
                            "{UNREADABLE_REQUEST} {request} ({}), answered {}: {}",
                            id, error.code, error.message
                        ),
                    );
                    link.notes.flush(NOTE_WAIT);
                }
                let mut line = Vec::new();
                match answer {
                    Ok(result) => {
                        let _ = encode_result(&mut line, &id, &result);
                    }
                    Err(error) => encode_error(&mut line, Some(&id), &error),
                }
                // Sent (it never blocks) and out of the table in one step
                // under the table's lock: a cancellation read before is
                // seen, and the server, which may reuse the id once it has
                // the answer, finds it free.
                let mut answering = lock(&link.answering);
                answering.remove(&id);
                if !cancelled.load(Ordering::Acquire) {
                    link.send(line);
                }
            });
        if answering.is_err() {
            lock(&self.answering).remove(&id);
            self.notes
                .problem("could not start a thread to answer the server's request");
            self.send_error(
                &id,
                &ErrorObject::internal_error(
                    "the client could not start a thread to answer: send it again later",
                ),
            );
        }
    }

    /// Answers a legacy server's request `id` with `error`.
    fn send_error(&self, id: &RequestId, error: &ErrorObject) {
        let mut line = Vec::new();
        encode_error(&mut line, Some(id), error);
        self.send(line);
    }

    /// A legacy server cancelled its own request `id`: if it is being
    /// answered, its answer is not sent (the handler runs on: it cannot be
    /// interrupted).
    pub(super) fn cancel_answer(&self, id: &RequestId) {
        if let Some(cancelled) = lock(&self.answering).get(id) {
            cancelled.store(true, Ordering::Release);
        }
    }

    /// How many of a legacy server's requests are being answered.
    #[cfg(test)]
    pub(crate) fn answering(&self) -> usize {
        lock(&self.answering).len()
    }
}
