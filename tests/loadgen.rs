//! The load generator (`examples/loadgen/`) on short runs: it runs, every
//! figure comes out, every reply is checked, and a wrong or missing reply is
//! caught. No figure is compared with anything: the numbers come from the
//! benchmark only (BENCHMARKS.md).
//!
//! The loadgen's modules and the floor (`examples/floor.rs`) are compiled
//! into this binary, which re-executes itself as the server under test: with
//! the first argument `serve-echo` it serves the echo server of
//! `examples/echo.rs`, built with the crate; `serve-floor` runs the floor;
//! `serve-corrupt` and `serve-lossy` are broken servers the loadgen must
//! reject. Without an argument, `main` runs the checks below in-process.
//!
//! Output: one line per check (`ok <name>` or `FAILED <name>: <reason>`),
//! then `N passed, M failed`; the exit status is non-zero if any check
//! failed. Every server process has a watchdog (the plan's deadline).

#[path = "../examples/floor.rs"]
#[allow(dead_code)] // the example's own `main`
mod floor;
#[path = "../examples/loadgen/measure.rs"]
#[allow(dead_code)]
mod measure;
#[path = "../examples/loadgen/process.rs"]
#[allow(dead_code)]
mod process;
#[path = "../examples/loadgen/procfs.rs"]
#[allow(dead_code)]
mod procfs;
#[path = "../examples/loadgen/report.rs"]
#[allow(dead_code)]
mod report;
#[path = "../examples/loadgen/wire.rs"]
#[allow(dead_code)]
mod wire;

