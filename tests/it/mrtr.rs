//! Multi round-trip requests (spec 2026-07-28 basic/patterns/mrtr;
//! FIXTURES.md section 8): the server's `InputRequiredResult`, its sealed
//! `requestState` and how a retry is checked, and the client's automatic
//! retry, all asserted as exact JSON on the wire.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stdio::types::{
    CallToolResult, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestURLParams,
    ElicitRequestedSchema, InputRequest, InputRequests, InputRequiredResult, ReadResourceResult,
    RequestParams, Resource, ResourceContents, StringSchema, Tool,
};
use mcp_stdio::{Outcome, Server, ServerBuilder, ToolOutcome};
use serde_json::{Value, json};

use crate::support::{Peer, error, meta, request, text_result};

// ---------------------------------------------------------------------------
// Requests and expected replies.

/// Everything the server may ask for.
fn all_caps() -> Value {
    json!({ "elicitation": {}, "sampling": {}, "roots": {} })
}

/// The standard `_meta` with these client capabilities.
fn meta_with(caps: Value) -> Value {
    let mut meta = meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = caps;
    meta
}

/// A request of `method` with `params`, the members of `extra` merged in,
/// and `_meta` declaring `caps`.
fn mrtr_request(
    id: impl Into<Value>,
    method: &str,
    params: Value,
    caps: Value,
    extra: Value,
) -> Value {
    let mut params = params;
    let map = params.as_object_mut().unwrap();
    for (key, value) in extra.as_object().unwrap() {
        map.insert(key.clone(), value.clone());
    }
    map.insert("_meta".into(), meta_with(caps));
    request(id, method, params)
}

/// `tools/call` of `tool` with `{}` arguments, every capability declared,
/// and `extra` (`inputResponses`, `requestState`) in the params.
fn mcall(id: impl Into<Value>, tool: &str, extra: Value) -> Value {
    mrtr_request(
        id,
        "tools/call",
        json!({ "name": tool, "arguments": {} }),
        all_caps(),
        extra,
    )
}

/// `tools/call` of `tool` with `{}` arguments, declaring only `caps`.
fn call_declaring(id: impl Into<Value>, tool: &str, caps: Value) -> Value {
    mrtr_request(
        id,
        "tools/call",
        json!({ "name": tool, "arguments": {} }),
        caps,
        json!({}),
    )
}

/// The retry of `tool` with these answers and the echoed state.
fn retry(id: impl Into<Value>, tool: &str, state: &str, responses: Value) -> Value {
    mcall(
        id,
        tool,
        json!({ "inputResponses": responses, "requestState": state }),
    )
}

/// Asserts the shape of a sealed state: `v1.<payload>.<mac>`, base64url.
fn assert_sealed(state: &str) {
    let rest = state
        .strip_prefix("v1.")
        .unwrap_or_else(|| panic!("a sealed state starts with v1.: {state:?}"));
    assert_eq!(state.matches('.').count(), 2, "two dots: {state:?}");
    let (payload, mac) = rest.split_once('.').unwrap();
    assert!(!payload.is_empty() && !mac.is_empty(), "{state:?}");
    let base64url = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    assert!(
        base64url(payload) && base64url(mac),
        "base64url only: {state:?}"
    );
}

/// The `requestState` of an `InputRequiredResult` response, checked for
/// shape.
fn sealed(resp: &Value) -> String {
    let state = resp["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState in {resp}"));
    assert_sealed(state);
    state.to_owned()
}

/// An `InputRequiredResult` response as the server sends it.
fn input_required(peer: &Peer, id: impl Into<Value>, requests: Value, state: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "result": {
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": state,
        "_meta": peer.server_meta
    }})
}

/// A form elicitation of one required string field.
fn ask_text(message: &str, field: &str) -> Value {
    json!({ "method": "elicitation/create", "params": {
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": "string" } },
            "required": [field]
        }
    }})
}

fn ask_name() -> Value {
    ask_text("What is your name?", "name")
}

fn ask_capital() -> Value {
    json!({ "method": "sampling/createMessage", "params": {
        "messages": [{ "role": "user", "content": { "type": "text", "text": "What is the capital of France?" } }],
        "maxTokens": 100
    }})
}

fn ask_roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

/// The harness's accepted elicitation answer.
fn accept(field: &str, value: &str) -> Value {
    json!({ "action": "accept", "content": { field: value } })
}

/// The harness's sampling answer.
fn sampled(text: &str) -> Value {
    json!({
        "role": "assistant",
        "content": { "type": "text", "text": text },
        "model": "test-model",
        "stopReason": "endTurn"
    })
}

