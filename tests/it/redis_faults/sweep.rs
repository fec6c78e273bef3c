//! The sweep past a task it cannot write (the second review of issue 48,
//! "noticed"): every other task whose lease lapsed is still failed, and
//! the one it could not write is tried again at the next sweep. Against a
//! real `redis-server`; `tests/redis.sh` runs it.

use super::*;

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_sweep_goes_on_past_a_task_it_cannot_write() {
    // Task 9's replica went away (its lease is gone). Tasks 1 to 3 are in
    // the running set with records no replica can read (written by a
    // newer or broken one): each update of them fails. The set holds
    // integers only, so Redis keeps it sorted (an intset): the sweep meets
    // 1, 2 and 3 before 9.
    let prefix = prefix("sweep-past");
    let store = RedisTaskStore::open(&redis_url(), &prefix)
        .unwrap()
        .lease(Duration::from_secs(10));
    let traced = Arc::new(Mutex::new(Vec::<String>::new()));
    let into = Arc::clone(&traced);
    store.trace(Arc::new(move |line: &str| {
        into.lock().unwrap().push(line.to_owned())
    }));
    store.create(working("9")).unwrap();
    store.worker_ended("9");
    let mut c = connection(&redis_url());
    let _: () = redis::cmd("DEL")
        .arg(format!("{prefix}:lease:9"))
        .query(&mut c)
        .unwrap();
    for id in ["1", "2", "3"] {
        let _: () = redis::cmd("SET")
            .arg(format!("{prefix}:task:{id}"))
            .arg("not a task record")
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("SADD")
            .arg(format!("{prefix}:running"))
            .arg(id)
            .query(&mut c)
            .unwrap();
    }
    let swept = store.sweep();
    let failed: Vec<String> = swept
        .as_ref()
        .map(|tasks| {
            tasks
                .iter()
                .filter(|t| t.task.task.status == TaskStatus::Failed)
                .map(|t| t.task.task.task_id.clone())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        failed,
        ["9"],
        "the sweep answered {:?}: task 9, whose lease lapsed, was not failed",
        swept.map(|tasks| tasks.len())
    );
    let traced = traced.lock().unwrap().clone();
    assert!(
        traced
            .iter()
            .any(|line| line.contains("could not fail task \"1\"")),
        "the trace does not say which task the sweep could not write: {traced:?}"
    );
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg(format!("{prefix}:running"))
        .query(&mut c)
        .unwrap();
    let mut members = members;
    members.sort();
    assert_eq!(
        members,
        ["1", "2", "3"],
        "the tasks the sweep could not write are left for the next one"
    );
}
