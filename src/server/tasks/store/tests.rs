use super::*;
use crate::types::{Task, TaskStatus};

fn stored(id: &str, status: TaskStatus, updated: &str, expires: Option<SystemTime>) -> StoredTask {
    StoredTask {
        task: DetailedTask::new(Task {
            task_id: id.into(),
            status,
            status_message: None,
            created_at: updated.into(),
            last_updated_at: updated.into(),
            ttl_ms: None,
            poll_interval_ms: None,
        }),
        answers: InputResponses::new(),
        expires,
        owner: None,
    }
}

#[test]
fn a_full_store_drops_the_expired_then_the_oldest_finished_then_refuses() {
    let store = MemoryTaskStore::new(2);
    let past = SystemTime::now() - Duration::from_secs(1);
    store
        .create(stored("a", TaskStatus::Working, "1", Some(past)))
        .unwrap();
    store
        .create(stored("b", TaskStatus::Completed, "2", None))
        .unwrap();
    store
        .create(stored("c", TaskStatus::Completed, "3", None))
        .unwrap();
    assert!(store.get("a").unwrap().is_none(), "expired first");
    store
        .create(stored("d", TaskStatus::Working, "4", None))
        .unwrap();
    assert!(
        store.get("b").unwrap().is_none(),
        "then the oldest finished"
    );
    assert!(store.get("c").unwrap().is_some());
    store
        .update("c", &mut |t| t.task.task.status = TaskStatus::Working)
        .unwrap();
    let err = store
        .create(stored("e", TaskStatus::Working, "5", None))
        .unwrap_err();
    assert!(err.message.contains("full"), "{}", err.message);
}

/// A finished task holding `bytes` of text as its result.
fn finished(id: &str, updated: &str, bytes: usize) -> StoredTask {
    let mut task = stored(id, TaskStatus::Completed, updated, None);
    let result = json!({ "content": [{ "type": "text", "text": "x".repeat(bytes) }] });
    task.task.result = serde_json::from_value(result).unwrap();
    task
}

/// Claim (review seal14): the store bounded its tasks by count alone,
/// 1024 of them by default, each with a result of up to
/// `max_task_result_bytes` (4 MiB): 4 GiB a client could make the
/// server hold by calling a tool whose result grows with its input.
/// Past its byte budget (64 MiB by default: a test that fills it takes
/// 20 s in a debug build, where encoding runs at 3 MB/s) the store lets
/// the finished tasks go, the oldest first, as past its count.
#[test]
fn a_store_past_its_byte_budget_lets_the_oldest_finished_go() {
    let store = MemoryTaskStore::new(100).max_bytes(100_000);
    for i in 0..30 {
        store
            .create(finished(&format!("t{i}"), &format!("{i:02}"), 10_000))
            .unwrap();
    }
    assert!(store.get("t0").unwrap().is_none(), "the oldest let go");
    assert!(store.get("t29").unwrap().is_some(), "the newest kept");
    let held = store.lock().bytes;
    assert!((90_000..=100_000).contains(&held), "{held} bytes held");
    // The default budget is a small part of what the count allows.
    const {
        assert!(
            MemoryTaskStore::DEFAULT_MAX_BYTES < MemoryTaskStore::DEFAULT_CAPACITY * (4 << 20) / 16
        )
    };
}

#[test]
fn a_result_that_takes_the_store_past_its_budget_lets_the_oldest_finished_go() {
    let store = MemoryTaskStore::new(100).max_bytes(10_000);
    for (id, at) in [("a", "1"), ("b", "2")] {
        store.create(finished(id, at, 4_000)).unwrap();
    }
    store
        .create(stored("c", TaskStatus::Working, "3", None))
        .unwrap();
    // The running task ends with its result: now past the budget.
    store
        .update("c", &mut |t| *t = finished("c", "3", 4_000))
        .unwrap();
    assert!(store.get("a").unwrap().is_none(), "the oldest finished");
    assert!(store.get("b").unwrap().is_some());
    assert!(store.get("c").unwrap().is_some(), "the one that just ended");
    // A running task counts no bytes (it has no result yet): past the
    // count alone, when every task held runs, a new one is refused.
    let small = MemoryTaskStore::new(1).max_bytes(1);
    small.create(running_with_answer("r", "1", 1_000)).unwrap();
    let err = small
        .create(stored("s", TaskStatus::Working, "2", None))
        .unwrap_err();
    assert!(err.message.contains("full"), "{}", err.message);
    assert_eq!(small.lock().bytes, 0);
}

