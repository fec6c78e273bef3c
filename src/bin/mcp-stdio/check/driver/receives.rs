use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use serde_json::Value;

use super::{
    Answer, Incoming, KEEP_BEFORE, MAX_LINE, Missing, Msg, READ_AHEAD_LINES, STARTUP, Session,
    malformed,
};
use crate::check::short;

impl Session {
    /// The next message, waiting until `deadline`. Past it, only what
    /// was already read ahead (at most `READ_AHEAD_LINES` lines): a server
    /// that writes faster than the checker reads cannot hold a wait open
    /// for ever (the channel is never empty then, and a receive that
    /// finds a message never looks at its deadline).
    /// While the server has said nothing since it started, the wait
    /// lasts until `STARTUP` has passed (this waits for an answer; `drain`
    /// and `wait_exit`, which may expect silence, do not).
    pub fn recv_until(&mut self, deadline: Instant) -> Option<Msg> {
        self.recv(deadline, true)
    }

    pub(super) fn recv(&mut self, deadline: Instant, answer: bool) -> Option<Msg> {
        if let Some(msg) = self.backlog.pop_front() {
            return Some(msg);
        }
        if self.ended {
            return None;
        }
        let deadline = if answer && self.starting {
            deadline.max(self.started + STARTUP)
        } else {
            deadline
        };
        if Instant::now() >= deadline {
            self.overdue += 1;
            if self.overdue > READ_AHEAD_LINES {
                return None;
            }
        } else {
            self.overdue = 0;
        }
        loop {
            match self.incoming.recv_deadline(deadline) {
                Ok(Incoming::Line(bytes, lease)) => {
                    let msg = self.take_line(&bytes);
                    drop(lease);
                    if self.is_late(&msg) {
                        continue;
                    }
                    return Some(msg);
                }
                Ok(Incoming::Cut(bytes, lease)) => {
                    self.starting = false;
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    drop(lease);
                    self.transcript.push("received", &text);
                    self.transcript.note(&format!(
                        "that message was longer than the checker keeps ({} MiB of a line, 16 MiB of an SSE event): the rest was dropped",
                        MAX_LINE >> 20
                    ));
                    return Some(Msg::Cut(text));
                }
                Ok(Incoming::Eof) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    self.transcript.note("the server's output ended");
                    return None;
                }
                Err(RecvTimeoutError::Timeout) => return None,
            }
        }
    }

    /// Whether `msg` is the response to a request whose wait has ended
    /// (noted in the evidence, then passed over).
    fn is_late(&mut self, msg: &Msg) -> bool {
        let Some(id) = msg.response_id() else {
            return false;
        };
        let Some(at) = self.abandoned.iter().position(|a| *a == id) else {
            return false;
        };
        self.abandoned.swap_remove(at);
        self.transcript.note(&format!(
            "a late response to the request with id {id}, after its wait had ended: not taken for another's"
        ));
        true
    }

    /// Waits again for the response to `id` after a wait for it ended:
    /// it is read as any other message.
    pub fn reclaim(&mut self, id: &Value) {
        self.abandoned.retain(|a| a != id);
    }

    /// Stops waiting for the response to `id`: if it comes later, it is
    /// evidence only.
    pub fn abandon(&mut self, id: &Value) {
        if self.abandoned.len() >= READ_AHEAD_LINES {
            self.abandoned.remove(0);
        }
        self.abandoned.push(id.clone());
    }

    fn take_line(&mut self, bytes: &[u8]) -> Msg {
        self.starting = false;
        let text = String::from_utf8_lossy(bytes).into_owned();
        self.transcript.push("received", &text);
        match serde_json::from_slice::<Value>(bytes) {
            Ok(value) => Msg::Json(value, text),
            // JSON all the same when it can be read past its values, and
            // is UTF-8: `IgnoredAny` does not look at a string's bytes, and
            // JSON text MUST be UTF-8 (RFC 8259 section 8.1).
            Err(e)
                if std::str::from_utf8(bytes).is_ok()
                    && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() =>
            {
                Msg::Unreadable(text, e.to_string())
            }
            Err(_) => Msg::NotJson(text),
        }
    }

    /// The response to `id`, waiting at most `wait`; what came before it
    /// is dropped (it is in the evidence).
    pub fn response(&mut self, id: &Value, wait: Duration) -> Result<Value, Missing> {
        self.response_with(id, wait).map(|(reply, _)| reply)
    }

    /// The response to `id` and every message that came before it (those
    /// are consumed). A response the checker cannot read whole is
    /// `Missing::Unreadable` (what came before it is dropped then).
    pub fn response_with(
        &mut self,
        id: &Value,
        wait: Duration,
    ) -> Result<(Value, Vec<Msg>), Missing> {
        match self.answer_with(id, wait)? {
            (Answer::Json(reply), before) => Ok((reply, before)),
            (Answer::Unreadable { why, line, error }, _) => Err(Missing::Unreadable {
                why,
                line: short(&line, 120),
                error,
            }),
            (Answer::Malformed { why, msg }, _) => Err(Missing::Malformed {
                why,
                line: short(msg.text(), 120),
            }),
        }
    }

    /// Whether `id` was answered within `wait`, readable or not: for a
    /// check that needs an answer, not its content.
    pub fn answered(&mut self, id: &Value, wait: Duration) -> Result<(), Missing> {
        match self.response(id, wait) {
            Err(e) if !e.answered() => Err(e),
            _ => Ok(()),
        }
    }

    /// The answer to `id`, readable or not, and every message that came
    /// before it (those are consumed).
    pub fn answer_with(
        &mut self,
        id: &Value,
        wait: Duration,
    ) -> Result<(Answer, Vec<Msg>), Missing> {
        let began = Instant::now();
        let deadline = began + wait;
        let mut before = Vec::new();
        let mut kept = 0;
        let mut other_id = None;
        let mut not_json = None;
        loop {
            match self.recv_until(deadline) {
                Some(msg) => {
                    let response_id = msg.response_id();
                    if response_id.as_ref() == Some(id) {
                        // Read again for what `Value` hides: a member
                        // twice (it keeps the last).
                        if let Some(why) = malformed(msg.text()) {
                            return Ok((Answer::Malformed { why, msg }, before));
                        }
                        let error = msg.unreadable_response().is_some_and(|(_, error)| error);
                        return Ok((
                            match msg {
                                Msg::Json(reply, _) => Answer::Json(reply),
                                Msg::Unreadable(text, why) => Answer::Unreadable {
                                    error,
                                    line: text,
                                    why,
                                },
                                _ => unreachable!("a response is JSON"),
                            },
                            before,
                        ));
                    }
                    if other_id.is_none() {
                        other_id = response_id;
                    }
                    if not_json.is_none()
                        && let Msg::NotJson(text) = &msg
                    {
                        not_json = Some(short(text, 80));
                    }
                    kept += msg.text().len();
                    if kept <= KEEP_BEFORE {
                        before.push(msg);
                    }
                }
                None if self.ended => return Err(Missing::Eof),
                None => {
                    // What a miss says it waited: the time it did. A server
                    // that has said nothing yet gets until `STARTUP`
                    // (`recv`), one that speaks during the wait only `wait`.
                    let wait = began.elapsed().max(wait);
                    self.abandon(id);
                    return Err(match (other_id, not_json) {
                        (Some(back), _) => Missing::OtherId {
                            wait,
                            sent: id.clone(),
                            back,
                        },
                        (None, Some(line)) => Missing::NotJson { wait, line },
                        (None, None) => Missing::Timeout(wait),
                    });
                }
            }
        }
    }

    /// Every message that arrives within `wait`.
    pub fn drain(&mut self, wait: Duration) -> Vec<Msg> {
        let deadline = Instant::now() + wait;
        let (mut got, mut kept) = (Vec::new(), 0);
        while let Some(msg) = self.recv(deadline, false) {
            kept += msg.text().len();
            if kept <= KEEP_BEFORE {
                got.push(msg);
            }
        }
        got
    }
}
