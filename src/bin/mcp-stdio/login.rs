//! OAuth for a person at the command line (`--url`): `login` authorizes
//! and keeps the tokens, `logout` forgets them, and every other command
//! uses the tokens kept (and authorizes when a server asks, if someone is
//! at the terminal). The authorization URL is printed on stderr (and
//! opened with `$BROWSER` when it is set); the authorization server sends
//! the browser back to a loopback port this process listens on
//! (`http://127.0.0.1:PORT/callback`, RFC 8252 section 7.3: any port).
//! Tokens are kept in `$XDG_CONFIG_HOME/mcp-stdio/oauth/` (else
//! `~/.config/...`), one file per server URL (`token_file`: no secret of
//! the URL in its name), readable by the owner only (`0600`, in a `0700`
//! directory). No message repeats the URL's user information or query
//! (`url_for_people`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stdio::OAuth;
use sha2::{Digest, Sha256};

use crate::stderr::Stderr;
use crate::url_for_people::{split_url, url_for_people};

mod store;
pub(crate) use store::{FileTokenStore, holds_a_token};

/// How long `login` waits for the browser to come back.
const WAIT_FOR_BROWSER: Duration = Duration::from_secs(300);

/// The directory the token files are in.
pub(crate) fn token_dir() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("mcp-stdio").join("oauth"))
}

/// The file that keeps `url`'s tokens: `HOST-HASH.json`, the host (and
/// port, lowercase, split as every part of mcp-stdio splits a URL:
/// `split_url`) for a person who lists the directory, HASH the
/// SHA-256 of the whole URL (its scheme and host lowercased), in hex. So
/// two URLs never share a file (a tenant in the query, a user in the user
/// information), and the name holds no secret of the URL and stays short
/// (at most 64 bytes of host: 134 bytes in all, where file systems take
/// 255) however long the URL is. (The name was the URL itself, escaped,
/// before: tokens kept under such a name, `http_3A_2F_2F...`, are not
/// found; a `login` again keeps them under the new one.)
pub(crate) fn token_file(url: &str) -> Option<PathBuf> {
    let parts = split_url(url);
    let host = if parts.port_is_a_number() {
        parts.host_port().to_ascii_lowercase()
    } else {
        parts.host.to_ascii_lowercase()
    };
    let mut canonical = format!(
        "{}://",
        parts.scheme.unwrap_or_default().to_ascii_lowercase()
    );
    if let Some(user) = parts.userinfo {
        canonical.push_str(&format!("{user}@"));
    }
    canonical.push_str(&parts.host_port().to_ascii_lowercase());
    canonical.push_str(parts.path);
    for (mark, part) in [('?', parts.query), ('#', parts.fragment)] {
        if let Some(part) = part {
            canonical.push(mark);
            canonical.push_str(part);
        }
    }
    let hash: String = (Sha256::digest(canonical.as_bytes()).iter())
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let readable: String = (host.bytes().take(64))
        .map(|byte| match byte {
            b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' => char::from(byte),
            _ => '_',
        })
        .collect();
    Some(token_dir()?.join(format!("{readable}-{hash}.json")))
}

/// The OAuth of a command on `url`: the tokens kept in its file; a person
/// asked to authorize in a browser when `interactive`, else a refusal that
/// says to run `login`. `None` when there is nowhere to keep tokens, or
/// no loopback port to listen on.
pub(crate) fn oauth(url: &str, interactive: bool, stderr: &Arc<Stderr>) -> Option<OAuth> {
    let store = FileTokenStore::new(token_file(url)?);
    let listener = TcpListener::bind("127.0.0.1:0").ok()?;
    let redirect = format!(
        "http://127.0.0.1:{}/callback",
        listener.local_addr().ok()?.port()
    );
    let (stderr, shown, hint) = (Arc::clone(stderr), url_for_people(url), login_hint(url));
    let listener = Mutex::new(listener);
    let authorize = move |authorization: &str| {
        if !interactive {
            return Err(format!(
                "the server asks for authorization, and no one is at the terminal: {hint}"
            ));
        }
        stderr.note(&format!(
            "{shown} asks for authorization: open this address in a browser (waiting up to 5 minutes):\n{authorization}"
        ));
        open_browser(authorization);
        let listener = listener
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        wait_for_redirect(
            &listener,
            &query_value(authorization, "state").unwrap_or_default(),
        )
    };
    Some(
        OAuth::authorization_code(&redirect, authorize)
            .client_name("mcp-stdio")
            .token_store(store),
    )
}

