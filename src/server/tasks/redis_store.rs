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

use serde_json::json;

use crate::jsonrpc::ErrorObject;
use crate::server::tasks::redis_lease::Leases;
use crate::server::tasks::redis_pool::{Pool, is_unavailable};
use crate::server::tasks::redis_record::{
    Read, WRITES_KEPT, Writer, decode_read, encode, encode_write, keep_ms, lapse,
};
use crate::server::tasks::{StoredTask, TaskStore, Trace};

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

/// A task and whether its lease is held, in one reply. KEYS: task, lease.
/// Returns the record (nil when there is none) and 1 or 0.
const READ: &str = r"return {redis.call('GET', KEYS[1]), redis.call('EXISTS', KEYS[2])}";

/// Writes a task over the version it was read at, keeping its expiry; a
/// finished task's lease and running-set entry go in the same step. KEYS:
/// task, lease, running set. ARGV: the version read, the new record, 1
/// when it is finished, the task id. Returns 1 when written, 0 when
/// another write came in between (nothing written), -1 when the task is
/// gone. The version is the record's first member (`redis_record.rs`);
/// a record written otherwise is parsed.
const WRITE: &str = r#"
local now = redis.call('GET', KEYS[1])
if not now then return -1 end
local version = string.match(now, '^{"version":(%d+),')
if not version then
  local ok, record = pcall(cjson.decode, now)
  version = (ok and type(record) == 'table') and tostring(record.version or 0) or '0'
end
if version ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[2])
  redis.call('SREM', KEYS[3], ARGV[4])
end
return 1
"#;

/// Whether each key in `KEYS` exists, in one reply (the sweep's).
const EXIST: &str = r"
local found = {}
for i, key in ipairs(KEYS) do found[i] = redis.call('EXISTS', key) end
return found
";

/// The most tasks failed by the lease rule a store keeps for the server
/// to publish ([`TaskStore::sweep`]) between two sweeps; past it the
/// oldest go unpublished (a reader still finds them `failed`).
const LAPSED_KEPT: usize = 1024;