/// The harness's roots answer.
fn roots_answer() -> Value {
    json!({ "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] })
}

/// A `-32602` with this message.
fn invalid(id: impl Into<Value>, message: &str) -> Value {
    error(id, -32602, message)
}

const TAMPERED: &str = "invalid params: requestState is invalid or was tampered with";
const TRANSPLANTED: &str = "invalid params: requestState belongs to a different request (method, tool, prompt, resource or arguments differ)";

/// One byte in the middle of the sealed string, flipped.
fn flip_middle(state: &str) -> String {
    let mut bytes = state.as_bytes().to_vec();
    let mut i = bytes.len() / 2;
    while bytes[i] == b'.' {
        i += 1;
    }
    bytes[i] ^= 1;
    let flipped = String::from_utf8(bytes).unwrap();
    assert_ne!(flipped, state);
    flipped
}

// ---------------------------------------------------------------------------
// A custom server: a tool that counts its runs, and the odd input requests
// no fixture makes.

fn form(message: &str, field: &str) -> InputRequest {
    let schema = ElicitRequestedSchema::default().property(field, StringSchema::default(), true);
    InputRequest::Elicit(ElicitRequestParams::Form(ElicitRequestFormParams::new(
        message, schema,
    )))
}

fn one(key: &str, request: InputRequest) -> InputRequests {
    [(key.to_owned(), request)].into()
}

/// `count` (asks for `name`, then greets; counts every run), `url_login`
/// (a URL-mode elicitation), `bare` (an `InputRequiredResult` with nothing
/// in it), a resource `mrtr://roots` that needs the client's roots and a
/// method `x/ask` whose handler wrongly returns `input_required`.
fn custom(configure: impl FnOnce(ServerBuilder) -> ServerBuilder) -> (Server, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let builder = Server::builder("mrtr-test", "1.0.0")
        .tool(
            Tool::new("count", "Asks for a name; counts its runs."),
            move |ctx, args: Value| {
                counter.fetch_add(1, Ordering::SeqCst);
                let name = ctx
                    .elicitation("name")
                    .and_then(|answer| answer.content?.get("name")?.as_str().map(str::to_owned));
                Ok(match name {
                    Some(name) => {
                        ToolOutcome::Complete(CallToolResult::text(format!("{name}: {args}")))
                    }
                    None => ToolOutcome::InputRequired(
                        InputRequiredResult::new(one("name", form("Name?", "name")))
                            .with_request_state("counted"),
                    ),
                })
            },
        )
        .tool(
            Tool::new("url_login", "Sends the user to a URL."),
            |_ctx, _: Value| {
                let url = ElicitRequestURLParams::new("Log in", "https://example.com/login");
                Ok(ToolOutcome::InputRequired(InputRequiredResult::new(one(
                    "login",
                    InputRequest::Elicit(ElicitRequestParams::Url(url)),
                ))))
            },
        )
        .tool(
            Tool::new("bare", "Input required, with nothing asked."),
            |_ctx, _: Value| Ok(ToolOutcome::InputRequired(InputRequiredResult::default())),
        )
        .resource(Resource::new("mrtr://roots", "roots"), |ctx, req| {
            Ok(match ctx.roots("where") {
                Some(roots) => {
                    Outcome::Complete(ReadResourceResult::new(vec![ResourceContents::text(
                        &req.uri,
                        roots.roots[0].uri.clone(),
                    )]))
                }
                None => Outcome::InputRequired(InputRequiredResult::new(one(
                    "where",
                    InputRequest::ListRoots(Some(RequestParams::default())),
                ))),
            })
        })
        .on_request("x/ask", |_ctx, _params| {
            Ok(json!({
                "resultType": "input_required",
                "inputRequests": { "q": { "method": "roots/list", "params": {} } }
            }))
        });
    (configure(builder).build(), runs)
}

// ---------------------------------------------------------------------------
// Server: one round of each kind.

// req: mrtr:basic-elicitation
#[test]
fn elicitation_round_trip() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_elicitation";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "input_required",
            "inputRequests": {
                "user_name": { "method": "elicitation/create", "params": {
                    "mode": "form",
                    "message": "What is your name?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": { "name": { "type": "string" } },
                        "required": ["name"]
                    }
                }}
            },
            "requestState": state,
            "_meta": { "io.modelcontextprotocol/serverInfo": server.info() }
        }})
    );
    let resp = peer.ask(&retry(
        2,
        tool,
        &state,
        json!({ "user_name": accept("name", "Alice") }),
    ));
    assert_eq!(resp, text_result(&peer, 2, "Hello, Alice!"));
    peer.finish_quietly();
}

// req: mrtr:basic-sampling
#[test]
fn sampling_round_trip() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_sampling";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(
            &peer,
            1,
            json!({ "capital_question": ask_capital() }),
            &state
        )
    );
    let resp = peer.ask(&retry(
        2,
        tool,
        &state,
        json!({ "capital_question": sampled("Paris") }),
    ));
    assert_eq!(resp, text_result(&peer, 2, "The model says: Paris"));
    peer.finish_quietly();
}

// req: mrtr:basic-list-roots
#[test]
fn list_roots_round_trip() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_list_roots";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(&peer, 1, json!({ "client_roots": ask_roots() }), &state)
    );
    let resp = peer.ask(&retry(
        2,
        tool,
        &state,
        json!({ "client_roots": roots_answer() }),
    ));
    assert_eq!(resp, text_result(&peer, 2, "Roots: file:///test/root"));
    peer.finish_quietly();
}

// req: mrtr:request-state
#[test]
fn the_handlers_own_state_comes_back_sealed_and_verified() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_request_state";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    // The handler's "confirm-pending" travels only inside the seal.
    assert_ne!(state, "confirm-pending");
    let confirm = json!({ "method": "elicitation/create", "params": {
        "mode": "form",
        "message": "Proceed?",
        "requestedSchema": {
            "type": "object",
            "properties": { "ok": { "type": "boolean" } },
            "required": ["ok"]
        }
    }});
    assert_eq!(
        resp,
        input_required(&peer, 1, json!({ "confirm": confirm }), &state)
    );
    let answer = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    let resp = peer.ask(&retry(2, tool, &state, answer.clone()));
    assert_eq!(resp, text_result(&peer, 2, "state-ok: confirmed"));
    // The answer without the state: the handler has no state and asks again.
    let resp = peer.ask(&mcall(3, tool, json!({ "inputResponses": answer })));
    let again = sealed(&resp);
    assert_eq!(
        resp,
        input_required(&peer, 3, json!({ "confirm": confirm }), &again)
    );
    peer.finish_quietly();
}

// req: mrtr:non-tool-request
#[test]
fn prompts_get_round_trip() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let get = |id: i64, extra: Value| {
        mrtr_request(
            id,
            "prompts/get",
            json!({ "name": "test_input_required_result_prompt" }),
            all_caps(),
            extra,
        )
    };
    let resp = peer.ask(&get(1, json!({})));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(
            &peer,
            1,
            json!({ "user_context": ask_text("What context should the prompt use?", "context") }),
            &state
        )
    );
    let resp = peer.ask(&get(
        2,
        json!({
            "inputResponses": { "user_context": accept("context", "a test run") },
            "requestState": state
        }),
    ));
    assert_eq!(
        resp,
        peer.result(
            2,
            json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Context: a test run" } }] })
        )
    );
    peer.finish_quietly();
}

