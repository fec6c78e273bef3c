//! The HTTP server as an OAuth 2.1 protected resource (feature `http`,
//! spec 2026-07-28 basic/authorization, RFC 9728, RFC 6750 section 3):
//! its metadata at both well-known paths, the `401` and `403` challenges,
//! the validator's answer reaching a handler in both eras, the token
//! refused in a URL, and the token in no answer. A plain `TcpStream` as
//! the client reading the exact bytes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{HttpOptions, ProtectedResource, Server, TokenInfo, Unauthorized};
use serde_json::{Value, json};

use crate::http::{Http, body, header, json_body, mirrored, post, raw, start_with, status};

/// A token the validator knows, granting `mcp:tools` only.
const TOKEN: &str = "tok-Alice.0123456789";
/// One granting `mcp:tools` and `files:write`.
const WRITER: &str = "tok-Writer.0123456789";
/// One that expired a minute ago.
const EXPIRED: &str = "tok-Expired.0123456789";
/// One the validator refuses with a description that quotes it.
const FOREIGN: &str = "tok-Foreign.0123456789";

/// The resource identifier of a server on `addr`.
fn resource_id(addr: SocketAddr) -> String {
    format!("http://{addr}/mcp")
}

/// A server with a `whoami` tool (what its token allows, as the handler
/// reads it) and a `write` tool that needs `files:write`, whose validator
/// counts its calls and checks the resource it is given.
fn protected() -> (Http, Arc<AtomicUsize>) {
    let server = Server::builder("auth", "1.0.0")
        .tool(
            Tool::new("whoami", "What the request's token allows."),
            |ctx, _: Value| {
                let info = ctx.token_info().expect("a validated token");
                Ok(CallToolResult::text(
                    json!({
                        "subject": info.subject,
                        "scopes": info.scopes,
                        "claims": info.claims,
                    })
                    .to_string(),
                ))
            },
        )
        .tool(Tool::new("write", "Needs files:write."), |_, _: Value| {
            Ok(CallToolResult::text("written"))
        })
        .build();
    // The resource id names the port: the listener is bound first.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let expected = resource_id(addr);
    let resource = ProtectedResource::new(&expected)
        .authorization_server("https://auth.example.com")
        .scopes_supported(["mcp:tools", "files:write"])
        .require_scopes(["mcp:tools"])
        .require_scopes_for("tools/call", Some("write"), ["files:write"])
        .resource_name("auth test");
    let options = HttpOptions::new().protected_resource(resource, move |token, resource| {
        counted.fetch_add(1, Ordering::SeqCst);
        assert_eq!(resource.resource(), expected);
        let info = TokenInfo::new().client_id("test-client");
        match token {
            TOKEN => Ok(info
                .subject("alice")
                .scopes(["mcp:tools"])
                .claims(json!({ "tenant": "t1" }))),
            WRITER => Ok(info.subject("wendy").scopes(["mcp:tools", "files:write"])),
            EXPIRED => Ok(info
                .subject("old")
                .scopes(["mcp:tools"])
                .expires_at(SystemTime::now() - Duration::from_secs(60))),
            other => Err(Unauthorized::invalid_token(&format!(
                "{other} was not issued for this server"
            ))),
        }
    });
    (start_with(server, listener, options), calls)
}

fn with_token(mut headers: Vec<(String, String)>, token: &str) -> Vec<(String, String)> {
    headers.push(("Authorization".into(), format!("Bearer {token}")));
    headers
}

fn get(addr: SocketAddr, path: &str) -> String {
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

fn call_tool(addr: SocketAddr, tool: &str, token: Option<&str>) -> String {
    let headers = mirrored("tools/call", Some(tool));
    let headers = match token {
        Some(token) => with_token(headers, token),
        None => headers,
    };
    let call = body(3, "tools/call", json!({ "name": tool, "arguments": {} }));
    post(addr, &headers, &call)
}

#[test]
fn the_metadata_is_served_at_the_root_and_the_endpoints_well_known_paths() {
    let (http, _) = protected();
    let expected = json!({
        "resource": resource_id(http.addr),
        "authorization_servers": ["https://auth.example.com"],
        "scopes_supported": ["mcp:tools", "files:write"],
        "bearer_methods_supported": ["header"],
        "resource_name": "auth test",
    });
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = get(http.addr, path);
        assert_eq!(status(&response), 200, "{path}: {response}");
        assert_eq!(header(&response, "content-type"), Some("application/json"));
        assert_eq!(header(&response, "access-control-allow-origin"), Some("*"));
        assert_eq!(json_body(&response), expected, "{path}");
    }
    // Another path under the well-known one is not this resource's.
    let other = get(http.addr, "/.well-known/oauth-protected-resource/other");
    assert_eq!(status(&other), 404, "{other}");
}

