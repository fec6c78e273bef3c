//! The built-in clients: `raw` (the client's floor) and `ours` (this
//! crate's `Client`), each measuring itself in its own process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use mcp_stdio::{Client, Outcome};
use serde_json::{Value, json};

/// How many calls each phase makes.
pub struct Counts {
    warmup: usize,
    sequential: usize,
    /// Calls per throughput phase, spread over its threads.
    throughput: usize,
    /// Print the process's memory after each phase, on stderr.
    pub phases: bool,
}

impl Counts {
    pub fn new(quick: bool) -> Counts {
        if quick || std::env::var_os("CLIENTBENCH_QUICK").is_some() {
            Counts {
                warmup: 10,
                sequential: 50,
                throughput: 640,
                phases: false,
            }
        } else {
            Counts {
                warmup: 1_000,
                sequential: 5_000,
                throughput: 20_000,
                phases: false,
            }
        }
    }

    /// With `phases`: this process's peak, anonymous and file-backed
    /// memory, after `phase`.
    fn show_memory(&self, phase: &str) {
        if !self.phases {
            return;
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map_or("?", |v| v.trim().trim_end_matches(" kB"))
                .to_owned()
        };
        eprintln!(
            "after {phase}: VmHWM {} KiB, RssAnon {} KiB, RssFile {} KiB",
            kib("VmHWM:"),
            kib("RssAnon:"),
            kib("RssFile:")
        );
    }
}

/// The thread counts of the throughput phases.
const THREADS: [usize; 3] = [1, 8, 64];

/// The text of call `n`: unique, 32 bytes.
fn text(n: usize) -> String {
    format!("{n:>10}-abcdefghijklmnopqrstu")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// This process's CPU time so far (`utime + stime`), in microseconds.
fn cpu_us() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command (which may hold spaces) start at ") ".
    let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 (1-based), 12 and 13 here.
    (ticks(11) + ticks(12)) * 1e6 / 100.0
}

fn vm_hwm_kib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// The figures of one run, from the sequential latencies (µs), the
/// calls/s of each throughput phase and the CPU time over them.
fn figures(mut latencies: Vec<f64>, tput: [f64; 3], cpu: f64, calls: usize) -> Value {
    latencies.sort_by(f64::total_cmp);
    json!({
        "seq_p50_us": percentile(&latencies, 0.50),
        "seq_p99_us": percentile(&latencies, 0.99),
        "tput_1": tput[0],
        "tput_8": tput[1],
        "tput_64": tput[2],
        "cpu_us_per_call": cpu / calls as f64,
        "rss_kib": vm_hwm_kib(),
    })
}

/// The raw loop: a line written, a line read. With a window of `n`, `n`
/// calls are in flight at once from the one thread (a pipelined loop is
/// the most any number of threads could get out of one connection).
pub fn raw(server: &[String], counts: &Counts) -> Result<Value, String> {
    let mut child = Command::new(&server[0])
        .args(&server[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", server[0]))?;
    let mut input = child.stdin.take().expect("piped");
    let mut output = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut send = |n: usize| -> Result<(), String> {
        let call = json!({
            "jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": { "_meta": meta, "name": "echo", "arguments": { "text": text(n) } }
        });
        let mut bytes = serde_json::to_vec(&call).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        input.write_all(&bytes).map_err(|e| e.to_string())?;
        input.flush().map_err(|e| e.to_string())
    };
    let mut receive = |line: &mut String| -> Result<(), String> {
        line.clear();
        output.read_line(line).map_err(|e| e.to_string())?;
        let reply: Value = serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
        let n = reply["id"].as_u64().ok_or("a reply without an id")? as usize;
        if reply["result"]["content"][0]["text"] != text(n) {
            return Err(format!("wrong reply: {line}"));
        }
        Ok(())
    };
    let mut next = 0;
    let mut latencies = Vec::with_capacity(counts.sequential);
    for i in 0..counts.warmup + counts.sequential {
        let started = Instant::now();
        send(next)?;
        receive(&mut line)?;
        next += 1;
        if i >= counts.warmup {
            latencies.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    let cpu_before = cpu_us();
    let mut tput = [0.0; 3];
    for (slot, window) in THREADS.iter().enumerate() {
        let started = Instant::now();
        let (mut sent, mut got) = (0, 0);
        while got < counts.throughput {
            while sent < counts.throughput && sent - got < *window {
                send(next + sent)?;
                sent += 1;
            }
            receive(&mut line)?;
            got += 1;
        }
        next += sent;
        tput[slot] = counts.throughput as f64 / started.elapsed().as_secs_f64();
    }
    let cpu = cpu_us() - cpu_before;
    drop(input);
    let _ = child.wait();
    Ok(figures(latencies, tput, cpu, 3 * counts.throughput))
}

/// This crate's `Client`: `call_tool` from the calling thread, shared by
/// every thread of a throughput phase.
pub fn ours(server: &[String], counts: &Counts) -> Result<Value, String> {
    let mut command = Command::new(&server[0]);
    command.args(&server[1..]);
    let client = Client::spawn(command).map_err(|e| e.to_string())?;
    let call = |n: usize| -> Result<(), String> {
        let want = text(n);
        match client.call_tool("echo", json!({ "text": want })) {
            Ok(Outcome::Complete(result)) if result.content[0].as_text() == Some(&want) => Ok(()),
            other => Err(format!("wrong reply to call {n}: {other:?}")),
        }
    };
    let mut latencies = Vec::with_capacity(counts.sequential);
    for i in 0..counts.warmup + counts.sequential {
        let started = Instant::now();
        call(i)?;
        if i >= counts.warmup {
            latencies.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    counts.show_memory("the sequential calls");
    let cpu_before = cpu_us();
    let mut tput = [0.0; 3];
    for (slot, threads) in THREADS.iter().enumerate() {
        let per_thread = counts.throughput / threads;
        let started = Instant::now();
        std::thread::scope(|scope| -> Result<(), String> {
            let handles: Vec<_> = (0..*threads)
                .map(|t| {
                    let call = &call;
                    scope.spawn(move || -> Result<(), String> {
                        for i in 0..per_thread {
                            call(t * per_thread + i)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            for handle in handles {
                handle.join().map_err(|_| "a thread panicked")??;
            }
            Ok(())
        })?;
        tput[slot] = (per_thread * threads) as f64 / started.elapsed().as_secs_f64();
        counts.show_memory(&format!("{threads} threads"));
    }
    let cpu = cpu_us() - cpu_before;
    client.close().map_err(|e| e.to_string())?;
    Ok(figures(latencies, tput, cpu, 3 * counts.throughput))
}
