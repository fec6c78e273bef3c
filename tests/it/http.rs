//! Streamable HTTP (feature `http`): every status code and header rule of
//! spec 2026-07-28 basic/transports/streamable-http, with a plain
//! `TcpStream` as the client reading the exact bytes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Error, ErrorObject, HttpOptions, Server, StopHandle, Unauthorized};
use serde_json::{Value, json};

use crate::support::WAIT;

/// A server on a loopback port, stopped when dropped.
pub(crate) struct Http {
    pub addr: SocketAddr,
    stop: StopHandle,
    thread: Option<JoinHandle<Result<(), Error>>>,
}

impl Drop for Http {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(crate) fn start(server: Server, options: HttpOptions) -> Http {
    start_with(server, TcpListener::bind("127.0.0.1:0").unwrap(), options)
}

/// [`start`] on `listener` (bound first when the options name its port).
pub(crate) fn start_with(server: Server, listener: TcpListener, options: HttpOptions) -> Http {
    let addr = listener.local_addr().unwrap();
    let stop = server.stop_handle();
    let thread = std::thread::spawn(move || server.serve_http(listener, options));
    Http {
        addr,
        stop,
        thread: Some(thread),
    }
}

pub(crate) fn everything() -> Http {
    start(crate::everything::build(), HttpOptions::new())
}

fn meta() -> Value {
    crate::support::meta()
}

/// A modern request's body.
pub(crate) fn body(id: i64, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// The headers a conforming client sends with a modern request.
pub(crate) fn mirrored(method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Content-Type".into(), "application/json".into()),
        (
            "Accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("MCP-Protocol-Version".into(), "2026-07-28".into()),
        ("Mcp-Method".into(), method.into()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name".into(), name.into()));
    }
    headers
}

/// A POST with `headers` and `body`, `Connection: close`: the response's
/// exact bytes, to the server's close.
pub(crate) fn post(addr: SocketAddr, headers: &[(String, String)], body: &str) -> String {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    raw(addr, request.as_bytes())
}

/// Sends `bytes` and reads until the server closes.
pub(crate) fn raw(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    socket.write_all(bytes).unwrap();
    let mut out = Vec::new();
    socket.read_to_end(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

pub(crate) fn status(response: &str) -> u16 {
    response[9..12].parse().unwrap()
}

pub(crate) fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next().unwrap();
    head.lines().skip(1).find_map(|line| {
        let (n, v) = line.split_once(": ")?;
        n.eq_ignore_ascii_case(name).then_some(v)
    })
}

/// The JSON body of a whole response.
pub(crate) fn json_body(response: &str) -> Value {
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

/// The `data:` messages of an SSE response.
pub(crate) fn events(response: &str) -> Vec<Value> {
    response
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

pub(crate) fn error_code(response: &str) -> i64 {
    json_body(response)["error"]["code"].as_i64().unwrap()
}

#[test]
fn an_inline_call_is_answered_with_one_json_object() {
    let http = everything();
    let response = post(
        http.addr,
        &mirrored("tools/call", Some("echo")),
        &body(
            1,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
        ),
    );
    assert!(
        response.starts_with("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "),
        "{response}"
    );
    let reply = json_body(&response);
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["content"][0]["text"], "hi");
}

#[test]
fn progress_makes_the_response_an_event_stream_ending_with_the_reply() {
    let http = everything();
    let mut params = json!({ "name": "progress", "arguments": { "steps": 2 } });
    let mut body: Value = serde_json::from_str(&body(2, "tools/call", params.take())).unwrap();
    body["params"]["_meta"]["progressToken"] = json!("p");
    let response = post(
        http.addr,
        &mirrored("tools/call", Some("progress")),
        &body.to_string(),
    );
    assert_eq!(status(&response), 200);
    assert_eq!(header(&response, "content-type"), Some("text/event-stream"));
    assert_eq!(header(&response, "x-accel-buffering"), Some("no"));
    assert_eq!(header(&response, "transfer-encoding"), Some("chunked"));
    let events = events(&response);
    assert_eq!(events.len(), 3, "{response}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], "p");
    assert_eq!(events[1]["params"]["progress"], 2.0);
    assert_eq!(events[2]["id"], 2);
    assert_eq!(events[2]["result"]["content"][0]["text"], "done");
    assert!(response.ends_with("\r\n0\r\n\r\n"), "the stream is ended");
}

#[test]
fn a_notification_is_accepted_with_202_and_no_body() {
    let http = everything();
    let notification = json!({ "jsonrpc": "2.0", "method": "notifications/whatever" });
    let response = post(
        http.addr,
        &mirrored("notifications/whatever", None),
        &notification.to_string(),
    );
    assert_eq!(
        response,
        "HTTP/1.1 202 Accepted\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
}

#[test]
fn get_and_delete_are_405_and_other_paths_404() {
    let http = everything();
    let addr = http.addr;
    for method in ["GET", "DELETE", "PUT"] {
        let response = raw(
            addr,
            format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(status(&response), 405, "{method}: {response}");
        assert!(header(&response, "allow").unwrap().contains("POST"));
    }
    let response = raw(
        addr,
        format!("POST /other HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n").as_bytes(),
    );
    assert_eq!(status(&response), 404);
    assert!(
        json_body(&response)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'/mcp'")
    );
}

#[test]
fn an_unknown_method_is_404_with_method_not_found() {
    let http = everything();
    let response = post(
        http.addr,
        &mirrored("nope/nope", None),
        &body(3, "nope/nope", json!({})),
    );
    assert_eq!(status(&response), 404);
    assert_eq!(error_code(&response), -32601);
    assert_eq!(json_body(&response)["id"], 3);
}

#[test]
fn an_unsupported_version_is_400_with_the_supported_list() {
    let http = everything();
    let mut headers = mirrored("server/discover", None);
    headers[2].1 = "2099-01-01".into();
    let mut request: Value = serde_json::from_str(&body(4, "server/discover", json!({}))).unwrap();
    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let response = post(http.addr, &headers, &request.to_string());
    assert_eq!(status(&response), 400);
    let reply = json_body(&response);
    assert_eq!(reply["error"]["code"], -32022);
    assert!(
        reply["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    // Only the header names it (the body has no modern _meta).
    let plain = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/list" }).to_string();
    let response = post(http.addr, &headers, &plain);
    assert_eq!(status(&response), 400);
    assert_eq!(error_code(&response), -32022);
}

#[test]
fn headers_that_do_not_match_the_body_are_400_header_mismatch() {
    let http = everything();
    let call = body(
        6,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "x" } }),
    );
    let cases: Vec<(&str, Vec<(String, String)>)> = vec![
        ("wrong Mcp-Method", mirrored("tools/list", Some("echo"))),
        ("wrong Mcp-Name", mirrored("tools/call", Some("add"))),
        ("no Mcp-Name", mirrored("tools/call", None)),
        ("no Mcp-Method", {
            let mut h = mirrored("tools/call", Some("echo"));
            h.remove(3);
            h
        }),
        ("no version header", {
            let mut h = mirrored("tools/call", Some("echo"));
            h.remove(2);
            h
        }),
        ("another version", {
            let mut h = mirrored("tools/call", Some("echo"));
            h[2].1 = "2025-11-25".into();
            h
        }),
        (
            "a bad sentinel",
            mirrored("tools/call", Some("=?base64?***?=")),
        ),
    ];
    for (case, headers) in cases {
        let response = post(http.addr, &headers, &call);
        assert_eq!(status(&response), 400, "{case}: {response}");
        let reply = json_body(&response);
        assert_eq!(reply["error"]["code"], -32020, "{case}");
        assert_eq!(reply["id"], 6, "{case}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Header mismatch"),
            "{case}"
        );
    }
    // Names in any case, and a name in the Base64 sentinel, match.
    let mut headers: Vec<(String, String)> = mirrored("tools/call", Some("=?base64?ZWNobw==?="))
        .into_iter()
        .map(|(n, v)| (n.to_lowercase(), v))
        .collect();
    headers.push(("Mcp-Session-Id".into(), "ignored".into()));
    headers.push(("Last-Event-ID".into(), "7".into()));
    let response = post(http.addr, &headers, &call);
    assert_eq!(status(&response), 200, "{response}");
    assert_eq!(json_body(&response)["result"]["content"][0]["text"], "x");
    // Spec 2026-07-28: a session id is ignored, never echoed.
    assert_eq!(header(&response, "mcp-session-id"), None);
}

#[test]
fn x_mcp_header_parameters_are_checked_against_the_arguments() {
    let tool = Tool::new("sql", "Runs a query in a region.").input_schema(json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "limit": { "type": "integer", "x-mcp-header": "Limit" },
            "query": { "type": "string" }
        },
        "required": ["region", "query"]
    }));
    let server = Server::builder("http-test", "1.0.0")
        .tool(tool, |_ctx, args: Value| {
            Ok(CallToolResult::text(args["region"].as_str().unwrap_or("")))
        })
        .build();
    let http = start(server, HttpOptions::new());
    let call = |arguments: Value| {
        body(
            7,
            "tools/call",
            json!({ "name": "sql", "arguments": arguments }),
        )
    };
    let with = |extra: &[(&str, &str)]| {
        let mut headers = mirrored("tools/call", Some("sql"));
        headers.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        headers
    };
    let ok = post(
        http.addr,
        &with(&[
            ("mcp-param-region", "=?base64?IHdlc3Qg?="),
            ("Mcp-Param-Limit", "10.0"),
        ]),
        &call(json!({ "region": " west ", "limit": 10, "query": "q" })),
    );
    assert_eq!(status(&ok), 200, "{ok}");
    assert_eq!(json_body(&ok)["result"]["content"][0]["text"], " west ");
    let refused = [
        (
            "missing",
            with(&[]),
            json!({ "region": "west", "query": "q" }),
        ),
        (
            "different",
            with(&[("Mcp-Param-Region", "east")]),
            json!({ "region": "west", "query": "q" }),
        ),
        (
            "not in the body",
            with(&[("Mcp-Param-Region", "west"), ("Mcp-Param-Limit", "1")]),
            json!({ "region": "west", "query": "q" }),
        ),
        (
            "a different number",
            with(&[("Mcp-Param-Region", "west"), ("Mcp-Param-Limit", "11")]),
            json!({ "region": "west", "limit": 10, "query": "q" }),
        ),
    ];
    for (case, headers, arguments) in refused {
        let response = post(http.addr, &headers, &call(arguments));
        assert_eq!(status(&response), 400, "{case}: {response}");
        assert_eq!(error_code(&response), -32020, "{case}");
    }
}

#[test]
fn a_foreign_origin_or_host_is_403_and_an_allowed_one_is_served() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().allow_origin("https://app.example.com"),
    );
    let call = body(8, "tools/list", json!({}));
    let with = |name: &str, value: &str| {
        let mut headers = mirrored("tools/list", None);
        headers.push((name.into(), value.into()));
        headers
    };
    for (name, value, expected) in [
        ("Origin", "https://evil.example", 403),
        ("Origin", "null", 403),
        ("Origin", "https://app.example.com", 200),
        ("Origin", "http://localhost:3000", 200),
    ] {
        let response = post(http.addr, &with(name, value), &call);
        assert_eq!(status(&response), expected, "{name}: {value}: {response}");
        if expected == 403 {
            assert_eq!(json_body(&response)["id"], Value::Null);
        }
    }
    // DNS rebinding: a loopback listener answers to loopback names only.
    let addr = http.addr;
    let request = |host: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: {}\r\n\r\n{call}",
            call.len()
        )
    };
    assert_eq!(
        status(&raw(addr, request("evil.example:80").as_bytes())),
        403
    );
    assert_eq!(
        status(&raw(
            addr,
            request(&format!("localhost:{}", addr.port())).as_bytes()
        )),
        200
    );
    assert_eq!(status(&raw(addr, request("[::1]").as_bytes())), 200);
}

