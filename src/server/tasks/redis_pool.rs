//! The connections of a [`RedisTaskStore`](crate::RedisTaskStore): a small
//! pool of synchronous Redis connections, opened on demand up to a bound,
//! kept when healthy, dropped when broken.
//!
//! One reply per round trip. redis-rs (1.8) does not give up a pipeline at
//! its first read timeout: it counts that reply as one to skip and waits
//! the whole timeout again for each reply after it, so a pipeline of three
//! on a connection gone half-open held an update 15 s. Every operation of
//! the store is therefore one command (a script where it needs several
//! steps), whose reply takes [`REPLY`] at most, and a connection whose
//! command failed, a timeout included, is closed and never reused.
//!
//! What a client is told and what the operator reads differ: a failure
//! reaches the client as "the task store is unavailable: try again", and
//! its detail (the address, without user or password, and Redis's own
//! message) goes to the server's trace, at most one note every
//! [`NOTE_EVERY`], with a count of the ones left out.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::jsonrpc::ErrorObject;
use crate::note_limiter::NoteLimiter;
use crate::server::tasks::Trace;

/// How long opening a connection may take.
const CONNECT: Duration = Duration::from_secs(2);
/// How long the one reply of a command may take before the command fails
/// (and its connection is closed).
pub(crate) const REPLY: Duration = Duration::from_secs(5);
/// Idle connections kept for reuse; more are opened under load and closed
/// after use.
const KEEP: usize = 16;
/// The most connections open at once (idle or in use); past it, an
/// operation waits up to [`CONNECT`] for one to come back, then fails.
pub(crate) const MAX_OPEN: usize = 64;
/// The least time between two notes of failures on the trace.
const NOTE_EVERY: Duration = Duration::from_secs(10);

/// What a client is told when Redis failed ([`Pool::unavailable`]).
const UNAVAILABLE: &str = "the task store is unavailable: try again";

/// Whether `error` says Redis failed (out of reach, too slow, every
/// connection busy), rather than something of one task.
pub(crate) fn is_unavailable(error: &ErrorObject) -> bool {
    error.message == ErrorObject::internal_error(UNAVAILABLE).message
}

/// Connections to one Redis.
pub(crate) struct Pool {
    client: redis::Client,
    /// The URL as messages show it ([`shown_url`]).
    shown: String,
    state: Mutex<State>,
    /// Signalled when a connection comes back or closes.
    returned: Condvar,
    /// Where the detail of a failure goes, once the server gave it.
    trace: OnceLock<Arc<Trace>>,
    notes: Mutex<NoteLimiter>,
}

/// The idle connections, and how many are open in all.
struct State {
    idle: Vec<redis::Connection>,
    open: usize,
}

/// A command that failed, and whether it may have run all the same (it was
/// sent, and the connection broke or its reply did not come in time).
pub(crate) struct Failure {
    pub error: ErrorObject,
    pub may_have_run: bool,
}

impl Pool {
    /// A pool for the Redis at `url`; fails when it cannot be reached now.
    pub fn open(url: &str) -> Result<Pool, ErrorObject> {
        let shown = shown_url(url);
        let client = redis::Client::open(url).map_err(|e| unreachable(&shown, &e))?;
        let pool = Pool {
            client,
            shown,
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
            trace: OnceLock::new(),
            notes: Mutex::new(NoteLimiter::new(1, NOTE_EVERY)),
        };
        let first = pool
            .connection()
            .map_err(|e| unreachable(&pool.shown, &e))?;
        pool.state().open += 1;
        pool.give_back(first);
        Ok(pool)
    }

