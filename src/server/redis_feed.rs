//! [`RedisChangeFeed`]: a [`ChangeFeed`] on Redis pub/sub, behind the
//! `redis` feature. Each replica publishes its changes on one channel, from
//! one connection (so in the order it published them), and subscribes to
//! the same channel on another, skipping what it sent itself.
//!
//! Pub/sub delivers to whoever is subscribed at the moment, and only what
//! was published. So the publisher keeps each change until Redis took it
//! (Redis stalled, restarting, or out of reach: it tries again, on a new
//! connection, until the feed is dropped); past the outbox's bound a change
//! is dropped, and once the publisher gets through it sends a resync
//! ([`Change::Reconnected`]) that the others take as their own
//! reconnection. A change published while a replica's subscriber is
//! reconnecting does not reach that replica: after each break the
//! subscriber delivers [`Change::Reconnected`], so its listens hear that
//! every list may have changed and the current status of the tasks they
//! follow, and the server reads the tasks it runs again. A subscriber
//! connection that went silent without a reset (a NAT or load balancer
//! that forgot it) is found by a `PING` after [`QUIET`] without a message,
//! and opened again.
//!
//! Each message names its sender (a random name per feed), the sender's
//! clock (ms since the Unix epoch) and a sequence number of the sender's,
//! one more for each message. A subscriber drops a message stamped more
//! than [`FRESH`] from its own clock, and one whose number is not past the
//! last it took from that sender (a `PUBLISH` sent twice after its reply
//! was lost, or a message replayed). With the replicas' shared key
//! ([`ChangeFeed::authenticate`]: derived from `request_state_key`, and
//! not the key that seals `requestState`) every message also carries an
//! HMAC-SHA256 of the channel's name and of all that, and one that does not
//! verify is dropped: a client of Redis that may `PUBLISH` on the channel
//! cannot show a listener a change, nor show one again (and a listen never
//! sees a task's status older than one it saw: `change_feed`). Messages
//! dropped for their key or their stamp are counted and said on the
//! server's trace: the first at once, then at most one note a minute.
//!
//! The files, by job: this one holds the feed, its messages' signature and
//! the state of its two threads; `publish.rs` the publisher's loop (each
//! change until Redis took it, the resyncs) and `subscribe.rs` the
//! subscriber's (each message verified, stamped and numbered, or dropped).

mod publish;
mod subscribe;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::Sender;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

use crate::error::Error;
use crate::note_limiter::NoteLimiter;
use crate::server::change_feed::{Change, ChangeFeed};
use crate::server::tasks::redis_pool::shown_url;

/// How long the subscriber waits for a message before it looks whether the
/// feed was dropped, and the longest a reconnection waits between tries.
const LOOK: Duration = Duration::from_secs(1);

/// How long the subscriber may hear nothing before it sends a `PING`; if
/// the answer takes longer than [`REPLY`] the connection is taken to be
/// dead and opened again. A dead connection is thus found within
/// `QUIET + REPLY` (10 s).
const QUIET: Duration = Duration::from_secs(5);

/// How long the publisher waits for Redis to take a `PUBLISH` and answer it
/// before it takes the connection for broken (and sends it again on a new
/// one): a Redis that stopped answering, or a network that dropped it
/// without a word, would otherwise hold every change after it until the
/// kernel gives up (many minutes).
const REPLY: Duration = Duration::from_secs(5);

/// How many changes may wait for the publisher, and how many bytes in
/// all; past either (Redis out of reach, or slower than the server's
/// changes, for a long while) a change is dropped, and a resync follows.
const OUTBOX: usize = 65_536;
const OUTBOX_BYTES: usize = 64 << 20;

/// The least time between two resyncs a publisher sends: each makes every
/// other replica tell each of its listens that every list changed and
/// read the tasks they follow and run, so a publisher whose changes come
/// faster than Redis takes them (its outbox full) sends one per second,
/// not one with each change.
const RESYNC_EVERY: Duration = Duration::from_secs(1);

/// The least time between two resyncs a subscriber makes for messages it
/// dropped as stale: each was genuine (it verified), so a change is lost,
/// and a replica whose clock is off keeps sending them.
const STALE_RESYNC_EVERY: Duration = Duration::from_secs(5);

/// How far a message's stamp may be from the subscriber's clock, either
/// way: the replicas' clocks may differ by less.
const FRESH: Duration = Duration::from_secs(60);

/// How many senders a subscriber remembers the last sequence number of;
/// past it, the ones not heard from for two [`FRESH`] are forgotten (their
/// old messages are stale anyway), then the older half.
const SENDERS_KEPT: usize = 4096;

