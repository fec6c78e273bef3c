//! Where tasks live: the [`TaskStore`] trait, and [`MemoryTaskStore`], the
//! default.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::jsonrpc::ErrorObject;
use crate::server::encode;
use crate::server::request_meta::Owner;
use crate::types::{DetailedTask, InputResponses};

/// A task as a store keeps it: its state as `tasks/get` shows it, the
/// answers its handler has not taken yet, and when it may be forgotten.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTask {
    /// The task and its payload (`inputRequests`, `result` or `error`).
    pub task: DetailedTask,
    /// Answers `tasks/update` took (they left `inputRequests`) that the
    /// task's handler has not taken yet, by their keys on the wire. Kept
    /// with the task, so that they reach the handler whichever process
    /// runs it, even when the message that announces them is lost; never
    /// shown by `tasks/get`.
    pub answers: InputResponses,
    /// `createdAt` plus `ttlMs`: after it, the store may forget the task
    /// (`tasks/get` is then `-32602`). `None`: kept until evicted.
    pub expires: Option<SystemTime>,
    /// Whom the token of the request that created it stood for
    /// ([`TokenInfo::owner`](crate::TokenInfo::owner)), when the HTTP
    /// server validates tokens: only requests with a token for the same
    /// owner reach the task (`tasks/get`, `tasks/update`, `tasks/cancel`,
    /// a listen's `taskIds`); to anyone else it is unknown. `None` (no
    /// authorization, or a token that names nobody): any request of nobody
    /// that has its id (without authorization: any request). A store keeps it with the task and never changes it.
    pub owner: Option<Owner>,
}

impl StoredTask {
    /// Whether the task's TTL ran out by `now`.
    pub fn is_expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|at| at <= now)
    }
}

/// Where a server keeps its tasks: in memory by default
/// ([`MemoryTaskStore`]), or in the application's own database
/// ([`ServerBuilder::task_store`](crate::ServerBuilder::task_store)).
///
/// The server calls it from its worker threads (never while holding a lock
/// of its own), and each call is one step of the task's life:
///
/// - [`create`](TaskStore::create) stores a new task. **Durably created**
///   means: once `create` returns `Ok`, a [`get`](TaskStore::get) of the
///   id from any thread (any process, for a shared store) finds it. The
///   server writes the `CreateTaskResult` only after that, so a client's
///   first `tasks/get` always resolves. For [`MemoryTaskStore`] that is
///   when the map holds it; for a database, when the insert is committed
///   (and replicated, if reads may go to a replica).
/// - [`update`](TaskStore::update) changes one task atomically: the store
///   calls `change` on the current state and keeps what it leaves, with
///   no other update of the same task in between (a mutex, a
///   transaction, a compare-and-swap loop). A store that retries (an
///   optimistic transaction that lost, as in `RedisTaskStore`) may call
///   `change` more than once, each time on the state it then read: the
///   server's closures start from what they are given. The server's rules (a
///   terminal status is final, answers leave `inputRequests` before the
///   ack) are in the closures it passes; the store only keeps them atomic.
/// - [`get`](TaskStore::get) reads one task.
///
/// A task whose `expires` has passed may be treated as absent by all
/// three. Errors are `ErrorObject`s the client sees (use `-32603`): say
/// what the client may do ("try again"), and put what only the operator
/// may read (an address, a database's own message) on the
/// [`trace`](TaskStore::trace).
///
/// The worker that runs a task lives in the process that created it. The
/// answers of `tasks/update` and a `tasks/cancel` are written in the store
/// wherever they land; the process that runs the task learns of them from
/// a message (a [`ChangeFeed`](crate::ChangeFeed) between processes) and,
/// for a store shared by several processes, by reading its tasks again
/// every [`watch_interval`](TaskStore::watch_interval), so that a lost
/// message costs time, never the answer or the stop.
pub trait TaskStore: Send + Sync {
    /// Stores a new task (its id is fresh and unguessable). Refuse with an
    /// error when full. Every field is kept, [`StoredTask::owner`]
    /// included, and `get` and `update` hand it back as stored: a store
    /// that drops the owner makes the task reachable by anyone with its id.
    fn create(&self, task: StoredTask) -> Result<(), ErrorObject>;

    /// The task with this id; `None` when unknown or expired.
    fn get(&self, task_id: &str) -> Result<Option<StoredTask>, ErrorObject>;

