//! The Tasks extension on the wire (FIXTURES.md part C, C4 row by row),
//! plus the bounds: expiry, the cap on running tasks, the cap on results,
//! keys unique over a task's life, a custom store, status notifications.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_stdio::types::{
    CallToolResult, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestedSchema,
    InputRequest, InputRequests, StringSchema, Tool,
};
use mcp_stdio::{ErrorObject, MemoryTaskStore, Server, StoredTask, TaskMode, TaskStore};
use serde_json::{Value, json};

use crate::support::{Peer, WAIT, keys, meta, request};

pub(crate) const EXT: &str = "io.modelcontextprotocol/tasks";

/// Request ids for task tests: unique within a test.
fn next_id() -> i64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed) as i64
}

/// The capabilities of a client that declares the extension, and every
/// kind of input a task may ask of it (a task's question is checked
/// against them: `TaskLink::ask`).
pub(crate) fn task_caps() -> Value {
    json!({ "elicitation": {}, "sampling": {}, "roots": {}, "extensions": { EXT: {} } })
}

/// A request whose `_meta` declares `caps`.
pub(crate) fn with_caps(method: &str, mut params: Value, caps: Value) -> Value {
    let mut meta = meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = caps;
    params["_meta"] = meta;
    request(next_id(), method, params)
}

/// A request that declares the extension.
pub(crate) fn task_request(method: &str, params: Value) -> Value {
    with_caps(method, params, task_caps())
}

/// Sends `req` and returns its reply, skipping notifications.
pub(crate) fn reply(peer: &mut Peer, req: &Value) -> Value {
    peer.send(req);
    loop {
        let msg = peer.recv();
        if msg.get("method").is_none() {
            assert_eq!(msg["id"], req["id"], "{msg}");
            return msg;
        }
    }
}

/// C4's timestamps: extended ISO 8601, UTC with milliseconds.
fn assert_timestamp(value: &Value) {
    let s = value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"));
    let b = s.as_bytes();
    let shape_ok = s.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z';
    assert!(shape_ok, "not YYYY-MM-DDTHH:MM:SS.mmmZ: {s}");
}

/// A `CreateTaskResult`: flat, exactly these keys (C4), status working.
pub(crate) fn assert_create_result(resp: &Value) -> String {
    let result = &resp["result"];
    assert_eq!(
        keys(result),
        [
            "_meta",
            "createdAt",
            "lastUpdatedAt",
            "pollIntervalMs",
            "resultType",
            "status",
            "taskId",
            "ttlMs"
        ],
        "{resp}"
    );
    assert_eq!(result["resultType"], "task");
    assert_eq!(result["status"], "working");
    assert!(result["ttlMs"].as_u64().is_some_and(|t| t > 0), "{result}");
    assert!(result["pollIntervalMs"].as_u64().is_some_and(|t| t > 0));
    assert_timestamp(&result["createdAt"]);
    assert_timestamp(&result["lastUpdatedAt"]);
    let id = result["taskId"].as_str().unwrap().to_owned();
    assert!(
        id.len() == 32 && id.bytes().all(|c| c.is_ascii_hexdigit()),
        "128 random bits in hex: {id}"
    );
    id
}

/// Calls `tool` declaring the extension; it must create a task.
pub(crate) fn start(peer: &mut Peer, tool: &str, arguments: Value) -> String {
    let resp = reply(
        peer,
        &task_request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        ),
    );
    assert_create_result(&resp)
}

/// `tasks/get`: the `DetailedTask` result, its shape checked (C4: exactly
/// one status field, never `requestState`, `resultType: "complete"`).
pub(crate) fn get(peer: &mut Peer, task_id: &str) -> Value {
    let resp = reply(
        peer,
        &task_request("tasks/get", json!({ "taskId": task_id })),
    );
    let result = resp["result"].clone();
    assert_eq!(result["resultType"], "complete", "{resp}");
    assert_eq!(result["taskId"], task_id);
    assert!(result.get("requestState").is_none(), "{result}");
    assert!(result.get("ttlMs").is_some(), "{result}");
    assert_timestamp(&result["lastUpdatedAt"]);
    let has = |key: &str| result.get(key).is_some();
    let status = result["status"].as_str().unwrap();
    let fields = (has("inputRequests"), has("result"), has("error"));
    let expected = match status {
        "input_required" => (true, false, false),
        "completed" => (false, true, false),
        "failed" => (false, false, true),
        "working" | "cancelled" => (false, false, false),
        other => panic!("unknown status {other}: {result}"),
    };
    assert_eq!(fields, expected, "{result}");
    result
}

/// Polls `tasks/get` every 50 ms until the status is one of `until`.
pub(crate) fn poll(peer: &mut Peer, task_id: &str, until: &[&str]) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let task = get(peer, task_id);
        if until.contains(&task["status"].as_str().unwrap()) {
            return task;
        }
        assert!(Instant::now() < deadline, "still {task} after {WAIT:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tasks/update` with these answers; the ack is exactly
/// `{resultType, _meta}`.
pub(crate) fn update(peer: &mut Peer, task_id: &str, answers: Value) {
    let req = task_request(
        "tasks/update",
        json!({ "taskId": task_id, "inputResponses": answers }),
    );
    assert_ack(&reply(peer, &req));
}

pub(crate) fn cancel_task(peer: &mut Peer, task_id: &str) {
    let req = task_request("tasks/cancel", json!({ "taskId": task_id }));
    assert_ack(&reply(peer, &req));
}

pub(crate) fn assert_ack(resp: &Value) {
    assert_eq!(keys(&resp["result"]), ["_meta", "resultType"], "{resp}");
    assert_eq!(resp["result"]["resultType"], "complete");
}

pub(crate) fn error_of(resp: &Value) -> (i64, &Value) {
    let code = resp["error"]["code"].as_i64();
    (
        code.unwrap_or_else(|| panic!("not an error: {resp}")),
        &resp["error"],
    )
}

/// The `-32021` the task methods and task-required tools answer.
pub(crate) fn assert_extension_required(resp: &Value) {
    let (code, error) = error_of(resp);
    assert_eq!(code, -32021, "{resp}");
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({ "extensions": { EXT: {} } })
    );
}

pub(crate) fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

fn everything() -> Peer {
    Peer::start(&crate::everything::build())
}

fn ask_name(message: &str) -> InputRequest {
    let schema = ElicitRequestedSchema::default().property("name", StringSchema::default(), true);
    InputRequest::Elicit(ElicitRequestParams::Form(ElicitRequestFormParams::new(
        message, schema,
    )))
}

// --- The life of a task ------------------------------------------------------

#[test]
fn a_task_is_stored_before_its_handle_is_written_and_completes() {
    let mut peer = everything();
    let id = start(
        &mut peer,
        "slow_compute",
        json!({ "seconds": 1, "label": "lifecycle" }),
    );
    // Durable creation: the very next request finds it, still working.
    let working = get(&mut peer, &id);
    assert_eq!(working["status"], "working");
    assert_eq!(working["ttlMs"], 3_600_000);
    assert_eq!(working["pollIntervalMs"], 200);
    let done = poll(&mut peer, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"],
        json!({
            "content": [{ "type": "text", "text": "slow_compute lifecycle: done after 1 s" }],
            "resultType": "complete"
        })
    );
    assert_ne!(done["lastUpdatedAt"], working["lastUpdatedAt"]);
    assert_eq!(done["createdAt"], working["createdAt"]);
    // Still readable a while after it finished (C4, TTL).
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(get(&mut peer, &id), done);
    peer.finish_quietly();
}

#[test]
fn the_request_decides_not_the_connection() {
    let mut peer = everything();
    let plain = reply(
        &mut peer,
        &with_caps(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0, "label": "sync" } }),
            json!({}),
        ),
    );
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert_eq!(
        plain["result"]["content"][0]["text"],
        "slow_compute sync: done after 0 s"
    );
    let id = start(&mut peer, "slow_compute", json!({ "seconds": 0 }));
    poll(&mut peer, &id, &["completed"]);
    // And again without: synchronous, whatever came before.
    let again = reply(
        &mut peer,
        &with_caps(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0 } }),
            json!({ "extensions": {} }),
        ),
    );
    assert_eq!(again["result"]["resultType"], "complete", "{again}");
    peer.finish_quietly();
}

