//! Benchmark: memory per idle subscription and fan-out time of one event to
//! many subscriptions, measured on a real server process over pipes.
//!
//! ```text
//! cargo run --release --example fanout [-- SUBSCRIPTIONS [ROUNDS]]   # default 10000 5
//! ```
//!
//! The example runs itself as the server (`FANOUT_SERVER=1`), opens
//! SUBSCRIPTIONS listens, reads every ack, and reads the server's resident
//! memory (`VmRSS`, `/proc/<pid>/status`) before and after. Then, ROUNDS
//! times, it calls a tool that publishes one `resource_updated` and times
//! until every subscription's notification (and the call's reply) is read.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Server, Transport};
use serde_json::{Value, json};

fn main() {
    if std::env::var_os("FANOUT_SERVER").is_some() {
        serve();
        return;
    }
    let mut args = std::env::args().skip(1);
    let subscriptions: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);

    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .env("FANOUT_SERVER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the server");
    let pid = child.id();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut line = String::new();
    let mut read_line = |output: &mut BufReader<_>| -> Value {
        line.clear();
        output.read_line(&mut line).expect("read from the server");
        serde_json::from_str(&line).expect("a JSON line")
    };

    // Warm up and measure the baseline.
    let discover =
        json!({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":meta}});
    writeln!(input, "{discover}").unwrap();
    read_line(&mut output);
    let before = rss_kib(pid);

    let opened = Instant::now();
    let mut batch = String::new();
    for i in 0..subscriptions {
        let listen = json!({"jsonrpc":"2.0","id":i,"method":"subscriptions/listen","params":{
            "_meta": meta, "notifications": {"resourceSubscriptions": ["mem://x"]}}});
        batch.push_str(&listen.to_string());
        batch.push('\n');
    }
    let writer = {
        let mut input = input.try_clone_for_thread();
        std::thread::spawn(move || input.write_all(batch.as_bytes()).unwrap())
    };
    for _ in 0..subscriptions {
        let ack = read_line(&mut output);
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    }
    writer.join().unwrap();
    let open_time = opened.elapsed();
    let after = rss_kib(pid);

    let mut times = Vec::new();
    for round in 0..rounds {
        let call = json!({"jsonrpc":"2.0","id":format!("bump{round}"),"method":"tools/call","params":{"_meta":meta,"name":"bump"}});
        let start = Instant::now();
        writeln!(input, "{call}").unwrap();
        let mut seen = 0;
        let mut replied = false;
        while seen < subscriptions || !replied {
            let msg = read_line(&mut output);
            if msg["method"] == "notifications/resources/updated" {
                seen += 1;
            } else {
                replied = true;
            }
        }
        times.push(start.elapsed());
    }
    times.sort();
    // End of input: the server answers every listen with its final result.
    drop(input);
    let mut finals = 0;
    let mut rest = String::new();
    while output.read_line(&mut rest).unwrap_or(0) > 0 {
        finals += 1;
        rest.clear();
    }
    assert_eq!(finals, subscriptions, "one final result per subscription");
    let _ = child.wait();

    let per_sub = (after.saturating_sub(before) as f64 * 1024.0) / subscriptions as f64;
    println!("subscriptions            {subscriptions}");
    println!("open + ack all           {:.1} ms", ms(open_time));
    println!("server RSS before/after  {before} KiB / {after} KiB");
    println!("memory per subscription  {per_sub:.0} bytes");
    println!(
        "fan-out of one event     median {:.2} ms, min {:.2} ms, max {:.2} ms over {rounds} rounds",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1])
    );
}

fn serve() {
    let server = Server::builder("fanout", "1.0.0")
        .inline_resource(
            mcp_stdio::types::Resource::new("mem://x", "x"),
            |_ctx, req| {
                Ok(mcp_stdio::types::ReadResourceResult::new(vec![
                    mcp_stdio::types::ResourceContents::text(&req.uri, "x"),
                ]))
            },
        )
        .inline_tool(Tool::new("bump", "Publishes mem://x."), |ctx, _: Value| {
            ctx.notifier().resource_updated("mem://x");
            Ok(CallToolResult::text("bumped"))
        })
        // Every listen is an open request; let them all be read at once.
        .queue_limit(1 << 16)
        // The benchmark's own subscription count decides, not the default cap.
        .max_subscriptions(1 << 20)
        .build();
    let _ = server.serve(Transport::stdio());
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `ChildStdin` cannot be cloned; the writer thread gets the handle's file
/// descriptor through a duplicate.
trait CloneForThread {
    fn try_clone_for_thread(&self) -> std::fs::File;
}

impl CloneForThread for std::process::ChildStdin {
    fn try_clone_for_thread(&self) -> std::fs::File {
        use std::os::fd::AsFd;
        std::fs::File::from(self.as_fd().try_clone_to_owned().expect("dup stdin"))
    }
}
