//! Streamable HTTP: the driver's HTTP link (one POST per message, its
//! response read as JSON or as an SSE stream), and the transport's own
//! checks: the Origin header, a notification's 202, the response's media
//! type, the statuses of an unknown method, an unsupported version and a
//! malformed request, header mismatches, and a legacy session's ids.
//!
//! HTTP/1.1 of its own, over a `TcpStream`, `http://` only: the requests
//! are plain and few, and the crate's own HTTP code belongs to the server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::Sender;
use serde_json::{Value, json};

use super::driver::{Era, Incoming, Link, MODERN, Session, StderrLog, Transcript};
use super::{Check, Ctx, Level, Verdict, error_code, said, short};

const PAGE: &str = "2026-07-28/basic/transports/streamable-http.md";

pub const CHECKS: &[Check] = &[
    Check {
        id: "http.origin",
        level: Level::Must,
        page: PAGE,
        quote: "If the `Origin` header is present and invalid, servers **MUST** respond with HTTP 403 Forbidden.",
        title: "a POST from Origin http://evil.example gets 403",
        run: origin,
    },
    Check {
        id: "http.notification-202",
        level: Level::Must,
        page: PAGE,
        quote: "If the server accepts it, the server **MUST** return HTTP status code `202 Accepted` with no body.",
        title: "a notification POSTed gets 202 and no body (or an error status)",
        run: notification_202,
    },
    Check {
        id: "http.response-type",
        level: Level::Must,
        page: PAGE,
        quote: "If the body is a JSON-RPC _request_, the server **MUST** return either `Content-Type: application/json` (a single JSON object) or `Content-Type: text/event-stream` (an SSE response stream).",
        title: "a request's response is application/json or text/event-stream",
        run: response_type,
    },
    Check {
        id: "http.unknown-method-404",
        level: Level::Must,
        page: PAGE,
        quote: "If the server does not implement the requested RPC method, it **MUST** respond with `404 Not Found` and a JSON-RPC error with code `-32601` (`Method not found`).",
        title: "an unknown method gets 404 and -32601 (modern)",
        run: unknown_method_404,
    },
    Check {
        id: "http.unsupported-version-400",
        level: Level::Must,
        page: PAGE,
        quote: "If the server does not implement the requested protocol version (whether the version is unknown to the server, or is a known version the server has chosen not to support), it **MUST** respond with `400 Bad Request` and an `UnsupportedProtocolVersionError` listing its supported versions.",
        title: "version 1900-01-01 (header and body) gets 400 and -32022 (modern)",
        run: unsupported_version_400,
    },
    Check {
        id: "http.missing-meta-400",
        level: Level::Must,
        page: "2026-07-28/basic/index.md",
        quote: "On HTTP, the response status **MUST** be `400 Bad Request`.",
        title: "a request whose _meta lacks clientCapabilities gets 400 and -32602 (modern)",
        run: missing_meta_400,
    },
    Check {
        id: "http.header-mismatch",
        level: Level::Must,
        page: PAGE,
        quote: "When rejecting a request due to header validation failure, servers **MUST** return HTTP status `400 Bad Request` and **MUST** include a JSON-RPC error response using the following error code:",
        title: "Mcp-Method tools/list on a server/discover body gets 400 and -32020 (modern)",
        run: header_mismatch,
    },
    Check {
        id: "http.legacy-unknown-session",
        level: Level::Must,
        page: "2025-11-25/basic/transports.md",
        quote: "The server **MAY** terminate the session at any time, after which it **MUST** respond to requests containing that session ID with HTTP 404 Not Found.",
        title: "a legacy request with a session id the server never gave gets 404 (when it gives ids)",
        run: legacy_unknown_session,
    },
];

// ---------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------

/// An `http://` URL.
#[derive(Debug, Clone)]
pub struct Url {
    host: String,
    port: u16,
    path: String,
}

impl Url {
    pub fn parse(url: &str) -> Result<Url, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// URLs can be checked (no TLS here)"))?;
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => (
                h.to_owned(),
                p.parse()
                    .map_err(|_| format!("{url}: the port is not a number"))?,
            ),
            _ => (authority.to_owned(), 80),
        };
        Ok(Url {
            host,
            port,
            path: path.to_owned(),
        })
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

    fn content_type(&self) -> String {
        self.header("content-type")
            .unwrap_or("")
            .to_ascii_lowercase()
    }
}

