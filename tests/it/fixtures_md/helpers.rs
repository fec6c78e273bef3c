//! The wire helpers and MRTR helpers the checks use.

use serde_json::{Map, Value, json};

use crate::support::{Peer, call, cancel, meta, request};

use super::{SUBSCRIPTION_ID, first_page};

// --- Helpers ------------------------------------------------------------------

/// Sends `req`; its reply must be the very next message and echo its id.
pub(super) fn reply_to(peer: &mut Peer, req: &Value) -> Value {
    let resp = peer.ask(req);
    assert_eq!(
        resp["id"], req["id"],
        "the next message answers {req}: {resp}"
    );
    resp
}

/// The result of a complete reply (not an error, not `input_required`).
pub(super) fn complete(resp: &Value) -> &Value {
    assert_eq!(resp["result"]["resultType"], "complete", "{resp}");
    &resp["result"]
}

/// Calls `tool` and returns its complete result.
pub(super) fn call_tool(peer: &mut Peer, id: i64, tool: &str, arguments: Value) -> Value {
    complete(&reply_to(peer, &call(id, tool, arguments))).clone()
}

/// The text of a result's first content block.
pub(super) fn text(result: &Value) -> &str {
    let text = result["content"][0]["text"].as_str();
    text.unwrap_or_else(|| panic!("no text content: {result}"))
}

pub(super) fn error_code(resp: &Value) -> i64 {
    resp["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {resp}"))
}

pub(super) fn with_progress_token(mut req: Value, token: Value) -> Value {
    req["params"]["_meta"]["progressToken"] = token;
    req
}

/// Sends `req`, then reads its notifications up to its reply.
pub(super) fn notes_then_reply(peer: &mut Peer, req: &Value) -> (Vec<Value>, Value) {
    peer.send(req);
    let mut notes = Vec::new();
    loop {
        let msg = peer.recv();
        if msg.get("method").is_none() && msg["id"] == req["id"] {
            return (notes, msg);
        }
        notes.push(msg);
    }
}

/// Sends `req` and reads its reply and `n` notifications, in any order
/// (a reply and the notifications it causes may come either way).
pub(super) fn reply_and(peer: &mut Peer, req: &Value, n: usize) -> (Value, Vec<Value>) {
    peer.send(req);
    let (replies, notes): (Vec<Value>, Vec<Value>) = (0..=n)
        .map(|_| peer.recv())
        .partition(|m| m.get("method").is_none() && m["id"] == req["id"]);
    assert_eq!(replies.len(), 1, "one reply among {notes:?}");
    (replies.into_iter().next().unwrap(), notes)
}

pub(super) fn progress_of(notes: &[Value], token: &Value) -> Vec<(f64, Option<f64>)> {
    notes
        .iter()
        .map(|note| {
            assert_eq!(note["method"], "notifications/progress", "{note}");
            assert_eq!(&note["params"]["progressToken"], token, "{note}");
            let params = &note["params"];
            (
                params["progress"].as_f64().unwrap(),
                params["total"].as_f64(),
            )
        })
        .collect()
}

pub(super) fn assert_tagged(msg: &Value, method: &str, subscription: &str) {
    assert_eq!(msg["method"], method, "{msg}");
    assert_eq!(
        msg["params"]["_meta"][SUBSCRIPTION_ID], subscription,
        "{msg}"
    );
}

/// Opens a `subscriptions/listen` stream; returns its acknowledgement,
/// which must come first.
pub(super) fn open(peer: &mut Peer, id: &str, filter: Value) -> Value {
    let req = request(
        id,
        "subscriptions/listen",
        json!({ "notifications": filter }),
    );
    let ack = peer.ask(&req);
    assert_tagged(&ack, "notifications/subscriptions/acknowledged", id);
    ack
}

/// A request whose reply must be the next message: nothing else was
/// written in between.
pub(super) fn barrier(peer: &mut Peer, id: &str) {
    reply_to(peer, &request(id, "server/discover", json!({})));
}

/// Closes listen streams (a cancelled listen gets no final result).
pub(super) fn close(peer: &mut Peer, ids: &[&str]) {
    for id in ids {
        peer.send(&cancel(*id));
    }
    barrier(peer, "closed");
}

/// The item of a list's first page whose `field` is `name`.
pub(super) fn listed(peer: &mut Peer, method: &str, key: &str, field: &str, name: &str) -> Value {
    let page = first_page(peer, 900, method, key);
    let item = page.into_iter().find(|item| item[field] == name);
    item.unwrap_or_else(|| panic!("{name} is not on the first page of {method}"))
}

pub(super) fn read(peer: &mut Peer, id: i64, uri: &str) -> Value {
    reply_to(peer, &request(id, "resources/read", json!({ "uri": uri })))
}

/// The first contents of a successful read.
pub(super) fn read_contents(peer: &mut Peer, id: i64, uri: &str) -> Value {
    complete(&read(peer, id, uri))["contents"][0].clone()
}

