//! The server's requests to a legacy client (asks, see `legacy::input`)
//! awaiting its answers, for one connection: written through the
//! connection only while the request that asks is in flight
//! (`Conn::notify`), answered by the client's responses, withdrawn
//! (`notifications/cancelled` to the client) when that request is
//! cancelled or gives up waiting, dropped when the client will answer
//! nothing more.
//!
//! The table is held while it changes the connection (this lock, then the
//! connection's), so an ask is either written before its request's
//! cancellation and then withdrawn by it, or refused; what that wrote is
//! sent once the table is let go (`ConnHandle::act_unsent`), so a client
//! that stops reading holds no thread that needs the table (the reader's
//! cancellations and answers).

use std::sync::{Mutex, MutexGuard, PoisonError};

use crossbeam_channel::{Receiver, Sender};
use serde_json::json;
use serde_json::value::RawValue;

use crate::incoming::Reply;
use crate::jsonrpc::{ErrorObject, IdMap, RequestId, encode_notification};
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::conn::{Conn, LineKind};
use crate::server::context::Holding;
use crate::types::method;

/// What a client sent back for one ask.
pub(crate) type AskReply = Result<Box<RawValue>, AskFailed>;

/// Why an ask got no answer.
pub(crate) enum AskFailed {
    /// The client answered with this error.
    Client(ErrorObject),
    /// The ask was not sent: as many requests wait for this client's
    /// answers as the connection has slots.
    Full,
    /// The ask was not sent, or will not be answered: its request was
    /// cancelled, or the connection is closing.
    Closed,
    /// The ask was not sent: the session's client has not sent
    /// `notifications/initialized` yet (2025-11-25 basic/lifecycle: the
    /// server sends no request but `ping` before it).
    NotInitialized,
}

/// One connection's asks.
pub(crate) struct Asks {
    conn: ConnHandle,
    state: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    asks: IdMap<Ask>,
    /// Nothing more comes from the client: no ask is sent any more.
    closed: bool,
    /// A session opened here whose client has not sent
    /// `notifications/initialized` yet: no ask is sent until it does.
    uninitialized: bool,
}

/// One of the server's requests to the client.
struct Ask {
    reply: Sender<AskReply>,
    /// The request that asked.
    request: RequestId,
}

impl Asks {
    /// The asks of `conn`'s requests.
    pub fn new(conn: &ConnHandle) -> Asks {
        Asks {
            conn: conn.clone(),
            state: Mutex::default(),
        }
    }

    /// Writes `line`, ask `id` of request `request` (sequence `seq`), if
    /// that request is still in flight: its answer will come on the
    /// returned channel. With `give_up_slot` (a round's first ask) the
    /// request gives up its slot in the same step (`Conn::stop_holding`),
    /// and the `bool` says whether it did: it takes it again with
    /// [`Asks::hold_again`] once the round's answers are in. Refused
    /// (`Full`) when as many requests wait so as the connection has
    /// slots: the requests behind them could fill the queue and stop the
    /// reader, which reads the answers. Refused (`Closed`) for a request no
    /// longer in flight (nothing more is sent for a cancelled request) and
    /// once the client will answer nothing more; refused (`NotInitialized`)
    /// between a session's `initialize` and its `notifications/initialized`.
    pub fn ask(
        &self,
        request: &RequestId,
        seq: u64,
        id: RequestId,
        line: Vec<u8>,
        give_up_slot: bool,
    ) -> Result<(Receiver<AskReply>, bool), AskFailed> {
        let mut open = self.lock();
        if open.closed {
            return Err(AskFailed::Closed);
        }
        if open.uninitialized {
            return Err(AskFailed::NotInitialized);
        }
        let (gave_up, written) = self.conn.act_unsent(|c| {
            let holding = match give_up_slot {
                true => c.stop_holding(request, seq),
                false => Holding::NoSlot,
            };
            if holding == Holding::Full {
                return Err(AskFailed::Full);
            }
            match c.notify(request, seq, line) {
                true => Ok(holding == Holding::Released),
                false => Err(AskFailed::Closed),
            }
        });
        let gave_up = gave_up?;
        let (reply, answer) = crossbeam_channel::bounded(1);
        let request = request.clone();
        open.asks.insert(id, Ask { reply, request });
        drop(open);
        self.send(Sending::Now, written);
        Ok((answer, gave_up))
    }

    /// A session opened here (`initialize` answered: `true`) waits for its
    /// client's `notifications/initialized`, or (`false`) has it: asks are
    /// refused while it waits.
    pub fn set_uninitialized(&self, uninitialized: bool) {
        self.lock().uninitialized = uninitialized;
    }

    /// Request `request` (sequence `seq`) has its round's answers (or gave
    /// up on them): it holds its slot again.
    pub fn hold_again(&self, request: &RequestId, seq: u64) {
        self.conn.act(Sending::Now, |c| c.hold_again(request, seq));
    }

    /// The asks `ids` will not be awaited any more (their request failed,
    /// or gave up waiting): each still open is cancelled at the client.
    pub fn withdraw(&self, ids: &[RequestId]) {
        let mut open = self.lock();
        let withdrawn: Vec<&RequestId> = (ids.iter())
            .filter(|id| open.asks.remove(*id).is_some())
            .collect();
        let ((), written) = self.conn.act_unsent(|c| {
            withdrawn
                .into_iter()
                .for_each(|id| write_ask_cancelled(c, id));
        });
        drop(open);
        self.send(Sending::Now, written);
    }

    /// A response from the client: the answer to an ask, taken (`Ok`), or
    /// handed back when it answers none.
    pub fn answer(&self, id: Option<&RequestId>, reply: Reply) -> Result<(), Reply> {
        let ask = id.and_then(|id| self.lock().asks.remove(id));
        match ask {
            Some(ask) => {
                let _ = ask
                    .reply
                    .send(reply.into_result().map_err(AskFailed::Client));
                Ok(())
            }
            None => Err(reply),
        }
    }

    /// `notifications/cancelled` for request `id` (`Conn::cancel`): its
    /// open asks are cancelled at the client and dropped, which ends its
    /// handler's wait for them. Returns whether a request in flight was
    /// cancelled.
    pub fn cancel(&self, id: &RequestId, sending: Sending) -> bool {
        let mut open = self.lock();
        let ids: Vec<RequestId> = (open.asks)
            .extract_if(|_, ask| ask.request == *id)
            .map(|(ask_id, _)| ask_id)
            .collect();
        let (cancelled, written) = self.conn.act_unsent(|c| {
            ids.iter().for_each(|ask| write_ask_cancelled(c, ask));
            c.cancel(id)
        });
        drop(open);
        self.send(sending, written);
        cancelled
    }

    /// Sends what a change made under the table's lock wrote, once the
    /// lock is let go.
    fn send(&self, sending: Sending, written: Option<u64>) {
        if let Some(written) = written {
            self.conn.send_as(sending, written);
        }
    }

    /// Nothing more comes from the client: the asks still open are dropped
    /// (their handlers stop waiting), and no ask is sent from here on.
    pub fn close(&self) {
        let mut open = self.lock();
        open.closed = true;
        open.asks.clear();
    }

    fn lock(&self) -> MutexGuard<'_, Open> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Writes `notifications/cancelled` for the server's own request `id`.
fn write_ask_cancelled(conn: &mut Conn, id: &RequestId) {
    let mut line = Vec::with_capacity(96);
    let params = json!({ "requestId": id, "reason": "the request was cancelled" });
    if encode_notification(&mut line, method::NOTIFICATION_CANCELLED, &params).is_ok() {
        conn.write_line(line, LineKind::Message);
    }
}