/// The headers a message takes: `MCP-Protocol-Version`, `Mcp-Method` and
/// `Mcp-Name` for a modern one (from its body), the session's for a legacy
/// one.
fn message_headers(message: Option<&Value>, legacy: &LegacyState) -> Vec<(String, String)> {
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

/// Writes one POST (or other method) and reads the response head; the
/// reader is left at the body.
/// A response's status, headers, and the reader left at its body.
type Head = (u16, Vec<(String, String)>, BufReader<TcpStream>);

fn open(
    url: &Url,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
    wait: Duration,
) -> Result<Head, String> {
    let mut stream = TcpStream::connect(url.authority())
        .map_err(|e| format!("cannot connect to {}: {e}", url.authority()))?;
    let _ = stream.set_read_timeout(Some(wait));
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
    let mut reader = BufReader::new(stream);
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
    reader: BufReader<TcpStream>,
    framing: Framing,
}

enum Framing {
    Chunked { left: usize, done: bool },
    Length(usize),
    Close,
}

impl Body {
    fn new(status: u16, headers: &[(String, String)], reader: BufReader<TcpStream>) -> Body {
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
            Framing::Length(0)
        } else if get("transfer-encoding")
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
        {
            Framing::Chunked {
                left: 0,
                done: false,
            }
        } else if let Some(n) = get("content-length").and_then(|n| n.parse().ok()) {
            Framing::Length(n)
        } else {
            Framing::Close
        };
        Body { reader, framing }
    }
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.framing {
            Framing::Length(0) => Ok(0),
            Framing::Length(left) => {
                let n = buf.len().min(*left);
                let n = self.reader.read(&mut buf[..n])?;
                *left = if n == 0 { 0 } else { *left - n };
                Ok(n)
            }
            Framing::Close => self.reader.read(buf),
            Framing::Chunked { left, done } => {
                if *done {
                    return Ok(0);
                }
                if *left == 0 {
                    let mut size = String::new();
                    (&mut self.reader).take(1024).read_line(&mut size)?;
                    if size.trim().is_empty() {
                        // The CRLF after a chunk's data.
                        size.clear();
                        (&mut self.reader).take(1024).read_line(&mut size)?;
                    }
                    let hex = size.trim().split(';').next().unwrap_or("");
                    let n = usize::from_str_radix(hex, 16).map_err(|_| {
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("bad chunk size {hex:?}"),
                        )
                    })?;
                    if n == 0 {
                        *done = true;
                        return Ok(0);
                    }
                    *left = n;
                }
                let n = buf.len().min(*left);
                let n = self.reader.read(&mut buf[..n])?;
                if n == 0 {
                    *done = true;
                }
                *left -= n;
                Ok(n)
            }
        }
    }
}

/// Reads SSE events from `body`, calling `each` with every event's data
/// until it returns false or the stream ends.
fn sse(body: Body, mut each: impl FnMut(String) -> bool) {
    let mut lines = BufReader::new(body);
    let mut data: Vec<String> = Vec::new();
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
            if !data.is_empty() && !each(data.join("\n")) {
                return;
            }
            data.clear();
        } else if let Some(value) = text.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
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
        sse(body, |data| {
            let value: Value = serde_json::from_str(&data).unwrap_or(Value::String(data));
            let done = value.get("result").is_some() || value.get("error").is_some();
            ex.messages.push(value);
            // A stream that never answers stops being read at 10,000 events.
            !done && ex.messages.len() < 10_000
        });
    } else {
        let mut text = Vec::new();
        let _ = body.take(16 << 20).read_to_end(&mut text);
        ex.body = String::from_utf8_lossy(&text).into_owned();
        if let Ok(value) = serde_json::from_slice::<Value>(&text) {
            ex.messages.push(value);
        }
    }
    Ok(ex)
}

/// A legacy session's id and version, learnt from `initialize`.
#[derive(Debug, Default, Clone)]
struct LegacyState {
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
    transcript: Transcript,
    /// The open SSE streams, shut down with the link.
    streams: Arc<Mutex<Vec<TcpStream>>>,
    closed: bool,
}

