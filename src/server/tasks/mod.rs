//! The Tasks extension on the server (`io.modelcontextprotocol/tasks`,
//! FIXTURES.md part C): a `tools/call` answered with a task handle, its
//! work on a thread of its own, and `tasks/get`, `tasks/update`,
//! `tasks/cancel` and `notifications/tasks`.
//!
//! The pieces:
//!
//! - [`Tasks`], shared by every connection of a server: the store, the
//!   tasks whose worker runs in this process (`live`), the bounds. Its
//!   methods by job: `requests.rs` (what a client calls: a task created,
//!   `tasks/get`, `tasks/update`, `tasks/cancel`, with the owner checks),
//!   `changes.rs` (each change of a task's state after that: the worker's
//!   end, a transition, the bounds of what a task keeps) and `listens.rs`
//!   (who hears a task's status, and its publication).
//! - `store.rs`: [`TaskStore`] and the default [`MemoryTaskStore`].
//! - `redis_store.rs` (feature `redis`): `RedisTaskStore`, with its
//!   connection pool (`redis_pool.rs`), its value in Redis and lease rule
//!   (`redis_record.rs`) and its lease renewal (`redis_lease.rs`).
//! - `worker.rs`: a task's thread; it runs the tool's handler, round after
//!   round when the handler asks for input, and writes the terminal state.
//! - `watch.rs`: what the tasks running here hear from elsewhere: the
//!   feed's messages, and the watch thread of a shared store.
//!
//! Every change of a task goes through [`TaskStore::update`] with a
//! closure that keeps the rules: a terminal status is final (so a worker
//! that finishes after `tasks/cancel` changes nothing), answers leave
//! `inputRequests` for the stored task's `answers` before `tasks/update`
//! is acknowledged (the handler takes them from there), and
//! `lastUpdatedAt` moves with the status. Each status change is published
//! to the subscriptions that follow the task.
//!
//! Past one process, what reaches a handler from elsewhere (answers, a
//! stop) is announced by a message on the change feed, and is in the store
//! whatever becomes of the message: for a shared store the server reads
//! the tasks it runs again every [`TaskStore::watch_interval`], when the
//! feed reconnects, and on each message (`Tasks::watch`, `watch.rs`), and the
//! store's sweep ends the tasks whose runner went away.

mod builder;
mod changes;
pub(crate) mod link;
mod listens;
#[cfg(feature = "redis")]
mod redis_lease;
#[cfg(feature = "redis")]
pub(crate) mod redis_pool;
#[cfg(feature = "redis")]
mod redis_record;
#[cfg(feature = "redis")]
pub(crate) mod redis_store;
mod requests;
mod store;
mod watch;
pub(crate) mod worker;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crossbeam_channel::{Receiver, Sender};
use serde_json::json;

pub use store::{MemoryTaskStore, StoredTask, TaskStore};

use crate::jsonrpc::ErrorObject;
use crate::server::cancel::CancelToken;
use crate::server::connections::Connections;
use crate::types::{DetailedTask, TASKS_EXTENSION, Task, TaskStatus, iso8601, parse_iso8601};

/// How a tool answers a `tools/call` whose request declares the Tasks
/// extension (FIXTURES.md C2; the extension has no per-tool field on the
/// wire: the server alone decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMode {
    /// Always synchronous: a plain `CallToolResult`.
    Never,
    /// A task when the request declares the extension; synchronous
    /// otherwise.
    Optional,
    /// A task when the request declares the extension; `-32021` naming
    /// the extension otherwise, before the handler runs.
    Required,
}