/// The least time between two notes of one kind on the trace.
const NOTE_EVERY: Duration = Duration::from_secs(60);

/// What an authenticated message starts with, before its MAC and body.
const SIGNED: &[u8] = b"mcp-stdio-feed-v2.";

/// Where the feed's notes go (the server's trace).
type Trace = dyn Fn(&str) + Send + Sync;

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
/// opened again, once a second at most. A change is kept until Redis took
/// it; at most 65,536 changes and 64 MiB wait for the publisher, past
/// which a change is dropped and the other replicas are told to read
/// again what their listens follow (see the module docs of `redis_feed`).
/// A Redis that takes more than 5 s to answer a `PUBLISH` is taken to be
/// lost, and a subscriber silent for 5 s is pinged. With the replicas'
/// shared key (`request_state_key`) every message is authenticated, and
/// none is taken twice. Dropping the feed (with the server that holds it)
/// ends both threads, and what was not published yet is dropped.
pub struct RedisChangeFeed {
    client: redis::Client,
    channel: String,
    /// This replica's name on the channel: random, so that a replica skips
    /// its own changes.
    replica: String,
    outbox: Sender<Vec<u8>>,
    /// The bytes waiting in the outbox.
    queued: Arc<AtomicUsize>,
    /// Set when a change was dropped for a full outbox: the publisher
    /// sends a resync once it gets through.
    overflowed: Arc<AtomicBool>,
    /// The key the replicas share for the feed, once the server gave it.
    key: Arc<OnceLock<[u8; 32]>>,
    /// The server's trace, once the server gave it.
    trace: Arc<OnceLock<Arc<Trace>>>,
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

/// One change on the channel: the replica that published it, its clock
/// then (ms since the Unix epoch), its sequence number.
#[derive(Deserialize)]
struct Envelope {
    from: String,
    at: u64,
    seq: u64,
    change: Change,
}

impl RedisChangeFeed {
    /// Connects to the Redis at `url` (`redis://host:port/db`, or
    /// `rediss://user:password@host:port/db`) and uses `channel` for the
    /// changes; fails when Redis cannot be reached now. No message shows
    /// the URL's user or password.
    pub fn open(url: &str, channel: &str) -> Result<RedisChangeFeed, Error> {
        let shown = shown_url(url);
        let client = redis::Client::open(url).map_err(|e| redis_error(&shown, &e))?;
        let first = publisher_connection(&client).map_err(|e| redis_error(&shown, &e))?;
        let (outbox, queue) = crossbeam_channel::bounded(OUTBOX);
        let feed = RedisChangeFeed {
            client: client.clone(),
            channel: channel.to_owned(),
            replica: replica_name()?,
            outbox,
            queued: Arc::default(),
            overflowed: Arc::default(),
            key: Arc::default(),
            trace: Arc::default(),
            stopped: Arc::default(),
            published: Arc::default(),
        };
        let publisher = Publisher {
            client,
            channel: feed.channel.clone(),
            replica: feed.replica.clone(),
            key: Arc::clone(&feed.key),
            trace: Arc::clone(&feed.trace),
            queued: Arc::clone(&feed.queued),
            overflowed: Arc::clone(&feed.overflowed),
            stopped: Arc::clone(&feed.stopped),
            published: Arc::clone(&feed.published),
        };
        thread::Builder::new()
            .name("mcp-redis-publish".into())
            .spawn(move || publisher.run(Some(first), &queue))?;
        Ok(feed)
    }

    /// How many changes this replica has published so far.
    pub fn published(&self) -> u64 {
        self.published.load(Ordering::Acquire)
    }
}

impl ChangeFeed for RedisChangeFeed {
    fn send(&self, change: &Change) {
        let Ok(message) = serde_json::to_vec(change) else {
            return;
        };
        let size = message.len();
        // Full, by count or by bytes: dropped, and a resync follows (see
        // `OUTBOX`). The publisher ends only when the feed is dropped.
        if self.queued.fetch_add(size, Ordering::AcqRel) + size > OUTBOX_BYTES
            || self.outbox.try_send(message).is_err()
        {
            self.queued.fetch_sub(size, Ordering::AcqRel);
            self.overflowed.store(true, Ordering::Release);
        }
    }

