//! [`RedisChangeFeed`]: a [`ChangeFeed`] on Redis pub/sub, behind the
//! `redis` feature. Each replica publishes its changes on one channel, from
//! one connection (so in the order it published them), and subscribes to
//! the same channel on another, skipping what it sent itself.
//!
//! Pub/sub delivers to whoever is subscribed at the moment: a change
//! published while a replica's subscriber is reconnecting (Redis restarted,
//! the network broke) does not reach that replica's listens. So after each
//! break the subscriber delivers [`Change::Reconnected`]: its listens hear
//! that every list may have changed, and the server reads the tasks it
//! runs again. A subscriber connection that went silent without a reset
//! (a NAT or load balancer that forgot it) is found by a `PING` after
//! [`QUIET`] without a message, and opened again.
//!
//! With the replicas' shared key ([`ChangeFeed::authenticate`]) every
//! message carries an HMAC-SHA256 of its content, and a message that does
//! not verify is dropped: a client of Redis that may `PUBLISH` on the
//! channel cannot show a listener a change. (Replay of a genuine message
//! is not prevented; none can act on a task by itself: answers and stops
//! are read from the task store.)

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::error::Error;
use crate::server::change_feed::{Change, ChangeFeed};

/// How long the subscriber waits for a message before it looks whether the
/// feed was dropped, and the longest a reconnection waits between tries.
const LOOK: Duration = Duration::from_secs(1);

/// How long the subscriber may hear nothing before it sends a `PING`; if
/// the answer takes longer than [`REPLY`] the connection is taken to be
/// dead and opened again. A dead connection is thus found within
/// `QUIET + REPLY` (10 s).
const QUIET: Duration = Duration::from_secs(5);

/// How long the publisher waits for Redis to take a `PUBLISH` and answer it
/// before it takes the connection for broken: a Redis that stopped
/// answering, or a network that dropped it without a word, would otherwise
/// hold every change after it until the kernel gives up (many minutes).
const REPLY: Duration = Duration::from_secs(5);

/// How many changes may wait for the publisher, and how many bytes in
/// all; past either (Redis slower than the server's changes for a long
/// while) a change is lost, as one published while the connection is down
/// is.
const OUTBOX: usize = 65_536;
const OUTBOX_BYTES: usize = 64 << 20;

/// What an authenticated message starts with, before its MAC and body.
const SIGNED: &[u8] = b"mcp-stdio-feed-v1.";

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
/// lost, and the replica's listens are told (see the module docs of
/// `redis_feed`). A Redis that takes more than 5 s to answer a `PUBLISH`
/// is taken to be lost too, a subscriber silent for 5 s is pinged, and at
/// most 65,536 changes and 64 MiB wait for the publisher. With the
/// replicas' shared key (`request_state_key`) every message is
/// authenticated. Dropping the feed (with the server that holds it) ends
/// both threads.
pub struct RedisChangeFeed {
    client: redis::Client,
    channel: String,
    /// This replica's name on the channel: random, so that a replica skips
    /// its own changes.
    replica: String,
    outbox: Sender<Vec<u8>>,
    /// The bytes waiting in the outbox.
    queued: Arc<AtomicUsize>,
    /// The replicas' shared key, once the server gave it.
    key: Arc<OnceLock<[u8; 32]>>,
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
        let queued = Arc::new(AtomicUsize::new(0));
        let feed = RedisChangeFeed {
            client: client.clone(),
            channel: channel.to_owned(),
            replica: replica_name()?,
            outbox,
            queued: Arc::clone(&queued),
            key: Arc::new(OnceLock::new()),
            stopped,
            published: Arc::clone(&published),
        };
        let channel = feed.channel.clone();
        let sent = Sent { published, queued };
        thread::Builder::new()
            .name("mcp-redis-publish".into())
            .spawn(move || publish(&client, publisher, &channel, &queue, &sent))?;
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
        let Ok(body) = serde_json::to_vec(&envelope) else {
            return;
        };
        let message = match self.key.get() {
            Some(key) => sign(key, &body),
            None => body,
        };
        let size = message.len();
        // Full, by count or by bytes: lost (see `OUTBOX`). The publisher
        // ends only when the feed is dropped.
        if self.queued.fetch_add(size, Ordering::AcqRel) + size > OUTBOX_BYTES
            || self.outbox.try_send(message).is_err()
        {
            self.queued.fetch_sub(size, Ordering::AcqRel);
        }
    }

    fn receive(&self, deliver: Box<dyn Fn(Change) + Send + Sync>) {
        let (client, channel) = (self.client.clone(), self.channel.clone());
        let (replica, stopped) = (self.replica.clone(), Arc::clone(&self.stopped));
        let key = self.key.get().copied();
        let _ = thread::Builder::new()
            .name("mcp-redis-subscribe".into())
            .spawn(move || {
                let me = Subscriber {
                    client: &client,
                    channel: &channel,
                    replica: &replica,
                    key: key.as_ref(),
                    stopped: &stopped,
                };
                me.run(&*deliver);
            });
    }

    fn authenticate(&self, key: &[u8; 32]) {
        let _ = self.key.set(*key);
    }
}