// req: mrtr:resources-read
#[test]
fn resources_read_round_trip() {
    let (server, _) = custom(|b| b);
    let mut peer = Peer::start(&server);
    let read = |id: i64, extra: Value| {
        mrtr_request(
            id,
            "resources/read",
            json!({ "uri": "mrtr://roots" }),
            all_caps(),
            extra,
        )
    };
    let resp = peer.ask(&read(1, json!({})));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(&peer, 1, json!({ "where": ask_roots() }), &state)
    );
    let resp = peer.ask(&read(
        2,
        json!({ "inputResponses": { "where": roots_answer() }, "requestState": state }),
    ));
    assert_eq!(
        resp,
        peer.result(
            2,
            json!({
                "contents": [{ "uri": "mrtr://roots", "text": "file:///test/root" }],
                "ttlMs": 0,
                "cacheScope": "private"
            })
        )
    );
    peer.finish_quietly();
}

// ---------------------------------------------------------------------------
// Server: several inputs, several rounds.

// req: mrtr:multiple-input-requests
#[test]
fn three_input_requests_in_one_result() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_multiple_inputs";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(
            &peer,
            1,
            json!({
                "user_name": ask_name(),
                "capital_question": ask_capital(),
                "client_roots": ask_roots()
            }),
            &state
        )
    );
    let resp = peer.ask(&retry(
        2,
        tool,
        &state,
        json!({
            "user_name": accept("name", "Alice"),
            "capital_question": sampled("Paris"),
            "client_roots": roots_answer()
        }),
    ));
    assert_eq!(
        resp,
        text_result(&peer, 2, "name Alice, model Paris, 1 roots")
    );
    peer.finish_quietly();
}

// req: mrtr:multi-round
#[test]
fn three_rounds_with_a_new_state_each_round() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_multi_round";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let s1 = sealed(&resp);
    assert_eq!(
        resp,
        input_required(&peer, 1, json!({ "step1": ask_name() }), &s1)
    );
    let resp = peer.ask(&retry(
        2,
        tool,
        &s1,
        json!({ "step1": accept("name", "Alice") }),
    ));
    let s2 = sealed(&resp);
    assert_ne!(s1, s2);
    assert_eq!(
        resp,
        input_required(
            &peer,
            2,
            json!({ "step2": ask_text("Favourite colour?", "colour") }),
            &s2
        )
    );
    let resp = peer.ask(&retry(
        3,
        tool,
        &s2,
        json!({ "step2": accept("colour", "blue") }),
    ));
    assert_eq!(resp, text_result(&peer, 3, "Alice likes blue"));
    // The official conformance client answers under its own key: any
    // accepted answer completes round 3, its content echoed.
    let resp = peer.ask(&retry(
        4,
        tool,
        &s2,
        json!({ "step2": accept("color", "blue") }),
    ));
    assert_eq!(
        resp,
        text_result(&peer, 4, r#"Alice likes {"color":"blue"}"#)
    );
    peer.finish_quietly();
}

// ---------------------------------------------------------------------------
// Server: the state is attacker-controlled input.

// req: mrtr:tampered-state
#[test]
fn a_tampered_state_is_refused_before_the_handler_runs() {
    let (server, runs) = custom(|b| b);
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&mcall(1, "count", json!({})));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(
            &peer,
            1,
            json!({ "name": ask_text("Name?", "name") }),
            &state
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let answer = json!({ "name": accept("name", "Alice") });
    let resp = peer.ask(&retry(2, "count", &flip_middle(&state), answer.clone()));
    assert_eq!(resp, invalid(2, TAMPERED));
    // Garbage and a truncated state alike.
    for (id, bad) in [
        (3, "not-a-state".to_owned()),
        (4, state[..state.len() - 1].to_owned()),
        (5, format!("{state}-TAMPERED")),
        (6, String::new()),
    ] {
        let resp = peer.ask(&retry(id, "count", &bad, answer.clone()));
        assert_eq!(resp, invalid(id, TAMPERED), "{bad:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler never ran");
    // The untouched state still works.
    let resp = peer.ask(&retry(7, "count", &state, answer));
    assert_eq!(resp, text_result(&peer, 7, "Alice: {}"));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    peer.finish_quietly();
}

// req: mrtr:tampered-state
#[test]
fn the_tampered_state_fixture_refuses_a_suffixed_state() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_tampered_state";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    let answer = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    let resp = peer.ask(&retry(
        2,
        tool,
        &format!("{state}-TAMPERED"),
        answer.clone(),
    ));
    assert_eq!(resp, invalid(2, TAMPERED));
    let resp = peer.ask(&retry(3, tool, &state, answer));
    assert_eq!(resp, text_result(&peer, 3, "state verified"));
    peer.finish_quietly();
}

#[test]
fn an_expired_state_is_refused_before_the_handler_runs() {
    let (server, runs) = custom(|b| b.request_state_ttl(Duration::ZERO));
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&mcall(1, "count", json!({})));
    let state = sealed(&resp);
    let resp = peer.ask(&retry(
        2,
        "count",
        &state,
        json!({ "name": accept("name", "Alice") }),
    ));
    assert_eq!(code_of(&resp), -32602, "{resp}");
    let message = resp["error"]["message"].as_str().unwrap();
    assert!(message.contains("expired"), "{message}");
    assert_eq!(
        resp,
        invalid(
            2,
            "invalid params: requestState has expired: start the request again"
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler never ran");
    peer.finish_quietly();
}

fn code_of(resp: &Value) -> i64 {
    crate::support::code(resp)
}

#[test]
fn a_state_replayed_on_another_tool_is_refused() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&mcall(
        1,
        "test_input_required_result_elicitation",
        json!({}),
    ));
    let state = sealed(&resp);
    let resp = peer.ask(&retry(
        2,
        "test_input_required_result_sampling",
        &state,
        json!({ "capital_question": sampled("Paris") }),
    ));
    assert_eq!(resp, invalid(2, TRANSPLANTED));
    peer.finish_quietly();
}

