//! [`ChangeFeed`]: what is published on one replica of a server reaches the
//! subscriptions held by the others.
//!
//! A server behind a load balancer runs as several processes (replicas),
//! and a client's `subscriptions/listen` stream is held by one of them,
//! while the change it waits for (a `tools/call` that adds a tool, a task
//! that finishes) may happen on another. With a feed set
//! ([`ServerBuilder::change_feed`](crate::ServerBuilder::change_feed)),
//! every change the server publishes (through its [`Notifier`](crate::Notifier),
//! and each task's new status) is delivered to this server's own
//! subscriptions, as without a feed, and also handed to the feed, which
//! carries it to the other replicas; what the feed receives from them is
//! delivered to this server's subscriptions only, never sent on again.
//!
//! Closing subscriptions (`Notifier::close_subscriptions`) stays local: it
//! ends this server's streams.
//!
//! The feed also tells a replica that a task it runs was answered or
//! cancelled on another one ([`Change::TaskAnswers`], [`Change::TaskStop`]).
//! Such a message only says where to look: the answers and the
//! cancellation are in the task store, where the replica that runs the
//! task reads them (`tasks`), so a lost message costs time (until the
//! server reads its tasks again) and a forged one changes nothing.
//!
//! A feed that was cut off and is back tells the server so
//! ([`Change::Reconnected`]): its listens hear that every list may have
//! changed, the tasks it runs are read again, and so are the tasks its
//! listens follow, whose statuses they may have missed.
//!
//! A task's status may reach a replica late (a publisher that kept it
//! through an outage, a message replayed by a client of the bus), and from
//! several replicas: a listen is never shown one older than the last it
//! was shown (`Replicas::deliver_status`, by `lastUpdatedAt`, which every
//! change of a task moves on), nor one older than the store had when it
//! opened (`Tasks::known` delivers what it read to the listens already
//! open, and the older statuses are then dropped as old).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::server::event::{ServerEvent, TaskUpdate};
use crate::types::DetailedTask;

/// A change published on a server, as it travels between replicas.
/// Serializes to a small JSON object (`{"kind":"resourceUpdated","uri":..}`),
/// which is what a feed over a message bus sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Change {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated {
        /// The resource that changed.
        uri: String,
    },
    /// A task's new state (Tasks extension, `notifications/tasks`).
    TaskStatus {
        /// The task as `tasks/get` would show it.
        task: Box<DetailedTask>,
    },
    /// A replica stored answers (`tasks/update`) for a task another
    /// replica may run: the handler waiting there takes them from the
    /// store. Not a subscription's event.
    TaskAnswers {
        /// The task.
        task_id: String,
    },
    /// A replica cancelled (`tasks/cancel`) a task another replica may
    /// run: that replica reads the task and, if the store says it ended,
    /// trips its handler's token. Not a subscription's event.
    TaskStop {
        /// The task.
        task_id: String,
    },
    /// A feed delivers it to its own replica after it was cut off (Redis
    /// restarted, the connection broke or went silent) and is back, since
    /// changes sent meanwhile may be lost; a feed may also send it to the
    /// others when it had to drop changes of its own (`RedisChangeFeed`
    /// does, when its outbox overflowed). The server's listens hear that
    /// each list may have changed and the current status of each task they
    /// follow, and the tasks it runs are read again.
    Reconnected,
}

/// Carries the changes a server publishes to the other replicas of the
/// same server, and theirs to it. Implement it over the message bus the
/// replicas share (the `redis` feature has one on Redis pub/sub).
///
/// An implementation sends a replica's changes in the order they were
/// published, and does not hand a replica back its own changes: it
/// delivered them already.
pub trait ChangeFeed: Send + Sync {
    /// Sends a change published on this replica to the others. Called on
    /// the publishing thread, after this replica's own subscriptions got
    /// it: it should not block for long (queue, and send from a thread of
    /// the feed's own).
    fn send(&self, change: &Change);

    /// Starts delivering the changes the other replicas send: `deliver`
    /// for each, in the order each replica sent them, from a thread of the
    /// feed's own, until the feed is dropped; and [`Change::Reconnected`]
    /// after a break in which some may have been lost. Called once, when
    /// the server is built.
    fn receive(&self, deliver: Box<dyn Fn(Change) + Send + Sync>);

    /// A key the replicas share, for the feed alone: derived from
    /// [`ServerBuilder::request_state_key`](crate::ServerBuilder::request_state_key),
    /// given by the server before [`receive`](ChangeFeed::receive) when one
    /// was set. A feed over a bus that others can write to (or read)
    /// should authenticate what it sends with it and drop what does not
    /// verify, or was taken already, so that a stranger cannot show a
    /// listener a change, nor show it one again. The default does nothing.
    fn authenticate(&self, key: &[u8; 32]) {
        let _ = key;
    }

    /// Where the feed says what the server's operator should know
    /// (messages that do not verify, and why that may be): the server's
    /// trace ([`ServerBuilder::trace`](crate::ServerBuilder::trace)), given
    /// by the server before [`receive`](ChangeFeed::receive). The default
    /// keeps nothing.
    fn trace(&self, trace: Arc<dyn Fn(&str) + Send + Sync>) {
        let _ = trace;
    }
}

/// A server's link to its other replicas: its feed, if it has one, where
/// the task signals they send go, and the task statuses delivered here.
#[derive(Default)]
pub(crate) struct Replicas {
    feed: OnceLock<Arc<dyn ChangeFeed>>,
    task_signals: Arc<OnceLock<Box<TaskSignals>>>,
    delivered: Arc<Mutex<Delivered>>,
}

