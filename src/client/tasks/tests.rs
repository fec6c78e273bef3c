use std::io::{BufRead, Write};

use super::*;

#[test]
fn the_poll_interval_is_the_servers_within_bounds() {
    assert_eq!(poll_interval(None), DEFAULT_POLL_INTERVAL);
    assert_eq!(poll_interval(Some(200)), Duration::from_millis(200));
    assert_eq!(poll_interval(Some(0)), MIN_POLL_INTERVAL);
    assert_eq!(poll_interval(Some(u64::MAX)), MAX_POLL_INTERVAL);
}

#[test]
fn a_huge_timeout_still_makes_a_deadline() {
    assert!(deadline_after(Duration::MAX) > Instant::now());
}

/// Review client15: a task that asks for input under a new key at every
/// poll (keys are the server's, each up to the line limit long) leaves the
/// handle holding a hash of each key it answered (8 bytes), not the key:
/// the server cannot make the client's memory grow by a line a poll for
/// as long as the wait lasts. (Review fixes15a: not by forgetting the keys
/// no longer listed, which a lagging poll may list again.)
#[test]
fn the_keys_a_task_answered_are_kept_as_hashes() {
    let (ours, theirs) = crate::transport::Transport::memory();
    const ROUNDS: usize = 20;
    let server = std::thread::spawn(move || {
        let mut server = FakeTaskServer::discovered(theirs);
        let task = task_json;
        let mut round = 0;
        loop {
            let msg = server.recv();
            let id = msg["id"].clone();
            match msg["method"].as_str().unwrap() {
                "tasks/get" if round == ROUNDS => {
                    let mut done = task("completed");
                    done["result"] = json!({ "content": [] });
                    server.send(json!({ "jsonrpc": "2.0", "id": id, "result": done }));
                    return;
                }
                "tasks/get" => {
                    round += 1;
                    let mut asking = task("input_required");
                    asking["inputRequests"] = json!({ format!("key-{round}-{}", "k".repeat(1000)): { "method": "roots/list" } });
                    server.send(json!({ "jsonrpc": "2.0", "id": id, "result": asking }));
                }
                _ => server.send(json!({ "jsonrpc": "2.0", "id": id, "result": {} })),
            }
        }
    });
    let client = crate::client::ClientBuilder::default()
        .trace(|_| {})
        .tasks(true)
        .on_roots(|| Ok(crate::types::ListRootsResult::default()))
        .connect(ours)
        .unwrap();
    let mut handle = client.task("t");
    let mut deadline = deadline_after(Duration::from_secs(30));
    let ending = handle.follow(&mut deadline);
    assert!(
        matches!(ending, Ok(Ending::Completed(_))),
        "{:?}",
        ending.err()
    );
    server.join().unwrap();
    // A `u64` each, however long the key.
    let _: &crate::key_hashes::KeyHashes = &handle.answered;
    assert_eq!(handle.answered.len(), ROUNDS);
}

/// Review fixes15a: spec extensions/tasks, "Task Update Requests": the
/// acknowledgment of `tasks/update` is eventually consistent, keys are
/// unique over the task's lifetime, and clients SHOULD track the keys
/// they answered so as not to respond to a request more than once. A
/// server whose polls are served by replicas that lag (one answers
/// `working` once it took the answer, a later one still lists the key)
/// shows the same request again: the user must not be asked it twice.
#[test]
fn a_key_answered_before_is_not_answered_again_when_a_lagging_poll_lists_it_again() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (ours, theirs) = crate::transport::Transport::memory();
    let server = std::thread::spawn(move || {
        let mut server = FakeTaskServer::discovered(theirs);
        let task = |status: &str| {
            let mut task = task_json(status);
            task["pollIntervalMs"] = json!(0);
            task
        };
        let mut polls = 0;
        loop {
            let msg = server.recv();
            let id = msg["id"].clone();
            let result = match msg["method"].as_str().unwrap() {
                "tasks/get" => {
                    polls += 1;
                    match polls {
                        // Asked, then (its answer taken) working, then a
                        // lagging replica's snapshot of the first poll.
                        1 | 3 => {
                            let mut asking = task("input_required");
                            asking["inputRequests"] =
                                json!({ "roots": { "method": "roots/list" } });
                            asking
                        }
                        2 => task("working"),
                        _ => {
                            let mut done = task("completed");
                            done["result"] = json!({ "content": [] });
                            server.send(json!({ "jsonrpc": "2.0", "id": id, "result": done }));
                            return;
                        }
                    }
                }
                _ => json!({}),
            };
            server.send(json!({ "jsonrpc": "2.0", "id": id, "result": result }));
        }
    });
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    let client = crate::client::ClientBuilder::default()
        .trace(|_| {})
        .tasks(true)
        .on_roots(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(crate::types::ListRootsResult::default())
        })
        .connect(ours)
        .unwrap();
    let mut handle = client.task("t");
    let mut deadline = deadline_after(Duration::from_secs(30));
    let ending = handle.follow(&mut deadline);
    assert!(
        matches!(ending, Ok(Ending::Completed(_))),
        "{:?}",
        ending.err()
    );
    server.join().unwrap();
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the roots handler ran for each time the key was listed"
    );
}

/// The server end of a memory transport, its discovery answered with the
/// Tasks extension: the two tests above play a tasks server through it.
struct FakeTaskServer {
    reader: Box<dyn BufRead + Send>,
    writer: Box<dyn Write + Send>,
}

impl FakeTaskServer {
    fn discovered(theirs: crate::transport::Transport) -> FakeTaskServer {
        let (reader, writer) = theirs.into_parts();
        let mut server = FakeTaskServer { reader, writer };
        let probe = server.recv();
        server.send(json!({ "jsonrpc": "2.0", "id": probe["id"], "result": {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } }
        }}));
        server
    }

    fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.writer, "{msg}").unwrap();
        self.writer.flush().unwrap();
    }
}

/// Task `t` with `status`.
fn task_json(status: &str) -> Value {
    json!({
        "taskId": "t", "status": status, "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": null
    })
}