#[test]
fn media_types_size_and_bad_http_get_their_status() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().max_body_bytes(400),
    );
    let addr = http.addr;
    let mut headers = mirrored("tools/list", None);
    headers[0].1 = "text/plain".into();
    assert_eq!(status(&post(addr, &headers, "{}")), 415);
    let mut headers = mirrored("tools/list", None);
    headers[1].1 = "text/html".into();
    assert_eq!(status(&post(addr, &headers, "{}")), 406);
    let mut headers = mirrored("tools/list", None);
    headers.push(("Content-Encoding".into(), "gzip".into()));
    let compressed = post(addr, &headers, "{}");
    assert_eq!(status(&compressed), 415);
    assert!(
        json_body(&compressed)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'gzip'")
    );
    headers.last_mut().unwrap().1 = "identity".into();
    assert_ne!(status(&post(addr, &headers, "{}")), 415);
    let large = post(addr, &mirrored("tools/list", None), &"x".repeat(401));
    assert_eq!(status(&large), 413);
    assert!(
        json_body(&large)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("400 bytes")
    );
    assert_eq!(
        status(&post(addr, &mirrored("tools/list", None), "not json")),
        400
    );
    assert_eq!(
        error_code(&post(addr, &mirrored("tools/list", None), "not json")),
        -32700
    );
    assert_eq!(status(&raw(addr, b"POST /mcp HTTP/2.0\r\n\r\n")), 505);
    assert_eq!(status(&raw(addr, b"garbage\r\n\r\n")), 400);
    assert_eq!(
        status(&raw(
            addr,
            format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nTransfer-Encoding: gzip\r\n\r\n")
                .as_bytes()
        )),
        501
    );
    // A POST without a body.
    let empty = raw(
        addr,
        format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(status(&empty), 400);
    // A response from the client is refused in the modern era.
    let reply = json!({ "jsonrpc": "2.0", "id": 1, "result": {} }).to_string();
    assert_eq!(status(&post(addr, &mirrored("x", None), &reply)), 400);
    // And the server still serves.
    let ok = post(
        addr,
        &mirrored("tools/list", None),
        &body(9, "tools/list", json!({})),
    );
    assert_eq!(status(&ok), 200);
}