impl HttpLink {
    fn post(&mut self, line: &[u8]) -> std::io::Result<()> {
        let message: Option<Value> = serde_json::from_slice(line).ok();
        let legacy = self
            .legacy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut headers = message_headers(message.as_ref(), &legacy);
        headers.extend(self.headers.iter().cloned());
        let shown: Vec<String> = headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        self.transcript
            .note(&format!("POST {} ({})", self.url.path, shown.join(", ")));
        let (status, response_headers, reader) =
            open(&self.url, "POST", &headers, line, Duration::from_secs(60))
                .map_err(std::io::Error::other)?;
        let content_type = response_headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map_or(String::new(), |(_, v)| v.to_ascii_lowercase());
        self.transcript
            .note(&format!("HTTP {status} {content_type}"));
        let initialize =
            message.as_ref().and_then(|m| m.get("method")) == Some(&json!("initialize"));
        if initialize
            && let Some((_, id)) = response_headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("mcp-session-id"))
        {
            self.legacy
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .session = Some(id.clone());
        }
        let body = Body::new(status, &response_headers, reader);
        if content_type.starts_with("text/event-stream") {
            if let Ok(stream) = body.reader.get_ref().try_clone() {
                let _ = stream.set_read_timeout(None);
                self.streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(stream);
            }
            let tx = self.tx.clone();
            let legacy = Arc::clone(&self.legacy);
            std::thread::Builder::new()
                .name("check-sse".into())
                .spawn(move || {
                    sse(body, |data| {
                        if initialize {
                            learn_version(&legacy, data.as_bytes());
                        }
                        tx.send(Incoming::Line(data.into_bytes())).is_ok()
                    })
                })
                .map_err(std::io::Error::other)?;
        } else {
            let mut text = Vec::new();
            let _ = body.take(16 << 20).read_to_end(&mut text);
            let text = text.trim_ascii().to_vec();
            if initialize {
                learn_version(&self.legacy, &text);
            }
            if !text.is_empty() {
                let _ = self.tx.send(Incoming::Line(text));
            }
        }
        Ok(())
    }
}

/// The version an `initialize` result agreed, for the legacy requests'
/// header.
fn learn_version(legacy: &Mutex<LegacyState>, reply: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<Value>(reply)
        && let Some(version) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
    {
        legacy.lock().unwrap_or_else(|e| e.into_inner()).version = Some(version.to_owned());
    }
}

impl Link for HttpLink {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.closed {
            return Err(std::io::Error::other("the session is closed"));
        }
        for line in bytes.split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.post(line)?;
        }
        Ok(())
    }

    fn close_input(&mut self) {
        self.closed = true;
        self.shut_streams();
        let _ = self.tx.send(Incoming::Eof);
    }
}

impl HttpLink {
    fn shut_streams(&self) {
        for stream in self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for HttpLink {
    /// Every SSE stream it opened is closed (its reader thread ends).
    fn drop(&mut self) {
        self.shut_streams();
    }
}

/// Opens a session with an HTTP server.
pub fn connect(
    url: &str,
    headers: &[(String, String)],
    transcript: &Transcript,
) -> Result<Session, String> {
    let parsed = Url::parse(url)?;
    // Reachable at all: a connection, before anything is sent.
    TcpStream::connect(parsed.authority()).map_err(|e| format!("cannot connect to {url}: {e}"))?;
    // Bounded, as the stdio reader's: a stream that floods waits.
    let (tx, incoming) = crossbeam_channel::bounded(256);
    transcript.note(&format!("checking {url}"));
    let link = HttpLink {
        url: parsed,
        headers: headers.to_vec(),
        legacy: Arc::default(),
        tx,
        transcript: transcript.clone(),
        streams: Arc::default(),
        closed: false,
    };
    Ok(Session::new(
        Box::new(link),
        incoming,
        transcript,
        Arc::new(Mutex::new(StderrLog::default())),
    ))
}

// ---------------------------------------------------------------------------
// The checks
// ---------------------------------------------------------------------------

/// The URL and headers, or a skip for a stdio server.
fn url(ctx: &Ctx) -> Result<(Url, Vec<(String, String)>), Verdict> {
    match &*ctx.target {
        super::driver::Target::Url(url, headers) => {
            Ok((Url::parse(url).map_err(Verdict::Fail)?, headers.clone()))
        }
        super::driver::Target::Command(_) => Err(Verdict::Skip("HTTP only".into())),
    }
}

/// A modern request line and its headers.
fn modern_request(method: &str, params: Value, meta: Value) -> (Vec<u8>, Vec<(String, String)>) {
    let mut params = params;
    params["_meta"] = meta;
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let headers = message_headers(Some(&message), &LegacyState::default());
    (message.to_string().into_bytes(), headers)
}

fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "mcp-stdio-check", "version": env!("CARGO_PKG_VERSION") }
    })
}