use std::io::{BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde::Deserialize;
use serde_json::{Value, json};

use measure::{Measurement, Plan};
use process::ServerCommand;

/// The figures every measurement has, once.
const GLOBAL_FIGURES: &[&str] = &[
    "startup",
    "exit_idle",
    "rss_idle",
    "rss_before_burst",
    "rss_after_burst",
];
/// The figures every measurement has at every payload size.
const SIZE_FIGURES: &[&str] = &[
    "latency_p50",
    "latency_p90",
    "latency_p99",
    "latency_p50_per_byte",
    "throughput",
    "pipelined_per_byte",
    "cpu_per_1k",
    "rss_load",
    "answered_at_eof",
];
/// The call whose text `serve-corrupt` alters (in the pipelined phase of
/// [`tiny_plan`]).
const CORRUPTED_CALL: usize = 100;
/// How long `serve-lossy` holds each reply back, waiting for the next line.
const LOSSY_HOLD: Duration = Duration::from_millis(20);

fn main() {
    let served = match std::env::args().nth(1).as_deref() {
        Some("serve-echo") => serve_echo(),
        Some("serve-floor") => floor::serve_floor().map_err(|e| e.to_string()),
        Some("serve-corrupt") => serve_corrupt().map_err(|e| e.to_string()),
        Some("serve-lossy") => serve_lossy().map_err(|e| e.to_string()),
        _ => std::process::exit(run_checks()),
    };
    if let Err(e) = served {
        eprintln!("server: {e}");
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------
// Server modes
// ---------------------------------------------------------------------------

/// `examples/echo.rs`.
fn serve_echo() -> Result<(), String> {
    #[derive(Deserialize)]
    #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
    struct EchoArgs {
        text: String,
    }
    let echo = Tool::new("echo", "Returns its text unchanged.").input_schema(json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    }));
    let server = Server::builder("echo", "1.0.0")
        .inline_tool(echo, |_ctx, args: EchoArgs| {
            Ok(CallToolResult::text(args.text))
        })
        .build();
    mcp_stdio::signal::stop_on_signals(server.stop_handle()).map_err(|e| e.to_string())?;
    server.serve(Transport::stdio()).map_err(|e| e.to_string())
}

/// The reply a well-behaved echo server gives to `request`, if any.
fn echo_reply(request: &Value, text: Option<String>) -> Option<Value> {
    let id = request.get("id")?;
    Some(match request["method"].as_str() {
        Some("server/discover") => json!({"jsonrpc": "2.0", "id": id, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}}),
        _ => {
            let text = text.unwrap_or_else(|| {
                request["params"]["arguments"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            });
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": text}], "resultType": "complete"}})
        }
    })
}

/// Echoes, except that the text of the [`CORRUPTED_CALL`]th call comes back
/// with its last byte changed.
fn serve_corrupt() -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let mut calls = 0;
    for line in std::io::stdin().lock().lines() {
        let request: Value = serde_json::from_str(&line?)?;
        let mut text = None;
        if request["method"] == "tools/call" {
            calls += 1;
            if calls == CORRUPTED_CALL {
                let mut t = request["params"]["arguments"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                t.pop();
                t.push('!');
                text = Some(t);
            }
        }
        if let Some(reply) = echo_reply(&request, text) {
            writeln!(out, "{reply}")?;
            out.flush()?;
        }
    }
    Ok(())
}

/// Echoes, but holds each call's reply back until the next line arrives (or
/// [`LOSSY_HOLD`] passes), and exits at end of input without sending the one
/// it holds: the last call in flight at EOF is lost.
fn serve_lossy() -> std::io::Result<()> {
    let (lines, incoming) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut out = std::io::stdout().lock();
    let mut held: Option<Value> = None;
    loop {
        let next = if held.is_some() {
            incoming.recv_timeout(LOSSY_HOLD)
        } else {
            incoming
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        };
        let line = match next {
            Ok(line) => Some(line),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()), // `held` is lost
        };
        if let Some(reply) = held.take() {
            writeln!(out, "{reply}")?;
            out.flush()?;
        }
        let Some(line) = line else { continue };
        let request: Value = serde_json::from_str(&line)?;
        match echo_reply(&request, None) {
            Some(reply) if request["method"] == "tools/call" => held = Some(reply),
            Some(reply) => {
                writeln!(out, "{reply}")?;
                out.flush()?;
            }
            None => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// A check: `Err` says what went wrong.
type Check = fn() -> Result<(), String>;

fn run_checks() -> i32 {
    let checks: &[(&str, Check)] = &[
        (
            "quick_run_against_echo_checks_every_reply",
            quick_run_against_echo,
        ),
        (
            "quick_run_against_floor_checks_every_reply",
            quick_run_against_floor,
        ),
        (
            "report_has_a_row_and_a_json_object_per_figure",
            report_has_every_figure,
        ),
        ("pinned_run_works", pinned_run_works),
        ("a_wrong_text_is_an_error", wrong_text_is_an_error),
        ("a_call_lost_at_eof_is_an_error", lost_call_is_an_error),
    ];
    // All at once, each on a thread of its own: each runs server processes
    // of its own and mostly waits for them (15 s one after the other).
    let outcomes: Vec<_> = std::thread::scope(|scope| {
        let running: Vec<_> = (checks.iter())
            .map(|(_, check)| scope.spawn(move || catch_unwind(AssertUnwindSafe(check))))
            .collect();
        running.into_iter().map(|check| check.join()).collect()
    });
    let (mut passed, mut failed) = (0, 0);
    for ((name, _), outcome) in checks.iter().zip(outcomes) {
        match outcome {
            Ok(Ok(Ok(()))) => {
                println!("ok {name}");
                passed += 1;
            }
            Ok(Ok(Err(reason))) => {
                println!("FAILED {name}: {reason}");
                failed += 1;
            }
            _ => {
                println!("FAILED {name}: panicked");
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    i32::from(failed > 0)
}

/// This binary as the server `mode`.
fn server(mode: &str) -> ServerCommand {
    let exe = std::env::current_exe().expect("own path");
    ServerCommand::new(exe.to_string_lossy(), [mode.to_owned()])
}

/// One process per phase, a handful of calls, one small payload.
fn tiny_plan() -> Plan {
    Plan {
        startups: 1,
        sizes: vec![32],
        warmup: 2,
        sequential: 10,
        pipelined: 200,
        window: 16,
        at_eof: 16,
        min_calls: 1,
        ..Plan::quick()
    }
}

fn quick_run_against_echo() -> Result<(), String> {
    check_quick_run(&server("serve-echo")).map(drop)
}

fn quick_run_against_floor() -> Result<(), String> {
    check_quick_run(&server("serve-floor")).map(drop)
}

/// Runs `Plan::quick()` and checks the measurement.
fn check_quick_run(command: &ServerCommand) -> Result<Measurement, String> {
    let plan = Plan::quick();
    let m = measure::measure(command, &plan)?;
    check_measurement(&m, &plan)?;
    Ok(m)
}

/// Every call of the plan got a checked reply, and every figure is there
/// once, finite and positive. CPU time may be zero: the kernel counts it in
/// clock ticks (10 ms) and a quick run can stay below one.
fn check_measurement(m: &Measurement, plan: &Plan) -> Result<(), String> {
    if m.replies_checked != plan.replies() {
        return Err(format!(
            "{} replies checked, the plan makes {}",
            m.replies_checked,
            plan.replies()
        ));
    }
    let expected = GLOBAL_FIGURES.iter().map(|&name| (name, None)).chain(
        plan.sizes
            .iter()
            .flat_map(|&size| SIZE_FIGURES.iter().map(move |&name| (name, Some(size)))),
    );
    let mut count = 0;
    for (name, payload) in expected {
        count += 1;
        let found: Vec<_> = m
            .figures
            .iter()
            .filter(|f| f.name == name && f.payload == payload)
            .collect();
        let [figure] = found.as_slice() else {
            return Err(format!(
                "{name} at {payload:?}: {} figures, want 1",
                found.len()
            ));
        };
        let ok = figure.value.is_finite()
            && (figure.value > 0.0 || (name == "cpu_per_1k" && figure.value == 0.0));
        if !ok {
            return Err(format!("{name} at {payload:?} is {}", figure.value));
        }
        if name == "answered_at_eof" {
            let want = plan.counts(payload.unwrap_or(0)).at_eof as f64;
            if figure.value != want {
                return Err(format!(
                    "answered_at_eof at {payload:?} is {}, want {want}",
                    figure.value
                ));
            }
        }
    }
    if m.figures.len() != count {
        return Err(format!("{} figures, want {count}", m.figures.len()));
    }
    Ok(())
}

fn report_has_every_figure() -> Result<(), String> {
    let plan = tiny_plan();
    let floor = measure::measure(&server("serve-floor"), &plan)?;
    let echo = measure::measure(&server("serve-echo"), &plan)?;
    let figures = floor.figures.len();
    let rows = report::summarize(&[vec![floor.clone(), floor], vec![echo.clone(), echo]]);
    if rows.len() != figures {
        return Err(format!("{} rows for {figures} figures", rows.len()));
    }
    let labels = vec!["floor".to_owned(), "echo".to_owned()];
    let mut table = Vec::new();
    report::write_table(&mut table, &labels, &rows).map_err(|e| e.to_string())?;
    let table = String::from_utf8(table).map_err(|e| e.to_string())?;
    // Two legend lines, the heading, one line per row.
    if table.lines().count() != 3 + rows.len() || !table.contains("B/A") {
        return Err(format!("unexpected table:\n{table}"));
    }
    let mut json = Vec::new();
    report::write_json(&mut json, &labels, &rows).map_err(|e| e.to_string())?;
    let objects: Vec<Value> = String::from_utf8_lossy(&json)
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("JSON output: {e}"))?;
    if objects.len() != 2 * rows.len() {
        return Err(format!(
            "{} JSON objects for {} rows",
            objects.len(),
            rows.len()
        ));
    }
    for object in &objects {
        let fields = [
            "server",
            "figure",
            "payload_bytes",
            "unit",
            "value",
            "rounds",
            "ratio",
        ];
        if let Some(missing) = fields.iter().find(|f| object.get(**f).is_none()) {
            return Err(format!("no {missing} in {object}"));
        }
        if object["rounds"].as_array().map(Vec::len) != Some(2) {
            return Err(format!("want two rounds in {object}"));
        }
    }
    Ok(())
}

fn pinned_run_works() -> Result<(), String> {
    if std::process::Command::new("taskset")
        .arg("-V")
        .output()
        .is_err()
    {
        println!("  (no taskset on this machine: skipped)");
        return Ok(());
    }
    let plan = tiny_plan();
    let command = ServerCommand {
        pin: Some(0),
        ..server("serve-floor")
    };
    let m = measure::measure(&command, &plan)?;
    check_measurement(&m, &plan)
}

fn wrong_text_is_an_error() -> Result<(), String> {
    match measure::measure(&server("serve-corrupt"), &tiny_plan()) {
        Err(e) if e.contains("does not carry the text") => Ok(()),
        Err(e) => Err(format!("failed, but not for the text: {e}")),
        Ok(_) => Err("a corrupted reply went unnoticed".to_owned()),
    }
}

fn lost_call_is_an_error() -> Result<(), String> {
    match measure::measure(&server("serve-lossy"), &tiny_plan()) {
        Err(e) if e.contains("1 of 16 calls in flight at end of input got no reply") => Ok(()),
        Err(e) => Err(format!("failed, but not for the lost call: {e}")),
        Ok(_) => Err("a call lost at end of input went unnoticed".to_owned()),
    }
}
