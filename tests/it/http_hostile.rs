//! Streamable HTTP as an attacker or a careless peer finds it (issue 43):
//! the header check with members it does not need beside the ones it does,
//! connections that send nothing.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mcp_stdio::HttpOptions;
use mcp_stdio::types::{CallToolResult, Tool};
use serde_json::{Value, json};

use crate::http::{body, error_code, json_body, mirrored, post, start, status};
use crate::support::WAIT;

/// The everything server with a tool whose `region` argument is mirrored
/// in `Mcp-Param-Region` and `limit` in `Mcp-Param-Limit`.
fn with_annotated_tool() -> crate::http::Http {
    let tool = Tool::new("sql", "Runs a query in a region.").input_schema(json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "limit": { "type": "integer", "x-mcp-header": "Limit" }
        }
    }));
    let server = crate::everything::build_with(|builder| {
        builder.tool(tool, |_ctx, args: Value| {
            Ok(CallToolResult::text(args["region"].as_str().unwrap_or("")))
        })
    });
    start(server, HttpOptions::new())
}

/// A case: its name, the method, the headers, the params.
type Case = (&'static str, &'static str, Vec<(String, String)>, Value);

/// Spec 2026-07-28 basic/transports/streamable-http, "Server Validation":
/// a header that does not match the body is refused, whatever else the
/// params hold. Each case has a member the check does not read, of the
/// wrong type, beside the ones it does; before, that member made the one
/// typed read of the params fail, the check compared nothing, and the
/// request ran (`200`).
#[test]
fn a_mistyped_member_beside_the_mirrored_ones_does_not_skip_the_check() {
    let http = with_annotated_tool();
    let headers = |method: &str, name: Option<&str>, extra: &[(&str, &str)]| {
        let mut headers = mirrored(method, name);
        headers.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        headers
    };
    let echo = json!({ "name": "echo", "arguments": { "text": "x" } });
    let with = |params: &Value, member: &str| {
        let mut params = params.clone();
        params[member] = json!(5);
        params
    };
    let mut no_version = headers("tools/call", Some("echo"), &[]);
    no_version.retain(|(n, _)| n != "MCP-Protocol-Version");
    let mut legacy_version = headers("tools/call", Some("echo"), &[]);
    legacy_version[2].1 = "2025-11-25".into();
    let sql = |arguments: Value| json!({ "name": "sql", "arguments": arguments });
    let cases: Vec<Case> = vec![
        (
            "Mcp-Name of tools/call, taskId: 5 beside",
            "tools/call",
            headers("tools/call", Some("add"), &[]),
            with(&echo, "taskId"),
        ),
        (
            "Mcp-Name of tools/call, uri: 5 beside",
            "tools/call",
            headers("tools/call", Some("add"), &[]),
            with(&echo, "uri"),
        ),
        (
            "Mcp-Name of resources/read, name: 5 beside",
            "resources/read",
            headers("resources/read", Some("test://static-binary"), &[]),
            json!({ "uri": "test://static-text", "name": 5 }),
        ),
        (
            "Mcp-Name of prompts/get, uri: 5 beside",
            "prompts/get",
            headers("prompts/get", Some("greet"), &[]),
            json!({ "name": "test_simple_prompt", "uri": 5 }),
        ),
        (
            "Mcp-Name of tasks/get, name: 5 beside",
            "tasks/get",
            headers("tasks/get", Some("other"), &[]),
            json!({ "taskId": "abc", "name": 5 }),
        ),
        (
            "Mcp-Name of tasks/update, uri: 5 beside",
            "tasks/update",
            headers("tasks/update", Some("other"), &[]),
            json!({ "taskId": "abc", "inputResponses": {}, "uri": 5 }),
        ),
        (
            "Mcp-Name of tasks/cancel, name: 5 beside",
            "tasks/cancel",
            headers("tasks/cancel", Some("other"), &[]),
            json!({ "taskId": "abc", "name": 5 }),
        ),
        (
            "Mcp-Param-Region different, taskId: 5 beside",
            "tools/call",
            headers("tools/call", Some("sql"), &[("Mcp-Param-Region", "east")]),
            with(&sql(json!({ "region": "west" })), "taskId"),
        ),
        (
            "Mcp-Param-Region missing, uri: 5 beside",
            "tools/call",
            headers("tools/call", Some("sql"), &[]),
            with(&sql(json!({ "region": "west" })), "uri"),
        ),
        (
            "Mcp-Param-Limit for no argument, taskId: 5 beside",
            "tools/call",
            headers(
                "tools/call",
                Some("sql"),
                &[("Mcp-Param-Region", "west"), ("Mcp-Param-Limit", "3")],
            ),
            with(&sql(json!({ "region": "west" })), "taskId"),
        ),
        (
            "no version header, uri: 5 beside",
            "tools/call",
            no_version,
            with(&echo, "uri"),
        ),
        (
            "a legacy version header, uri: 5 beside",
            "tools/call",
            legacy_version,
            with(&echo, "uri"),
        ),
        (
            "a name the check cannot read as a string",
            "tools/call",
            headers("tools/call", Some("5"), &[]),
            json!({ "name": 5, "arguments": {} }),
        ),
    ];
    let mut failed = Vec::new();
    for (case, method, headers, params) in cases {
        let response = post(http.addr, &headers, &body(21, method, params));
        if status(&response) != 400 || error_code(&response) != -32020 {
            failed.push(format!("{case}: {}", response.lines().last().unwrap_or("")));
        } else {
            assert_eq!(json_body(&response)["id"], 21, "{case}");
        }
    }
    assert!(
        failed.is_empty(),
        "{} cases not refused with -32020:\n{}",
        failed.len(),
        failed.join("\n")
    );

    // The check reads only the members it needs: with the headers right, a
    // member it does not read is the kernel's to judge (here, ignored).
    let response = post(
        http.addr,
        &headers("tools/call", Some("echo"), &[]),
        &body(22, "tools/call", with(&echo, "taskId")),
    );
    assert_eq!(status(&response), 200, "{response}");
    assert_eq!(json_body(&response)["result"]["content"][0]["text"], "x");
    let response = post(
        http.addr,
        &headers("tools/call", Some("sql"), &[("Mcp-Param-Region", "west")]),
        &body(
            23,
            "tools/call",
            with(&sql(json!({ "region": "west" })), "uri"),
        ),
    );
    assert_eq!(status(&response), 200, "{response}");
    assert_eq!(json_body(&response)["result"]["content"][0]["text"], "west");
}