#[test]
fn a_request_without_a_token_is_401_with_a_challenge_naming_the_metadata_and_scope() {
    let (http, calls) = protected();
    let refused = call_tool(http.addr, "whoami", None);
    assert_eq!(status(&refused), 401, "{refused}");
    let metadata = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        http.addr
    );
    assert_eq!(
        header(&refused, "www-authenticate"),
        Some(format!(r#"Bearer resource_metadata="{metadata}", scope="mcp:tools""#).as_str())
    );
    assert_eq!(json_body(&refused)["error"]["code"], -32600);
    // Where the challenge points is served.
    let path = metadata.split_once(&http.addr.to_string()).unwrap().1;
    assert_eq!(status(&get(http.addr, path)), 200);
    // Another scheme is no bearer token: the same challenge.
    let mut basic = mirrored("tools/list", None);
    basic.push(("Authorization".into(), "Basic YTpi".into()));
    let refused = post(http.addr, &basic, &body(4, "tools/list", json!({})));
    assert_eq!(status(&refused), 401, "{refused}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no token, no validation");
}

#[test]
fn an_invalid_or_expired_token_is_401_invalid_token() {
    let (http, _) = protected();
    let refused = call_tool(http.addr, "whoami", Some("tok-unknown"));
    assert_eq!(status(&refused), 401, "{refused}");
    let challenge = header(&refused, "www-authenticate").unwrap();
    assert!(
        challenge.starts_with(
            r#"Bearer error="invalid_token", error_description="[the token] was not issued for this server", resource_metadata=""#
        ),
        "{challenge}"
    );
    let expired = call_tool(http.addr, "whoami", Some(EXPIRED));
    assert_eq!(status(&expired), 401, "{expired}");
    let challenge = header(&expired, "www-authenticate").unwrap();
    assert!(
        challenge
            .contains(r#"error="invalid_token", error_description="the access token has expired""#),
        "{challenge}"
    );
}

#[test]
fn a_token_without_a_needed_scope_is_403_insufficient_scope_naming_every_scope_needed() {
    let (http, _) = protected();
    let refused = call_tool(http.addr, "write", Some(TOKEN));
    assert_eq!(status(&refused), 403, "{refused}");
    assert_eq!(
        header(&refused, "www-authenticate"),
        Some(
            format!(
                r#"Bearer error="insufficient_scope", scope="mcp:tools files:write", resource_metadata="http://{}/.well-known/oauth-protected-resource/mcp""#,
                http.addr
            )
            .as_str()
        )
    );
    let error = json_body(&refused);
    assert_eq!(error["id"], 3, "{error}");
    assert_eq!(error["error"]["code"], -32600);
    // With the scope, the same call is served.
    let served = call_tool(http.addr, "write", Some(WRITER));
    assert_eq!(status(&served), 200, "{served}");
    assert_eq!(
        json_body(&served)["result"]["content"][0]["text"],
        "written"
    );
}

#[test]
fn the_validators_answer_reaches_the_handler_and_every_request_is_validated() {
    let (http, calls) = protected();
    let served = call_tool(http.addr, "whoami", Some(TOKEN));
    assert_eq!(status(&served), 200, "{served}");
    let text = json_body(&served)["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({ "subject": "alice", "scopes": ["mcp:tools"], "claims": { "tenant": "t1" } })
    );
    call_tool(http.addr, "whoami", Some(TOKEN));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "each request validated");
}

#[cfg(feature = "legacy")]
#[test]
fn a_legacy_sessions_requests_are_validated_and_their_handlers_read_the_token() {
    use crate::http_legacy::{call, headers};
    let (http, calls) = protected();
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "old", "version": "1" } } });
    let plain = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    let refused = post(http.addr, &plain, &initialize.to_string());
    assert_eq!(status(&refused), 401, "{refused}");
    let opened = post(
        http.addr,
        &with_token(plain, WRITER),
        &initialize.to_string(),
    );
    assert_eq!(status(&opened), 200, "{opened}");
    let session = header(&opened, "mcp-session-id").unwrap().to_owned();
    let whoami = call(2, "whoami").to_string();
    let refused = post(http.addr, &headers(Some(&session), false), &whoami);
    assert_eq!(
        status(&refused),
        401,
        "a session is no credential: {refused}"
    );
    let served = post(
        http.addr,
        &with_token(headers(Some(&session), false), WRITER),
        &whoami,
    );
    assert_eq!(status(&served), 200, "{served}");
    let text = json_body(&served)["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["subject"],
        "wendy"
    );
    // The scope an operation needs holds for a legacy call too.
    let write = call(3, "write").to_string();
    let refused = post(
        http.addr,
        &with_token(headers(Some(&session), false), TOKEN),
        &write,
    );
    assert_eq!(status(&refused), 403, "{refused}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[test]
fn a_token_in_the_query_string_is_refused_with_400() {
    // Whether or not the server asks for tokens.
    let http = crate::http::everything();
    let call = body(5, "tools/list", json!({}));
    let mut request = format!(
        "POST /mcp?x=1&access_token={TOKEN} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        http.addr,
        call.len()
    );
    for (name, value) in mirrored("tools/list", None) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&call);
    let refused = raw(http.addr, request.as_bytes());
    assert_eq!(status(&refused), 400, "{refused}");
    assert!(
        json_body(&refused)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send it in the Authorization header"),
        "{refused}"
    );
    assert!(!refused.contains(TOKEN), "{refused}");
}

#[test]
fn no_answer_carries_the_token() {
    let (http, _) = protected();
    let mut answers = vec![
        call_tool(http.addr, "whoami", Some(FOREIGN)),
        call_tool(http.addr, "whoami", Some(EXPIRED)),
        call_tool(http.addr, "write", Some(FOREIGN)),
        call_tool(http.addr, "write", Some(TOKEN)),
        call_tool(http.addr, "nothing-here", Some(FOREIGN)),
    ];
    // A malformed one, and two Authorization fields.
    let mut bad = mirrored("tools/list", None);
    bad.push((
        "Authorization".into(),
        format!("Bearer {FOREIGN} {FOREIGN}"),
    ));
    answers.push(post(http.addr, &bad, &body(6, "tools/list", json!({}))));
    let mut twice = with_token(mirrored("tools/list", None), FOREIGN);
    twice.push(("Authorization".into(), format!("Bearer {TOKEN}")));
    answers.push(post(http.addr, &twice, &body(7, "tools/list", json!({}))));
    let statuses: Vec<u16> = answers.iter().map(|a| status(a)).collect();
    assert_eq!(statuses, [401, 401, 401, 403, 401, 400, 400]);
    for answer in &answers {
        for token in [TOKEN, FOREIGN, EXPIRED] {
            assert!(!answer.contains(token), "{token} in: {answer}");
        }
    }
}

/// Security best practices ("Session Hijacking"): a session is bound to
/// whom its token stands for. Another user's valid token does not reach
/// it: its requests, notifications, GET stream and DELETE are `404`, as
/// for a session not known; its owner's still are served.
#[cfg(feature = "legacy")]
#[test]
fn a_legacy_session_is_found_only_by_the_subject_that_opened_it() {
    use crate::http_legacy::{call, headers};
    let (http, _) = protected();
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "old", "version": "1" } } });
    let plain = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    let opened = post(
        http.addr,
        &with_token(plain, TOKEN),
        &initialize.to_string(),
    );
    let session = header(&opened, "mcp-session-id").unwrap().to_owned();
    let as_other = with_token(headers(Some(&session), false), WRITER);
    let whoami = call(2, "whoami").to_string();
    let taken = post(http.addr, &as_other, &whoami);
    assert_eq!(status(&taken), 404, "another subject's request: {taken}");
    let notification = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let taken = post(http.addr, &as_other, &notification.to_string());
    assert_eq!(
        status(&taken),
        404,
        "another subject's notification: {taken}"
    );
    for method in ["GET", "DELETE"] {
        let request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\nAuthorization: Bearer {WRITER}\r\n\r\n",
            http.addr
        );
        let taken = raw(http.addr, request.as_bytes());
        assert_eq!(status(&taken), 404, "another subject's {method}: {taken}");
    }
    let own = post(
        http.addr,
        &with_token(headers(Some(&session), false), TOKEN),
        &whoami,
    );
    assert_eq!(status(&own), 200, "its owner's: {own}");
}

#[test]
fn a_resource_that_cannot_be_served_is_refused_before_serving() {
    let refuse = |resource: ProtectedResource| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let options = HttpOptions::new().protected_resource(resource, |_, _| Ok(TokenInfo::new()));
        let server = Server::builder("auth", "1.0.0").build();
        server
            .serve_http(listener, options)
            .unwrap_err()
            .to_string()
    };
    let said = refuse(ProtectedResource::new("mcp.example.com").authorization_server("https://as"));
    assert!(said.contains("not an absolute http(s) URI"), "{said}");
    let said = refuse(
        ProtectedResource::new("https://mcp.example.com/mcp#x").authorization_server("https://as"),
    );
    assert!(said.contains("without a fragment"), "{said}");
    let said = refuse(ProtectedResource::new("https://mcp.example.com/mcp"));
    assert!(said.contains("names no authorization server"), "{said}");
}

// ---------------------------------------------------------------------
// review-46auth: a hostile review of the merge 4c8255f. Each test below
// shows one claim and is ignored until it is fixed.
// ---------------------------------------------------------------------

/// `initialize` of a legacy session with `token`: the session's id.
#[cfg(feature = "legacy")]
fn legacy_session(addr: SocketAddr, token: &str) -> String {
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "old", "version": "1" } } });
    let plain = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    let opened = post(addr, &with_token(plain, token), &initialize.to_string());
    assert_eq!(status(&opened), 200, "{opened}");
    header(&opened, "mcp-session-id").unwrap().to_owned()
}

