//! The Tasks extension on the client, against a scripted server over the
//! in-memory transport: the exact lines the client writes (`tasks/get`,
//! `tasks/update`, `tasks/cancel`, the declared extension in `_meta`), how
//! it reads every end of a task, and that no wrong answer leaves it
//! hanging.
//!
//! The script runs on a thread of its own and reads the client's lines
//! with a bounded wait; it fails with a reason (and drops its end, so the
//! client sees the connection close) when a line is not the one expected.
//! A check ends most sessions with a plain `echo` call that the script
//! expects as the very next line: nothing else (no `tasks/cancel`, no
//! `notifications/cancelled`) was sent before it.

use mcp_stdio::types::{
    ElicitRequestParams, InputResponse, InputResponses, ListRootsResult, Root, TaskStatus,
};
use mcp_stdio::{TaskHandle, ToolCallStart};

use super::*;

const TASKS_KEY: &str = "io.modelcontextprotocol/tasks";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// One line the client wrote, and when the script's reader got it.
struct Seen {
    at: Instant,
    msg: Value,
}

/// The scripted server's end of the connection.
struct Peer {
    lines: Receiver<Seen>,
    out: Box<dyn Write + Send>,
    /// When the last line read arrived.
    last_at: Instant,
}

impl Peer {
    /// The next line the client wrote, within [`WAIT`].
    fn next(&mut self) -> Result<Value, String> {
        let seen = self
            .lines
            .recv_timeout(WAIT)
            .map_err(|_| format!("the client wrote nothing more within {WAIT:?}"))?;
        self.last_at = seen.at;
        Ok(seen.msg)
    }

    /// The next line, which must be a request of `method`.
    fn expect(&mut self, method: &str) -> Result<Value, String> {
        let msg = self.next()?;
        ensure!(
            method_of(&msg) == Some(method) && msg.get("id").is_some(),
            "want a {method} request, the client wrote {msg}"
        );
        Ok(msg)
    }

    fn write(&mut self, msg: &Value) {
        let _ = writeln!(self.out, "{msg}");
    }

    fn answer(&mut self, request: &Value, result: Value) {
        self.write(&reply(&request["id"], result));
    }
}

/// The end of a script: the peer (whose end stays open while it is held)
/// or why the script failed.
struct Script {
    done: Receiver<Result<Peer, String>>,
}

impl Script {
    /// Waits (bounded) for the script to end.
    fn finish(self) -> Result<Peer, String> {
        match self.done.recv_timeout(WAIT + WAIT) {
            Ok(Ok(peer)) => Ok(peer),
            Ok(Err(reason)) => Err(format!("the script failed: {reason}")),
            Err(_) => Err("the script panicked or did not end".into()),
        }
    }
}

/// Connects a client built by `builder` to a scripted server: the script
/// answers `server/discover` (advertising the extension), then runs.
fn start(
    builder: ClientBuilder,
    script: impl FnOnce(&mut Peer) -> Result<(), String> + Send + 'static,
) -> Result<(Client, Script), String> {
    let (ours, theirs) = Transport::memory();
    let (mut reader, out) = theirs.into_parts();
    let (tx, lines) = crossbeam_channel::unbounded();
    thread::spawn(move || {
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let msg = serde_json::from_str(&line).unwrap_or(Value::String(line.clone()));
            if tx
                .send(Seen {
                    at: Instant::now(),
                    msg,
                })
                .is_err()
            {
                break;
            }
        }
    });
    let (done_tx, done) = crossbeam_channel::bounded(1);
    thread::spawn(move || {
        let mut peer = Peer {
            lines,
            out,
            last_at: Instant::now(),
        };
        let res = peer.expect("server/discover").and_then(|probe| {
            let mut discover = fake_discover("tasks-fake", "tasks fake");
            discover["capabilities"]["extensions"] = json!({ TASKS_KEY: {} });
            peer.answer(&probe, discover);
            script(&mut peer)
        });
        // A failed script drops its end: the client sees the close at once.
        let _ = done_tx.send(res.map(|()| peer));
    });
    let client = builder
        .connect(ours)
        .map_err(|e| format!("connecting failed: {e}"))?;
    Ok((client, Script { done }))
}

/// A client that declares the extension, with a request timeout inside
/// the script's waits.
fn tasks_builder() -> ClientBuilder {
    builder().request_timeout(WAIT).tasks(true)
}

/// A task's fields with this status and poll interval.
fn task(id: &str, status: &str, poll_ms: u64) -> Value {
    json!({
        "taskId": id, "status": status,
        "createdAt": "2026-07-28T10:30:00.000Z",
        "lastUpdatedAt": "2026-07-28T10:30:00.000Z",
        "ttlMs": 60000, "pollIntervalMs": poll_ms
    })
}

