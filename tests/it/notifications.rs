//! Request-scoped notifications: progress and log messages
//! (spec 2026-07-28 basic/patterns/progress, server/utilities/logging).

use mcp_stdio::Server;
use mcp_stdio::types::{CallToolResult, LoggingLevel, Tool};
use serde_json::{Value, json};

use crate::support::{Peer, call, text_result};

fn with_meta(mut req: Value, key: &str, value: Value) -> Value {
    req["params"]["_meta"][key] = value;
    req
}

fn progress(token: Value, progress: f64, total: Option<f64>, message: &str) -> Value {
    let mut params = json!({ "progressToken": token, "progress": progress, "message": message });
    if let Some(total) = total {
        params["total"] = json!(total);
    }
    json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params })
}

// req: progress:before-reply
#[test]
fn progress_comes_before_the_reply_and_echoes_the_token() {
    let mut peer = Peer::start(&crate::everything::build());
    for token in [json!("tok"), json!(42)] {
        let req = with_meta(
            call(1, "progress", json!({ "steps": 3 })),
            "progressToken",
            token.clone(),
        );
        peer.send(&req);
        for step in 1..=3 {
            assert_eq!(
                peer.recv(),
                progress(
                    token.clone(),
                    step as f64,
                    Some(3.0),
                    &format!("step {step} of 3")
                )
            );
        }
        assert_eq!(peer.recv(), text_result(&peer, 1, "done"));
    }
    peer.finish_quietly();
}

#[test]
fn without_a_progress_token_there_is_no_progress() {
    let mut peer = Peer::start(&crate::everything::build());
    assert_eq!(
        peer.ask(&call(1, "progress", json!({ "steps": 3 }))),
        text_result(&peer, 1, "done")
    );
    peer.finish_quietly();
}

#[test]
fn progress_that_does_not_increase_is_dropped() {
    let tool = |ctx: &mcp_stdio::RequestContext, _: Value| {
        for p in [1.0, 1.0, 0.5, 2.0, f64::NAN, 3.0, 2.5] {
            ctx.progress(p, None, Some("p"));
        }
        Ok(CallToolResult::text("ok"))
    };
    let server = Server::builder("progress", "1.0.0")
        .tool(Tool::new("pooled", "Progress."), tool)
        .inline_tool(Tool::new("inline", "Progress."), tool)
        .build();
    let mut peer = Peer::start(&server);
    for name in ["pooled", "inline"] {
        peer.send(&with_meta(
            call(name, name, json!({})),
            "progressToken",
            json!("t"),
        ));
        let mut seen = Vec::new();
        loop {
            let msg = peer.recv();
            if msg.get("id").is_some() {
                assert_eq!(msg, text_result(&peer, name, "ok"));
                break;
            }
            assert_eq!(msg["params"]["progressToken"], json!("t"));
            seen.push(msg["params"]["progress"].as_f64().unwrap());
        }
        assert_eq!(seen, [1.0, 2.0, 3.0], "{name}");
    }
    peer.finish_quietly();
}

fn logging_server() -> Server {
    Server::builder("logs", "1.0.0")
        .tool(
            Tool::new("chatty", "Logs at three levels."),
            |ctx, _: Value| {
                ctx.log(LoggingLevel::Debug, Some("db"), json!("debug detail"));
                ctx.log(
                    LoggingLevel::Info,
                    Some("db"),
                    json!({ "step": "connected" }),
                );
                ctx.log(LoggingLevel::Error, None, json!("it broke"));
                Ok(CallToolResult::text("ok"))
            },
        )
        .build()
}

// req: logging:blocker
#[test]
fn log_messages_only_at_or_above_the_requested_level() {
    let mut peer = Peer::start(&logging_server());
    peer.send(&with_meta(
        call(1, "chatty", json!({})),
        "io.modelcontextprotocol/logLevel",
        json!("info"),
    ));
    assert_eq!(
        peer.recv(),
        json!({ "jsonrpc": "2.0", "method": "notifications/message",
                "params": { "level": "info", "logger": "db", "data": { "step": "connected" } } })
    );
    assert_eq!(
        peer.recv(),
        json!({ "jsonrpc": "2.0", "method": "notifications/message",
                "params": { "level": "error", "data": "it broke" } })
    );
    assert_eq!(peer.recv(), text_result(&peer, 1, "ok"));
    // Without a log level: not a single message.
    assert_eq!(
        peer.ask(&call(2, "chatty", json!({}))),
        text_result(&peer, 2, "ok")
    );
    // Nothing is inferred from the earlier request's log level either.
    peer.finish_quietly();
}

#[test]
fn the_conformance_logging_tool_is_silent_without_a_log_level() {
    let mut peer = Peer::start(&crate::everything::build());
    let reply = peer.ask(&call(1, "test_logging_tool", json!({})));
    assert_eq!(reply["id"], json!(1));
    let req = with_meta(
        call(2, "test_logging_tool", json!({})),
        "io.modelcontextprotocol/logLevel",
        json!("debug"),
    );
    peer.send(&req);
    for n in 1..=3 {
        assert_eq!(
            peer.recv(),
            json!({ "jsonrpc": "2.0", "method": "notifications/message",
                    "params": { "level": "info", "logger": "test", "data": format!("log message {n}") } })
        );
    }
    assert_eq!(peer.recv()["id"], json!(2));
    peer.finish_quietly();
}

#[test]
fn the_conformance_progress_tool_reports_three_steps() {
    let mut peer = Peer::start(&crate::everything::build());
    let req = with_meta(
        call(1, "test_tool_with_progress", json!({})),
        "progressToken",
        json!("progress-test-1"),
    );
    peer.send(&req);
    for step in [0.0, 50.0, 100.0] {
        assert_eq!(
            peer.recv(),
            progress(
                json!("progress-test-1"),
                step,
                Some(100.0),
                &format!("{step}%")
            )
        );
    }
    assert_eq!(peer.recv()["id"], json!(1));
    peer.finish_quietly();
}