/// Claim: `require_scopes_for(method, Some(name), ..)` is bypassed in the
/// legacy era by a body whose `params` names the tool twice.
/// `exchange.rs: operation_name` reads the name through
/// `Params::fields()`, a serde struct that refuses a duplicate field;
/// `.ok()?` turns that error into "no name", and
/// `ProtectedResource::needed` then asks only for the scopes every
/// request needs, while dispatch reads the params its own way and runs
/// the tool. (A modern request is refused `400` by the `Mcp-Name` check
/// first; a legacy one has no such check.) The claim is wrong: dispatch
/// reads the params with the same `Params::fields()` and refuses the
/// call (`-32602`, "duplicate field `name`"); on main this test passes.
#[cfg(feature = "legacy")]
#[test]
fn a_duplicated_name_does_not_skip_the_scopes_its_tool_needs() {
    use crate::http_legacy::headers;
    let (http, _) = protected();
    let session = legacy_session(http.addr, TOKEN);
    let call = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write","arguments":{},"name":"write"}}"#;
    let answer = post(
        http.addr,
        &with_token(headers(Some(&session), false), TOKEN),
        call,
    );
    assert!(
        !answer.contains("written"),
        "served without files:write: {answer}"
    );
    assert!(answer.contains("duplicate field"), "{answer}");
}

/// The everything example's server as a protected resource whose
/// validator reads the token itself: `sub.NAME` stands for subject NAME,
/// `cid.NAME` for client NAME alone (no subject), `both.SUB.CID` for
/// subject SUB (empty in `both..CID`) of client CID, `exp.UNIX.NAME` for
/// subject NAME until UNIX (seconds), `nobody` for a token that names
/// no one; each grants `mcp:tools`, which
/// every request needs. Its notifier, to send a list change.
fn protected_everything() -> (Http, mcp_stdio::Notifier) {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let resource = ProtectedResource::new(&resource_id(listener.local_addr().unwrap()))
        .authorization_server("https://auth.example.com")
        .require_scopes(["mcp:tools"]);
    let options = HttpOptions::new()
        .keep_alive_interval(Duration::from_millis(100))
        .protected_resource(resource, |token, _| {
            let info = TokenInfo::new().scopes(["mcp:tools"]);
            let parts: Vec<&str> = token.split('.').collect();
            match parts.as_slice() {
                ["sub", name] => Ok(info.subject(name)),
                ["cid", name] => Ok(info.client_id(name)),
                ["both", sub, cid] => Ok(info.subject(sub).client_id(cid)),
                ["nobody"] => Ok(info),
                ["iss", issuer, name] => Ok(info.issuer(issuer).subject(name)),
                ["exp", at, name] => Ok(info
                    .subject(name)
                    .expires_at(SystemTime::UNIX_EPOCH + Duration::from_secs(at.parse().unwrap()))),
                _ => Err(Unauthorized::invalid_token("unknown")),
            }
        });
    (start_with(server, listener, options), notifier)
}

/// A token of `protected_everything` for subject `name` that expires
/// `secs` seconds from now (rounded up to the next whole second), and
/// that moment.
fn expiring(name: &str, secs: u64) -> (String, SystemTime) {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at = now + secs + 1;
    (
        format!("exp.{at}.{name}"),
        SystemTime::UNIX_EPOCH + Duration::from_secs(at),
    )
}

/// Writes a POST with `headers` and `body` on `socket`, kept alive.
fn send_post(
    socket: &mut std::net::TcpStream,
    addr: SocketAddr,
    headers: &[(String, String)],
    body: &str,
) {
    use std::io::Write;
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    socket.write_all(request.as_bytes()).unwrap();
}

/// Reads `socket` until `seen` holds `what` (`true`), or the stream
/// ends (`false`); one that does neither within `WAIT` in all (keep-alive
/// comments coming all the while) panics.
fn read_for(socket: &mut std::net::TcpStream, what: &str, seen: &mut String) -> bool {
    use std::io::Read;
    let until = std::time::Instant::now() + crate::support::WAIT;
    let mut buf = [0u8; 4096];
    while !seen.contains(what) {
        assert!(
            std::time::Instant::now() < until,
            "neither {what:?} nor the end: {seen}"
        );
        match socket.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e) => panic!("{e} before {what:?} or the end: {seen}"),
        }
    }
    true
}

/// Sleeps until the clock is past `at`.
fn wait_past(at: SystemTime) {
    while SystemTime::now() <= at {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Claim: a task is reached by any subject that has its id, not only by
/// the one that created it. `tasks/get`, `tasks/update` and
/// `tasks/cancel` go through `auth::authenticate` (a valid token, the
/// scopes every request needs) and then straight to the task store
/// (`src/server/tasks/mod.rs`): no task records whom its creator's token
/// stood for, so nothing compares it, unlike a legacy session
/// (`sessions.rs: Store::kept`). A task id that leaks (a log, a shared
/// screen, a proxy) gives another user the task's result and its input
/// requests, and lets them cancel it. On main: bob's `tasks/get` of
/// alice's task is answered with the task (`"status"`).
///
/// Fixed: a task is bound to the owner of the request that created it
/// (`Owner::admits`, the rule legacy sessions keep too); another subject,
/// a client of the same name, and a token that names nobody get for
/// `tasks/get`, `tasks/update` and `tasks/cancel` exactly the answer an
/// unknown task gets, and a listen naming the task does not follow it.
#[test]
fn a_task_is_not_reached_by_another_subject() {
    let (http, _notifier) = protected_everything();
    let start = crate::tasks::task_request(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 5, "label": "mine" } }),
    );
    let created = post(
        http.addr,
        &with_token(mirrored("tools/call", Some("slow_compute")), "sub.alice"),
        &start.to_string(),
    );
    assert_eq!(status(&created), 200, "{created}");
    let created = crate::http::events(&created)
        .pop()
        .unwrap_or_else(|| json_body(&created));
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    // A task method's answer for `task_id` with `token`: its status and
    // body, with the request's id and the task id taken out, so that the
    // answers for two ids compare.
    let ask = |method: &str, task_id: &str, token: &str| -> (u16, String) {
        let mut params = json!({ "taskId": task_id });
        if method == "tasks/update" {
            params["inputResponses"] = json!({});
        }
        let request = crate::tasks::task_request(method, params);
        let answer = post(
            http.addr,
            &with_token(mirrored(method, Some(task_id)), token),
            &request.to_string(),
        );
        let mut body = json_body(&answer);
        body["id"] = Value::Null;
        let body = body.to_string().replace(task_id, "ID");
        (status(&answer), body)
    };
    let own = ask("tasks/get", &task_id, "sub.alice");
    assert!(
        own.1.contains("\"status\":\"working\""),
        "its creator's: {own:?}"
    );
    let unknown_id = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let unknown = ask(method, unknown_id, "sub.bob");
        assert!(unknown.1.contains("-32602"), "{method}: {unknown:?}");
        for stranger in ["sub.bob", "cid.alice", "nobody"] {
            let taken = ask(method, &task_id, stranger);
            assert_eq!(
                taken, unknown,
                "{method} by {stranger}: answered otherwise than for an unknown task"
            );
        }
    }
    // A listen of another subject naming the task does not follow it.
    let listen = crate::tasks::task_request(
        "subscriptions/listen",
        json!({ "notifications": { "taskIds": [task_id] } }),
    );
    let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    let headers = with_token(mirrored("subscriptions/listen", None), "sub.bob");
    send_post(&mut socket, http.addr, &headers, &listen.to_string());
    let mut seen = String::new();
    assert!(read_for(&mut socket, "acknowledged", &mut seen), "{seen}");
    assert!(read_for(&mut socket, "}\n\n", &mut seen), "{seen}");
    assert!(!seen.contains(&task_id), "bob follows alice's task: {seen}");
    drop(socket);
    // Nobody else's cancellation took: the task still works for alice,
    // and she may cancel it.
    let own = ask("tasks/get", &task_id, "sub.alice");
    assert!(own.1.contains("\"status\":\"working\""), "{own:?}");
    let cancelled = ask("tasks/cancel", &task_id, "sub.alice");
    assert_eq!(cancelled.0, 200, "{cancelled:?}");
    assert!(!cancelled.1.contains("error"), "{cancelled:?}");
    let own = ask("tasks/get", &task_id, "sub.alice");
    assert!(own.1.contains("\"status\":\"cancelled\""), "{own:?}");
}