/// A `CreateTaskResult`.
fn created(id: &str, poll_ms: u64) -> Value {
    let mut result = task(id, "working", poll_ms);
    result["resultType"] = json!("task");
    result
}

/// A `tasks/get` result: the task with `extra` fields (its payload).
fn got(id: &str, status: &str, poll_ms: u64, extra: Value) -> Value {
    let mut result = task(id, status, poll_ms);
    result["resultType"] = json!("complete");
    for (key, value) in extra.as_object().into_iter().flatten() {
        result[key] = value.clone();
    }
    result
}

fn elicit(message: &str) -> Value {
    json!({ "method": "elicitation/create", "params": {
        "mode": "form", "message": message,
        "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } } }
    }})
}

/// What the elicitation handler of these checks answers to `message`.
fn accepted(message: &str) -> Value {
    json!({ "action": "accept", "content": { "name": message } })
}

/// The params of a line without their `_meta`.
fn params_without_meta(msg: &Value) -> Value {
    let mut params = msg["params"].clone();
    if let Some(map) = params.as_object_mut() {
        map.remove("_meta");
    }
    params
}

/// Whether a line's `_meta` declares the extension.
fn declares_tasks(msg: &Value) -> bool {
    msg["params"]["_meta"][CAPABILITIES_KEY]["extensions"][TASKS_KEY] == json!({})
}

/// A request of the task, checked: its method, its `taskId`, the extension
/// declared in its `_meta`.
fn expect_task_request(peer: &mut Peer, method: &str, id: &str) -> Result<Value, String> {
    let msg = peer.expect(method)?;
    ensure!(
        msg["params"]["taskId"] == json!(id),
        "{method} for the wrong task: {msg}"
    );
    ensure!(
        declares_tasks(&msg),
        "{method} does not declare the extension: {msg}"
    );
    Ok(msg)
}

/// The `echo` call that ends a session: the very next line.
fn expect_echo(peer: &mut Peer) -> Result<(), String> {
    let msg = peer.expect("tools/call")?;
    ensure!(
        tool_name(&msg) == "echo",
        "want the closing echo, the client wrote {msg}"
    );
    let text = echo_text(&msg);
    peer.answer(&msg, text_result(&text));
    Ok(())
}

fn echo(client: &Client) -> Result<(), String> {
    expect_text(
        "echo",
        client.call_tool("echo", json!({ "text": "end" })),
        "end",
    )
    .map(drop)
}

/// The handlers' log: which elicitation messages and how many roots asks.
#[derive(Default)]
struct Asked {
    elicitations: Vec<String>,
    roots: usize,
}

fn answering_builder(asked: &Arc<Mutex<Asked>>) -> ClientBuilder {
    let (elicit_log, roots_log) = (Arc::clone(asked), Arc::clone(asked));
    tasks_builder()
        .on_elicitation(move |params| {
            let message = match params {
                ElicitRequestParams::Form(form) => form.message.clone(),
                ElicitRequestParams::Url(url) => url.message.clone(),
            };
            elicit_log
                .lock()
                .unwrap()
                .elicitations
                .push(message.clone());
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!(message));
            Ok(ElicitResult::accept(content))
        })
        .on_roots(move || {
            roots_log.lock().unwrap().roots += 1;
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///work".into(),
                    name: None,
                    meta: None,
                }],
            })
        })
}

// ---------------------------------------------------------------------------