#[test]
fn a_required_task_tool_needs_the_extension_before_its_handler_runs() {
    let mut peer = everything();
    for tool in ["failing_job", "test_tool_with_task", "confirm_delete"] {
        let arguments = if tool == "confirm_delete" {
            json!({ "filename": "x" })
        } else {
            json!({})
        };
        let resp = reply(
            &mut peer,
            &with_caps(
                "tools/call",
                json!({ "name": tool, "arguments": arguments }),
                json!({ "elicitation": {} }),
            ),
        );
        assert_extension_required(&resp);
    }
    peer.finish_quietly();
}

#[test]
fn a_never_task_tool_answers_at_once_and_ignores_a_legacy_task_param() {
    let mut peer = everything();
    let req = task_request(
        "tools/call",
        json!({
            "name": "greet",
            "arguments": { "name": "sep-2243" },
            "task": { "ttl": 60000, "pollInterval": 100 }
        }),
    );
    let resp = reply(&mut peer, &req);
    assert_eq!(
        resp["result"]["content"],
        json!([{ "type": "text", "text": "Hello, sep-2243!" }])
    );
    assert_eq!(resp["result"]["resultType"], "complete");
    assert!(resp["result"].get("taskId").is_none(), "{resp}");
    peer.finish_quietly();
}

#[test]
fn the_task_methods_check_the_extension_then_the_id() {
    let mut peer = everything();
    let no_ext = json!({ "elicitation": {} });
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let params = json!({ "taskId": "gate-test", "inputResponses": {} });
        let resp = reply(&mut peer, &with_caps(method, params, no_ext.clone()));
        assert_extension_required(&resp);
        let params =
            json!({ "taskId": "tasks-conformance-nonexistent-12345", "inputResponses": {} });
        let resp = reply(&mut peer, &task_request(method, params));
        assert_eq!(error_of(&resp).0, -32602, "{resp}");
    }
    // Removed methods: -32601, even declaring the extension.
    for (method, params) in [
        (
            "tasks/result",
            json!({ "taskId": "tasks-conformance-isolation-probe" }),
        ),
        ("tasks/list", json!({})),
    ] {
        let resp = reply(&mut peer, &task_request(method, params));
        assert_eq!(error_of(&resp).0, -32601, "{resp}");
    }
    // Malformed params.
    let resp = reply(&mut peer, &task_request("tasks/get", json!({})));
    assert_eq!(error_of(&resp).0, -32602, "{resp}");
    let id = start(&mut peer, "slow_compute", json!({ "seconds": 0 }));
    let bad = json!({ "taskId": id, "inputResponses": [1] });
    let resp = reply(&mut peer, &task_request("tasks/update", bad));
    assert_eq!(error_of(&resp).0, -32602, "{resp}");
    peer.finish_quietly();
}

#[test]
fn a_tool_error_completes_and_a_protocol_error_fails() {
    let mut peer = everything();
    let failing = start(&mut peer, "failing_job", json!({}));
    let broken = start(&mut peer, "protocol_error_job", json!({}));
    let failed = poll(&mut peer, &broken, &["completed", "failed", "cancelled"]);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603);
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protocol_error_job")
    );
    assert!(
        failed["statusMessage"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    let done = poll(&mut peer, &failing, &["completed", "failed", "cancelled"]);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);
    assert!(done["result"]["content"][0]["text"].as_str().is_some());
    peer.finish_quietly();
}

#[test]
fn a_60_second_task_is_cancelled_while_other_requests_are_served() {
    let mut peer = everything();
    let started = Instant::now();
    let id = start(
        &mut peer,
        "slow_compute",
        json!({ "seconds": 60, "label": "cancel" }),
    );
    // Everything else is served meanwhile.
    let greet = reply(
        &mut peer,
        &task_request(
            "tools/call",
            json!({ "name": "greet", "arguments": { "name": "rt" } }),
        ),
    );
    assert_eq!(greet["result"]["content"][0]["text"], "Hello, rt!");
    let other = start(&mut peer, "slow_compute", json!({ "seconds": 0 }));
    poll(&mut peer, &other, &["completed"]);
    assert_eq!(get(&mut peer, &id)["status"], "working");
    cancel_task(&mut peer, &id);
    // Cancelled before the ack was written.
    let cancelled = get(&mut peer, &id);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // Cancelling a terminal task: the same ack, no change.
    cancel_task(&mut peer, &id);
    cancel_task(&mut peer, &other);
    assert_eq!(get(&mut peer, &other)["status"], "completed");
    // The worker wakes and stops; what it produces changes nothing.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(&mut peer, &id), cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    peer.finish_quietly();
}

// --- Input during a task ------------------------------------------------------

#[test]
fn a_task_waits_for_input_and_resumes_on_update() {
    let mut peer = everything();
    let id = start(
        &mut peer,
        "confirm_delete",
        json!({ "filename": "mrtr-input.txt" }),
    );
    let waiting = poll(&mut peer, &id, &["input_required"]);
    let requests = waiting["inputRequests"].as_object().unwrap();
    assert_eq!(keys(&waiting["inputRequests"]), ["confirm"]);
    assert_eq!(requests["confirm"]["method"], "elicitation/create");
    assert_eq!(
        requests["confirm"]["params"],
        json!({
            "mode": "form",
            "message": "Delete mrtr-input.txt?",
            "requestedSchema": {
                "type": "object",
                "properties": { "confirm": { "type": "boolean" } },
                "required": ["confirm"]
            }
        })
    );
    // An unknown key: acknowledged, nothing changes.
    update(&mut peer, &id, json!({ "unknown-key": "not a response" }));
    assert_eq!(get(&mut peer, &id), waiting);
    update(
        &mut peer,
        &id,
        json!({ "confirm": accept(json!({ "confirm": true })) }),
    );
    let done = poll(&mut peer, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Deleted mrtr-input.txt"
    );
    // The answered key is gone for good: answering it again changes nothing.
    update(
        &mut peer,
        &id,
        json!({ "confirm": accept(json!({ "confirm": false })) }),
    );
    assert_eq!(get(&mut peer, &id), done);
    peer.finish_quietly();
}