/// Claim: a stream outlives the token it was opened with. The token's
/// expiry (`TokenInfo::expires_at`) is checked once, in
/// `auth::authenticate` before the request is served
/// (`tcp.rs: serve_request`); a `subscriptions/listen` then goes on
/// delivering notifications for as long as the connection lasts, to a
/// client whose token expired (or was revoked: it is never asked about
/// again). On main: after the expiry, a `tools/list_changed` is
/// delivered on the stream (`list_changed` seen).
///
/// Fixed: before the expiry a change is delivered; after it none is, the
/// stream ends without the listen's final result (an unexpected end, which
/// a client takes as a cue to reconnect) and the connection closes; the
/// listen sent again with the same token is `401`.
#[test]
fn a_listen_ends_when_its_token_expires() {
    let (http, notifier) = protected_everything();
    let (token, at) = expiring("carol", 2);
    let listen = body(
        14,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    let headers = with_token(mirrored("subscriptions/listen", None), &token);
    send_post(&mut socket, http.addr, &headers, &listen);
    let mut seen = String::new();
    assert!(read_for(&mut socket, "acknowledged", &mut seen), "{seen}");
    notifier.tools_list_changed();
    assert!(read_for(&mut socket, "list_changed", &mut seen), "{seen}");
    wait_past(at);
    notifier.tools_list_changed();
    let mut after = String::new();
    let delivered = read_for(&mut socket, "list_changed", &mut after);
    assert!(
        !delivered,
        "a notification reached a client whose token expired: {after}"
    );
    assert!(!after.contains("\"id\":14"), "a final result: {after}");
    let again = post(http.addr, &headers, &listen);
    assert_eq!(status(&again), 401, "{again}");
    assert!(again.contains("invalid_token"), "{again}");
}

/// Claim: the same, for a legacy session's GET stream
/// (`stream.rs`, `sessions.rs: open_stream`): opened with a token
/// that then expires, it goes on delivering the session's notifications.
/// On main: `tools/list_changed` is delivered after the expiry.
///
/// Fixed: as for a listen; the stream opened again with the same token is
/// `401`.
#[cfg(feature = "legacy")]
#[test]
fn a_legacy_get_stream_ends_when_its_token_expires() {
    let (http, notifier) = protected_everything();
    let (token, at) = expiring("dave", 2);
    let session = legacy_session(http.addr, &token);
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let sent = post(
        http.addr,
        &with_token(crate::http_legacy::headers(Some(&session), false), &token),
        &initialized.to_string(),
    );
    assert_eq!(status(&sent), 202, "{sent}");
    let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\nAuthorization: Bearer {token}\r\n\r\n",
        http.addr
    );
    std::io::Write::write_all(&mut socket, request.as_bytes()).unwrap();
    let mut seen = String::new();
    assert!(read_for(&mut socket, "\r\n\r\n", &mut seen), "{seen}");
    assert_eq!(status(&seen), 200, "{seen}");
    notifier.tools_list_changed();
    assert!(read_for(&mut socket, "list_changed", &mut seen), "{seen}");
    wait_past(at);
    notifier.tools_list_changed();
    let mut after = String::new();
    let delivered = read_for(&mut socket, "list_changed", &mut after);
    assert!(
        !delivered,
        "a notification reached a client whose token expired: {after}"
    );
    let again = raw(
        http.addr,
        request
            .replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(status(&again), 401, "{again}");
}

/// Claim: a session's owner is a subject or, without one, a client id,
/// compared as one string (`exchange.rs: owner`, `sessions.rs:
/// Store::kept`): a client-credentials token for a client named `alice`
/// (no `sub`) is taken for the user `alice`, and reaches her session.
/// Client ids and subjects are different namespaces, often from
/// different registrations (dynamic client registration lets a client
/// ask for its `client_name`; some servers use it as the id). On main:
/// the `cid.alice` token's request in `sub.alice`'s session is `200`.
#[cfg(feature = "legacy")]
#[test]
fn a_client_id_is_not_taken_for_a_subject_of_the_same_name() {
    let (http, _notifier) = protected_everything();
    let session = legacy_session(http.addr, "sub.alice");
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let own = post(
        http.addr,
        &with_token(
            crate::http_legacy::headers(Some(&session), false),
            "sub.alice",
        ),
        &list.to_string(),
    );
    assert_eq!(status(&own), 200, "{own}");
    let taken = post(
        http.addr,
        &with_token(
            crate::http_legacy::headers(Some(&session), false),
            "cid.alice",
        ),
        &list.to_string(),
    );
    assert_eq!(
        status(&taken),
        404,
        "a client reached a user's session: {taken}"
    );
}

/// An empty subject is no subject: two clients whose tokens carry
/// `sub: ""` (an authorization server that writes an empty `sub` for a
/// token of no user, a validator that maps a missing one to `""`) are
/// not one owner, and neither reaches the other's session. Before the
/// fix `TokenInfo::owner` took `""` for a subject like any other: the
/// `both..app-b` token's request in `both..app-a`'s session was `200`.
/// Now an empty subject (or client id) names no one, and the owner is
/// the client.
#[cfg(feature = "legacy")]
#[test]
fn an_empty_subject_is_no_owner_shared_by_every_client() {
    let (http, _notifier) = protected_everything();
    let session = legacy_session(http.addr, "both..app-a");
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let in_session = |token: &str| {
        post(
            http.addr,
            &with_token(crate::http_legacy::headers(Some(&session), false), token),
            &list.to_string(),
        )
    };
    let own = in_session("both..app-a");
    assert_eq!(status(&own), 200, "{own}");
    let other = in_session("both..app-b");
    assert_eq!(
        status(&other),
        404,
        "another client reached a session through an empty subject: {other}"
    );
}

/// Claim: a malformed `Authorization` (two fields; `Bearer` with
/// something no token is) is answered `400` without a challenge.
/// `auth.rs: bearer` returns `Refusal::new(400, ..)`, no
/// `WWW-Authenticate`; RFC 6750 section 3: a request that carries no
/// usable access token MUST be answered with `WWW-Authenticate`, and
/// section 3.1 names this case `error="invalid_request"` (`400`). A
/// client that follows the spec's discovery (the challenge's
/// `resource_metadata`) is left with nothing to discover from. On main:
/// no `WWW-Authenticate` in either answer.
#[test]
fn a_malformed_authorization_is_400_with_an_invalid_request_challenge() {
    let (http, _) = protected();
    let mut bad = mirrored("tools/list", None);
    bad.push(("Authorization".into(), "Bearer a,b".into()));
    let mut twice = with_token(mirrored("tools/list", None), TOKEN);
    twice.push(("Authorization".into(), format!("Bearer {TOKEN}")));
    for headers in [bad, twice] {
        let answer = post(http.addr, &headers, &body(6, "tools/list", json!({})));
        assert_eq!(status(&answer), 400, "{answer}");
        let challenge = header(&answer, "www-authenticate").unwrap_or("");
        assert!(
            challenge.starts_with(r#"Bearer error="invalid_request""#)
                && challenge.contains("resource_metadata="),
            "no invalid_request challenge: {answer}"
        );
    }
}

/// Claim (the brief's): a token that expires between two pipelined
/// requests on one kept-alive connection still serves the second. Wrong:
/// `tcp.rs: serve_request` clears the token and `check` validates
/// each request anew; the second is `401 invalid_token`. Passes on main.
#[test]
fn a_token_that_expires_between_pipelined_requests_does_not_serve_the_second() {
    let (http, _notifier) = protected_everything();
    let (token, at) = expiring("erin", 2);
    let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    let headers = with_token(mirrored("tools/list", None), &token);
    send_post(
        &mut socket,
        http.addr,
        &headers,
        &body(1, "tools/list", json!({})),
    );
    let mut seen = String::new();
    assert!(read_for(&mut socket, "\"tools\"", &mut seen), "{seen}");
    assert_eq!(status(&seen), 200, "{seen}");
    wait_past(at);
    send_post(
        &mut socket,
        http.addr,
        &headers,
        &body(2, "tools/list", json!({})),
    );
    // The rest of the first answer, then the second's.
    let mut second = String::new();
    read_for(&mut socket, "has expired", &mut second);
    assert!(
        second.contains("HTTP/1.1 401") && !second.contains("HTTP/1.1 200"),
        "the second request after the expiry: {second}"
    );
}

/// Claim 7 of review-46auth: a validator that panics with the token in
/// its message (an `expect`, an `unwrap` of a parse error that quotes its
/// input) has the token written to stderr by the process's panic hook,
/// before `auth.rs: authenticate`'s `catch_unwind` answers `500`. What a
/// library can promise stops there: replacing the process-wide hook is
/// the application's call (README "A library is a guest"), so
/// `HttpOptions::protected_resource` now says a validator must not panic
/// with the token in its message, and serve-http's validators do not
/// panic. What is promised, and tested here: the `500` carries no token,
/// and the server goes on serving (passed before the fix as well).
#[test]
fn a_panicking_validator_is_answered_500_without_the_token_and_the_server_goes_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let resource = ProtectedResource::new(&resource_id(listener.local_addr().unwrap()))
        .authorization_server("https://auth.example.com");
    let options = HttpOptions::new().protected_resource(resource, |token, _| match token {
        TOKEN => panic!("cannot read {token}: not a JWT"),
        _ => Ok(TokenInfo::new().subject("bob")),
    });
    let http = start_with(crate::everything::build(), listener, options);
    let answer = post(
        http.addr,
        &with_token(mirrored("tools/list", None), TOKEN),
        &body(1, "tools/list", json!({})),
    );
    assert_eq!(status(&answer), 500, "{answer}");
    assert!(!answer.contains(TOKEN), "the token in the answer: {answer}");
    let next = post(
        http.addr,
        &with_token(mirrored("tools/list", None), WRITER),
        &body(2, "tools/list", json!({})),
    );
    assert_eq!(status(&next), 200, "{next}");
}

/// Claim: a protected resource whose identifier or authorization server
/// is plain `http://` on a host other than loopback is served, and its
/// metadata sends clients to get tokens over clear text.
/// `auth.rs: ProtectedResource::unusable` takes any `http://` URI, while
/// `ProtectedResource::new`'s doc says "an absolute `https` URI (`http`
/// for loopback)", and spec 2026-07-28 basic/authorization
/// security-considerations ("Communication Security", OAuth 2.1 section
/// 1.5): every authorization server endpoint MUST be served over HTTPS.
/// (`serve-http`'s `--authorization-server` and `--oauth-resource` take
/// the same.) On main: `serve_http` serves, and the metadata names
/// `http://auth.example.com`.
#[test]
fn a_resource_or_issuer_in_clear_text_off_loopback_is_refused() {
    let resource = ProtectedResource::new("http://mcp.example.com/mcp")
        .authorization_server("http://auth.example.com");
    let options = HttpOptions::new().protected_resource(resource, |_, _| Ok(TokenInfo::new()));
    let http = crate::http::start(Server::builder("auth", "1.0.0").build(), options);
    // Refused, the listener is closed: the GET is refused or reset.
    let metadata = (|| {
        use std::io::{Read, Write};
        let mut socket = std::net::TcpStream::connect(http.addr).ok()?;
        socket.set_read_timeout(Some(crate::support::WAIT)).ok()?;
        let request = format!(
            "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            http.addr
        );
        socket.write_all(request.as_bytes()).ok()?;
        let mut out = String::new();
        socket.read_to_string(&mut out).ok()?;
        Some(out)
    })()
    .unwrap_or_default();
    assert!(
        !metadata.starts_with("HTTP/1.1 200"),
        "served, sending clients to an issuer in clear text: {metadata}"
    );
}

/// Claim: the scopes `require_scopes_for("prompts/get", Some(name), ..)`
/// asks for do not hold for the completions of that prompt's arguments.
/// `exchange.rs: operation_name` reads only a top-level `name` or `uri`;
/// `completion/complete` names its prompt (or resource template) in
/// `params.ref`, so `needed` asks only for what every request needs, and
/// a per-prompt rule cannot be written for it at all
/// (`require_scopes_for("completion/complete", Some("secret"), ..)`
/// never matches either). Completions are drawn from the same data the
/// prompt guards (customer names, file names). The same holds for a
/// `subscriptions/listen` naming a guarded resource's URI. On main:
/// `200`, the completion of `secret`'s argument, with a token that lacks
/// `secret:read`, while `prompts/get` of `secret` is `403`.
#[test]
fn a_prompts_scopes_hold_for_its_completions() {
    use mcp_stdio::types::{
        CompleteResult, CompletionReference, GetPromptResult, Prompt, PromptArgument,
        PromptMessage, Role,
    };
    let server = Server::builder("auth", "1.0.0")
        .prompt(
            Prompt::new("secret", "Guarded.")
                .argument(PromptArgument::new("customer", "Whom.", true)),
            |_, _| {
                Ok(GetPromptResult::new(vec![PromptMessage::text(
                    Role::User,
                    "guarded",
                )]))
            },
        )
        .completion(|_, params| match params.reference {
            CompletionReference::Prompt(p) if p.name == "secret" => {
                Ok(CompleteResult::new(vec!["customer-acme-corp".into()]))
            }
            _ => Ok(CompleteResult::new(Vec::new())),
        })
        .build();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let resource = ProtectedResource::new(&resource_id(listener.local_addr().unwrap()))
        .authorization_server("https://auth.example.com")
        .require_scopes(["mcp:tools"])
        .require_scopes_for("prompts/get", Some("secret"), ["secret:read"]);
    let options = HttpOptions::new().protected_resource(resource, |_, _| {
        Ok(TokenInfo::new().subject("eve").scopes(["mcp:tools"]))
    });
    let http = start_with(server, listener, options);
    let get = body(
        1,
        "prompts/get",
        json!({ "name": "secret", "arguments": { "customer": "a" } }),
    );
    let refused = post(
        http.addr,
        &with_token(mirrored("prompts/get", Some("secret")), TOKEN),
        &get,
    );
    assert_eq!(status(&refused), 403, "{refused}");
    let complete = body(
        2,
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "secret" },
                "argument": { "name": "customer", "value": "" } }),
    );
    let answer = post(
        http.addr,
        &with_token(mirrored("completion/complete", None), TOKEN),
        &complete,
    );
    assert!(
        !answer.contains("customer-acme-corp"),
        "a guarded prompt's completions without its scope: {answer}"
    );
}