/// `call_tool` on a task: polls, answers each input key once (across polls
/// that still list answered keys), honours `pollIntervalMs`, and returns
/// the completed result as a synchronous call would.
pub fn a_task_is_polled_answered_once_and_completed() -> Result<String, String> {
    const POLL: Duration = Duration::from_millis(60);
    let asked = Arc::new(Mutex::new(Asked::default()));
    let (client, script) = start(answering_builder(&asked), |peer| {
        let call = peer.expect("tools/call")?;
        ensure!(
            call["params"]["_meta"][CAPABILITIES_KEY]
                == json!({
                    "elicitation": { "form": {}, "url": {} },
                    "roots": {},
                    "extensions": { TASKS_KEY: {} }
                }),
            "the declared capabilities: {call}"
        );
        ensure!(
            params_without_meta(&call) == json!({ "name": "build", "arguments": { "n": 1 } }),
            "tools/call: {call}"
        );
        peer.answer(&call, created("t-1", 60));
        let get = expect_task_request(peer, "tasks/get", "t-1")?;
        ensure!(
            params_without_meta(&get) == json!({ "taskId": "t-1" }),
            "tasks/get params: {get}"
        );
        ensure!(
            get["params"]["_meta"] == call["params"]["_meta"],
            "tasks/get carries other _meta than the call: {get}"
        );
        peer.answer(&get, got("t-1", "working", 60, json!({})));
        let working_at = peer.last_at;
        let get = expect_task_request(peer, "tasks/get", "t-1")?;
        let gap = peer.last_at - working_at;
        ensure!(
            gap >= POLL,
            "polled again {gap:?} after `working`, within pollIntervalMs {POLL:?}"
        );
        let two = json!({ "name": elicit("Your name?"), "where": { "method": "roots/list" } });
        peer.answer(
            &get,
            got("t-1", "input_required", 60, json!({ "inputRequests": two })),
        );
        let update = expect_task_request(peer, "tasks/update", "t-1")?;
        let want = json!({ "taskId": "t-1", "inputResponses": {
            "name": accepted("Your name?"),
            "where": { "roots": [{ "uri": "file:///work" }] }
        }});
        ensure!(
            params_without_meta(&update) == want,
            "the first tasks/update: {update}"
        );
        peer.answer(&update, json!({ "resultType": "complete" }));
        // `name` is still listed (answered, not yet taken), next to a new key.
        let get = expect_task_request(peer, "tasks/get", "t-1")?;
        let again = json!({ "name": elicit("Your name?"), "again": elicit("Again?") });
        peer.answer(
            &get,
            got(
                "t-1",
                "input_required",
                60,
                json!({ "inputRequests": again }),
            ),
        );
        let update = expect_task_request(peer, "tasks/update", "t-1")?;
        let want = json!({ "taskId": "t-1", "inputResponses": { "again": accepted("Again?") } });
        ensure!(
            params_without_meta(&update) == want,
            "the second tasks/update answers only the new key: {update}"
        );
        peer.answer(&update, json!({ "resultType": "complete" }));
        // Only answered keys left: no update, the next poll after the interval.
        let get = expect_task_request(peer, "tasks/get", "t-1")?;
        let only_answered = json!({ "again": elicit("Again?") });
        peer.answer(
            &get,
            got(
                "t-1",
                "input_required",
                60,
                json!({ "inputRequests": only_answered }),
            ),
        );
        let listed_at = peer.last_at;
        let get = expect_task_request(peer, "tasks/get", "t-1")?;
        let gap = peer.last_at - listed_at;
        ensure!(
            gap >= POLL,
            "polled again {gap:?} after input_required with nothing new, within pollIntervalMs {POLL:?}"
        );
        let result =
            json!({ "resultType": "complete", "content": [{ "type": "text", "text": "built" }] });
        peer.answer(
            &get,
            got("t-1", "completed", 60, json!({ "result": result })),
        );
        expect_echo(peer)
    })?;
    let outcome = client.call_tool("build", json!({ "n": 1 }));
    let echoed = echo(&client);
    let _peer = script.finish()?;
    expect_text("the task's result", outcome, "built")?;
    echoed?;
    let asked = asked.lock().unwrap();
    ensure!(
        asked.elicitations == ["Your name?", "Again?"] && asked.roots == 1,
        "each input key answered once: elicitations {:?}, roots {}",
        asked.elicitations,
        asked.roots
    );
    Ok(String::new())
}

/// `failed` is the task's JSON-RPC error, `cancelled` an error naming the
/// task, a tool error (`isError`) a completed result; none of them sends a
/// `tasks/cancel`.
pub fn task_ends_failed_cancelled_and_tool_error() -> Result<String, String> {
    let (client, script) = start(tasks_builder(), |peer| {
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-f", 10));
        let get = expect_task_request(peer, "tasks/get", "t-f")?;
        let error = json!({ "code": -32000, "message": "rate limited", "data": { "retryMs": 5 } });
        let payload = json!({ "error": error, "statusMessage": "it failed" });
        peer.answer(&get, got("t-f", "failed", 10, payload));
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-c", 10));
        let get = expect_task_request(peer, "tasks/get", "t-c")?;
        let payload = json!({ "statusMessage": "stopped by the operator" });
        peer.answer(&get, got("t-c", "cancelled", 10, payload));
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-e", 10));
        let get = expect_task_request(peer, "tasks/get", "t-e")?;
        let result =
            json!({ "content": [{ "type": "text", "text": "bad input" }], "isError": true });
        peer.answer(
            &get,
            got("t-e", "completed", 10, json!({ "result": result })),
        );
        expect_echo(peer)
    })?;
    let failed = client.call_tool("fails", json!({}));
    let cancelled = client.call_tool("stops", json!({}));
    let tool_error = client.call_tool("errs", json!({}));
    let echoed = echo(&client);
    let _peer = script.finish()?;
    match failed {
        Err(Error::Rpc(e))
            if e.code == -32000
                && e.message == "rate limited"
                && e.data == Some(json!({ "retryMs": 5 })) => {}
        other => return Err(format!("failed: want the task's error, got {other:?}")),
    }
    match &cancelled {
        Err(Error::TaskCancelled {
            task_id,
            status_message,
        }) if task_id == "t-c" && status_message.as_deref() == Some("stopped by the operator") => {}
        other => {
            return Err(format!(
                "cancelled: want Error::TaskCancelled, got {other:?}"
            ));
        }
    }
    let message = cancelled.unwrap_err().to_string();
    ensure!(
        message.contains("task t-c was cancelled"),
        "the cancelled error says: {message}"
    );
    match tool_error {
        Ok(Outcome::Complete(result)) if result.is_error == Some(true) => {}
        other => {
            return Err(format!(
                "tool error: want a completed isError result, got {other:?}"
            ));
        }
    }
    echoed?;
    Ok(String::new())
}