/// The bounds and defaults of a server's tasks, set through
/// [`ServerBuilder`](crate::ServerBuilder).
#[derive(Debug, Clone)]
pub(crate) struct TaskConfig {
    /// `ttlMs`: how long a task stays readable after it was created
    /// (`None`: unlimited, until the store evicts it).
    pub ttl: Option<Duration>,
    /// `pollIntervalMs`.
    pub poll_interval: Duration,
    /// Tasks whose worker runs at once; past it, creation is refused.
    pub max_running: usize,
    /// How long a task waits for the answers to one round of its input
    /// requests before it fails (`None`: until its TTL, and without one
    /// until answered or cancelled).
    pub input_timeout: Option<Duration>,
    /// The largest result (as JSON) a task keeps; a larger one fails the
    /// task with `-32603`. A larger error is replaced by that `-32603`.
    pub max_result_bytes: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Duration::from_millis(200),
            max_running: 64,
            input_timeout: Some(Duration::from_secs(3600)),
            max_result_bytes: 4 << 20,
        }
    }
}

/// A task just created, for its worker (`worker::start`).
pub(crate) struct Created {
    /// Its seed state, the reply to the `tools/call`.
    pub task: Task,
    /// Where the server's answers and stop reach the worker.
    pub signals: Receiver<Signal>,
    pub token: CancelToken,
    pub expires: Option<SystemTime>,
}

/// What the server sends a task's worker.
pub(crate) enum Signal {
    /// Answers are in the store for it: take them ([`Tasks::take_answers`]).
    Look,
    /// The task ended (`tasks/cancel`, or failed elsewhere): stop.
    Stop,
}

/// A task whose worker runs in this process.
struct Live {
    token: CancelToken,
    signals: Sender<Signal>,
    /// When the task expires: its worker's writes are tried until then.
    expires: Option<SystemTime>,
    /// Whether the store holds it (its `create` returned): until then a
    /// read finds nothing, which says nothing about the task
    /// (`Tasks::look_at`).
    stored: bool,
}

/// Where a note for the server's operator goes (the server's trace; named
/// here so that `tasks` does not name the server).
pub(crate) type Trace = dyn Fn(&str) + Send + Sync;

/// What wakes the watch thread (`Tasks::watch`, `watch.rs`).
enum Look {
    /// Read this task again: a message about it came.
    Task(String),
    /// Read every task this process runs again, and sweep: the feed was
    /// cut and is back.
    All,
}

/// How many signals may wait for a task's handler (see `Tasks::create`).
const SIGNALS_WAITING: usize = 4;

/// How long a worker's own write is tried again, for a task without a TTL,
/// while the store fails ([`Tasks::change_durably`]).
const GIVE_UP_WITHOUT_TTL: Duration = Duration::from_secs(3600);

/// How many messages may wait for the watch thread; past it they are
/// dropped, and its next round reads every task anyway.
const LOOKS_WAITING: usize = 1024;

/// How many tasks followed by listens a server remembers for a resync of
/// its feed ([`Tasks::tell_listens`]); past it the first followed are
/// forgotten.
const FOLLOWED_KEPT: usize = 4096;

/// A server's tasks: the store, the workers running, the bounds.
pub(crate) struct Tasks {
    pub store: Arc<dyn TaskStore>,
    pub config: TaskConfig,
    live: Mutex<HashMap<String, Live>>,
    connections: Arc<Connections>,
    /// Held from a status change in the store until it is published, so
    /// that status notifications go out in the order of the changes (a
    /// `cancelled` never overtaken by the `input_required` before it).
    order: Mutex<()>,
    /// Wakes the watch thread, when it runs (a shared store).
    looks: Mutex<Option<Sender<Look>>>,
    /// Set when the feed was cut off and is back: the watch thread's next
    /// round tells the listens what they missed ([`Tasks::tell_listens`]).
    resync: AtomicBool,
    /// The tasks the listens of this server follow (with a feed only), in
    /// the order they were first followed.
    followed: Mutex<Vec<String>>,
    /// The server's trace, for what no client can be told (a result that
    /// could not be stored).
    trace: Arc<Trace>,
}

/// What `-32021` says a request needs for the task methods.
pub(crate) fn extension_required() -> ErrorObject {
    ErrorObject::missing_required_client_capability(json!({
        "extensions": { TASKS_EXTENSION: {} }
    }))
}

/// `-32602` for a task id the store does not have.
fn unknown_task(task_id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "Failed to retrieve task: no task {task_id:?} (unknown, or expired)"
    ))
}

