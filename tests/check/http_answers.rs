//! The `http.*` checks that read an answer's body themselves judge it as
//! the session does (`driver::Head`): a member twice, both `result` and
//! `error`, an `error` that is not an object is a malformed answer, a
//! failure that says so; an error holding what the checker cannot read
//! is a skip; over HTTP as over stdio.

use std::io::{BufReader, Read, Write};

use serde_json::{Value, json};

use crate::Tests;
use crate::support::{check, loopback, outcome};

pub const TESTS: Tests = named![
    review_an_unreadable_error_over_http_is_a_skip_as_over_stdio,
    an_http_check_judges_a_malformed_answer_as_the_session_does,
    an_http_check_judges_a_malformed_answer_in_an_event_stream_too,
];

/// The body of the answer to an unknown method, given the request's id.
type Unknown = fn(&Value) -> String;

/// A modern Streamable HTTP server on loopback that answers
/// `server/discover`, accepts notifications, and answers anything else
/// HTTP 404 with `unknown(id)` as its body: its URL.
fn modern_http_server(unknown: Unknown) -> Result<String, String> {
    loopback(move |stream| answer(stream, unknown))
}

/// One request to the server above.
fn answer(stream: std::net::TcpStream, unknown: Unknown) {
    use std::io::BufRead;
    let mut reader = BufReader::new(&stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, text) = if message["method"] == "server/discover" {
        let result = json!({ "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {},
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "http-answers", "version": "1" } } });
        let answer = json!({ "jsonrpc": "2.0", "id": message["id"], "result": result });
        ("200 OK", answer.to_string())
    } else if message.get("id").is_none() {
        ("202 Accepted", String::new())
    } else {
        ("404 Not Found", unknown(&message["id"]))
    };
    let kind = if text.is_empty() {
        ""
    } else if text.starts_with("event:") {
        "Content-Type: text/event-stream\r\n"
    } else {
        "Content-Type: application/json\r\n"
    };
    let _ = (&stream).write_all(
        format!(
            "HTTP/1.1 {status}\r\n{kind}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        )
        .as_bytes(),
    );
}

/// A modern Streamable HTTP server whose errors hold `1e400` in `data`
/// (its unknown-method answer: HTTP 404 and that error). Over the
/// session (`jsonrpc.method-not-found`) the answer is read for its id and
/// kind, and the check skips, as over stdio; but `http.unknown-method-404`
/// reads the body with `Value` only (`http_link::exchange`): "no JSON-RPC
/// response", a MUST failed for the checker's limit (review of check13).
fn review_an_unreadable_error_over_http_is_a_skip_as_over_stdio() -> Result<(), String> {
    let url = modern_http_server(|id| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"Method not found","data":1e400}}}}"#
        )
    })?;
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "http.unknown-method-404,jsonrpc.method-not-found",
            "--url",
            &url,
        ],
        None,
    );
    for id in ["http.unknown-method-404", "jsonrpc.method-not-found"] {
        let checked = outcome(&run, id)?;
        let reason = checked["reason"].as_str().unwrap_or_default();
        if checked["status"] != "skip" || !reason.contains("number out of range") {
            return Err(format!(
                "status {:?}; {id} {} ({reason})",
                run.status, checked["status"]
            ));
        }
    }
    Ok(())
}

/// A modern HTTP server whose unknown-method answer (HTTP 404) is
/// malformed: `error` twice (the last -32601), both `result` and
/// `error` (-32601), an `error` that is a string. Over the session
/// (`jsonrpc.method-not-found`) each is "a malformed response", a
/// failure at its level; `http.unknown-method-404` read the body with `Value`, which
/// keeps the last of a member twice: it passed the first two ("404 and
/// -32601") and failed the third without saying why.
fn an_http_check_judges_a_malformed_answer_as_the_session_does() -> Result<(), String> {
    let servers: [(&str, Unknown); 3] = [
        ("`error` twice", |id| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000,"message":"x"}},"error":{{"code":-32601,"message":"Method not found"}}}}"#
            )
        }),
        ("both", |id| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{}},"error":{{"code":-32601,"message":"Method not found"}}}}"#
            )
        }),
        ("`error` is \"-32601\"", |id| {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"error":"-32601"}}"#)
        }),
    ];
    let mut wrong = Vec::new();
    for (why, unknown) in servers {
        let url = modern_http_server(unknown)?;
        let run = check(
            &[
                "--format",
                "json",
                "--wait",
                "2",
                "--only",
                "http.unknown-method-404,jsonrpc.method-not-found",
                "--url",
                &url,
            ],
            None,
        );
        for id in ["http.unknown-method-404", "jsonrpc.method-not-found"] {
            let checked = outcome(&run, id)?;
            let reason = checked["reason"].as_str().unwrap_or_default();
            // Failed at the check's level: `fail` for a MUST, `warn` for
            // a SHOULD (`jsonrpc.method-not-found`).
            let failed = checked["status"] == "fail" || checked["status"] == "warn";
            if !failed || !reason.contains("malformed") || !reason.contains(why) {
                wrong.push(format!("{why}: {id} {} ({reason})", checked["status"]));
            }
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("; ")),
    }
}

/// Review review-fixes15c. Claim: an answer in an event stream (a
/// `text/event-stream` 404, its one event the answer) is not judged:
/// `error` twice passes as "404 and -32601". False: the event that ends
/// the stream is judged as a JSON body is (`http_link::exchange`).
fn an_http_check_judges_a_malformed_answer_in_an_event_stream_too() -> Result<(), String> {
    let url = modern_http_server(|id| {
        format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32000,\"message\":\"x\"}},\"error\":{{\"code\":-32601,\"message\":\"Method not found\"}}}}\n\n"
        )
    })?;
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "http.unknown-method-404",
            "--url",
            &url,
        ],
        None,
    );
    let checked = outcome(&run, "http.unknown-method-404")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    match checked["status"] == "fail" && reason.contains("malformed") {
        true => Ok(()),
        false => Err(format!("{} ({reason})", checked["status"])),
    }
}