/// The call's timeout covers the task: a server that stops answering
/// `tasks/get` gets a `tasks/cancel` (never `notifications/cancelled`) and
/// the caller `Error::Timeout`.
pub fn a_task_past_the_timeout_is_cancelled() -> Result<String, String> {
    const TIMEOUT: Duration = Duration::from_millis(300);
    let (client, script) = start(tasks_builder(), |peer| {
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-slow", 20));
        // Two polls answered `working`, the rest never: the timeout may
        // fall in a pause or in an unanswered poll (on a slow machine, even
        // before the second), and then the next line is the cancel.
        let mut polls = 0;
        let cancel = loop {
            let msg = peer.next()?;
            if method_of(&msg) == Some("tasks/cancel") {
                break msg;
            }
            ensure!(
                method_of(&msg) == Some("tasks/get") && msg["params"]["taskId"] == json!("t-slow"),
                "want tasks/get or tasks/cancel of t-slow, the client wrote {msg}"
            );
            polls += 1;
            if polls <= 2 {
                peer.answer(&msg, got("t-slow", "working", 20, json!({})));
            }
        };
        ensure!(
            declares_tasks(&cancel) && cancel.get("id").is_some(),
            "tasks/cancel: {cancel}"
        );
        ensure!(
            params_without_meta(&cancel) == json!({ "taskId": "t-slow" }),
            "tasks/cancel: {cancel}"
        );
        peer.answer(&cancel, json!({ "resultType": "complete" }));
        expect_echo(peer)
    })?;
    let started = Instant::now();
    let outcome = client.call_tool_with("slow", json!({}), RequestOptions::new().timeout(TIMEOUT));
    let took = started.elapsed();
    let echoed = echo(&client);
    let _peer = script.finish()?;
    ensure!(
        matches!(outcome, Err(Error::Timeout)),
        "want Error::Timeout, got {outcome:?}"
    );
    ensure!(
        took >= TIMEOUT,
        "timed out after {took:?}, before {TIMEOUT:?}"
    );
    echoed?;
    Ok(format!("timed out in {}", ms(took)))
}

/// A `tools/call` given up on at its timeout, whose answer, a task, comes
/// only after the give-up (crossing `notifications/cancelled` on the
/// wire): nobody could ever poll that task, so the client cancels it
/// (`tasks/cancel`, not waited for), and the caller still gets
/// `Error::Timeout`. Both entry points: `start_tool_call` and
/// `call_tool_with`.
pub fn a_task_made_after_the_call_timed_out_is_cancelled() -> Result<String, String> {
    const TIMEOUT: Duration = Duration::from_secs(1);
    let (first_done, first_cancelled) = crossbeam_channel::bounded(1);
    let (client, script) = start(tasks_builder(), move |peer| {
        for id in ["t-late-1", "t-late-2"] {
            let call = peer.expect("tools/call")?;
            let cancelled = peer.next()?;
            ensure!(
                method_of(&cancelled) == Some("notifications/cancelled")
                    && cancelled["params"]["requestId"] == call["id"],
                "want notifications/cancelled of the call, the client wrote {cancelled}"
            );
            peer.answer(&call, created(id, 20));
            let cancel = expect_task_request(peer, "tasks/cancel", id)?;
            peer.answer(&cancel, json!({ "resultType": "complete" }));
            let _ = first_done.try_send(());
        }
        Ok(())
    })?;
    let options = || RequestOptions::new().timeout(TIMEOUT);
    let started = client.start_tool_call("slow", json!({}), options());
    // The second call goes once the first task's cancel came: no line of
    // it crosses that cancel.
    let _ = first_cancelled.recv_timeout(WAIT + WAIT);
    let called = client.call_tool_with("slow", json!({}), options());
    let _peer = script.finish()?;
    ensure!(
        matches!(started, Err(Error::Timeout)),
        "start_tool_call: want Error::Timeout, got {started:?}"
    );
    ensure!(
        matches!(called, Err(Error::Timeout)),
        "call_tool_with: want Error::Timeout, got {called:?}"
    );
    Ok(String::new())
}

