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

// ---------------------------------------------------------------------------
// The review of issue 43 (review-43): claims, each a test that failed on
// the code as merged.
// ---------------------------------------------------------------------------

/// Spec 2026-07-28 basic/transports/streamable-http, "Server Validation":
/// the check exists because "different components in the network rely on
/// different sources of truth". A mirrored header sent twice is two truths:
/// the server compares the first (`HttpHeaders::get`), a balancer may route
/// on the last or on both joined (`echo, add`, RFC 9110 section 5.3). None
/// of these headers is a list, so one sent twice must be refused with
/// `-32020`. Each case repeats one header: the first copy matches the body,
/// the second does not.
#[test]
fn a_mirrored_header_sent_twice_is_refused() {
    let http = with_annotated_tool();
    let echo = json!({ "name": "echo", "arguments": { "text": "x" } });
    let sql = json!({ "name": "sql", "arguments": { "region": "west" } });
    let with = |method: &str, name: &str, extra: &[(&str, &str)]| {
        let mut headers = mirrored(method, Some(name));
        headers.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        headers
    };
    let cases: Vec<Case> = vec![
        (
            "Mcp-Name: echo, then Mcp-Name: add",
            "tools/call",
            with("tools/call", "echo", &[("mcp-name", "add")]),
            echo.clone(),
        ),
        (
            "Mcp-Method: tools/call, then Mcp-Method: tools/list",
            "tools/call",
            with("tools/call", "echo", &[("Mcp-Method", "tools/list")]),
            echo.clone(),
        ),
        (
            "Mcp-Param-Region: west, then Mcp-Param-Region: east",
            "tools/call",
            with(
                "tools/call",
                "sql",
                &[("Mcp-Param-Region", "west"), ("Mcp-Param-Region", "east")],
            ),
            sql,
        ),
        (
            "MCP-Protocol-Version: 2026-07-28, then 2025-11-25",
            "tools/call",
            with(
                "tools/call",
                "echo",
                &[("MCP-Protocol-Version", "2025-11-25")],
            ),
            echo,
        ),
    ];
    let mut failed = Vec::new();
    for (case, method, headers, params) in cases {
        let response = post(http.addr, &headers, &body(31, method, params));
        if status(&response) != 400 || error_code(&response) != -32020 {
            failed.push(format!("{case}: {}", response.lines().last().unwrap_or("")));
        }
    }
    assert!(
        failed.is_empty(),
        "{} headers sent twice not refused with -32020:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Spec 2026-07-28, "Server Validation": integers compare numerically,
/// and `x-mcp-header` integers MUST be within JavaScript's safe range
/// (±(2^53 - 1)). `same` compares through `f64`, where 2^53 and 2^53 + 1
/// are one number: a balancer routes on the header's shard
/// 9007199254740992 while the handler reads 9007199254740993 from the
/// body. A body integer past the safe range cannot be compared exactly:
/// refused (`-32020`), as is a header that names another integer.
#[test]
fn an_integer_past_the_safe_range_does_not_match_its_neighbour() {
    let http = with_annotated_tool();
    let headers = |limit: &str| {
        let mut headers = mirrored("tools/call", Some("sql"));
        headers.push(("Mcp-Param-Region".into(), "west".into()));
        headers.push(("Mcp-Param-Limit".into(), limit.into()));
        headers
    };
    let params = json!({
        "name": "sql",
        "arguments": { "region": "west", "limit": 9_007_199_254_740_993_u64 }
    });
    let response = post(
        http.addr,
        &headers("9007199254740992"),
        &body(32, "tools/call", params),
    );
    assert_eq!(
        (status(&response), error_code_or_none(&response)),
        (400, Some(-32020)),
        "header 9007199254740992, body 9007199254740993: {response}"
    );
}

/// The JSON-RPC error code of a response, if its body has one.
fn error_code_or_none(response: &str) -> Option<i64> {
    let (_, body) = response.split_once("\r\n\r\n")?;
    serde_json::from_str::<Value>(body).ok()?["error"]["code"].as_i64()
}

/// RFC 9112 section 7.1: a chunked body may come in chunks of any size. A
/// client that streams its JSON as it encodes it (Python's
/// `json.JSONEncoder.iterencode` under `requests`, Node's `req.write` per
/// piece) sends many small chunks. `read_chunked` charges each chunk's
/// size line and the line ending after its data to the head's budget
/// (`max_head_bytes`, 16 KiB): 5 bytes a chunk, so a body of 64 KiB in
/// 16-byte chunks, well within the 4 MiB body limit, is refused `431`
/// with "the request line or header fields are larger than this server
/// accepts", which is not what was wrong.
#[test]
fn a_body_in_small_chunks_within_the_limit_is_read() {
    use std::io::Write;
    let http = crate::http::everything();
    let addr = http.addr;
    let text = "x".repeat(64 * 1024);
    let call = body(
        33,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": text } }),
    );
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n"
    );
    for (name, value) in mirrored("tools/call", Some("echo")) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    for chunk in call.as_bytes().chunks(16) {
        request.push_str(&format!("{:x}\r\n", chunk.len()));
        request.push_str(std::str::from_utf8(chunk).unwrap());
        request.push_str("\r\n");
    }
    request.push_str("0\r\n\r\n");
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    // Written on a thread: a server that refuses early stops reading.
    let mut writer = socket.try_clone().unwrap();
    let sent = std::thread::spawn(move || {
        let _ = writer.write_all(request.as_bytes());
    });
    let mut out = Vec::new();
    let _ = socket.read_to_end(&mut out);
    sent.join().unwrap();
    let response = String::from_utf8_lossy(&out);
    assert!(
        response.starts_with("HTTP/1.1 200"),
        "a 64 KiB body in 16-byte chunks: {}",
        response.lines().last().unwrap_or("")
    );
    assert_eq!(json_body(&response)["result"]["content"][0]["text"], text);
}

/// Issue 43, item 3, read by an attacker: a connection that sent one byte
/// of its head (or its whole head and none of its body) counts as serving
/// a request (`OpenConnections::serving`), so it never gives way at the
/// cap. 64 such connections, each sending a byte every 100 ms, hold every
/// place for `header_timeout` (10 s), and again after reconnecting: fresh
/// clients get `503` throughout. Expected: a connection still reading its
/// request gives way like a silent one (the one reading longest first),
/// so 5 fresh clients are served within a few seconds. Two variants: the
/// head trickles; the head is complete and the body trickles.
#[test]
fn connections_trickling_their_request_give_way_to_fresh_clients_at_the_cap() {
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut failed = Vec::new();
    for variant in ["a head", "a body"] {
        let http = crate::http::everything();
        let addr = http.addr;
        let done = Arc::new(AtomicBool::new(false));
        let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 1000\r\n");
        for (name, value) in mirrored("tools/list", None) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let (first, each) = match variant {
            "a head" => ("P".to_owned(), b"O"),
            _ => (format!("{head}{{"), b" "),
        };
        let tricklers: Vec<_> = (0..64)
            .map(|_| {
                let mut socket = TcpStream::connect(addr).unwrap();
                socket.set_nodelay(true).unwrap();
                socket.write_all(first.as_bytes()).unwrap();
                let done = Arc::clone(&done);
                std::thread::spawn(move || {
                    let until = Instant::now() + Duration::from_secs(8);
                    while !done.load(Ordering::Relaxed)
                        && Instant::now() < until
                        && socket.write_all(each).is_ok()
                    {
                        // The attacker's pace: a byte every 100 ms.
                        std::thread::sleep(Duration::from_millis(100));
                    }
                })
            })
            .collect();
        let began = Instant::now();
        let mut refused = Vec::new();
        for id in 0..5 {
            let response = post(
                addr,
                &mirrored("tools/list", None),
                &body(id, "tools/list", json!({})),
            );
            if status(&response) != 200 {
                refused.push(format!("fresh client {id}: {}", &response[..12]));
            }
        }
        let took = began.elapsed();
        done.store(true, Ordering::Relaxed);
        for trickler in tricklers {
            trickler.join().unwrap();
        }
        if !refused.is_empty() || took >= Duration::from_secs(3) {
            failed.push(format!(
                "64 connections trickling {variant}: {} of 5 fresh clients refused in {took:?}",
                refused.len()
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// A keep-alive client's next request is never dropped unanswered: once
/// its bytes have arrived the connection is no longer idle. At the cap
/// the connection that waited longest gives way (`OpenConnections::enter`)
/// with no look at its socket, and between the first byte of its next
/// request arriving (`request_begins`) and `serving(open, true)` the
/// connection can be chosen: its thread then returns without a word and
/// the request is lost (for a POST, which a client must not retry on its
/// own). Here, at a cap of 2 (one place held by a request being served, a
/// `slow` call: since the fix a request still being read gives way), a
/// kept-alive client sends its next request while a new
/// connection arrives, 200 times: every request sent must be answered.
#[test]
fn a_kept_alive_request_is_answered_when_a_new_connection_arrives_at_the_cap() {
    use std::io::Write;
    let http = start(
        crate::everything::build(),
        HttpOptions::new()
            .max_connections(2)
            .header_timeout(Duration::from_secs(60)),
    );
    let addr = http.addr;
    let _busy = crate::http::hold_serving(addr);
    let call = body(34, "tools/list", json!({}));
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        call.len()
    );
    for (name, value) in mirrored("tools/list", None) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&call);
    // A kept-alive connection with one request answered; `503` while the
    // newcomer of a round lost (it leaves once its thread sees it closed).
    let keep_alive = || {
        let deadline = Instant::now() + WAIT;
        loop {
            let mut socket = TcpStream::connect(addr).unwrap();
            socket.set_read_timeout(Some(WAIT)).unwrap();
            socket.write_all(request.as_bytes()).unwrap();
            let first = crate::http::read_one(&mut socket);
            if status(&first) == 200 {
                return socket;
            }
            assert!(Instant::now() < deadline, "no place again: {first}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let mut client = keep_alive();
    let mut lost = 0;
    for _ in 0..200 {
        // Idle (its thread looked and found nothing) by the time the next
        // request goes: a moment after its response.
        std::thread::sleep(Duration::from_millis(5));
        client.write_all(request.as_bytes()).unwrap();
        let newcomer = TcpStream::connect(addr).unwrap();
        let mut byte = [0u8; 1];
        match client.peek(&mut byte) {
            Ok(1) => {
                let response = crate::http::read_one(&mut client);
                assert_eq!(status(&response), 200, "{response}");
            }
            // Closed with the request unanswered: it gave way.
            _ => {
                lost += 1;
                drop(newcomer);
                client = keep_alive();
                continue;
            }
        }
        drop(newcomer);
    }
    assert_eq!(
        lost, 0,
        "{lost} of 200 kept-alive requests were dropped unanswered"
    );
}

/// The accept loop answers a connection it turns away (every place is
/// serving a request) with `503`, then waits up to 20 ms for the peer to
/// close (`busy`, `close_gently`): one thread for the whole listener, so a
/// peer that connects and says nothing costs it 20 ms, and 50 such
/// connections a second keep everyone else waiting in the backlog. Here,
/// at a cap of 1 held by a request being served (a `slow` call: since the fix
/// a request still being read gives way), 100 silent connections queue
/// ahead of one more client: its `503` should come in
/// well under a second (the refusals cost about nothing each); it took
/// about 100 × 20 ms.
#[test]
fn a_refusal_at_the_cap_costs_the_accept_loop_no_wait_on_a_silent_peer() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new()
            .max_connections(1)
            .header_timeout(Duration::from_secs(60)),
    );
    let addr = http.addr;
    let _busy = crate::http::hold_serving(addr);
    let silent: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let began = Instant::now();
    let response = crate::http::raw(addr, b"POST /mcp HTTP/1.1\r\n\r\n");
    let took = began.elapsed();
    assert_eq!(status(&response), 503, "{response}");
    drop(silent);
    assert!(
        took < Duration::from_millis(500),
        "behind 100 silent refused connections, a refusal took {took:?}"
    );
}

/// `src/http/request.rs` says a control character in a header value is
/// refused, and RFC 9110 section 5.5 allows only spaces and tabs around a
/// value (OWS). `field` trims with `trim_ascii`, which also takes a form
/// feed (0x0C) off either end before it looks for control characters: so
/// `Mcp-Name: echo<FF>` is read as `echo` and matches the body, while an
/// intermediary that keeps the byte (or refuses it) sees another name.
/// Expected: `400`, as for a control character inside the value.
#[test]
fn a_form_feed_at_the_end_of_a_header_value_is_refused() {
    let http = crate::http::everything();
    let mut headers = mirrored("tools/call", None);
    headers.push(("Mcp-Name".into(), "echo\u{c}".into()));
    let response = post(
        http.addr,
        &headers,
        &body(
            35,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "x" } }),
        ),
    );
    assert_eq!(status(&response), 400, "Mcp-Name: echo<FF>: {response}");
}

/// A chunked body that never ends (a chunk of one byte every 20 ms, no
/// last chunk) is cut at `header_timeout` from the request's start with
/// `408`, however steadily its bytes come: the deadline is one for the
/// whole request (`TimedSocket`), not one per read. Here 500 ms; the
/// answer must come within 3 s.
#[test]
fn a_chunked_body_that_never_ends_is_cut_at_the_header_timeout() {
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let http = start(
        crate::everything::build(),
        HttpOptions::new().header_timeout(Duration::from_millis(500)),
    );
    let addr = http.addr;
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    socket.set_nodelay(true).unwrap();
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nTransfer-Encoding: chunked\r\n");
    for (name, value) in mirrored("tools/list", None) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n1\r\n{\r\n");
    socket.write_all(head.as_bytes()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let trickle = {
        let (mut socket, done) = (socket.try_clone().unwrap(), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) && socket.write_all(b"1\r\n \r\n").is_ok() {
                // The peer's pace: a chunk every 20 ms.
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let began = Instant::now();
    let mut out = Vec::new();
    let _ = socket.read_to_end(&mut out);
    let took = began.elapsed();
    done.store(true, Ordering::Relaxed);
    trickle.join().unwrap();
    let response = String::from_utf8_lossy(&out);
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(took < Duration::from_secs(3), "cut after {took:?}");
}

/// A careless client sends a body past the limit (5 MiB, the limit 4 MiB)
/// without `Expect: 100-continue`, reading the answer only once it wrote
/// everything it could (as curl and most libraries do). The server
/// answers `413` before the body and closes; the client must see that
/// `413`, not a connection reset: RFC 9112 section 9.6, a server that
/// closes with unread input risks the client losing the response, so it
/// reads on for a while before it closes (`close_gently`).
#[test]
fn a_body_past_the_limit_sent_at_once_sees_its_413() {
    use std::io::Write;
    let http = crate::http::everything();
    let addr = http.addr;
    let len = 5 * 1024 * 1024;
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {len}\r\n");
    for (name, value) in mirrored("tools/list", None) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    socket.set_write_timeout(Some(WAIT)).unwrap();
    socket.write_all(head.as_bytes()).unwrap();
    let written = socket.write_all(&vec![b' '; len]);
    let mut out = Vec::new();
    let read = socket.read_to_end(&mut out);
    let response = String::from_utf8_lossy(&out);
    assert!(
        response.starts_with("HTTP/1.1 413"),
        "writing the body: {written:?}; reading the answer: {read:?}: {response:?}"
    );
}

// ---------------------------------------------------------------------------
// After the review: who gives way at the cap, and what its client hears.
// ---------------------------------------------------------------------------

/// A kept-alive POST of `tools/list` to `addr`, whole.
fn kept_alive_request(addr: std::net::SocketAddr, id: i64) -> String {
    let call = body(id, "tools/list", json!({}));
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        call.len()
    );
    for (name, value) in mirrored("tools/list", None) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request + "\r\n" + &call
}

/// A fresh client's `tools/list`, sent again while it is turned away
/// (`503`): the response that was not, and when it came.
fn served_when_placed(addr: std::net::SocketAddr) -> (String, Instant) {
    let deadline = Instant::now() + WAIT;
    loop {
        let response = post(
            addr,
            &mirrored("tools/list", None),
            &body(38, "tools/list", json!({})),
        );
        if status(&response) != 503 || Instant::now() > deadline {
            return (response, Instant::now());
        }
        // The pace of a client that retries.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// At the cap a request that waits for its bytes (here its body, after
/// `100 Continue`) gives way to a new connection before a kept-alive one,
/// and its client hears why: `503` with `Retry-After`, not a reset. The
/// kept-alive connection, just answered, keeps its place, and its next
/// request is answered.
#[test]
fn a_stalled_request_gives_way_with_503_before_a_kept_alive_connection() {
    use std::io::Write;
    let http = start(
        crate::everything::build(),
        HttpOptions::new().max_connections(2),
    );
    let addr = http.addr;
    let mut kept = TcpStream::connect(addr).unwrap();
    kept.set_read_timeout(Some(WAIT)).unwrap();
    kept.write_all(kept_alive_request(addr, 36).as_bytes())
        .unwrap();
    assert_eq!(status(&crate::http::read_one(&mut kept)), 200);
    let mut stalled = crate::http::hold_in_body(addr);
    let (response, _) = served_when_placed(addr);
    assert_eq!(status(&response), 200, "the newcomer: {response}");
    let mut out = String::new();
    stalled.read_to_string(&mut out).unwrap();
    assert_eq!(status(&out), 503, "the stalled request: {out}");
    assert_eq!(crate::http::header(&out, "retry-after"), Some("1"));
    kept.write_all(kept_alive_request(addr, 37).as_bytes())
        .unwrap();
    let next = crate::http::read_one(&mut kept);
    assert_eq!(status(&next), 200, "the kept-alive client: {next}");
}

/// A connection idle between requests keeps its place at the cap for a
/// moment (its client, just answered, may be sending its next request:
/// closing it then would lose that request), then gives way: at a cap of
/// 1, a newcomer is turned away for about a second, then served, and the
/// idle connection is closed without a word.
#[test]
fn an_idle_kept_alive_connection_gives_way_after_a_moment() {
    use std::io::Write;
    let http = start(
        crate::everything::build(),
        HttpOptions::new().max_connections(1),
    );
    let addr = http.addr;
    let mut kept = TcpStream::connect(addr).unwrap();
    kept.set_read_timeout(Some(WAIT)).unwrap();
    kept.write_all(kept_alive_request(addr, 39).as_bytes())
        .unwrap();
    assert_eq!(status(&crate::http::read_one(&mut kept)), 200);
    let answered = Instant::now();
    let first = post(
        addr,
        &mirrored("tools/list", None),
        &body(40, "tools/list", json!({})),
    );
    let line = |response: &str| response.lines().next().unwrap_or("").to_owned();
    assert_eq!(status(&first), 503, "at once: {}", line(&first));
    let (response, placed) = served_when_placed(addr);
    assert_eq!(status(&response), 200, "later: {}", line(&response));
    let waited = placed - answered;
    assert!(
        waited >= Duration::from_millis(900),
        "the idle connection gave way {waited:?} after its answer"
    );
    let mut rest = Vec::new();
    assert!(kept.read_to_end(&mut rest).is_ok(), "closed");
    assert!(rest.is_empty(), "nothing said: {rest:?}");
}

/// Review of issue 47, item 13 (review-47h): a checked header under
/// another spelling of its name is refused too. CGI, WSGI, PHP and the
/// gateways built on them read `Mcp-Method` and `Mcp_Method` as one field
/// (`HTTP_MCP_METHOD`, usually the last one sent, or both joined), so a
/// gateway in front that routes on it sees `tools/list` where this server
/// checked, and runs, `tools/call`: the split `single_fields` closes for
/// two `Mcp-Method` fields. On main `Mcp_Method` is a field of its own,
/// never checked: `200`.
#[test]
fn a_checked_header_spelled_with_an_underscore_is_refused() {
    let http = with_annotated_tool();
    let echo = body(
        33,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "x" } }),
    );
    let mut headers = mirrored("tools/call", Some("echo"));
    headers.push(("Mcp_Method".into(), "tools/list".into()));
    let response = post(http.addr, &headers, &echo);
    assert_eq!(status(&response), 400, "{response}");
}

/// Review 47c, claim 3 (`guard::single_fields`, fix-47z's fixed names):
/// `_` counts as `-` only in the seven fixed names, so an `Mcp-Param-*`
/// field sent again in another spelling passes: `Mcp-Param-Region: west`
/// (compared with the body, which says `west`) beside `Mcp_Param_Region:
/// east` or `Mcp-Param_Region: east`. A CGI-style gateway (CGI, WSGI, many
/// proxies' variables) reads all three as `HTTP_MCP_PARAM_REGION`, so it
/// may route on `east` while the server checked `west`: the two truths
/// item 13 refuses for `Mcp-Method` and `Mcp_Method`. On main both are
/// `200`. (A tool whose arguments are marked `Region_Code` and
/// `Region-Code` is the case fix-47z kept apart; such a pair could be
/// refused when the tool is registered instead.)
#[test]
fn a_param_header_sent_again_with_underscores_is_refused() {
    let http = with_annotated_tool();
    let sql = body(
        33,
        "tools/call",
        json!({ "name": "sql", "arguments": { "region": "west" } }),
    );
    let mut passed = Vec::new();
    for second in ["Mcp_Param_Region", "Mcp-Param_Region"] {
        let mut headers = mirrored("tools/call", Some("sql"));
        headers.push(("Mcp-Param-Region".into(), "west".into()));
        headers.push((second.into(), "east".into()));
        let response = post(http.addr, &headers, &sql);
        if status(&response) != 400 {
            passed.push(format!(
                "{second}: {}",
                response.lines().next().unwrap_or("")
            ));
        }
    }
    assert!(
        passed.is_empty(),
        "a second spelling of Mcp-Param-Region was not refused:\n{}",
        passed.join("\n")
    );
}

/// Review 47c, claim 4 (`open::State::gives_way`, fix-47r's `abandoned`,
/// with `peer_gone`): a connection serving a request whose client has gone
/// gives way at the cap, on the reading that its request is cancelled by
/// the close. An inline handler runs on the connection's thread before
/// `exchange::watch` looks at the socket, so nothing cancels it, and the
/// thread runs on outside the count: `max_connections` no longer bounds
/// the threads running handlers. Here `max_connections(2)` and an inline
/// tool that holds its thread until released: four clients each send a
/// call and close. On main all four handlers run at once (a client that
/// sends and leaves, in a loop, starts as many threads as it likes).
/// Before fix-47r a serving connection never gave way (read in the diff,
/// not run), so the third client would have been `503`.
#[test]
fn clients_that_leave_inline_calls_running_start_no_more_than_the_cap() {
    let (started_tx, started) = crossbeam_channel::unbounded::<()>();
    let (release_tx, release) = crossbeam_channel::unbounded::<()>();
    let server = crate::everything::build_with(|builder| {
        builder.inline_tool(
            Tool::new("hold", "Holds its thread until released."),
            move |_ctx, _: Value| {
                started_tx.send(()).unwrap();
                let _ = release.recv_timeout(WAIT);
                Ok(CallToolResult::text("done"))
            },
        )
    });
    let http = start(server, HttpOptions::new().max_connections(2));
    let call = body(40, "tools/call", json!({ "name": "hold", "arguments": {} }));
    let mut running = 0;
    for _ in 0..4 {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            http.addr,
            call.len()
        );
        for (name, value) in mirrored("tools/call", Some("hold")) {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&call);
        let mut socket = TcpStream::connect(http.addr).unwrap();
        std::io::Write::write_all(&mut socket, request.as_bytes()).unwrap();
        if started.recv_timeout(Duration::from_secs(2)).is_ok() {
            running += 1;
        }
        // A client turned away at the cap was answered `503` and closed.
        let _ = socket.shutdown(std::net::Shutdown::Both);
    }
    for _ in 0..4 {
        let _ = release_tx.send(());
    }
    assert!(
        running <= 2,
        "{running} inline handlers ran at once at max_connections(2)"
    );
}

/// Review 47d, claim 2 (`mirror::param_fields_once`, review-47c's claim 3
/// fixed only for a field sent twice): an `Mcp-Param-*` field sent once,
/// in the `_` spelling alone, for an argument the body lacks, is never
/// read: `check_params` looks up `Mcp-Param-Region` (case only), finds
/// nothing, and the body has no `region`, so the call passes. A CGI-style
/// gateway reads `Mcp_Param_Region: east` as `HTTP_MCP_PARAM_REGION` and
/// may route on `east`, a value the server never compared with the body:
/// the same two truths claim 3 named. On main `200`. A field whose folded
/// name (`_` as `-`) a tool marks once should be looked up folded, so it
/// is compared or refused as `Mcp-Param-Region` is.
#[test]
fn a_param_header_sent_once_with_underscores_is_compared_too() {
    let http = with_annotated_tool();
    let sql = body(
        34,
        "tools/call",
        json!({ "name": "sql", "arguments": { "limit": 5 } }),
    );
    let mut passed = Vec::new();
    for spelling in ["Mcp_Param_Region", "Mcp-Param_Region", "mcp_param_region"] {
        let mut headers = mirrored("tools/call", Some("sql"));
        headers.push(("Mcp-Param-Limit".into(), "5".into()));
        headers.push((spelling.into(), "east".into()));
        let response = post(http.addr, &headers, &sql);
        if status(&response) != 400 {
            passed.push(format!(
                "{spelling}: {}",
                response.lines().next().unwrap_or("")
            ));
        }
    }
    assert!(
        passed.is_empty(),
        "an Mcp-Param-Region in another spelling, with no region in the body, was not refused:\n{}",
        passed.join("\n")
    );
}

/// Review http8 (`mirror::param_fields_once`): 2026-07-28 server/tools
/// lets an `x-mcp-header` be any `1*tchar`, `_` included, and a
/// conforming client then sends `Mcp-Param-{name}` spelled as marked. A
/// tool that marks its argument `Region_Code` (and no `Region-Code`) is
/// called with `Mcp-Param-Region_Code`, exactly as the spec builds it: it
/// must be served. On main it is refused `-32020` ("spelled with a `_`"),
/// so such a tool can never be called over HTTP.
#[test]
fn a_tool_whose_header_mark_holds_an_underscore_can_be_called() {
    let tool = Tool::new("geo", "Names a region.").input_schema(json!({
        "type": "object",
        "properties": {
            "region_code": { "type": "string", "x-mcp-header": "Region_Code" }
        }
    }));
    let server = crate::everything::build_with(|builder| {
        builder.tool(tool, |_ctx, args: Value| {
            Ok(CallToolResult::text(
                args["region_code"].as_str().unwrap_or(""),
            ))
        })
    });
    let http = start(server, HttpOptions::new());
    let call = body(
        50,
        "tools/call",
        json!({ "name": "geo", "arguments": { "region_code": "eu" } }),
    );
    let mut headers = mirrored("tools/call", Some("geo"));
    headers.push(("Mcp-Param-Region_Code".into(), "eu".into()));
    let response = post(http.addr, &headers, &call);
    assert_eq!(status(&response), 200, "{response}");
    assert_eq!(json_body(&response)["result"]["content"][0]["text"], "eu");
}

/// Sends a modern `subscriptions/listen` on a new connection and reads
/// until its acknowledgment: from then on the client reads nothing.
fn listen_and_stop_reading(addr: std::net::SocketAddr, id: i64) -> TcpStream {
    let listen = body(
        id,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        listen.len()
    );
    for (name, value) in mirrored("subscriptions/listen", None) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&listen);
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    std::io::Write::write_all(&mut socket, request.as_bytes()).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("acknowledged") {
        let n = socket.read(&mut buf).unwrap();
        assert!(n > 0, "the listen ended early");
        seen.extend_from_slice(&buf[..n]);
    }
    socket
}

/// Review http8 (`open::State::gives_way`): a stuck stream reader must not
/// lock other clients out. Here `max_connections(2)` and two clients that
/// each open a `subscriptions/listen`, read its acknowledgment and then
/// nothing more, keeping their sockets open. On main a third client's
/// `tools/list` is answered `503` for as long as they like: a legacy GET
/// stream gives way at the cap, a listen, its modern equivalent, never
/// did, and a keep-alive comment every 15 s fills no socket buffer for
/// hours, so the write timeout never cuts them. At the default cap, 64
/// such sockets shut the server for good.
#[test]
fn listens_whose_clients_stopped_reading_do_not_lock_out_a_new_client() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().max_connections(2),
    );
    let _held: Vec<TcpStream> = (0..2)
        .map(|i| listen_and_stop_reading(http.addr, 60 + i))
        .collect();
    let list = body(62, "tools/list", json!({}));
    let response = post(http.addr, &mirrored("tools/list", None), &list);
    assert_eq!(
        status(&response),
        200,
        "a fresh client was turned away: {}",
        response.lines().next().unwrap_or("")
    );
}

