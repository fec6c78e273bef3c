//! What one task operation costs on the Redis store against the memory
//! store (issue 28, BENCHMARKS.md "Task store on Redis"): `create`, `get`
//! and `update` in a loop on one thread, microseconds per operation.
//!
//! ```text
//! $ redis-server --port 6390 --save '' --appendonly no &
//! $ REDIS_URL=redis://127.0.0.1:6390/ cargo run --release --features redis --example task_store_cost
//! ```

use std::time::{Duration, Instant, SystemTime};

use mcp_stdio::types::{DetailedTask, Task, TaskStatus, iso8601};
use mcp_stdio::{MemoryTaskStore, RedisTaskStore, StoredTask, TaskStore};

/// Operations of each kind per store.
const OPERATIONS: usize = 2000;

fn main() {
    let Ok(url) = std::env::var("REDIS_URL") else {
        eprintln!("task_store_cost: set REDIS_URL, for example REDIS_URL=redis://127.0.0.1:6379/");
        std::process::exit(2);
    };
    let redis = match RedisTaskStore::open(&url, &format!("task-store-cost:{}", std::process::id()))
    {
        Ok(store) => store,
        Err(e) => {
            eprintln!("task_store_cost: {}", e.message);
            std::process::exit(2);
        }
    };
    let memory = MemoryTaskStore::new(OPERATIONS * 2);
    println!("{OPERATIONS} operations of each kind, one thread, µs per operation");
    println!(
        "{:<8} {:>8} {:>8} {:>8}",
        "store", "create", "get", "update"
    );
    for (name, store) in [
        ("memory", &memory as &dyn TaskStore),
        ("redis", &redis as &dyn TaskStore),
    ] {
        let [create, get, update] = measure(store);
        println!(
            "{name:<8} {:>8.1} {:>8.1} {:>8.1}",
            per_op(create),
            per_op(get),
            per_op(update)
        );
    }
}

/// The time `OPERATIONS` creates, gets and updates took on `store`.
fn measure(store: &dyn TaskStore) -> [Duration; 3] {
    let ids: Vec<String> = (0..OPERATIONS).map(|i| format!("cost-{i:08}")).collect();
    let started = Instant::now();
    for id in &ids {
        store.create(task(id)).expect("create");
    }
    let create = started.elapsed();
    let started = Instant::now();
    for id in &ids {
        assert!(store.get(id).expect("get").is_some());
    }
    let get = started.elapsed();
    let started = Instant::now();
    for id in &ids {
        store
            .update(id, &mut |t| {
                t.task.task.status = TaskStatus::Completed;
            })
            .expect("update");
    }
    [create, get, started.elapsed()]
}

fn per_op(total: Duration) -> f64 {
    total.as_secs_f64() * 1e6 / OPERATIONS as f64
}

/// A working task with a one-minute TTL, as a server creates it.
fn task(id: &str) -> StoredTask {
    let now = SystemTime::now();
    StoredTask {
        task: DetailedTask::new(Task {
            task_id: id.to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: iso8601(now),
            last_updated_at: iso8601(now),
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(200),
        }),
        answers: Default::default(),
        expires: Some(now + Duration::from_secs(60)),
        owner: None,
    }
}
