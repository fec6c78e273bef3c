//! The leases of the tasks a [`RedisTaskStore`](crate::RedisTaskStore)'s
//! replica runs: which ones it holds, and the one thread that renews them
//! all every third of the lease until the store is dropped.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::jsonrpc::ErrorObject;
use crate::server::tasks::redis_pool::Pool;

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

    /// This replica holds `key` from now on (its task is being created
    /// here): the renewal thread starts with the first one. Fails when the
    /// thread cannot be started (then the task is not created).
    pub fn hold(&self, key: String, pool: &Arc<Pool>) -> Result<(), ErrorObject> {
        let mut stop = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        if stop.is_none() {
            let (sender, stopped) = crossbeam_channel::bounded(0);
            let (held, pool) = (Arc::clone(&self.held), Arc::clone(pool));
            let lease = self.lease;
            thread::Builder::new()
                .name("mcp-redis-lease".into())
                .spawn(move || renew_until_dropped(&pool, &held, lease, &stopped))
                .map_err(|e| {
                    ErrorObject::internal_error(format!(
                        "cannot start the thread that renews task leases: {e} (the process is out of threads?)"
                    ))
                })?;
            *stop = Some(sender);
        }
        drop(stop);
        self.held().insert(key);
        Ok(())
    }

    /// This replica no longer holds `key` (its task finished).
    pub fn release(&self, key: &str) {
        self.held().remove(key);
    }
}

/// Renews every held lease each third of the lease, until the store is
/// dropped. A lease Redis no longer has (it lapsed while Redis was out of
/// reach, or another replica finished the task) is not revived: it is
/// forgotten, and the task is failed by whoever reads it next.
fn renew_until_dropped(
    pool: &Pool,
    held: &Mutex<HashSet<String>>,
    lease: Duration,
    stopped: &Receiver<()>,
) {
    let every = (lease / 3).max(Duration::from_millis(1));
    let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1);
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
        let keys: Vec<String> = held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        if keys.is_empty() {
            continue;
        }
        let renewed: Result<Vec<i64>, _> = pool.run(|connection| {
            let mut pipe = redis::pipe();
            for key in &keys {
                pipe.cmd("PEXPIRE").arg(key).arg(lease_ms);
            }
            pipe.query(connection)
        });
        // Redis out of reach: try again at the next turn.
        let Ok(renewed) = renewed else { continue };
        let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
        for (key, kept) in keys.iter().zip(renewed) {
            if kept == 0 {
                held.remove(key);
            }
        }
    }
}