/// `request_outcome("tools/call")` of a client that declares the
/// extension, answered with a task: that is an error there (only the
/// typed calls follow tasks), and the task, whose id the caller never
/// sees, is cancelled rather than left running.
pub fn a_task_request_outcome_cannot_hand_out_is_cancelled() -> Result<String, String> {
    let (client, script) = start(tasks_builder(), |peer| {
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-raw", 20));
        let cancel = expect_task_request(peer, "tasks/cancel", "t-raw")?;
        peer.answer(&cancel, json!({ "resultType": "complete" }));
        Ok(())
    })?;
    let params = json!({ "name": "slow", "arguments": {} });
    let outcome = client.request_outcome("tools/call", params, RequestOptions::new());
    let _peer = script.finish()?;
    ensure!(
        matches!(&outcome, Err(Error::Protocol(m)) if m.contains("task")),
        "want an Error::Protocol about the task, got {outcome:?}"
    );
    Ok(String::new())
}

/// A `tools/call` of several rounds (`input_required`, answered, sent
/// again) whose last round times out, and whose late answer to that round
/// is a task: the task gets its `tasks/cancel`, as for a call of one
/// round (review-late13: `rounds` arms every round; this guards it). An
/// earlier round, answered in time, has nothing late.
pub fn a_task_made_after_the_second_round_timed_out_is_cancelled() -> Result<String, String> {
    const TIMEOUT: Duration = Duration::from_secs(1);
    let builder = tasks_builder().on_elicitation(|_| Ok(ElicitResult::decline()));
    let (client, script) = start(builder, move |peer| {
        let first = peer.expect("tools/call")?;
        let one = json!({ "name": elicit("Who?") });
        peer.answer(
            &first,
            json!({ "resultType": "input_required", "inputRequests": one }),
        );
        let second = peer.expect("tools/call")?;
        ensure!(
            second["params"]["inputResponses"]["name"] == json!({ "action": "decline" }),
            "the second round: {second}"
        );
        let cancelled = peer.next()?;
        ensure!(
            method_of(&cancelled) == Some("notifications/cancelled")
                && cancelled["params"]["requestId"] == second["id"],
            "want notifications/cancelled of the second round, the client wrote {cancelled}"
        );
        peer.answer(&second, created("t-round-2", 20));
        let cancel = expect_task_request(peer, "tasks/cancel", "t-round-2")?;
        peer.answer(&cancel, json!({ "resultType": "complete" }));
        Ok(())
    })?;
    let options = RequestOptions::new().timeout(TIMEOUT);
    let started = client.start_tool_call("slow", json!({}), options);
    let _peer = script.finish()?;
    ensure!(
        matches!(started, Err(Error::Timeout)),
        "want Error::Timeout, got {started:?}"
    );
    Ok(String::new())
}

/// Claim (review-late13): `request_outcome("tools/call")` answered with a
/// task said "the server answered tools/call with a task (resultType
/// \"task\"), which only tools/call may start": an error that contradicts
/// itself, and that does not say the task was cancelled or where to get
/// one. It names what to use instead and that the task was cancelled.
pub fn request_outcome_says_why_it_refused_a_task_of_tools_call() -> Result<String, String> {
    let (client, script) = start(tasks_builder(), |peer| {
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-said", 20));
        let cancel = expect_task_request(peer, "tasks/cancel", "t-said")?;
        peer.answer(&cancel, json!({ "resultType": "complete" }));
        Ok(())
    })?;
    let params = json!({ "name": "slow", "arguments": {} });
    let outcome = client.request_outcome("tools/call", params, RequestOptions::new());
    let _peer = script.finish()?;
    let Err(Error::Protocol(message)) = &outcome else {
        return Err(format!("want an Error::Protocol, got {outcome:?}"));
    };
    ensure!(
        !message.contains("only tools/call may start")
            && message.contains("start_tool_call")
            && message.contains("cancelled"),
        "the error says: {message}"
    );
    Ok(message.clone())
}