/// `SIGNED`, the hex HMAC-SHA256 of `body` under `key`, a dot, `body`.
fn sign(key: &[u8; 32], body: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let mut message = Vec::with_capacity(SIGNED.len() + 65 + body.len());
    message.extend_from_slice(SIGNED);
    for b in tag {
        message.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    message.push(b'.');
    message.extend_from_slice(body);
    message
}

/// The body of a message `sign` made with `key`; `None` when it was not
/// (in constant time over the tag).
fn verify<'a>(key: &[u8; 32], message: &'a [u8]) -> Option<&'a [u8]> {
    let rest = message.strip_prefix(SIGNED)?;
    let (hex, body) = (rest.get(..64)?, rest.get(65..)?);
    if rest.get(64) != Some(&b'.') {
        return None;
    }
    let mut tag = [0u8; 32];
    for (i, pair) in hex.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        tag[i] = u8::from_str_radix(text, 16).ok()?;
    }
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    mac.update(body);
    mac.verify_slice(&tag).ok()?;
    Some(body)
}

impl Drop for RedisChangeFeed {
    fn drop(&mut self) {
        // The publisher ends with the outbox, the subscriber at its next look.
        self.stopped.store(true, Ordering::Release);
    }
}

/// What the publisher counts.
struct Sent {
    published: Arc<AtomicU64>,
    queued: Arc<AtomicUsize>,
}

/// The publisher: sends what is queued, in order, until the feed is
/// dropped; opens the connection again when it broke.
fn publish(
    client: &redis::Client,
    connection: redis::Connection,
    channel: &str,
    queue: &Receiver<Vec<u8>>,
    sent: &Sent,
) {
    let mut connection = Some(connection);
    while let Ok(message) = queue.recv() {
        sent.queued.fetch_sub(message.len(), Ordering::AcqRel);
        // Broken or silent for `REPLY`: once more on a new connection,
        // then the change is lost.
        for _attempt in 0..2 {
            if connection.is_none() {
                connection = publisher_connection(client).ok();
            }
            let Some(open) = connection.as_mut() else {
                break;
            };
            let done: redis::RedisResult<i64> =
                redis::cmd("PUBLISH").arg(channel).arg(&message).query(open);
            if done.is_ok() {
                sent.published.fetch_add(1, Ordering::AcqRel);
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

/// The subscriber's side of the feed.
struct Subscriber<'a> {
    client: &'a redis::Client,
    channel: &'a str,
    replica: &'a str,
    key: Option<&'a [u8; 32]>,
    stopped: &'a AtomicBool,
}

impl Subscriber<'_> {
    /// Delivers what the other replicas publish until the feed is
    /// dropped; subscribes again when the connection broke or went silent,
    /// and then delivers [`Change::Reconnected`].
    fn run(&self, deliver: &(dyn Fn(Change) + Send + Sync)) {
        let mut subscribed_before = false;
        while !self.stopped.load(Ordering::Acquire) {
            let Ok(mut connection) = self.client.get_connection_with_timeout(LOOK) else {
                thread::sleep(LOOK);
                continue;
            };
            // Every wait is bounded, the subscription's answer included: a
            // silent network must not hold this thread.
            if connection.set_read_timeout(Some(REPLY)).is_err()
                || connection.set_write_timeout(Some(REPLY)).is_err()
            {
                thread::sleep(LOOK);
                continue;
            }
            let mut pubsub = connection.as_pubsub();
            if pubsub.subscribe(self.channel).is_err()
                || pubsub.set_read_timeout(Some(LOOK)).is_err()
            {
                thread::sleep(LOOK);
                continue;
            }
            if subscribed_before {
                deliver(Change::Reconnected);
            }
            subscribed_before = true;
            self.listen(&mut pubsub, deliver);
        }
    }

    /// Delivers from one subscription until it breaks, goes silent, or the
    /// feed is dropped.
    fn listen(&self, pubsub: &mut redis::PubSub<'_>, deliver: &(dyn Fn(Change) + Send + Sync)) {
        let mut heard = Instant::now();
        while !self.stopped.load(Ordering::Acquire) {
            match pubsub.get_message() {
                Ok(message) => {
                    heard = Instant::now();
                    if let Some(change) = self.open(message.get_payload_bytes()) {
                        deliver(change);
                    }
                }
                Err(e) if e.is_timeout() => {
                    if heard.elapsed() < QUIET {
                        continue;
                    }
                    // Quiet for long: is anyone there? The answer may take
                    // `REPLY`; messages that come first are kept for
                    // `get_message`.
                    let alive = pubsub.set_read_timeout(Some(REPLY)).is_ok()
                        && pubsub.ping::<redis::Value>().is_ok()
                        && pubsub.set_read_timeout(Some(LOOK)).is_ok();
                    if !alive {
                        // Leaving the subscription waits for an answer on
                        // this dead connection: not for long.
                        let _ = pubsub.set_read_timeout(Some(Duration::from_millis(10)));
                        return;
                    }
                    heard = Instant::now();
                }
                // Broken: subscribe again on a new connection.
                Err(_) => return,
            }
        }
    }

    /// The change in a message from another replica: `None` for this
    /// replica's own, and (with a key) for one that does not verify.
    fn open(&self, payload: &[u8]) -> Option<Change> {
        let body = match self.key {
            Some(key) => verify(key, payload)?,
            None => payload,
        };
        let envelope: Envelope = serde_json::from_slice(body).ok()?;
        (envelope.from != self.replica).then_some(envelope.change)
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
    fn a_message_verifies_only_unchanged_and_under_its_key() {
        let key = [3; 32];
        let body = br#"{"from":"a","change":{"kind":"toolsListChanged"}}"#;
        let signed = sign(&key, body);
        assert_eq!(verify(&key, &signed), Some(&body[..]));
        assert_eq!(verify(&[4; 32], &signed), None, "another key");
        let mut changed = signed.clone();
        *changed.last_mut().unwrap() = b']';
        assert_eq!(verify(&key, &changed), None, "a changed body");
        assert_eq!(verify(&key, body), None, "unsigned");
        assert_eq!(verify(&key, &signed[..40]), None, "cut short");
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