const HEADERS_TEST: &str =
    "http_hostile::many_tiny_header_fields_cost_memory_in_proportion_to_their_bytes";

/// Review http8 (`crate::http::read_head`, `HttpHeaders`): what a head
/// costs must follow its bytes. The head's limit (16 KiB) counts bytes
/// only, and each field, however short, is two `String`s in a `Vec`: a
/// head of `a:` lines (3 bytes each with a bare LF) is over 5,000 fields,
/// about half a MiB kept while its request is served. Here 64 connections
/// each send such a head (with `Expect: 100-continue`, so each is held,
/// read, while its body does not come; or refused whole): 1 MiB sent.
/// The server's peak RSS must grow by no more than the 16 MiB that
/// `memory_follows_the_bytes_not_the_declared_length` allows 64
/// connections. On main it grew by about 29 MiB (2.7 MiB with heads of
/// a few fields).
#[test]
fn many_tiny_header_fields_cost_memory_in_proportion_to_their_bytes() {
    use std::io::Write;
    if std::env::var_os(CHILD_ENV).is_some() {
        serve_as_child();
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", HEADERS_TEST, "--nocapture", "--test-threads=1"])
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
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nExpect: 100-continue\r\nContent-Length: 10\r\n"
        );
        for (name, value) in mirrored("tools/list", None) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        while head.len() < 16 * 1024 - 64 {
            head.push_str("a:\n");
        }
        head.push_str("\r\n");
        let sockets: Vec<TcpStream> = (0..64)
            .map(|_| {
                let mut socket = TcpStream::connect(addr).unwrap();
                socket.set_read_timeout(Some(WAIT)).unwrap();
                socket.write_all(head.as_bytes()).unwrap();
                // `100 Continue`: the head is read and held; or refused
                // whole (`431`).
                let mut line = [0u8; 12];
                socket.read_exact(&mut line).unwrap();
                let line = String::from_utf8_lossy(&line).into_owned();
                assert!(
                    ["HTTP/1.1 100", "HTTP/1.1 431"].contains(&line.as_str()),
                    "{line}"
                );
                socket
            })
            .collect();
        let grew = kib(child.id(), "VmHWM:").saturating_sub(before);
        drop(sockets);
        grew
    });
    drop(child.stdin.take());
    let deadline = Instant::now() + WAIT;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    let grew = checked.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    assert!(
        grew < 16 * 1024,
        "the server's peak RSS grew by {grew} KiB for 64 heads of 16 KiB (1 MiB sent)"
    );
}