/// Sends one request with `headers` (the user's after them) and records
/// it as evidence.
fn send(
    ctx: &Ctx,
    url: &Url,
    user: &[(String, String)],
    headers: Vec<(String, String)>,
    body: &[u8],
) -> Result<Exchange, Verdict> {
    let mut all = headers;
    all.extend(user.iter().cloned());
    let shown: Vec<String> = all.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    ctx.transcript
        .note(&format!("POST {} ({})", url.path, shown.join(", ")));
    ctx.transcript.push("sent", &String::from_utf8_lossy(body));
    let ex = exchange(url, "POST", &all, body, ctx.wait).map_err(Verdict::Fail)?;
    ctx.transcript.note(&format!(
        "HTTP {} {}",
        ex.status,
        ex.header("content-type").unwrap_or("")
    ));
    for m in &ex.messages {
        ctx.transcript.push("received", &m.to_string());
    }
    if ex.messages.is_empty() && !ex.body.is_empty() {
        ctx.transcript.push("received", &ex.body);
    }
    Ok(ex)
}

/// A modern server over HTTP, or a skip.
fn modern(ctx: &Ctx) -> Result<(Url, Vec<(String, String)>), Verdict> {
    let target = url(ctx)?;
    ctx.facts.need_modern()?;
    if ctx.facts.primary != Some(Era::Modern) {
        return Err(Verdict::Skip("the server is not modern".into()));
    }
    Ok(target)
}

/// A request line in the primary era with its headers.
fn plain_request(ctx: &Ctx) -> (Vec<u8>, Vec<(String, String)>) {
    match ctx.facts.primary {
        Some(Era::Modern) => modern_request("server/discover", json!({}), meta(MODERN)),
        _ => {
            let line = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": super::driver::LEGACY, "capabilities": {},
                "clientInfo": { "name": "mcp-stdio-check", "version": env!("CARGO_PKG_VERSION") } } });
            (line.to_string().into_bytes(), Vec::new())
        }
    }
}

fn origin(ctx: &mut Ctx) -> Verdict {
    let (url, user) = match url(ctx) {
        Ok(u) => u,
        Err(v) => return v,
    };
    let (body, mut headers) = plain_request(ctx);
    headers.push(("Origin".into(), "http://evil.example".into()));
    match send(ctx, &url, &user, headers, &body) {
        Ok(ex) if ex.status == 403 => Verdict::Pass("403".into()),
        Ok(ex) => Verdict::Fail(format!("HTTP {} for Origin http://evil.example", ex.status)),
        Err(v) => v,
    }
}

fn notification_202(ctx: &mut Ctx) -> Verdict {
    let (url, user) = match url(ctx) {
        Ok(u) => u,
        Err(v) => return v,
    };
    let mut message = json!({ "jsonrpc": "2.0", "method": "notifications/mcp-stdio-check/unknown", "params": {} });
    let headers = if ctx.facts.primary == Some(Era::Modern) {
        message["params"]["_meta"] = meta(MODERN);
        message_headers(Some(&message), &LegacyState::default())
    } else {
        Vec::new()
    };
    match send(ctx, &url, &user, headers, message.to_string().as_bytes()) {
        Ok(ex) if ex.status == 202 && ex.body.trim().is_empty() && ex.messages.is_empty() => {
            Verdict::Pass("202, no body".into())
        }
        Ok(ex) if ex.status == 202 => {
            Verdict::Fail(format!("202 with a body: {}", short(&ex.body, 120)))
        }
        Ok(ex) if (400..600).contains(&ex.status) => {
            Verdict::Pass(format!("{} (not accepted)", ex.status))
        }
        Ok(ex) => Verdict::Fail(format!("HTTP {} for a notification", ex.status)),
        Err(v) => v,
    }
}

