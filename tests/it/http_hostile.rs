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

    // Params the check cannot read (a member twice: which one would the
    // handler read?) are refused, not compared with one of the two.
    let twice = body(24, "tools/call", echo.clone()).replacen(
        r#""name":"echo""#,
        r#""name":"add","name":"echo""#,
        1,
    );
    assert!(twice.contains(r#""name":"add","name":"echo""#), "{twice}");
    let response = post(http.addr, &headers("tools/call", Some("echo"), &[]), &twice);
    assert_eq!(status(&response), 400, "{response}");
    assert_eq!(error_code(&response), -32020, "{response}");

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

/// Set in the environment of this test binary run again as the server of
/// [`memory_follows_the_bytes_not_the_declared_length`].
const CHILD_ENV: &str = "MCP_STDIO_IT_HTTP_MEMORY_CHILD";
const MEMORY_TEST: &str = "http_hostile::memory_follows_the_bytes_not_the_declared_length";

/// Issue 43, item 2: memory follows the bytes, not the promise. A real
/// server process (this test binary run again, as [`serve_as_child`]);
/// 64 connections each declare the largest body (4 MiB), fixed-length
/// and then chunked, and send one byte; the server's peak RSS (`VmHWM`)
/// must stay within a small bound of where it began. Each connection sends
/// its head with `Expect: 100-continue` and its byte once `100 Continue`
/// says the server is reading the body; then all close their sending side
/// and read the `400` that ends each body, so every body was being read at
/// once, and each read has ended, when the peak is read. Before, each
/// declared body was allocated and zeroed whole at once: 256 MiB.
#[test]
fn memory_follows_the_bytes_not_the_declared_length() {
    if std::env::var_os(CHILD_ENV).is_some() {
        serve_as_child();
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", MEMORY_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child_out = child.stdout.take().unwrap();
    let (addr_tx, addr_rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(child_out).lines() {
            let Ok(line) = line else { return };
            // After libtest's "test <name> ... ", on the same line.
            if let Some((_, addr)) = line.split_once("listening on ") {
                let _ = addr_tx.send(addr.parse::<std::net::SocketAddr>().unwrap());
            }
        }
    });
    let checked = std::panic::catch_unwind(|| {
        let addr = addr_rx
            .recv_timeout(WAIT)
            .expect("the child server's address");
        let before = kib(child.id(), "VmRSS:");
        let mut grew = Vec::new();
        for chunked in [false, true] {
            hold_64_bodies_of_one_byte(addr, chunked);
            grew.push(kib(child.id(), "VmHWM:").saturating_sub(before));
        }
        grew
    });
    // The child ends with its input (`serve_as_child`); killed if it
    // does not in time.
    drop(child.stdin.take());
    let deadline = Instant::now() + WAIT;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    let grew = checked.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    assert!(
        grew.iter().all(|&kib| kib < 16 * 1024),
        "the server's peak RSS grew by {} KiB (fixed-length bodies), then {} KiB (chunked): \
         64 bodies of 4 MiB were allocated on their promise",
        grew[0],
        grew[1]
    );
}

/// The server of [`memory_follows_the_bytes_not_the_declared_length`]:
/// the everything server on a loopback port, printed on stdout; it stops
/// when its input ends, and the process exits.
fn serve_as_child() -> ! {
    let server = crate::everything::build();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    println!("listening on {}", listener.local_addr().unwrap());
    let stop = server.stop_handle();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        stop.stop();
    });
    let served = server.serve_http(listener, HttpOptions::new());
    std::process::exit(i32::from(served.is_err()));
}

/// 64 connections, each reading a body declared 4 MiB long (fixed-length
/// or one chunk) of which it got one byte; then each ends its body early
/// and reads the `400` that answers it.
fn hold_64_bodies_of_one_byte(addr: std::net::SocketAddr, chunked: bool) {
    use std::io::Write;
    const MAX: usize = 4 * 1024 * 1024;
    let framing = if chunked {
        "Transfer-Encoding: chunked".to_owned()
    } else {
        format!("Content-Length: {MAX}")
    };
    let mut head =
        format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nExpect: 100-continue\r\n{framing}\r\n");
    for (name, value) in mirrored("tools/list", None) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let byte = if chunked {
        format!("{MAX:x}\r\n{{")
    } else {
        "{".to_owned()
    };
    let sockets: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut socket = TcpStream::connect(addr).unwrap();
            socket.set_read_timeout(Some(WAIT)).unwrap();
            socket.write_all(head.as_bytes()).unwrap();
            let mut continued = [0u8; 25];
            socket.read_exact(&mut continued).unwrap();
            assert_eq!(&continued, b"HTTP/1.1 100 Continue\r\n\r\n");
            socket.write_all(byte.as_bytes()).unwrap();
            socket
        })
        .collect();
    for mut socket in sockets {
        socket.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = String::new();
        socket.read_to_string(&mut out).unwrap();
        assert_eq!(status(&out), 400, "{out}");
    }
}