/// review-46auth claim 10, its second half: a `subscriptions/listen`
/// naming a guarded resource's URI in `resourceSubscriptions` (and a
/// legacy `resources/subscribe` of it) is held to that resource's
/// `resources/read` scopes, while a listen for list changes alone is
/// not. Before the fix the listen was acknowledged (`200`): only the
/// scopes every request needs were asked for.
#[test]
fn a_resources_scopes_hold_for_a_listen_naming_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let resource = ProtectedResource::new(&resource_id(listener.local_addr().unwrap()))
        .authorization_server("https://auth.example.com")
        .require_scopes(["mcp:tools"])
        .require_scopes_for("resources/read", Some("test://watched-resource"), ["watch"]);
    let options = HttpOptions::new()
        .keep_alive_interval(Duration::from_millis(100))
        .protected_resource(resource, |_, _| {
            Ok(TokenInfo::new().subject("eve").scopes(["mcp:tools"]))
        });
    let http = start_with(crate::everything::build(), listener, options);
    let listen = |id: i64, filter: Value| {
        let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
        socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
        let headers = with_token(mirrored("subscriptions/listen", None), TOKEN);
        let request = body(
            id,
            "subscriptions/listen",
            json!({ "notifications": filter }),
        );
        send_post(&mut socket, http.addr, &headers, &request);
        let mut seen = String::new();
        read_for(&mut socket, "\r\n\r\n", &mut seen);
        seen
    };
    let guarded = listen(
        1,
        json!({ "resourceSubscriptions": ["test://watched-resource"] }),
    );
    assert_eq!(status(&guarded), 403, "{guarded}");
    assert!(
        header(&guarded, "www-authenticate").is_some_and(|c| c.contains("watch")),
        "{guarded}"
    );
    let open = listen(2, json!({ "toolsListChanged": true }));
    assert_eq!(status(&open), 200, "{open}");
    #[cfg(feature = "legacy")]
    {
        let session = legacy_session(http.addr, TOKEN);
        let subscribe = json!({ "jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
            "params": { "uri": "test://watched-resource" } });
        let answer = post(
            http.addr,
            &with_token(crate::http_legacy::headers(Some(&session), false), TOKEN),
            &subscribe.to_string(),
        );
        assert_eq!(status(&answer), 403, "{answer}");
    }
}

