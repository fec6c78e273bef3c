//! One check per fixture of FIXTURES.md: what the everything server must
//! answer for it.

use serde_json::{Value, json};

use crate::support::{Peer, WAIT, call, cancel, request};

use super::helpers::{
    all_caps, assert_tagged, barrier, block, call_tool, close, complete, error_code, first_round,
    get_prompt, input_requests, is_base64, listed, methods, mock_answers, mrtr_round_trip,
    next_round, non_empty, notes_then_reply, open, progress_of, read, read_contents, reply_and,
    reply_to, request_state, retry_params, text, tool_params, with_caps, with_progress_token,
};
use super::{Check, SUBSCRIPTION_ID, first_page, task_checks};

/// One check per fixture of FIXTURES.md, by the name the file gives it.
pub(super) const CHECKS: &[(&str, Check)] = &[
    // Part A, tools.
    ("echo", check_echo),
    ("add", check_add),
    ("slow", check_slow),
    ("progress", check_progress),
    ("fail", check_fail),
    ("panic", check_panic),
    ("big", check_big),
    ("bump", check_bump),
    ("toggle_tool", check_toggle_tool),
    ("add_tool", check_add_tool),
    ("end_listen", check_end_listen),
    ("ask", check_ask),
    ("stats", check_stats),
    // Part A, resources and prompts.
    ("mem://counter", check_counter),
    ("mem://does-not-exist", |p| {
        check_not_found(p, "mem://does-not-exist")
    }),
    ("greet", check_greet),
    // Section 3, tools.
    ("test_simple_text", check_simple_text),
    ("test_image_content", check_image_content),
    ("test_audio_content", check_audio_content),
    ("test_embedded_resource", check_embedded_resource),
    ("test_multiple_content_types", check_multiple_content_types),
    ("test_error_handling", check_error_handling),
    ("test_tool_with_progress", check_tool_with_progress),
    ("test_missing_capability", check_missing_capability),
    ("test_streaming_elicitation", check_streaming_elicitation),
    ("test_logging_tool", check_logging_tool),
    ("test_trigger_tool_change", |p| {
        check_trigger(p, "test_trigger_tool_change", "toolsListChanged", "tools")
    }),
    ("test_trigger_prompt_change", |p| {
        check_trigger(
            p,
            "test_trigger_prompt_change",
            "promptsListChanged",
            "prompts",
        )
    }),
    ("json_schema_2020_12_tool", check_json_schema_2020_12_tool),
    // Section 4, resources.
    ("test://static-text", check_static_text),
    ("test://static-binary", check_static_binary),
    ("test://template/{id}/data", check_template),
    ("test://watched-resource", check_watched_resource),
    ("test://nonexistent-resource-for-conformance-testing", |p| {
        check_not_found(p, "test://nonexistent-resource-for-conformance-testing")
    }),
    // Section 5, prompts.
    ("test_simple_prompt", check_simple_prompt),
    ("test_prompt_with_arguments", check_prompt_with_arguments),
    (
        "test_prompt_with_embedded_resource",
        check_prompt_with_embedded_resource,
    ),
    ("test_prompt_with_image", check_prompt_with_image),
    (
        "test_input_required_result_prompt",
        check_input_required_prompt,
    ),
    // Section 8, MRTR.
    (
        "test_input_required_result_elicitation",
        check_mrtr_elicitation,
    ),
    (
        "test_input_required_result_elicitation / wrong key",
        check_mrtr_wrong_key,
    ),
    (
        "test_input_required_result_elicitation / resultType",
        check_mrtr_result_type,
    ),
    (
        "test_input_required_result_elicitation / extra keys",
        check_mrtr_extra_keys,
    ),
    (
        "test_input_required_result_elicitation / invalid responses",
        check_mrtr_invalid,
    ),
    ("test_input_required_result_sampling", check_mrtr_sampling),
    (
        "test_input_required_result_list_roots",
        check_mrtr_list_roots,
    ),
    (
        "test_input_required_result_request_state",
        check_mrtr_request_state,
    ),
    (
        "test_input_required_result_multiple_inputs",
        check_mrtr_multiple_inputs,
    ),
    (
        "test_input_required_result_multi_round",
        check_mrtr_multi_round,
    ),
    (
        "test_input_required_result_tampered_state",
        check_mrtr_tampered_state,
    ),
    (
        "test_input_required_result_capabilities",
        check_mrtr_capabilities,
    ),
    ("tools/list", |p| {
        check_never_input_required(p, "tools/list")
    }),
    ("prompts/list", |p| {
        check_never_input_required(p, "prompts/list")
    }),
    // Part C, the Tasks extension.
    ("tool greet", task_checks::check_greet_tool),
    ("slow_compute", task_checks::check_slow_compute),
    ("failing_job", task_checks::check_failing_job),
    ("protocol_error_job", task_checks::check_protocol_error_job),
    ("confirm_delete", task_checks::check_confirm_delete),
    ("multi_input", task_checks::check_multi_input),
    (
        "test_tool_with_task",
        task_checks::check_test_tool_with_task,
    ),
];