/// Review http14 (`HttpRequest::keep_alive`): RFC 9112 section 6.1, a
/// server that receives an HTTP/1.0 message with `Transfer-Encoding`
/// "MUST treat the message as if the framing is faulty ... and close the
/// connection after processing the message". Here an HTTP/1.0 chunked
/// notification asks for keep-alive, and a second request follows on the
/// same connection: an HTTP/1.0 intermediary in front, which knows no
/// chunked, would have taken the chunks for that request (a desync).
/// The server must answer the first and close, not serve the second.
#[test]
fn an_http10_request_with_a_transfer_coding_closes_its_connection() {
    let http = crate::http::everything();
    let addr = http.addr;
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let list = body(70, "tools/list", json!({}));
    let mut second = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        list.len()
    );
    for (name, value) in mirrored("tools/list", None) {
        second.push_str(&format!("{name}: {value}\r\n"));
    }
    second.push_str("\r\n");
    second.push_str(&list);
    let first = format!(
        "POST /mcp HTTP/1.0\r\nHost: {addr}\r\nConnection: keep-alive\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{note}\r\n0\r\n\r\n",
        note.len()
    );
    let out = crate::http::raw(addr, format!("{first}{second}").as_bytes());
    assert_eq!(status(&out), 202, "{out}");
    assert_eq!(
        out.matches("HTTP/1.1 ").count(),
        1,
        "the request after an HTTP/1.0 chunked one was served on its connection:\n{out}"
    );
}