fn response_type(ctx: &mut Ctx) -> Verdict {
    let (url, user) = match url(ctx) {
        Ok(u) => u,
        Err(v) => return v,
    };
    let (body, headers) = plain_request(ctx);
    match send(ctx, &url, &user, headers, &body) {
        Ok(ex) => {
            let ct = ex.content_type();
            if ct.starts_with("application/json") || ct.starts_with("text/event-stream") {
                Verdict::Pass(format!("HTTP {} {ct}", ex.status))
            } else {
                Verdict::Fail(format!("HTTP {} with Content-Type {ct:?}", ex.status))
            }
        }
        Err(v) => v,
    }
}

/// Sends a modern request and expects `status` with the JSON-RPC error `code`.
fn expect(
    ctx: &mut Ctx,
    body: Vec<u8>,
    headers: Vec<(String, String)>,
    status: u16,
    code: i64,
) -> Verdict {
    let (url, user) = match modern(ctx) {
        Ok(u) => u,
        Err(v) => return v,
    };
    let ex = match send(ctx, &url, &user, headers, &body) {
        Ok(ex) => ex,
        Err(v) => return v,
    };
    let got = ex.reply().and_then(error_code);
    match (ex.status == status, got == Some(code)) {
        (true, true) => Verdict::Pass(format!("{status} and {code}")),
        _ => Verdict::Fail(format!(
            "HTTP {} and {}, expected {status} and {code}",
            ex.status,
            ex.reply().map_or_else(
                || format!("no JSON-RPC response ({})", short(&ex.body, 80)),
                said
            )
        )),
    }
}

fn unknown_method_404(ctx: &mut Ctx) -> Verdict {
    let (body, headers) = modern_request("mcp-stdio-check/no-such-method", json!({}), meta(MODERN));
    expect(ctx, body, headers, 404, -32601)
}

fn unsupported_version_400(ctx: &mut Ctx) -> Verdict {
    let (body, headers) = modern_request("server/discover", json!({}), meta("1900-01-01"));
    expect(ctx, body, headers, 400, -32022)
}

fn missing_meta_400(ctx: &mut Ctx) -> Verdict {
    let (body, headers) = modern_request(
        "server/discover",
        json!({}),
        json!({ "io.modelcontextprotocol/protocolVersion": MODERN }),
    );
    expect(ctx, body, headers, 400, -32602)
}

fn header_mismatch(ctx: &mut Ctx) -> Verdict {
    let (body, mut headers) = modern_request("server/discover", json!({}), meta(MODERN));
    for (name, value) in &mut headers {
        if name == "Mcp-Method" {
            *value = "tools/list".into();
        }
    }
    expect(ctx, body, headers, 400, -32020)
}

fn legacy_unknown_session(ctx: &mut Ctx) -> Verdict {
    let (url, user) = match url(ctx) {
        Ok(u) => u,
        Err(v) => return v,
    };
    if let Err(v) = ctx.facts.need_legacy() {
        return v;
    }
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": super::driver::LEGACY, "capabilities": {},
        "clientInfo": { "name": "mcp-stdio-check", "version": env!("CARGO_PKG_VERSION") } } });
    let ex = match send(ctx, &url, &user, Vec::new(), init.to_string().as_bytes()) {
        Ok(ex) => ex,
        Err(v) => return v,
    };
    if ex.header("mcp-session-id").is_none() {
        return Verdict::Skip("the server gives no session ids".into());
    }
    let version = ex
        .reply()
        .and_then(|r| r.pointer("/result/protocolVersion"))
        .and_then(Value::as_str)
        .unwrap_or(super::driver::LEGACY)
        .to_owned();
    let headers = vec![
        ("MCP-Protocol-Version".into(), version),
        (
            "Mcp-Session-Id".into(),
            "mcp-stdio-check-never-given".into(),
        ),
    ];
    let ping = json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" });
    match send(ctx, &url, &user, headers, ping.to_string().as_bytes()) {
        Ok(ex) if ex.status == 404 => Verdict::Pass("404".into()),
        Ok(ex) => Verdict::Fail(format!("HTTP {} for a session id it never gave", ex.status)),
        Err(v) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_the_sentinel() {
        assert_eq!(base64(b"Hello"), "SGVsbG8=");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(header_value("echo"), "echo");
        assert_eq!(header_value("é"), "=?base64?w6k=?=");
    }

    #[test]
    fn urls_are_http_only() {
        let url = Url::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            (url.host.as_str(), url.port, url.path.as_str()),
            ("127.0.0.1", 8080, "/mcp")
        );
        assert!(Url::parse("https://example.com/mcp").is_err());
    }
}