// Part A.

fn check_echo(peer: &mut Peer) {
    let tricky = "a\nb\t\"q\" \\ ünï©ødé 😀 \u{0} </script>";
    let result = call_tool(peer, 1, "echo", json!({ "text": tricky }));
    assert_eq!(
        result["content"],
        json!([{ "type": "text", "text": tricky }])
    );
}

fn check_add(peer: &mut Peer) {
    let result = call_tool(peer, 1, "add", json!({ "a": 2.5, "b": 0.25 }));
    assert_eq!(text(&result), "2.75");
    assert_eq!(result["structuredContent"]["sum"].as_f64(), Some(2.75));
    let tool = listed(peer, "tools/list", "tools", "name", "add");
    assert!(
        tool["outputSchema"]["properties"]["sum"].is_object(),
        "{tool}"
    );
}

fn check_slow(peer: &mut Peer) {
    assert_eq!(
        text(&call_tool(peer, 1, "slow", json!({ "ms": 20 }))),
        "done"
    );
    // Cancelled: `stats` soon counts it, and nothing is ever sent for it
    // (the walk ends every check with `finish_quietly`).
    peer.send(&call("s", "slow", json!({ "ms": 60_000 })));
    peer.send(&cancel("s"));
    let deadline = std::time::Instant::now() + WAIT;
    while slow_cancelled(peer) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "slow never saw its cancellation"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(slow_cancelled(peer), 1);
}

fn slow_cancelled(peer: &mut Peer) -> u64 {
    let result = call_tool(peer, 2, "stats", json!({}));
    let stats: Value = serde_json::from_str(text(&result)).unwrap();
    stats["slow_cancelled"].as_u64().unwrap()
}

fn check_progress(peer: &mut Peer) {
    let token = json!("tok");
    let req = with_progress_token(call(1, "progress", json!({ "steps": 4 })), token.clone());
    let (notes, reply) = notes_then_reply(peer, &req);
    complete(&reply);
    let expected: Vec<(f64, Option<f64>)> = (1..=4).map(|n| (n as f64, Some(4.0))).collect();
    assert_eq!(progress_of(&notes, &token), expected);
    // `steps` defaults to 3; an integer token is echoed as well.
    let req = with_progress_token(call(2, "progress", json!({})), json!(7));
    let (notes, _) = notes_then_reply(peer, &req);
    assert_eq!(progress_of(&notes, &json!(7)).len(), 3);
    // Without a token, nothing before the reply.
    call_tool(peer, 3, "progress", json!({ "steps": 2 }));
}

fn check_fail(peer: &mut Peer) {
    let result = call_tool(peer, 1, "fail", json!({}));
    assert_eq!(result["isError"], true);
    assert!(!text(&result).is_empty());
}

fn check_panic(peer: &mut Peer) {
    assert_eq!(
        error_code(&reply_to(peer, &call(1, "panic", json!({})))),
        -32603
    );
    let result = call_tool(peer, 2, "echo", json!({ "text": "still serving" }));
    assert_eq!(text(&result), "still serving");
}