    /// Applies `change` to the task atomically and returns the task as it
    /// is after it; `None` when unknown or expired (then `change` is not
    /// called).
    fn update(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject>;

    /// [`update`](TaskStore::update) as one try of a change the server
    /// tries again while the store fails (a worker's own step: its
    /// questions, its end), named `write`, the same name on every try. A
    /// store that may apply a write and then lose its reply (a database
    /// across a network) keeps the name with what it writes, and a try
    /// that finds its name there returns the task as it is without calling
    /// `change`: the first try stands, and the server goes on as if this
    /// one had applied it. A store that cannot tell whether an earlier try
    /// was applied answers an error whose `data` is
    /// `{"outcome": "unknown"}`, and the server does not try again. The
    /// default calls `update`.
    fn update_as(
        &self,
        task_id: &str,
        write: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        let _ = write;
        self.update(task_id, change)
    }

    /// The worker that ran this task in this process has ended, whatever
    /// its last [`update`](TaskStore::update) did (it may have failed). A
    /// store that holds something for a running task, such as
    /// `RedisTaskStore`'s lease, lets it go; the default does nothing.
    fn worker_ended(&self, task_id: &str) {
        let _ = task_id;
    }

    /// How often the server reads again the tasks this process runs (to
    /// hear answers and stops whose message was lost, or a task that
    /// ended elsewhere) and calls [`sweep`](TaskStore::sweep): `Some` for
    /// a store other processes share. The default, `None`, is for a store
    /// only this process uses, where nothing is lost.
    fn watch_interval(&self) -> Option<Duration> {
        None
    }

    /// Ends the tasks whose runner went away (a store that holds leases
    /// finds them here), and returns every task this store so ended since
    /// the last call, here or in its reads: the server publishes each
    /// one's new state and stops its handler if it runs here. Called every
    /// [`watch_interval`](TaskStore::watch_interval). The default ends
    /// nothing.
    fn sweep(&self) -> Result<Vec<StoredTask>, ErrorObject> {
        Ok(Vec::new())
    }

    /// Where the store says what the server's operator should know and no
    /// client may be told (a database's address, the text of its errors):
    /// the server's trace ([`ServerBuilder::trace`](crate::ServerBuilder::trace)),
    /// given when the server is built. The default keeps nothing.
    fn trace(&self, trace: Arc<dyn Fn(&str) + Send + Sync>) {
        let _ = trace;
    }
}

/// A shared store: several servers (a restarted one, or one per
/// connection) can keep their tasks in one place.
impl<T: TaskStore + ?Sized> TaskStore for Arc<T> {
    fn create(&self, task: StoredTask) -> Result<(), ErrorObject> {
        (**self).create(task)
    }

    fn get(&self, task_id: &str) -> Result<Option<StoredTask>, ErrorObject> {
        (**self).get(task_id)
    }

    fn update(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        (**self).update(task_id, change)
    }

    fn update_as(
        &self,
        task_id: &str,
        write: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        (**self).update_as(task_id, write, change)
    }

    fn worker_ended(&self, task_id: &str) {
        (**self).worker_ended(task_id);
    }

    fn watch_interval(&self) -> Option<Duration> {
        (**self).watch_interval()
    }

    fn sweep(&self) -> Result<Vec<StoredTask>, ErrorObject> {
        (**self).sweep()
    }