#[test]
fn a_chunked_body_and_keep_alive_carry_two_requests_on_one_connection() {
    let http = everything();
    let addr = http.addr;
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let first = body(10, "tools/list", json!({}));
    let (a, b) = first.split_at(20);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    socket.write_all(request.as_bytes()).unwrap();
    let response = read_one(&mut socket);
    assert_eq!(status(&response), 200);
    assert_eq!(header(&response, "connection"), None, "kept alive");
    assert_eq!(json_body(&response)["id"], 10);
    let second = body(
        11,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "again" } }),
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: {}\r\n\r\n",
        second.len()
    );
    socket.write_all(request.as_bytes()).unwrap();
    let mut continued = [0u8; 25];
    socket.read_exact(&mut continued).unwrap();
    assert_eq!(&continued, b"HTTP/1.1 100 Continue\r\n\r\n");
    socket.write_all(second.as_bytes()).unwrap();
    let response = read_one(&mut socket);
    assert_eq!(
        json_body(&response)["result"]["content"][0]["text"],
        "again"
    );
}

/// Reads one response with a `Content-Length` body.
pub(crate) fn read_one(socket: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        socket.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let len: usize = header(&head, "content-length").unwrap().parse().unwrap();
    let mut body = vec![0u8; len];
    socket.read_exact(&mut body).unwrap();
    head + std::str::from_utf8(&body).unwrap()
}