/// Answers of the wrong shape are errors at once, and a task the client
/// gives up on is cancelled.
pub fn task_answers_of_the_wrong_shape_are_errors() -> Result<String, String> {
    let (client, script) = start(tasks_builder(), |peer| {
        let call = peer.expect("tools/call")?;
        let mut no_id = created("x", 10);
        no_id.as_object_mut().unwrap().remove("taskId");
        peer.answer(&call, no_id);
        let call = peer.expect("tools/call")?;
        let mut no_status = created("x", 10);
        no_status.as_object_mut().unwrap().remove("status");
        peer.answer(&call, no_status);
        let bad_gets = [
            ("t-a", got("t-a", "completed", 10, json!({}))),
            ("t-b", got("t-other", "working", 10, json!({}))),
            ("t-c", got("t-c", "input_required", 10, json!({}))),
            ("t-d", got("t-d", "sleeping", 10, json!({}))),
            (
                "t-e",
                got("t-e", "working", 10, json!({ "result": { "content": [] } })),
            ),
        ];
        for (id, answer) in bad_gets {
            let call = peer.expect("tools/call")?;
            peer.answer(&call, created(id, 10));
            let get = expect_task_request(peer, "tasks/get", id)?;
            peer.answer(&get, answer);
            let cancel = expect_task_request(peer, "tasks/cancel", id)?;
            peer.answer(&cancel, json!({ "resultType": "complete" }));
        }
        expect_echo(peer)
    })?;
    let want = [
        "missing field `taskId`",
        "missing field `status`",
        "is malformed: a completed task must carry result",
        "with task t-other",
        "is malformed: a input_required task must carry inputRequests",
        "is invalid: unknown variant `sleeping`",
        "is malformed: a working task must carry none of",
    ];
    let mut got_errors = Vec::new();
    for n in 0..want.len() {
        got_errors.push(client.call_tool(&format!("bad-{n}"), json!({})));
    }
    let echoed = echo(&client);
    let _peer = script.finish()?;
    for (outcome, want) in got_errors.iter().zip(want) {
        match outcome {
            Err(Error::Protocol(message)) if message.contains(want) => {}
            other => {
                return Err(format!(
                    "want a protocol error with {want:?}, got {other:?}"
                ));
            }
        }
    }
    echoed?;
    Ok(String::new())
}

/// `resultType: "task"` is refused where no task may be: on
/// `resources/read`, and on `tools/call` of a client that did not declare
/// the extension (whose requests carry no `extensions`, and whose task
/// handles send nothing).
pub fn a_task_where_none_may_be_is_an_error() -> Result<String, String> {
    let (client, script) = start(tasks_builder(), |peer| {
        let read = peer.expect("resources/read")?;
        peer.answer(&read, created("t-r", 10));
        expect_echo(peer)
    })?;
    let read = client.read_resource("mem://x");
    let echoed = echo(&client);
    let _peer = script.finish()?;
    match read {
        Err(Error::Protocol(message)) if message.contains("resources/read with a task") => {}
        other => {
            return Err(format!(
                "resources/read: want a protocol error, got {other:?}"
            ));
        }
    }
    echoed?;

    let (client, script) = start(builder().request_timeout(WAIT), |peer| {
        let call = peer.expect("tools/call")?;
        ensure!(
            call["params"]["_meta"][CAPABILITIES_KEY]
                .get("extensions")
                .is_none(),
            "a client that did not declare the extension declares: {call}"
        );
        peer.answer(&call, created("t-u", 10));
        expect_echo(peer)
    })?;
    let call = client.call_tool("build", json!({}));
    let get = client.task("t-u").get();
    let echoed = echo(&client);
    let _peer = script.finish()?;
    for (what, outcome) in [
        ("tools/call", call.map(drop)),
        ("task().get()", get.map(drop)),
    ] {
        match outcome {
            Err(Error::Protocol(message))
                if message.contains("does not declare the tasks extension") => {}
            other => return Err(format!("{what}: want a protocol error, got {other:?}")),
        }
    }
    echoed?;
    Ok(String::new())
}

/// Input no handler can give: the task is cancelled and the error names
/// the keys and their methods; no handler is asked anything.
pub fn task_input_without_a_handler_cancels_the_task() -> Result<String, String> {
    let asked = Arc::new(Mutex::new(Asked::default()));
    let log = Arc::clone(&asked);
    let builder = tasks_builder().on_elicitation(move |_| {
        log.lock().unwrap().elicitations.push("asked".into());
        Ok(ElicitResult::decline())
    });
    let (client, script) = start(builder, |peer| {
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-n", 10));
        let get = expect_task_request(peer, "tasks/get", "t-n")?;
        let requests = json!({
            "name": elicit("Your name?"),
            "draft": { "method": "sampling/createMessage", "params": { "messages": [], "maxTokens": 5 } }
        });
        peer.answer(
            &get,
            got(
                "t-n",
                "input_required",
                10,
                json!({ "inputRequests": requests }),
            ),
        );
        let cancel = expect_task_request(peer, "tasks/cancel", "t-n")?;
        peer.answer(&cancel, json!({ "resultType": "complete" }));
        expect_echo(peer)
    })?;
    let outcome = client.call_tool("draft", json!({}));
    let echoed = echo(&client);
    let _peer = script.finish()?;
    match outcome {
        Err(Error::Protocol(message))
            if message.contains("no handler for: draft (sampling/createMessage)") => {}
        other => {
            return Err(format!(
                "want a protocol error naming the key, got {other:?}"
            ));
        }
    }
    ensure!(
        asked.lock().unwrap().elicitations.is_empty(),
        "a handler was asked although the answers could not all be sent"
    );
    echoed?;
    Ok(String::new())
}

