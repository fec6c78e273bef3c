//! [`RedisTaskStore`]: a [`TaskStore`] on Redis, behind the `redis`
//! feature, so that every replica of a server reads and changes the same
//! tasks.
//!
//! Key layout, under the store's prefix `P`:
//!
//! - `P:task:ID`: the task as JSON (`{"task": DetailedTask, "expiresMs":
//!   ms since the epoch or null}`), with Redis's own expiry at the task's
//!   TTL (`PX`); no expiry for a task without a TTL.
//! - `P:lease:ID`: the name of the replica running the task, with an
//!   expiry of one lease; the replica renews it every fifth of the lease
//!   while it runs the task, and deletes it when the task finishes.
//! - `P:running`: a set of the ids of the tasks that have a lease, for
//!   the sweep.
//!
//! The lease rule: a task that has not finished (`working`,
//! `input_required`) and has no lease key is `failed`, with a status
//! message saying its server went away. It is written so by the first
//! `get` or `update` that sees it, from any replica, or by the sweep every
//! replica runs every [`SWEEP_INTERVAL`](RedisTaskStore::SWEEP_INTERVAL);
//! each task so failed is handed to the server that wrote it to publish
//! ([`TaskStore::sweep`]).

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime};

use crate::jsonrpc::ErrorObject;
use crate::server::tasks::redis_lease::Leases;
use crate::server::tasks::redis_pool::Pool;
use crate::server::tasks::redis_record::{
    decode, decode_read, encode, encode_write, keep_ms, lapse,
};
use crate::server::tasks::{StoredTask, TaskStore};

/// Creates the task unless its key exists, and its lease, in one step.
/// KEYS: task, lease, running set. ARGV: the record, its PX (0: no
/// expiry), the replica, the lease PX (0: no lease), the task id. Returns
/// 1 when created, 0 when the id is taken.
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if ARGV[2] == '0' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
if ARGV[4] ~= '0' then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  redis.call('SADD', KEYS[3], ARGV[5])
end
return 1
";

/// The most tasks failed by the lease rule a store keeps for the server
/// to publish ([`TaskStore::sweep`]) between two sweeps; past it the
/// oldest go unpublished (a reader still finds them `failed`).
const LAPSED_KEPT: usize = 1024;

/// A [`TaskStore`] on Redis, shared by every replica of a server: each
/// opens one on the same Redis and prefix.
///
/// ```no_run
/// # fn main() -> Result<(), mcp_stdio::ErrorObject> {
/// use mcp_stdio::{RedisTaskStore, Server};
/// let store = RedisTaskStore::open("redis://127.0.0.1:6379/", "mcp:tasks")?;
/// let server = Server::builder("files", "1.0.0").task_store(store).build();
/// # drop(server);
/// # Ok(())
/// # }
/// ```
///
/// - **Durably created**: [`create`](TaskStore::create) returns `Ok` once
///   Redis has executed one script that set the task's key (refused if the
///   id exists) and its lease, and replied. From then on a `get` on any
///   replica finds it. It lives in that Redis's memory: whether it
///   survives a Redis restart is Redis's persistence setting
///   (`appendonly`), and a Redis replica may lag (no `WAIT`).
/// - **Expiry** is Redis's own: the task's key expires at its TTL. A task
///   without a TTL ([`task_ttl(None)`](crate::ServerBuilder::task_ttl)) is
///   kept until someone deletes its key; give tasks a TTL in production.
/// - **Atomic updates**: `update` runs `WATCH` on the task and its lease,
///   reads both, calls `change`, and writes with `MULTI`/`EXEC` (keeping
///   the key's expiry); when another replica wrote in between, it starts
///   again after a short random pause, at most [`MAX_UPDATE_ATTEMPTS`](RedisTaskStore::MAX_UPDATE_ATTEMPTS)
///   times, then fails with `-32603` ("try again"). `change` may thus run
///   more than once, each time on the current state.
/// - **Exactly once**: each write carries an id, and the record keeps the
///   ids of its last 8 writes and a version. An `update` retried after
///   its reply was lost (Redis applied it, the connection broke) finds
///   its own id and does not apply `change` again: what the first run
///   decided (answers taken, a cancellation) stands, and its side effects
///   happen once.
/// - **The lease**: the replica that creates a task holds its lease and
///   renews it (one thread per store on a connection of its own, every
///   fifth of the lease, started with the first task, ended when the
///   store is dropped) until the task finishes or its worker ends
///   ([`worker_ended`](TaskStore::worker_ended)). It outlasts a Redis
///   stall shorter than four fifths of the lease and an outage (Redis
///   restarting) shorter than three quarters of it. When the replica dies,
///   the lease lapses and the task is written `failed` ("its server went
///   away") by the next `get` or `update` of it on any replica, or by the
///   sweep every replica runs each [`SWEEP_INTERVAL`](RedisTaskStore::SWEEP_INTERVAL):
///   within one [`lease`](RedisTaskStore::lease) (default
///   [`DEFAULT_LEASE`](RedisTaskStore::DEFAULT_LEASE)) and one sweep of
///   the last renewal, and published.
/// - **Connections**: a pool of at most 64 (16 kept idle); a broken
///   connection is replaced and the operation tried once more on a new
///   one. Each reply may take 5 s at most.
pub struct RedisTaskStore {
    pool: Arc<Pool>,
    prefix: String,
    /// This replica's name in the lease keys.
    replica: String,
    leases: Leases,
    /// Tasks this store failed by the lease rule, for the next sweep to
    /// hand to the server.
    lapsed: Mutex<Vec<StoredTask>>,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.prefix)
            .field("replica", &self.replica)
            .field("lease", &self.leases.lease)
            .finish_non_exhaustive()
    }
}

