//! `RedisTaskStore` against a real `redis-server` (issue 28): durable
//! creation, Redis's own expiry, two replicas on one Redis, atomic updates
//! under contention, the lease, and tasks through two servers. Ignored by
//! `cargo test`: `tests/redis.sh` starts a Redis and runs them with
//! `REDIS_URL` set and `--ignored`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mcp_stdio::types::{CallToolResult, DetailedTask, Task, TaskStatus, Tool};
use mcp_stdio::{Owner, RedisTaskStore, Server, StoredTask, TaskMode, TaskStore};
use serde_json::{Value, json};

use crate::support::Peer;
use crate::tasks::{get, poll, start};

fn redis_url() -> String {
    std::env::var("REDIS_URL").expect("REDIS_URL: run these through tests/redis.sh")
}

/// A key prefix of this test run's own.
fn prefix(name: &str) -> String {
    format!("mcp-stdio-test:{name}:{}", std::process::id())
}

fn replica(prefix: &str) -> RedisTaskStore {
    RedisTaskStore::open(&redis_url(), prefix).unwrap()
}

fn working(id: &str, expires: Option<SystemTime>) -> StoredTask {
    let now = mcp_stdio::types::iso8601(SystemTime::now());
    StoredTask {
        task: DetailedTask::new(Task {
            task_id: id.into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: now.clone(),
            last_updated_at: now,
            ttl_ms: None,
            poll_interval_ms: Some(100),
        }),
        answers: Default::default(),
        expires,
        owner: None,
    }
}

