//! What the topics share: running `mcp-stdio check` (killed after
//! [`LIMIT`]) with a fault in its server's environment, reading its
//! `--format json` report, and a server of their own on loopback.

use std::io::Read;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Set in the server's environment: the fault it serves with.
pub const FAULT_ENV: &str = "MCP_STDIO_CHECK_FAULT";
/// The command line under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_mcp-stdio");
/// The longest one run of the checker may take.
pub const LIMIT: Duration = Duration::from_secs(120);
/// `--call` for the cancellation check: the everything example's slow
/// tool, slow enough to cancel.
pub const SLOW: &str = "slow={\"ms\":1500}";
/// `--call` for the MRTR checks: the everything example's tool that asks
/// for the user's name.
pub const ASKS: &str = "ask";
/// `--call` for the Tasks checks: the everything example's tool that is a
/// task when the client declares the extension.
pub const TASK: &str = "slow_compute={\"seconds\":0}";

/// One run of the checker: its exit status (`None` when it was killed
/// at its limit), stdout and stderr.
pub struct Run {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `mcp-stdio check ARGS`, with `fault` in its environment; killed
/// after [`LIMIT`].
pub fn check(args: &[&str], fault: Option<&str>) -> Run {
    check_within(args, fault, LIMIT)
}

/// Runs `mcp-stdio check ARGS`, with `fault` in its environment; killed
/// after `limit` (its status is then `None`).
pub fn check_within(args: &[&str], fault: Option<&str>, limit: Duration) -> Run {
    let mut command = Command::new(BIN);
    command
        .arg("check")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match fault {
        Some(fault) => command.env(FAULT_ENV, fault),
        None => command.env_remove(FAULT_ENV),
    };
    let mut child = command.spawn().expect("mcp-stdio starts");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

pub fn this_exe() -> String {
    std::env::current_exe()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The per-check objects of a `--format json` run (the summary left out).
pub fn outcomes(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("summary").is_none())
        .collect()
}

/// The outcome of check `id` in a `--format json` run.
pub fn outcome(run: &Run, id: &str) -> Result<Value, String> {
    outcomes(run)
        .into_iter()
        .find(|v| v["id"] == id)
        .ok_or_else(|| {
            format!(
                "{id} did not run (status {:?}): {}{}",
                run.status, run.stdout, run.stderr
            )
        })
}

/// Every check that failed (a MUST), with its reason.
pub fn failed(run: &Run) -> Vec<String> {
    outcomes(run)
        .iter()
        .filter(|v| v["status"] == "fail")
        .map(|v| format!("{}: {}", v["id"], v["reason"]))
        .collect()
}

/// A server on loopback that answers each connection with `exchange`, on
/// a thread of its own: its URL.
pub fn loopback(exchange: impl Fn(TcpStream) + Copy + Send + 'static) -> Result<String, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || exchange(stream));
        }
    });
    Ok(url)
}