#[test]
fn the_authorization_hook_answers_401_with_its_challenge() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().authorize(|headers| match headers.get("AUTHORIZATION") {
            Some("Bearer good") => Ok(()),
            _ => Err(Unauthorized::new(r#"Bearer realm="mcp""#)),
        }),
    );
    let call = body(12, "tools/list", json!({}));
    let refused = post(http.addr, &mirrored("tools/list", None), &call);
    assert_eq!(status(&refused), 401);
    assert_eq!(
        header(&refused, "www-authenticate"),
        Some(r#"Bearer realm="mcp""#)
    );
    let mut headers = mirrored("tools/list", None);
    headers.push(("Authorization".into(), "Bearer good".into()));
    assert_eq!(status(&post(http.addr, &headers, &call)), 200);
}

#[test]
fn a_slow_header_is_408_and_one_connection_too_many_is_503() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new()
            .header_timeout(Duration::from_millis(200))
            .max_connections(1),
    );
    // While a request is served on the only connection (a `slow` call, until
    // its client closes it), another is turned away.
    let busy = hold_serving(http.addr);
    let refused = raw(http.addr, b"POST /mcp HTTP/1.1\r\n\r\n");
    assert_eq!(status(&refused), 503);
    assert_eq!(header(&refused, "retry-after"), Some("1"));
    drop(busy);
    // A body too slow (its head is in, its body awaited: `100 Continue`
    // says so).
    let http = start(
        crate::everything::build(),
        HttpOptions::new().header_timeout(Duration::from_millis(200)),
    );
    let mut slow = hold_in_body(http.addr);
    let mut out = String::new();
    slow.read_to_string(&mut out).unwrap();
    assert_eq!(status(&out), 408, "a body too slow: {out}");
    // A head too slow.
    let http = start(
        crate::everything::build(),
        HttpOptions::new().header_timeout(Duration::from_millis(200)),
    );
    let mut slow = TcpStream::connect(http.addr).unwrap();
    slow.set_read_timeout(Some(WAIT)).unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: local")
        .unwrap();
    let mut out = String::new();
    slow.read_to_string(&mut out).unwrap();
    assert_eq!(status(&out), 408, "a head too slow: {out}");
}

/// A connection serving a request, which it goes on serving until the
/// socket is dropped (a close cancels it): a `slow` call of ten minutes,
/// its request sent whole. At the cap it never gives way: its request came
/// whole, and its client is still there. (Not a listen: a listen is a
/// stream, which gives way at the cap as a legacy GET stream does.)
pub(crate) fn hold_serving(addr: SocketAddr) -> TcpStream {
    let call = body(
        90,
        "tools/call",
        json!({ "name": "slow", "arguments": { "ms": 600_000 } }),
    );
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    write_post(
        &mut socket,
        addr,
        &mirrored("tools/call", Some("slow")),
        &call,
    );
    socket
}

/// A connection reading a request: its head sent with `Expect:
/// 100-continue`, `100 Continue` read, its body never sent.
pub(crate) fn hold_in_body(addr: SocketAddr) -> TcpStream {
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nExpect: 100-continue\r\nContent-Length: 10\r\n"
    );
    for (name, value) in mirrored("tools/list", None) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).unwrap();
    let mut continued = [0u8; 25];
    socket.read_exact(&mut continued).unwrap();
    assert_eq!(&continued, b"HTTP/1.1 100 Continue\r\n\r\n");
    socket
}

#[test]
fn closing_the_response_stream_cancels_the_request() {
    let (started_tx, started) = crossbeam_channel::bounded(1);
    let (cancelled_tx, cancelled) = crossbeam_channel::bounded(1);
    let server = Server::builder("http-test", "1.0.0")
        .tool(
            Tool::new("wait", "Waits until cancelled."),
            move |ctx, _: Value| {
                started_tx.send(()).unwrap();
                let was = ctx.wait_cancelled(WAIT);
                cancelled_tx.send(was).unwrap();
                Err::<CallToolResult, _>(ErrorObject::internal_error("cancelled"))
            },
        )
        .build();
    let http = start(server, HttpOptions::new());
    let call = body(13, "tools/call", json!({ "name": "wait", "arguments": {} }));
    let mut socket = TcpStream::connect(http.addr).unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        http.addr,
        call.len()
    );
    for (n, v) in mirrored("tools/call", Some("wait")) {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&call);
    socket.write_all(request.as_bytes()).unwrap();
    started.recv_timeout(WAIT).expect("the handler started");
    drop(socket);
    assert_eq!(cancelled.recv_timeout(WAIT), Ok(true), "its token tripped");
}

