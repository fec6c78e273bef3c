//! Who hears a task's status: the tasks a listen may follow, the tasks
//! followed here (for a resync once the feed is back), and the
//! publication of each status change.

use std::sync::Arc;

use super::{FOLLOWED_KEPT, Tasks};
use crate::server::change_feed::Change;
use crate::server::event::{ServerEvent, TaskUpdate};
use crate::server::request_meta::Owner;
use crate::types::DetailedTask;

impl Tasks {
    /// Which of `task_ids` a listen by a request whose token stands for
    /// `caller` may follow: the ones the store knows and admits it to
    /// ([`Tasks::read_by`]).
    /// With a feed they are remembered, for [`Tasks::tell_listens`], and
    /// the status just read is delivered to the listens already open here
    /// (before this one is), unless one as new was: from then on no older
    /// status of the task is shown on this replica, however late it comes
    /// (a publisher that kept it through an outage, a message replayed to
    /// a replica started since), and the listens open before hear it now,
    /// since its own message, when it comes, is no longer new here.
    pub fn known(&self, task_ids: &[String], caller: Option<&Owner>) -> Vec<String> {
        let feed = self.connections.replicas.has_feed();
        let mut known: Vec<String> = Vec::new();
        for id in task_ids {
            if !known.contains(id)
                && let Ok(Some(stored)) = self.read_by(id, caller)
            {
                if feed {
                    self.deliver_here(&stored.task);
                }
                known.push(id.clone());
            }
        }
        if feed {
            let mut followed = self.followed();
            for id in &known {
                if !followed.contains(id) {
                    followed.push(id.clone());
                }
            }
            let over = followed.len().saturating_sub(FOLLOWED_KEPT);
            followed.drain(..over);
        }
        known
    }

    fn followed(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.followed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After the feed was cut off and is back (statuses sent meanwhile may
    /// be lost): each task the listens here follow is read again, and its
    /// status delivered to them, unless one at least as new was
    /// (`Replicas::deliver_status`: a listen hears what it missed, once).
    /// A task that ended or is gone is forgotten: nothing follows it.
    pub(crate) fn tell_listens(&self) {
        let followed = self.followed().clone();
        for task_id in followed {
            let over = match self.store.get(&task_id) {
                Ok(Some(stored)) => {
                    self.deliver_here(&stored.task);
                    stored.task.task.status.is_terminal()
                }
                Ok(None) => true,
                // Out of reach: the next reconnection tells it.
                Err(_) => false,
            };
            if over {
                self.followed().retain(|id| *id != task_id);
            }
        }
    }

    /// Sends the task's state to the subscriptions that follow it, here
    /// (unless a status as new was delivered here: a listen's opening, or
    /// a reconnection, may have read it from the store first) and on the
    /// other replicas, always: each of them drops what is not new there.
    pub fn publish(&self, task: &DetailedTask) {
        self.deliver_here(task);
        self.connections.replicas.send(&Change::TaskStatus {
            task: Box::new(task.clone()),
        });
    }

    /// Sends the task's state to the subscriptions of this server only.
    fn deliver_here(&self, task: &DetailedTask) {
        let Some(update) = TaskUpdate::of(task) else {
            return;
        };
        let connections = &self.connections;
        connections.replicas.deliver_status(task, || {
            connections.publish_here(ServerEvent::TaskStatus(Arc::new(update)));
        });
    }
}
