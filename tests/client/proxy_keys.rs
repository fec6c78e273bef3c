//! What the proxy keeps of the `inputRequests` keys of a task behind it
//! (left16, item 1): a server behind that asks under a new long key at
//! each poll costs the proxy no key, measured on this process's peak
//! resident set (`VmHWM`: the proxy and its caller run here, the server
//! in a process of its own); and no key is answered twice, though the
//! server lists each one again at the next poll, as a lagging poll may.

use std::collections::HashMap;

use mcp_stdio::ToolCallStart;
use mcp_stdio::types::{InputResponse, InputResponses, ListRootsResult, TaskStatus};

use super::*;

/// How many polls behind ask under a new key.
const ROUNDS: usize = 100;
/// How long each key is.
const KEY_BYTES: usize = 50 * 1024;
/// The rounds before the measure starts: the memory the proxy's threads
/// take for one round, once.
const WARM_UP: usize = 5;

/// The key the server behind asks under at its `round`th poll: `kNNNN-`
/// and [`KEY_BYTES`] of `x`.
fn key(round: usize) -> String {
    format!("k{round:04}-{}", "x".repeat(KEY_BYTES))
}

/// The round of a key of [`key`]'s (0 for any other).
fn round_of(key: &str) -> usize {
    key.get(1..5).and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// A task's fields, as `tasks/get` and `tools/call` show them.
fn task_fields(status: &str) -> Value {
    json!({
        "taskId": "t", "status": status,
        "createdAt": "2026-07-28T10:30:00.000Z",
        "lastUpdatedAt": "2026-07-28T10:30:00.000Z",
        "ttlMs": null, "pollIntervalMs": 10
    })
}

/// `new-key-every-poll`: a modern server with the Tasks extension whose
/// one tool, `ask`, runs as task `t`. Each of the first [`ROUNDS`]
/// `tasks/get` shows the task `input_required` under a new key of
/// [`key`]'s (a `roots/list`), and the key before it again; the next one
/// shows it `completed`, its text `answered N keys, M more than once`.
pub fn fake_new_key_every_poll() -> ! {
    let mut round = 0;
    // Each key's round, and how often it was answered.
    let mut answered: HashMap<usize, usize> = HashMap::new();
    each_request(|out, id, method, msg| match method {
        "server/discover" => {
            let result = json!({
                "resultType": "complete",
                "supportedVersions": [MODERN],
                "capabilities": {
                    "tools": {},
                    "extensions": { "io.modelcontextprotocol/tasks": {} }
                },
                "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "new-keys", "version": "1" } }
            });
            send(out, &reply(id, result));
        }
        "tools/list" => {
            let tools =
                json!({ "tools": [{ "name": "ask", "inputSchema": { "type": "object" } }] });
            send(out, &reply(id, tools));
        }
        "tools/call" => {
            let mut created = task_fields("working");
            created["resultType"] = json!("task");
            send(out, &reply(id, created));
        }
        "tasks/get" if round == ROUNDS => {
            let twice = answered.values().filter(|n| **n > 1).count();
            let mut done = task_fields("completed");
            done["resultType"] = json!("complete");
            done["result"] = text_result(&format!(
                "answered {} keys, {twice} more than once",
                answered.len()
            ));
            send(out, &reply(id, done));
        }
        "tasks/get" => {
            round += 1;
            let mut asked = serde_json::Map::new();
            for r in round.saturating_sub(1).max(1)..=round {
                asked.insert(key(r), json!({ "method": "roots/list" }));
            }
            let mut asking = task_fields("input_required");
            asking["resultType"] = json!("complete");
            asking["inputRequests"] = Value::Object(asked);
            send(out, &reply(id, asking));
        }
        "tasks/update" => {
            let responses = msg
                .pointer("/params/inputResponses")
                .and_then(Value::as_object);
            for key in responses.into_iter().flatten().map(|(key, _)| key) {
                *answered.entry(round_of(key)).or_default() += 1;
            }
            send(out, &reply(id, json!({ "resultType": "complete" })));
        }
        "tasks/cancel" => send(out, &reply(id, json!({ "resultType": "complete" }))),
        _ => send(out, &error_reply(id, -32601, "Method not found", None)),
    });
    std::process::exit(0);
}

/// The server behind asks under a new key of 50 KiB at each of 100 polls
/// (and lists the key before it again): the proxy in front keeps a hash
/// of each key answered, not the key, so the rounds past the first few
/// grow this process by less than the keys are long; each key is
/// answered once. Before, the proxy kept every key it answered whole,
/// twice (`follow_task`'s set, and the `TaskLink::ask` of its own task,
/// which the keys of the server behind are asked through).
pub fn a_server_behind_the_proxy_asking_under_a_new_long_key_at_each_poll_costs_it_no_key()
-> Result<String, String> {
    let client = builder()
        .trace(|_| {})
        .spawn(server_command("new-key-every-poll", None))
        .map_err(|e| format!("connecting failed: {e}"))?;
    let client = Arc::new(client);
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client))
        .map_err(|e| format!("serve_as failed: {e}"))?;
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = builder()
        .request_timeout(WAIT)
        .tasks(true)
        .on_roots(|| Ok(ListRootsResult::default()))
        .connect(ours)
        .map_err(|e| format!("the caller could not connect: {e}"))?;
    let ended = follow_answering(&caller);
    let _ = client.close_shared();
    proxy.stop_handle().stop();
    let (text, growth) = ended?;
    let want = format!("answered {ROUNDS} keys, 0 more than once");
    ensure!(
        text == want,
        "the server behind says {text:?}, want {want:?}"
    );
    let keys_kib = (ROUNDS - WARM_UP) * KEY_BYTES / 1024;
    ensure!(
        growth < keys_kib as u64 / 2,
        "peak RSS grew by {growth} kB over {} rounds that asked under new keys of {} KiB ({keys_kib} KiB of keys)",
        ROUNDS - WARM_UP,
        KEY_BYTES / 1024
    );
    Ok(format!(
        "VmHWM +{growth} kB over {} rounds ({keys_kib} KiB of keys)",
        ROUNDS - WARM_UP
    ))
}