fn check_big(peer: &mut Peer) {
    for bytes in [0, 1, 70_000] {
        let result = call_tool(peer, 1, "big", json!({ "bytes": bytes }));
        assert_eq!(result["content"].as_array().unwrap().len(), 1);
        let text = text(&result);
        assert!(
            text.len() == bytes && text.is_ascii(),
            "{} bytes",
            text.len()
        );
    }
}

fn check_bump(peer: &mut Peer) {
    open(
        peer,
        "counter",
        json!({ "resourceSubscriptions": ["mem://counter"] }),
    );
    let other =
        json!({ "resourceSubscriptions": ["test://static-text"], "toolsListChanged": true });
    open(peer, "other", other);
    assert_eq!(read_contents(peer, 1, "mem://counter")["text"], "0");
    let (reply, notes) = reply_and(peer, &call(2, "bump", json!({})), 1);
    complete(&reply);
    assert_tagged(&notes[0], "notifications/resources/updated", "counter");
    assert_eq!(notes[0]["params"]["uri"], "mem://counter");
    barrier(peer, "nothing for other");
    assert_eq!(read_contents(peer, 3, "mem://counter")["text"], "1");
    close(peer, &["counter", "other"]);
}

fn tool_names(peer: &mut Peer) -> Vec<String> {
    let tools = first_page(peer, 900, "tools/list", "tools");
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Calls `tool` and asserts it published one tool-list change to `stream`.
fn call_announcing_tools(peer: &mut Peer, id: i64, tool: &str, stream: &str) -> Value {
    let (reply, notes) = reply_and(peer, &call(id, tool, json!({})), 1);
    assert_tagged(&notes[0], "notifications/tools/list_changed", stream);
    complete(&reply).clone()
}

fn check_toggle_tool(peer: &mut Peer) {
    open(peer, "tools", json!({ "toolsListChanged": true }));
    assert!(!tool_names(peer).contains(&"ephemeral".to_owned()));
    call_announcing_tools(peer, 1, "toggle_tool", "tools");
    assert!(tool_names(peer).contains(&"ephemeral".to_owned()));
    call_announcing_tools(peer, 2, "toggle_tool", "tools");
    assert!(!tool_names(peer).contains(&"ephemeral".to_owned()));
    close(peer, &["tools"]);
}

fn check_add_tool(peer: &mut Peer) {
    open(peer, "tools", json!({ "toolsListChanged": true }));
    call_announcing_tools(peer, 1, "add_tool", "tools");
    call_announcing_tools(peer, 2, "add_tool", "tools");
    let names = tool_names(peer);
    assert!(
        names.ends_with(&["dyn_1".to_owned(), "dyn_2".to_owned()]),
        "{names:?}"
    );
    call_tool(peer, 3, "dyn_2", json!({}));
    close(peer, &["tools"]);
}

fn check_end_listen(peer: &mut Peer) {
    open(peer, "a", json!({ "toolsListChanged": true }));
    open(peer, "b", json!({ "promptsListChanged": true }));
    let (reply, finals) = reply_and(peer, &call(1, "end_listen", json!({})), 2);
    complete(&reply);
    for id in ["a", "b"] {
        let end = finals.iter().find(|m| m["id"] == id);
        let end = end.unwrap_or_else(|| panic!("no final result for {id}: {finals:?}"));
        assert_eq!(complete(end)["_meta"][SUBSCRIPTION_ID], id, "{end}");
    }
}

fn check_ask(peer: &mut Peer) {
    let round = first_round(peer, "ask");
    assert_eq!(methods(&round), ["elicitation/create"]);
    let params = &input_requests(&round).values().next().unwrap()["params"];
    assert_eq!(params["mode"], "form");
    assert_eq!(
        params["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    let done = next_round(peer, 2, "ask", &round, mock_answers(&round));
    assert!(text(complete(&done)).contains("Alice"), "{done}");
}

fn check_stats(peer: &mut Peer) {
    assert_eq!(slow_cancelled(peer), 0);
}

fn check_counter(peer: &mut Peer) {
    let contents = read_contents(peer, 1, "mem://counter");
    assert_eq!(contents["mimeType"], "text/plain");
    assert_eq!(contents["text"], "0");
    call_tool(peer, 2, "bump", json!({}));
    call_tool(peer, 3, "bump", json!({}));
    assert_eq!(read_contents(peer, 4, "mem://counter")["text"], "2");
    let ack = open(
        peer,
        "sub",
        json!({ "resourceSubscriptions": ["mem://counter"] }),
    );
    let accepted = &ack["params"]["notifications"]["resourceSubscriptions"];
    assert_eq!(accepted, &json!(["mem://counter"]), "subscribable: {ack}");
    close(peer, &["sub"]);
}

fn check_not_found(peer: &mut Peer, uri: &str) {
    let resp = read(peer, 1, uri);
    assert_eq!(error_code(&resp), -32602);
    assert_eq!(resp["error"]["data"]["uri"], uri);
    assert!(resp.get("result").is_none(), "{resp}");
}

fn check_greet(peer: &mut Peer) {
    let prompt = listed(peer, "prompts/list", "prompts", "name", "greet");
    assert_eq!(prompt["arguments"][0]["name"], "name");
    assert_eq!(prompt["arguments"][0]["required"], true);
    let result = get_prompt(peer, 1, "greet", json!({ "name": "Ada" }));
    let messages = result["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{result}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"]["type"], "text");
    assert!(
        messages[0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Ada")
    );
}

// Section 3.

fn check_simple_text(peer: &mut Peer) {
    // The suite sends no `arguments` key at all.
    let req = request(1, "tools/call", json!({ "name": "test_simple_text" }));
    let result = complete(&reply_to(peer, &req)).clone();
    assert_eq!(text(&result), "This is a simple text response for testing.");
    call_tool(peer, 2, "test_simple_text", json!({}));
}

fn check_image_content(peer: &mut Peer) {
    let result = call_tool(peer, 1, "test_image_content", json!({}));
    let image = block(&result, "image");
    assert!(is_base64(image["data"].as_str().unwrap()), "{image}");
    assert_eq!(image["mimeType"], "image/png");
}

fn check_audio_content(peer: &mut Peer) {
    let result = call_tool(peer, 1, "test_audio_content", json!({}));
    let audio = block(&result, "audio");
    assert!(is_base64(audio["data"].as_str().unwrap()), "{audio}");
    assert_eq!(audio["mimeType"], "audio/wav");
}

fn check_embedded_resource(peer: &mut Peer) {
    let result = call_tool(peer, 1, "test_embedded_resource", json!({}));
    let resource = &block(&result, "resource")["resource"];
    assert_eq!(resource["uri"], "test://embedded-resource");
    assert_eq!(resource["mimeType"], "text/plain");
    assert_eq!(resource["text"], "This is an embedded resource content.");
}

fn check_multiple_content_types(peer: &mut Peer) {
    let result = call_tool(peer, 1, "test_multiple_content_types", json!({}));
    assert!(non_empty(&block(&result, "text")["text"]));
    assert!(is_base64(block(&result, "image")["data"].as_str().unwrap()));
    let resource = &block(&result, "resource")["resource"];
    assert_eq!(resource["uri"], "test://mixed-content-resource");
    assert_eq!(resource["mimeType"], "application/json");
    let data: Value = serde_json::from_str(resource["text"].as_str().unwrap()).unwrap();
    assert_eq!(data, json!({ "test": "data", "value": 123 }));
}

fn check_error_handling(peer: &mut Peer) {
    // A result, not a JSON-RPC error.
    let result = call_tool(peer, 1, "test_error_handling", json!({}));
    assert_eq!(result["isError"], true);
    assert!(!text(&result).is_empty());
}

fn check_tool_with_progress(peer: &mut Peer) {
    let token = json!("progress-test-1");
    let req = call(1, "test_tool_with_progress", json!({}));
    let (notes, reply) = notes_then_reply(peer, &with_progress_token(req, token.clone()));
    complete(&reply);
    let progress = progress_of(&notes, &token);
    assert!(progress.len() >= 3, "{notes:?}");
    assert!(
        progress.windows(2).all(|w| w[0].0 <= w[1].0),
        "{progress:?}"
    );
}

fn check_missing_capability(peer: &mut Peer) {
    // `call` declares `clientCapabilities: {}`.
    let resp = reply_to(peer, &call(1, "test_missing_capability", json!({})));
    assert_eq!(error_code(&resp), -32021);
    assert_eq!(
        resp["error"]["data"]["requiredCapabilities"]["sampling"],
        json!({})
    );
}

fn check_streaming_elicitation(peer: &mut Peer) {
    // Its reply is the next message: no request to the client before it
    // (and none after: `finish_quietly`).
    let params = tool_params("test_streaming_elicitation");
    let caps = json!({ "elicitation": {} });
    complete(&reply_to(peer, &with_caps(1, "tools/call", params, caps)));
}

fn check_logging_tool(peer: &mut Peer) {
    // Without a logLevel: the reply is the next message, no log before it.
    call_tool(peer, 1, "test_logging_tool", json!({}));
}

/// `tool` publishes `<what>/list_changed` to the stream that asked with
/// `flag`, and not to a stream that asked for the other list.
fn check_trigger(peer: &mut Peer, tool: &str, flag: &str, what: &str) {
    let other = if flag == "toolsListChanged" {
        "promptsListChanged"
    } else {
        "toolsListChanged"
    };
    open(peer, "asked", json!({ flag: true }));
    open(peer, "other", json!({ other: true }));
    let (reply, notes) = reply_and(peer, &call(1, tool, json!({})), 1);
    complete(&reply);
    let method = format!("notifications/{what}/list_changed");
    assert_tagged(&notes[0], &method, "asked");
    barrier(peer, "nothing for other");
    close(peer, &["asked", "other"]);
}

fn check_json_schema_2020_12_tool(peer: &mut Peer) {
    let tool = listed(
        peer,
        "tools/list",
        "tools",
        "name",
        "json_schema_2020_12_tool",
    );
    let schema = &tool["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["type"], "object");
    assert!(
        schema["$defs"]["address"]["$anchor"].is_string(),
        "{schema}"
    );
    let properties = &schema["properties"];
    for name in ["name", "phone", "email"] {
        assert!(properties[name].is_object(), "{name}: {schema}");
    }
    assert_eq!(properties["address"], json!({ "$ref": "#/$defs/address" }));
    assert_eq!(
        properties["contactMethod"]["enum"],
        json!(["phone", "email"])
    );
    let any_of = json!([{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }]);
    assert_eq!(schema["allOf"], any_of);
    assert_eq!(
        schema["if"]["properties"]["contactMethod"]["const"],
        "phone"
    );
    assert_eq!(schema["then"], json!({ "required": ["phone"] }));
    assert_eq!(schema["else"], json!({ "required": ["email"] }));
    assert_eq!(schema["additionalProperties"], false);
}

// Section 4.

fn check_static_text(peer: &mut Peer) {
    let listing = listed(
        peer,
        "resources/list",
        "resources",
        "uri",
        "test://static-text",
    );
    assert!(
        non_empty(&listing["name"]) && non_empty(&listing["description"]),
        "{listing}"
    );
    assert_eq!(listing["mimeType"], "text/plain");
    let contents = read_contents(peer, 1, "test://static-text");
    assert_eq!(contents["uri"], "test://static-text");
    assert_eq!(contents["mimeType"], "text/plain");
    assert_eq!(
        contents["text"],
        "This is the content of the static text resource."
    );
}

fn check_static_binary(peer: &mut Peer) {
    let contents = read_contents(peer, 1, "test://static-binary");
    assert_eq!(contents["uri"], "test://static-binary");
    assert!(non_empty(&contents["mimeType"]), "{contents}");
    assert!(is_base64(contents["blob"].as_str().unwrap()), "{contents}");
}

fn check_template(peer: &mut Peer) {
    let contents = read_contents(peer, 1, "test://template/123/data");
    assert_eq!(contents["uri"], "test://template/123/data");
    assert!(
        contents["text"].as_str().unwrap().contains("123"),
        "{contents}"
    );
}

fn check_watched_resource(peer: &mut Peer) {
    let contents = read_contents(peer, 1, "test://watched-resource");
    assert_eq!(contents["mimeType"], "text/plain");
    assert!(non_empty(&contents["text"]), "{contents}");
}

// Section 5 and 6.

fn assert_messages(result: &Value) -> &Vec<Value> {
    let messages = result["messages"].as_array().unwrap();
    assert!(!messages.is_empty(), "{result}");
    for message in messages {
        assert!(
            message["role"].is_string() && message["content"].is_object(),
            "{message}"
        );
    }
    messages
}

fn check_simple_prompt(peer: &mut Peer) {
    let result = get_prompt(peer, 1, "test_simple_prompt", json!({}));
    let messages = assert_messages(&result);
    assert_eq!(
        messages[0]["content"]["text"],
        "This is a simple prompt for testing."
    );
}

fn check_prompt_with_arguments(peer: &mut Peer) {
    let prompt = listed(
        peer,
        "prompts/list",
        "prompts",
        "name",
        "test_prompt_with_arguments",
    );
    let required = prompt["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["required"] == true);
    assert_eq!(
        required.map(|a| a["name"].clone()).collect::<Vec<_>>(),
        ["arg1", "arg2"]
    );
    let arguments = json!({ "arg1": "testValue1", "arg2": "testValue2" });
    let result = get_prompt(peer, 1, "test_prompt_with_arguments", arguments);
    let serialized = serde_json::to_string(assert_messages(&result)).unwrap();
    assert!(serialized.contains("testValue1") && serialized.contains("testValue2"));
    // Section 6: the completion of `arg1`, with the capability declared.
    let params = json!({
        "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
        "argument": { "name": "arg1", "value": "test" }
    });
    let resp = reply_to(peer, &request(2, "completion/complete", params));
    assert!(complete(&resp)["completion"]["values"].is_array(), "{resp}");
    let discover = reply_to(peer, &request(3, "server/discover", json!({})));
    assert!(discover["result"]["capabilities"]["completions"].is_object());
}

fn check_prompt_with_embedded_resource(peer: &mut Peer) {
    let uri = "test://example-resource";
    let name = "test_prompt_with_embedded_resource";
    let result = get_prompt(peer, 1, name, json!({ "resourceUri": uri }));
    let messages = assert_messages(&result);
    let embedded = messages.iter().find(|m| m["content"]["type"] == "resource");
    let embedded = embedded.unwrap_or_else(|| panic!("no resource message: {result}"));
    assert_eq!(embedded["content"]["resource"]["uri"], uri);
}

fn check_prompt_with_image(peer: &mut Peer) {
    let result = get_prompt(peer, 1, "test_prompt_with_image", json!({}));
    let messages = assert_messages(&result);
    let image = messages.iter().find(|m| m["content"]["type"] == "image");
    let image = &image.unwrap_or_else(|| panic!("no image message: {result}"))["content"];
    assert!(is_base64(image["data"].as_str().unwrap()) && non_empty(&image["mimeType"]));
}

fn check_input_required_prompt(peer: &mut Peer) {
    let params = json!({ "name": "test_input_required_result_prompt" });
    let round = reply_to(
        peer,
        &with_caps(1, "prompts/get", params.clone(), all_caps()),
    );
    assert_eq!(methods(&round), ["elicitation/create"]);
    let retry = retry_params(&params, &round, mock_answers(&round));
    let done = reply_to(peer, &with_caps(2, "prompts/get", retry, all_caps()));
    assert_messages(complete(&done));
}

// Section 8.

fn check_mrtr_elicitation(peer: &mut Peer) {
    let round = first_round(peer, "test_input_required_result_elicitation");
    let ask = &input_requests(&round)["user_name"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "What is your name?");
    let schema = &ask["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["required"], json!(["name"]));
    let answers = json!({ "user_name": { "action": "accept", "content": { "name": "Alice" } } });
    let done = next_round(
        peer,
        2,
        "test_input_required_result_elicitation",
        &round,
        answers,
    );
    assert!(!text(complete(&done)).is_empty());
}

fn check_mrtr_wrong_key(peer: &mut Peer) {
    let tool = "test_input_required_result_elicitation";
    let round = first_round(peer, tool);
    let answers = json!({ "wrong_key": { "action": "accept", "content": { "name": "Alice" } } });
    let again = next_round(peer, 2, tool, &round, answers);
    assert!(input_requests(&again).contains_key("user_name"), "{again}");
}

fn check_mrtr_result_type(peer: &mut Peer) {
    let round = first_round(peer, "test_input_required_result_elicitation");
    assert_eq!(
        round["result"].get("resultType"),
        Some(&json!("input_required"))
    );
}

fn check_mrtr_extra_keys(peer: &mut Peer) {
    let params = json!({
        "name": "test_input_required_result_elicitation",
        "arguments": {},
        "inputResponses": {
            "user_name": { "action": "accept", "content": { "name": "Alice" } },
            "unknown_extra_key": { "anything": [1, 2] },
            "another_unexpected": 42
        }
    });
    let done = reply_to(peer, &with_caps(1, "tools/call", params, all_caps()));
    assert!(!text(complete(&done)).is_empty());
}

fn check_mrtr_invalid(peer: &mut Peer) {
    let tool = "test_input_required_result_elicitation";
    let round = first_round(peer, tool);
    for (id, answers) in [(2, json!({ "user_name": 12345 })), (3, Value::Null)] {
        let resp = next_round(peer, id, tool, &round, answers);
        let asks_again = resp["result"]["resultType"] == "input_required";
        assert!(
            resp.get("error").is_some() || asks_again,
            "not complete: {resp}"
        );
    }
}

fn check_mrtr_sampling(peer: &mut Peer) {
    let tool = "test_input_required_result_sampling";
    mrtr_round_trip(peer, tool, &["sampling/createMessage"]);
}

fn check_mrtr_list_roots(peer: &mut Peer) {
    mrtr_round_trip(
        peer,
        "test_input_required_result_list_roots",
        &["roots/list"],
    );
}

fn check_mrtr_request_state(peer: &mut Peer) {
    let tool = "test_input_required_result_request_state";
    let round = first_round(peer, tool);
    request_state(&round);
    let done = next_round(peer, 2, tool, &round, mock_answers(&round));
    assert!(text(complete(&done)).contains("state-ok"), "{done}");
}

fn check_mrtr_multiple_inputs(peer: &mut Peer) {
    let tool = "test_input_required_result_multiple_inputs";
    let round = first_round(peer, tool);
    request_state(&round);
    let methods = methods(&round);
    assert!(methods.len() >= 3, "{round}");
    for method in ["elicitation/create", "sampling/createMessage", "roots/list"] {
        assert!(methods.contains(&method), "{method} in {round}");
    }
    complete(&next_round(peer, 2, tool, &round, mock_answers(&round)));
}

fn check_mrtr_multi_round(peer: &mut Peer) {
    let tool = "test_input_required_result_multi_round";
    let round1 = first_round(peer, tool);
    let round2 = next_round(peer, 2, tool, &round1, mock_answers(&round1));
    assert_ne!(request_state(&round1), request_state(&round2));
    input_requests(&round2);
    complete(&next_round(peer, 3, tool, &round2, mock_answers(&round2)));
}

fn check_mrtr_tampered_state(peer: &mut Peer) {
    let tool = "test_input_required_result_tampered_state";
    let round = first_round(peer, tool);
    let tampered = format!("{}-TAMPERED", request_state(&round));
    let mut params = retry_params(&tool_params(tool), &round, mock_answers(&round));
    params["requestState"] = json!(tampered);
    let resp = reply_to(peer, &with_caps(2, "tools/call", params, all_caps()));
    assert_eq!(error_code(&resp), -32602);
}

fn check_mrtr_capabilities(peer: &mut Peer) {
    let params = tool_params("test_input_required_result_capabilities");
    let caps = json!({ "sampling": {} });
    let round = reply_to(peer, &with_caps(1, "tools/call", params, caps));
    assert!(
        methods(&round)
            .iter()
            .all(|m| *m == "sampling/createMessage"),
        "{round}"
    );
}

fn check_never_input_required(peer: &mut Peer, method: &str) {
    let resp = reply_to(peer, &with_caps(1, method, json!({}), all_caps()));
    complete(&resp);
}