#[test]
fn listen_is_a_long_event_stream_with_keep_alive_comments() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let http = start(
        server,
        HttpOptions::new().keep_alive_interval(Duration::from_millis(100)),
    );
    let listen = body(
        14,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    let mut socket = TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        http.addr,
        listen.len()
    );
    for (n, v) in mirrored("subscriptions/listen", None) {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&listen);
    socket.write_all(request.as_bytes()).unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let mut read_until = |socket: &mut TcpStream, what: &str, seen: &mut String| {
        while !seen.contains(what) {
            let n = socket.read(&mut buf).unwrap();
            assert!(n > 0, "the stream ended early: {seen}");
            seen.push_str(std::str::from_utf8(&buf[..n]).unwrap());
        }
    };
    read_until(&mut socket, "acknowledged", &mut seen);
    assert!(seen.starts_with("HTTP/1.1 200 OK\r\n"), "{seen}");
    assert_eq!(header(&seen, "content-type"), Some("text/event-stream"));
    assert_eq!(header(&seen, "x-accel-buffering"), Some("no"));
    read_until(&mut socket, ":\n\n", &mut seen);
    notifier.tools_list_changed();
    read_until(&mut socket, "list_changed", &mut seen);
    let events = events(&seen);
    assert_eq!(
        events[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(events[1]["method"], "notifications/tools/list_changed");
    assert_eq!(
        events[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        14
    );
    // A stop ends the stream with the listen's final result.
    http.stop.stop();
    let mut rest = String::new();
    socket.read_to_string(&mut rest).unwrap();
    let last = self::events(&rest);
    assert_eq!(last.last().unwrap()["id"], 14, "{rest}");
    assert!(rest.ends_with("0\r\n\r\n"));
}

// What the server publishes is written to every listening stream before the
// publisher goes on. A client that stops reading its stream would hold every
// publisher once the socket's buffers are full; past the write timeout it is
// taken to be gone: its connection is closed and publishing goes on.
#[test]
fn a_listener_that_stops_reading_is_dropped_after_the_write_timeout() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let timeout = Duration::from_millis(200);
    let http = start(server, HttpOptions::new().write_timeout(timeout));
    // Each update is 64 KiB: the socket's buffers (tens of MiB here) fill
    // within a few hundred.
    let uri = format!("mem://{}", "x".repeat(64 * 1024));
    let listen = body(
        1,
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": [uri] } }),
    );
    let mut stuck = TcpStream::connect(http.addr).unwrap();
    stuck.set_read_timeout(Some(WAIT)).unwrap();
    write_post(
        &mut stuck,
        http.addr,
        &mirrored("subscriptions/listen", None),
        &listen,
    );
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("acknowledged") {
        let n = stuck.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
    // The client reads no more. Publish for three seconds, far more than
    // the buffers hold (gigabytes), on a thread of its own: without the timeout a
    // publish would wait for ever once they are full.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(3) {
            notifier.resource_updated(&uri);
        }
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(4 * WAIT)
        .expect("a publisher waited for the stuck client for ever");
    // Its connection was closed: what was sent before drains, then EOF.
    let mut rest = Vec::new();
    stuck
        .read_to_end(&mut rest)
        .expect("the server closed the stream");
}

/// Issue 47, item 14: publishing was serial, so each listener that stops
/// reading held a publisher for the write timeout, one after the other:
/// with four such listeners and a 500 ms write timeout one
/// `resource_updated` waited 3.6 s. A stream's writers now send only what
/// the socket takes at once and leave the rest to the stream's own thread
/// (`server::http::body`).
#[test]
fn stuck_listeners_hold_a_publisher_for_one_write_timeout_not_one_each() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let timeout = Duration::from_millis(500);
    let http = start(server, HttpOptions::new().write_timeout(timeout));
    let uri = format!("mem://{}", "x".repeat(64 * 1024));
    let listen = body(
        1,
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": [uri] } }),
    );
    let mut stuck = Vec::new();
    for _ in 0..4 {
        let mut socket = TcpStream::connect(http.addr).unwrap();
        socket.set_read_timeout(Some(WAIT)).unwrap();
        write_post(
            &mut socket,
            http.addr,
            &mirrored("subscriptions/listen", None),
            &listen,
        );
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("acknowledged") {
            let n = socket.read(&mut buf).unwrap();
            assert!(n > 0, "the stream ended early");
            seen.extend_from_slice(&buf[..n]);
        }
        stuck.push(socket);
    }
    // None of them reads any more. Publish until every one was dropped
    // (a publish that waited a write timeout), and keep the longest.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let mut longest = Duration::ZERO;
        while started.elapsed() < Duration::from_secs(8) {
            let one = std::time::Instant::now();
            notifier.resource_updated(&uri);
            longest = longest.max(one.elapsed());
        }
        done.send(longest).unwrap();
    });
    let longest = finished.recv_timeout(4 * WAIT).expect("publishing ended");
    assert!(
        longest < 2 * timeout,
        "one publish waited {longest:?} for four stuck listeners (write timeout {timeout:?})"
    );
}

#[cfg(feature = "legacy")]
#[test]
fn a_legacy_client_initializes_gets_a_session_and_ends_it() {
    let http = everything();
    let addr = http.addr;
    let plain = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": { "elicitation": {} },
        "clientInfo": { "name": "old", "version": "1" } } });
    let response = post(addr, &plain, &initialize.to_string());
    assert_eq!(status(&response), 200);
    assert_eq!(
        json_body(&response)["result"]["protocolVersion"],
        "2025-06-18"
    );
    // Heard on the session's GET stream (`http_legacy`).
    let capabilities = &json_body(&response)["result"]["capabilities"];
    for kind in ["tools", "resources", "prompts"] {
        assert_eq!(capabilities[kind]["listChanged"], true, "{capabilities}");
    }
    let session = header(&response, "mcp-session-id").unwrap().to_owned();
    assert_eq!(session.len(), 32);
    let mut headers = plain.clone();
    headers.push(("Mcp-Session-Id".into(), session.clone()));
    headers.push(("MCP-Protocol-Version".into(), "2025-06-18".into()));
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "old" } } });
    let response = post(addr, &headers, &call.to_string());
    assert_eq!(header(&response, "mcp-session-id"), Some(session.as_str()));
    assert_eq!(json_body(&response)["result"]["content"][0]["text"], "old");
    // Without a session: served statelessly.
    let response = post(addr, &plain, &call.to_string());
    assert_eq!(json_body(&response)["result"]["content"][0]["text"], "old");
    // DELETE ends it; then the id is unknown: 404.
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(status(&raw(addr, delete.as_bytes())), 200);
    assert_eq!(status(&post(addr, &headers, &call.to_string())), 404);
}

#[test]
fn stop_ends_serve_http() {
    let mut http = everything();
    http.stop.stop();
    let thread = http.thread.take().unwrap();
    let (done_tx, done) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || done_tx.send(thread.join().unwrap().is_ok()));
    assert_eq!(done.recv_timeout(WAIT), Ok(true));
}