/// A socket whose receive buffer is as small as the kernel allows: what
/// the server sends it waits in the server's buffers, not here.
fn small_window(addr: std::net::SocketAddr) -> TcpStream {
    let socket = TcpStream::connect(addr).unwrap();
    nix::sys::socket::setsockopt(&socket, nix::sys::socket::sockopt::RcvBuf, &4096).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    socket
}

/// Review http14 (`exchange::watch`, `Body`): a modern POST whose client
/// keeps its connection open and reads nothing. Its handler reports
/// progress until cancelled; once the socket's buffers are full its
/// writes wait, and past the write timeout the client is taken for gone:
/// the request must be cancelled then (spec 2026-07-28: the stream's end
/// is the cancellation), not go on working for nobody.
#[test]
fn a_handler_whose_client_reads_nothing_is_cancelled_after_the_write_timeout() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let ended = Arc::new(AtomicBool::new(false));
    let steps = Arc::new(AtomicU64::new(0));
    let (ended_in, steps_in) = (Arc::clone(&ended), Arc::clone(&steps));
    let tool = Tool::new("forever", "Reports progress until cancelled.")
        .input_schema(json!({ "type": "object" }));
    let server = crate::everything::build_with(move |builder| {
        builder.tool(tool, move |ctx, _: Value| {
            let text = "p".repeat(4096);
            while !ctx.is_cancelled() {
                let n = steps_in.fetch_add(1, Ordering::Relaxed);
                ctx.progress(n as f64, None, Some(&text));
            }
            ended_in.store(true, Ordering::Release);
            Ok(CallToolResult::text("cancelled"))
        })
    });
    let http = start(
        server,
        HttpOptions::new().write_timeout(Duration::from_millis(300)),
    );
    let mut call: Value = serde_json::from_str(&body(
        71,
        "tools/call",
        json!({ "name": "forever", "arguments": {} }),
    ))
    .unwrap();
    call["params"]["_meta"]["progressToken"] = json!("f");
    let call = call.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        http.addr,
        call.len()
    );
    for (name, value) in mirrored("tools/call", Some("forever")) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&call);
    let mut socket = small_window(http.addr);
    std::io::Write::write_all(&mut socket, request.as_bytes()).unwrap();
    // The client reads nothing from here on, and keeps its socket open.
    let deadline = Instant::now() + 4 * WAIT;
    while !ended.load(Ordering::Acquire) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        ended.load(Ordering::Acquire),
        "the handler still runs for a client that read nothing, {} progress notifications later",
        steps.load(Ordering::Relaxed)
    );
    drop(socket);
}