#[test]
fn a_task_that_asks_twice_is_answered_partially() {
    let mut peer = everything();
    let id = start(&mut peer, "multi_input", json!({}));
    let waiting = poll(&mut peer, &id, &["input_required"]);
    assert_eq!(keys(&waiting["inputRequests"]), ["confirm", "name"]);
    let both = json!({ "name": "partial-1", "confirm": true });
    update(&mut peer, &id, json!({ "confirm": accept(both) }));
    // Applied before the ack: the next get already shows it.
    let partial = get(&mut peer, &id);
    assert_eq!(partial["status"], "input_required", "{partial}");
    assert_eq!(keys(&partial["inputRequests"]), ["name"]);
    let both = json!({ "name": "partial-2", "confirm": true });
    update(&mut peer, &id, json!({ "name": accept(both) }));
    let done = poll(&mut peer, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(
        done["result"]["content"][0]["text"],
        "name=partial-2, confirm=true"
    );
    peer.finish_quietly();
}

#[test]
fn a_task_waiting_for_input_can_be_cancelled() {
    let mut peer = everything();
    let id = start(&mut peer, "confirm_delete", json!({ "filename": "rt.txt" }));
    poll(&mut peer, &id, &["input_required"]);
    cancel_task(&mut peer, &id);
    let cancelled = get(&mut peer, &id);
    assert_eq!(cancelled["status"], "cancelled");
    update(
        &mut peer,
        &id,
        json!({ "confirm": accept(json!({ "confirm": true })) }),
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(get(&mut peer, &id), cancelled);
    peer.finish_quietly();
}

#[test]
fn input_before_the_task_is_an_ordinary_round_trip() {
    let mut peer = everything();
    let params = json!({ "name": "test_tool_with_task", "arguments": {} });
    let round = reply(&mut peer, &task_request("tools/call", params.clone()));
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    assert!(round["result"].get("taskId").is_none());
    let ask = &round["result"]["inputRequests"]["user_name"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "What is your name?");
    let mut retry = params.clone();
    retry["inputResponses"] = json!({ "user_name": accept(json!({ "name": "Alice" })) });
    if let Some(state) = round["result"].get("requestState") {
        retry["requestState"] = state.clone();
    }
    let created = reply(&mut peer, &task_request("tools/call", retry));
    let id = assert_create_result(&created);
    let done = poll(&mut peer, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice!");
    peer.finish_quietly();
}

/// A tool that asks under the same key twice, mid-run.
fn asks_twice() -> Server {
    Server::builder("t", "1")
        .task_tool(
            Tool::new("twice", "Asks for a name twice."),
            TaskMode::Required,
            |ctx, _args: Value| {
                let first = ctx.ask(InputRequests::from([(
                    "name".to_owned(),
                    ask_name("First?"),
                )]))?;
                let second = ctx.ask(InputRequests::from([(
                    "name".to_owned(),
                    ask_name("Second?"),
                )]))?;
                let name = |answers: &mcp_stdio::types::InputResponses| {
                    answers["name"].as_value()["content"]["name"].clone()
                };
                Ok(CallToolResult::text(format!(
                    "{} then {}",
                    name(&first),
                    name(&second)
                )))
            },
        )
        .build()
}

#[test]
fn keys_are_never_reused_within_a_task() {
    let mut peer = Peer::start(&asks_twice());
    let id = start(&mut peer, "twice", json!({}));
    let first = poll(&mut peer, &id, &["input_required"]);
    assert_eq!(keys(&first["inputRequests"]), ["name"]);
    update(
        &mut peer,
        &id,
        json!({ "name": accept(json!({ "name": "a" })) }),
    );
    let second = poll(&mut peer, &id, &["input_required", "completed"]);
    assert_eq!(keys(&second["inputRequests"]), ["name~2"], "{second}");
    assert_eq!(
        second["inputRequests"]["name~2"]["params"]["message"],
        "Second?"
    );
    // The old key is spent: an answer to it is ignored.
    update(
        &mut peer,
        &id,
        json!({ "name": accept(json!({ "name": "x" })) }),
    );
    update(
        &mut peer,
        &id,
        json!({ "name~2": accept(json!({ "name": "b" })) }),
    );
    let done = poll(&mut peer, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(done["result"]["content"][0]["text"], "\"a\" then \"b\"");
    peer.finish_quietly();
}

#[test]
fn ask_outside_a_task_is_an_error_that_says_what_to_do() {
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("maybe", "Asks mid-run."),
            TaskMode::Optional,
            |ctx, _args: Value| {
                ctx.ask(InputRequests::from([("name".to_owned(), ask_name("Who?"))]))?;
                Ok(CallToolResult::text("asked"))
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    let resp = reply(
        &mut peer,
        &with_caps(
            "tools/call",
            json!({ "name": "maybe", "arguments": {} }),
            json!({}),
        ),
    );
    let (code, error) = error_of(&resp);
    assert_eq!(code, -32603);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Outcome::InputRequired")
    );
    peer.finish_quietly();
}

// --- Status notifications -------------------------------------------------------

#[test]
fn a_listen_with_task_ids_hears_every_status_change() {
    let mut peer = everything();
    let id = start(&mut peer, "confirm_delete", json!({ "filename": "n.txt" }));
    poll(&mut peer, &id, &["input_required"]);
    // Without the extension: -32021.
    let filter = json!({ "notifications": { "taskIds": [id] } });
    let resp = reply(
        &mut peer,
        &with_caps("subscriptions/listen", filter, json!({})),
    );
    assert_extension_required(&resp);
    // With it: the ack lists the ids it follows (known ones only).
    let filter = json!({ "notifications": { "taskIds": [id, "no-such-task"] } });
    let listen = task_request("subscriptions/listen", filter);
    peer.send(&listen);
    let ack = peer.recv();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"], json!({ "taskIds": [id] }));
    let sub = listen["id"].clone();
    let answer = json!({ "confirm": accept(json!({ "confirm": false })) });
    let req = task_request(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": answer }),
    );
    peer.send(&req);
    // The ack, and `working` then `completed`, each the full task, tagged
    // with the subscription id.
    let (mut seen, mut acked) = (Vec::new(), false);
    while seen.len() < 2 || !acked {
        let msg = peer.recv();
        if msg["id"] == req["id"] {
            assert_ack(&msg);
            acked = true;
            continue;
        }
        assert_eq!(msg["method"], "notifications/tasks", "{msg}");
        assert_eq!(
            msg["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            sub
        );
        seen.push(msg["params"].clone());
    }
    assert_eq!(seen[0]["status"], "working");
    assert_eq!(seen[1]["status"], "completed");
    let mut done = get(&mut peer, &id);
    let mut last = seen[1].clone();
    last.as_object_mut().unwrap().remove("_meta");
    for key in ["resultType", "_meta"] {
        done.as_object_mut().unwrap().remove(key);
    }
    assert_eq!(last, done, "the notification is what tasks/get says");
    assert_eq!(done["result"]["content"][0]["text"], "Kept n.txt");
    let (_rest, served) = peer.finish();
    served.unwrap();
}

// --- Bounds ---------------------------------------------------------------------

/// A task tool that runs until cancelled.
fn until_cancelled(builder: mcp_stdio::ServerBuilder) -> mcp_stdio::ServerBuilder {
    builder.task_tool(
        Tool::new("hold", "Runs until cancelled."),
        TaskMode::Required,
        |ctx, _args: Value| {
            while !ctx.wait_cancelled(Duration::from_secs(60)) {}
            Ok(CallToolResult::text("released"))
        },
    )
}

#[test]
fn tasks_expire_after_their_ttl() {
    let server = until_cancelled(Server::builder("t", "1"))
        .task_tool(
            Tool::new("quick", "Done at once."),
            TaskMode::Required,
            |_ctx, _args: Value| Ok(CallToolResult::text("quick")),
        )
        .task_ttl(Some(Duration::from_millis(1_000)))
        .build();
    let mut peer = Peer::start(&server);
    let id = start(&mut peer, "quick", json!({}));
    let done = poll(&mut peer, &id, &["completed"]);
    assert_eq!(done["ttlMs"], 1_000);
    std::thread::sleep(Duration::from_millis(1_100));
    let resp = reply(
        &mut peer,
        &task_request("tasks/get", json!({ "taskId": id })),
    );
    assert_eq!(error_of(&resp).0, -32602, "{resp}");
    peer.finish_quietly();
}

#[test]
fn running_tasks_are_capped() {
    let server = until_cancelled(Server::builder("t", "1"))
        .max_running_tasks(2)
        .build();
    let mut peer = Peer::start(&server);
    let a = start(&mut peer, "hold", json!({}));
    let _b = start(&mut peer, "hold", json!({}));
    let refused = reply(
        &mut peer,
        &task_request("tools/call", json!({ "name": "hold", "arguments": {} })),
    );
    let (code, error) = error_of(&refused);
    assert_eq!(code, -32603, "{refused}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("too many running tasks")
    );
    assert_eq!(error["data"]["limit"], 2);
    // One ends: there is room again (once its worker has returned).
    cancel_task(&mut peer, &a);
    let deadline = Instant::now() + WAIT;
    loop {
        let resp = reply(
            &mut peer,
            &task_request("tools/call", json!({ "name": "hold", "arguments": {} })),
        );
        if resp["result"]["resultType"] == "task" {
            break;
        }
        assert!(Instant::now() < deadline, "{resp}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_rest, served) = peer.finish();
    served.unwrap();
}

/// Claim (review seal14): a task whose handler is still working when its
/// TTL runs out is forgotten (`tasks/get` and `tasks/cancel` answer
/// `-32602`), but its handler was never told: it kept its place among the
/// running tasks until it returned by itself, and nobody could cancel it
/// any more. A client that started `max_running_tasks` long tasks held
/// every place past their TTL. Now the TTL's end cancels the handler
/// (`is_cancelled`, `wait_cancelled`), as it ends a wait for input.
#[test]
fn a_task_past_its_ttl_is_cancelled_and_gives_its_place_back() {
    let server = until_cancelled(Server::builder("t", "1"))
        .max_running_tasks(1)
        .task_ttl(Some(Duration::from_millis(300)))
        .build();
    let mut peer = Peer::start(&server);
    let first = start(&mut peer, "hold", json!({}));
    let deadline = Instant::now() + WAIT;
    loop {
        let req = task_request("tasks/get", json!({ "taskId": first }));
        let resp = reply(&mut peer, &req);
        if resp.get("error").is_some() {
            assert_eq!(error_of(&resp).0, -32602, "{resp}");
            break;
        }
        assert!(Instant::now() < deadline, "{resp}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Forgotten: nobody can cancel it. Its handler is told all the same,
    // and its place is free again.
    let req = task_request("tasks/cancel", json!({ "taskId": first }));
    assert_eq!(error_of(&reply(&mut peer, &req)).0, -32602);
    let deadline = Instant::now() + WAIT;
    loop {
        let resp = reply(
            &mut peer,
            &task_request("tools/call", json!({ "name": "hold", "arguments": {} })),
        );
        if resp["result"]["resultType"] == "task" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the place is still taken: {resp}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_rest, served) = peer.finish();
    served.unwrap();
}

/// Claim (review of seal14): the TTL trips the token only when the
/// handler itself asks (`is_cancelled`, `wait_cancelled`). A handler that
/// hands its work to a scoped thread with `cancel_token()` (what the
/// method's doc offers it for) and waits for that thread never asks: the
/// helper sleeping on its clone of the token is never woken, and the
/// task keeps its place among the running ones past its TTL, forgotten
/// and so beyond `tasks/cancel`, as before the fix for the handler that
/// waits itself.
#[test]
fn a_helper_waiting_on_the_cancel_token_is_woken_by_the_ttl() {
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("helped", "Waits on a helper thread."),
            TaskMode::Required,
            |ctx, _args: Value| {
                let token = ctx.cancel_token();
                std::thread::scope(|s| {
                    s.spawn(|| while !token.wait_timeout(Duration::from_secs(60)) {})
                        .join()
                        .unwrap();
                });
                Ok(CallToolResult::text("released"))
            },
        )
        .max_running_tasks(1)
        .task_ttl(Some(Duration::from_millis(300)))
        .build();
    let mut peer = Peer::start(&server);
    let first = start(&mut peer, "helped", json!({}));
    let deadline = Instant::now() + WAIT;
    loop {
        let resp = reply(
            &mut peer,
            &task_request("tools/call", json!({ "name": "helped", "arguments": {} })),
        );
        if resp["result"]["resultType"] == "task" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{first}: the place is still taken past the TTL: {resp}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    peer.finish_quietly();
}

#[test]
fn a_result_larger_than_the_cap_fails_the_task() {
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("huge", "A big result."),
            TaskMode::Required,
            |_ctx, _args: Value| Ok(CallToolResult::text("x".repeat(10_000))),
        )
        .max_task_result_bytes(1_000)
        .build();
    let mut peer = Peer::start(&server);
    let id = start(&mut peer, "huge", json!({}));
    let failed = poll(&mut peer, &id, &["completed", "failed"]);
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], -32603);
    assert_eq!(failed["error"]["data"]["limit"], 1_000);
    peer.finish_quietly();
}

/// Claim (review size11): since 0334780 the cap measures the result
/// through the replies' serializer; it still measures serde_json's compact
/// bytes, escapes and multi-byte characters included: a result of exactly
/// the cap is kept, one byte over fails the task.
#[test]
fn the_result_cap_counts_the_compact_json_bytes_to_the_byte() {
    let text = "\u{1}\"é😀\\\n".repeat(10);
    let run = |cap: usize| {
        let text = text.clone();
        let server = Server::builder("t", "1")
            .task_tool(
                Tool::new("exact", "A result of known size."),
                TaskMode::Required,
                move |_ctx, _args: Value| {
                    Ok(CallToolResult::text(text.clone())
                        .with_structured(json!({"a":[{"b":{"c":[1.5,-0.0,{}]}}]})))
                },
            )
            .max_task_result_bytes(cap)
            .build();
        let mut peer = Peer::start(&server);
        let id = start(&mut peer, "exact", json!({}));
        let ended = poll(&mut peer, &id, &["completed", "failed"]);
        peer.finish_quietly();
        ended
    };
    let completed = run(usize::MAX);
    assert_eq!(completed["status"], "completed", "{completed}");
    let size = serde_json::to_vec(&completed["result"]).unwrap().len();
    assert_eq!(run(size)["status"], "completed");
    let failed = run(size - 1);
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["data"]["limit"], size - 1);
}

/// A store that takes its time to commit, and counts what it is asked.
struct SlowStore {
    inner: MemoryTaskStore,
    calls: Arc<Mutex<Vec<&'static str>>>,
}

impl TaskStore for SlowStore {
    fn create(&self, task: StoredTask) -> Result<(), ErrorObject> {
        std::thread::sleep(Duration::from_millis(200));
        self.calls.lock().unwrap().push("create");
        self.inner.create(task)
    }

    fn get(&self, task_id: &str) -> Result<Option<StoredTask>, ErrorObject> {
        self.calls.lock().unwrap().push("get");
        self.inner.get(task_id)
    }

    fn update(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        self.calls.lock().unwrap().push("update");
        self.inner.update(task_id, change)
    }
}

#[test]
fn an_application_store_keeps_the_tasks_and_creation_is_durable() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let store = SlowStore {
        inner: MemoryTaskStore::new(8),
        calls: Arc::clone(&calls),
    };
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("quick", "Done at once."),
            TaskMode::Required,
            |_ctx, _args: Value| Ok(CallToolResult::text("quick")),
        )
        .task_store(store)
        .build();
    let mut peer = Peer::start(&server);
    let id = start(&mut peer, "quick", json!({}));
    poll(&mut peer, &id, &["completed"]);
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls[0], "create", "{calls:?}");
    assert!(
        calls.contains(&"update") && calls.contains(&"get"),
        "{calls:?}"
    );
    peer.finish_quietly();
}

/// A store other processes share (it has a watch interval) whose `create`
/// commits only once the server's watch has gone round once: swept, and
/// read again the tasks this process runs, the new one among them (it is
/// counted as running before the store is called).
struct CommitsAfterAWatchRound {
    inner: MemoryTaskStore,
    sweeps: Mutex<u64>,
    swept: std::sync::Condvar,
}

impl TaskStore for CommitsAfterAWatchRound {
    fn create(&self, task: StoredTask) -> Result<(), ErrorObject> {
        // Two sweeps from now: the first one's round has read the tasks.
        let sweeps = self.sweeps.lock().unwrap();
        let until = *sweeps + 2;
        let (_sweeps, waited) = self
            .swept
            .wait_timeout_while(sweeps, WAIT, |n| *n < until)
            .unwrap();
        assert!(!waited.timed_out(), "the watch did not go round");
        self.inner.create(task)
    }

    fn get(&self, task_id: &str) -> Result<Option<StoredTask>, ErrorObject> {
        self.inner.get(task_id)
    }

    fn update(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        self.inner.update(task_id, change)
    }

    fn watch_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(5))
    }

    fn sweep(&self) -> Result<Vec<StoredTask>, ErrorObject> {
        *self.sweeps.lock().unwrap() += 1;
        self.swept.notify_all();
        Ok(Vec::new())
    }
}