    fn trace(&self, trace: Arc<dyn Fn(&str) + Send + Sync>) {
        (**self).trace(trace);
    }
}

/// The default [`TaskStore`]: a map in memory, bounded.
///
/// It holds at most `capacity` tasks, and at most `max_bytes` of results
/// and errors as JSON ([`MemoryTaskStore::max_bytes`]; a running task has
/// neither, and is bounded by `ServerBuilder::max_running_tasks`). Past
/// either, expired tasks are dropped first; then **the finished task let
/// go is the oldest finished task of the owner who holds the most** (the
/// most tasks when the store is past its count, the most bytes when past
/// its budget; a task being created counts as its owner's already), so a
/// client that fills the store lets its own results go first, and
/// another's only once it holds no more than they do. A finished task may
/// thus be forgotten before its TTL under pressure. When every task held
/// runs, `create` is refused; so it is when the new task's owner holds
/// the most and has nothing finished to give (its tasks all run): it
/// takes no place of an owner who holds fewer. A task that ends with its
/// result may take the store past its budget by that result alone, when
/// nothing finished is left to drop of its owner or of an owner who holds
/// as many bytes. Tasks do not survive the process.
///
/// The owner is [`StoredTask::owner`], whom the creating request's token
/// stood for: owners are told apart only over HTTP with authorization
/// (`HttpOptions::protected_resource`). Every task made without a token
/// is nobody's, one owner: over stdio that is the one client, with nobody
/// to be fair to; over HTTP without authorization (or a socket serving
/// several clients) nothing tells the clients apart, and the oldest
/// finished task goes, whoever made it.
pub struct MemoryTaskStore {
    held: Mutex<Held>,
    capacity: usize,
    max_bytes: usize,
}

/// The tasks, each with its size as JSON, and the sum of the sizes.
#[derive(Default)]
struct Held {
    tasks: HashMap<String, (StoredTask, usize)>,
    bytes: usize,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("capacity", &self.capacity)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl MemoryTaskStore {
    /// The default capacity: 1024 tasks.
    pub const DEFAULT_CAPACITY: usize = 1024;

    /// The default byte budget: 64 MiB of results and errors as JSON (sixteen results
    /// of the largest size a task keeps by default,
    /// [`ServerBuilder::max_task_result_bytes`](crate::ServerBuilder::max_task_result_bytes)).
    pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

    /// A store for at most `capacity` tasks (and the default byte budget).
    pub fn new(capacity: usize) -> MemoryTaskStore {
        MemoryTaskStore {
            held: Mutex::new(Held::default()),
            capacity: capacity.max(1),
            max_bytes: MemoryTaskStore::DEFAULT_MAX_BYTES,
        }
    }

    /// At most `bytes` of the finished tasks' results and errors as JSON (default
    /// [`MemoryTaskStore::DEFAULT_MAX_BYTES`]): what a client can make the
    /// server hold by calling a tool whose result grows with its input,
    /// with the count of tasks ([`MemoryTaskStore::new`]).
    pub fn max_bytes(mut self, bytes: usize) -> MemoryTaskStore {
        self.max_bytes = bytes;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        MemoryTaskStore::new(MemoryTaskStore::DEFAULT_CAPACITY)
    }
}

/// A task's size as the store counts it: its result and its error as JSON,
/// what a finished task keeps (a running task has neither: its questions
/// and answers are bounded by the running tasks' count,
/// `ServerBuilder::max_running_tasks`, and the message size). Nothing is
/// encoded for a task without them, so a progress message's update of a
/// running task costs no encoding (review-fixes14c: 2 ms an update, under
/// the store's lock, for a task holding a megabyte of answers).
fn size_of(task: &StoredTask) -> usize {
    let result =
        (task.task.result.as_ref()).map_or(0, |r| encode::to_vec(r).map_or(0, |v| v.len()));
    let error = (task.task.error.as_ref()).map_or(0, |e| encode::to_vec(e).map_or(0, |v| v.len()));
    result + error
}

impl Held {
    fn insert(&mut self, id: String, task: StoredTask) {
        let size = size_of(&task);
        self.bytes += size;
        if let Some((_, old)) = self.tasks.insert(id, (task, size)) {
            self.bytes -= old;
        }
    }

    fn remove(&mut self, id: &str) -> Option<StoredTask> {
        let (task, size) = self.tasks.remove(id)?;
        self.bytes -= size;
        Some(task)
    }