impl RedisTaskStore {
    /// How many times `update` tries when other replicas change the same
    /// task in between (an optimistic transaction that lost).
    pub const MAX_UPDATE_ATTEMPTS: usize = 200;

    /// The default lease: a task whose replica died is `failed` at most
    /// this long after its last renewal.
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

    /// How often the server reads again the tasks its replica runs and
    /// sweeps the tasks whose lease lapsed ([`TaskStore::watch_interval`]).
    pub const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

    /// Connects to the Redis at `url` (`redis://host:port/db`) and keeps
    /// the tasks under `prefix` (the same on every replica of one server);
    /// fails when Redis cannot be reached now.
    pub fn open(url: &str, prefix: &str) -> Result<RedisTaskStore, ErrorObject> {
        Ok(RedisTaskStore {
            pool: Arc::new(Pool::open(url)?),
            prefix: prefix.to_owned(),
            replica: replica_name()?,
            leases: Leases::new(RedisTaskStore::DEFAULT_LEASE),
            lapsed: Mutex::new(Vec::new()),
        })
    }

    /// The same store with a lease of `lease` (at least 5 ms): how long
    /// after its replica died a task is reported `failed`. Renewals go
    /// out every fifth of it; a Redis stall shorter than four fifths of it
    /// fails no task. Set it before the first task is created.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> RedisTaskStore {
        self.leases = Leases::new(lease.max(Duration::from_millis(5)));
        self
    }

    fn task_key(&self, task_id: &str) -> String {
        format!("{}:task:{task_id}", self.prefix)
    }

    fn lease_key(&self, task_id: &str) -> String {
        format!("{}:lease:{task_id}", self.prefix)
    }

    fn running_key(&self) -> String {
        format!("{}:running", self.prefix)
    }

    /// Keeps a task this store failed by the lease rule for the next sweep.
    fn note_lapse(&self, task: &StoredTask) {
        let mut lapsed = self.lapsed.lock().unwrap_or_else(|e| e.into_inner());
        if lapsed.len() >= LAPSED_KEPT {
            lapsed.remove(0);
        }
        lapsed.push(task.clone());
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, task: StoredTask) -> Result<(), ErrorObject> {
        let task_id = task.task.task.task_id.clone();
        let (key, lease_key) = (self.task_key(&task_id), self.lease_key(&task_id));
        let record = encode(&task)?;
        let keep = keep_ms(task.expires, SystemTime::now()).unwrap_or(0);
        let running = !task.task.task.status.is_terminal();
        let lease_ms = if running {
            self.leases.start(&self.pool, &self.replica)?;
            u64::try_from(self.leases.lease.as_millis()).unwrap_or(u64::MAX)
        } else {
            0
        };
        let created: Result<i64, ErrorObject> = self.pool.run(|connection| {
            redis::cmd("EVAL")
                .arg(CREATE)
                .arg(3)
                .arg(&key)
                .arg(&lease_key)
                .arg(self.running_key())
                .arg(&record)
                .arg(keep)
                .arg(&self.replica)
                .arg(lease_ms)
                .arg(&task_id)
                .query(connection)
        });
        let created = match created? {
            1 => true,
            // A retry after a lost reply finds its own write.
            _ => self.pool.run(|c| redis::cmd("GET").arg(&key).query(c)).ok() == Some(Some(record)),
        };
        if !created {
            return Err(ErrorObject::internal_error(format!(
                "a task {task_id:?} exists already in the Redis store: mint a fresh id"
            )));
        }
        // Renewed from now on: the key exists, so that no renewal between
        // here and the script could find it missing and forget it.
        if running {
            self.leases.hold(lease_key);
        }
        Ok(())
    }

    fn get(&self, task_id: &str) -> Result<Option<StoredTask>, ErrorObject> {
        let (key, lease_key) = (self.task_key(task_id), self.lease_key(task_id));
        let (json, leased): (Option<String>, bool) = self.pool.run(|connection| {
            redis::pipe()
                .cmd("GET")
                .arg(&key)
                .cmd("EXISTS")
                .arg(&lease_key)
                .query(connection)
        })?;
        let Some(json) = json else { return Ok(None) };
        let task = decode(&json)?;
        if task.is_expired(SystemTime::now()) {
            return Ok(None);
        }
        if leased || task.task.task.status.is_terminal() {
            return Ok(Some(task));
        }
        // Its replica went away: written `failed` under the update's rules.
        self.update(task_id, &mut |_| {})
    }

    fn update(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        let (key, lease_key) = (self.task_key(task_id), self.lease_key(task_id));
        let running = self.running_key();
        // This update's id: a try that finds it in the record was applied
        // already (its reply was lost), and is not applied again.
        let id = write_id()?;
        for attempt in 0..RedisTaskStore::MAX_UPDATE_ATTEMPTS {
            if attempt > 0 {
                pause(attempt);
            }
            let keys = Keys {
                task: &key,
                lease: &lease_key,
                running: &running,
                task_id,
            };
            let written = self
                .pool
                .run(|connection| write_once(connection, &keys, &id, change))?;
            match written {
                Written::Gone => return Ok(None),
                Written::Lost => {}
                Written::Done { task, lapsed } => {
                    if task.task.task.status.is_terminal() {
                        self.leases.release(&lease_key);
                    }
                    if lapsed {
                        self.note_lapse(&task);
                    }
                    return Ok(Some(*task));
                }
            }
        }
        Err(ErrorObject::internal_error(format!(
            "task {task_id:?} was changed by other replicas during {} attempts in a row: try again",
            RedisTaskStore::MAX_UPDATE_ATTEMPTS
        )))
    }

    /// Stops renewing the task's lease. When the worker's last update did
    /// not reach Redis, the task is thus `failed` by the lease rule within
    /// one lease rather than `working` until its TTL.
    fn worker_ended(&self, task_id: &str) {
        self.leases.release(&self.lease_key(task_id));
    }

    fn watch_interval(&self) -> Option<Duration> {
        Some(RedisTaskStore::SWEEP_INTERVAL)
    }

    /// Fails every task in `P:running` whose lease is gone (and forgets
    /// the ids of tasks that finished or expired), then hands over every
    /// task this store failed so since the last sweep.
    fn sweep(&self) -> Result<Vec<StoredTask>, ErrorObject> {
        let running = self.running_key();
        let ids: Vec<String> = self
            .pool
            .run(|c| redis::cmd("SMEMBERS").arg(&running).query(c))?;
        if !ids.is_empty() {
            let found: Vec<(bool, bool)> = self.pool.run(|c| {
                let mut pipe = redis::pipe();
                for id in &ids {
                    pipe.cmd("EXISTS").arg(self.task_key(id));
                    pipe.cmd("EXISTS").arg(self.lease_key(id));
                }
                let flat: Vec<bool> = pipe.query(c)?;
                Ok(flat.chunks(2).map(|p| (p[0], p[1])).collect())
            })?;
            let mut forget = Vec::new();
            for (id, (task, leased)) in ids.iter().zip(found) {
                if !task {
                    forget.push(id.clone());
                } else if !leased {
                    // Written `failed` (and taken out of the set) by the
                    // lease rule, unless finished meanwhile.
                    self.update(id, &mut |_| {})?;
                }
            }
            if !forget.is_empty() {
                self.pool
                    .run(|c| redis::cmd("SREM").arg(&running).arg(&forget).query::<()>(c))?;
            }
        }
        let mut lapsed = self.lapsed.lock().unwrap_or_else(|e| e.into_inner());
        Ok(std::mem::take(&mut *lapsed))
    }
}