/// Review http14 (`tcp::refused`): RFC 9110 section 9.3.2, a server
/// "MUST NOT send content in the response" to `HEAD`, and a client or
/// proxy reads none, whatever `Content-Length` says. `HEAD` is `405`
/// with the connection kept alive, as `GET` is; its JSON-RPC error body
/// then stayed on the connection, where the client reads it as the
/// start of its next response (the next response it is given is junk,
/// and a proxy that pools the connection hands that junk to another of
/// its clients). After the head of the `405` must come the next response.
#[test]
fn a_head_request_is_answered_without_content() {
    let http = crate::http::everything();
    let addr = http.addr;
    let list = body(74, "tools/list", json!({}));
    let mut second = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        list.len()
    );
    for (name, value) in mirrored("tools/list", None) {
        second.push_str(&format!("{name}: {value}\r\n"));
    }
    second.push_str("\r\n");
    second.push_str(&list);
    let paths = [("/mcp", "the endpoint"), ("/elsewhere", "another path")];
    for (path, what) in paths {
        let head = format!("HEAD {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        let out = crate::http::raw(addr, format!("{head}{second}").as_bytes());
        let (first, rest) = out.split_once("\r\n\r\n").unwrap();
        assert!(
            rest.is_empty() || rest.starts_with("HTTP/1.1 "),
            "HEAD of {what} answered with content:\n{first}\n\n{rest}"
        );
    }
}

