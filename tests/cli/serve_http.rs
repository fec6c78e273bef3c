//! Issue 49, item 6: `serve-http` passes a list change on even when the
//! list fetched again looks the same; item 7: its bearer token can come
//! from the environment or a file, not only the command line `ps` shows;
//! item 4 over HTTP: a refused connection, and a probe refused for the
//! server's own reasons (a body limit), say so and are not taken for a
//! legacy server.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use crossbeam_channel::Receiver;

use crate::{BIN, LIMIT, Once, SERVER_ENV, me, run, scratch};

pub const CHECKS: &[(&str, Once)] = &[
    (
        "serve_http_passes_an_unchanged_list_change_on",
        passes_list_change,
    ),
    (
        "serve_http_token_from_the_environment_or_a_file",
        token_elsewhere,
    ),
    (
        "serve_http_keeps_the_childs_tasks_extension",
        keeps_tasks_extension,
    ),
    ("a_refused_connection_says_so", refused_connection),
    (
        "a_probe_refused_for_a_body_limit_is_not_legacy",
        body_limit_not_legacy,
    ),
];

/// `mcp-stdio serve-http` in front of the everything server, on a port of
/// its own; killed when dropped.
struct Serving {
    child: Child,
    /// `HOST:PORT`.
    addr: String,
}

impl Serving {
    fn start(options: &[&str], env: &[(&str, &str)]) -> Result<Serving, String> {
        let mut args = vec!["serve-http", "--listen", "127.0.0.1:0"];
        args.extend(options);
        let exe = me();
        args.extend(["--", &exe]);
        let mut child = Command::new(BIN)
            .args(&args)
            .env(SERVER_ENV, "everything")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let lines = lines_of(child.stderr.take().expect("piped stderr"));
        let mut said = String::new();
        loop {
            let Ok(line) = lines.recv_timeout(LIMIT) else {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("serve-http did not say where it serves: {said:?}"));
            };
            said.push_str(&line);
            if let Some((_, url)) = line.split_once(" at http://") {
                let addr = url.trim_end_matches("/mcp").to_owned();
                return Ok(Serving { child, addr });
            }
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each line of `pipe`, as it comes, on a thread.
fn lines_of(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = crossbeam_channel::unbounded();
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// `test_trigger_prompt_change` announces a change of a list that stays
/// the same: the proxy listed again, saw nothing new, and said nothing.
fn passes_list_change() -> Result<(), String> {
    let serving = Serving::start(&[], &[])?;
    let mut listen = Command::new(BIN)
        .args(["listen", "--prompts", "--url", &serving.url()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let lines = lines_of(listen.stdout.take().expect("piped stdout"));
    let outcome = (|| {
        let first = lines.recv_timeout(LIMIT).map_err(|_| "no acknowledgment")?;
        if first != "listening: prompts" {
            return Err(format!("first line {first:?}"));
        }
        let args = [
            "call",
            "test_trigger_prompt_change",
            "--url",
            &serving.url(),
        ]
        .map(String::from);
        run(&args, &[], "")?.expect_code(0)?;
        match lines.recv_timeout(Duration::from_secs(10)) {
            Ok(line) if line == "prompts/list_changed" => Ok(()),
            Ok(line) => Err(format!("next line {line:?}")),
            Err(_) => Err("no prompts/list_changed within 10 s".to_owned()),
        }
    })();
    let _ = listen.kill();
    let _ = listen.wait();
    outcome
}

/// A POST of `tools/list` to `addr`, with `token` as its bearer token: the
/// response's status line.
fn status_with(addr: &str, token: Option<&str>) -> Result<String, String> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let authorization = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n{authorization}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut socket = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    socket
        .set_read_timeout(Some(LIMIT))
        .map_err(|e| e.to_string())?;
    socket
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut response = String::new();
    let _ = socket.read_to_string(&mut response);
    Ok(response.lines().next().unwrap_or_default().to_owned())
}

/// `--bearer-token` was the only way, in every `ps` listing.
fn token_elsewhere() -> Result<(), String> {
    let serving = Serving::start(&[], &[("MCP_STDIO_BEARER_TOKEN", "from-env")])?;
    let without = status_with(&serving.addr, None)?;
    let with = status_with(&serving.addr, Some("from-env"))?;
    if !without.contains(" 401 ") || !with.contains(" 200 ") {
        return Err(format!("environment: without {without:?}, with {with:?}"));
    }
    drop(serving);
    let dir = scratch("token-file");
    let file = dir.join("token");
    std::fs::write(&file, "from-file\n").map_err(|e| e.to_string())?;
    let file = file.to_string_lossy().into_owned();
    let serving = Serving::start(&["--bearer-token-file", &file], &[])?;
    let without = status_with(&serving.addr, None)?;
    let with = status_with(&serving.addr, Some("from-file"))?;
    if !without.contains(" 401 ") || !with.contains(" 200 ") {
        return Err(format!("file: without {without:?}, with {with:?}"));
    }
    Ok(())
}

/// `mcp-stdio --url` to a port nobody listens on said "the peer answered
/// with an error (-32603)", showed an answer under `--wire` that no server
/// sent (`←`), and fell back to `initialize`, as if a legacy server had
/// refused the probe.
fn refused_connection() -> Result<(), String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = run(
        &["--wire", "info", "--url", &url].map(String::from),
        &[],
        "",
    )?;
    run.expect_code(3)?
        .stderr_has("mcp-stdio: cannot connect to the server: ")?
        .stderr_has("Connection refused")?;
    for made_up in [
        "-32603",
        "answered with an error",
        "←",
        "initialize",
        "legacy",
    ] {
        if run.stderr.contains(made_up) {
            return Err(format!("says {made_up:?}: {:?}", run.stderr));
        }
    }
    Ok(())
}

/// A modern server whose body limit is below the probe's size answers it
/// `413`: that is no legacy server, and `initialize` (larger still) gets
/// the same; the failure says what the server answered.
fn body_limit_not_legacy() -> Result<(), String> {
    let serving = Serving::start(&["--max-body-bytes", "64"], &[])?;
    let run = run(
        &["--wire", "info", "--url", &serving.url()].map(String::from),
        &[],
        "",
    )?;
    run.expect_code(3)?.stderr_has("413")?;
    for wrong in ["initialize", "legacy", "-32603"] {
        if run.stderr.contains(wrong) {
            return Err(format!("says {wrong:?}: {:?}", run.stderr));
        }
    }
    Ok(())
}

/// The child's Tasks extension was left out of what `serve-http`
/// advertises (issue 49, item 6).
fn keeps_tasks_extension() -> Result<(), String> {
    let serving = Serving::start(&[], &[])?;
    let run = run(
        &["info", "--json", "--url", &serving.url()].map(String::from),
        &[],
        "",
    )?;
    run.expect_code(0)?;
    let info: serde_json::Value =
        serde_json::from_str(&run.stdout).map_err(|e| format!("{e}: {}", run.stdout))?;
    let extensions = &info["capabilities"]["extensions"];
    if extensions.get("io.modelcontextprotocol/tasks").is_none() {
        return Err(format!("no tasks extension: {}", info["capabilities"]));
    }
    Ok(())
}
