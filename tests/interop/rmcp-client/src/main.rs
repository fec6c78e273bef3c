//! The client benchmark's rmcp client: `rmcp-client-bench <server command...>`
//! measures what `examples/clientbench` measures for its built-in clients
//! and prints the same JSON object on one line (see that file).
//! rmcp's client is async: a tokio multi-thread runtime, one client shared
//! by 1, 8 and 64 tasks. It connects the 2026-07-28 way (`server/discover`).
//! CLIENTBENCH_QUICK=1: tiny counts. Every reply's text is checked.

use std::time::Instant;

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, Peer, RoleClient};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};

fn text(n: usize) -> String {
    format!("{n:>10}-abcdefghijklmnopqrstu")
}

fn cpu_us() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server: Vec<String> = std::env::args().skip(1).collect();
    if server.is_empty() {
        return Err("usage: rmcp-client-bench <server command...>".into());
    }
    let quick = std::env::var_os("CLIENTBENCH_QUICK").is_some();
    let (warmup, sequential, throughput) = if quick {
        (10, 50, 640)
    } else {
        (1_000, 5_000, 20_000)
    };
    let mut command = tokio::process::Command::new(&server[0]);
    command.args(&server[1..]);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = ().serve_with_lifecycle(TokioChildProcess::new(command)?, lifecycle).await?;
    let peer = client.peer().clone();
    let mut latencies = Vec::with_capacity(sequential);
    for i in 0..warmup + sequential {
        let started = Instant::now();
        call(&peer, i).await.map_err(|e| e.to_string())?;
        if i >= warmup {
            latencies.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    let cpu_before = cpu_us();
    let mut tput = Vec::new();
    for threads in [1usize, 8, 64] {
        let per_task = throughput / threads;
        let started = Instant::now();
        let mut tasks = Vec::new();
        for t in 0..threads {
            let peer = peer.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..per_task {
                    call(&peer, t * per_task + i).await?;
                }
                Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
            }));
        }
        for task in tasks {
            task.await?.map_err(|e| e.to_string())?;
        }
        tput.push((per_task * threads) as f64 / started.elapsed().as_secs_f64());
    }
    let cpu = cpu_us() - cpu_before;
    latencies.sort_by(f64::total_cmp);
    let at = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{}",
        json!({
            "seq_p50_us": at(0.5),
            "seq_p99_us": at(0.99),
            "tput_1": tput[0],
            "tput_8": tput[1],
            "tput_64": tput[2],
            "cpu_us_per_call": cpu / (3 * throughput) as f64,
            "rss_kib": vm_hwm_kib(),
        })
    );
    let _ = client.cancel().await;
    Ok(())
}

/// One `echo` call, its reply's text checked.
async fn call(
    peer: &Peer<RoleClient>,
    n: usize,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = Map::new();
    args.insert("text".into(), Value::String(text(n)));
    let result = peer
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
        .await?;
    let got = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map_or(String::new(), |t| t.text.clone());
    if got != text(n) {
        return Err(format!("wrong reply to call {n}: {got:?}").into());
    }
    Ok(())
}
