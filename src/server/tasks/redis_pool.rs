//! The connections of a [`RedisTaskStore`](crate::RedisTaskStore): a small
//! pool of synchronous Redis connections, opened on demand, kept when
//! healthy, dropped when broken.

use std::sync::Mutex;
use std::time::Duration;

use crate::jsonrpc::ErrorObject;

/// How long opening a connection may take.
const CONNECT: Duration = Duration::from_secs(2);
/// How long one reply may take before the operation fails.
const REPLY: Duration = Duration::from_secs(5);
/// Idle connections kept for reuse; more are opened under load and closed
/// after use.
const KEEP: usize = 16;

/// Connections to one Redis.
pub(crate) struct Pool {
    client: redis::Client,
    url: String,
    idle: Mutex<Vec<redis::Connection>>,
}

impl Pool {
    /// A pool for the Redis at `url`; fails when it cannot be reached now.
    pub fn open(url: &str) -> Result<Pool, ErrorObject> {
        let client = redis::Client::open(url).map_err(|e| unreachable(url, &e))?;
        let pool = Pool {
            client,
            url: url.to_owned(),
            idle: Mutex::new(Vec::new()),
        };
        let first = pool.connect()?;
        pool.give_back(first);
        Ok(pool)
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
            match work(&mut connection) {
                Ok(value) => {
                    self.give_back(connection);
                    return Ok(value);
                }
                Err(e) if broken(&e) && !tried => tried = true,
                Err(e) => return Err(failed(&self.url, &e)),
            }
        }
    }

    fn take(&self) -> Result<redis::Connection, ErrorObject> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(connection) => Ok(connection),
            None => self.connect(),
        }
    }

    fn give_back(&self, connection: redis::Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < KEEP {
            idle.push(connection);
        }
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
