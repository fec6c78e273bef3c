//! The checker's HTTP link: one POST per message with the headers the
//! transport asks for, its response read as JSON or as an SSE stream; and
//! `exchange`, one request whose status and headers a check reads.
//!
//! HTTP/1.1 of its own, over a `TcpStream`, `http://` only: the requests
//! are plain and few, and the crate's own HTTP code belongs to the server.
//! What the server sends is bounded: a head line and a chunk size at
//! 64 KiB, an event's line at 4 MiB, a JSON body at 16 MiB, 256
//! messages and 64 MiB read ahead (`driver::Budget`).
//!
//! The files, by job: this one writes a request and reads a response's
//! head (and `exchange`, `connect`); `body.rs` reads a response's body
//! through its framing (length, chunked, to the close) and `post.rs` is
//! the session's link (each message a POST, what comes back to the
//! session as lines).

mod body;
mod post;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use serde_json::Value;

use super::driver::{Budget, Incoming, READ_AHEAD_LINES, Session, StderrLog, Transcript};
use super::short;

/// An `http://` URL.
#[derive(Debug, Clone)]
pub struct Url {
    host: String,
    port: u16,
    pub path: String,
}

impl Url {
    /// Parses `url`; an error names it as `url_for_people` shows it.
    pub fn parse(url: &str) -> Result<Url, String> {
        let shown = crate::url_for_people::url_for_people(url);
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{shown}: only http:// URLs can be checked (no TLS here)"))?;
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => (
                h.to_owned(),
                p.parse()
                    .map_err(|_| format!("{shown}: the port is not a number"))?,
            ),
            _ => (authority.to_owned(), 80),
        };
        Ok(Url {
            host,
            port,
            path: path.to_owned(),
        })
    }

    /// The path for the transcript, without the query (which may hold a
    /// secret: `url_for_people`).
    pub fn shown_path(&self) -> String {
        crate::url_for_people::url_for_people(&self.path)
    }

    fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// A response's head and what its body carried.
#[derive(Debug, Default)]
pub struct Exchange {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Each JSON-RPC message of the body (JSON: the body; SSE: each
    /// event's data).
    pub messages: Vec<Value>,
    /// The body as text, when it was not SSE.
    pub body: String,
    /// A response (the body, or an event's data) that is JSON the
    /// checker cannot read whole (`Msg::Unreadable`, read for its id and
    /// kind as the session reads it): the reader's reason. It is not
    /// among `messages`.
    pub unreadable: Option<String>,
    /// Why the response (the first, readable or not) is not one
    /// well-formed response, when it is not: as the session judges an
    /// answer (`driver::malformed`).
    pub malformed: Option<String>,
}

/// The reader's reason when `text` is a response the checker cannot read
/// whole (`Msg::unreadable_response`).
fn unreadable_response(text: &str) -> Option<String> {
    let why = serde_json::from_str::<Value>(text).err()?.to_string();
    let msg = super::driver::Msg::Unreadable(text.to_owned(), why.clone());
    msg.unreadable_response().map(|_| why)
}

impl Exchange {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first response among the messages.
    pub fn reply(&self) -> Option<&Value> {
        self.messages
            .iter()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
    }