#[test]
fn an_expired_task_is_gone_for_get_and_update() {
    let store = MemoryTaskStore::default();
    let soon = SystemTime::now() + Duration::from_millis(30);
    store
        .create(stored("t", TaskStatus::Working, "1", Some(soon)))
        .unwrap();
    assert!(store.get("t").unwrap().is_some());
    std::thread::sleep(Duration::from_millis(60));
    let mut called = false;
    assert!(store.update("t", &mut |_| called = true).unwrap().is_none());
    assert!(!called);
    assert!(store.get("t").unwrap().is_none());
}

/// A running task holding `bytes` of text as an answer its handler has
/// not taken yet.
fn running_with_answer(id: &str, updated: &str, bytes: usize) -> StoredTask {
    let mut task = stored(id, TaskStatus::Working, updated, None);
    let answer = crate::types::InputResponse(json!({ "text": "x".repeat(bytes) }));
    task.answers.insert("q".into(), answer);
    task
}

/// The sum of the sizes of what `store` holds, and what it counts.
fn counted_and_held(store: &MemoryTaskStore) -> (usize, usize) {
    let held = store.lock();
    let sum = held.tasks.values().map(|(t, _)| size_of(t)).sum();
    (held.bytes, sum)
}

/// Claim (review store14c): the byte count drifts from what is held
/// on some path (a `get` or `update` of an expired task, an `update`
/// that replaces the task or changes its id, a `create` of an id held
/// already). Found false (kept as a guard).
#[test]
fn the_byte_count_is_what_the_store_holds_on_every_path() {
    let store = MemoryTaskStore::new(4).max_bytes(50_000);
    let past = SystemTime::now() - Duration::from_secs(1);
    let check = |store: &MemoryTaskStore, after: &str| {
        let (counted, held) = counted_and_held(store);
        assert_eq!(counted, held, "after {after}");
    };
    store
        .create(stored("e1", TaskStatus::Working, "1", Some(past)))
        .unwrap();
    store
        .create(stored("e2", TaskStatus::Working, "1", Some(past)))
        .unwrap();
    assert!(store.get("e1").unwrap().is_none());
    check(&store, "a get of an expired task");
    assert!(store.update("e2", &mut |_| {}).unwrap().is_none());
    check(&store, "an update of an expired task");
    store.create(running_with_answer("r", "2", 1_000)).unwrap();
    store
        .update("r", &mut |t| *t = finished("r", "3", 5_000))
        .unwrap();
    check(&store, "an update that replaces the task");
    store
        .update("r", &mut |t| t.task.task.task_id = "other".into())
        .unwrap();
    check(&store, "an update that changes the id");
    store.create(finished("r", "4", 100)).unwrap();
    check(&store, "a create of an id held already");
    for i in 0..10 {
        store
            .create(finished(&format!("f{i}"), &format!("5{i}"), 9_000))
            .unwrap();
        check(&store, "a create past the budget");
    }
    let held = store.lock().bytes;
    assert!(held <= 50_000, "{held} bytes held");
}

/// Claim (review store14c): an `update` past the budget keeps the task
/// it changed (documented), so many running tasks that all end with a
/// large result take the store past its budget without bound. Found
/// false: each end lets the tasks finished before it go, so the store
/// is past its budget by one result at most (kept as a guard).
#[test]
fn running_tasks_that_all_end_with_large_results_exceed_the_budget_by_one_at_most() {
    let store = MemoryTaskStore::new(100).max_bytes(10_000);
    for i in 0..50 {
        store
            .create(stored(&format!("t{i}"), TaskStatus::Working, "0", None))
            .unwrap();
    }
    let running: usize = store.lock().bytes;
    for i in 0..50 {
        let id = format!("t{i}");
        let at = format!("{i:02}");
        store
            .update(&id, &mut |t| *t = finished(&id, &at, 4_000))
            .unwrap();
        let held = store.lock().bytes;
        assert!(
            held <= 10_000 + 4_100 + running,
            "{held} bytes held after {} results",
            i + 1
        );
    }
}

