//! Faults between a replica and a real Redis: a TCP proxy in front of it
//! that can delay a script, lose the reply to an `EXEC` it delivered, cut
//! every connection, or go silent on the open ones (a half-open
//! connection, as after a NAT or load balancer dropped it without a word).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What the proxy does to the bytes it carries now.
#[derive(Default)]
struct Faults {
    /// Scripts (`EVAL`) wait this long before they go on to Redis.
    delay_eval_ms: AtomicU64,
    /// The next `EXEC` goes to Redis, its reply is read and dropped, and
    /// the client's connection is closed: applied, with the reply lost.
    lose_exec_reply: AtomicBool,
    /// New connections are closed at once.
    refuse: AtomicBool,
    /// Bumped by a cut or a silence: connections opened before it are
    /// cut (closed) or silenced (kept open, nothing carried).
    epoch: AtomicU64,
    /// Whether the connections of an older epoch are cut (closed) rather
    /// than silenced.
    cut_old: AtomicBool,
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

    /// The next `EXEC` is applied by Redis and its reply lost (the
    /// client's connection closes instead).
    pub fn lose_next_exec_reply(&self) {
        self.faults.lose_exec_reply.store(true, Ordering::Release);
    }

    /// Closes every open connection and refuses new ones until
    /// [`Proxy::restore`]: Redis out of reach.
    pub fn cut(&self) {
        self.faults.refuse.store(true, Ordering::Release);
        self.faults.cut_old.store(true, Ordering::Release);
        self.faults.epoch.fetch_add(1, Ordering::AcqRel);
        for (_, client, server) in self.open.lock().unwrap().drain(..) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
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

/// Carries one connection both ways on two threads.
fn carry(client: TcpStream, server: TcpStream, faults: &Arc<Faults>, open: &Open) {
    let epoch = faults.epoch.load(Ordering::Acquire);
    open.lock().unwrap().push((
        epoch,
        client.try_clone().unwrap(),
        server.try_clone().unwrap(),
    ));
    // Set by the way up when the reply to what it sent must be lost.
    let lose = Arc::new(AtomicBool::new(false));
    let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let (f, lose_up) = (Arc::clone(faults), Arc::clone(&lose));
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
            if contains(chunk, b"EXEC") && f.lose_exec_reply.swap(false, Ordering::AcqRel) {
                lose_up.store(true, Ordering::Release);
            }
            if s_out.write_all(chunk).is_err() {
                return;
            }
        }
    });
    let (mut s_in, mut c_out, f) = (server, client, Arc::clone(faults));
    thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
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
                // The reply to the EXEC (Redis applied it) never arrives.
                let _ = c_out.shutdown(Shutdown::Both);
                let _ = s_in.shutdown(Shutdown::Both);
                return;
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