    pub fn content_type(&self) -> String {
        self.header("content-type")
            .unwrap_or("")
            .to_ascii_lowercase()
    }
}

/// The headers a message takes: `MCP-Protocol-Version`, `Mcp-Method` and
/// `Mcp-Name` for a modern one (from its body: the tool's or prompt's
/// name, the resource's URI, and the Tasks extension's "the client
/// **MUST** set the `Mcp-Name` header to the value of `params.taskId`"),
/// the session's for a legacy one.
pub(super) fn message_headers(
    message: Option<&Value>,
    legacy: &LegacyState,
) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    let Some(message) = message else {
        return headers;
    };
    let version = message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    match version {
        Some(version) => {
            headers.push(("MCP-Protocol-Version".into(), version.to_owned()));
            if let Some(method) = message.get("method").and_then(Value::as_str) {
                headers.push(("Mcp-Method".into(), method.to_owned()));
                let name = match method {
                    "tools/call" | "prompts/get" => message.pointer("/params/name"),
                    "resources/read" => message.pointer("/params/uri"),
                    "tasks/get" | "tasks/update" | "tasks/cancel" => {
                        message.pointer("/params/taskId")
                    }
                    _ => None,
                };
                if let Some(name) = name {
                    let text = match name {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    headers.push(("Mcp-Name".into(), header_value(&text)));
                }
            }
        }
        None => {
            if let Some(version) = &legacy.version {
                headers.push(("MCP-Protocol-Version".into(), version.clone()));
            }
            if let Some(id) = &legacy.session {
                headers.push(("Mcp-Session-Id".into(), id.clone()));
            }
        }
    }
    headers
}

/// A header value as the spec encodes it: plain visible ASCII as it is,
/// anything else in the Base64 sentinel `=?base64?...?=`.
fn header_value(text: &str) -> String {
    let plain = !text.is_empty()
        && text.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && !text.starts_with("=?base64?");
    if plain {
        text.to_owned()
    } else {
        format!("=?base64?{}?=", base64(text.as_bytes()))
    }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A response's status, headers, and the reader left at its body.
type Head = (u16, Vec<(String, String)>, BufReader<Timed>);

/// A connection whose reads end at a deadline, whatever the server
/// dribbles: each read waits at most what is left of it (none once it
/// has passed). `None`: no deadline (an SSE stream read on a thread of
/// its own, ended with its session).
pub struct Timed {
    stream: TcpStream,
    deadline: Option<Instant>,
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the response took longer than the wait",
                ));
            }
            self.stream.set_read_timeout(Some(left))?;
        }
        self.stream.read(buf)
    }
}

/// A connection to `url`'s host within `wait`.
fn connect_within(url: &Url, wait: Duration) -> Result<TcpStream, String> {
    let authority = url.authority();
    let addrs = authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?;
    let mut last = format!("cannot resolve {authority}: no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, wait) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("cannot connect to {authority}: {e}"),
        }
    }
    Err(last)
}

/// Writes one POST (or other method) and reads the response head; the
/// reader is left at the body. The connection, the write and every read
/// of the response (head and body) end within `wait` of the start.
fn open(
    url: &Url,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
    wait: Duration,
) -> Result<Head, String> {
    let deadline = Instant::now() + wait;
    let mut stream = connect_within(url, wait)?;
    let _ = stream.set_write_timeout(Some(wait));
    let _ = stream.set_nodelay(true);
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        url.path,
        url.authority()
    );
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("content-type") && method == "POST" {
        head.push_str("Content-Type: application/json\r\n");
    }
    if !has("accept") {
        head.push_str("Accept: application/json, text/event-stream\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| format!("cannot send to {}: {e}", url.authority()))?;
    let mut reader = BufReader::new(Timed {
        stream,
        deadline: Some(deadline),
    });
    let mut status_line = String::new();
    (&mut reader)
        .take(64 * 1024)
        .read_line(&mut status_line)
        .map_err(|e| format!("no response from {}: {e}", url.authority()))?;
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {:?}", short(&status_line, 80)))?;
    let mut response_headers = Vec::new();
    loop {
        let mut line = String::new();
        (&mut reader)
            .take(64 * 1024)
            .read_line(&mut line)
            .map_err(|e| format!("reading the response head: {e}"))?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((n, v)) = line.split_once(':') {
            response_headers.push((n.trim().to_owned(), v.trim().to_owned()));
        }
        if response_headers.len() > 200 {
            return Err("more than 200 response headers".into());
        }
    }
    Ok((status, response_headers, reader))
}

/// A response body, its framing undone.
struct Body {
    reader: BufReader<Timed>,
    framing: Framing,
}

enum Framing {
    Chunked { left: usize, done: bool },
    Length(usize),
    Close,
}

/// The most bytes of one SSE event's data, and of all the events one
/// `exchange` keeps: a JSON body's limit.
const MAX_EVENT: usize = 16 << 20;

/// Reads SSE events from `body`, calling `each` with every event's data
/// until it returns false or the stream ends.
/// An event's data past `MAX_EVENT` bytes ends the stream: what was kept
/// of it is its last event, cut (`each`'s second argument: the checker's
/// limit, as a stdio line's `MAX_LINE`, not the server's fault).
fn sse(body: Body, mut each: impl FnMut(String, bool) -> bool) {
    let mut lines = BufReader::new(body);
    let mut data: Vec<String> = Vec::new();
    let mut size = 0;
    let mut line = String::new();
    loop {
        line.clear();
        // A line longer than a message may be is cut (and its event
        // then is not JSON): a stream without newlines costs this much.
        match (&mut lines).take(4 << 20).read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = line.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if !data.is_empty() && !each(data.join("\n"), false) {
                return;
            }
            data.clear();
            size = 0;
        } else if let Some(value) = text.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            size += value.len() + 1;
            if size > MAX_EVENT {
                // An event that never ends (no blank line) or larger
                // than a message may be: cut, and the stream let go.
                let mut cut = data.join("\n");
                cut.truncate(cut.floor_char_boundary(MAX_EVENT));
                each(cut, true);
                return;
            }
            data.push(value.to_owned());
        }
    }
}

