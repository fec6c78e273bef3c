//! What reaches a connection's owner thread through its inbox, in arrival
//! order: the reader's lines, pooled requests' replies and notifications,
//! the application's published changes, stops, and a legacy request's
//! asks. One inbox for all of them keeps their order, which the owner's
//! guarantees rest on (see `serve`).

use std::sync::Arc;

#[cfg(feature = "legacy")]
use crossbeam_channel::Sender;
#[cfg(feature = "legacy")]
use serde_json::value::RawValue;

use crate::incoming::Incoming;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::dispatch::Prepared;

/// Everything the owner thread reacts to, in arrival order.
pub(crate) enum Event {
    /// A line from the reader, and its size (it holds one read-ahead
    /// credit and that many bytes).
    Line(Incoming, usize),
    /// A request the reader prepared but did not start (see
    /// `serve::direct`): the owner acts on it as on a line. It holds one
    /// read-ahead credit.
    Prepared(Box<PreparedLine>),
    /// The reader started a request while the owner slept without the
    /// timer it needs (see `serve::direct`): a wake-up, so that the owner
    /// sleeps again with its timers set.
    DirectWork,
    /// The input ended (or failed).
    Eof,
    /// Pooled requests finished (see `pool::Finished`): a wake-up, sent
    /// only while the owner asked for one.
    Finished,
    /// A pooled request finished with this reply, for the owner to write:
    /// its handler published events, which must reach the client first
    /// (they are in the inbox ahead of this).
    Reply {
        id: RequestId,
        seq: u64,
        line: Vec<u8>,
    },
    /// [`crate::StopHandle::stop`] was called.
    Stop,
    /// A legacy request's handler asks the client for input: write this
    /// request to the client and hand its response to `reply`.
    #[cfg(feature = "legacy")]
    AskClient {
        id: RequestId,
        line: Vec<u8>,
        reply: Sender<AskReply>,
        /// The sequence number of the request that asks.
        seq: u64,
    },
    /// The request that made this ask was cancelled: cancel it at the client.
    #[cfg(feature = "legacy")]
    AskWithdrawn { id: RequestId },
    /// The application published a change, or closes subscriptions.
    /// `credited`: the publisher took a publish credit for it.
    Publish { event: ServerEvent, credited: bool },
}

/// A request prepared by the reader, for the owner to act on: the result
/// of `dispatch::prepare`, its id, and the size of its line.
pub(crate) struct PreparedLine {
    pub id: RequestId,
    pub prepared: Result<Prepared, ErrorObject>,
    pub bytes: usize,
}

/// What the application published, or asked of the open subscriptions.
#[derive(Debug, Clone)]
pub(crate) enum ServerEvent {
    ToolsListChanged,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated(Arc<str>),
    /// A task's status changed (Tasks extension).
    TaskStatus(Arc<TaskUpdate>),
    /// End every open subscription gracefully.
    CloseAll,
    /// End the subscriptions with this id gracefully.
    Close(RequestId),
}

/// A task's new state, for `notifications/tasks`.
#[derive(Debug)]
pub(crate) struct TaskUpdate {
    pub task_id: String,
    /// The members of its `DetailedTask` object, encoded, without the
    /// braces: the notification's params are `_meta` and then these.
    pub members: Vec<u8>,
}

/// What a client sent back for one ask.
#[cfg(feature = "legacy")]
pub(crate) type AskReply = Result<Box<RawValue>, AskFailed>;

/// Why an ask got no answer.
#[cfg(feature = "legacy")]
pub(crate) enum AskFailed {
    /// The client answered with this error.
    Client(ErrorObject),
    /// The server did not send the ask: too many requests already wait for
    /// this client's answers.
    Refused(ErrorObject),
}