/// The handle: `start_tool_call` hands out the task (or the immediate
/// result); `Client::task(id)` on a fresh client picks a task up by id,
/// with `get`, `update`, `wait` (which does not answer a key `update`
/// answered) and `cancel`.
pub fn task_handles_start_and_resume_by_id() -> Result<String, String> {
    let (client, script) = start(tasks_builder(), |peer| {
        let call = peer.expect("tools/call")?;
        peer.answer(&call, text_result("at once"));
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-s", 10));
        let get = expect_task_request(peer, "tasks/get", "t-s")?;
        let result = json!({ "content": [{ "type": "text", "text": "started" }] });
        peer.answer(
            &get,
            got("t-s", "completed", 10, json!({ "result": result })),
        );
        // The task of an earlier client, by id.
        let get = expect_task_request(peer, "tasks/get", "t-9")?;
        let one = json!({ "name": elicit("Who?") });
        let input = got("t-9", "input_required", 10, json!({ "inputRequests": one }));
        peer.answer(&get, input.clone());
        let update = expect_task_request(peer, "tasks/update", "t-9")?;
        let want =
            json!({ "taskId": "t-9", "inputResponses": { "name": { "action": "decline" } } });
        ensure!(
            params_without_meta(&update) == want,
            "the handle's tasks/update: {update}"
        );
        peer.answer(&update, json!({ "resultType": "complete" }));
        let get = expect_task_request(peer, "tasks/get", "t-9")?;
        peer.answer(&get, input);
        let get = expect_task_request(peer, "tasks/get", "t-9")?;
        let result = json!({ "content": [{ "type": "text", "text": "resumed" }] });
        peer.answer(
            &get,
            got("t-9", "completed", 10, json!({ "result": result })),
        );
        let cancel = expect_task_request(peer, "tasks/cancel", "t-10")?;
        peer.answer(&cancel, json!({ "resultType": "complete" }));
        expect_echo(peer)
    })?;
    let immediate = client.start_tool_call("quick", json!({}), RequestOptions::new());
    let started = client.start_tool_call("long", json!({}), RequestOptions::new());
    let started = match started {
        Ok(ToolCallStart::Task(task)) => {
            let seed = task.created().map(|t| (t.task_id.clone(), t.status));
            let id = task.id().to_owned();
            (id, seed, task.wait())
        }
        other => {
            drop(client);
            return Err(format!("start_tool_call: want a task, got {other:?}"));
        }
    };
    let mut resumed: TaskHandle = client.task("t-9");
    let detailed = resumed.get();
    let mut responses = InputResponses::new();
    responses.insert("name".into(), InputResponse(json!({ "action": "decline" })));
    let updated = resumed.update(responses);
    let waited = resumed.wait();
    let cancelled = client.task("t-10").cancel();
    let echoed = echo(&client);
    let _peer = script.finish()?;
    match immediate {
        Ok(ToolCallStart::Immediate(Outcome::Complete(result)))
            if text_of(&result) == Some("at once") => {}
        other => {
            return Err(format!(
                "start_tool_call: want the immediate result, got {other:?}"
            ));
        }
    }
    let (id, seed, waited_started) = started;
    ensure!(
        id == "t-s" && seed == Some(("t-s".to_owned(), TaskStatus::Working)),
        "the started task: id {id}, seed {seed:?}"
    );
    expect_text(
        "the started task's wait",
        waited_started.map(Outcome::Complete),
        "started",
    )?;
    match detailed {
        Ok(task) if task.task.status == TaskStatus::InputRequired => {}
        other => return Err(format!("get: want the input_required task, got {other:?}")),
    }
    updated.map_err(|e| format!("update: {e}"))?;
    expect_text("the resumed task", waited.map(Outcome::Complete), "resumed")?;
    cancelled.map_err(|e| format!("cancel: {e}"))?;
    echoed?;
    Ok(String::new())
}