/// Review http14 (`exchange::watch`): a modern request is cancelled when
/// its client closes the connection (spec 2026-07-28 basic/transports,
/// "Cancellation"). The watch looks for the close with a `peek`, which
/// sees the first byte of anything the client sent after the request:
/// one byte more, then the close, and the close is never seen. Here a
/// call that waits ten minutes unless cancelled, sent with a trailing
/// byte on a connection the client then closes: it must be cancelled,
/// not hold a handler thread for nobody (a client that does this 64
/// times fills a pool of handlers with work nobody waits for).
#[test]
fn a_request_whose_client_closes_after_a_stray_byte_is_cancelled() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let cancelled = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let (cancelled_in, started_in) = (Arc::clone(&cancelled), Arc::clone(&started));
    let tool = Tool::new("wait", "Waits ten minutes unless cancelled.")
        .input_schema(json!({ "type": "object" }));
    let server = crate::everything::build_with(move |builder| {
        builder.tool(tool, move |ctx, _: Value| {
            started_in.store(true, Ordering::Release);
            if ctx.wait_cancelled(Duration::from_secs(600)) {
                cancelled_in.store(true, Ordering::Release);
            }
            Ok(CallToolResult::text("done"))
        })
    });
    let http = start(server, HttpOptions::new());
    let call = body(75, "tools/call", json!({ "name": "wait", "arguments": {} }));
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        http.addr,
        call.len()
    );
    for (name, value) in mirrored("tools/call", Some("wait")) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&call);
    let mut socket = TcpStream::connect(http.addr).unwrap();
    std::io::Write::write_all(&mut socket, request.as_bytes()).unwrap();
    let deadline = Instant::now() + WAIT;
    while !started.load(Ordering::Acquire) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(started.load(Ordering::Acquire), "the call never started");
    std::io::Write::write_all(&mut socket, b"G").unwrap();
    drop(socket);
    // The close is looked for every 50 ms.
    let deadline = Instant::now() + Duration::from_secs(3);
    while !cancelled.load(Ordering::Acquire) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        cancelled.load(Ordering::Acquire),
        "the call still runs 3 s after its client closed its connection"
    );
}

