//! The connections of a [`RedisTaskStore`](crate::RedisTaskStore): a small
//! pool of synchronous Redis connections, opened on demand up to a bound,
//! kept when healthy, dropped when broken.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::jsonrpc::ErrorObject;

/// How long opening a connection may take.
const CONNECT: Duration = Duration::from_secs(2);
/// How long one reply may take before the operation fails.
const REPLY: Duration = Duration::from_secs(5);
/// Idle connections kept for reuse; more are opened under load and closed
/// after use.
const KEEP: usize = 16;
/// The most connections open at once (idle or in use); past it, an
/// operation waits up to [`CONNECT`] for one to come back, then fails.
pub(crate) const MAX_OPEN: usize = 64;

/// Connections to one Redis.
pub(crate) struct Pool {
    client: redis::Client,
    url: String,
    state: Mutex<State>,
    /// Signalled when a connection comes back or closes.
    returned: Condvar,
}

/// The idle connections, and how many are open in all.
struct State {
    idle: Vec<redis::Connection>,
    open: usize,
}

impl Pool {
    /// A pool for the Redis at `url`; fails when it cannot be reached now.
    pub fn open(url: &str) -> Result<Pool, ErrorObject> {
        let client = redis::Client::open(url).map_err(|e| unreachable(url, &e))?;
        let pool = Pool {
            client,
            url: url.to_owned(),
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
        };
        let first = pool.take()?;
        pool.give_back(first);
        Ok(pool)
    }

    /// A connection of the caller's own, outside the pool, whose replies
    /// may take `reply` at most (the lease renewal's: it must never wait
    /// behind the pool).
    pub fn dedicated(&self, reply: Duration) -> redis::RedisResult<redis::Connection> {
        let connection = self.client.get_connection_with_timeout(reply)?;
        connection.set_read_timeout(Some(reply))?;
        connection.set_write_timeout(Some(reply))?;
        Ok(connection)
    }

    /// Runs `work` on a connection. A connection that broke (Redis
    /// restarted, the network cut it) is dropped and `work` runs once more
    /// on a new one; any other failure is returned as a `-32603` that names
    /// Redis. A connection comes back to the pool only after `work`
    /// succeeded on it, so none is reused in the middle of a transaction.
    pub fn run<T>(
        &self,
        mut work: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, ErrorObject> {
        let mut tried = false;
        loop {
            let mut connection = self.take()?;
            let done = work(&mut connection);
            match done {
                Ok(value) => {
                    self.give_back(connection);
                    return Ok(value);
                }
                Err(e) => {
                    self.close(connection);
                    if broken(&e) && !tried {
                        tried = true;
                    } else {
                        return Err(failed(&self.url, &e));
                    }
                }
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection, or a new one while fewer than [`MAX_OPEN`] are
    /// open; at the bound, waits up to [`CONNECT`] for one to come back.
    fn take(&self) -> Result<redis::Connection, ErrorObject> {
        let deadline = Instant::now() + CONNECT;
        let mut state = self.state();
        loop {
            if let Some(connection) = state.idle.pop() {
                return Ok(connection);
            }
            if state.open < MAX_OPEN {
                state.open += 1;
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ErrorObject::internal_error(format!(
                    "all {MAX_OPEN} connections to the task store on Redis at {} are busy: try again",
                    self.url
                )));
            }
            state = self
                .returned
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(state);
        // Connected without the lock; the place taken is given back on failure.
        self.connect().inspect_err(|_| {
            self.state().open -= 1;
            self.returned.notify_one();
        })
    }

    /// A connection that did its work comes back (kept idle, or closed
    /// past [`KEEP`]).
    fn give_back(&self, connection: redis::Connection) {
        let mut state = self.state();
        if state.idle.len() < KEEP {
            state.idle.push(connection);
        } else {
            state.open -= 1;
            drop(connection);
        }
        drop(state);
        self.returned.notify_one();
    }

    /// A connection that failed is closed: it may be in the middle of a
    /// transaction or a reply.
    fn close(&self, connection: redis::Connection) {
        drop(connection);
        self.state().open -= 1;
        self.returned.notify_one();
    }

    fn connect(&self) -> Result<redis::Connection, ErrorObject> {
        let connection = self
            .client
            .get_connection_with_timeout(CONNECT)
            .map_err(|e| unreachable(&self.url, &e))?;
        connection
            .set_read_timeout(Some(REPLY))
            .and_then(|()| connection.set_write_timeout(Some(REPLY)))
            .map_err(|e| unreachable(&self.url, &e))?;
        Ok(connection)
    }
}

/// Whether the connection is unusable after `e` (rather than the command
/// refused).
fn broken(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() || e.is_timeout()
}

/// Redis could not be reached at all.
pub(crate) fn unreachable(url: &str, e: &redis::RedisError) -> ErrorObject {
    ErrorObject::internal_error(one_line(format!(
        "cannot reach the task store on Redis at {url}: {e} (is redis-server running there?)"
    )))
}

/// A command failed.
fn failed(url: &str, e: &redis::RedisError) -> ErrorObject {
    ErrorObject::internal_error(one_line(format!(
        "the task store on Redis at {url} failed: {e} (check the Redis server's log, then try again)"
    )))
}

fn one_line(message: String) -> String {
    message.replace(['\r', '\n'], " ")
}