#[test]
fn a_state_replayed_with_other_arguments_is_refused_and_key_order_does_not_matter() {
    let (server, runs) = custom(|b| b);
    let mut peer = Peer::start(&server);
    let call = |id: i64, arguments: Value, extra: Value| {
        mrtr_request(
            id,
            "tools/call",
            json!({ "name": "count", "arguments": arguments }),
            all_caps(),
            extra,
        )
    };
    let resp = peer.ask(&call(
        1,
        json!({ "a": 1, "b": [2, { "x": 3, "y": 4 }] }),
        json!({}),
    ));
    let state = sealed(&resp);
    let answer = json!({ "name": accept("name", "Alice") });
    let retry_extra = json!({ "inputResponses": answer, "requestState": state });
    // Another value, one argument less, one more, none at all.
    for (id, arguments) in [
        (2, json!({ "a": 2, "b": [2, { "x": 3, "y": 4 }] })),
        (3, json!({ "a": 1 })),
        (
            4,
            json!({ "a": 1, "b": [2, { "x": 3, "y": 4 }], "c": null }),
        ),
        (5, json!({})),
    ] {
        let resp = peer.ask(&call(id, arguments.clone(), retry_extra.clone()));
        assert_eq!(resp, invalid(id, TRANSPLANTED), "{arguments}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler never ran");
    // The same arguments, written in another key order and spacing (sent
    // raw: serde_json would sort the keys of a `json!` object).
    let meta = serde_json::to_string(&meta_with(all_caps())).unwrap();
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"requestState":{state},"arguments":{{ "b" : [2, {{"y":4,"x":3}}], "a":1 }},"name":"count","inputResponses":{answer},"_meta":{meta}}}}}"#,
        state = Value::String(state.clone()),
    );
    peer.send_raw(line.as_bytes());
    let resp = peer.recv();
    assert_eq!(
        resp,
        text_result(&peer, 6, r#"Alice: {"a":1,"b":[2,{"x":3,"y":4}]}"#)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    peer.finish_quietly();
}

#[test]
fn a_state_from_tools_call_is_refused_on_prompts_get() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&mcall(
        1,
        "test_input_required_result_elicitation",
        json!({}),
    ));
    let state = sealed(&resp);
    let resp = peer.ask(&mrtr_request(
        2,
        "prompts/get",
        json!({ "name": "test_input_required_result_prompt" }),
        all_caps(),
        json!({
            "inputResponses": { "user_context": accept("context", "x") },
            "requestState": state
        }),
    ));
    assert_eq!(resp, invalid(2, TRANSPLANTED));
    // And a prompts/get state on tools/call.
    let resp = peer.ask(&mrtr_request(
        3,
        "prompts/get",
        json!({ "name": "test_input_required_result_prompt" }),
        all_caps(),
        json!({}),
    ));
    let prompt_state = sealed(&resp);
    let resp = peer.ask(&retry(
        4,
        "test_input_required_result_elicitation",
        &prompt_state,
        json!({ "user_name": accept("name", "Alice") }),
    ));
    assert_eq!(resp, invalid(4, TRANSPLANTED));
    peer.finish_quietly();
}

// ---------------------------------------------------------------------------
// Server: never ask for what the client did not declare.

#[test]
fn an_undeclared_capability_is_minus_32021_naming_it() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&call_declaring(
        1,
        "test_input_required_result_elicitation",
        json!({}),
    ));
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 1, "error": {
            "code": -32021,
            "message": "missing required client capability: elicitation",
            "data": { "requiredCapabilities": { "elicitation": {} } }
        }})
    );
    peer.finish_quietly();
}

#[test]
fn url_mode_elicitation_needs_elicitation_url() {
    let (server, _) = custom(|b| b);
    let mut peer = Peer::start(&server);
    let url_call = |id: i64, caps: Value| call_declaring(id, "url_login", caps);
    let resp = peer.ask(&url_call(1, json!({ "elicitation": {} })));
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 1, "error": {
            "code": -32021,
            "message": "missing required client capability: elicitation",
            "data": { "requiredCapabilities": { "elicitation": { "url": {} } } }
        }})
    );
    let resp = peer.ask(&url_call(2, json!({ "elicitation": { "form": {} } })));
    assert_eq!(
        resp["error"]["data"],
        json!({ "requiredCapabilities": { "elicitation": { "url": {} } } })
    );
    // Declared: asked.
    let resp = peer.ask(&url_call(3, json!({ "elicitation": { "url": {} } })));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(
            &peer,
            3,
            json!({ "login": { "method": "elicitation/create", "params": {
                "mode": "url", "message": "Log in", "url": "https://example.com/login"
            }}}),
            &state
        )
    );
    peer.finish_quietly();
}

/// Spec 2026-07-28 client/elicitation: `{}` means form only, so a client
/// that declares `{"url": {}}` alone does not support form mode, and
/// basic/patterns/mrtr: a server MUST NOT send input requests the client
/// has not declared support for.
#[test]
fn form_mode_elicitation_is_not_sent_to_a_url_only_client() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&call_declaring(
        1,
        "test_input_required_result_elicitation",
        json!({ "elicitation": { "url": {} } }),
    ));
    assert_eq!(code_of(&resp), -32021, "{resp}");
    assert_eq!(
        resp["error"]["data"],
        json!({ "requiredCapabilities": { "elicitation": { "form": {} } } })
    );
    peer.finish_quietly();
}

#[test]
fn every_missing_capability_is_listed() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let multiple = |id: i64, caps: Value| {
        call_declaring(id, "test_input_required_result_multiple_inputs", caps)
    };
    let resp = peer.ask(&multiple(1, json!({ "elicitation": {} })));
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 1, "error": {
            "code": -32021,
            "message": "missing required client capability: roots, sampling",
            "data": { "requiredCapabilities": { "roots": {}, "sampling": {} } }
        }})
    );
    let resp = peer.ask(&multiple(2, json!({})));
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 2, "error": {
            "code": -32021,
            "message": "missing required client capability: elicitation, roots, sampling",
            "data": { "requiredCapabilities": { "elicitation": {}, "roots": {}, "sampling": {} } }
        }})
    );
    peer.finish_quietly();
}