/// Review http14 (`guard::host`, `guard::origin`), a guard: names that
/// begin or end like a loopback one but that DNS can rebind to any
/// address are refused `403` at a loopback listener, as `Host` and as
/// `Origin`, each with a JSON-RPC error body without id; a loopback name
/// on another port passes (a rebinding page cannot send one).
#[test]
fn names_that_only_look_loopback_are_refused_as_host_and_origin() {
    let http = crate::http::everything();
    let addr = http.addr;
    let list = body(76, "tools/list", json!({}));
    let request = |host: &str, origin: Option<&str>| {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
            list.len()
        );
        if let Some(origin) = origin {
            request.push_str(&format!("Origin: {origin}\r\n"));
        }
        for (name, value) in mirrored("tools/list", None) {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request + "\r\n" + &list
    };
    let port = addr.port();
    let mut wrong = Vec::new();
    for (host, origin, expected) in [
        (format!("localhost.evil.example:{port}"), None, 403),
        (format!("127.0.0.1.nip.io:{port}"), None, 403),
        (format!("evil-localhost:{port}"), None, 403),
        ("localhost:1".to_owned(), None, 200),
        (format!("[::1]:{port}"), None, 200),
        (
            format!("localhost:{port}"),
            Some("http://localhost.evil.example".to_owned()),
            403,
        ),
        (
            format!("localhost:{port}"),
            Some("http://127.0.0.1.nip.io".to_owned()),
            403,
        ),
        (
            format!("localhost:{port}"),
            Some("file://localhost".to_owned()),
            403,
        ),
        (
            format!("localhost:{port}"),
            Some("http://[::1]:9".to_owned()),
            200,
        ),
    ] {
        let out = crate::http::raw(addr, request(&host, origin.as_deref()).as_bytes());
        if status(&out) != expected || (expected == 403 && json_body(&out)["id"] != Value::Null) {
            wrong.push(format!(
                "Host {host}, Origin {origin:?}: {}",
                out.lines().next().unwrap_or("")
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Review http14 (`server::http::busy`): every refusal is a JSON-RPC
/// error without id, so that a client reads each the same way (a client
/// falling back on a `4xx`/`5xx` inspects the body: spec 2026-07-28
/// "Backward Compatibility"). The `503` of a connection turned away at
/// the cap was the one `text/plain`, while the `503` of one that gave
/// way at the cap was JSON.
#[test]
fn a_connection_turned_away_at_the_cap_is_told_why_in_json_rpc() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().max_connections(1),
    );
    let _busy = crate::http::hold_serving(http.addr);
    let list = body(77, "tools/list", json!({}));
    let refused = post(http.addr, &mirrored("tools/list", None), &list);
    assert_eq!(status(&refused), 503, "{refused}");
    assert_eq!(
        crate::http::header(&refused, "content-type"),
        Some("application/json"),
        "{refused}"
    );
    let error = json_body(&refused);
    assert_eq!(error["id"], Value::Null, "{refused}");
    assert_eq!(error["error"]["code"], -32600, "{refused}");
}

/// A POST of `call` to `addr`'s endpoint, its headers mirrored, as bytes
/// to send (`close`: with `Connection: close`).
fn post_bytes(
    addr: std::net::SocketAddr,
    call: &str,
    method: &str,
    name: Option<&str>,
    close: bool,
) -> String {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        call.len()
    );
    if close {
        request.push_str("Connection: close\r\n");
    }
    for (field, value) in mirrored(method, name) {
        request.push_str(&format!("{field}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(call);
    request
}

/// Review fixes14d (`read_chunked`): a chunk size with stray whitespace is
/// refused as every bad framing is, `400` with a JSON-RPC error without
/// id that names the line, and the connection closed; the whitespace RFC
/// 9112 section 7.1.1 allows (BWS before an extension's `;`) is served.
#[test]
fn a_chunk_size_with_stray_whitespace_is_a_json_rpc_400_and_bws_before_an_extension_is_served() {
    let http = crate::http::everything();
    let addr = http.addr;
    let list = body(80, "tools/list", json!({}));
    let chunked = |size_line: &str| {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n"
        );
        for (name, value) in mirrored("tools/list", None) {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        format!("{request}\r\n{size_line}\r\n{list}\r\n0\r\n\r\n")
    };
    let size = format!("{:x}", list.len());
    let refused = crate::http::raw(addr, chunked(&format!("{size} ")).as_bytes());
    assert_eq!(status(&refused), 400, "{refused}");
    assert_eq!(
        crate::http::header(&refused, "content-type"),
        Some("application/json"),
        "{refused}"
    );
    assert_eq!(crate::http::header(&refused, "connection"), Some("close"));
    let error = json_body(&refused);
    assert_eq!(error["id"], Value::Null, "{refused}");
    assert_eq!(error["error"]["code"], -32600, "{refused}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("chunk size")),
        "{refused}"
    );
    for honest in [
        format!("{size} ;a=b"),
        format!("{size}\t; a = \"b\""),
        format!("{size};a"),
    ] {
        let served = crate::http::raw(addr, chunked(&honest).as_bytes());
        assert_eq!(status(&served), 200, "{honest:?}: {served}");
    }
}

/// Review fixes14d (`Exchange::respond`, `refusal::refuse_with`): RFC 9110
/// section 8.6, "a server MUST NOT send Content-Length in such a response
/// [to HEAD] unless its field value equals the decimal number of octets
/// that would have been sent in the content of a response if the same
/// request had used the GET method". The answers to a HEAD carry no
/// content now, but said `Content-Length: 0`, where the GET's answer has
/// a JSON-RPC error: a cache that updates a stored response from a HEAD
/// (section 9.3.2) takes the wrong length. Each HEAD's connection state
/// is the GET's: the 405 keeps it, the 404 closes it.
#[test]
fn a_head_request_is_not_told_a_content_length_its_get_would_not_have() {
    let http = crate::http::everything();
    let addr = http.addr;
    let mut wrong = Vec::new();
    for path in ["/mcp", "/elsewhere"] {
        let get = crate::http::raw(
            addr,
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        let get_length = crate::http::header(&get, "content-length").map(str::to_owned);
        let mut socket = TcpStream::connect(addr).unwrap();
        socket.set_read_timeout(Some(WAIT)).unwrap();
        let head = format!("HEAD {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        std::io::Write::write_all(&mut socket, head.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") && socket.read(&mut byte).unwrap() == 1 {
            answer.push(byte[0]);
        }
        let answer = String::from_utf8(answer).unwrap();
        assert_eq!(status(&answer), status(&get), "{path}");
        assert_eq!(
            crate::http::header(&answer, "connection"),
            crate::http::header(&get, "connection").filter(|_| path != "/mcp"),
            "HEAD {path}: the connection state differs from the GET's:\n{answer}"
        );
        let length = crate::http::header(&answer, "content-length");
        if length.is_some() && length != get_length.as_deref() {
            wrong.push(format!(
                "HEAD {path}: Content-Length {length:?}, the GET's {get_length:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Whether a call started, and whether it was cancelled.
type Flags = [std::sync::Arc<std::sync::atomic::AtomicBool>; 2];

/// A server with a tool `gate` that waits `ms` unless cancelled, then
/// answers "cancelled" or "done"; and its [`Flags`].
fn with_gate() -> (crate::http::Http, Flags) {
    use std::sync::atomic::Ordering;
    let flags: Flags = Default::default();
    let [started_in, cancelled_in] = flags.clone();
    let tool =
        Tool::new("gate", "Waits ms unless cancelled.").input_schema(json!({ "type": "object" }));
    let server = crate::everything::build_with(move |builder| {
        builder.tool(tool, move |ctx, args: Value| {
            started_in.store(true, Ordering::Release);
            let ms = args["ms"].as_u64().unwrap_or(0);
            let text = if ctx.wait_cancelled(Duration::from_millis(ms)) {
                cancelled_in.store(true, Ordering::Release);
                "cancelled"
            } else {
                "done"
            };
            Ok(CallToolResult::text(text))
        })
    });
    (start(server, HttpOptions::new()), flags)
}

/// Whether `flag` is set within `within`.
fn set_within(flag: &std::sync::atomic::AtomicBool, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while !flag.load(std::sync::atomic::Ordering::Acquire) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    flag.load(std::sync::atomic::Ordering::Acquire)
}

/// Review fixes14d (`Exchange::watch`, `open::peer_gone`): an honest
/// client that pipelines (its second request sent on the kept-alive
/// connection while the first runs) is not taken for gone: the bytes wait
/// and no end is behind them, so the first call runs to its end (400 ms,
/// eight looks of the watch with bytes waiting) and both are answered.
#[test]
fn a_pipelined_request_does_not_cancel_the_one_running_before_it() {
    let (http, [started, _]) = with_gate();
    let addr = http.addr;
    let call = body(
        81,
        "tools/call",
        json!({ "name": "gate", "arguments": { "ms": 400 } }),
    );
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let first = post_bytes(addr, &call, "tools/call", Some("gate"), false);
    std::io::Write::write_all(&mut socket, first.as_bytes()).unwrap();
    assert!(set_within(&started, WAIT), "the call never started");
    let list = body(82, "tools/list", json!({}));
    let second = post_bytes(addr, &list, "tools/list", None, true);
    std::io::Write::write_all(&mut socket, second.as_bytes()).unwrap();
    let one = crate::http::read_one(&mut socket);
    assert_eq!(
        json_body(&one)["result"]["content"][0]["text"],
        "done",
        "the first request was cancelled: {one}"
    );
    let two = crate::http::read_one(&mut socket);
    assert_eq!(json_body(&two)["id"], 82, "{two}");
}

/// Review fixes14d (`Exchange::watch`), a guard: a client that shuts its
/// sending side after its request (some HTTP/1.0 tools do; our client
/// does so on purpose when it gives up, `client::http::late`) is taken
/// for gone, its request cancelled: so it was before `peer_gone` (a
/// `peek` reads the end as 0 bytes), with or without bytes after the
/// request now.
#[test]
fn a_client_that_shuts_its_sending_side_after_its_request_cancels_it() {
    for stray in ["", "\r\n"] {
        let (http, [started, cancelled]) = with_gate();
        let addr = http.addr;
        let call = body(
            83,
            "tools/call",
            json!({ "name": "gate", "arguments": { "ms": 60_000 } }),
        );
        let mut socket = TcpStream::connect(addr).unwrap();
        socket.set_read_timeout(Some(WAIT)).unwrap();
        let request = post_bytes(addr, &call, "tools/call", Some("gate"), false);
        std::io::Write::write_all(&mut socket, request.as_bytes()).unwrap();
        assert!(set_within(&started, WAIT), "the call never started");
        std::io::Write::write_all(&mut socket, stray.as_bytes()).unwrap();
        socket.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(
            set_within(&cancelled, Duration::from_secs(3)),
            "stray {stray:?}: the call still runs 3 s after its client shut its sending side"
        );
    }
}

/// Review fixes14d (`server::http::busy`): the `503` of a connection
/// turned away at the cap says when to retry, is a JSON-RPC error without
/// id whose length is its `Content-Length`, and closes the connection.
#[test]
fn the_503_at_the_cap_says_retry_after_and_closes_its_connection() {
    let http = start(
        crate::everything::build(),
        HttpOptions::new().max_connections(1),
    );
    let _busy = crate::http::hold_serving(http.addr);
    let list = body(84, "tools/list", json!({}));
    // `raw` reads to the end: the connection must close.
    let refused = crate::http::raw(
        http.addr,
        post_bytes(http.addr, &list, "tools/list", None, false).as_bytes(),
    );
    assert_eq!(status(&refused), 503, "{refused}");
    assert_eq!(crate::http::header(&refused, "retry-after"), Some("1"));
    assert_eq!(crate::http::header(&refused, "connection"), Some("close"));
    let (_, content) = refused.split_once("\r\n\r\n").unwrap();
    assert_eq!(
        crate::http::header(&refused, "content-length"),
        Some(content.len().to_string().as_str())
    );
    let error = json_body(&refused);
    assert_eq!(error["jsonrpc"], "2.0", "{refused}");
    assert_eq!(error["id"], Value::Null, "{refused}");
}
