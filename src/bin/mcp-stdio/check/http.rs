//! Streamable HTTP's own checks: the Origin header, a notification's 202,
//! the response's media type, the statuses of an unknown method, an
//! unsupported version and a malformed request, header mismatches, and a
//! legacy session's ids. Each sends one request through
//! `http_link::exchange` and reads its status.

use serde_json::{Value, json};

use super::driver::{Era, MALFORMED, MODERN};
use super::http_link::{Exchange, LegacyState, Url, exchange, message_headers};
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
        title: "a legacy session ended with DELETE: a request with its id then gets 404 (when the server gives ids and ends sessions on DELETE)",
        run: legacy_unknown_session,
    },
];

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
        .note(&format!("POST {} ({})", url.shown_path(), shown.join(", ")));
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

/// A failure when the response is malformed (a member twice, both
/// `result` and `error`, a `result` or `error` not an object), judged as
/// the session judges an answer (`driver::malformed`).
fn well_formed(ex: &Exchange) -> Result<(), Verdict> {
    match &ex.malformed {
        Some(why) if ex.body.is_empty() => Err(Verdict::Fail(format!(
            "HTTP {}: {MALFORMED} ({why})",
            ex.status
        ))),
        Some(why) => Err(Verdict::Fail(format!(
            "HTTP {}: {MALFORMED} ({why}): {}",
            ex.status,
            short(&ex.body, 120)
        ))),
        None => Ok(()),
    }
}

/// A modern server over HTTP, or a skip.
fn modern(ctx: &Ctx) -> Result<(Url, Vec<(String, String)>), Verdict> {
    let target = url(ctx)?;
    ctx.facts.need_modern_primary()?;
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
    if let Err(v) = well_formed(&ex) {
        return v;
    }
    if ex.status == status
        && ex.reply().is_none()
        && let Some(why) = &ex.unreadable
    {
        return Verdict::Skip(format!(
            "HTTP {status}, and a response the checker cannot read ({}): {}",
            super::driver::unreadable_why(why),
            short(&ex.body, 120)
        ));
    }
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
    if let Err(v) = well_formed(&ex) {
        return v;
    }
    let version = ex
        .reply()
        .and_then(|r| r.pointer("/result/protocolVersion"))
        .and_then(Value::as_str)
        .unwrap_or(super::driver::LEGACY)
        .to_owned();
    let session = ex.header("mcp-session-id").unwrap_or_default().to_owned();
    let headers = vec![
        ("MCP-Protocol-Version".into(), version),
        ("Mcp-Session-Id".into(), session),
    ];
    // The sentence is about a session the server ended (an id it never
    // gave is another matter, which 2025-11-25 leaves open): the session
    // is ended with DELETE, which "The server MAY respond to ... with
    // HTTP 405 Method Not Allowed".
    let mut all = headers.clone();
    all.extend(user.iter().cloned());
    ctx.transcript.note(&format!("DELETE {}", url.shown_path()));
    let deleted = match exchange(&url, "DELETE", &all, b"", ctx.wait) {
        Ok(ex) => ex.status,
        Err(e) => return Verdict::Fail(format!("DELETE: {e}")),
    };
    ctx.transcript.note(&format!("HTTP {deleted}"));
    if !matches!(deleted, 200 | 204) {
        return Verdict::Skip(format!(
            "DELETE answered HTTP {deleted}, not 200 or 204: the session was not said to be ended"
        ));
    }
    let ping = json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" });
    match send(ctx, &url, &user, headers, ping.to_string().as_bytes()) {
        Ok(ex) if ex.status == 404 => Verdict::Pass("404 after the session was ended".into()),
        Ok(ex) => Verdict::Fail(format!(
            "HTTP {} for the id of a session ended with DELETE (HTTP {deleted})",
            ex.status
        )),
        Err(v) => v,
    }
}