// req: mrtr:capability-check
#[test]
fn the_capabilities_fixture_asks_only_for_what_is_declared() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_capabilities";
    let caps_call = |id: i64, caps: Value| call_declaring(id, tool, caps);
    let resp = peer.ask(&caps_call(1, json!({ "sampling": {} })));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(
            &peer,
            1,
            json!({ "capital_question": ask_capital() }),
            &state
        )
    );
    let resp = peer.ask(&caps_call(2, json!({ "elicitation": {} })));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        input_required(&peer, 2, json!({ "user_name": ask_name() }), &state)
    );
    let resp = peer.ask(&caps_call(3, json!({})));
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 3, "error": {
            "code": -32021,
            "message": "missing required client capability: sampling",
            "data": { "requiredCapabilities": { "sampling": {} } }
        }})
    );
    peer.finish_quietly();
}

// ---------------------------------------------------------------------------
// Server: only tools/call, prompts/get and resources/read may ask.

// req: mrtr:unsupported-methods
#[test]
fn a_custom_method_that_returns_input_required_is_an_internal_error() {
    let notes = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&notes);
    let (server, _) = custom(move |b| b.trace(move |line| log.lock().unwrap().push(line.into())));
    let mut peer = Peer::start(&server);
    let resp = peer.ask(&mrtr_request(1, "x/ask", json!({}), all_caps(), json!({})));
    assert_eq!(
        resp,
        error(1, -32603, "internal error: x/ask cannot ask for input")
    );
    assert_eq!(
        *notes.lock().unwrap(),
        [
            "the handler of x/ask returned input_required, which only tools/call, prompts/get and resources/read may"
        ]
    );
    // The lists never ask either.
    let resp = peer.ask(&mrtr_request(
        2,
        "tools/list",
        json!({}),
        all_caps(),
        json!({}),
    ));
    assert_eq!(resp["result"]["resultType"], "complete", "{resp}");
    peer.finish_quietly();
}

// ---------------------------------------------------------------------------
// Server: checking inputResponses.

// req: mrtr:validate-input
#[test]
fn an_answer_of_the_wrong_shape_is_invalid_params() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_elicitation";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    let resp = peer.ask(&retry(2, tool, &state, json!({ "user_name": 12345 })));
    assert_eq!(
        resp,
        invalid(
            2,
            r#"invalid params: inputResponses["user_name"] does not answer the input request it names"#
        )
    );
    // A sampling answer to an elicitation.
    let resp = peer.ask(&retry(
        3,
        tool,
        &state,
        json!({ "user_name": sampled("Paris") }),
    ));
    assert_eq!(code_of(&resp), -32602, "{resp}");
    // Without the state nothing says what the key was for: the handler
    // cannot read the answer and asks again; it never completes.
    let resp = peer.ask(&mcall(
        4,
        tool,
        json!({ "inputResponses": { "user_name": 12345 } }),
    ));
    let again = sealed(&resp);
    assert_eq!(
        resp,
        input_required(&peer, 4, json!({ "user_name": ask_name() }), &again)
    );
    peer.finish_quietly();
}

// req: mrtr:validate-input
#[test]
fn input_responses_must_be_an_object() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_elicitation";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    let resp = peer.ask(&retry(2, tool, &state, Value::Null));
    assert_eq!(
        resp,
        invalid(
            2,
            "invalid params: inputResponses must be an object, got null"
        )
    );
    let resp = peer.ask(&mcall(3, tool, json!({ "inputResponses": null })));
    assert_eq!(
        resp,
        invalid(
            3,
            "invalid params: inputResponses must be an object, got null"
        )
    );
    let resp = peer.ask(&retry(4, tool, &state, json!([1, 2])));
    assert_eq!(
        resp,
        invalid(
            4,
            "invalid params: inputResponses must be an object, got [1,2]"
        )
    );
    let resp = peer.ask(&retry(5, tool, &state, json!("text")));
    assert_eq!(code_of(&resp), -32602, "{resp}");
    // A requestState that is not a string.
    let resp = peer.ask(&mcall(6, tool, json!({ "requestState": 7 })));
    assert_eq!(
        resp,
        invalid(6, "invalid params: requestState must be a string")
    );
    peer.finish_quietly();
}

// req: mrtr:ignore-extra-params
#[test]
fn unknown_answer_keys_are_ignored() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_elicitation";
    let extras = json!({
        "user_name": accept("name", "Alice"),
        "unknown_extra_key": { "anything": [1, 2, 3] },
        "another_unexpected": 42
    });
    // On a first call, as the conformance suite sends it.
    let resp = peer.ask(&mcall(1, tool, json!({ "inputResponses": extras })));
    assert_eq!(resp, text_result(&peer, 1, "Hello, Alice!"));
    // And on a retry with the state.
    let resp = peer.ask(&mcall(2, tool, json!({})));
    let state = sealed(&resp);
    let resp = peer.ask(&retry(3, tool, &state, extras));
    assert_eq!(resp, text_result(&peer, 3, "Hello, Alice!"));
    peer.finish_quietly();
}

// req: mrtr:missing-input-response
#[test]
fn a_missing_answer_is_asked_for_again() {
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    let tool = "test_input_required_result_elicitation";
    let resp = peer.ask(&mcall(1, tool, json!({})));
    let state = sealed(&resp);
    let resp = peer.ask(&retry(
        2,
        tool,
        &state,
        json!({ "wrong_key": accept("name", "Alice") }),
    ));
    let again = sealed(&resp);
    assert_eq!(
        resp,
        input_required(&peer, 2, json!({ "user_name": ask_name() }), &again)
    );
    // An empty set of answers: the same.
    let resp = peer.ask(&retry(3, tool, &state, json!({})));
    let again = sealed(&resp);
    assert_eq!(
        resp,
        input_required(&peer, 3, json!({ "user_name": ask_name() }), &again)
    );
    peer.finish_quietly();
}

// ---------------------------------------------------------------------------
// Server: the sealing key.