    fn receive(&self, deliver: Box<dyn Fn(Change) + Send + Sync>) {
        let (client, channel) = (self.client.clone(), self.channel.clone());
        let (replica, stopped) = (self.replica.clone(), Arc::clone(&self.stopped));
        let key = self.key.get().copied();
        let trace = self.trace.get().cloned();
        let _ = thread::Builder::new()
            .name("mcp-redis-subscribe".into())
            .spawn(move || {
                let me = Subscriber {
                    client: &client,
                    channel: &channel,
                    replica: &replica,
                    key: key.as_ref(),
                    stopped: &stopped,
                    trace,
                };
                me.run(&*deliver);
            });
    }

    fn authenticate(&self, key: &[u8; 32]) {
        let _ = self.key.set(*key);
    }

    fn trace(&self, trace: Arc<Trace>) {
        let _ = self.trace.set(trace);
    }
}

/// `SIGNED`, the hex HMAC-SHA256 under `key` of the channel's name (its
/// length first) and `body`, a dot, `body`.
fn sign(key: &[u8; 32], channel: &str, body: &[u8]) -> Vec<u8> {
    let tag = mac(key, channel, body).finalize().into_bytes();
    let mut message = Vec::with_capacity(SIGNED.len() + 65 + body.len());
    message.extend_from_slice(SIGNED);
    for b in tag {
        message.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    message.push(b'.');
    message.extend_from_slice(body);
    message
}

/// The body of a message `sign` made with `key` for `channel`; `None`
/// when it was not (in constant time over the tag).
fn verify<'a>(key: &[u8; 32], channel: &str, message: &'a [u8]) -> Option<&'a [u8]> {
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
    mac(key, channel, body).verify_slice(&tag).ok()?;
    Some(body)
}

fn mac(key: &[u8; 32], channel: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    mac.update(&(channel.len() as u64).to_be_bytes());
    mac.update(channel.as_bytes());
    mac.update(body);
    mac
}

impl Drop for RedisChangeFeed {
    fn drop(&mut self) {
        // The publisher ends with the outbox or at its next try, the
        // subscriber at its next look.
        self.stopped.store(true, Ordering::Release);
    }
}

/// The publisher's side of the feed.
struct Publisher {
    client: redis::Client,
    channel: String,
    replica: String,
    key: Arc<OnceLock<[u8; 32]>>,
    trace: Arc<OnceLock<Arc<Trace>>>,
    queued: Arc<AtomicUsize>,
    overflowed: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
    published: Arc<AtomicU64>,
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
    trace: Option<Arc<Trace>>,
}

/// What a subscriber remembers of the messages it took and dropped.
struct Heard {
    /// The last sequence number taken from each sender, and when.
    senders: HashMap<String, (u64, Instant)>,
    /// Messages dropped because they do not verify (or do not read).
    unverified: u64,
    /// Messages dropped for a stamp too far from this replica's clock.
    stale: u64,
    /// When such a message last made this replica resync.
    stale_resync: Option<Instant>,
    unverified_notes: NoteLimiter,
    stale_notes: NoteLimiter,
}

impl Heard {
    fn new() -> Heard {
        Heard {
            senders: HashMap::new(),
            unverified: 0,
            stale: 0,
            stale_resync: None,
            unverified_notes: NoteLimiter::new(1, NOTE_EVERY),
            stale_notes: NoteLimiter::new(1, NOTE_EVERY),
        }
    }

    /// Whether message `seq` of `from` is past the last one taken from it;
    /// if so, it is the last from now on.
    fn take(&mut self, from: &str, seq: u64) -> bool {
        let now = Instant::now();
        if let Some((last, at)) = self.senders.get_mut(from) {
            if seq <= *last {
                return false;
            }
            (*last, *at) = (seq, now);
            return true;
        }
        if self.senders.len() >= SENDERS_KEPT {
            self.senders
                .retain(|_, (_, at)| now.duration_since(*at) < FRESH * 2);
        }
        if self.senders.len() >= SENDERS_KEPT {
            let mut times: Vec<Instant> = self.senders.values().map(|(_, at)| *at).collect();
            let middle = times.len() / 2;
            let median = *times.select_nth_unstable(middle).1;
            self.senders.retain(|_, (_, at)| *at > median);
        }
        self.senders.insert(from.to_owned(), (seq, now));
        true
    }
}

fn unix_ms(at: SystemTime) -> u64 {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// A random name for this replica.
fn replica_name() -> Result<String, Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Redis could not be reached at `shown` (the URL without its credentials).
fn redis_error(shown: &str, e: &redis::RedisError) -> Error {
    Error::Io(std::io::Error::other(format!(
        "cannot reach Redis at {shown}: {e} (is redis-server running there?)"
    )))
}

#[cfg(test)]
mod tests;