/// Issue 48 (`tests/scale_out_faults.sh`: "completed after its cancel was
/// acknowledged"): the watch read a task counted as running before the
/// store had it, found it gone and stopped its handler, which returned at
/// once; the task completed with what a stopped handler says, before
/// anyone cancelled it.
#[test]
fn a_task_being_created_is_not_stopped_by_the_watch() {
    let store = CommitsAfterAWatchRound {
        inner: MemoryTaskStore::new(8),
        sweeps: Mutex::new(0),
        swept: std::sync::Condvar::new(),
    };
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("check", "Says whether it was stopped before it began."),
            TaskMode::Required,
            |ctx, _args: Value| {
                Ok(CallToolResult::text(if ctx.is_cancelled() {
                    "stopped before it began"
                } else {
                    "ran"
                }))
            },
        )
        .task_store(store)
        .build();
    let mut peer = Peer::start(&server);
    let id = start(&mut peer, "check", json!({}));
    let done = poll(&mut peer, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "ran", "{done}");
    peer.finish_quietly();
}

#[test]
fn discover_advertises_the_extension_only_with_a_task_tool() {
    let mut peer = Peer::start(&Server::builder("t", "1").build());
    let resp = reply(&mut peer, &task_request("server/discover", json!({})));
    assert!(resp["result"]["capabilities"].get("extensions").is_none());
    assert!(resp["result"]["capabilities"].get("tasks").is_none());
    let resp = reply(
        &mut peer,
        &task_request("tasks/get", json!({ "taskId": "x" })),
    );
    assert_eq!(error_of(&resp).0, -32601, "not served when not advertised");
    peer.finish_quietly();
    let mut peer = everything();
    let resp = reply(&mut peer, &task_request("server/discover", json!({})));
    let capabilities = &resp["result"]["capabilities"];
    assert_eq!(capabilities["extensions"], json!({ EXT: {} }));
    assert!(capabilities.get("tasks").is_none(), "no 2025-11-25 slot");
    peer.finish_quietly();
}