#[test]
fn servers_with_one_key_accept_each_others_states() {
    let tool = "test_input_required_result_elicitation";
    let answer = json!({ "user_name": accept("name", "Alice") });
    let first = crate::everything::build_with(|b| b.request_state_key([9; 32]));
    let second = crate::everything::build_with(|b| b.request_state_key([9; 32]));
    let other = crate::everything::build_with(|b| b.request_state_key([10; 32]));
    let random = crate::everything::build();
    let mut one = Peer::start(&first);
    let mut two = Peer::start(&second);
    let mut three = Peer::start(&other);
    let mut four = Peer::start(&random);
    let state = sealed(&one.ask(&mcall(1, tool, json!({}))));
    let resp = two.ask(&retry(2, tool, &state, answer.clone()));
    assert_eq!(resp, text_result(&two, 2, "Hello, Alice!"));
    // And back.
    let state_two = sealed(&two.ask(&mcall(3, tool, json!({}))));
    let resp = one.ask(&retry(4, tool, &state_two, answer.clone()));
    assert_eq!(resp, text_result(&one, 4, "Hello, Alice!"));
    // Another key, or the default random one: refused.
    let resp = three.ask(&retry(5, tool, &state, answer.clone()));
    assert_eq!(resp, invalid(5, TAMPERED));
    let resp = four.ask(&retry(6, tool, &state, answer.clone()));
    assert_eq!(resp, invalid(6, TAMPERED));
    let state_four = sealed(&four.ask(&mcall(7, tool, json!({}))));
    let resp = one.ask(&retry(8, tool, &state_four, answer));
    assert_eq!(resp, invalid(8, TAMPERED));
    for peer in [one, two, three, four] {
        peer.finish_quietly();
    }
}

// ---------------------------------------------------------------------------
// Server: at least one of inputRequests and requestState.

#[test]
fn every_input_required_result_carries_a_request_state() {
    let (server, _) = custom(|b| b);
    let mut peer = Peer::start(&server);
    // The handler gave no requests and no state.
    let resp = peer.ask(&mcall(1, "bare", json!({})));
    let state = sealed(&resp);
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "input_required",
            "requestState": state,
            "_meta": peer.server_meta
        }})
    );
    // No inputRequests: the client may retry at once, with just the
    // state; it verifies, and this handler asks again, sealed afresh.
    let resp = peer.ask(&mcall(2, "bare", json!({ "requestState": state })));
    let again = sealed(&resp);
    assert_eq!(
        resp,
        json!({ "jsonrpc": "2.0", "id": 2, "result": {
            "resultType": "input_required",
            "requestState": again,
            "_meta": peer.server_meta
        }})
    );
    // The fixtures that give none get one too.
    let server = crate::everything::build();
    let mut peer = Peer::start(&server);
    for (id, tool) in [
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_capabilities",
    ]
    .into_iter()
    .enumerate()
    {
        let resp = peer.ask(&mcall(id, tool, json!({})));
        assert_eq!(resp["result"]["resultType"], "input_required", "{resp}");
        sealed(&resp);
    }
    peer.finish_quietly();
}

#[cfg(feature = "client")]
mod client_side {
    use super::*;
    use std::io::{BufRead, Write};
    use std::sync::Condvar;
    use std::thread;

    use mcp_stdio::types::{ClientCapabilities, ElicitResult, ListRootsResult, Root};
    use mcp_stdio::{Client, Error, Transport};

    use crate::support::WAIT;

    // ---------------------------------------------------------------------------
    // Client: the automatic retry, against a scripted server.

    /// The test's end: reads the client's lines, writes replies.
    struct Script {
        reader: Box<dyn BufRead + Send>,
        writer: Box<dyn Write + Send>,
    }

    impl Script {
        /// The next message, or `None` at end of input.
        fn try_recv(&mut self) -> Option<Value> {
            let mut line = String::new();
            if self.reader.read_line(&mut line).unwrap() == 0 {
                return None;
            }
            Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        }

        fn recv(&mut self) -> Value {
            self.try_recv().expect("the client closed its output")
        }

        fn send(&mut self, msg: Value) {
            writeln!(self.writer, "{msg}").unwrap();
            self.writer.flush().unwrap();
        }

        /// Answers the `server/discover` probe; returns it.
        fn discover(&mut self) -> Value {
            let probe = self.recv();
            assert_eq!(probe["method"], "server/discover", "{probe}");
            self.send(json!({ "jsonrpc": "2.0", "id": probe["id"], "result": {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": { "tools": {} },
                "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "scripted", "version": "9" } }
            }}));
            probe
        }
    }

    fn pair() -> (Transport, Script) {
        let (ours, theirs) = Transport::memory();
        let (reader, writer) = theirs.into_parts();
        (ours, Script { reader, writer })
    }