/// Claim (review store14c): `update` takes the task out of the map
/// before it calls `change`, and puts it back after: a `change` that
/// panics (a bug in a closure) loses the task for good, where it was
/// changed in place before store14 (and kept).
#[test]
fn a_change_that_panics_loses_no_task() {
    let store = MemoryTaskStore::default();
    store
        .create(stored("t", TaskStatus::Working, "1", None))
        .unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = store.update("t", &mut |_| panic!("a bug in a closure"));
    }));
    assert!(panicked.is_err());
    assert!(
        store.get("t").unwrap().is_some(),
        "the task is gone after a change that panicked"
    );
    let (counted, held) = counted_and_held(&store);
    assert_eq!(counted, held);
}

/// `task` bound to the subject `name`.
fn owned_by(mut task: StoredTask, name: &str) -> StoredTask {
    task.owner = Some(Owner::subject(None, name));
    task
}

/// Claim (review seal14): a full store drops the task that finished
/// longest ago, whoever made it, so one owner that makes `capacity` quick
/// tasks wipes out every other owner's results before their TTL. Now the
/// owner who holds the most gives its own oldest finished task.
#[test]
fn a_full_store_lets_the_owner_who_holds_the_most_give_its_own_oldest_first() {
    let store = MemoryTaskStore::new(4);
    let victim = owned_by(stored("v", TaskStatus::Completed, "00", None), "victim");
    store.create(victim).unwrap();
    for i in 1..10 {
        let id = format!("a{i}");
        let task = stored(&id, TaskStatus::Completed, &format!("{i:02}"), None);
        store.create(owned_by(task, "attacker")).unwrap();
    }
    assert!(
        store.get("v").unwrap().is_some(),
        "the victim's task was evicted by another owner's"
    );
    assert!(store.get("a9").unwrap().is_some(), "the newest kept");
    assert!(
        store.get("a1").unwrap().is_none(),
        "the attacker's oldest let go"
    );
    // Past the byte budget, the owner with the most bytes gives first,
    // even when another holds more tasks.
    let store = MemoryTaskStore::new(100).max_bytes(10_000);
    for i in 0..4 {
        let task = finished(&format!("s{i}"), &format!("0{i}"), 100);
        store.create(owned_by(task, "small")).unwrap();
    }
    for i in 0..4 {
        let task = finished(&format!("b{i}"), &format!("1{i}"), 3_000);
        store.create(owned_by(task, "big")).unwrap();
    }
    for i in 0..4 {
        assert!(store.get(&format!("s{i}")).unwrap().is_some(), "s{i}");
    }
    assert!(store.get("b0").unwrap().is_none());
    assert!(store.get("b3").unwrap().is_some());
}

/// Claim (review-fixes15b): an owner whose tasks are all running counts
/// them but has nothing to give, so its new task takes another owner's
/// finished one, though that owner holds fewer: "another's only once it
/// holds no more than they do" is not so. Now the new task is refused
/// (its owner's tasks end, and then it gives its own).
#[test]
fn an_owner_whose_tasks_all_run_does_not_take_the_place_of_one_who_holds_fewer() {
    let store = MemoryTaskStore::new(4);
    let victim = owned_by(stored("v", TaskStatus::Completed, "00", None), "victim");
    store.create(victim).unwrap();
    for i in 1..4 {
        let task = stored(
            &format!("r{i}"),
            TaskStatus::Working,
            &format!("0{i}"),
            None,
        );
        store.create(owned_by(task, "attacker")).unwrap();
    }
    let more = owned_by(stored("r4", TaskStatus::Working, "04", None), "attacker");
    let refused = store.create(more);
    assert!(
        store.get("v").unwrap().is_some(),
        "the victim's only task went for the attacker's fourth running one"
    );
    assert!(refused.unwrap_err().message.contains("full"));
    // Once one of its own has ended, it gives that one.
    store
        .update("r1", &mut |t| t.task.task.status = TaskStatus::Completed)
        .unwrap();
    let more = owned_by(stored("r5", TaskStatus::Working, "05", None), "attacker");
    store.create(more).unwrap();
    assert!(store.get("r1").unwrap().is_none());
    assert!(store.get("v").unwrap().is_some());
}

