//! A guided tour of the client and the server: the demo starts itself
//! again as a real server process (the everything fixtures over stdio),
//! connects to it with `mcp_stdio::Client`, and prints a short transcript
//! (`→` what the client asks, `←` what comes back).
//!
//! ```text
//! cargo run --release --example demo
//! ```
//!
//! Server mode (what the client spawns): `MCP_DEMO_SERVER=1 demo`.

#[path = "everything/conformance.rs"]
mod conformance;
#[path = "everything/fixtures.rs"]
mod fixtures;
#[path = "everything/server.rs"]
mod server;

use std::process::Command;
use std::time::Duration;

use mcp_stdio::types::{ElicitRequestParams, ElicitResult, SubscriptionFilter};
use mcp_stdio::{Client, Era, RequestOptions, Transport};
use serde_json::{Value, json};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    if std::env::var_os("MCP_DEMO_SERVER").is_some() {
        // Server mode: serve the fixtures until stdin closes.
        let server = server::build();
        mcp_stdio::signal::stop_on_signals(server.stop_handle())?;
        return Ok(server.serve(Transport::stdio())?);
    }

    // Client mode: spawn this very executable in server mode (`cargo run
    // --example demo` builds only this binary, so it serves itself).
    let mut command = Command::new(std::env::current_exe()?);
    command.env("MCP_DEMO_SERVER", "1");
    let client = Client::builder()
        .client_info("demo", "1.0.0")
        .stderr(|line| eprintln!("[server stderr] {line}"))
        // Answers the server's questions (multi round-trip requests); having
        // it makes the client declare the elicitation capability.
        .on_elicitation(|params| {
            if let ElicitRequestParams::Form(form) = params {
                println!(
                    "← the server asks: {:?}; the user answers \"Ada\"",
                    form.message
                );
            }
            let mut answer = serde_json::Map::new();
            answer.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(answer))
        })
        .spawn(command)?;

    step("Era probe: server/discover, with initialize as the legacy fallback");
    let (era, version) = match client.era() {
        Era::Modern { version } => ("modern: server/discover answered", version),
        Era::Legacy { version } => ("legacy: initialize answered", version),
    };
    println!("← {era}, protocol {version}");
    if let Some(info) = client.server_info() {
        println!("← server {} {}", info.name, info.version);
    }

    step("tools/list (every page)");
    let names = client.tools().map(|t| t.map(|t| t.name));
    let names = names.collect::<std::result::Result<Vec<_>, _>>()?;
    let (suite, own): (Vec<String>, Vec<String>) = names
        .iter()
        .cloned()
        .partition(|n| n.starts_with("test_") || n.starts_with("json_"));
    println!("← {} tools: {}", names.len(), own.join(", "));
    println!("  and the conformance suite's {}", suite.join(", "));

    step("A tool call");
    call(&client, "echo", json!({ "text": "hello" }))?;

    step("Progress: the client sets a progressToken and hands each notification to a callback");
    let progress = RequestOptions::new().on_progress(|p| {
        let (total, message) = (p.total.unwrap_or(f64::NAN), p.message.as_deref());
        println!(
            "← progress {}/{total} {}",
            p.progress,
            message.unwrap_or("")
        );
    });
    println!("→ tools/call progress {{\"steps\":3}}");
    let result = client.call_tool_with("progress", json!({ "steps": 3 }), progress)?;
    println!("← {}", result.into_result()?.text_content());

    step("Input from the user: the result is input_required, the client answers and retries");
    println!("→ tools/call ask {{}}");
    println!("← {}", client.call("ask", json!({}))?.text_content());

    step("A subscription: acknowledged first, then every event tagged with its id");
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://counter".into()]),
        tools_list_changed: Some(true),
        ..Default::default()
    };
    println!("→ subscriptions/listen {}", serde_json::to_string(&filter)?);
    let mut sub = client.listen(filter)?;
    println!("← acknowledged: {}", serde_json::to_string(sub.accepted())?);
    for tool in ["bump", "toggle_tool"] {
        call(&client, tool, json!({}))?;
        match sub.recv_timeout(Duration::from_secs(3)) {
            Ok(Some(event)) => println!("← event {event:?}"),
            Ok(None) => println!("← no event within 3 s"),
            Err(end) => println!("← the subscription ended: {end:?}"),
        }
    }

    step("Cancellation: a slow call is started, then cancelled; it never gets a reply");
    println!("→ tools/call slow {{\"ms\":60000}}");
    let params = json!({ "name": "slow", "arguments": { "ms": 60000 } });
    let pending = client.start_request("tools/call", params, RequestOptions::new())?;
    std::thread::sleep(Duration::from_millis(100)); // let the handler start waiting
    println!(
        "→ notifications/cancelled {{\"requestId\":{}}}",
        pending.id()
    );
    pending.cancel(Some("the user pressed stop"));
    // The server counts the cancellations its slow handler saw (asked a
    // bounded number of times: the cancellation may still be on its way).
    println!("→ tools/call stats {{}}");
    let mut stats = String::new();
    for _ in 0..50 {
        stats = client.call("stats", json!({}))?.text_content();
        if serde_json::from_str::<Value>(&stats)?["slow_cancelled"] == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("← {stats}");

    step("Shutdown: close stdin, wait for the exit (then SIGTERM, then SIGKILL)");
    let status = client.close()?;
    // On end of input the server answered the listen: the stream is closed.
    println!("← subscription: {:?}", sub.recv());
    if let Some(status) = status {
        println!("← server exited: {status}"); // a spawned server: always some
    }
    Ok(())
}

/// Prints a step's title.
fn step(title: &str) {
    println!("\n# {title}");
}

/// Calls a tool and prints the request and the result's text.
fn call(client: &Client, name: &str, arguments: Value) -> Result<()> {
    println!("→ tools/call {name} {arguments}");
    println!("← {}", client.call(name, arguments)?.text_content());
    Ok(())
}
