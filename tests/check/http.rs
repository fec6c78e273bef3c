//! Over HTTP: a server that holds its body costs each request the wait,
//! a legacy server's sessions as the Python SDK keeps them, and a URL's
//! query (its secrets) kept out of the report.

use std::io::{BufReader, Read, Write};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Tests;
use crate::support::{check, check_within, loopback, outcome};

pub const TESTS: Tests = named![
    review_an_http_server_that_holds_its_body_costs_each_request_the_wait,
    review_a_session_id_never_given_is_not_a_terminated_session,
    a_urls_secrets_are_not_in_the_report,
];

/// An HTTP server that sends a response's head and then holds its body
/// (Content-Length: 100, nothing more): each POST of the checker's link
/// waits 60 s for it whatever `--wait` says (`http_link::HttpLink::post`
/// opens with a fixed 60 s), and `Facts::gather` runs on the main thread
/// with no deadline: `--wait 1` takes two minutes to say "could not be
/// reached".
fn review_an_http_server_that_holds_its_body_costs_each_request_the_wait() -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n",
            );
            held.push(stream);
        }
    });
    let began = Instant::now();
    let run = check_within(
        &["--wait", "1", "--url", &url],
        None,
        Duration::from_secs(60),
    );
    let took = began.elapsed();
    if run.status != Some(2) || took > Duration::from_secs(30) {
        return Err(format!(
            "status {:?} after {:.1} s: {}",
            run.status,
            took.as_secs_f64(),
            run.stderr
        ));
    }
    Ok(())
}

/// A legacy Streamable HTTP server as the Python SDK 1.x's session manager
/// answers: a request with a session id it never gave gets `400 Bad
/// Request: No valid session ID provided`. The sentence
/// `http.legacy-unknown-session` quotes ("The server MAY terminate the
/// session at any time, after which it MUST respond to requests
/// containing that session ID with HTTP 404 Not Found") is about a
/// session the server ended; 2025-11-25 says nothing of an id it never
/// gave. The checker fails it as a MUST.
fn review_a_session_id_never_given_is_not_a_terminated_session() -> Result<(), String> {
    let url = loopback(legacy_http_exchange)?;
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "1",
            "--only",
            "http.legacy-unknown-session",
            "--url",
            &url,
        ],
        None,
    );
    let checked = outcome(&run, "http.legacy-unknown-session")?;
    if checked["status"] == "fail" {
        return Err(format!("{} ({})", checked["status"], checked["reason"]));
    }
    Ok(())
}

/// Issue 46, item 5: the report named the server by its `--url` whole,
/// query included (the JSON summary's `"server"`, the transcript's
/// "checking URL"), and so did the refusal of a port that is not a
/// number.
fn a_urls_secrets_are_not_in_the_report() -> Result<(), String> {
    let url = loopback(legacy_http_exchange)?;
    let secret = format!("{url}?key=Q-SECRET");
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "1",
            "--only",
            "http.legacy-unknown-session",
            "--url",
            &secret,
        ],
        None,
    );
    outcome(&run, "http.legacy-unknown-session")?;
    let summary = format!("\"server\":\"{url}\"");
    if run.stdout.contains("Q-SECRET") || run.stderr.contains("Q-SECRET") {
        return Err(format!("the URL's query in: {}{}", run.stdout, run.stderr));
    }
    if !run.stdout.contains(&summary) {
        return Err(format!("no {summary} in: {}", run.stdout));
    }
    let bad_port = check(&["--url", "http://127.0.0.1:x/mcp?key=Q-SECRET"], None);
    if bad_port.stderr.contains("Q-SECRET") || !bad_port.stderr.contains("the port is not a number")
    {
        return Err(format!("status {:?}: {}", bad_port.status, bad_port.stderr));
    }
    Ok(())
}

/// One request to the legacy HTTP server above, answered.
fn legacy_http_exchange(stream: std::net::TcpStream) {
    use std::io::BufRead;
    let mut reader = BufReader::new(&stream);
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let length: usize = header("content-length")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, extra, text) = if message["method"] == "initialize" {
        let result = json!({ "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": { "name": "legacy-http", "version": "1" } });
        (
            "200 OK",
            "Mcp-Session-Id: s1\r\nContent-Type: application/json\r\n",
            json!({ "jsonrpc": "2.0", "id": message["id"], "result": result }).to_string(),
        )
    } else if message.get("id").is_none() {
        ("202 Accepted", "", String::new())
    } else if header("mcp-session-id").as_deref() != Some("s1") {
        (
            "400 Bad Request",
            "Content-Type: text/plain\r\n",
            "Bad Request: No valid session ID provided".to_owned(),
        )
    } else if message["method"] == "ping" {
        (
            "200 OK",
            "Content-Type: application/json\r\n",
            json!({ "jsonrpc": "2.0", "id": message["id"], "result": {} }).to_string(),
        )
    } else {
        (
            "200 OK",
            "Content-Type: application/json\r\n",
            json!({ "jsonrpc": "2.0", "id": message["id"],
                "error": { "code": -32601, "message": "Method not found" } })
            .to_string(),
        )
    };
    let _ = (&stream).write_all(
        format!(
            "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        )
        .as_bytes(),
    );
}
