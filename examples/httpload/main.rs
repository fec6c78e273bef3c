//! Load generator for MCP servers over Streamable HTTP (2026-07-28,
//! stateless): `tools/call echo` POSTs on keep-alive HTTP/1.1 connections
//! (plain `TcpStream`s), against servers that are already running.
//!
//! ```text
//! httpload [--rounds N] [--calls N] [--warmup N] [--conns 1,16] [--client] LABEL=URL@PID ...
//!
//! LABEL=URL@PID   a server: its name in the table, its endpoint
//!                 (http://127.0.0.1:PORT/mcp) and its process id, whose
//!                 /proc/PID/stat and /proc/PID/status give CPU and RSS
//! --rounds N      rounds (default 5); each round measures every server in
//!                 turn (A B C A B C ...), the figures are medians of rounds
//! --calls N       timed calls per server, round and connection count
//!                 (default 2000), spread evenly over the connections
//! --warmup N      untimed calls on each connection first (default 100)
//! --conns LIST    connection counts, comma-separated (default 1,16)
//! --client        also through this crate's `Client` (features `client` and
//!                 `http`): one client per server, as many threads sharing
//!                 it as the connection count; after each raw measurement,
//!                 in the same round, and the table adds the client's p50
//!                 over the raw one (the server's own time: the least any
//!                 client can take)
//! ```
//!
//! Per server, round and connection count: every connection opens, warms up,
//! then makes its share of the calls one after another (request → response,
//! keep-alive); latency is per call, calls/s is all calls over the wall time
//! from the first timed call to the last answer, CPU per call is the
//! server's `utime + stime` over them. After the last round, the server's
//! peak (`VmHWM`) and current (`VmRSS`) resident set. Every answer is
//! checked (status 200, JSON, its id and the echoed text); the first wrong
//! one is an error (exit status 1). The output is a markdown table.
//!
//! `scripts/bench-http.sh` builds and starts the servers and runs this.

mod client;
mod conn;
#[path = "../loadgen/procfs.rs"]
mod procfs;

use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use conn::{Conn, Endpoint};

/// A server under test.
pub(crate) struct Target {
    label: String,
    endpoint: Endpoint,
    pid: u32,
}

pub(crate) struct Options {
    rounds: usize,
    calls: usize,
    warmup: usize,
    conns: Vec<usize>,
    /// Also through `mcp_stdio::Client`.
    client: bool,
    targets: Vec<Target>,
}

/// One measurement: a server, a connection count, a round.
pub(crate) struct Sample {
    p50_us: f64,
    p99_us: f64,
    calls_per_s: f64,
    cpu_us_per_call: f64,
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1).collect()) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("httpload: {e}\n{}", usage());
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("httpload: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> &'static str {
    "usage: httpload [--rounds N] [--calls N] [--warmup N] [--conns 1,16] [--client] LABEL=URL@PID ..."
}

fn parse(args: Vec<String>) -> Result<Options, String> {
    let mut options = Options {
        rounds: 5,
        calls: 2000,
        warmup: 100,
        conns: vec![1, 16],
        client: false,
        targets: Vec::new(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--rounds" => options.rounds = number(&value("--rounds")?)?,
            "--calls" => options.calls = number(&value("--calls")?)?,
            "--warmup" => options.warmup = number(&value("--warmup")?)?,
            "--client" if cfg!(all(feature = "client", feature = "http")) => {
                options.client = true;
            }
            "--client" => return Err("--client needs the features client and http".into()),
            "--conns" => {
                options.conns = value("--conns")?
                    .split(',')
                    .map(number)
                    .collect::<Result<_, _>>()?;
            }
            target => options.targets.push(parse_target(target)?),
        }
    }
    if options.targets.is_empty() {
        return Err("no server given".into());
    }
    if options.rounds == 0 || options.conns.contains(&0) || options.calls == 0 {
        return Err("--rounds, --calls and every --conns count must be at least 1".into());
    }
    Ok(options)
}

fn number(s: &str) -> Result<usize, String> {
    s.parse()
        .map_err(|_| format!("{s:?} is not a whole number"))
}

fn parse_target(arg: &str) -> Result<Target, String> {
    let bad = || format!("{arg:?} is not LABEL=URL@PID");
    let (label, rest) = arg.split_once('=').ok_or_else(bad)?;
    let (url, pid) = rest.rsplit_once('@').ok_or_else(bad)?;
    Ok(Target {
        label: label.to_owned(),
        endpoint: Endpoint::parse(url)?,
        pid: pid.parse().map_err(|_| bad())?,
    })
}

