//! The client benchmark: MCP clients calling the floor server's `echo`,
//! so that the server costs nothing and the figures are the client's.
//!
//! ```text
//! clientbench [--rounds N] [--pin CPU] [--quick] --server PROGRAM [ARGS...] -- CLIENT...
//! clientbench --run raw|ours [--quick] [--phases] PROGRAM [ARGS...]
//! ```
//!
//! Each CLIENT is `raw` (a loop that writes a line and reads a line: the
//! client's floor), `ours` (this crate's `Client`), or `NAME=COMMAND`, an
//! external client run as `COMMAND... PROGRAM [ARGS...]` that prints the same
//! JSON object (see `tests/interop/python/client_bench.py` and
//! `tests/interop/ts/client_bench.mjs`). Every client runs in a process of
//! its own (the built-in ones as `clientbench --run`), round after round,
//! interleaved (A B C A B C ...); figures are medians over the rounds, and
//! ratios are to the first client.
//!
//! What one run measures, on one connection (one server process):
//!
//! - 1,000 warm-up calls, then 5,000 sequential calls: p50 and p99 of each
//!   call's round trip as the caller sees it;
//! - 20,000 calls from 1, 8 and 64 threads sharing the one client (each
//!   thread's calls one after another): calls per second;
//! - the client process's CPU time (`utime + stime`) over those 60,000
//!   calls, per call, and its peak RSS (`VmHWM`) at the end.
//!
//! Every reply's text is checked against its call's. `--pin CPU` runs each
//! client (and so its server) under `taskset -c CPU`. `--quick`: tiny
//! counts, to check that everything works. `--phases` (with `--run ours`):
//! the process's peak, anonymous and file-backed memory after each phase,
//! on stderr, to see where the peak RSS comes from.
//!
//! ```text
//! cargo build --profile floor --example floor --example clientbench
//! target/floor/examples/clientbench --server target/floor/examples/floor -- raw ours
//! ```

mod clients;

use std::process::{Command, ExitCode};

use serde_json::Value;

/// The figures, in the order they are printed, with their units.
const FIGURES: &[(&str, &str, &str)] = &[
    ("seq_p50_us", "sequential round trip p50", "us"),
    ("seq_p99_us", "sequential round trip p99", "us"),
    ("tput_1", "calls/s, 1 thread", "calls/s"),
    ("tput_8", "calls/s, 8 threads", "calls/s"),
    ("tput_64", "calls/s, 64 threads", "calls/s"),
    ("cpu_us_per_call", "client CPU per call", "us"),
    ("rss_kib", "client peak RSS (VmHWM)", "KiB"),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("clientbench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let mut rounds = 3;
    let mut pin: Option<String> = None;
    let mut quick = false;
    let mut phases = false;
    let mut i = 0;
    let mut run_one: Option<String> = None;
    while i < args.len() {
        match args[i].as_str() {
            "--rounds" => {
                rounds = args
                    .get(i + 1)
                    .and_then(|n| n.parse().ok())
                    .ok_or("--rounds needs a number")?;
                i += 2;
            }
            "--pin" => {
                pin = Some(args.get(i + 1).ok_or("--pin needs a CPU")?.clone());
                i += 2;
            }
            "--quick" => {
                quick = true;
                i += 1;
            }
            "--phases" => {
                phases = true;
                i += 1;
            }
            "--run" => {
                run_one = Some(args.get(i + 1).ok_or("--run needs raw or ours")?.clone());
                i += 2;
            }
            "--server" => {
                i += 1;
                break;
            }
            _ => break,
        }
    }
    let rest = &args[i..];
    if let Some(which) = run_one {
        let mut counts = clients::Counts::new(quick);
        counts.phases = phases;
        let figures = match which.as_str() {
            "raw" => clients::raw(rest, &counts)?,
            "ours" => clients::ours(rest, &counts)?,
            other => return Err(format!("unknown built-in client {other:?}")),
        };
        println!("{figures}");
        return Ok(());
    }
    let split = rest.iter().position(|a| a == "--").ok_or(
        "usage: clientbench [--rounds N] [--pin CPU] --server PROGRAM [ARGS...] -- CLIENT...",
    )?;
    let (server, clients) = (&rest[..split], &rest[split + 1..]);
    if server.is_empty() || clients.is_empty() {
        return Err("a server command and at least one client are needed".into());
    }
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut results: Vec<Vec<Value>> = vec![Vec::new(); clients.len()];
    for round in 1..=rounds {
        for (n, client) in clients.iter().enumerate() {
            eprintln!("clientbench: round {round}/{rounds}: {client}");
            let mut command: Vec<String> = match client.split_once('=') {
                Some((_, cmd)) => cmd.split_whitespace().map(str::to_owned).collect(),
                None => {
                    let mut c = vec![me.display().to_string(), "--run".into(), client.clone()];
                    if quick {
                        c.push("--quick".into());
                    }
                    c
                }
            };
            command.extend(server.iter().cloned());
            if let Some(cpu) = &pin {
                command.splice(0..0, ["taskset".to_owned(), "-c".into(), cpu.clone()]);
            }
            let mut child = Command::new(&command[0]);
            child.args(&command[1..]);
            if quick {
                child.env("CLIENTBENCH_QUICK", "1");
            }
            let out = child.output().map_err(|e| format!("{}: {e}", command[0]))?;
            if !out.status.success() {
                return Err(format!(
                    "{client} failed ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text.lines().last().unwrap_or_default();
            let figures: Value = serde_json::from_str(line)
                .map_err(|e| format!("{client} printed no figures ({e}): {text}"))?;
            results[n].push(figures);
        }
    }
    report(clients, &results, rounds, pin.as_deref());
    Ok(())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn report(clients: &[String], results: &[Vec<Value>], rounds: usize, pin: Option<&str>) {
    let pinned = pin.map_or("not pinned".to_owned(), |cpu| {
        format!("pinned to CPU {cpu}")
    });
    println!("{rounds} round(s), interleaved, medians; {pinned}");
    for (n, client) in clients.iter().enumerate() {
        println!("{} = {client}", (b'A' + n as u8) as char);
    }
    print!("{:<28} {:>8}", "figure", "unit");
    for n in 0..clients.len() {
        print!(" {:>10}", (b'A' + n as u8) as char);
    }
    for n in 1..clients.len() {
        print!(" {:>7}", format!("{}/A", (b'A' + n as u8) as char));
    }
    println!();
    for (key, name, unit) in FIGURES {
        let medians: Vec<f64> = results
            .iter()
            .map(|runs| median(runs.iter().filter_map(|r| r[key].as_f64()).collect()))
            .collect();
        print!("{name:<28} {unit:>8}");
        for m in &medians {
            print!(" {:>10}", format_figure(*m));
        }
        for m in &medians[1..] {
            print!(" {:>7.2}", m / medians[0]);
        }
        println!();
    }
}

fn format_figure(value: f64) -> String {
    if value >= 1000.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
    }
}
