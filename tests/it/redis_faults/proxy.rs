//! Faults between a replica and a real Redis: a TCP proxy in front of it
//! that can delay a script, lose the reply to a write it delivered, cut
//! every connection, or go silent on the open ones (a half-open
//! connection, as after a NAT or load balancer dropped it without a word).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What marks the command that writes a task over its version
/// (`RedisTaskStore::update`'s script, the only one that keeps the key's
/// expiry with `KEEPTTL`): a write, for the faults below.
const WRITE: &[u8] = b"KEEPTTL";

/// What the proxy does to the bytes it carries now.
#[derive(Default)]
struct Faults {
    /// Scripts (`EVAL`) wait this long before they go on to Redis.
    delay_eval_ms: AtomicU64,
    /// The next write goes to Redis, its reply is read and dropped, and
    /// the client's connection is closed: applied, with the reply lost.
    lose_write_reply: AtomicBool,
    /// New connections are closed at once.
    refuse: AtomicBool,
    /// Bumped by a cut or a silence: connections opened before it are
    /// cut (closed) or silenced (kept open, nothing carried).
    epoch: AtomicU64,
    /// Whether the connections of an older epoch are cut (closed) rather
    /// than silenced.
    cut_old: AtomicBool,
    /// With `lose_write_reply`: the lost reply cuts every connection and
    /// refuses new ones (as [`Proxy::cut`]), so that the client's retry
    /// fails too.
    cut_on_lost_write: AtomicBool,
    /// The next write goes to Redis, and its reply (and all after it on
    /// that connection) is swallowed while the connection stays open: the
    /// client waits for its read timeout.
    hold_write_reply: AtomicBool,
    /// How many write replies were swallowed so.
    held: AtomicU64,
    /// How many write replies were lost (`lose_write_reply`).
    lost: AtomicU64,
}

/// The connections carried, with the epoch each was opened in.
type Open = Arc<Mutex<Vec<(u64, TcpStream, TcpStream)>>>;

/// A proxy to the Redis at `target`, listening on a port of its own.
pub struct Proxy {
    pub url: String,
    faults: Arc<Faults>,
    open: Open,
}

impl Proxy {
    pub fn to(target: &str) -> Proxy {
        let address = target
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("redis://{}/", listener.local_addr().unwrap());
        let faults = Arc::new(Faults::default());
        let open = Open::default();
        let (f, o) = (Arc::clone(&faults), Arc::clone(&open));
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if f.refuse.load(Ordering::Acquire) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&address) else {
                    continue;
                };
                carry(client, server, &f, &o);
            }
        });
        Proxy { url, faults, open }
    }

    /// Every script waits `delay` before it reaches Redis.
    pub fn delay_scripts(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap();
        self.faults.delay_eval_ms.store(ms, Ordering::Release);
    }

    /// The next write is applied by Redis and its reply lost (the
    /// client's connection closes instead).
    pub fn lose_next_write_reply(&self) {
        self.faults.lose_write_reply.store(true, Ordering::Release);
    }

    /// The next write is applied by Redis, its reply lost, and Redis is
    /// out of reach from then on (every connection cut, new ones refused)
    /// until [`Proxy::restore`]: the client's retry fails too.
    pub fn lose_next_write_reply_and_cut(&self) {
        self.faults.cut_on_lost_write.store(true, Ordering::Release);
        self.faults.lose_write_reply.store(true, Ordering::Release);
    }

    /// The next write is applied by Redis and its reply never arrives on
    /// a connection that stays open (a network that lost it without a
    /// reset): the client waits for its read timeout.
    pub fn hold_next_write_reply(&self) {
        self.faults.hold_write_reply.store(true, Ordering::Release);
    }

    /// How many write replies were lost by [`Proxy::lose_next_write_reply`]
    /// or [`Proxy::lose_next_write_reply_and_cut`].
    pub fn lost(&self) -> u64 {
        self.faults.lost.load(Ordering::Acquire)
    }

    /// How many write replies were swallowed by [`Proxy::hold_next_write_reply`].
    pub fn held(&self) -> u64 {
        self.faults.held.load(Ordering::Acquire)
    }

    /// Closes every open connection and refuses new ones until
    /// [`Proxy::restore`]: Redis out of reach.
    pub fn cut(&self) {
        cut_all(&self.faults, &self.open);
    }

    /// The open connections carry nothing from now on, and stay open
    /// (their peers hear nothing either way); new connections work.
    pub fn silence_open_connections(&self) {
        self.faults.cut_old.store(false, Ordering::Release);
        self.faults.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// New connections are taken again.
    pub fn restore(&self) {
        self.faults.refuse.store(false, Ordering::Release);
    }
}