    /// Lets tasks go until at most `count` are held and `bytes` of them:
    /// the expired first, then the finished, never `keep`, each time the
    /// oldest finished task of the owner who holds the most (tasks while
    /// past `count`, else bytes; between owners who hold as much, the one
    /// whose oldest finished task is older). `claimant` is the task that
    /// needs the room: one being created (its owner and size, counted as
    /// its owner's), or `keep`, which just ended with its result. Another
    /// owner's task goes only when that owner holds at least as much as
    /// the claimant's: when the claimant's owner holds more and has
    /// nothing finished to give (its tasks all run, or its only finished
    /// one is `keep`), a new task is refused, and a result is let past the
    /// byte budget by itself alone. Returns whether that was enough (when
    /// it was not, a new task is refused).
    fn make_room(
        &mut self,
        count: usize,
        bytes: usize,
        keep: &str,
        claimant: Claimant<'_>,
    ) -> bool {
        let fits = |held: &Held, slack: usize| {
            held.tasks.len() <= count && held.bytes <= bytes.saturating_add(slack)
        };
        if fits(self, 0) {
            return true;
        }
        let now = SystemTime::now();
        let expired: Vec<String> = (self.tasks.iter())
            .filter(|(_, (t, _))| t.is_expired(now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            let _ = self.remove(&id);
        }
        let (newcomer, claimant) = match claimant {
            Claimant::New(owner, size) => (Some((owner, size)), Some(owner.clone())),
            Claimant::Kept => (None, self.tasks.get(keep).map(|(t, _)| t.owner.clone())),
        };
        // What `keep` may take past the budget, when no one else holds as
        // much as its owner (the one result a store may be past it by).
        let kept = self.tasks.get(keep).map_or(0, |(_, size)| *size);
        let (mut slack, mut slacked) = (0, false);
        // Each round one task goes: a scan of the tasks held, no sort, no
        // copy of their ids (the store's lock is held; review-fixes15b
        // measured a create in a full store of 1,024 at 0.5 ms with a sort).
        while !fits(self, slack) {
            let by_count = self.tasks.len() > count;
            let held = |s: &Share<'_>| if by_count { s.count } else { s.bytes };
            let mut shares: HashMap<&Option<Owner>, Share<'_>> = HashMap::new();
            for (id, (t, size)) in &self.tasks {
                let share = shares.entry(&t.owner).or_default();
                share.count += 1;
                share.bytes += size;
                if id != keep && t.task.task.status.is_terminal() {
                    // Timestamps of one format sort as strings.
                    let at = t.task.task.last_updated_at.as_str();
                    if share.oldest.is_none_or(|(oldest, _)| at < oldest) {
                        share.oldest = Some((at, id.as_str()));
                    }
                }
            }
            if let Some((owner, size)) = newcomer {
                let share = shares.entry(owner).or_default();
                share.count += 1;
                share.bytes += size;
            }
            let bar = (claimant.as_ref())
                .and_then(|owner| shares.get(owner))
                .map_or(0, held);
            let most = (shares.iter())
                .filter_map(|(owner, share)| Some((*owner, share, share.oldest?)))
                .max_by(|(_, a, a_oldest), (_, b, b_oldest)| {
                    (held(a).cmp(&held(b))).then_with(|| b_oldest.cmp(a_oldest))
                });
            let Some((owner, share, (_, id))) = most else {
                break;
            };
            if claimant.as_ref().is_some_and(|claimant| claimant != owner) && held(share) < bar {
                // Everyone with something to give holds less than the
                // claimant's owner, which gives nothing: a new task is
                // refused; a result may be past the budget by itself (and
                // when the store is past it by more, the most held goes).
                if by_count || newcomer.is_some() {
                    break;
                }
                if !slacked {
                    (slack, slacked) = (kept, true);
                    continue;
                }
            }
            let id = id.to_owned();
            let _ = self.remove(&id);
        }
        fits(self, slack)
    }
}

/// Who needs the room a store makes (`Held::make_room`).
#[derive(Clone, Copy)]
enum Claimant<'a> {
    /// A task being created: its owner, and its size.
    New(&'a Option<Owner>, usize),
    /// The task `keep`, which just ended with its result.
    Kept,
}

/// What one owner holds, while a store makes room (`Held::make_room`).
#[derive(Default)]
struct Share<'a> {
    count: usize,
    bytes: usize,
    /// Its finished task that may go and finished longest ago,
    /// `(lastUpdatedAt, id)`.
    oldest: Option<(&'a str, &'a str)>,
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, task: StoredTask) -> Result<(), ErrorObject> {
        let mut held = self.lock();
        let size = size_of(&task);
        let room = self.max_bytes.saturating_sub(size);
        let claimant = Claimant::New(&task.owner, size);
        if !held.make_room(self.capacity - 1, room, "", claimant) {
            return Err(ErrorObject::internal_error(format!(
                "the task store is full ({} tasks, none finished that may go for this one: \
                 the rest run, or are of owners who hold fewer than this one's): try again later",
                self.capacity
            ))
            .with_data(json!({ "limit": self.capacity })));
        }
        held.insert(task.task.task.task_id.clone(), task);
        Ok(())
    }

    fn get(&self, task_id: &str) -> Result<Option<StoredTask>, ErrorObject> {
        let mut held = self.lock();
        match held.tasks.get(task_id) {
            Some((t, _)) if t.is_expired(SystemTime::now()) => {
                let _ = held.remove(task_id);
                Ok(None)
            }
            found => Ok(found.map(|(t, _)| t.clone())),
        }
    }

    fn update(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        let mut held = self.lock();
        let Held { tasks, bytes } = &mut *held;
        let Some((task, size)) = tasks.get_mut(task_id) else {
            return Ok(None);
        };
        if task.is_expired(SystemTime::now()) {
            let _ = held.remove(task_id);
            return Ok(None);
        }
        // Changed in place: a `change` that panics leaves the task held
        // (counted at its size before).
        let was_finished = task.task.task.status.is_terminal();
        change(task);
        // Measured once, as it finishes (a terminal status is final: a
        // later `tasks/cancel` of a finished task encodes nothing again).
        if !was_finished {
            let resized = size_of(task);
            *bytes = *bytes - *size + resized;
            *size = resized;
        }
        let after = task.clone();
        // The change stands (a result within `max_task_result_bytes`);
        // others finished before it make room.
        held.make_room(self.capacity, self.max_bytes, task_id, Claimant::Kept);
        Ok(Some(after))
    }
}

#[cfg(test)]
mod tests;