#[test]
fn serve_http_returns_once_the_request_in_flight_is_answered_and_idle_connections_close() {
    let (started_tx, started) = crossbeam_channel::bounded(1);
    let (release_tx, release) = crossbeam_channel::bounded::<()>(1);
    let server = Server::builder("http-test", "1.0.0")
        .tool(
            Tool::new("slow", "Waits to be released."),
            move |_, _: Value| {
                started_tx.send(()).unwrap();
                release.recv_timeout(WAIT).unwrap();
                Ok(CallToolResult::text("done"))
            },
        )
        .build();
    let mut http = start(
        server,
        HttpOptions::new().idle_timeout(Duration::from_secs(300)),
    );
    // An idle keep-alive connection: it served one request and waits.
    let mut idle = TcpStream::connect(http.addr).unwrap();
    idle.set_read_timeout(Some(WAIT)).unwrap();
    let list = body(1, "tools/list", json!({}));
    write_post(&mut idle, http.addr, &mirrored("tools/list", None), &list);
    assert_eq!(status(&read_one(&mut idle)), 200);
    // A request in flight.
    let call = body(2, "tools/call", json!({ "name": "slow", "arguments": {} }));
    let mut busy = TcpStream::connect(http.addr).unwrap();
    busy.set_read_timeout(Some(WAIT)).unwrap();
    write_post(
        &mut busy,
        http.addr,
        &mirrored("tools/call", Some("slow")),
        &call,
    );
    started.recv_timeout(WAIT).unwrap();

    http.stop.stop();
    let thread = http.thread.take().unwrap();
    let (done_tx, done) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || done_tx.send(thread.join().unwrap().is_ok()));
    // The idle connection is closed at once; serve_http waits for the call.
    let mut rest = Vec::new();
    assert_eq!(idle.read_to_end(&mut rest).unwrap(), 0);
    assert!(
        done.recv_timeout(Duration::from_millis(300)).is_err(),
        "returned with a request in flight"
    );
    release_tx.send(()).unwrap();
    let response = read_one(&mut busy);
    assert_eq!(json_body(&response)["result"]["content"][0]["text"], "done");
    assert_eq!(done.recv_timeout(WAIT), Ok(true));
}

/// Writes one POST with a `Content-Length` body on `socket`.
fn write_post(socket: &mut TcpStream, addr: SocketAddr, headers: &[(String, String)], body: &str) {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    socket.write_all(request.as_bytes()).unwrap();
}

/// SEP-2575 and the Tasks extension, as the official conformance suite
/// checks them natively over HTTP (`server-stateless`,
/// `tasks-request-headers`): a request missing a required `_meta` field is
/// `400`, not `200`; a task's `Mcp-Name` is its `taskId`; an unpadded
/// Base64 sentinel is malformed.
#[test]
fn missing_meta_is_400_and_task_methods_mirror_their_task_id() {
    let http = everything();
    let no_meta =
        json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {} }).to_string();
    let response = post(http.addr, &mirrored("tools/list", None), &no_meta);
    assert_eq!(status(&response), 400, "{response}");
    assert_eq!(error_code(&response), -32602, "{response}");
    let get = body(8, "tasks/get", json!({ "taskId": "abc" }));
    let response = post(http.addr, &mirrored("tasks/get", Some("other")), &get);
    assert_eq!(status(&response), 400, "{response}");
    assert_eq!(error_code(&response), -32020, "{response}");
    let response = post(http.addr, &mirrored("tasks/get", None), &get);
    assert_eq!(error_code(&response), -32020, "no Mcp-Name: {response}");
    let response = post(http.addr, &mirrored("tasks/get", Some("abc")), &get);
    assert_ne!(
        error_code(&response),
        -32020,
        "the right Mcp-Name passes the mirror: {response}"
    );
    let call = body(
        9,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "x" } }),
    );
    let unpadded = mirrored("tools/call", Some("=?base64?ZWNobw?="));
    assert_eq!(error_code(&post(http.addr, &unpadded, &call)), -32020);
    let padded = mirrored("tools/call", Some("=?base64?ZWNobw==?="));
    assert_eq!(status(&post(http.addr, &padded, &call)), 200);
}

/// `HttpOptions` with every timeout at its longest, or at zero: no panic
/// (`Instant + Duration::MAX` overflows), and requests are served, a slow
/// one included (the watch computes its next keep-alive comment).
#[test]
fn extreme_http_options_neither_panic_nor_refuse_requests() {
    for duration in [Duration::MAX, Duration::ZERO] {
        let options = HttpOptions::new()
            .header_timeout(duration)
            .idle_timeout(duration)
            .keep_alive_interval(duration)
            .write_timeout(duration);
        let http = start(crate::everything::build(), options);
        for (id, tool, arguments) in [
            (1, "echo", json!({ "text": "hi" })),
            (2, "slow", json!({ "ms": 120 })),
        ] {
            let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": tool, "arguments": arguments, "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {} } } });
            let response = post(
                http.addr,
                &mirrored("tools/call", Some(tool)),
                &body.to_string(),
            );
            assert_eq!(status(&response), 200, "{duration:?} {tool}: {response}");
            assert!(
                response.contains(&format!(r#""id":{id},"result""#)),
                "{duration:?} {tool}: {response}"
            );
        }
    }
}