/// Closes every open connection and refuses new ones.
fn cut_all(faults: &Faults, open: &Open) {
    faults.refuse.store(true, Ordering::Release);
    faults.cut_old.store(true, Ordering::Release);
    faults.epoch.fetch_add(1, Ordering::AcqRel);
    for (_, client, server) in open.lock().unwrap().drain(..) {
        let _ = client.shutdown(Shutdown::Both);
        let _ = server.shutdown(Shutdown::Both);
    }
}

/// Carries one connection both ways on two threads.
fn carry(client: TcpStream, server: TcpStream, faults: &Arc<Faults>, open: &Open) {
    let epoch = faults.epoch.load(Ordering::Acquire);
    open.lock().unwrap().push((
        epoch,
        client.try_clone().unwrap(),
        server.try_clone().unwrap(),
    ));
    // Set by the way up when the reply to what it sent must be lost, or
    // held.
    let lose = Arc::new(AtomicBool::new(false));
    let hold = Arc::new(AtomicBool::new(false));
    let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let (f, lose_up, hold_up) = (Arc::clone(faults), Arc::clone(&lose), Arc::clone(&hold));
    thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        loop {
            let Ok(n) = c_in.read(&mut buf) else { return };
            if n == 0 {
                let _ = s_out.shutdown(Shutdown::Both);
                return;
            }
            if !current(&f, epoch) {
                if f.cut_old.load(Ordering::Acquire) {
                    let _ = s_out.shutdown(Shutdown::Both);
                    return;
                }
                // Silenced: the bytes go nowhere.
                continue;
            }
            let chunk = &buf[..n];
            let delay = f.delay_eval_ms.load(Ordering::Acquire);
            if delay > 0 && contains(chunk, b"EVAL") {
                thread::sleep(Duration::from_millis(delay));
            }
            if contains(chunk, WRITE) && f.lose_write_reply.swap(false, Ordering::AcqRel) {
                lose_up.store(true, Ordering::Release);
            }
            if contains(chunk, WRITE) && f.hold_write_reply.swap(false, Ordering::AcqRel) {
                hold_up.store(true, Ordering::Release);
            }
            if s_out.write_all(chunk).is_err() {
                return;
            }
        }
    });
    let (mut s_in, mut c_out, f) = (server, client, Arc::clone(faults));
    let all = Arc::clone(open);
    thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        let mut holding = false;
        loop {
            let Ok(n) = s_in.read(&mut buf) else { return };
            if n == 0 {
                let _ = c_out.shutdown(Shutdown::Both);
                return;
            }
            if !current(&f, epoch) {
                if f.cut_old.load(Ordering::Acquire) {
                    let _ = c_out.shutdown(Shutdown::Both);
                    return;
                }
                // Silenced: the bytes go nowhere.
                continue;
            }
            if lose.load(Ordering::Acquire) && contains(&buf[..n], b"\r\n") {
                // The reply to the write (Redis applied it) never arrives.
                f.lost.fetch_add(1, Ordering::AcqRel);
                if f.cut_on_lost_write.swap(false, Ordering::AcqRel) {
                    cut_all(&f, &all);
                }
                let _ = c_out.shutdown(Shutdown::Both);
                let _ = s_in.shutdown(Shutdown::Both);
                return;
            }
            if !holding && hold.load(Ordering::Acquire) && contains(&buf[..n], b"\r\n") {
                // The reply to the write (Redis applied it), and all after
                // it, go nowhere; the connection stays open.
                holding = true;
                f.held.fetch_add(1, Ordering::AcqRel);
            }
            if holding {
                continue;
            }
            if c_out.write_all(&buf[..n]).is_err() {
                return;
            }
        }
    });
}

/// Whether a connection of `epoch` still carries bytes.
fn current(faults: &Faults, epoch: u64) -> bool {
    faults.epoch.load(Ordering::Acquire) == epoch
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
