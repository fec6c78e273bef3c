//! [`RedisChangeFeed`]: a [`ChangeFeed`] on Redis pub/sub, behind the
//! `redis` feature. Each replica publishes its changes on one channel, from
//! one connection (so in the order it published them), and subscribes to
//! the same channel on another, skipping what it sent itself.
//!
//! Pub/sub delivers to whoever is subscribed at the moment: a change
//! published while a replica's subscriber is reconnecting (Redis restarted,
//! the network broke) does not reach that replica's listens. A client that
//! must not miss a change re-reads the list (or the resource) after its
//! stream was broken, as it would after any reconnection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::server::change_feed::{Change, ChangeFeed};

/// How long the subscriber waits for a message before it looks whether the
/// feed was dropped, and the longest a reconnection waits between tries.
const LOOK: Duration = Duration::from_secs(1);

/// A [`ChangeFeed`] over Redis pub/sub: every replica of a server opens one
/// on the same Redis and channel.
///
/// ```no_run
/// # fn main() -> Result<(), mcp_stdio::Error> {
/// use mcp_stdio::{RedisChangeFeed, Server};
/// let feed = RedisChangeFeed::open("redis://127.0.0.1:6379/", "mcp:changes")?;
/// let server = Server::builder("files", "1.0.0").change_feed(feed).build();
/// # drop(server);
/// # Ok(())
/// # }
/// ```
///
/// Two threads of its own: one publishes (`send` only queues, so a
/// publisher never waits for Redis), one receives. A lost connection is
/// opened again, once a second at most; what was published meanwhile is
/// lost (see the module docs of `redis_feed`). Dropping the feed (with the
/// server that holds it) ends both threads.
pub struct RedisChangeFeed {
    client: redis::Client,
    channel: String,
    /// This replica's name on the channel: random, so that a replica skips
    /// its own changes.
    replica: String,
    outbox: Sender<Vec<u8>>,
    stopped: Arc<AtomicBool>,
    /// How many sent changes went out (for tests and diagnostics).
    published: Arc<AtomicU64>,
}

impl std::fmt::Debug for RedisChangeFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisChangeFeed")
            .field("channel", &self.channel)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

/// One change on the channel, with the replica that published it.
#[derive(Serialize, Deserialize)]
struct Envelope {
    from: String,
    change: Change,
}

impl RedisChangeFeed {
    /// Connects to the Redis at `url` (`redis://host:port/db`) and uses
    /// `channel` for the changes; fails when Redis cannot be reached now.
    pub fn open(url: &str, channel: &str) -> Result<RedisChangeFeed, Error> {
        let client = redis::Client::open(url).map_err(|e| redis_error(url, &e))?;
        let publisher = client
            .get_connection_with_timeout(LOOK)
            .map_err(|e| redis_error(url, &e))?;
        let (outbox, queue) = crossbeam_channel::unbounded();
        let stopped = Arc::new(AtomicBool::new(false));
        let published = Arc::new(AtomicU64::new(0));
        let feed = RedisChangeFeed {
            client: client.clone(),
            channel: channel.to_owned(),
            replica: replica_name()?,
            outbox,
            stopped,
            published: Arc::clone(&published),
        };
        let channel = feed.channel.clone();
        thread::Builder::new()
            .name("mcp-redis-publish".into())
            .spawn(move || publish(&client, publisher, &channel, &queue, &published))?;
        Ok(feed)
    }

    /// How many changes this replica has published so far.
    pub fn published(&self) -> u64 {
        self.published.load(Ordering::Acquire)
    }
}

impl ChangeFeed for RedisChangeFeed {
    fn send(&self, change: &Change) {
        let envelope = Envelope {
            from: self.replica.clone(),
            change: change.clone(),
        };
        if let Ok(message) = serde_json::to_vec(&envelope) {
            // The publisher ends only when the feed is dropped.
            let _ = self.outbox.send(message);
        }
    }

    fn receive(&self, deliver: Box<dyn Fn(Change) + Send + Sync>) {
        let (client, channel) = (self.client.clone(), self.channel.clone());
        let (replica, stopped) = (self.replica.clone(), Arc::clone(&self.stopped));
        let _ = thread::Builder::new()
            .name("mcp-redis-subscribe".into())
            .spawn(move || subscribe(&client, &channel, &replica, &stopped, &*deliver));
    }
}

impl Drop for RedisChangeFeed {
    fn drop(&mut self) {
        // The publisher ends with the outbox, the subscriber at its next look.
        self.stopped.store(true, Ordering::Release);
    }
}

/// The publisher: sends what is queued, in order, until the feed is
/// dropped; opens the connection again when it broke.
fn publish(
    client: &redis::Client,
    connection: redis::Connection,
    channel: &str,
    queue: &Receiver<Vec<u8>>,
    published: &AtomicU64,
) {
    let mut connection = Some(connection);
    while let Ok(message) = queue.recv() {
        for attempt in 0..2 {
            let Some(open) = connection.as_mut() else {
                connection = client.get_connection_with_timeout(LOOK).ok();
                if connection.is_none() {
                    break;
                }
                continue;
            };
            let sent: redis::RedisResult<i64> =
                redis::cmd("PUBLISH").arg(channel).arg(&message).query(open);
            match sent {
                Ok(_) => {
                    published.fetch_add(1, Ordering::AcqRel);
                    break;
                }
                // Broken: once more on a new connection, then the change is lost.
                Err(_) if attempt == 0 => connection = None,
                Err(_) => {}
            }
        }
    }
}

/// The subscriber: delivers what the other replicas publish until the feed
/// is dropped; subscribes again when the connection broke.
fn subscribe(
    client: &redis::Client,
    channel: &str,
    replica: &str,
    stopped: &AtomicBool,
    deliver: &(dyn Fn(Change) + Send + Sync),
) {
    while !stopped.load(Ordering::Acquire) {
        let Ok(mut connection) = client.get_connection_with_timeout(LOOK) else {
            thread::sleep(LOOK);
            continue;
        };
        let mut pubsub = connection.as_pubsub();
        if pubsub.subscribe(channel).is_err() || pubsub.set_read_timeout(Some(LOOK)).is_err() {
            thread::sleep(LOOK);
            continue;
        }
        while !stopped.load(Ordering::Acquire) {
            match pubsub.get_message() {
                Ok(message) => {
                    let envelope: Result<Envelope, _> =
                        serde_json::from_slice(message.get_payload_bytes());
                    if let Ok(envelope) = envelope
                        && envelope.from != replica
                    {
                        deliver(envelope.change);
                    }
                }
                Err(e) if e.is_timeout() => {}
                // Broken: subscribe again on a new connection.
                Err(_) => break,
            }
        }
    }
}

/// A random name for this replica.
fn replica_name() -> Result<String, Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn redis_error(url: &str, e: &redis::RedisError) -> Error {
    Error::Io(std::io::Error::other(format!(
        "cannot reach Redis at {url}: {e} (is redis-server running there?)"
    )))
}