/// How many writes of one update may go unanswered (the connection broke,
/// the reply did not come in time) before the update fails.
const UNANSWERED_WRITES: usize = 2;

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
/// - **Expiry** is Redis's own: the task's key expires at its TTL, by
///   Redis's clock (a replica's clock ahead of it does not make a live
///   task look gone). A task without a TTL
///   ([`task_ttl(None)`](crate::ServerBuilder::task_ttl)) is kept until
///   someone deletes its key; give tasks a TTL in production. The store
///   lets no task go before its TTL (unlike `MemoryTaskStore`, it has no
///   count to make room in: what bounds it is Redis's `maxmemory`), so no
///   client's tasks push out another's; but a Redis whose
///   `maxmemory-policy` evicts keys drops whichever it picks, anyone's
///   finished tasks and the leases of running ones (which then fail).
///   Use `noeviction`: a full Redis then refuses writes (a new task, a
///   change to one it holds: `-32603`, "try again"; a worker's end is
///   tried again until the task's TTL) and drops no task.
/// - **Atomic updates**: `update` reads the task and its lease (one
///   script), calls `change`, and writes with a script that compares the
///   record's version with the one read (keeping the key's expiry); when
///   another replica wrote in between, it starts again after a short
///   random pause, at most [`MAX_UPDATE_ATTEMPTS`](RedisTaskStore::MAX_UPDATE_ATTEMPTS)
///   times, then fails with `-32603` ("try again"). `change` may thus run
///   more than once, each time on the current state. A `change` that
///   changes nothing writes nothing.
/// - **Exactly once**: each write carries an id (one for each `update`,
///   one for all the tries of a worker's step through
///   [`update_as`](TaskStore::update_as)), and the record keeps a version,
///   the ids of its last 8 plain writes, and the id of the worker's last
///   write in a place of its own. A try after a lost reply (Redis applied
///   the write, the connection broke) finds its own id and does not apply
///   `change` again: what the first run decided (answers taken, a
///   cancellation, a result) stands, and its side effects happen once. A
///   worker's write is found however many plain writes came since (a
///   client answering a form one key at a time); a plain `update` whose
///   id is not there, when more than 8 writes came since the version its
///   lost write read, cannot tell whether that write was applied, and
///   fails with `-32603` and `data: {"outcome": "unknown"}` rather than
///   apply `change` a second time.
/// - **The lease**: the replica that creates a task holds its lease and
///   renews it (one thread per store on a connection of its own, every
///   fifth of the lease, started with the first task, ended when the
///   store is dropped) until the task finishes or its worker ends
///   ([`worker_ended`](TaskStore::worker_ended)). It outlasts a Redis
///   stall shorter than four fifths of the lease, and an outage (Redis
///   restarting, or answering `BUSY` while a long script runs) shorter
///   than three quarters of it. When the replica dies,
///   the lease lapses and the task is written `failed` ("its server went
///   away") by the next `get` or `update` of it on any replica, or by the
///   sweep every replica runs each [`SWEEP_INTERVAL`](RedisTaskStore::SWEEP_INTERVAL):
///   within one [`lease`](RedisTaskStore::lease) (default
///   [`DEFAULT_LEASE`](RedisTaskStore::DEFAULT_LEASE)) and one sweep of
///   the last renewal, and published.
/// - **Connections**: a pool of at most 64 (16 kept idle). Each operation
///   is one command with one reply, which may take 5 s at most; a
///   connection whose command failed is closed, and a read is tried once
///   more on a new one.
/// - **Errors** reach clients as "the task store is unavailable: try
///   again"; what failed, and where (the URL without its user and
///   password), goes to the server's [trace](crate::ServerBuilder::trace).
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

    /// Connects to the Redis at `url` (`redis://host:port/db`, or
    /// `rediss://user:password@host:port/db`) and keeps the tasks under
    /// `prefix` (the same on every replica of one server); fails when Redis
    /// cannot be reached now. No message shows the URL's user or password.
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

    /// The task and whether its lease is held, in one round trip; `None`
    /// when there is no such task (Redis expired it, or never had it).
    fn read(&self, task_id: &str) -> Result<Option<(Read, bool)>, ErrorObject> {
        let (key, lease_key) = (self.task_key(task_id), self.lease_key(task_id));
        let (json, leased): (Option<String>, bool) = self.pool.run(|c| {
            redis::cmd("EVAL")
                .arg(READ)
                .arg(2)
                .arg(&key)
                .arg(&lease_key)
                .query(c)
        })?;
        json.map(|json| Ok((decode_read(&json)?, leased)))
            .transpose()
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
            // A retry after a lost reply finds its own write. A read that
            // fails says so: it is no sign that the id was taken.
            _ => {
                let stored: Option<String> =
                    self.pool.run(|c| redis::cmd("GET").arg(&key).query(c))?;
                stored == Some(record)
            }
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
        let Some((read, leased)) = self.read(task_id)? else {
            return Ok(None);
        };
        if leased || read.task.task.task.status.is_terminal() {
            return Ok(Some(read.task));
        }
        // Its replica went away: written `failed` under the update's rules.
        self.update(task_id, &mut |_| {})
    }

    fn update(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        self.write(task_id, Writer::Update(&write_id()?), change)
    }

    /// [`update`](TaskStore::update) as the task's worker, with one write
    /// id over every try of the step (`write`): a try finds an earlier one
    /// applied however many plain writes came since.
    fn update_as(
        &self,
        task_id: &str,
        write: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        self.write(task_id, Writer::Worker(write), change)
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
    /// task this store failed so since the last sweep. Three round trips
    /// when nothing lapsed: the set, one script that says which keys
    /// exist, and the forgetting. A task it cannot write (a record it
    /// cannot read, writes that kept colliding) is said on the trace and
    /// left for the next sweep, and the others are still swept; when Redis
    /// fails, the sweep ends there (each other write would wait as long),
    /// and the next one tries them all again.
    fn sweep(&self) -> Result<Vec<StoredTask>, ErrorObject> {
        let running = self.running_key();
        let ids: Vec<String> = self
            .pool
            .run(|c| redis::cmd("SMEMBERS").arg(&running).query(c))?;
        if !ids.is_empty() {
            let keys: Vec<String> = ids
                .iter()
                .flat_map(|id| [self.task_key(id), self.lease_key(id)])
                .collect();
            let found: Vec<bool> = self.pool.run(|c| {
                redis::cmd("EVAL")
                    .arg(EXIST)
                    .arg(keys.len())
                    .arg(&keys)
                    .query(c)
            })?;
            let mut forget = Vec::new();
            for (id, pair) in ids.iter().zip(found.chunks(2)) {
                let (task, leased) = (pair[0], pair.get(1) == Some(&true));
                if !task {
                    forget.push(id.clone());
                } else if !leased {
                    // Written `failed` (and taken out of the set) by the
                    // lease rule, unless finished meanwhile.
                    match self.update(id, &mut |_| {}) {
                        Err(e) if is_unavailable(&e) => return Err(e),
                        Err(e) => {
                            let _ = self.pool.unavailable(&format!(
                            "could not fail task {id:?}, whose lease lapsed ({}): the next sweep tries again",
                            e.message
                        ));
                        }
                        Ok(_) => {}
                    }
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

    fn trace(&self, trace: Arc<Trace>) {
        self.pool.trace_to(trace);
    }
}

impl RedisTaskStore {
    /// Reads, changes and writes over the version read, until the write
    /// goes in (see [`RedisTaskStore`], "Atomic updates" and "Exactly
    /// once"). A write whose reply is lost may have been applied: the
    /// next try reads again and looks for its id in the record.
    fn write(
        &self,
        task_id: &str,
        by: Writer<'_>,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        let write = by.id();
        let (key, lease_key) = (self.task_key(task_id), self.lease_key(task_id));
        let running = self.running_key();
        // The version read by a try of this write whose reply was lost.
        let mut unsure = None;
        let mut unanswered = 0;
        for attempt in 0..RedisTaskStore::MAX_UPDATE_ATTEMPTS {
            if attempt > 0 && unanswered == 0 {
                pause(attempt);
            }
            let read = match self.read(task_id) {
                Ok(Some(read)) => read,
                Ok(None) => return Ok(None),
                Err(e) => return Err(e),
            };
            let (read, leased) = read;
            if read.has_written(write) {
                // This change, applied by a try whose reply was lost.
                if read.task.task.task.status.is_terminal() {
                    self.leases.release(&lease_key);
                }
                return Ok(Some(read.task));
            }
            if let Writer::Update(_) = by
                && unsure.is_some_and(|version| read.version > version + WRITES_KEPT as u64)
            {
                // Its id would be gone by now even if it had been applied.
                return Err(outcome_unknown(task_id, read.version - unsure.unwrap_or(0)));
            }
            let mut task = read.task.clone();
            let lapsed = !leased && lapse(&mut task);
            change(&mut task);
            let finished = task.task.task.status.is_terminal();
            if task == read.task {
                // Nothing to write: no write pushes another's id out.
                if finished {
                    self.leases.release(&lease_key);
                }
                return Ok(Some(task));
            }
            let record = encode_write(&task, &read, by)?;
            let written: Result<i64, _> = self.pool.run_once(|c| {
                redis::cmd("EVAL")
                    .arg(WRITE)
                    .arg(3)
                    .arg(&key)
                    .arg(&lease_key)
                    .arg(&running)
                    .arg(read.version)
                    .arg(&record)
                    .arg(if finished { "1" } else { "0" })
                    .arg(task_id)
                    .query(c)
            });
            match written {
                Ok(1) => {
                    if finished {
                        self.leases.release(&lease_key);
                    }
                    if lapsed {
                        self.note_lapse(&task);
                    }
                    return Ok(Some(task));
                }
                // Another write came in between: read again.
                Ok(0) => {}
                Ok(_) => return Ok(None),
                Err(failure) if failure.may_have_run && unanswered + 1 < UNANSWERED_WRITES => {
                    // Read again (on a new connection) and look for it.
                    unanswered += 1;
                    unsure = Some(read.version);
                }
                Err(failure) => return Err(failure.error),
            }
        }
        Err(ErrorObject::internal_error(format!(
            "task {task_id:?} was changed by other replicas during {} attempts in a row: try again",
            RedisTaskStore::MAX_UPDATE_ATTEMPTS
        )))
    }
}

/// A try of a change cannot tell whether an earlier one was applied: its
/// reply was lost, and `since` writes came after the version it read,
/// more than the ids a record keeps.
fn outcome_unknown(task_id: &str, since: u64) -> ErrorObject {
    ErrorObject::internal_error(format!(
        "the task store cannot tell whether a change of task {task_id:?} was applied (its reply was lost, and {since} writes came since): read the task"
    ))
    .with_data(json!({ "outcome": "unknown" }))
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

/// A random name for this replica in its lease keys, or for a write.
fn replica_name() -> Result<String, ErrorObject> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorObject::internal_error(format!("no random source: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