/// Issue 43, item 3: connections that send nothing cannot lock others out.
/// 300 connections that never send a byte (at the default cap of 64),
/// then 5 fresh clients, one after another: each is served at once, the
/// silent connections giving way. Before, the first 64 held every place
/// for the 60 s idle timeout and everything after them was `503`.
#[test]
fn silent_connections_give_way_to_fresh_clients_at_the_cap() {
    let http = start(crate::everything::build(), HttpOptions::new());
    let silent: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect_timeout(&http.addr, WAIT).unwrap())
        .collect();
    let began = Instant::now();
    for id in 0..5 {
        let response = post(
            http.addr,
            &mirrored("tools/list", None),
            &body(id, "tools/list", json!({})),
        );
        assert_eq!(status(&response), 200, "fresh client {id}: {response}");
    }
    let took = began.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "5 fresh clients took {took:?}"
    );
    drop(silent);
}

/// Issue 43, item 3: a connection that has sent nothing is on the header
/// clock, not the idle timeout: it is closed once `header_timeout` passed
/// (here 300 ms, the idle timeout 60 s). Before, it stayed open for the
/// idle timeout.
#[test]
fn a_connection_that_sends_nothing_is_closed_at_the_header_timeout() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().header_timeout(Duration::from_millis(300)),
    );
    let mut silent = TcpStream::connect(http.addr).unwrap();
    silent.set_read_timeout(Some(WAIT)).unwrap();
    let began = Instant::now();
    let mut out = Vec::new();
    let closed = silent.read_to_end(&mut out);
    assert!(
        closed.is_ok(),
        "still open after {:?}: {closed:?}",
        began.elapsed()
    );
    assert!(out.is_empty(), "nothing is answered to silence: {out:?}");
}