/// Claim (review-fixes15b): a task that ends with a large result, its
/// owner holding nothing else finished, makes room by taking the results
/// of owners who hold fewer bytes than it does: one huge result wipes
/// out several small owners.
#[test]
fn one_huge_result_does_not_push_out_owners_who_hold_fewer_bytes() {
    let store = MemoryTaskStore::new(100).max_bytes(10_000);
    for i in 0..4 {
        let task = finished(&format!("s{i}"), &format!("0{i}"), 2_000);
        store.create(owned_by(task, &format!("small{i}"))).unwrap();
    }
    let big = owned_by(stored("b", TaskStatus::Working, "10", None), "big");
    store.create(big).unwrap();
    store
        .update("b", &mut |t| {
            let owner = t.owner.clone();
            *t = finished("b", "11", 4_000);
            t.owner = owner;
        })
        .unwrap();
    for i in 0..4 {
        assert!(
            store.get(&format!("s{i}")).unwrap().is_some(),
            "s{i}, 2,000 bytes, went for a result of 4,000"
        );
    }
    // Past its budget by that result alone (documented), until the next
    // change lets it go: its owner holds the most.
    let other = owned_by(stored("o", TaskStatus::Working, "12", None), "small0");
    store.create(other).unwrap();
    store
        .update("o", &mut |t| t.task.task.status_message = Some("x".into()))
        .unwrap();
    assert!(store.get("b").unwrap().is_none());
    assert!(store.lock().bytes <= 10_000);
}

/// Measures what a create costs a full store (review-fixes15b: every
/// create past the count scans every task held: 0.5 ms at 1,024 with
/// a sort of them all, 0.14 ms without, release build, loaded machine).
#[test]
#[ignore = "a measurement: cargo test --release --lib create_in_a_full_store -- --ignored --nocapture"]
fn create_in_a_full_store_costs() {
    for (capacity, owners) in [(1024, 1), (1024, 1024), (10_240, 10_240)] {
        let store = MemoryTaskStore::new(capacity);
        for i in 0..capacity {
            let task = stored(
                &format!("f{i}"),
                TaskStatus::Completed,
                &format!("{i:08}"),
                None,
            );
            store
                .create(owned_by(task, &format!("o{}", i % owners)))
                .unwrap();
        }
        let n = 2_000;
        let started = std::time::Instant::now();
        for i in 0..n {
            let at = format!("{:08}", capacity + i);
            let task = stored(&format!("n{i}"), TaskStatus::Completed, &at, None);
            store
                .create(owned_by(task, &format!("o{}", i % owners)))
                .unwrap();
        }
        let each = started.elapsed() / n as u32;
        eprintln!("capacity {capacity}, {owners} owners: {each:?} a create");
    }
}

/// Claim (review-fixes15b), found false: two owners who take turns, or
/// tie, let each other's tasks go. Each new task counts as its owner's,
/// so the one who creates holds the most and gives its own (kept as a
/// guard).
#[test]
fn owners_who_take_turns_in_a_full_store_give_their_own() {
    let store = MemoryTaskStore::new(4);
    for (i, owner) in ["a", "b", "a", "b"].into_iter().enumerate() {
        let task = stored(
            &format!("{owner}{i}"),
            TaskStatus::Completed,
            &format!("0{i}"),
            None,
        );
        store.create(owned_by(task, owner)).unwrap();
    }
    for i in 4..40 {
        let owner = ["a", "b"][i % 2];
        let task = stored(
            &format!("{owner}{i}"),
            TaskStatus::Completed,
            &format!("{i:02}"),
            None,
        );
        store.create(owned_by(task, owner)).unwrap();
        let held = store.lock();
        let of = |name: &str| {
            let owner = Some(Owner::subject(None, name));
            held.tasks
                .values()
                .filter(|(t, _)| t.owner == owner)
                .count()
        };
        assert_eq!((of("a"), of("b")), (2, 2), "after {owner}{i}");
    }
}

/// A result let past the budget by itself (its owner holds the most)
/// takes the store past it by that one result at most: owners whose
/// results grow one after another do not pile up past it.
#[test]
fn results_of_many_owners_that_grow_exceed_the_budget_by_one_at_most() {
    let store = MemoryTaskStore::new(100).max_bytes(10_000);
    for i in 0..5 {
        let task = finished(&format!("s{i}"), &format!("0{i}"), 1_500);
        store.create(owned_by(task, &format!("small{i}"))).unwrap();
    }
    for i in 0..30 {
        let id = format!("t{i}");
        let owner = format!("big{i}");
        store
            .create(owned_by(
                stored(&id, TaskStatus::Working, "10", None),
                &owner,
            ))
            .unwrap();
        let size = 3_000 + 100 * i;
        store
            .update(&id, &mut |t| {
                *t = owned_by(finished(&id, &format!("{:02}", 20 + i), size), &owner);
            })
            .unwrap();
        let held = store.lock().bytes;
        assert!(held <= 10_000 + size + 100, "{held} bytes held after {id}");
    }
}
