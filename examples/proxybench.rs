//! Times `tools/call echo` through Streamable HTTP proxies of a stdio
//! server, as one client session sees them (`scripts/bench-serve-http.sh`
//! starts the proxies: `mcp-stdio serve-http`, supergateway, mcp-proxy).
//!
//! ```text
//! proxybench [--calls N] [--warmup N] [--rounds N] LABEL=URL ...
//! ```
//!
//! Each round measures every proxy in turn (A B C A B C ...) with a new
//! client of the initialize era (what all of them serve): `--warmup`
//! untimed calls, then `--calls` calls one after another, each checked
//! (the echoed text). Prints one markdown row per proxy: median p50, p99
//! and calls/s over the rounds.

use std::time::{Duration, Instant};

use mcp_stdio::{Client, EraPolicy};
use serde_json::json;

fn main() {
    let mut calls = 1000;
    let mut warmup = 100;
    let mut rounds = 3;
    let mut targets = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> usize {
            let value = args.next().and_then(|v| v.parse().ok());
            value.unwrap_or_else(|| panic!("{name} takes a number"))
        };
        match arg.as_str() {
            "--calls" => calls = number("--calls"),
            "--warmup" => warmup = number("--warmup"),
            "--rounds" => rounds = number("--rounds"),
            _ => {
                let (label, url) = arg.split_once('=').expect("LABEL=URL");
                targets.push((label.to_owned(), url.to_owned(), Vec::new()));
            }
        }
    }
    for round in 0..rounds {
        for (label, url, figures) in &mut targets {
            eprintln!("round {}: {label}", round + 1);
            figures.push(measure(url, calls, warmup));
        }
    }
    println!("| proxy | p50 µs | p99 µs | calls/s |");
    println!("|---|---:|---:|---:|");
    for (label, _, figures) in &targets {
        let median = |pick: fn(&Figures) -> f64| {
            let mut values: Vec<f64> = figures.iter().map(pick).collect();
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        println!(
            "| {label} | {:.0} | {:.0} | {:.0} |",
            median(|f| f.p50),
            median(|f| f.p99),
            median(|f| f.per_second)
        );
    }
}

struct Figures {
    p50: f64,
    p99: f64,
    per_second: f64,
}

fn measure(url: &str, calls: usize, warmup: usize) -> Figures {
    let client = Client::builder()
        .era(EraPolicy::LegacyOnly)
        .request_timeout(Duration::from_secs(30))
        .connect_url(url)
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let call = |i: usize| {
        let text = format!("bench {i}");
        let result = client
            .call("echo", json!({ "text": text }))
            .unwrap_or_else(|e| panic!("{url}: echo: {e}"));
        assert_eq!(result.text_content(), text, "{url}: a wrong echo");
    };
    (0..warmup).for_each(call);
    let mut latencies = Vec::with_capacity(calls);
    let started = Instant::now();
    for i in 0..calls {
        let at = Instant::now();
        call(i);
        latencies.push(at.elapsed().as_secs_f64() * 1e6);
    }
    let wall = started.elapsed().as_secs_f64();
    drop(client.close());
    latencies.sort_by(f64::total_cmp);
    Figures {
        p50: latencies[latencies.len() / 2],
        p99: latencies[latencies.len() * 99 / 100],
        per_second: calls as f64 / wall,
    }
}