/// The caller's side: starts `ask` (a task of the proxy's), answers each
/// key its task shows once, polling every 2 ms, until the task ends;
/// the text of its result, and how much the peak resident set grew after
/// the [`WARM_UP`] rounds.
fn follow_answering(caller: &Client) -> Result<(String, u64), String> {
    let started = caller.start_tool_call("ask", json!({}), RequestOptions::new());
    let Ok(ToolCallStart::Task(mut handle)) = started else {
        return Err(format!("want a task of the proxy's, got {started:?}"));
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut last, mut before) = (0, None);
    let ended = loop {
        ensure!(
            Instant::now() < deadline,
            "the task was not over after 60 s ({last} keys answered)"
        );
        let got = handle.get().map_err(|e| format!("tasks/get failed: {e}"))?;
        match got.task.status {
            TaskStatus::InputRequired => {
                let mut responses = InputResponses::new();
                for (key, _) in got.input_requests.iter().flatten() {
                    if round_of(key) > last {
                        last = round_of(key);
                        responses.insert(key.clone(), InputResponse(json!({ "roots": [] })));
                    }
                }
                if !responses.is_empty() {
                    handle
                        .update(responses)
                        .map_err(|e| format!("tasks/update failed: {e}"))?;
                }
                if last == WARM_UP && before.is_none() {
                    let _ = std::fs::write("/proc/self/clear_refs", "5");
                    before = Some(vm_hwm_kib()?);
                }
            }
            TaskStatus::Working => {}
            _ => break got,
        }
        // The pace of the polls.
        thread::sleep(Duration::from_millis(2));
    };
    let after = vm_hwm_kib()?;
    let growth = after.saturating_sub(before.ok_or("the warm-up rounds never came")?);
    let text = ended
        .result
        .as_ref()
        .and_then(|r| r.get("content"))
        .and_then(|c| c.pointer("/0/text"))
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the task ended without a text: {ended:?}"))?;
    Ok((text.to_owned(), growth))
}
