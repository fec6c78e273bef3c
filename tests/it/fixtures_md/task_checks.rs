//! Part C of FIXTURES.md: one check per Tasks extension fixture (the
//! wire details of each C4 row are in `tests/it/tasks.rs`).

use serde_json::json;

use crate::support::Peer;
use crate::tasks::{
    assert_create_result, assert_extension_required, cancel_task, get, poll, reply, start,
    task_request, update, with_caps,
};

const TERMINAL: &[&str] = &["completed", "failed", "cancelled"];

pub(super) fn check_greet_tool(peer: &mut Peer) {
    let resp = reply(
        peer,
        &task_request(
            "tools/call",
            json!({ "name": "greet", "arguments": { "name": "World" }, "task": { "ttl": 60000 } }),
        ),
    );
    assert_eq!(resp["result"]["resultType"], "complete", "{resp}");
    assert_eq!(resp["result"]["content"][0]["text"], "Hello, World!");
    assert!(resp["result"].get("taskId").is_none());
}

pub(super) fn check_slow_compute(peer: &mut Peer) {
    let sync = reply(
        peer,
        &with_caps(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0, "label": "sync" } }),
            json!({}),
        ),
    );
    assert_eq!(sync["result"]["resultType"], "complete", "{sync}");
    let done = start(peer, "slow_compute", json!({ "seconds": 1, "label": "c3" }));
    assert_eq!(get(peer, &done)["status"], "working");
    let long = start(
        peer,
        "slow_compute",
        json!({ "seconds": 60, "label": "c3" }),
    );
    let finished = poll(peer, &done, TERMINAL);
    assert_eq!(finished["status"], "completed");
    assert!(!finished["result"]["content"].as_array().unwrap().is_empty());
    cancel_task(peer, &long);
    assert_eq!(poll(peer, &long, TERMINAL)["status"], "cancelled");
}

pub(super) fn check_failing_job(peer: &mut Peer) {
    let refused = reply(
        peer,
        &with_caps(
            "tools/call",
            json!({ "name": "failing_job", "arguments": {} }),
            json!({}),
        ),
    );
    assert_extension_required(&refused);
    let id = start(peer, "failing_job", json!({}));
    let done = poll(peer, &id, TERMINAL);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);
}

pub(super) fn check_protocol_error_job(peer: &mut Peer) {
    let id = start(peer, "protocol_error_job", json!({}));
    let failed = poll(peer, &id, TERMINAL);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603);
    assert!(failed.get("result").is_none());
}

pub(super) fn check_confirm_delete(peer: &mut Peer) {
    let id = start(
        peer,
        "confirm_delete",
        json!({ "filename": "mrtr-resume.txt" }),
    );
    let waiting = poll(peer, &id, &["input_required"]);
    assert_eq!(
        waiting["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let answer = json!({ "action": "accept", "content": { "confirm": true } });
    update(peer, &id, json!({ "confirm": answer }));
    let done = poll(peer, &id, TERMINAL);
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Deleted mrtr-resume.txt"
    );
}

pub(super) fn check_multi_input(peer: &mut Peer) {
    let id = start(peer, "multi_input", json!({}));
    let waiting = poll(peer, &id, &["input_required"]);
    let first = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let answer =
        |name: &str| json!({ "action": "accept", "content": { "name": name, "confirm": true } });
    update(peer, &id, json!({ first.clone(): answer("partial-1") }));
    let partial = get(peer, &id);
    assert_eq!(partial["status"], "input_required");
    let rest: Vec<&String> = partial["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert!(rest.len() == 1 && *rest[0] != first, "{partial}");
    let second = rest[0].clone();
    update(peer, &id, json!({ second: answer("partial-2") }));
    assert_eq!(poll(peer, &id, TERMINAL)["status"], "completed");
}

pub(super) fn check_test_tool_with_task(peer: &mut Peer) {
    let params = json!({ "name": "test_tool_with_task", "arguments": {} });
    let round = reply(peer, &task_request("tools/call", params.clone()));
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let mut retry = params;
    retry["inputResponses"] =
        json!({ "user_name": { "action": "accept", "content": { "name": "Alice" } } });
    if let Some(state) = round["result"].get("requestState") {
        retry["requestState"] = state.clone();
    }
    let created = reply(peer, &task_request("tools/call", retry));
    let id = assert_create_result(&created);
    let done = poll(peer, &id, TERMINAL);
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Alice")
    );
}