/// Writes a POST's head with `headers` (its `Content-Length` that of
/// `body`) on `socket`, then, once the clock is past `at`, its body.
fn send_post_late(
    socket: &mut std::net::TcpStream,
    addr: SocketAddr,
    headers: &[(String, String)],
    body: &str,
    at: SystemTime,
) {
    use std::io::Write;
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).unwrap();
    wait_past(at);
    socket.write_all(body.as_bytes()).unwrap();
}

/// Claim (review-46s2): a listen whose token expires after its head was
/// validated and before its body is in gets no HTTP response at all.
/// `tcp.rs: serve_request` validates the token when the head is in
/// (`check`), then reads the body (up to `header_timeout`, 10 s by
/// default); `exchange.rs: Exchange::request` then sets the listen's end
/// (`Body::end_at`) to a moment already past, so `body.rs: State::line`
/// drops the listen's first line, head included, and `Exchange::watch`
/// cuts the stream at its first look (`Watched::Expired`: write side shut,
/// connection closed). The client reads the connection's end and no
/// status line: not the `401 invalid_token` that would tell it to get a
/// fresh token (spec 2026-07-28 basic/authorization: an expired token
/// MUST be answered `401`), but what any client takes for a broken
/// server or proxy. On main: the connection ends with nothing read
/// (`seen` empty).
///
/// Fixed: once the body is read the token is checked again
/// (`auth::still_valid`, the head's check too), and the listen is
/// answered `401 invalid_token` before it is served.
#[test]
fn a_listen_whose_token_expires_while_its_body_comes_is_answered() {
    let (http, _notifier) = protected_everything();
    let (token, at) = expiring("grace", 0);
    let listen = body(
        21,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    let headers = with_token(mirrored("subscriptions/listen", None), &token);
    send_post_late(&mut socket, http.addr, &headers, &listen, at);
    let mut seen = String::new();
    read_for(&mut socket, "\r\n\r\n", &mut seen);
    assert!(
        seen.starts_with("HTTP/1.1 "),
        "the listen got no HTTP response: {seen:?}"
    );
    assert_eq!(status(&seen), 401, "{seen}");
    assert!(
        header(&seen, "www-authenticate").is_some_and(|c| c.contains("error=\"invalid_token\"")),
        "{seen}"
    );
}

/// Claim (review-46s2): any request whose token expires after its head
/// was validated and before its body is in is served as if the token
/// were valid. The expiry is looked at once, in `auth.rs: authenticate`
/// when the head is in (`tcp.rs: check`); a body may arrive up to
/// `header_timeout` later (10 s by default, as long as the application
/// sets), and nothing looks again (`Exchange::request` reads
/// `expires_at` only to end a listen). A client that holds its body back
/// past the expiry is served a `tools/call` with a token that has
/// expired (spec 2026-07-28 basic/authorization: an expired token MUST be
/// answered `401`). On main: `200` with the call's result.
///
/// Fixed: `tcp.rs: serve_request` checks the token again once the
/// body is read, with the head's own check (`auth::still_valid`): `401`
/// with `error="invalid_token"`.
#[test]
fn a_call_whose_token_expires_while_its_body_comes_is_401() {
    let (http, _notifier) = protected_everything();
    let (token, at) = expiring("heidi", 0);
    let call = body(
        22,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "late" } }),
    );
    let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    let headers = with_token(mirrored("tools/call", Some("echo")), &token);
    send_post_late(&mut socket, http.addr, &headers, &call, at);
    let mut seen = String::new();
    read_for(&mut socket, "\r\n\r\n", &mut seen);
    assert!(seen.starts_with("HTTP/1.1 "), "no HTTP response: {seen:?}");
    assert_eq!(
        status(&seen),
        401,
        "a request whose token expired was served: {seen}"
    );
    assert!(
        header(&seen, "www-authenticate").is_some_and(|c| c.contains("error=\"invalid_token\"")),
        "{seen}"
    );
}