// --- This crate's client against this server -------------------------------------

#[cfg(feature = "client")]
mod client_side {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::thread;
    use std::time::{Duration, Instant};

    use mcp_stdio::types::{ElicitRequestParams, ElicitResult, SubscriptionFilter, TaskStatus};
    use mcp_stdio::{
        Client, Error, Outcome, RequestOptions, Server, SubscriptionEvent, ToolCallStart, Transport,
    };
    use serde_json::{Value, json};

    /// A connection to `server`, served on a thread of its own.
    fn connect(server: &Server, answers: Arc<AtomicUsize>) -> (Client, thread::JoinHandle<()>) {
        let (ours, theirs) = Transport::memory();
        let serving = {
            let server = server.clone();
            thread::spawn(move || server.serve(theirs).unwrap())
        };
        let client = Client::builder()
            .tasks(true)
            .on_elicitation(move |params| {
                answers.fetch_add(1, Ordering::SeqCst);
                let ElicitRequestParams::Form(form) = params else {
                    return Ok(ElicitResult::decline());
                };
                let field = form
                    .requested_schema
                    .properties
                    .keys()
                    .next()
                    .unwrap()
                    .clone();
                let value = if field == "confirm" {
                    json!(true)
                } else {
                    json!("Ada")
                };
                let mut content = mcp_stdio::types::JsonObject::new();
                content.insert(field, value);
                Ok(ElicitResult::accept(content))
            })
            .connect(ours)
            .unwrap();
        (client, serving)
    }

    fn text(outcome: Outcome<mcp_stdio::types::CallToolResult>) -> String {
        match outcome {
            Outcome::Complete(result) => result.content[0].as_text().unwrap().to_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn call_tool_follows_a_task_and_answers_its_input_once_per_key() {
        let server = crate::everything::build();
        let answers = Arc::new(AtomicUsize::new(0));
        let (client, serving) = connect(&server, Arc::clone(&answers));
        let args = json!({ "filename": "e2e.txt" });
        assert_eq!(
            text(client.call_tool("confirm_delete", args).unwrap()),
            "Deleted e2e.txt"
        );
        assert_eq!(answers.load(Ordering::SeqCst), 1);
        // Two questions at once, each answered once.
        let got = text(client.call_tool("multi_input", json!({})).unwrap());
        assert_eq!(got, "name=Ada, confirm=true");
        assert_eq!(answers.load(Ordering::SeqCst), 3);
        // Input before the task, then the task.
        let got = text(client.call_tool("test_tool_with_task", json!({})).unwrap());
        assert_eq!(got, "Hello, Ada!");
        let args = json!({ "seconds": 1, "label": "e2e" });
        let got = text(client.call_tool("slow_compute", args).unwrap());
        assert_eq!(got, "slow_compute e2e: done after 1 s");
        // A tool error is a result; a protocol error is the call's error.
        match client.call_tool("failing_job", json!({})).unwrap() {
            Outcome::Complete(result) => assert_eq!(result.is_error, Some(true)),
            other => panic!("{other:?}"),
        }
        match client.call_tool("protocol_error_job", json!({})) {
            Err(Error::Rpc(error)) => assert_eq!(error.code, -32603, "{error:?}"),
            other => panic!("{other:?}"),
        }
        client.close().unwrap();
        serving.join().unwrap();
    }

    #[test]
    fn a_timeout_cancels_the_task_on_the_server() {
        let server = crate::everything::build();
        let (client, serving) = connect(&server, Arc::default());
        let options = RequestOptions::new().timeout(Duration::from_millis(300));
        let started = Instant::now();
        let Ok(ToolCallStart::Task(task)) =
            client.start_tool_call("slow_compute", json!({ "seconds": 60 }), options)
        else {
            panic!("no task");
        };
        let id = task.id().to_owned();
        match task.wait() {
            Err(Error::Timeout) => {}
            other => panic!("{other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(10));
        // The server has it cancelled (tasks/cancel, not notifications/cancelled).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = client.task(id.clone()).get().unwrap().task.status;
            if status == TaskStatus::Cancelled {
                break;
            }
            assert!(Instant::now() < deadline, "still {status:?}");
            thread::sleep(Duration::from_millis(20));
        }
        client.close().unwrap();
        serving.join().unwrap();
    }

    #[test]
    fn a_restarted_client_resumes_a_task_by_id() {
        // Tasks belong to the server, not to the connection: a client that
        // went away and a new one that knows the id (say, from its disk).
        let server = crate::everything::build();
        let (first, serving) = connect(&server, Arc::default());
        let args = json!({ "seconds": 1, "label": "resumed" });
        let Ok(ToolCallStart::Task(task)) =
            first.start_tool_call("slow_compute", args, RequestOptions::new())
        else {
            panic!("no task");
        };
        let id = task.id().to_owned();
        drop(task);
        first.close().unwrap();
        serving.join().unwrap();
        let (second, serving) = connect(&server, Arc::default());
        let result = second.task(id).wait().unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("slow_compute resumed: done after 1 s")
        );
        second.close().unwrap();
        serving.join().unwrap();
    }

    #[test]
    fn listen_with_task_ids_delivers_status_events() {
        let server = crate::everything::build();
        let (client, serving) = connect(&server, Arc::default());
        let Ok(ToolCallStart::Task(task)) =
            client.start_tool_call("failing_job", json!({}), RequestOptions::new())
        else {
            panic!("no task");
        };
        let filter = SubscriptionFilter {
            task_ids: Some(vec![task.id().to_owned()]),
            ..Default::default()
        };
        let mut subscription = client.listen(filter).unwrap();
        assert_eq!(
            subscription.accepted().task_ids.as_deref(),
            Some(&[task.id().to_owned()][..])
        );
        let event = subscription.recv_timeout(Duration::from_secs(10)).unwrap();
        let Some(SubscriptionEvent::TaskStatus(done)) = event else {
            panic!("{event:?}");
        };
        assert_eq!(done.task.status, TaskStatus::Completed);
        assert_eq!(done.result.unwrap()["isError"], Value::Bool(true));
        drop(subscription);
        client.close().unwrap();
        serving.join().unwrap();
    }
}

#[cfg(feature = "client")]
#[test]
fn a_task_outlives_its_server_in_a_shared_store() {
    use mcp_stdio::{Client, Transport};
    // Two servers over one store: the first ran the task and is gone (a
    // restarted process with the application's database), the second
    // answers for it.
    let store = Arc::new(MemoryTaskStore::default());
    let build = || {
        Server::builder("t", "1")
            .task_tool(
                Tool::new("quick", "Done at once."),
                TaskMode::Required,
                |_ctx, _args: Value| Ok(CallToolResult::text("kept in the store")),
            )
            .task_store(Arc::clone(&store))
            .build()
    };
    let mut first = Peer::start(&build());
    let id = start(&mut first, "quick", json!({}));
    poll(&mut first, &id, &["completed"]);
    first.finish_quietly();
    let (ours, theirs) = Transport::memory();
    let second = build();
    let serving = std::thread::spawn(move || second.serve(theirs));
    let client = Client::builder().tasks(true).connect(ours).unwrap();
    let result = client.task(id).wait().unwrap();
    assert_eq!(result.content[0].as_text(), Some("kept in the store"));
    client.close().unwrap();
    serving.join().unwrap().unwrap();
}

// --- Review (tasks10): a hostile or careless client ---------------------------

/// Opens a listen that follows `task_ids` and returns its id, once the
/// acknowledgment is read (its `taskIds` must be `followed`).
fn follow(peer: &mut Peer, task_ids: &[&str], followed: &[&str]) -> Value {
    let listen = task_request(
        "subscriptions/listen",
        json!({ "notifications": { "taskIds": task_ids } }),
    );
    peer.send(&listen);
    let ack = peer.recv();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!(followed),
        "{ack}"
    );
    listen["id"].clone()
}

/// Sends `req` and reads until its reply: the reply, and the task status
/// notifications read on the way (their params, without `_meta`).
fn reply_and_statuses(peer: &mut Peer, req: &Value) -> (Value, Vec<Value>) {
    peer.send(req);
    let mut statuses = Vec::new();
    loop {
        let mut msg = peer.recv();
        if msg["id"] == req["id"] && msg.get("method").is_none() {
            return (msg, statuses);
        }
        assert_eq!(msg["method"], "notifications/tasks", "{msg}");
        let params = msg["params"].as_object_mut().unwrap();
        params.remove("_meta");
        statuses.push(Value::Object(params.clone()));
    }
}

/// `tasks/get`'s result as a notification carries it: without
/// `resultType` and `_meta`.
fn as_notified(mut task: Value) -> Value {
    for key in ["resultType", "_meta"] {
        task.as_object_mut().unwrap().remove(key);
    }
    task
}

/// Claim: a `tasks/update` that answers some of the outstanding keys
/// changes what `tasks/get` shows (`inputRequests` loses them) but not
/// `lastUpdatedAt`, and a listen that follows the task is not told:
/// `Tasks::update` neither touches nor publishes unless the task resumes.
/// A client that follows the task by its notifications keeps showing a
/// question it answered, and no stamp says the task changed (the crate's
/// own rule, `touch`: "every change shows").
#[test]
fn a_partial_answer_moves_last_updated_at_and_reaches_the_listens() {
    let mut peer = everything();
    let id = start(&mut peer, "multi_input", json!({}));
    let waiting = poll(&mut peer, &id, &["input_required"]);
    follow(&mut peer, &[&id], &[&id]);
    let both = json!({ "name": "partial", "confirm": true });
    let req = task_request(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "confirm": accept(both) } }),
    );
    let (ack, mut statuses) = reply_and_statuses(&mut peer, &req);
    assert_ack(&ack);
    let partial = get(&mut peer, &id);
    assert_eq!(keys(&partial["inputRequests"]), ["name"], "{partial}");
    assert!(
        partial["lastUpdatedAt"].as_str() > waiting["lastUpdatedAt"].as_str(),
        "inputRequests changed, lastUpdatedAt did not: {} then {}",
        waiting["lastUpdatedAt"],
        partial["lastUpdatedAt"]
    );
    // The listen hears the task as tasks/get now shows it.
    if statuses.is_empty()
        && let Some(mut msg) = peer.try_recv(Duration::from_secs(2))
    {
        msg["params"].as_object_mut().unwrap().remove("_meta");
        statuses.push(msg["params"].clone());
    }
    assert_eq!(
        statuses,
        [as_notified(partial)],
        "what the listen heard after the partial answer"
    );
    cancel_task(&mut peer, &id);
    let (_rest, served) = peer.finish();
    served.unwrap();
}