/// A `/proc/<pid>/status` figure, in KiB.
fn kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// Issue 47, item 13: a header the spec's checks read, sent twice, is
/// refused (`400`), as `Host` is: the check would compare the first value
/// while a gateway routing on the last, or on both joined, sees another
/// method, tool, version or session. Before, each case but `Host` passed
/// the check on its first value and ran (`200`). A header mirrored from
/// the body is malformed sent twice: `-32020` (2026-07-28 "Server
/// Validation"; it was `-32600` on this branch until the review of issue
/// 43 asked for `-32020`); the others `-32600`.
#[test]
fn a_checked_header_sent_twice_is_refused() {
    let http = with_annotated_tool();
    let echo = body(
        31,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "x" } }),
    );
    let sql = body(
        32,
        "tools/call",
        json!({ "name": "sql", "arguments": { "region": "west" } }),
    );
    let twice = |base: Vec<(String, String)>, name: &str, second: &str| {
        let mut headers = base;
        headers.push((name.to_owned(), second.to_owned()));
        headers
    };
    let cases = [
        (
            "Mcp-Method",
            twice(
                mirrored("tools/call", Some("echo")),
                "Mcp-Method",
                "tools/list",
            ),
            &echo,
        ),
        (
            "Mcp-Name",
            twice(mirrored("tools/call", Some("echo")), "mcp-name", "add"),
            &echo,
        ),
        (
            "MCP-Protocol-Version",
            twice(
                mirrored("tools/call", Some("echo")),
                "MCP-Protocol-Version",
                "2025-11-25",
            ),
            &echo,
        ),
        (
            "Mcp-Param-Region",
            {
                let mut headers = mirrored("tools/call", Some("sql"));
                headers.push(("Mcp-Param-Region".into(), "west".into()));
                headers.push(("Mcp-Param-Region".into(), "east".into()));
                headers
            },
            &sql,
        ),
        (
            "Mcp-Session-Id",
            twice(
                twice(mirrored("tools/call", Some("echo")), "Mcp-Session-Id", "a"),
                "Mcp-Session-Id",
                "b",
            ),
            &echo,
        ),
        (
            "Origin",
            twice(
                twice(
                    mirrored("tools/call", Some("echo")),
                    "Origin",
                    "http://localhost",
                ),
                "Origin",
                "http://evil.example",
            ),
            &echo,
        ),
        (
            "Content-Type",
            twice(
                mirrored("tools/call", Some("echo")),
                "Content-Type",
                "text/plain",
            ),
            &echo,
        ),
    ];
    let mut passed = Vec::new();
    for (name, headers, call) in cases {
        let response = post(http.addr, &headers, call);
        if status(&response) != 400 {
            passed.push(format!("{name}: {}", response.lines().next().unwrap_or("")));
            continue;
        }
        let message = json_body(&response)["error"]["message"].to_string();
        assert!(
            message.contains("more than once") && message.contains(&name.to_lowercase()),
            "{name}: {message}"
        );
        let mirrored = name.starts_with("Mcp-Param")
            || ["Mcp-Method", "Mcp-Name", "MCP-Protocol-Version"].contains(&name);
        let code = if mirrored { -32020 } else { -32600 };
        assert_eq!(error_code(&response), code, "{name}: {message}");
    }
    assert!(
        passed.is_empty(),
        "{} duplicated headers not refused:\n{}",
        passed.len(),
        passed.join("\n")
    );
    // Lists (`Accept`) may come in several fields.
    let mut headers = mirrored("tools/call", Some("echo"));
    headers.push(("Accept".into(), "text/event-stream".into()));
    assert_eq!(status(&post(http.addr, &headers, &echo)), 200);
}