/// Claim (review-46s2): a legacy session's notifications outlive the
/// token on a POST's stream, as they did on its GET stream before
/// fix-46srv. Without a GET stream, a resource update goes on the stream
/// of the session's newest POST still open that takes an event stream
/// (`sessions.rs`, module docs; the sessions' listener picks it). The
/// fix ends a listen and a GET stream at their token's expiry
/// (`Body::end_at`, set in `Exchange::request` for
/// `subscriptions/listen` only, and in `stream.rs`); a legacy POST's body
/// has no end, so a long call opened with a token that then expires
/// carries every update of the session to its client, for as long as the
/// call runs (the server is never asked about the token again).
/// On main: the update published after the expiry is read on the call's
/// stream (`resources/updated` seen a second time).
///
/// Fixed: each open POST keeps its token's expiry (`OpenPost::expires_at`)
/// and the sessions' listener chooses none whose token expired; the
/// call's own result still goes out.
#[cfg(feature = "legacy")]
#[test]
fn a_legacy_posts_stream_carries_no_update_past_its_tokens_expiry() {
    use crate::http_legacy::headers;
    let (http, notifier) = protected_everything();
    let (token, at) = expiring("ivan", 2);
    let session = legacy_session(http.addr, &token);
    let subscribe = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": { "uri": "mem://counter" } });
    let session_headers = with_token(headers(Some(&session), true), &token);
    let subscribed = post(http.addr, &session_headers, &subscribe.to_string());
    assert_eq!(status(&subscribed), 200, "{subscribed}");
    // A call that runs well past the expiry (`at` is at most 3 s away).
    let slow = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "slow", "arguments": { "ms": 6000 } } });
    let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
    socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    let mut call_headers = session_headers.clone();
    call_headers.push(("Connection".to_owned(), "close".to_owned()));
    send_post(&mut socket, http.addr, &call_headers, &slow.to_string());
    // The stream's head (a keep-alive comment makes it one): the POST is
    // open in its session.
    let mut seen = String::new();
    assert!(read_for(&mut socket, "\r\n\r\n", &mut seen), "{seen}");
    assert_eq!(status(&seen), 200, "{seen}");
    notifier.resource_updated("mem://counter");
    assert!(
        read_for(&mut socket, "resources/updated", &mut seen),
        "{seen}"
    );
    wait_past(at);
    notifier.resource_updated("mem://counter");
    let mut after = String::new();
    let delivered = read_for(&mut socket, "resources/updated", &mut after);
    assert!(
        !delivered,
        "an update reached a client whose token expired: {after}"
    );
    // The call itself, authorized when it came, is answered.
    assert!(
        after.contains("\"result\"") && after.contains("done"),
        "the call's own result did not go out: {after}"
    );
}

// ---------------------------------------------------------------------
// review-46z: the last hostile read of issue 46's fixes (merges
// b86fed9, e3fb152, 8d72548). Each test shows one claim and is ignored
// until it is fixed.
// ---------------------------------------------------------------------

/// Claim (review-46z): a legacy session opened with a token that names
/// no owner is reached by every other token, whoever it names
/// (src/server/request_meta.rs `Owner::admits`: `bound.is_none() ||
/// bound == caller`). fix-46s2 (`TokenInfo::owner`) moved tokens with an
/// empty subject and no client id into that class: before it a session
/// opened with `sub: ""` was bound to `Subject("")`, shared by the tokens
/// with `sub: ""` only; now it is bound to no one and shared by all. Seen
/// on main: the `sub.bob` token's request in the `sub.` token's session
/// was `200`. Suggested: with authorization on, a session opened by no
/// owner admits no owner only (`bound == caller`).
#[cfg(feature = "legacy")]
#[test]
fn a_session_of_no_owner_is_not_reached_by_a_named_subject() {
    let (http, _notifier) = protected_everything();
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    for opener in ["sub.", "nobody"] {
        let session = legacy_session(http.addr, opener);
        let in_session = |token: &str| {
            post(
                http.addr,
                &with_token(crate::http_legacy::headers(Some(&session), false), token),
                &list.to_string(),
            )
        };
        let own = in_session(opener);
        assert_eq!(status(&own), 200, "{opener}: {own}");
        let other = in_session("sub.bob");
        assert_eq!(
            status(&other),
            404,
            "bob reached the session opened with '{opener}': {other}"
        );
    }
}

/// Claim: a `requestState` sealed for one subject is accepted from
/// another. The seal (`mrtr.rs: Sealer::seal`) binds the method, a digest
/// of the request's parameters and an expiry, but not whom the request's
/// token stands for; the spec (basic/patterns/mrtr, Server Requirements
/// 5) says a server SHOULD include the authenticated principal and reject
/// a state presented by a different one, and a task is already bound to
/// its owner (`a_task_is_not_reached_by_another_subject`). On main: bob's
/// retry with alice's state is served (`"Hello, Alice!"`).
#[test]
fn a_request_state_is_refused_when_another_subject_presents_it() {
    let (http, _notifier) = protected_everything();
    let tool = "test_input_required_result_elicitation";
    let call = |token: &str, extra: Value| -> Value {
        let mut params = json!({ "name": tool, "arguments": {} });
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        params["_meta"] = crate::support::meta();
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({ "elicitation": {} });
        let request =
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
        let headers = with_token(mirrored("tools/call", Some(tool)), token);
        let answer = post(http.addr, &headers, &request.to_string());
        crate::http::events(&answer)
            .pop()
            .unwrap_or_else(|| json_body(&answer))
    };
    let first = call("sub.alice", json!({}));
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({ "user_name": { "action": "accept", "content": { "name": "Alice" } } });
    let retry = json!({ "requestState": state, "inputResponses": answer });
    for stranger in ["sub.bob", "cid.alice", "nobody"] {
        let taken = call(stranger, retry.clone());
        assert_eq!(
            taken["error"]["code"], -32602,
            "{stranger} used alice's state: {taken}"
        );
    }
    let own = call("sub.alice", retry);
    assert_eq!(
        own["result"]["content"][0]["text"], "Hello, Alice!",
        "{own}"
    );
}

/// Claim (review cap11): over HTTP the cap of 8 listens on one task is
/// counted per listener (`Followers`), so a subject that names another's
/// task in its listens takes places on it, and the task's owner can no
/// longer follow it. Tested false: the task is left out of a stranger's
/// listen (`Tasks::known`, `Owner::admits`) before any place is taken
/// (`Followers::follow`), so bob's 9 listens, kept open, take none:
/// alice's 8 follow her task, and only her ninth is left without it.
#[test]
fn another_subjects_listens_take_no_place_on_a_task() {
    let (http, _notifier) = protected_everything();
    let start = crate::tasks::task_request(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 30, "label": "mine" } }),
    );
    let created = post(
        http.addr,
        &with_token(mirrored("tools/call", Some("slow_compute")), "sub.alice"),
        &start.to_string(),
    );
    let created = crate::http::events(&created)
        .pop()
        .unwrap_or_else(|| json_body(&created));
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    // A listen on the task (and the tool list) with `token`, kept open:
    // its socket and what it read up to its acknowledgment's end.
    let listen = |token: &str| {
        let request = crate::tasks::task_request(
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": [task_id], "toolsListChanged": true } }),
        );
        let mut socket = std::net::TcpStream::connect(http.addr).unwrap();
        socket.set_read_timeout(Some(crate::support::WAIT)).unwrap();
        let headers = with_token(mirrored("subscriptions/listen", None), token);
        send_post(&mut socket, http.addr, &headers, &request.to_string());
        let mut seen = String::new();
        assert!(read_for(&mut socket, "acknowledged", &mut seen), "{seen}");
        assert!(read_for(&mut socket, "}\n\n", &mut seen), "{seen}");
        (socket, seen)
    };
    let strangers: Vec<_> = (0..9).map(|_| listen("sub.bob")).collect();
    for (_, seen) in &strangers {
        assert!(!seen.contains(&task_id), "bob follows alice's task: {seen}");
    }
    let own: Vec<_> = (0..8).map(|_| listen("sub.alice")).collect();
    for (_, seen) in &own {
        assert!(
            seen.contains(&task_id),
            "alice cannot follow her task: {seen}"
        );
    }
    let (_ninth, seen) = listen("sub.alice");
    assert!(!seen.contains(&task_id), "a ninth listen follows: {seen}");
    drop((strangers, own));
    let cancel = crate::tasks::task_request("tasks/cancel", json!({ "taskId": task_id }));
    post(
        http.addr,
        &with_token(mirrored("tasks/cancel", Some(&task_id)), "sub.alice"),
        &cancel.to_string(),
    );
}

