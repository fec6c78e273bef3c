//! `RedisChangeFeed` against a real `redis-server` (issue 28). Ignored by
//! `cargo test`: `tests/redis.sh` starts a Redis and runs them with
//! `REDIS_URL` set and `--ignored`.

use std::time::{Duration, Instant};

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{RedisChangeFeed, Server};
use serde_json::{Value, json};

use crate::support::{Peer, request};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn redis_url() -> String {
    std::env::var("REDIS_URL").expect("REDIS_URL: run these through tests/redis.sh")
}

/// A replica on `channel`.
fn replica(channel: &str) -> Server {
    let feed = RedisChangeFeed::open(&redis_url(), channel).unwrap();
    Server::builder("replicated", "1.0.0")
        .inline_tool(Tool::new("noop", "Does nothing."), |_, _: Value| {
            Ok(CallToolResult::text("ok"))
        })
        .enable_resources()
        .change_feed(feed)
        .build()
}

fn listen(peer: &mut Peer, id: &str, uris: &[String]) {
    peer.send(&request(
        id,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true, "resourceSubscriptions": uris } }),
    ));
    assert_eq!(
        peer.recv()["method"],
        "notifications/subscriptions/acknowledged"
    );
}

/// A channel of this test run's own.
fn channel(name: &str) -> String {
    format!("mcp-stdio-test:{name}:{}", std::process::id())
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn changes_cross_replicas_in_the_order_each_published_them() {
    let channel = channel("order");
    let a = replica(&channel);
    let b = replica(&channel);
    let uris: Vec<String> = (0..100).map(|i| format!("file:///{i}")).collect();
    let mut on_b = Peer::start(&b);
    listen(&mut on_b, "sb", &uris);
    let mut on_a = Peer::start(&a);
    listen(&mut on_a, "sa", &uris);
    // B's subscriber is up once a change of A's arrives: retry the first.
    let started = Instant::now();
    loop {
        a.notifier().tools_list_changed();
        assert_eq!(on_a.recv()["method"], "notifications/tools/list_changed");
        if on_b.try_recv(Duration::from_millis(200)).is_some() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "B never heard A"
        );
    }
    // Drain the duplicates of the warm-up.
    while on_b.try_recv(Duration::from_millis(300)).is_some() {}

    for uri in &uris {
        a.notifier().resource_updated(uri);
    }
    for (peer, id) in [(&on_a, "sa"), (&on_b, "sb")] {
        for uri in &uris {
            let got = peer.recv();
            assert_eq!(got["method"], "notifications/resources/updated", "{got}");
            assert_eq!(got["params"]["uri"], json!(uri), "out of order on {id}");
            assert_eq!(got["params"]["_meta"][SUBSCRIPTION_ID], id);
        }
    }
    // Nothing came back to A from the feed: no second copy.
    assert!(on_a.try_recv(Duration::from_millis(300)).is_none());
    let _ = on_a.finish();
    let _ = on_b.finish();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn an_unreachable_redis_is_a_clear_error() {
    let e = RedisChangeFeed::open("redis://127.0.0.1:1/", "x").unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("cannot reach Redis at redis://127.0.0.1:1/"),
        "{text}"
    );
}