/// A connection turned away at the cap (`503`: the only place is serving
/// a request) that goes on sending, a byte at a time, does not hold up
/// the listener: once a connection is free, the next client is served at
/// once (and a stop would be seen).
#[test]
fn a_client_turned_away_at_the_cap_that_trickles_does_not_hold_the_listener() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().max_connections(1),
    );
    let addr = http.addr;
    let call = body(1, "tools/list", json!({}));
    // The only connection: serving a request (an idle one, or one
    // reading its request, would give way).
    let first = hold_serving(addr);

    // One too many: it begins a request and goes on sending, slowly.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let trickler = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let mut socket = TcpStream::connect(addr).unwrap();
            socket.set_nodelay(true).unwrap();
            let _ = socket.write_all(b"POST /mcp HTTP/1.1\r\n");
            let until = std::time::Instant::now() + Duration::from_secs(4);
            while !done.load(std::sync::atomic::Ordering::Relaxed)
                && std::time::Instant::now() < until
                && socket.write_all(b"x").is_ok()
            {
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    // The first connection closes: its place is free.
    drop(first);
    std::thread::sleep(Duration::from_millis(200));
    let began = std::time::Instant::now();
    let response = post(addr, &mirrored("tools/list", None), &call);
    let took = began.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    trickler.join().unwrap();
    assert_eq!(status(&response), 200, "{response}");
    assert!(
        took < Duration::from_secs(1),
        "the next client waited {took:?}"
    );
}

/// A connection whose thread panics (here in the application's
/// authorization hook) still leaves its place at the cap, and its client
/// sees the connection close: the listener goes on serving.
#[test]
fn a_connection_whose_thread_panics_leaves_its_place() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().max_connections(1).authorize(|headers| {
            assert!(headers.get("x-panic").is_none(), "the hook panics");
            Ok(())
        }),
    );
    let call = body(1, "tools/list", json!({}));
    let mut panics = mirrored("tools/list", None);
    panics.push(("X-Panic".into(), "1".into()));
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        http.addr,
        call.len()
    );
    for (name, value) in &panics {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&call);
    let mut socket = TcpStream::connect(http.addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let closed = socket.read_to_end(&mut out);
    assert!(closed.is_ok(), "the connection stayed open: {closed:?}");
    std::thread::sleep(Duration::from_millis(100));
    let response = post(http.addr, &mirrored("tools/list", None), &call);
    assert_eq!(status(&response), 200, "{response}");
}

/// Issue 47, item 14: a loopback listener answers to the loopback address
/// it is on, and to no other name. On `127.0.0.2` it refused its own
/// address (`403`, only `localhost`, `127.0.0.1` and `[::1]` passed); on
/// `::ffff:127.0.0.1` (an IPv4 loopback address in IPv6 form) it counted
/// as not loopback and served any `Host` (`200` for `evil.example`).
#[test]
fn a_loopback_listener_on_any_loopback_address_answers_to_it_alone() {
    let call = body(9, "tools/list", json!({}));
    let request = |host: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: {}\r\n\r\n{call}",
            call.len()
        )
    };
    let mut wrong = Vec::new();
    for bind in ["127.0.0.2:0", "[::ffff:127.0.0.1]:0"] {
        let listener = TcpListener::bind(bind).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = crate::everything::build();
        let stop = server.stop_handle();
        let thread = std::thread::spawn(move || server.serve_http(listener, HttpOptions::new()));
        let own = match addr {
            SocketAddr::V4(v4) => format!("{}:{}", v4.ip(), v4.port()),
            SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
        };
        for (host, expected) in [
            (own.as_str(), 200),
            ("localhost", 200),
            ("127.0.0.1", 200),
            ("evil.example", 403),
            ("evil.example:80", 403),
        ] {
            let got = status(&raw(addr, request(host).as_bytes()));
            if got != expected {
                wrong.push(format!("on {bind}, Host {host}: {got}, not {expected}"));
            }
        }
        stop.stop();
        let _ = thread.join();
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Issue 47, item 14: a browser on an allowed origin can use the endpoint.
/// Its `POST` with `Content-Type: application/json` and the `Mcp-*`
/// headers is preceded by a CORS preflight (`OPTIONS`), which was `405`,
/// so an origin `allow_origin` admitted could never reach the server from
/// a browser; and a response without `Access-Control-Allow-Origin` is one
/// the page cannot read.
#[test]
fn a_browser_on_an_allowed_origin_passes_the_cors_preflight_and_reads_the_answer() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().allow_origin("https://app.example.com"),
    );
    let addr = http.addr;
    let preflight = |origin: &str| {
        raw(
            addr,
            format!(
                "OPTIONS /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nOrigin: {origin}\r\n\
                 Access-Control-Request-Method: POST\r\n\
                 Access-Control-Request-Headers: content-type, mcp-protocol-version, mcp-method, mcp-name\r\n\r\n"
            )
            .as_bytes(),
        )
    };
    let allowed = preflight("https://app.example.com");
    assert_eq!(status(&allowed), 204, "{allowed}");
    assert_eq!(
        header(&allowed, "access-control-allow-origin"),
        Some("https://app.example.com"),
        "{allowed}"
    );
    assert!(
        header(&allowed, "access-control-allow-methods").is_some_and(|m| m.contains("POST")),
        "{allowed}"
    );
    let asked = header(&allowed, "access-control-allow-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    for name in [
        "content-type",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
    ] {
        assert!(asked.contains(name), "{name} not allowed: {allowed}");
    }
    // A loopback origin the application did not allow passes the 403
    // check, but gets no CORS (see the next test).
    let local = preflight("http://localhost:5173");
    assert_eq!(
        header(&local, "access-control-allow-origin"),
        None,
        "{local}"
    );
    let foreign = preflight("https://evil.example");
    assert_eq!(status(&foreign), 403, "{foreign}");
    assert_eq!(header(&foreign, "access-control-allow-origin"), None);

    // The request itself: answered with the origin allowed, and the
    // session header readable by the page.
    let mut headers = mirrored("tools/call", Some("echo"));
    headers.push(("Origin".into(), "https://app.example.com".into()));
    let response = post(
        addr,
        &headers,
        &body(
            10,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
        ),
    );
    assert_eq!(status(&response), 200, "{response}");
    assert_eq!(
        header(&response, "access-control-allow-origin"),
        Some("https://app.example.com"),
        "{response}"
    );
    assert!(
        header(&response, "access-control-expose-headers")
            .is_some_and(|h| h.to_ascii_lowercase().contains("mcp-session-id")),
        "{response}"
    );
    assert_eq!(header(&response, "vary"), Some("Origin"));
    // Without an Origin, nothing of CORS.
    let response = post(
        addr,
        &mirrored("tools/call", Some("echo")),
        &body(
            11,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
        ),
    );
    assert_eq!(header(&response, "access-control-allow-origin"), None);
}