/// One exchange, read to its end or to the first response in an SSE
/// stream, within `wait`.
pub fn exchange(
    url: &Url,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
    wait: Duration,
) -> Result<Exchange, String> {
    let (status, headers, reader) = open(url, method, headers, body, wait)?;
    let mut ex = Exchange {
        status,
        headers,
        ..Exchange::default()
    };
    let body = Body::new(status, &ex.headers, reader);
    if ex.content_type().starts_with("text/event-stream") {
        let mut kept = 0;
        sse(body, |data, _| {
            kept += data.len();
            if ex.unreadable.is_none()
                && let Some(why) = unreadable_response(&data)
            {
                // An answer all the same: the stream's end.
                ex.unreadable = Some(why);
                ex.malformed = super::driver::malformed(&data);
                return false;
            }
            let parsed = serde_json::from_str::<Value>(&data);
            let done = (parsed.as_ref())
                .is_ok_and(|v| v.get("result").is_some() || v.get("error").is_some());
            if done {
                ex.malformed = super::driver::malformed(&data);
            }
            let value = parsed.unwrap_or(Value::String(data));
            ex.messages.push(value);
            // A stream that never answers stops being read at 10,000
            // events, or as much data as a JSON body.
            !done && ex.messages.len() < 10_000 && kept < MAX_EVENT
        });
    } else {
        let mut text = Vec::new();
        let _ = body.take(16 << 20).read_to_end(&mut text);
        ex.body = String::from_utf8_lossy(&text).into_owned();
        ex.malformed = super::driver::malformed(ex.body.trim());
        if let Ok(value) = serde_json::from_slice::<Value>(&text) {
            ex.messages.push(value);
        } else if std::str::from_utf8(&text).is_ok() {
            // JSON text MUST be UTF-8: a body that is not stays no answer.
            ex.unreadable = unreadable_response(ex.body.trim());
        }
    }
    Ok(ex)
}

/// A legacy session's id and version, learnt from `initialize`.
#[derive(Debug, Default, Clone)]
pub(super) struct LegacyState {
    session: Option<String>,
    version: Option<String>,
}

/// The HTTP link: each message a POST; what comes back goes to the
/// session's channel as lines.
struct HttpLink {
    url: Url,
    headers: Vec<(String, String)>,
    legacy: Arc<Mutex<LegacyState>>,
    tx: Sender<Incoming>,
    /// The bytes read ahead of the session, as the stdio reader's.
    budget: Arc<Budget>,
    transcript: Transcript,
    /// The open SSE streams, shut down with the link.
    streams: Arc<Mutex<Vec<TcpStream>>>,
    closed: bool,
    /// How long one POST may take, connection to the end of a JSON body
    /// or an SSE stream's head (`--wait`).
    wait: Duration,
}

/// Opens a session with an HTTP server.
pub fn connect(
    url: &str,
    headers: &[(String, String)],
    transcript: &Transcript,
    wait: Duration,
) -> Result<Session, String> {
    let parsed = Url::parse(url)?;
    // Reachable at all: a connection, before anything is sent.
    connect_within(&parsed, wait)?;
    // Bounded, as the stdio reader's: a stream that floods waits.
    let (tx, incoming) = crossbeam_channel::bounded(READ_AHEAD_LINES);
    let budget = Budget::new();
    transcript.note(&format!(
        "checking {}",
        crate::url_for_people::url_for_people(url)
    ));
    let link = HttpLink {
        url: parsed,
        headers: headers.to_vec(),
        legacy: Arc::default(),
        tx,
        budget: Arc::clone(&budget),
        transcript: transcript.clone(),
        streams: Arc::default(),
        closed: false,
        wait,
    };
    Ok(Session::new(
        Box::new(link),
        incoming,
        budget,
        transcript,
        Arc::new(Mutex::new(StderrLog::default())),
    ))
}

#[cfg(test)]
mod tests;