fn run(options: &Options) -> Result<(), String> {
    // samples[target][conns index] = one Sample per round; the same
    // through the crate's client.
    let empty = || -> Vec<Vec<Vec<Sample>>> {
        (options.targets.iter())
            .map(|_| options.conns.iter().map(|_| Vec::new()).collect())
            .collect()
    };
    let (mut samples, mut through_client) = (empty(), empty());
    for round in 0..options.rounds {
        for (t, target) in options.targets.iter().enumerate() {
            for (c, &conns) in options.conns.iter().enumerate() {
                let sample = measure(target, conns, options)
                    .map_err(|e| format!("{} with {conns} connection(s): {e}", target.label))?;
                report(round, &target.label, conns, &sample);
                samples[t][c].push(sample);
                if options.client {
                    let sample = client::measure(target, conns, options).map_err(|e| {
                        format!("{} with the client, {conns} thread(s): {e}", target.label)
                    })?;
                    report(round, &format!("{} (Client)", target.label), conns, &sample);
                    through_client[t][c].push(sample);
                }
            }
        }
    }
    println!(
        "| Server | Connections | p50 (µs) | p99 (µs) | calls/s | server CPU per call (µs) | peak RSS (VmHWM, KiB) | RSS after (VmRSS, KiB) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (t, target) in options.targets.iter().enumerate() {
        let hwm = procfs::peak_rss_kib(target.pid)?;
        let rss = procfs::rss_kib(target.pid)?;
        for (c, &conns) in options.conns.iter().enumerate() {
            let of = |f: fn(&Sample) -> f64| median(samples[t][c].iter().map(f).collect());
            println!(
                "| {} | {conns} | {:.0} | {:.0} | {:.0} | {:.1} | {hwm} | {rss} |",
                target.label,
                of(|s| s.p50_us),
                of(|s| s.p99_us),
                of(|s| s.calls_per_s),
                of(|s| s.cpu_us_per_call),
            );
            if options.client {
                let by =
                    |f: fn(&Sample) -> f64| median(through_client[t][c].iter().map(f).collect());
                println!(
                    "| {} through Client | {conns} | {:.0} | {:.0} | {:.0} | {:.1} | | |",
                    target.label,
                    by(|s| s.p50_us),
                    by(|s| s.p99_us),
                    by(|s| s.calls_per_s),
                    by(|s| s.cpu_us_per_call),
                );
            }
        }
    }
    if options.client {
        println!();
        println!("| Server | Threads | Client p50 / raw p50 |");
        println!("|---|---:|---:|");
        for (t, target) in options.targets.iter().enumerate() {
            for (c, &conns) in options.conns.iter().enumerate() {
                let p50 = |s: &[Sample]| median(s.iter().map(|s| s.p50_us).collect());
                let ratio = p50(&through_client[t][c]) / p50(&samples[t][c]);
                println!("| {} | {conns} | {ratio:.2} |", target.label);
            }
        }
    }
    Ok(())
}

fn report(round: usize, label: &str, conns: usize, sample: &Sample) {
    eprintln!(
        "round {}: {label} x{conns}: p50 {:.0} µs, p99 {:.0} µs, {:.0} calls/s, {:.1} µs CPU/call",
        round + 1,
        sample.p50_us,
        sample.p99_us,
        sample.calls_per_s,
        sample.cpu_us_per_call
    );
}

/// `options.calls` calls spread over `conns` connections, each its own thread.
fn measure(target: &Target, conns: usize, options: &Options) -> Result<Sample, String> {
    let per_conn = options.calls.div_ceil(conns);
    let start = Arc::new(Barrier::new(conns + 1));
    let threads: Vec<_> = (0..conns)
        .map(|i| {
            let (endpoint, start, warmup) =
                (target.endpoint.clone(), Arc::clone(&start), options.warmup);
            thread::spawn(move || -> Result<Vec<Duration>, String> {
                let opened = Conn::open(&endpoint).and_then(|mut conn| {
                    let base = (i as u64 + 1) * 1_000_000;
                    for n in 0..warmup as u64 {
                        conn.call(base + n, &format!("warm {i} {n}"))?;
                    }
                    Ok(conn)
                });
                start.wait(); // every connection is warm: the clock starts
                let mut conn = opened?;
                let base = (i as u64 + 1) * 1_000_000 + 500_000;
                let mut latencies = Vec::with_capacity(per_conn);
                for n in 0..per_conn as u64 {
                    let sent = Instant::now();
                    conn.call(base + n, &format!("call {i} {n}"))?;
                    latencies.push(sent.elapsed());
                }
                Ok(latencies)
            })
        })
        .collect();
    start.wait();
    let cpu_before = procfs::cpu_seconds(target.pid)?;
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(per_conn * conns);
    let mut failure = None;
    for thread in threads {
        match thread
            .join()
            .map_err(|_| "a connection thread panicked".to_owned())
        {
            Ok(Ok(mut l)) => latencies.append(&mut l),
            Ok(Err(e)) | Err(e) => failure = failure.or(Some(e)),
        }
    }
    let wall = started.elapsed();
    let cpu = procfs::cpu_seconds(target.pid)? - cpu_before;
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(summarize(latencies, wall, cpu))
}

/// The figures of calls that took `latencies`, over `wall` in all, with
/// `cpu` seconds of the server's.
pub(crate) fn summarize(mut latencies: Vec<Duration>, wall: Duration, cpu: f64) -> Sample {
    latencies.sort_unstable();
    let calls = latencies.len() as f64;
    Sample {
        p50_us: micros(percentile(&latencies, 0.50)),
        p99_us: micros(percentile(&latencies, 0.99)),
        calls_per_s: calls / wall.as_secs_f64(),
        cpu_us_per_call: cpu * 1e6 / calls,
    }
}

/// The `p` quantile of `sorted` (nearest rank).
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
