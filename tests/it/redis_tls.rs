//! The Redis parts over TLS (`rediss://`, feature `redis-tls`) as an ACL
//! user with only the commands README's "Deploying past one process" lists
//! (issue 48, item 5). Ignored by `cargo test`: `tests/redis.sh` starts a
//! Redis with TLS and that user, and runs them with `REDIS_TLS_URL` and
//! `SSL_CERT_FILE` (its test CA) set.

use std::time::{Duration, Instant};

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{RedisChangeFeed, RedisTaskStore, Server, TaskMode};
use serde_json::{Value, json};

use crate::support::{Peer, request};
use crate::tasks::{poll, start};

fn tls_url() -> String {
    std::env::var("REDIS_TLS_URL").expect("REDIS_TLS_URL: run these through tests/redis.sh")
}

fn replica(url: &str, prefix: &str) -> Server {
    Server::builder("tls", "1.0.0")
        .request_state_key([9; 32])
        .inline_tool(Tool::new("noop", "Does nothing."), |_, _: Value| {
            Ok(CallToolResult::text("ok"))
        })
        .task_tool(
            Tool::new("quick", "Answers at once."),
            TaskMode::Required,
            |_, _: Value| Ok(CallToolResult::text("done")),
        )
        .task_store(RedisTaskStore::open(url, prefix).unwrap())
        .change_feed(RedisChangeFeed::open(url, prefix).unwrap())
        .build()
}

#[test]
#[ignore = "needs Redis with TLS: tests/redis.sh"]
fn tasks_and_changes_cross_replicas_over_tls_as_an_acl_user() {
    let url = tls_url();
    assert!(url.starts_with("rediss://"), "{url}");
    let prefix = format!("mcp:tls:{}", std::process::id());
    let (a, b) = (replica(&url, &prefix), replica(&url, &prefix));
    let mut on_a = Peer::start(&a);
    let mut on_b = Peer::start(&b);
    let id = start(&mut on_a, "quick", json!({}));
    let done = poll(&mut on_b, &id, &["completed", "failed"]);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "done");
    on_b.send(&request(
        "l",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    ));
    assert_eq!(
        on_b.recv()["method"],
        "notifications/subscriptions/acknowledged"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        a.notifier().tools_list_changed();
        if let Some(heard) = on_b.try_recv(Duration::from_millis(200)) {
            assert_eq!(heard["method"], "notifications/tools/list_changed");
            break;
        }
        assert!(Instant::now() < deadline, "B never heard A over TLS");
    }
    let _ = on_a.finish();
    let _ = on_b.finish();
}

#[test]
#[ignore = "needs Redis with TLS: tests/redis.sh"]
fn a_wrong_password_is_a_one_line_error() {
    let url = tls_url();
    let at = url.find('@').expect("a user in REDIS_TLS_URL");
    let colon = url[..at].rfind(':').unwrap();
    let wrong = format!("{}:wrong{}", &url[..colon], &url[at..]);
    let err = RedisTaskStore::open(&wrong, "x").unwrap_err();
    assert!(err.message.contains("cannot reach"), "{}", err.message);
    assert!(!err.message.contains('\n'), "{}", err.message);
    let err = RedisChangeFeed::open(&wrong, "x").unwrap_err().to_string();
    assert!(err.contains("cannot reach Redis"), "{err}");
}