/// Claim: a listen that names more task ids than the server's limit,
/// from a client that did not declare the extension, is answered
/// `-32602` for its length, while the extension page says the server
/// MUST answer a non-declaring client that requests task notifications
/// with the missing capability (`prepare_listen` counts before it looks
/// at the extension).
#[test]
fn a_listen_for_too_many_task_ids_without_the_extension_is_told_the_extension() {
    let mut peer = everything();
    let ids: Vec<String> = (0..1_001).map(|n| format!("{n:032x}")).collect();
    let filter = json!({ "notifications": { "taskIds": ids } });
    let resp = reply(
        &mut peer,
        &with_caps("subscriptions/listen", filter, json!({})),
    );
    assert_extension_required(&resp);
    peer.finish_quietly();
}

/// Claim: `max_task_result_bytes` bounds what a completed task keeps but
/// not a failed one: `Tasks::end` checks only an `Ok` result, so a
/// handler whose error echoes what it was given (a common
/// `invalid_params(format!(..))`) keeps an error of any size for the
/// task's TTL, twice over (its message again in `statusMessage`).
#[test]
fn a_failed_tasks_error_is_bounded_like_a_result() {
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("echo_fail", "Fails, echoing its input."),
            TaskMode::Required,
            |_ctx, args: Value| -> Result<CallToolResult, ErrorObject> {
                let text = args["text"].as_str().unwrap_or_default();
                Err(ErrorObject::invalid_params(format!("cannot use {text}"))
                    .with_data(json!({ "given": text })))
            },
        )
        .max_task_result_bytes(1_000)
        .build();
    let mut peer = Peer::start(&server);
    let id = start(
        &mut peer,
        "echo_fail",
        json!({ "text": "x".repeat(50_000) }),
    );
    let failed = poll(&mut peer, &id, &["completed", "failed"]);
    assert_eq!(failed["status"], "failed");
    let kept = failed.to_string().len();
    assert!(
        kept < 3_000,
        "a failed task keeps {kept} bytes, its error {} (limit 1000)",
        failed["error"].to_string().len()
    );
    assert_eq!(
        failed["error"]["code"], -32603,
        "{}",
        failed["error"]["message"]
    );
    assert_eq!(failed["error"]["data"]["limit"], 1_000);
    peer.finish_quietly();
}

/// Guard (held on main): a cancelled task whose handler ends afterwards,
/// cancelled twice and answered after its end, is `cancelled` for good,
/// and a listen that follows it hears exactly one final status, the one
/// `tasks/get` shows.
#[test]
fn a_listen_hears_one_final_status_however_the_client_insists() {
    let server = until_cancelled(Server::builder("t", "1")).build();
    let mut peer = Peer::start(&server);
    let id = start(&mut peer, "hold", json!({}));
    follow(&mut peer, &[&id, &id], &[&id]);
    let cancel = |_: ()| task_request("tasks/cancel", json!({ "taskId": id }));
    let (first, mut heard) = reply_and_statuses(&mut peer, &cancel(()));
    assert_ack(&first);
    let (second, more) = reply_and_statuses(&mut peer, &cancel(()));
    assert_ack(&second);
    heard.extend(more);
    let answer = task_request(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "confirm": accept(json!({})) } }),
    );
    let (acked, more) = reply_and_statuses(&mut peer, &answer);
    assert_ack(&acked);
    heard.extend(more);
    // The handler saw the cancellation and returned "released": nothing
    // it finished may show.
    std::thread::sleep(Duration::from_millis(300));
    while let Some(msg) = peer.try_recv(Duration::from_millis(200)) {
        let mut params = msg["params"].clone();
        params.as_object_mut().unwrap().remove("_meta");
        heard.push(params);
    }
    let done = get(&mut peer, &id);
    assert_eq!(done["status"], "cancelled", "{done}");
    assert_eq!(heard, [as_notified(done)], "one final status");
    let (_rest, served) = peer.finish();
    served.unwrap();
}