/// What to run to log in to `url`: the command itself, but where the URL
/// has user information, a query or a fragment (any may hold a secret,
/// which a message never repeats: `url_for_people`), the command with
/// `URL` in its place.
fn login_hint(url: &str) -> String {
    let shown = url_for_people(url);
    if shown == url {
        format!("run mcp-stdio --url {url} login")
    } else {
        format!(
            "run mcp-stdio --url URL login with this same URL ({shown}, its user information, query and fragment not shown)"
        )
    }
}

/// Opens `url` with `$BROWSER` (a program and its arguments, split on
/// spaces), if it is set; else the person opens it.
fn open_browser(url: &str) {
    let Ok(browser) = std::env::var("BROWSER") else {
        return;
    };
    let mut words = browser.split_whitespace();
    if let Some(program) = words.next() {
        let _ = std::process::Command::new(program)
            .args(words)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// How long one connection to the redirect listener may take to send its
/// request's whole head (a browser sends it at once).
const HEAD_DEADLINE: Duration = Duration::from_secs(3);

/// How many connections to the redirect listener are read at once: past
/// it, a new one lets the oldest go (it has had the longest to send its
/// head, and has not).
const READ_AT_ONCE: usize = 8;

/// The accepting threads of waits that ended with the redirect, with the
/// port each listens on and what stops it: each answers a browser that
/// comes again (a reload, a second tab) until the next wait on its
/// listener stops it ([`wait_for_redirect`]), or the command ends.
#[allow(clippy::type_complexity)]
static ANSWERING: Mutex<Vec<(u16, Arc<AtomicBool>, std::thread::JoinHandle<()>)>> =
    Mutex::new(Vec::new());

/// `mutex` locked, whether or not a thread panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Stops the accepting thread `accepting` on `port`: `stop` set, and a
/// connection of our own wakes it from `accept` to see it.
fn stop_accepting(port: u16, stop: &AtomicBool, accepting: std::thread::JoinHandle<()>) {
    stop.store(true, Ordering::Release);
    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
    let _ = accepting.join();
}

/// Waits for the browser's request for `/callback` carrying `state` (the
/// one in the authorization URL, once) on `listener`, for at most
/// [`WAIT_FOR_BROWSER`], and answers it; the URL it asked for.
///
/// Any process on this machine, or a page the browser has open, can
/// reach the port: a request for `/callback` without that `state` is not
/// the authorization server's redirect (RFC 6749 section 10.12), so it is
/// answered `400` and the listener keeps waiting, for as many such
/// requests as come until the deadline. Nothing that one sends ends the
/// login or reaches the flow, which checks the `state` again.
///
/// Nor can one hold the listener: every connection is accepted at once
/// and read on a thread of its own, with [`HEAD_DEADLINE`] for its whole
/// head; past [`READ_AT_ONCE`] being read, the oldest is let go, so
/// silent connections, however many, delay the redirect by less than one
/// head deadline (a browser sends its head at once).
///
/// Once the redirect came, the listener is still answered until the next
/// wait on it (or the command's end): a browser that comes again is told
/// the authorization was received, not left waiting on a port no one
/// reads.
fn wait_for_redirect(listener: &TcpListener, state: &str) -> Result<String, String> {
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    // The last wait's thread on this listener stops: no connection to
    // this wait is taken by it.
    let ended: Vec<_> = {
        let mut answering = lock(&ANSWERING);
        let (this, others) = answering.drain(..).partition(|(at, ..)| *at == port);
        *answering = others;
        this
    };
    for (port, stop, accepting) in ended {
        stop_accepting(port, &stop, accepting);
    }
    let listener = listener.try_clone().map_err(|e| e.to_string())?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    // Set by the first redirect with the state: no other is taken.
    let taken = Arc::new(AtomicBool::new(false));
    let state: Arc<str> = Arc::from(state);
    // The connections being read, oldest first, each with its number.
    let reading = Arc::new(Mutex::new(std::collections::VecDeque::<(
        u64,
        std::net::TcpStream,
    )>::new()));
    // Accepting blocks: on a thread of its own, stopped (`stop_accepting`)
    // when the wait fails, or by the next wait on the listener.
    let accepting = std::thread::Builder::new().spawn(move || {
        let mut number = 0u64;
        loop {
            let conn = listener.accept();
            if stopped.load(Ordering::Acquire) {
                return;
            }
            let Ok((conn, _)) = conn else {
                // Out of descriptors, say: a moment for some to close rather
                // than a loop that spins.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            number += 1;
            {
                let mut reading = lock(&reading);
                if reading.len() >= READ_AT_ONCE
                    && let Some((_, oldest)) = reading.pop_front()
                {
                    // Its read ends at once, and its thread with it.
                    let _ = oldest.shutdown(std::net::Shutdown::Both);
                }
                let Ok(handle) = conn.try_clone() else {
                    continue;
                };
                reading.push_back((number, handle));
            }
            let (tx, being_read, state, taken) = (
                tx.clone(),
                Arc::clone(&reading),
                Arc::clone(&state),
                Arc::clone(&taken),
            );
            let read = number;
            let spawned = std::thread::Builder::new().spawn(move || {
                let head_read = || lock(&being_read).retain(|(n, _)| *n != read);
                if let Some(target) = answer_redirect(&conn, &state, &taken, head_read) {
                    let _ = tx.try_send(target);
                }
            });
            // No thread (the connection dropped with it): not read.
            if spawned.is_err() {
                lock(&reading).retain(|(n, _)| *n != number);
            }
        }
    });
    let accepting =
        accepting.map_err(|e| format!("could not start a thread to wait for the browser: {e}"))?;
    match rx.recv_timeout(WAIT_FOR_BROWSER) {
        Ok(target) => {
            lock(&ANSWERING).push((port, stop, accepting));
            Ok(format!("http://127.0.0.1:{port}{target}"))
        }
        Err(_) => {
            stop_accepting(port, &stop, accepting);
            Err("no browser came back within 5 minutes".into())
        }
    }
}

/// Reads the head of the request on `conn` (for [`HEAD_DEADLINE`] at
/// most), calls `head_read`, and answers it; its target when it is the
/// redirect carrying `state`, the first such (`taken` set by it). The
/// same redirect again (a reload) is told it was received already.
fn answer_redirect(
    conn: &std::net::TcpStream,
    state: &str,
    taken: &AtomicBool,
    head_read: impl FnOnce(),
) -> Option<String> {
    let until = std::time::Instant::now() + HEAD_DEADLINE;
    let mut head = BufReader::new(ReadUntil { conn, until }).take(8 * 1024);
    let mut line = String::new();
    let _ = head.read_line(&mut line);
    // The rest of the head too: closing with bytes unread would reset the
    // connection before the browser reads the answer.
    let mut field = String::new();
    while head.read_line(&mut field).is_ok_and(|n| n > 0) && !field.trim().is_empty() {
        field.clear();
    }
    head_read();
    let target = line.split(' ').nth(1).unwrap_or("").to_owned();
    let callback = target.split('?').next() == Some("/callback");
    let states = query_values(&target, "state");
    let with_state = callback && !state.is_empty() && states == [state];
    let ours = with_state && !taken.swap(true, Ordering::AcqRel);
    let (status, text) = match (callback, ours, with_state) {
        (true, true, _) => (
            "200 OK",
            "mcp-stdio: authorization received; you can close this window.",
        ),
        (true, false, true) => (
            "200 OK",
            "mcp-stdio: this authorization was received already; you can close this window.",
        ),
        (true, false, false) => (
            "400 Bad Request",
            "mcp-stdio: this is not the redirect of the authorization under way (its state is wrong or missing): ignored.",
        ),
        (false, ..) => ("404 Not Found", "not here"),
    };
    let _ = write!(
        &*conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    ours.then_some(target)
}

/// A connection read until a deadline for all its reads together: each
/// read waits for what is left of it, and none starts past it.
struct ReadUntil<'a> {
    conn: &'a std::net::TcpStream,
    until: std::time::Instant,
}

impl Read for ReadUntil<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self
            .until
            .saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.conn.set_read_timeout(Some(left))?;
        (&mut &*self.conn).read(buf)
    }
}

/// The first value of the query parameter `name` in `url` (a URL or a
/// request target), percent-decoded.
fn query_value(url: &str, name: &str) -> Option<String> {
    query_values(url, name).into_iter().next()
}

/// Every value of the query parameter `name` in `url`, percent-decoded
/// (`+` a space, as a form's).
fn query_values(url: &str, name: &str) -> Vec<String> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    let query = query.split('#').next().unwrap_or(query);
    query
        .split('&')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key) == name).then(|| percent_decode(value))
        })
        .collect()
}

/// `text` percent-decoded, `+` read as a space; a bad escape is kept as
/// it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
        match (escaped, bytes[i]) {
            (Some(byte), _) => {
                out.push(byte);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, byte) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests;