    /// The `_meta` this file's scripted clients send.
    fn client_meta(caps: Value) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "mrtr-test", "version": "1" },
            "io.modelcontextprotocol/clientCapabilities": caps
        })
    }

    fn name_answer() -> ElicitResult {
        let mut content = serde_json::Map::new();
        content.insert("name".into(), json!("Ada"));
        ElicitResult::accept(content)
    }

    fn test_roots() -> ListRootsResult {
        ListRootsResult {
            roots: vec![Root {
                uri: "file:///test/root".into(),
                name: Some("Test Root".into()),
                meta: None,
            }],
        }
    }

    // req: mrtr:client-retries
    #[test]
    fn the_client_retries_with_a_new_id_the_same_params_and_the_exact_state() {
        let odd_state = "v1.\"quoted\" \u{e9}/+= \\ \u{1F600}\n..x";
        let caps = json!({ "elicitation": { "form": {}, "url": {} }, "roots": {} });
        let (transport, mut server) = pair();
        let peer = {
            let caps = caps.clone();
            thread::spawn(move || {
                server.discover();
                let first = server.recv();
                assert_eq!(
                    first,
                    json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                        "name": "deploy",
                        "arguments": { "env": "prod", "n": 3 },
                        "_meta": client_meta(caps.clone())
                    }})
                );
                server.send(json!({ "jsonrpc": "2.0", "id": 2, "result": {
                    "resultType": "input_required",
                    "inputRequests": {
                        "who": ask_name(),
                        "where": { "method": "roots/list" }
                    },
                    "requestState": odd_state
                }}));
                let second = server.recv();
                assert_eq!(
                    second,
                    json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                        "name": "deploy",
                        "arguments": { "env": "prod", "n": 3 },
                        "inputResponses": {
                            "who": { "action": "accept", "content": { "name": "Ada" } },
                            "where": { "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] }
                        },
                        "requestState": odd_state,
                        "_meta": client_meta(caps.clone())
                    }})
                );
                assert_eq!(second["params"]["requestState"].as_str(), Some(odd_state));
                // Round two asks again, without a state: the retry carries
                // none, and only this round's answers.
                server.send(json!({ "jsonrpc": "2.0", "id": 3, "result": {
                    "resultType": "input_required",
                    "inputRequests": { "again": { "method": "roots/list", "params": {} } }
                }}));
                let third = server.recv();
                assert_eq!(
                    third,
                    json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
                        "name": "deploy",
                        "arguments": { "env": "prod", "n": 3 },
                        "inputResponses": {
                            "again": { "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] }
                        },
                        "_meta": client_meta(caps)
                    }})
                );
                server.send(json!({ "jsonrpc": "2.0", "id": 4, "result": {
                    "resultType": "complete",
                    "content": [{ "type": "text", "text": "deployed" }]
                }}));
                assert_eq!(server.try_recv(), None, "nothing after the final result");
            })
        };
        let asked = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&asked);
        let client = Client::builder()
            .client_info("mrtr-test", "1")
            .on_elicitation(move |params| {
                count.fetch_add(1, Ordering::SeqCst);
                match params {
                    ElicitRequestParams::Form(form) => {
                        assert_eq!(form.message, "What is your name?")
                    }
                    other => panic!("{other:?}"),
                }
                Ok(name_answer())
            })
            .on_roots(|| Ok(test_roots()))
            .connect(transport)
            .unwrap();
        match client
            .call_tool("deploy", json!({ "env": "prod", "n": 3 }))
            .unwrap()
        {
            Outcome::Complete(result) => assert_eq!(result.content[0].as_text(), Some("deployed")),
            other => panic!("{other:?}"),
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        client.close().unwrap();
        peer.join().unwrap();
    }

    #[test]
    fn the_client_gives_up_after_max_input_rounds() {
        let (transport, mut server) = pair();
        let peer = thread::spawn(move || {
            server.discover();
            let mut ids = Vec::new();
            while let Some(msg) = server.try_recv() {
                assert_eq!(msg["method"], "tools/call", "{msg}");
                ids.push(msg["id"].clone());
                server.send(json!({ "jsonrpc": "2.0", "id": msg["id"], "result": {
                    "resultType": "input_required",
                    "inputRequests": { "who": ask_name() },
                    "requestState": format!("round {}", ids.len())
                }}));
            }
            ids
        });
        let client = Client::builder()
            .on_elicitation(|_| Ok(name_answer()))
            .max_input_rounds(3)
            .connect(transport)
            .unwrap();
        let err = client.call_tool("forever", json!({})).unwrap_err();
        assert!(
            matches!(&err, Error::Protocol(what) if what.contains("3 rounds")),
            "{err}"
        );
        client.close().unwrap();
        assert_eq!(peer.join().unwrap(), [json!(2), json!(3), json!(4)]);
    }

    #[test]
    fn without_a_handler_the_input_requests_come_back_to_the_caller() {
        let (transport, mut server) = pair();
        let peer = thread::spawn(move || {
            server.discover();
            let first = server.recv();
            assert_eq!(first["params"]["name"], "mixed");
            assert_eq!(
                first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
                json!({ "elicitation": { "form": {}, "url": {} }, "sampling": {} })
            );
            server.send(json!({ "jsonrpc": "2.0", "id": first["id"], "result": {
                "resultType": "input_required",
                "inputRequests": { "a_name": ask_name(), "b_capital": ask_capital() },
                "requestState": "keep-me"
            }}));
            // No retry: the next request is the caller's next call.
            let next = server.recv();
            assert_eq!(next["params"]["name"], "next", "{next}");
            assert!(next["params"].get("inputResponses").is_none(), "{next}");
            assert!(next["params"].get("requestState").is_none(), "{next}");
            server.send(json!({ "jsonrpc": "2.0", "id": next["id"], "result": { "content": [] } }));
            assert_eq!(server.try_recv(), None);
        });
        let client = Client::builder()
            // Declared by hand, with no handler.
            .capabilities(ClientCapabilities {
                sampling: Some(Default::default()),
                ..Default::default()
            })
            .on_elicitation(|_| Ok(name_answer()))
            .connect(transport)
            .unwrap();
        match client.call_tool("mixed", json!({})).unwrap() {
            Outcome::InputRequired(result) => {
                assert_eq!(
                    serde_json::to_value(&result).unwrap(),
                    json!({
                        "resultType": "input_required",
                        "inputRequests": { "a_name": ask_name(), "b_capital": ask_capital() },
                        "requestState": "keep-me"
                    })
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            client.call_tool("next", json!({})).unwrap(),
            Outcome::Complete(_)
        ));
        client.close().unwrap();
        peer.join().unwrap();
    }

    #[test]
    fn the_declared_capabilities_follow_from_the_handlers() {
        let caps = json!({ "elicitation": { "form": {}, "url": {} }, "roots": {} });
        let (transport, mut server) = pair();
        let peer = {
            let caps = caps.clone();
            thread::spawn(move || {
                let probe = server.discover();
                assert_eq!(
                    probe,
                    json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {
                        "_meta": client_meta(caps.clone())
                    }})
                );
                let call = server.recv();
                assert_eq!(call["params"]["_meta"], client_meta(caps));
                server.send(
                    json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }),
                );
            })
        };
        let client = Client::builder()
            .client_info("mrtr-test", "1")
            .on_elicitation(|_| Ok(ElicitResult::decline()))
            .on_roots(|| Ok(test_roots()))
            .connect(transport)
            .unwrap();
        client.call_tool("x", json!({})).unwrap();
        client.close().unwrap();
        peer.join().unwrap();
    }

    // ---------------------------------------------------------------------------
    // Client: against the everything server.

    #[test]
    fn the_client_completes_a_prompt_and_three_inputs_at_once() {
        let (ours, theirs) = Transport::memory();
        let server = crate::everything::build();
        let serving = thread::spawn(move || server.serve(theirs));
        let client = Client::builder()
            .on_elicitation(|params| {
                let ElicitRequestParams::Form(form) = params else {
                    panic!("{params:?}")
                };
                let field = form
                    .requested_schema
                    .properties
                    .keys()
                    .next()
                    .unwrap()
                    .clone();
                let mut content = serde_json::Map::new();
                content.insert(field, json!("Ada"));
                Ok(ElicitResult::accept(content))
            })
            .on_sampling(|params| {
                assert_eq!(params.max_tokens, 100);
                Ok(serde_json::from_value(sampled("Paris")).unwrap())
            })
            .on_roots(|| Ok(test_roots()))
            .connect(ours)
            .unwrap();
        match client
            .get_prompt("test_input_required_result_prompt", Default::default())
            .unwrap()
        {
            Outcome::Complete(result) => assert_eq!(
                serde_json::to_value(&result.messages).unwrap(),
                json!([{ "role": "user", "content": { "type": "text", "text": "Context: Ada" } }])
            ),
            other => panic!("{other:?}"),
        }
        match client
            .call_tool("test_input_required_result_multiple_inputs", json!({}))
            .unwrap()
        {
            Outcome::Complete(result) => assert_eq!(
                result.content[0].as_text(),
                Some("name Ada, model Paris, 1 roots")
            ),
            other => panic!("{other:?}"),
        }
        match client
            .call_tool("test_input_required_result_request_state", json!({}))
            .unwrap()
        {
            Outcome::Complete(result) => {
                assert_eq!(result.content[0].as_text(), Some("state-ok: confirmed"))
            }
            other => panic!("{other:?}"),
        }
        client.close().unwrap();
        serving.join().unwrap().unwrap();
    }

    /// Spec basic/patterns/mrtr: `inputRequests` and `requestState` affect
    /// only the retry of their own request. Both calls below seal the same
    /// method, tool and arguments, so a state handed to the wrong call would
    /// verify and show up as the other thread's name.
    #[test]
    fn concurrent_multi_round_calls_keep_their_own_state() {
        let (ours, theirs) = Transport::memory();
        let server = crate::everything::build();
        let serving = thread::spawn(move || server.serve(theirs));
        // Both calls wait here after their first round, so that both are
        // between rounds at once (bounded: a lone caller goes on after WAIT).
        let meeting = Arc::new((Mutex::new(0u32), Condvar::new()));
        let met = Arc::clone(&meeting);
        let client = Client::builder()
            .on_elicitation(move |params| {
                let ElicitRequestParams::Form(form) = params else {
                    panic!("{params:?}")
                };
                let me = thread::current().name().unwrap_or_default().to_owned();
                let (name, colour) = match me.as_str() {
                    "ada" => ("Ada", "green"),
                    "bob" => ("Bob", "red"),
                    other => panic!("called on thread {other:?}"),
                };
                let mut content = serde_json::Map::new();
                if form.message == "What is your name?" {
                    let (count, wake) = &*met;
                    let mut count = count.lock().unwrap();
                    *count += 1;
                    wake.notify_all();
                    let _ = wake.wait_timeout_while(count, WAIT, |n| *n < 2).unwrap();
                    content.insert("name".into(), json!(name));
                } else {
                    content.insert("colour".into(), json!(colour));
                }
                Ok(ElicitResult::accept(content))
            })
            .connect(ours)
            .unwrap();
        let texts: Vec<String> = thread::scope(|scope| {
            let calls: Vec<_> = ["ada", "bob"]
                .into_iter()
                .map(|who| {
                    let client = &client;
                    thread::Builder::new()
                        .name(who.into())
                        .spawn_scoped(scope, move || {
                            match client
                                .call_tool("test_input_required_result_multi_round", json!({}))
                                .unwrap()
                            {
                                Outcome::Complete(result) => {
                                    result.content[0].as_text().unwrap().to_owned()
                                }
                                other => panic!("{other:?}"),
                            }
                        })
                        .unwrap()
                })
                .collect();
            calls.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert_eq!(texts, ["Ada likes green", "Bob likes red"]);
        assert_eq!(*meeting.0.lock().unwrap(), 2);
        client.close().unwrap();
        serving.join().unwrap().unwrap();
    }
}

/// Claim: a state sealed for one integer argument is accepted for
/// another. The digest of a call's arguments (`mrtr.rs: canonical`)
/// reads them into a `serde_json::Value`, which holds an integer beyond
/// 64 bits as the nearest `f64`: 2^64 and 2^64 + 1 digest alike. A typed
/// tool reads its arguments from their text, exactly (here a `u128`), so
/// a client confirms one amount and has another paid. On main: the retry
/// with `18446744073709551617` is served (`paid 18446744073709551617`).
#[cfg(feature = "schemars")]
#[test]
fn a_state_sealed_for_one_big_integer_is_refused_for_another() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Pay {
        amount: u128,
    }
    let server = Server::builder("mrtr-test", "1.0.0")
        .tool(
            Tool::new("pay", "Pays after a confirmation."),
            |ctx, args: Pay| {
                Ok(match ctx.elicitation("ok") {
                    Some(_) => {
                        ToolOutcome::Complete(CallToolResult::text(format!("paid {}", args.amount)))
                    }
                    None => ToolOutcome::InputRequired(InputRequiredResult::new(one(
                        "ok",
                        form(&format!("Pay {}?", args.amount), "yes"),
                    ))),
                })
            },
        )
        .build();
    let mut peer = Peer::start(&server);
    let meta = serde_json::to_string(&meta_with(all_caps())).unwrap();
    let line = |id: i64, amount: &str, extra: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"pay","arguments":{{"amount":{amount}}}{extra},"_meta":{meta}}}}}"#
        )
    };
    peer.send_raw(line(1, "18446744073709551616", "").as_bytes());
    let state = sealed(&peer.recv());
    let extra = format!(
        r#","requestState":{},"inputResponses":{}"#,
        Value::String(state),
        json!({ "ok": accept("yes", "y") })
    );
    peer.send_raw(line(2, "18446744073709551617", &extra).as_bytes());
    assert_eq!(peer.recv(), invalid(2, TRANSPLANTED));
    peer.send_raw(line(3, "18446744073709551616", &extra).as_bytes());
    assert_eq!(
        peer.recv(),
        text_result(&peer, 3, "paid 18446744073709551616")
    );
    peer.finish_quietly();
}