/// A server with a `quick` task tool (done at once) keeping its tasks in
/// `store`, whose validator takes `sub.NAME` for the subject `NAME`.
fn quick_tasks(store: mcp_stdio::MemoryTaskStore) -> Http {
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("quick", "Done at once."),
            mcp_stdio::TaskMode::Required,
            |_ctx, _args: Value| Ok(CallToolResult::text("quick")),
        )
        .task_store(store)
        .build();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let resource = ProtectedResource::new(&resource_id(listener.local_addr().unwrap()))
        .authorization_server("https://auth.example.com");
    let options = HttpOptions::new().protected_resource(resource, |token, _| {
        match token.split('.').collect::<Vec<_>>().as_slice() {
            ["sub", name] => Ok(TokenInfo::new().subject(name)),
            ["iss", issuer, name] => Ok(TokenInfo::new().issuer(issuer).subject(name)),
            ["cid", issuer, name] => Ok(TokenInfo::new().issuer(issuer).client_id(name)),
            _ => Err(Unauthorized::invalid_token("unknown")),
        }
    });
    start_with(server, listener, options)
}

/// `method` on task `task_id` with `token`: the JSON-RPC answer.
fn task_method(addr: SocketAddr, method: &str, task_id: &str, token: &str) -> Value {
    let request = crate::tasks::task_request(method, json!({ "taskId": task_id }));
    let headers = with_token(mirrored(method, Some(task_id)), token);
    let answer = post(addr, &headers, &request.to_string());
    crate::http::events(&answer)
        .pop()
        .unwrap_or_else(|| json_body(&answer))
}

/// Starts a `quick` task with `token` and waits until it completed: its id.
fn quick_task(addr: SocketAddr, token: &str) -> String {
    let call =
        crate::tasks::task_request("tools/call", json!({ "name": "quick", "arguments": {} }));
    let headers = with_token(mirrored("tools/call", Some("quick")), token);
    let created = post(addr, &headers, &call.to_string());
    let created = crate::http::events(&created)
        .pop()
        .unwrap_or_else(|| json_body(&created));
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let deadline = std::time::Instant::now() + crate::support::WAIT;
    loop {
        let task = task_method(addr, "tasks/get", &id, token);
        if task["result"]["status"] == "completed" {
            return id;
        }
        assert!(std::time::Instant::now() < deadline, "still {task}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Claim (review seal14): one client evicts another's finished tasks
/// long before their TTL. The `MemoryTaskStore`, full, dropped the task
/// that finished longest ago, whoever made it: a client that makes
/// `capacity` quick tasks (1024 by default) wiped out every other
/// client's results, which `tasks/get` then called unknown, within a
/// `ttlMs` of an hour (the Tasks extension: "The server may discard the
/// task after the TTL elapses"). Now the owner who holds the most gives
/// its own oldest finished task first. (Moved from `tasks.rs`, where
/// both clients were anonymous: one owner, nobody to be fair between.)
#[test]
fn one_client_does_not_evict_another_clients_finished_task_before_its_ttl() {
    let http = quick_tasks(mcp_stdio::MemoryTaskStore::new(4));
    let mine = quick_task(http.addr, "sub.victim");
    for _ in 0..8 {
        quick_task(http.addr, "sub.attacker");
    }
    let resp = task_method(http.addr, "tasks/get", &mine, "sub.victim");
    assert_eq!(resp["result"]["status"], "completed", "{resp}");
}

/// Claim (review tasks15): a task's owner was the token's `sub` (else its
/// `client_id`) without its issuer, so a validator that trusts several
/// authorization servers let the user `alice` of one reach the tasks of
/// `alice` of another. Now an owner is the issuer and the subject (or
/// client) when the validator says the issuer (`TokenInfo::issuer`).
#[test]
fn a_task_is_not_reached_by_the_same_subject_of_another_issuer() {
    let http = quick_tasks(mcp_stdio::MemoryTaskStore::default());
    for (creator, strangers) in [
        ("iss.a.alice", ["iss.b.alice", "sub.alice", "cid.a.alice"]),
        ("cid.a.app", ["cid.b.app", "iss.a.app", "sub.app"]),
    ] {
        let task = quick_task(http.addr, creator);
        for method in ["tasks/get", "tasks/cancel"] {
            for stranger in strangers {
                let taken = task_method(http.addr, method, &task, stranger);
                assert_eq!(
                    taken["error"]["code"], -32602,
                    "{method} by {stranger} reached {creator}'s task: {taken}"
                );
            }
        }
        let own = task_method(http.addr, "tasks/get", &task, creator);
        assert_eq!(own["result"]["status"], "completed", "{own}");
    }
}

/// Claim (review tasks15): the principal a request state is sealed with
/// (`mrtr.rs: principal`) was the owner without its issuer, so `alice`
/// of another authorization server could present alice's state.
#[test]
fn a_request_state_is_refused_when_the_same_subject_of_another_issuer_presents_it() {
    let (http, _notifier) = protected_everything();
    let tool = "test_input_required_result_elicitation";
    let call = |token: &str, extra: Value| -> Value {
        let mut params = json!({ "name": tool, "arguments": {} });
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        params["_meta"] = crate::support::meta();
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({ "elicitation": {} });
        let request =
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
        let headers = with_token(mirrored("tools/call", Some(tool)), token);
        let answer = post(http.addr, &headers, &request.to_string());
        crate::http::events(&answer)
            .pop()
            .unwrap_or_else(|| json_body(&answer))
    };
    let first = call("iss.a.alice", json!({}));
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({ "user_name": { "action": "accept", "content": { "name": "Alice" } } });
    let retry = json!({ "requestState": state, "inputResponses": answer });
    for stranger in ["iss.b.alice", "sub.alice"] {
        let taken = call(stranger, retry.clone());
        assert_eq!(
            taken["error"]["code"], -32602,
            "{stranger} used alice's state: {taken}"
        );
    }
    let own = call("iss.a.alice", retry);
    assert_eq!(
        own["result"]["content"][0]["text"], "Hello, Alice!",
        "{own}"
    );
}