impl Tasks {
    pub fn new(
        store: Arc<dyn TaskStore>,
        config: TaskConfig,
        connections: Arc<Connections>,
        trace: Arc<Trace>,
    ) -> Tasks {
        Tasks {
            store,
            config,
            live: Mutex::new(HashMap::new()),
            connections,
            order: Mutex::new(()),
            looks: Mutex::new(None),
            resync: AtomicBool::new(false),
            followed: Mutex::new(Vec::new()),
            trace,
        }
    }

    /// Taken around each status change and its publication.
    fn ordered(&self) -> std::sync::MutexGuard<'_, ()> {
        self.order.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether a store's error says it cannot tell whether a change was
/// applied ([`TaskStore::update_as`]): trying again would not tell either.
pub(crate) fn outcome_unknown(error: &ErrorObject) -> bool {
    error
        .data
        .as_ref()
        .is_some_and(|data| data["outcome"] == "unknown")
}

/// Sets a status (and its message), with `lastUpdatedAt` now.
pub(crate) fn set_status(task: &mut DetailedTask, status: TaskStatus, message: Option<String>) {
    task.task.status = status;
    task.task.status_message = message;
    touch(task);
}

/// Moves `lastUpdatedAt` to now, and at least one millisecond past its
/// last value, so that every change shows and a later change never looks
/// older (two changes within one millisecond, a clock stepped back, a
/// replica whose clock is behind the one that wrote last): listens across
/// replicas are shown a task's statuses in this order
/// (`Replicas::deliver_status`).
pub(crate) fn touch(task: &mut DetailedTask) {
    let now = SystemTime::now();
    let next = parse_iso8601(&task.task.last_updated_at)
        .and_then(|last| last.checked_add(Duration::from_millis(1)));
    task.task.last_updated_at = iso8601(next.map_or(now, |next| next.max(now)));
}

/// A duration as the extension's integer milliseconds: at least 1 (the
/// suite wants `ttlMs` and `pollIntervalMs` positive), at most 2^53 - 1
/// (the schema's integer bound).
fn wire_ms(duration: Duration) -> u64 {
    const MAX: u64 = (1 << 53) - 1;
    u64::try_from(duration.as_millis()).map_or(MAX, |ms| ms.clamp(1, MAX))
}

/// 128 bits from the operating system's random source, as 32 hex digits.
/// Never a weaker source: without one, no task is created.
fn new_task_id() -> Result<String, ErrorObject> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorObject::internal_error(format!("no random source for a task id: {e}")))?;
    let mut id = String::with_capacity(32);
    for b in bytes {
        let _ = write!(id, "{b:02x}");
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_128_random_bits_in_hex() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn every_change_moves_last_updated_at() {
        let mut task = DetailedTask::new(Task {
            task_id: "t".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: iso8601(SystemTime::now()),
            last_updated_at: iso8601(SystemTime::now() + Duration::from_millis(50)),
            ttl_ms: None,
            poll_interval_ms: None,
        });
        // A stamp a little ahead (a clock stepped back) still moves on.
        let ahead = task.task.last_updated_at.clone();
        touch(&mut task);
        assert!(task.task.last_updated_at > ahead);
        // So does one an hour ahead (written by a replica whose clock is).
        let hour = iso8601(SystemTime::now() + Duration::from_secs(3600));
        task.task.last_updated_at = hour.clone();
        touch(&mut task);
        assert!(
            task.task.last_updated_at > hour,
            "{}",
            task.task.last_updated_at
        );
        task.task.last_updated_at = iso8601(SystemTime::now());
        let before = task.task.last_updated_at.clone();
        set_status(&mut task, TaskStatus::InputRequired, None);
        set_status(&mut task, TaskStatus::Working, None);
        assert!(task.task.last_updated_at > before);
    }

    #[test]
    fn wire_milliseconds_are_positive_and_json_safe() {
        assert_eq!(wire_ms(Duration::ZERO), 1);
        assert_eq!(wire_ms(Duration::from_millis(200)), 200);
        assert_eq!(wire_ms(Duration::MAX), (1 << 53) - 1);
    }
}