/// Milliseconds Redis keeps `key` (`PTTL`: -1 without expiry, -2 gone).
fn pttl(key: &str) -> i64 {
    let client = redis::Client::open(redis_url()).unwrap();
    let mut connection = client.get_connection().unwrap();
    redis::cmd("PTTL").arg(key).query(&mut connection).unwrap()
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn create_get_update_and_expiry_by_redis() {
    let prefix = prefix("basic");
    let store = replica(&prefix);
    let soon = SystemTime::now() + Duration::from_millis(400);
    store.create(working("t1", Some(soon))).unwrap();
    let got = store.get("t1").unwrap().expect("durably created");
    assert_eq!(got.task.task.status, TaskStatus::Working);
    let kept = pttl(&format!("{prefix}:task:t1"));
    assert!(kept > 0 && kept <= 400, "Redis expires it: PTTL {kept}");

    let err = store.create(working("t1", None)).unwrap_err();
    assert!(err.message.contains("exists already"), "{}", err.message);

    let after = store
        .update("t1", &mut |t| {
            t.task.task.status_message = Some("half way".into());
        })
        .unwrap()
        .unwrap();
    assert_eq!(after.task.task.status_message.as_deref(), Some("half way"));
    assert_eq!(store.get("t1").unwrap().unwrap(), after);
    assert!(
        pttl(&format!("{prefix}:task:t1")) > 0,
        "the update kept the TTL"
    );

    let mut called = false;
    assert!(
        store
            .update("nope", &mut |_| called = true)
            .unwrap()
            .is_none()
    );
    assert!(!called);
    assert!(store.get("nope").unwrap().is_none());

    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(pttl(&format!("{prefix}:task:t1")), -2, "gone from Redis");
    assert!(store.get("t1").unwrap().is_none());
    assert!(
        store
            .update("t1", &mut |_| called = true)
            .unwrap()
            .is_none()
    );
    assert!(!called);

    // No TTL: kept with no expiry.
    store.create(working("forever", None)).unwrap();
    assert_eq!(pttl(&format!("{prefix}:task:forever")), -1);
    store
        .update("forever", &mut |t| {
            t.task.task.status = TaskStatus::Completed
        })
        .unwrap();
    assert_eq!(
        pttl(&format!("{prefix}:lease:forever")),
        -2,
        "a finished task's lease is deleted"
    );
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn two_replicas_see_each_others_tasks() {
    let prefix = prefix("replicas");
    let (a, b) = (replica(&prefix), replica(&prefix));
    a.create(working("from-a", None)).unwrap();
    b.create(working("from-b", None)).unwrap();
    assert!(b.get("from-a").unwrap().is_some());
    assert!(a.get("from-b").unwrap().is_some());
    b.update("from-a", &mut |t| {
        t.task.task.status = TaskStatus::Cancelled
    })
    .unwrap();
    let seen = a.get("from-a").unwrap().unwrap();
    assert_eq!(seen.task.task.status, TaskStatus::Cancelled);
    // A task's owner (`StoredTask::owner`) is kept through every write.
    let alice = Some(Owner::subject(None, "alice"));
    a.create(StoredTask {
        owner: alice.clone(),
        ..working("alices", None)
    })
    .unwrap();
    assert_eq!(b.get("alices").unwrap().unwrap().owner, alice);
    let after = b.update("alices", &mut |t| {
        t.task.task.status = TaskStatus::Cancelled
    });
    assert_eq!(after.unwrap().unwrap().owner, alice);
    assert_eq!(a.get("alices").unwrap().unwrap().owner, alice);
    // Another prefix is another store.
    assert!(
        replica(&format!("{prefix}-other"))
            .get("from-a")
            .unwrap()
            .is_none()
    );
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn concurrent_updates_from_two_replicas_lose_nothing() {
    const THREADS: usize = 8;
    const EACH: usize = 200;
    let prefix = prefix("contention");
    let stores = [Arc::new(replica(&prefix)), Arc::new(replica(&prefix))];
    stores[0].create(working("counter", None)).unwrap();
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let store = Arc::clone(&stores[i % 2]);
            std::thread::spawn(move || {
                for _ in 0..EACH {
                    store
                        .update("counter", &mut |t| {
                            let n: usize = t
                                .task
                                .task
                                .status_message
                                .as_deref()
                                .map_or(0, |m| m.parse().unwrap());
                            t.task.task.status_message = Some((n + 1).to_string());
                        })
                        .unwrap()
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let last = stores[1].get("counter").unwrap().unwrap();
    assert_eq!(
        last.task.task.status_message,
        Some((THREADS * EACH).to_string())
    );
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_task_whose_replica_went_away_fails_within_the_lease() {
    let prefix = prefix("lease");
    let lease = Duration::from_millis(400);
    let a = replica(&prefix).lease(lease);
    let b = replica(&prefix);
    a.create(working("running", None)).unwrap();
    a.create(working("finished", None)).unwrap();
    a.update("finished", &mut |t| {
        t.task.task.status = TaskStatus::Completed
    })
    .unwrap();
    // Renewed while its replica lives: still working after three leases.
    std::thread::sleep(lease * 3);
    let alive = b.get("running").unwrap().unwrap();
    assert_eq!(alive.task.task.status, TaskStatus::Working);

    drop(a);
    let dropped = Instant::now();
    let failed = loop {
        let task = b.get("running").unwrap().unwrap();
        if task.task.task.status == TaskStatus::Failed {
            break task;
        }
        assert!(
            dropped.elapsed() < lease + Duration::from_millis(500),
            "still {:?} {:?} after the replica went away",
            task.task.task.status,
            dropped.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let message = failed.task.task.status_message.unwrap();
    assert!(message.contains("went away"), "{message}");
    assert_eq!(failed.task.error.unwrap().code, -32603);
    // Written once: the next read agrees; a finished task is left alone.
    let again = b.get("running").unwrap().unwrap();
    assert_eq!(again.task.task.status, TaskStatus::Failed);
    let finished = b.get("finished").unwrap().unwrap();
    assert_eq!(finished.task.task.status, TaskStatus::Completed);
}

/// A server whose `slow` tool takes 300 ms, its tasks in the Redis store.
fn server_on(prefix: &str) -> Server {
    Server::builder("replicated", "1.0.0")
        .task_tool(
            Tool::new("slow", "Answers after 300 ms."),
            TaskMode::Required,
            |_ctx, args: Value| {
                std::thread::sleep(Duration::from_millis(300));
                Ok(CallToolResult::text(format!("done {}", args["n"])))
            },
        )
        .task_store(replica(prefix))
        .build()
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_task_created_on_one_server_is_polled_on_another() {
    let prefix = prefix("servers");
    let (one, two) = (server_on(&prefix), server_on(&prefix));
    let (mut on_one, mut on_two) = (Peer::start(&one), Peer::start(&two));
    let id = start(&mut on_one, "slow", json!({ "n": 7 }));
    // The other server reads it at once (durably created), then sees it end.
    let first = get(&mut on_two, &id);
    assert_eq!(first["status"], "working", "{first}");
    let done = poll(&mut on_two, &id, &["completed", "failed"]);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "done 7", "{done}");
    // And a task created on the second is cancelled through the first.
    let other = start(&mut on_two, "slow", json!({ "n": 8 }));
    let cancel = crate::tasks::reply(
        &mut on_one,
        &crate::tasks::task_request("tasks/cancel", json!({ "taskId": other })),
    );
    assert!(cancel.get("result").is_some(), "{cancel}");
    std::thread::sleep(Duration::from_millis(500));
    let cancelled = get(&mut on_two, &other);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    on_one.finish_quietly();
    on_two.finish_quietly();
}

#[test]
fn an_unreachable_redis_is_a_one_line_error_that_says_what_to_do() {
    let err = RedisTaskStore::open("redis://127.0.0.1:1/", "x").unwrap_err();
    assert_eq!(err.code, -32603);
    assert!(err.message.contains("cannot reach"), "{}", err.message);
    assert!(
        err.message.contains("redis-server running"),
        "{}",
        err.message
    );
    assert!(!err.message.contains('\n'), "{}", err.message);
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_worker_that_ended_without_finishing_its_task_lets_the_lease_lapse() {
    let prefix = prefix("ended");
    let lease = Duration::from_millis(300);
    let a = replica(&prefix).lease(lease);
    a.create(working("orphan", None)).unwrap();
    a.create(working("running", None)).unwrap();
    // Its last update never reached Redis: the task still says working.
    a.worker_ended("orphan");
    std::thread::sleep(lease * 3);
    let orphan = a.get("orphan").unwrap().unwrap();
    assert_eq!(orphan.task.task.status, TaskStatus::Failed);
    let running = a.get("running").unwrap().unwrap();
    assert_eq!(
        running.task.task.status,
        TaskStatus::Working,
        "still renewed"
    );
}