/// Claim: inside a task, a handler's question reaches `inputRequests`
/// whatever the client declared: `TaskLink::ask` (for `ctx.ask` and for
/// `Outcome::InputRequired` alike) checks no capability, where the same
/// question outside a task is refused (`Sealer::seal`: -32021). The MRTR
/// page: servers MUST NOT send an `inputRequests` the client has not
/// declared support for; a client that declared only the extension is
/// shown an elicitation it cannot answer, and the task waits until its TTL.
#[test]
fn a_task_asks_nothing_the_client_did_not_declare() {
    let asking = |ctx: &mcp_stdio::RequestContext, _args: Value| {
        let answers = ctx.ask(InputRequests::from([(
            "name".to_owned(),
            ask_name("Name?"),
        )]))?;
        Ok(CallToolResult::text(format!("{answers:?}")))
    };
    let returning = |_ctx: &mcp_stdio::RequestContext,
                     _args: Value|
     -> Result<mcp_stdio::Outcome<CallToolResult>, ErrorObject> {
        let requests = InputRequests::from([("name".to_owned(), ask_name("Name?"))]);
        Ok(mcp_stdio::Outcome::InputRequired(
            mcp_stdio::types::InputRequiredResult::new(requests),
        ))
    };
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("asking", "Asks in place."),
            TaskMode::Required,
            asking,
        )
        .task_tool(
            Tool::new("returning", "Asks by its outcome."),
            TaskMode::Required,
            returning,
        )
        .build();
    let mut peer = Peer::start(&server);
    for tool in ["asking", "returning"] {
        let call = with_caps(
            "tools/call",
            json!({ "name": tool, "arguments": {} }),
            json!({ "extensions": { EXT: {} } }),
        );
        let id = assert_create_result(&reply(&mut peer, &call));
        let task = poll(&mut peer, &id, &["input_required", "failed", "completed"]);
        assert_eq!(task["status"], "failed", "{tool}: {task}");
        assert_eq!(task["error"]["code"], -32021, "{tool}: {task}");
        assert_eq!(
            task["error"]["data"]["requiredCapabilities"],
            json!({ "elicitation": {} }),
            "{tool}"
        );
    }
    peer.finish_quietly();
}

/// Claim: `tasks/update` takes an answer of any shape for an outstanding
/// key: `{"confirm": 5}` is acknowledged, the question leaves
/// `inputRequests` and the handler gets `5` for its elicitation, while
/// the same answer on a retry is `-32602` (`Sealer::open`: each answer
/// must fit the request it names). A careless client loses the question
/// for good (the key is never asked again).
#[test]
fn an_answer_that_does_not_fit_its_question_is_refused_and_leaves_it_open() {
    let mut peer = everything();
    let id = start(&mut peer, "multi_input", json!({}));
    poll(&mut peer, &id, &["input_required"]);
    let req = task_request(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "confirm": 5, "name": accept(json!({ "name": "n" })) } }),
    );
    let resp = reply(&mut peer, &req);
    let (code, error) = error_of(&resp);
    assert_eq!(code, -32602, "{resp}");
    assert!(
        error["message"].as_str().unwrap().contains("confirm"),
        "{resp}"
    );
    // Nothing was taken: both questions are still open.
    let waiting = get(&mut peer, &id);
    assert_eq!(keys(&waiting["inputRequests"]), ["confirm", "name"]);
    cancel_task(&mut peer, &id);
    peer.finish_quietly();
}

/// Claim (review tasks10): one connection may hold 10,000 listens
/// (`max_subscriptions`), each may follow the same task, and each status
/// change is written to each of them in full (`Subscriptions::deliver`,
/// at once, whatever waits unsent): a client that makes a task's result
/// large (a tool that echoes what it is given, up to a 16 MiB line, a
/// result up to `max_task_result_bytes`) and opens many listens on it had
/// the server hold listens x result bytes for one `tasks/update` of a few
/// hundred bytes: 1,000 listens and a 100 KB echo wrote 100 MB for one
/// answer. Now at most `MAX_LISTENS_PER_TASK` (8) listens of a connection
/// follow one task; the others are refused (`-32603`, the limit in its
/// data) and the task's end is written 8 times.
#[test]
fn many_listens_on_one_task_do_not_multiply_its_result_without_bound() {
    let mut peer = everything();
    let filename = "x".repeat(100_000);
    let id = start(&mut peer, "confirm_delete", json!({ "filename": filename }));
    poll(&mut peer, &id, &["input_required"]);
    let listens = 1_000;
    for _ in 0..listens {
        let listen = task_request(
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": [id] } }),
        );
        peer.send(&listen);
    }
    let (mut acknowledged, mut answered) = (0, 0);
    while answered < listens {
        let ack = peer.recv_line();
        // A listen acknowledged may hear the task's status before the
        // last listen is answered (CI run 38: the handler's own update
        // reached listen 251 in between).
        if ack.contains("\"notifications/tasks\"") {
            continue;
        }
        answered += 1;
        if ack.contains("acknowledged") {
            acknowledged += 1;
        } else {
            assert!(
                ack.contains("-32603") && ack.contains("followed by 8"),
                "{}",
                &ack[..ack.len().min(200)]
            );
        }
    }
    assert_eq!(acknowledged, 8);
    let req = task_request(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "confirm": accept(json!({ "confirm": true })) } }),
    );
    let sent = req.to_string().len();
    peer.send(&req);
    let (mut written, mut completed) = (0usize, 0);
    while completed < acknowledged {
        let line = peer.recv_line();
        written += line.len() + 1;
        if line.contains("\"completed\"") {
            completed += 1;
        }
    }
    assert!(
        written < 100 * 100_000,
        "{sent} bytes of tasks/update made the server write {written} bytes to one connection"
    );
    let (_rest, served) = peer.finish();
    served.unwrap();
}

// --- Review (cap10): the cap on the listens that follow one task ------------

/// Sends `listen` and returns the next message: its acknowledgment or its
/// refusal.
fn open(peer: &mut Peer, listen: &Value) -> Value {
    peer.send(listen);
    peer.recv()
}

/// Claim: a listen that names a task `MAX_LISTENS_PER_TASK` (8) listens of
/// the connection follow already, among others, is refused whole
/// (`Conn::listen`: `-32603`), so the client hears nothing of the other
/// tasks it named. The acknowledgment is the subset the server agreed to
/// honor (spec 2026-07-28 basic/patterns/subscriptions, "Acknowledgment";
/// the Tasks extension: "the list of task IDs it has agreed to send task
/// status notifications for"), and an unknown id is already left out of
/// it (`Tasks::known`): a task past the cap is left out the same way, and
/// the listen follows the others. Only a listen that would then follow
/// nothing at all is refused, with the limit.
#[test]
fn a_listen_that_names_a_fully_followed_task_among_others_follows_the_others() {
    let mut peer = everything();
    let full = start(&mut peer, "confirm_delete", json!({ "filename": "a.txt" }));
    let other = start(&mut peer, "confirm_delete", json!({ "filename": "b.txt" }));
    // Both still from here on: no status change crosses an ack.
    poll(&mut peer, &full, &["input_required"]);
    poll(&mut peer, &other, &["input_required"]);
    for _ in 0..8 {
        follow(&mut peer, &[&full], &[&full]);
    }
    // Alone, the ninth is refused, with the limit.
    let ninth = task_request(
        "subscriptions/listen",
        json!({ "notifications": { "taskIds": [full] } }),
    );
    let resp = open(&mut peer, &ninth);
    let (code, error) = error_of(&resp);
    assert_eq!(code, -32603, "{resp}");
    assert_eq!(error["data"]["limit"], 8, "{resp}");
    // Beside another task, it follows that one.
    let sub = follow(&mut peer, &[&full, &other], &[&other]);
    let answer = json!({ "confirm": accept(json!({ "confirm": false })) });
    let req = task_request(
        "tasks/update",
        json!({ "taskId": other, "inputResponses": answer }),
    );
    peer.send(&req);
    // Its answer, and its end on the listen (in either order).
    let (mut answered, mut ended) = (false, false);
    while !(answered && ended) {
        let msg = peer.recv();
        if msg["id"] == req["id"] {
            assert_ack(&msg);
            answered = true;
            continue;
        }
        assert_eq!(msg["method"], "notifications/tasks", "{msg}");
        let params = &msg["params"];
        assert_eq!(
            params["_meta"]["io.modelcontextprotocol/subscriptionId"],
            sub
        );
        assert_eq!(params["taskId"], other.as_str(), "{msg}");
        ended = params["status"] == "completed";
    }
    cancel_task(&mut peer, &full);
    let (_rest, served) = peer.finish();
    served.unwrap();
}