/// What one optimistic transaction did.
enum Written {
    /// No such task (unknown or expired): nothing written.
    Gone,
    /// Another client changed the task or its lease in between: nothing
    /// written.
    Lost,
    /// Written (now, or by an earlier try of the same update whose reply
    /// was lost): the task as it is now, and whether the lease rule failed
    /// it in this write.
    Done { task: Box<StoredTask>, lapsed: bool },
}

/// The keys one update touches.
struct Keys<'a> {
    task: &'a str,
    lease: &'a str,
    running: &'a str,
    task_id: &'a str,
}

/// One `WATCH` and read, `change`, `MULTI`/`EXEC` round: two round trips.
/// A finished task's lease is deleted, and its id taken out of the running
/// set, in the same transaction. A record that holds the write `id` is
/// this update, applied by an earlier try: it is not applied again.
fn write_once(
    connection: &mut redis::Connection,
    keys: &Keys<'_>,
    id: &str,
    change: &mut dyn FnMut(&mut StoredTask),
) -> redis::RedisResult<Written> {
    // WATCH and the reads in one round trip.
    let (json, leased): (Option<String>, bool) = redis::pipe()
        .cmd("WATCH")
        .arg(keys.task)
        .arg(keys.lease)
        .ignore()
        .cmd("GET")
        .arg(keys.task)
        .cmd("EXISTS")
        .arg(keys.lease)
        .query(connection)?;
    let decoded = json.map(|json| decode_read(&json));
    let read = match decoded {
        Some(Ok(read)) if !read.task.is_expired(SystemTime::now()) => read,
        other => {
            redis::cmd("UNWATCH").query::<()>(connection)?;
            return match other {
                Some(Err(e)) => Err(redis::RedisError::from((
                    redis::ErrorKind::Client,
                    "undecodable task",
                    e.message,
                ))),
                _ => Ok(Written::Gone),
            };
        }
    };
    if read.has_written(id) {
        redis::cmd("UNWATCH").query::<()>(connection)?;
        return Ok(Written::Done {
            task: Box::new(read.task),
            lapsed: false,
        });
    }
    let mut task = read.task;
    let lapsed = !leased && lapse(&mut task);
    change(&mut task);
    let record = encode_write(&task, read.version, &read.writes, Some(id)).map_err(|e| {
        redis::RedisError::from((redis::ErrorKind::Client, "unencodable task", e.message))
    })?;
    let mut transaction = redis::pipe();
    transaction
        .atomic()
        .cmd("SET")
        .arg(keys.task)
        .arg(&record)
        .arg("KEEPTTL")
        .ignore();
    if task.task.task.status.is_terminal() {
        transaction.cmd("DEL").arg(keys.lease).ignore();
        transaction
            .cmd("SREM")
            .arg(keys.running)
            .arg(keys.task_id)
            .ignore();
    }
    let committed: Option<()> = transaction.query(connection)?;
    Ok(match committed {
        Some(()) => Written::Done {
            task: Box::new(task),
            lapsed,
        },
        None => Written::Lost,
    })
}

/// A random id for one update.
fn write_id() -> Result<String, ErrorObject> {
    replica_name()
}

/// A random pause before attempt `attempt` of a contended update, growing
/// with the attempts (up to 2 ms), so that contenders spread out.
fn pause(attempt: usize) {
    let cap_us = 100 * u64::try_from(attempt.min(20)).unwrap_or(20);
    let jitter = getrandom::u64().unwrap_or(0) % cap_us.max(1);
    thread::sleep(Duration::from_micros(jitter));
}

/// A random name for this replica in its lease keys.
fn replica_name() -> Result<String, ErrorObject> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorObject::internal_error(format!("no random source: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
