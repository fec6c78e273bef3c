//! The leases of the tasks a [`RedisTaskStore`](crate::RedisTaskStore)'s
//! replica runs: which ones it holds, and the one thread that renews them
//! all every fifth of the lease until the store is dropped.
//!
//! Why a fifth, on a connection of its own: a lease lapses when Redis runs
//! no renewal for one lease. A Redis that stalls (a fork, an fsync, a
//! failover) runs nothing, and the worst stall begins just before a
//! renewal was due, when the lease has only what is left since the last
//! one. Renewals every third of the lease failed a task under a stall of
//! three quarters of it (`redis_faults::a_stall_shorter_than_the_lease_at_the_worst_moment_fails_no_task`).
//! With renewals every fifth, each waiting at most a fifth of the lease
//! for its reply on a connection no other work holds, and sent again at
//! once on a new connection when it was not answered (one sent during a
//! stall waits in Redis and runs the moment Redis wakes), a lease outlasts
//! any stall shorter than four fifths of it, and any outage (connections
//! refused) shorter than three quarters of it, less one round trip.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::jsonrpc::ErrorObject;
use crate::server::tasks::redis_pool::Pool;

/// Renews each lease in `KEYS` that this replica (`ARGV[1]`) holds, for
/// `ARGV[2]` ms; one 1 or 0 per key. A lease another replica holds, or
/// that lapsed, is never taken back.
const RENEW: &str = r"
local kept = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    kept[i] = redis.call('PEXPIRE', key, ARGV[2])
  else
    kept[i] = 0
  end
end
return kept
";

/// The leases this replica holds, and their renewal.
pub(crate) struct Leases {
    /// The lease keys of the tasks this replica runs.
    held: Arc<Mutex<HashSet<String>>>,
    /// How long a lease lasts without renewal.
    pub lease: Duration,
    /// Set when the renewal thread runs; dropping it (with the store)
    /// wakes the thread, which then ends.
    stop: Mutex<Option<Sender<()>>>,
}

impl Leases {
    pub fn new(lease: Duration) -> Leases {
        Leases {
            held: Arc::new(Mutex::new(HashSet::new())),
            lease,
            stop: Mutex::new(None),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the renewal thread unless it runs. Fails when it cannot be
    /// started (then no task is created).
    pub fn start(&self, pool: &Arc<Pool>, replica: &str) -> Result<(), ErrorObject> {
        let mut stop = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        if stop.is_none() {
            let (sender, stopped) = crossbeam_channel::bounded(0);
            let (held, pool) = (Arc::clone(&self.held), Arc::clone(pool));
            let (lease, replica) = (self.lease, replica.to_owned());
            thread::Builder::new()
                .name("mcp-redis-lease".into())
                .spawn(move || renew_until_dropped(&pool, &held, lease, &replica, &stopped))
                .map_err(|e| {
                    ErrorObject::internal_error(format!(
                        "cannot start the thread that renews task leases: {e} (the process is out of threads?)"
                    ))
                })?;
            *stop = Some(sender);
        }
        Ok(())
    }

    /// This replica holds `key` from now on: its task was created here
    /// (the key is in Redis already, so that no renewal finds it missing).
    pub fn hold(&self, key: String) {
        self.held().insert(key);
    }

    /// This replica no longer holds `key` (its task finished).
    pub fn release(&self, key: &str) {
        self.held().remove(key);
    }
}

/// Renews every held lease each fifth of the lease, until the store is
/// dropped (see the module docs for the margin this gives). A lease Redis
/// no longer has for this replica (it lapsed while Redis was out of
/// reach, or the task finished elsewhere) is not revived: it is
/// forgotten, the task is failed by whoever reads or sweeps it next, and
/// the server stops its handler when it reads the task again
/// (`Tasks::watch`).
fn renew_until_dropped(
    pool: &Pool,
    held: &Mutex<HashSet<String>>,
    lease: Duration,
    replica: &str,
    stopped: &Receiver<()>,
) {
    let every = (lease / 5).max(Duration::from_millis(1));
    // After a renewal that was not answered: the next try comes this soon
    // (Redis refusing connections fails at once; a stalled one took
    // `every` already).
    let again = (lease / 20).max(Duration::from_millis(1));
    let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1);
    let mut connection: Option<redis::Connection> = None;
    let mut next = Instant::now() + every;
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        if let Err(RecvTimeoutError::Disconnected) | Ok(()) = stopped.recv_timeout(wait) {
            return;
        }
        let sent = Instant::now();
        next = sent + every;
        let keys: Vec<String> = held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        if keys.is_empty() {
            continue;
        }
        if connection.is_none() {
            connection = pool.dedicated(every).ok();
        }
        let Some(open) = connection.as_mut() else {
            next = sent + again;
            continue;
        };
        let renewed: redis::RedisResult<Vec<i64>> = redis::cmd("EVAL")
            .arg(RENEW)
            .arg(keys.len())
            .arg(&keys)
            .arg(replica)
            .arg(lease_ms)
            .query(open);
        let Ok(renewed) = renewed else {
            // Not answered within `every`: a new connection, at once. What
            // was sent on this one still runs when Redis wakes.
            connection = None;
            next = Instant::now() + again;
            continue;
        };
        let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
        for (key, kept) in keys.iter().zip(renewed) {
            if kept == 0 {
                held.remove(key);
            }
        }
    }
}