/// Guard: every way a listen ends gives its place on the task back (a
/// count that drifted would leave the task unfollowable for good, or let
/// a ninth listen follow it): `notifications/cancelled`
/// (`Conn::cancel`), the application closing one
/// (`Notifier::close_subscription`) and all (`close_subscriptions`).
#[test]
fn a_listen_that_ends_any_way_gives_its_place_on_the_task_back() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let mut peer = Peer::start(&server);
    let id = start(&mut peer, "confirm_delete", json!({ "filename": "a.txt" }));
    poll(&mut peer, &id, &["input_required"]);
    let refused = |peer: &mut Peer| {
        let listen = task_request(
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": [id] } }),
        );
        let resp = open(peer, &listen);
        assert_eq!(error_of(&resp).0, -32603, "{resp}");
    };
    let mut subs: Vec<Value> = (0..8).map(|_| follow(&mut peer, &[&id], &[&id])).collect();
    refused(&mut peer);
    // Cancelled: a place, and only one.
    peer.send(&crate::support::cancel(subs.pop().unwrap()));
    subs.push(follow(&mut peer, &[&id], &[&id]));
    refused(&mut peer);
    // Closed by the application: its final result, then a place.
    let closed = subs.pop().unwrap();
    let closed_id: mcp_stdio::RequestId = serde_json::from_value(closed.clone()).unwrap();
    notifier.close_subscription(&closed_id);
    let last = peer.recv();
    assert_eq!(last["id"], closed, "{last}");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    subs.push(follow(&mut peer, &[&id], &[&id]));
    refused(&mut peer);
    // All closed: 8 final results, then 8 places.
    notifier.close_subscriptions();
    for sub in &subs {
        let last = peer.recv();
        assert_eq!(last["id"], *sub, "{last}");
    }
    for _ in 0..8 {
        follow(&mut peer, &[&id], &[&id]);
    }
    refused(&mut peer);
    cancel_task(&mut peer, &id);
    let (_rest, served) = peer.finish();
    served.unwrap();
}

/// A store that keeps tasks but says every update found the task ended.
struct EndedStore(MemoryTaskStore);

impl TaskStore for EndedStore {
    fn create(&self, task: StoredTask) -> Result<(), ErrorObject> {
        self.0.create(task)
    }

    fn get(&self, task_id: &str) -> Result<Option<StoredTask>, ErrorObject> {
        self.0.get(task_id)
    }

    fn update(
        &self,
        _task_id: &str,
        _change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        Ok(None)
    }
}

/// Claim (review size11): 2b1b730 names an ended task's status on the
/// trace by its wire name; for the statuses the store can show there the
/// word is the one `format!("{s:?}").to_lowercase()` gave.
#[test]
fn the_trace_names_the_status_of_a_task_that_ended_under_its_handler() {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let tx = Mutex::new(tx);
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("quick", "Done at once."),
            TaskMode::Required,
            |_ctx, _args: Value| Ok(CallToolResult::text("quick")),
        )
        .task_store(EndedStore(MemoryTaskStore::new(8)))
        .trace(move |line| {
            let _ = tx.lock().unwrap().send(line.to_owned());
        })
        .build();
    let mut peer = Peer::start(&server);
    let id = start(&mut peer, "quick", json!({}));
    let deadline = Instant::now() + WAIT;
    let line = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx.recv_timeout(left).expect("no trace of the ended task");
        if line.contains("had ended already") {
            break line;
        }
    };
    assert_eq!(
        line,
        format!(
            "task {id}: its handler finished, but the task had ended already (working): what it finished was not kept"
        )
    );
    peer.finish_quietly();
}

/// Claim (review tasks15): with `task_ttl(None)` a client holds every
/// running slot for good by never answering: a task waiting for input
/// has no end but an answer or `tasks/cancel`, and keeps its place among
/// the running ones (`max_running_tasks`) meanwhile. Now a wait for
/// input ends after `task_input_timeout`, failing the task, and the
/// place comes back.
#[test]
fn a_task_nobody_answers_gives_its_running_place_back_without_a_ttl() {
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("asks", "Asks for a name."),
            TaskMode::Required,
            |ctx, _args: Value| {
                let answers =
                    ctx.ask(InputRequests::from([("name".to_owned(), ask_name("Who?"))]))?;
                Ok(CallToolResult::text(answers["name"].as_value().to_string()))
            },
        )
        .max_running_tasks(1)
        .task_ttl(None)
        .task_input_timeout(Some(Duration::from_millis(300)))
        .build();
    let mut peer = Peer::start(&server);
    let call = task_request("tools/call", json!({ "name": "asks", "arguments": {} }));
    let created = reply(&mut peer, &call);
    assert_eq!(created["result"]["ttlMs"], Value::Null, "{created}");
    let first = created["result"]["taskId"].as_str().unwrap().to_owned();
    poll(&mut peer, &first, &["input_required"]);
    let call = task_request("tools/call", json!({ "name": "asks", "arguments": {} }));
    let refused = reply(&mut peer, &call);
    assert_eq!(refused["error"]["data"]["limit"], 1, "{refused}");
    let failed = poll(&mut peer, &first, &["failed"]);
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no answer")),
        "{failed}"
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let call = task_request("tools/call", json!({ "name": "asks", "arguments": {} }));
        let resp = reply(&mut peer, &call);
        if resp["result"]["resultType"] == "task" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the place is still taken: {resp}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    peer.finish_quietly();
}

/// A store that, once, holds the task's handler inside the read with
/// which it looks for answers after its questions went out (the read
/// returns what it read before the hold): what the handler sees when an
/// answer lands just after it looked.
struct HoldsTheHandlersLook {
    inner: MemoryTaskStore,
    handler: Mutex<Option<std::thread::ThreadId>>,
    held: std::sync::atomic::AtomicBool,
    holding: crossbeam_channel::Sender<()>,
    release: crossbeam_channel::Receiver<()>,
}

impl TaskStore for HoldsTheHandlersLook {
    fn create(&self, task: StoredTask) -> Result<(), ErrorObject> {
        self.inner.create(task)
    }

    fn get(&self, task_id: &str) -> Result<Option<StoredTask>, ErrorObject> {
        let read = self.inner.get(task_id)?;
        let asking = (read.as_ref())
            .is_some_and(|t| t.task.task.status == mcp_stdio::types::TaskStatus::InputRequired);
        let on_handler = *self.handler.lock().unwrap() == Some(std::thread::current().id());
        if asking && on_handler && !self.held.swap(true, Ordering::SeqCst) {
            self.holding.send(()).unwrap();
            let _ = self.release.recv_timeout(WAIT);
        }
        Ok(read)
    }

    fn update(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut StoredTask),
    ) -> Result<Option<StoredTask>, ErrorObject> {
        self.inner.update(task_id, change)
    }
}

/// Claim (review-fixes15b): an answer that lands as the input timeout
/// runs out is taken (`tasks/update` succeeds, the task is `working`
/// again) and then thrown away: the handler looked just before, finds
/// the deadline past, and fails the task with "no answer" although the
/// client's answer was accepted.
#[test]
fn an_answer_accepted_as_the_input_timeout_runs_out_is_not_thrown_away() {
    let (holding_tx, holding) = crossbeam_channel::bounded(1);
    let (release, release_rx) = crossbeam_channel::bounded(1);
    let store = Arc::new(HoldsTheHandlersLook {
        inner: MemoryTaskStore::new(8),
        handler: Mutex::new(None),
        held: std::sync::atomic::AtomicBool::new(false),
        holding: holding_tx,
        release: release_rx,
    });
    let seen = Arc::clone(&store);
    let server = Server::builder("t", "1")
        .task_tool(
            Tool::new("asks", "Asks for a name."),
            TaskMode::Required,
            move |ctx, _args: Value| {
                *seen.handler.lock().unwrap() = Some(std::thread::current().id());
                let answers =
                    ctx.ask(InputRequests::from([("name".to_owned(), ask_name("Who?"))]))?;
                Ok(CallToolResult::text(answers["name"].as_value().to_string()))
            },
        )
        .task_store(Arc::clone(&store))
        .task_input_timeout(Some(Duration::from_millis(200)))
        .build();
    let mut peer = Peer::start(&server);
    let task = start(&mut peer, "asks", json!({}));
    poll(&mut peer, &task, &["input_required"]);
    // The handler's look at the deadline, held.
    holding.recv_timeout(WAIT).expect("the handler looked");
    update(
        &mut peer,
        &task,
        json!({ "name": accept(json!({ "name": "Ada" })) }),
    );
    assert_eq!(get(&mut peer, &task)["status"], "working");
    release.send(()).unwrap();
    let done = poll(&mut peer, &task, &["completed", "failed"]);
    assert_eq!(
        done["status"], "completed",
        "the accepted answer was thrown away: {done}"
    );
    peer.finish_quietly();
}
