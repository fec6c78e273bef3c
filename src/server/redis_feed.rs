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

/// How long the publisher waits for Redis to take a `PUBLISH` and answer it
/// before it takes the connection for broken: a Redis that stopped
/// answering, or a network that dropped it without a word, would otherwise
/// hold every change after it until the kernel gives up (many minutes).
const REPLY: Duration = Duration::from_secs(5);

/// How many changes may wait for the publisher; past that (Redis slower
/// than the server's changes for a long while) a change is lost, as one
/// published while the connection is down is.
const OUTBOX: usize = 65_536;

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
/// lost (see the module docs of `redis_feed`). A Redis that takes more
/// than 5 s to answer a `PUBLISH` is taken to be lost too, and at most
/// 65,536 changes wait for the publisher. Dropping the feed (with the
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
        let publisher = publisher_connection(&client).map_err(|e| redis_error(url, &e))?;
        let (outbox, queue) = crossbeam_channel::bounded(OUTBOX);
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
            // Full: lost (see `OUTBOX`). The publisher ends only when the
            // feed is dropped.
            let _ = self.outbox.try_send(message);
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
        // Broken or silent for `REPLY`: once more on a new connection,
        // then the change is lost.
        for _attempt in 0..2 {
            if connection.is_none() {
                connection = publisher_connection(client).ok();
            }
            let Some(open) = connection.as_mut() else {
                break;
            };
            let sent: redis::RedisResult<i64> =
                redis::cmd("PUBLISH").arg(channel).arg(&message).query(open);
            if sent.is_ok() {
                published.fetch_add(1, Ordering::AcqRel);
                break;
            }
            connection = None;
        }
    }
}

/// A connection for the publisher, which waits at most [`REPLY`] for Redis.
fn publisher_connection(client: &redis::Client) -> redis::RedisResult<redis::Connection> {
    let connection = client.get_connection_with_timeout(LOOK)?;
    connection.set_write_timeout(Some(REPLY))?;
    connection.set_read_timeout(Some(REPLY))?;
    Ok(connection)
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

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::Instant;

    use super::*;

    /// One command of the Redis protocol (an array of bulk strings), or
    /// `None` at the end of the stream.
    fn read_command(input: &mut BufReader<TcpStream>) -> Option<Vec<Vec<u8>>> {
        let mut line = String::new();
        input.read_line(&mut line).ok().filter(|n| *n > 0)?;
        let count: usize = line.trim().strip_prefix('*')?.parse().ok()?;
        let mut args = Vec::new();
        for _ in 0..count {
            line.clear();
            input.read_line(&mut line).ok()?;
            let len: usize = line.trim().strip_prefix('$')?.parse().ok()?;
            let mut arg = vec![0; len + 2];
            input.read_exact(&mut arg).ok()?;
            arg.truncate(len);
            args.push(arg);
        }
        Some(args)
    }

    /// A Redis that answers every command, except `PUBLISH` on its first
    /// connection: that one it reads and never answers, as a Redis that
    /// hangs or a network that lost it without a reset would.
    fn redis_that_goes_silent() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("redis://{}/", listener.local_addr().unwrap());
        thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let stream = stream.unwrap();
                thread::spawn(move || {
                    let mut output = stream.try_clone().unwrap();
                    let mut input = BufReader::new(stream);
                    while let Some(command) = read_command(&mut input) {
                        let reply: &[u8] = match command[0].to_ascii_uppercase().as_slice() {
                            b"PUBLISH" if n == 0 => continue,
                            b"PUBLISH" => b":0\r\n",
                            _ => b"+OK\r\n",
                        };
                        output.write_all(reply).unwrap();
                    }
                });
            }
        });
        url
    }

    #[test]
    fn a_redis_that_stops_answering_is_left_for_a_new_connection() {
        let feed = RedisChangeFeed::open(&redis_that_goes_silent(), "changes").unwrap();
        feed.send(&Change::ToolsListChanged);
        // Without a read timeout the publisher waits for the silent
        // connection for ever (until the kernel gives up), and every change
        // after it with it.
        let deadline = Instant::now() + REPLY + Duration::from_secs(5);
        while feed.published() == 0 {
            assert!(
                Instant::now() < deadline,
                "the change is still waiting for a Redis that does not answer"
            );
            thread::sleep(Duration::from_millis(20));
        }
        feed.send(&Change::ToolsListChanged);
        while feed.published() < 2 {
            assert!(
                Instant::now() < deadline,
                "the next change is not published"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}