pub(super) fn get_prompt(peer: &mut Peer, id: i64, name: &str, arguments: Value) -> Value {
    let params = json!({ "name": name, "arguments": arguments });
    complete(&reply_to(peer, &request(id, "prompts/get", params))).clone()
}

pub(super) fn is_base64(s: &str) -> bool {
    !s.is_empty()
        && s.len().is_multiple_of(4)
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
}

pub(super) fn non_empty(value: &Value) -> bool {
    value.as_str().is_some_and(|s| !s.is_empty())
}

/// A content block of `kind` in a result's `content`.
pub(super) fn block<'a>(result: &'a Value, kind: &str) -> &'a Value {
    let blocks = result["content"].as_array().unwrap();
    let found = blocks.iter().find(|b| b["type"] == kind);
    found.unwrap_or_else(|| panic!("no {kind} content in {result}"))
}

// --- MRTR helpers ---------------------------------------------------------

/// The default client capabilities the suite drives MRTR with.
pub(super) fn all_caps() -> Value {
    json!({ "elicitation": {}, "sampling": {}, "roots": {} })
}

/// A request of `method` with `params` and `_meta` declaring `caps`.
pub(super) fn with_caps(id: i64, method: &str, mut params: Value, caps: Value) -> Value {
    let mut meta = meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = caps;
    params["_meta"] = meta;
    request(id, method, params)
}

pub(super) fn tool_params(tool: &str) -> Value {
    json!({ "name": tool, "arguments": {} })
}

/// The retry of `params` after `round`: these answers and the previous
/// round's `requestState`, if it had one, unchanged.
pub(super) fn retry_params(params: &Value, round: &Value, answers: Value) -> Value {
    let mut params = params.clone();
    params["inputResponses"] = answers;
    if let Some(state) = round["result"].get("requestState") {
        params["requestState"] = state.clone();
    }
    params
}

/// The `inputRequests` of an `InputRequiredResult` reply.
pub(super) fn input_requests(resp: &Value) -> &Map<String, Value> {
    assert_eq!(resp["result"]["resultType"], "input_required", "{resp}");
    let requests = resp["result"]["inputRequests"].as_object();
    let requests = requests.unwrap_or_else(|| panic!("no inputRequests: {resp}"));
    assert!(!requests.is_empty(), "{resp}");
    requests
}

pub(super) fn methods(resp: &Value) -> Vec<&str> {
    let requests = input_requests(resp).values();
    requests.map(|r| r["method"].as_str().unwrap()).collect()
}

pub(super) fn request_state(resp: &Value) -> &str {
    let state = resp["result"]["requestState"].as_str();
    state
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| panic!("no requestState: {resp}"))
}

/// The harness's mock answer to one input request; an elicitation is
/// accepted with `Alice` for strings and `true` for booleans.
fn mock_answer(input_request: &Value) -> Value {
    match input_request["method"].as_str().unwrap() {
        "elicitation/create" => {
            let schema = &input_request["params"]["requestedSchema"]["properties"];
            let content: Map<String, Value> = schema
                .as_object()
                .unwrap()
                .iter()
                .map(|(field, s)| {
                    let value = if s["type"] == "boolean" {
                        json!(true)
                    } else {
                        json!("Alice")
                    };
                    (field.clone(), value)
                })
                .collect();
            json!({ "action": "accept", "content": content })
        }
        "sampling/createMessage" => json!({
            "role": "assistant",
            "content": { "type": "text", "text": "Paris" },
            "model": "test-model",
            "stopReason": "endTurn"
        }),
        "roots/list" => json!({ "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] }),
        other => panic!("an input request the harness cannot answer: {other}"),
    }
}

/// Mock answers to everything `resp` asks for.
pub(super) fn mock_answers(resp: &Value) -> Value {
    let requests = input_requests(resp).iter();
    Value::Object(requests.map(|(k, r)| (k.clone(), mock_answer(r))).collect())
}

/// Round 1 of `tool` with every capability declared.
pub(super) fn first_round(peer: &mut Peer, tool: &str) -> Value {
    reply_to(
        peer,
        &with_caps(1, "tools/call", tool_params(tool), all_caps()),
    )
}

/// The retry of `tool` after `round` with `answers`.
pub(super) fn next_round(
    peer: &mut Peer,
    id: i64,
    tool: &str,
    round: &Value,
    answers: Value,
) -> Value {
    let params = retry_params(&tool_params(tool), round, answers);
    reply_to(peer, &with_caps(id, "tools/call", params, all_caps()))
}

/// Round 1 of `tool` asks for exactly the input requests of `methods`;
/// the retry with the mock answers completes.
pub(super) fn mrtr_round_trip(peer: &mut Peer, tool: &str, expected: &[&str]) {
    let round = first_round(peer, tool);
    assert_eq!(methods(&round), expected, "{round}");
    let answers = mock_answers(&round);
    complete(&next_round(peer, 2, tool, &round, answers));
}