/// `notifications/tasks` on a subscription opened with `taskIds`: the
/// task's status as an event; one of the wrong shape is `Other`.
pub fn task_status_notifications_reach_the_subscription() -> Result<String, String> {
    let (client, script) = start(tasks_builder(), |peer| {
        let listen = peer.expect("subscriptions/listen")?;
        ensure!(
            params_without_meta(&listen) == json!({ "notifications": { "taskIds": ["t-1"] } }),
            "subscriptions/listen: {listen}"
        );
        ensure!(
            declares_tasks(&listen),
            "the listen does not declare the extension: {listen}"
        );
        let meta = json!({ "io.modelcontextprotocol/subscriptionId": listen["id"] });
        let ack = json!({ "_meta": meta, "notifications": { "taskIds": ["t-1"] } });
        let note = |params: Value| json!({ "jsonrpc": "2.0", "method": "notifications/tasks", "params": params });
        peer.write(&json!({
            "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack
        }));
        let mut working = task("t-1", "working", 10);
        working["_meta"] = meta.clone();
        peer.write(&note(working));
        let mut done = task("t-1", "completed", 10);
        done["_meta"] = meta.clone();
        done["result"] = json!({ "content": [{ "type": "text", "text": "done" }] });
        peer.write(&note(done));
        let mut wrong = task("t-1", "failed", 10);
        wrong["_meta"] = meta;
        peer.write(&note(wrong));
        Ok(())
    })?;
    let filter = SubscriptionFilter {
        task_ids: Some(vec!["t-1".into()]),
        ..SubscriptionFilter::default()
    };
    let mut sub = match client.listen(filter) {
        Ok(sub) => sub,
        Err(e) => {
            let reason = script.finish().err().unwrap_or_default();
            return Err(format!("listen failed: {e} {reason}"));
        }
    };
    ensure!(
        sub.accepted().task_ids == Some(vec!["t-1".to_owned()]),
        "accepted: {:?}",
        sub.accepted()
    );
    let first = next_event("the working status", &mut sub)?;
    let second = next_event("the completed status", &mut sub)?;
    let third = next_event("the malformed status", &mut sub)?;
    let _peer = script.finish()?;
    match first {
        SubscriptionEvent::TaskStatus(task)
            if task.task.task_id == "t-1" && task.task.status == TaskStatus::Working => {}
        other => return Err(format!("want the working status, got {other:?}")),
    }
    match second {
        SubscriptionEvent::TaskStatus(task)
            if task.task.status == TaskStatus::Completed
                && task
                    .result
                    .as_ref()
                    .is_some_and(|r| r.contains_key("content")) => {}
        other => return Err(format!("want the completed status, got {other:?}")),
    }
    match third {
        SubscriptionEvent::Other { method, .. } if method == "notifications/tasks" => {}
        other => {
            return Err(format!(
                "want Other for a failed task without error, got {other:?}"
            ));
        }
    }
    Ok(String::new())
}

/// The review of issue 47 noticed: a task's wait sleeps out the server's
/// poll interval (up to 10 s) between two `tasks/get`, and a `close` meanwhile
/// was seen only at the next poll. Here the server asks for 10 s between
/// polls; `close` comes once the first poll is answered, and the wait must
/// end `Disconnected` within a second or two of it.
pub fn close_wakes_a_task_wait_between_polls() -> Result<String, String> {
    let (polled_tx, polled) = crossbeam_channel::bounded::<()>(1);
    let builder = tasks_builder().close_grace(Duration::from_millis(100));
    let (client, script) = start(builder, move |peer| {
        let call = peer.expect("tools/call")?;
        peer.answer(&call, created("t-long", 10_000));
        let get = expect_task_request(peer, "tasks/get", "t-long")?;
        peer.answer(&get, got("t-long", "working", 10_000, json!({})));
        let _ = polled_tx.send(());
        Ok(())
    })?;
    let start = client
        .start_tool_call(
            "long",
            json!({}),
            RequestOptions::new().timeout(WAIT + WAIT),
        )
        .map_err(|e| format!("the call failed: {e}"))?;
    let ToolCallStart::Task(handle) = start else {
        return Err(format!("want a task, got {start:?}"));
    };
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let waiter = thread::spawn(move || {
        let outcome = handle.wait();
        let _ = done_tx.send((outcome, Instant::now()));
    });
    polled
        .recv_timeout(WAIT)
        .map_err(|_| "the task was never polled".to_owned())?;
    // The answer to the poll reached the wait, which now sleeps: the
    // script's end stays open while the peer is held.
    let _peer = script.finish()?;
    let closing = Instant::now();
    let closed = client.close();
    let ended = done.recv_timeout(Duration::from_secs(20));
    let _ = waiter.join();
    closed.map_err(|e| format!("close failed: {e}"))?;
    let (outcome, at) = ended.map_err(|_| "the wait never ended".to_owned())?;
    let after = at.saturating_duration_since(closing);
    ensure!(
        matches!(outcome, Err(Error::Disconnected)),
        "the wait after close: {outcome:?}"
    );
    ensure!(
        after < Duration::from_secs(2),
        "the wait ended {after:?} after close began, with a poll interval of 10 s"
    );
    Ok(format!("the wait ended {} after close began", ms(after)))
}
