use super::{Link, Outbound, describe};
#[cfg(feature = "http")]
use crate::client::wire::WireDirection;
use crate::error::Error;
use crate::jsonrpc::{RequestId, encode_notification};
use crate::sync::lock;

impl Link {
    /// Sends one line to the server: written by the caller when that
    /// cannot block, queued for the writer thread otherwise (see
    /// `input`). Fails when the connection is gone
    /// ([`Error::Disconnected`]), or when the server has not read what
    /// waits already (`input::MAX_QUEUED_BYTES`; [`Error::Io`]).
    pub fn try_send(&self, mut line: Vec<u8>) -> Result<(), Error> {
        if !self.is_alive() {
            return Err(Error::Disconnected);
        }
        let (writer, input) = match &self.out {
            Outbound::Stream { writer, input } => (writer, input),
            #[cfg(feature = "http")]
            Outbound::Carrier(carrier) => {
                if let Some(wire) = &self.wire {
                    // A panic in it is caught: the line is still sent.
                    let _ = (self.notes).guard("wire", || wire(WireDirection::Sent, &line));
                }
                return carrier.send(line);
            }
        };
        line.push(b'\n');
        // A clone, and the lock let go before the line is sent: sending may
        // call the application's wire hook, and `close_input` takes this
        // lock, so a hook that blocks on this caller's line must not hold
        // `close` (it held it without a bound). A line sent on a clone
        // taken before `close_input` is still queued ahead of the input's
        // end: the writer thread ends once every clone is gone.
        let queue = lock(writer).clone();
        match queue {
            Some(queue) => input.send(line, &queue),
            None => Err(Error::Disconnected),
        }
    }

    /// How many bytes of what was sent the server has not read yet, where
    /// that can be known (a spawned server's pipe, on Linux; never over a
    /// carrier).
    pub fn unread(&self) -> Option<usize> {
        match &self.out {
            Outbound::Stream { input, .. } => input.unread(),
            #[cfg(feature = "http")]
            Outbound::Carrier(carrier) => carrier.unread(),
        }
    }

    /// Whether the server has read none of what was sent (see
    /// [`unread`](Link::unread)): a server still starting, or one that
    /// never reads.
    pub fn read_nothing(&self) -> Option<bool> {
        match &self.out {
            Outbound::Stream { input, .. } => input.read_nothing(),
            #[cfg(feature = "http")]
            Outbound::Carrier(_) => None,
        }
    }

    /// [`try_send`](Link::try_send) for a line no caller hears the failure
    /// of (a notification, an answer): whether it was sent. A dead
    /// connection needs no word; a line refused because the server has not
    /// read what waits is noted (at most 10 a second), saying what it was,
    /// so that a cancellation or an answer the server never got is not lost
    /// silently.
    pub fn send(&self, line: Vec<u8>) -> bool {
        // Read before the line goes, only when it is likely refused: the
        // common case reads nothing.
        let what = match &self.out {
            Outbound::Stream { input, .. } => input.would_refuse(line.len() + 1),
            #[cfg(feature = "http")]
            Outbound::Carrier(_) => false,
        };
        let what = what.then(|| describe(&line));
        match self.try_send(line) {
            Ok(()) => true,
            Err(Error::Disconnected) => false,
            Err(e) => {
                let what = what.unwrap_or_else(|| "a line".into());
                let note = format!("did not send {what}: {e}");
                lock(&self.unsent).problem(&self.notes, &note);
                false
            }
        }
    }

    /// Cancels the request or listen `id` at the server
    /// (`notifications/cancelled`), with `reason` when there is one. A
    /// dead connection needs no cancellation.
    pub fn send_cancelled(&self, id: &RequestId, reason: Option<&str>) {
        let mut line = Vec::new();
        let mut params = serde_json::json!({ "requestId": id });
        if let Some(reason) = reason {
            params["reason"] = reason.into();
        }
        if encode_notification(
            &mut line,
            crate::types::method::NOTIFICATION_CANCELLED,
            &params,
        )
        .is_ok()
        {
            self.send(line);
        }
    }

    /// Closes the server's input once everything queued is written: the
    /// writer thread drops its end. A carrier closes (`Carrier::close`).
    pub fn close_input(&self) {
        match &self.out {
            Outbound::Stream { writer, .. } => drop(lock(writer).take()),
            #[cfg(feature = "http")]
            Outbound::Carrier(carrier) => carrier.close(),
        }
    }
}