/// Review of issue 47 (review-47h): a page on another loopback port reads
/// nothing from a server that did not allow its origin. Without CORS a
/// browser page can send this endpoint no request it accepts (a POST of
/// `application/json` needs a preflight, and a "simple" one is `415`), so
/// letting every loopback `Origin` pass the `403` check was harmless;
/// since the preflight is answered for every loopback origin, any page
/// served from `localhost` on any port (a dev server running third-party
/// code, another local app) calls the tools of a local server on
/// `127.0.0.1:8080` and reads the results. The `Origin` check (spec
/// 2026-07-28 "Security & Endpoint") is there to keep other web origins
/// out; `http://localhost:1234` is another origin than this server's.
/// On main: the preflight is `204` with `Access-Control-Allow-Origin:
/// http://localhost:1234`, and so is the answer to the POST. Now CORS
/// goes to the origins `allow_origin` names alone.
#[test]
fn a_page_on_another_loopback_port_gets_no_cors_from_a_server_that_did_not_allow_it() {
    let http = everything();
    let addr = http.addr;
    let origin = "http://localhost:1234";
    let preflight = raw(
        addr,
        format!(
            "OPTIONS /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nOrigin: {origin}\r\n\
             Access-Control-Request-Method: POST\r\n\
             Access-Control-Request-Headers: content-type, mcp-protocol-version, mcp-method, mcp-name\r\n\r\n"
        )
        .as_bytes(),
    );
    let mut headers = mirrored("tools/call", Some("echo"));
    headers.push(("Origin".into(), origin.into()));
    let answer = post(
        addr,
        &headers,
        &body(
            12,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "secret" } }),
        ),
    );
    assert_eq!(
        (
            header(&preflight, "access-control-allow-origin"),
            header(&answer, "access-control-allow-origin"),
        ),
        (None, None),
        "a page on {origin} may call this server and read it:\n{preflight}\n{answer}"
    );
}

/// Claim (review of the publisher's send, b8e4e83): what a handler
/// publishes reaches its client before the handler's reply
/// (`server::connections`). Over HTTP the event goes to the client's
/// listen stream and the reply to its call's POST: the event must be on
/// the listener's socket by the time the reply is read (the publisher
/// hands the stream the event before it goes on, and the stream sends what
/// the socket takes at once). Left to the pool, it was sent after the
/// reply.
#[test]
fn what_a_tool_publishes_is_on_the_listeners_socket_before_its_reply_is() {
    let server = Server::builder("order", "1.0.0")
        .tool(
            Tool::new("change", "Publishes a tool list change."),
            |ctx, _: Value| {
                ctx.notifier().tools_list_changed();
                Ok(CallToolResult::text("changed"))
            },
        )
        .build();
    let http = start(server, HttpOptions::new());
    let listen = body(
        1000,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    let mut socket = TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        http.addr,
        listen.len()
    );
    for (n, v) in mirrored("subscriptions/listen", None) {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&listen);
    socket.write_all(request.as_bytes()).unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("acknowledged") {
        let n = socket.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended early: {seen}");
        seen.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    socket.set_nonblocking(true).unwrap();
    let rounds = 2000;
    let mut late = Vec::new();
    for round in 1..=rounds {
        let call = body(
            round,
            "tools/call",
            json!({ "name": "change", "arguments": {} }),
        );
        let response = post(http.addr, &mirrored("tools/call", Some("change")), &call);
        assert_eq!(status(&response), 200, "{response}");
        // What the listener's socket holds now, the reply read.
        loop {
            match socket.read(&mut buf) {
                Ok(n) => {
                    assert!(n > 0, "the stream ended early: {seen}");
                    seen.push_str(std::str::from_utf8(&buf[..n]).unwrap());
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        if seen.matches("notifications/tools/list_changed").count() < round as usize {
            late.push(round);
        }
    }
    assert!(
        late.is_empty(),
        "of {rounds} calls, {} had their reply read before the event they published reached the listener (the first: {:?})",
        late.len(),
        &late[..late.len().min(10)]
    );
}
