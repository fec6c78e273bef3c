//! What the application publishes to the open subscriptions
//! ([`ServerEvent`]). Plain data: the connection state (`conn`) acts on it.

use std::sync::Arc;

use crate::jsonrpc::RequestId;

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

impl TaskUpdate {
    /// The update that shows `task`; `None` if it cannot be encoded.
    pub fn of(task: &crate::types::DetailedTask) -> Option<TaskUpdate> {
        let body = crate::server::encode::to_vec(task).ok()?;
        // `{"taskId":...}` without its braces.
        let members = body.get(1..body.len().checked_sub(1)?)?.to_vec();
        Some(TaskUpdate {
            task_id: task.task.task_id.clone(),
            members,
        })
    }
}