/// How many tasks [`Delivered`] remembers; past it, those delivered longest
/// ago are forgotten first.
const DELIVERED_KEPT: usize = 65_536;

/// How long [`Delivered`] is sure to remember a task's last status.
const DELIVERED_FOR: Duration = Duration::from_secs(600);

/// The `lastUpdatedAt` of the newest status of each task delivered to this
/// server's listens, and when.
#[derive(Default)]
struct Delivered {
    last: HashMap<String, (String, Instant)>,
}

impl Delivered {
    /// Whether `task`'s status is newer than every status of it delivered
    /// here; if it is, it counts as delivered from now on. Timestamps of
    /// one format order as strings.
    fn take(&mut self, task: &DetailedTask) -> bool {
        let (id, stamp) = (&task.task.task_id, &task.task.last_updated_at);
        if let Some((last, _)) = self.last.get(id)
            && last >= stamp
        {
            return false;
        }
        if self.last.len() >= DELIVERED_KEPT && !self.last.contains_key(id) {
            self.forget_old();
        }
        self.last
            .insert(id.clone(), (stamp.clone(), Instant::now()));
        true
    }

    /// Forgets the tasks delivered more than [`DELIVERED_FOR`] ago, and if
    /// that is not enough, the older half.
    fn forget_old(&mut self) {
        let now = Instant::now();
        self.last
            .retain(|_, (_, at)| now.duration_since(*at) < DELIVERED_FOR);
        if self.last.len() >= DELIVERED_KEPT {
            let mut times: Vec<Instant> = self.last.values().map(|(_, at)| *at).collect();
            let middle = times.len() / 2;
            let (_, median, _) = times.select_nth_unstable(middle);
            let median = *median;
            self.last.retain(|_, (_, at)| *at > median);
        }
    }
}

/// Takes a task signal from another replica ([`Change::TaskAnswers`],
/// [`Change::TaskStop`]).
pub(crate) type TaskSignals = dyn Fn(Change) + Send + Sync;

impl Replicas {
    /// Sends what this server publishes to the other replicas too, and
    /// hands what they send to `deliver` (a subscription's event) or to
    /// the task signals.
    pub fn set_feed(
        &self,
        feed: Arc<dyn ChangeFeed>,
        deliver: Box<dyn Fn(ServerEvent) + Send + Sync>,
    ) {
        let task_signals = Arc::clone(&self.task_signals);
        let delivered = Arc::clone(&self.delivered);
        feed.receive(Box::new(move |change| {
            if let Change::Reconnected = change {
                // What was sent meanwhile may be lost: every list may have
                // changed, for the listens here.
                deliver(ServerEvent::ToolsListChanged);
                deliver(ServerEvent::PromptsListChanged);
                deliver(ServerEvent::ResourcesListChanged);
            }
            if let Change::TaskAnswers { .. } | Change::TaskStop { .. } | Change::Reconnected =
                change
            {
                if let Some(signal) = task_signals.get() {
                    signal(change);
                }
            } else if let Change::TaskStatus { task } = &change {
                let mut delivered = lock(&delivered);
                if delivered.take(task)
                    && let Some(event) = to_event(&change)
                {
                    // Under the lock: in order with every other status.
                    deliver(event);
                }
            } else if let Some(event) = to_event(&change) {
                deliver(event);
            }
        }));
        let _ = self.feed.set(feed);
    }

    /// Whether this server has other replicas (a feed).
    pub fn has_feed(&self) -> bool {
        self.feed.get().is_some()
    }

    /// Runs `deliver` (which delivers `task`'s status to this server's
    /// listens) unless a status of that task at least as new was delivered
    /// here already: then a listen would see the task go back, or hear the
    /// same status twice. Under the lock that every delivery of a status
    /// from elsewhere takes, so that none overtakes another. Without a
    /// feed, every status is this server's own, in order: `deliver` runs.
    pub fn deliver_status(&self, task: &DetailedTask, deliver: impl FnOnce()) {
        if !self.has_feed() {
            deliver();
            return;
        }
        let mut delivered = lock(&self.delivered);
        if delivered.take(task) {
            deliver();
        }
    }

    /// Where task signals from other replicas go (set once, by `tasks`).
    pub fn on_task_signal(&self, signals: Box<TaskSignals>) {
        let _ = self.task_signals.set(signals);
    }

    /// Sends a change to the other replicas; `false` without a feed.
    pub fn send(&self, change: &Change) -> bool {
        self.feed.get().map(|feed| feed.send(change)).is_some()
    }
}

fn lock(delivered: &Mutex<Delivered>) -> MutexGuard<'_, Delivered> {
    delivered.lock().unwrap_or_else(|e| e.into_inner())
}

/// A change as this server's subscriptions take it.
pub(crate) fn to_event(change: &Change) -> Option<ServerEvent> {
    Some(match change {
        Change::ToolsListChanged => ServerEvent::ToolsListChanged,
        Change::PromptsListChanged => ServerEvent::PromptsListChanged,
        Change::ResourcesListChanged => ServerEvent::ResourcesListChanged,
        Change::ResourceUpdated { uri } => ServerEvent::ResourceUpdated(uri.as_str().into()),
        Change::TaskStatus { task } => ServerEvent::TaskStatus(Arc::new(TaskUpdate::of(task)?)),
        Change::TaskAnswers { .. } | Change::TaskStop { .. } | Change::Reconnected => {
            return None;
        }
    })
}