    /// The server's trace, for the detail of failures.
    pub fn trace_to(&self, trace: Arc<Trace>) {
        let _ = self.trace.set(trace);
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

    /// Runs `work` (one command) on a connection; after a connection that
    /// broke (Redis restarted, the network cut it, no reply in time) once
    /// more on a new one. Only for a command that may run twice: a read,
    /// or a write that finds its own earlier run.
    pub fn run<T>(
        &self,
        mut work: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, ErrorObject> {
        match self.run_once(&mut work) {
            Err(failure) if failure.may_have_run => self.run_once(work).map_err(|f| f.error),
            done => done.map_err(|f| f.error),
        }
    }

    /// Runs `work` (one command) on a connection, once. A connection comes
    /// back to the pool only after `work` succeeded on it: one that failed
    /// (a timeout included) may still have a reply on its way, and is
    /// closed.
    pub fn run_once<T>(
        &self,
        work: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, Failure> {
        let mut connection = self.take().map_err(|error| Failure {
            error,
            may_have_run: false,
        })?;
        match work(&mut connection) {
            Ok(value) => {
                self.give_back(connection);
                Ok(value)
            }
            Err(e) => {
                self.close(connection);
                Err(Failure {
                    may_have_run: broken(&e),
                    error: self.unavailable(&format!("failed: {e}")),
                })
            }
        }
    }

    /// What the client is told of a failure; its `detail` goes to the
    /// trace.
    pub fn unavailable(&self, detail: &str) -> ErrorObject {
        if let Some(trace) = self.trace.get() {
            let note = one_line(format!(
                "the task store on Redis at {} {detail} (check the Redis server and its log)",
                self.shown
            ));
            let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
            notes.note(&**trace, &note);
        }
        ErrorObject::internal_error(UNAVAILABLE)
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
                drop(state);
                return Err(self.unavailable(&format!("has all its {MAX_OPEN} connections busy")));
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

    /// A connection that failed is closed: a reply may still be on its way.
    fn close(&self, connection: redis::Connection) {
        drop(connection);
        self.state().open -= 1;
        self.returned.notify_one();
    }

    fn connect(&self) -> Result<redis::Connection, ErrorObject> {
        self.connection()
            .map_err(|e| self.unavailable(&format!("cannot be reached: {e}")))
    }

    /// A new connection whose replies take [`REPLY`] at most.
    fn connection(&self) -> redis::RedisResult<redis::Connection> {
        let connection = self.client.get_connection_with_timeout(CONNECT)?;
        connection.set_read_timeout(Some(REPLY))?;
        connection.set_write_timeout(Some(REPLY))?;
        Ok(connection)
    }
}

/// Whether the connection is unusable after `e` (rather than the command
/// refused): the command may have run.
fn broken(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() || e.is_timeout()
}

/// `url` as a message may show it: without a user, a password or a query
/// (`rediss://mcp:PASSWORD@host:6380/0?...` is `rediss://host:6380/0`).
/// Everything up to the last `@` goes first, then what follows a `?` or
/// a `#`: a password put in the URL as it is may hold any of `/`, `?`,
/// `#` and `@` (`openssl rand -base64` gives `/`), and such a URL, which
/// does not parse, is the one an error shows. (An `@` in a path or a
/// query hides more than needed, never less.)
pub(crate) fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // Not a URL: nothing in it is shown.
        return "(an unreadable URL)".to_owned();
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    format!("{scheme}://{rest}")
}

/// Redis could not be reached when the store was opened: said to the
/// application, which gave the URL (shown without its credentials).
pub(crate) fn unreachable(shown: &str, e: &dyn std::fmt::Display) -> ErrorObject {
    ErrorObject::internal_error(one_line(format!(
        "cannot reach the task store on Redis at {shown}: {e} (is redis-server running there?)"
    )))
}

fn one_line(message: String) -> String {
    message.replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_credentials_or_query() {
        for (url, shown) in [
            ("redis://127.0.0.1:6379/", "redis://127.0.0.1:6379/"),
            (
                "rediss://mcp:s3cret@redis.internal:6380/2",
                "rediss://redis.internal:6380/2",
            ),
            ("redis://:p@ss@h:1", "redis://h:1"),
            (
                "redis+unix:///run/redis.sock?db=1&pass=s3cret",
                "redis+unix:///run/redis.sock",
            ),
            ("s3cret", "(an unreadable URL)"),
            (
                "redis://mcp:Pw8/Zq9+Ab@127.0.0.1:6379/",
                "redis://127.0.0.1:6379/",
            ),
            (
                "redis://mcp:Pw8#Zq9@127.0.0.1:6379/0",
                "redis://127.0.0.1:6379/0",
            ),
            ("redis://mcp:Pw8?Zq9@h:1/", "redis://h:1/"),
            ("redis://mcp:a/b?c#d@e@h:1/2?x=y@z", "redis://z"),
        ] {
            assert_eq!(shown_url(url), shown, "{url}");
        }
    }
}
