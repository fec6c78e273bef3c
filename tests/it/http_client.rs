//! The client over Streamable HTTP (features `http` and `client`): our
//! client against our own server on a loopback port, in both eras, and
//! against a scripted legacy peer on a plain `TcpListener` that records
//! every request it gets.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use mcp_stdio::types::{
    CallToolResult, ElicitRequestParams, ElicitResult, SubscriptionFilter, Tool,
};
use mcp_stdio::{
    Client, Era, EraPolicy, Error, HttpOptions, Outcome, RequestOptions, Server, StopHandle,
    SubscriptionEnd, SubscriptionEvent, ToolCallStart,
};
use serde_json::{Value, json};

use crate::support::WAIT;

/// Our server on a loopback port, stopped when dropped.
struct Http {
    url: String,
    stop: StopHandle,
    thread: Option<JoinHandle<Result<(), Error>>>,
}

impl Drop for Http {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(server: Server) -> Http {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = server.stop_handle();
    let thread = std::thread::spawn(move || server.serve_http(listener, HttpOptions::new()));
    Http {
        url,
        stop,
        thread: Some(thread),
    }
}

#[test]
fn a_modern_client_calls_tools_reads_progress_and_lists_over_http() {
    let http = serve(crate::everything::build());
    let client = Client::builder().connect_url(&http.url).unwrap();
    assert!(
        matches!(client.era(), Era::Modern { .. }),
        "{:?}",
        client.era()
    );
    let echoed = client.call("echo", json!({ "text": "héllo" })).unwrap();
    assert_eq!(echoed.text_content(), "héllo");
    assert!(client.tools().any(|t| t.unwrap().name == "slow"));
    let (tx, rx) = crossbeam_channel::unbounded();
    let options = RequestOptions::new().on_progress(move |p| {
        let _ = tx.send(p.progress);
    });
    let done = client
        .call_tool_with("progress", json!({ "steps": 3 }), options)
        .unwrap();
    assert!(matches!(done, Outcome::Complete(r) if r.text_content() == "done"));
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
    // resources/read carries its URI in Mcp-Name, which the server checks.
    let read = client.read_resource("mem://counter").unwrap();
    assert!(matches!(read, Outcome::Complete(_)));
    // Many threads at once, each on a connection of its own.
    std::thread::scope(|s| {
        for n in 0..8 {
            let client = &client;
            s.spawn(move || {
                let sum = client.call("add", json!({ "a": n, "b": 1 })).unwrap();
                assert_eq!(sum.text_content(), (n + 1).to_string());
            });
        }
    });
    assert_eq!(client.close().unwrap(), None);
}

#[test]
fn mrtr_and_tasks_work_over_http() {
    let http = serve(crate::everything::build());
    let client = Client::builder()
        .tasks(true)
        .on_elicitation(|_| {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(content))
        })
        .connect_url(&http.url)
        .unwrap();
    let asked = client.call("ask", json!({})).unwrap();
    assert_eq!(asked.text_content(), "Nice to meet you, Ada!");
    match client
        .start_tool_call(
            "slow_compute",
            json!({ "seconds": 0, "label": "x" }),
            RequestOptions::new(),
        )
        .unwrap()
    {
        ToolCallStart::Task(task) => {
            let result = task.wait_timeout(WAIT).unwrap();
            assert!(result.is_error != Some(true), "{result:?}");
        }
        ToolCallStart::Immediate(outcome) => panic!("not a task: {outcome:?}"),
    }
}

/// A server with a tool `held` that reports when it starts and whether
/// its token tripped (its stream closed) within `WAIT`.
fn with_held_tool() -> (Http, Receiver<()>, Receiver<bool>) {
    let (started_tx, started) = crossbeam_channel::unbounded();
    let (tripped_tx, tripped) = crossbeam_channel::unbounded();
    let server = crate::everything::build_with(move |b| {
        b.tool(
            Tool::new("held", "Waits for its cancellation."),
            move |ctx, _: Value| {
                let _ = started_tx.send(());
                let _ = tripped_tx.send(ctx.wait_cancelled(WAIT));
                Ok(CallToolResult::text("not cancelled"))
            },
        )
    });
    (serve(server), started, tripped)
}

// req: streamable-http:closing-the-stream-cancels
#[test]
fn cancelling_closes_the_stream_and_trips_the_handler() {
    let (http, started, tripped) = with_held_tool();
    let client = Client::builder().connect_url(&http.url).unwrap();
    let pending = client
        .start_request(
            "tools/call",
            json!({ "name": "held", "arguments": {} }),
            RequestOptions::new(),
        )
        .unwrap();
    started.recv_timeout(WAIT).unwrap();
    pending.cancel(Some("no longer needed"));
    assert_eq!(tripped.recv_timeout(WAIT), Ok(true));
    // The client goes on working on its other connections.
    let echoed = client.call("echo", json!({ "text": "after" })).unwrap();
    assert_eq!(echoed.text_content(), "after");
}

#[test]
fn a_timeout_closes_the_stream_and_trips_the_handler() {
    let (http, started, tripped) = with_held_tool();
    let client = Client::builder()
        .request_timeout(Duration::from_millis(200))
        .connect_url(&http.url)
        .unwrap();
    let timed_out = client.call("held", json!({}));
    assert!(matches!(timed_out, Err(Error::Timeout)), "{timed_out:?}");
    started.recv_timeout(WAIT).unwrap();
    assert_eq!(tripped.recv_timeout(WAIT), Ok(true));
}

/// A call of a client that declares the Tasks extension, given up on,
/// has its stream shut for sending only and read on for a late answer
/// (`late.rs`): our server takes that half-close as the cancellation at
/// once, not when the client lets the stream go (here 30 s after the
/// give-up: the call's timeout, `reset_timeout_on_progress` cutting the
/// wait at 200 ms).
#[test]
fn a_give_up_that_reads_on_for_a_late_task_still_trips_the_handler_at_once() {
    let (http, started, tripped) = with_held_tool();
    let client = Client::builder()
        .tasks(true)
        .connect_url(&http.url)
        .unwrap();
    let options = RequestOptions::new()
        .timeout(Duration::from_secs(30))
        .reset_timeout_on_progress(Duration::from_millis(200));
    let timed_out = client.call_tool_with("held", json!({}), options);
    assert!(matches!(timed_out, Err(Error::Timeout)), "{timed_out:?}");
    started.recv_timeout(WAIT).unwrap();
    assert_eq!(tripped.recv_timeout(WAIT), Ok(true));
    let echoed = client.call("echo", json!({ "text": "after" })).unwrap();
    assert_eq!(echoed.text_content(), "after");
}

#[test]
fn listen_over_http_is_a_long_stream_that_gets_published_updates() {
    let http = serve(crate::everything::build());
    let client = Client::builder().connect_url(&http.url).unwrap();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://counter".into()]),
        ..Default::default()
    };
    let mut sub = client.listen(filter).unwrap();
    client.call("bump", json!({})).unwrap();
    let event = sub.recv_timeout(WAIT).unwrap();
    assert_eq!(
        event,
        Some(SubscriptionEvent::ResourceUpdated {
            uri: "mem://counter".into()
        })
    );
    sub.cancel();
    assert_eq!(
        client
            .call("echo", json!({ "text": "after" }))
            .unwrap()
            .text_content(),
        "after"
    );
}

/// A TCP forwarder to `target` whose connections can all be cut at once
/// (a server killed, as a load balancer in front of it shows it: the
/// stream ends, no answer).
struct Cuttable {
    addr: SocketAddr,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Cuttable {
    fn to(target: &str) -> Cuttable {
        let target = target
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(Mutex::new(Vec::new()));
        let all = Arc::clone(&open);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                all.lock()
                    .unwrap()
                    .extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Cuttable { addr, open }
    }

    fn cut(&self) {
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// A listen whose stream breaks before its answer (its replica killed
/// behind a load balancer: `tests/scale_out_faults.sh`) ends
/// `Disconnected`: the server did not end it, and a client that reopens
/// listens on a dropped connection must be told so. It ended `Closed`,
/// with the error the transport made up taken for the server's answer.
#[test]
fn a_listen_whose_stream_is_cut_ends_disconnected() {
    let http = serve(crate::everything::build());
    let cuttable = Cuttable::to(&http.url);
    let client = Client::builder()
        .connect_url(&format!("http://{}/mcp", cuttable.addr))
        .unwrap();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://counter".into()]),
        ..Default::default()
    };
    let mut sub = client.listen(filter).unwrap();
    cuttable.cut();
    let end = loop {
        match sub.recv_timeout(WAIT) {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the cut listen did not end in {WAIT:?}"),
            Err(end) => break end,
        }
    };
    assert_eq!(end, SubscriptionEnd::Disconnected);
}

#[test]
fn a_legacy_client_initializes_over_http_against_our_server() {
    let http = serve(crate::everything::build());
    let client = connect_legacy(&http.url);
    assert!(
        matches!(client.era(), Era::Legacy { .. }),
        "{:?}",
        client.era()
    );
    assert_eq!(
        client
            .call("echo", json!({ "text": "old" }))
            .unwrap()
            .text_content(),
        "old"
    );
    client.close().unwrap();
}

/// Our client and our server over HTTP in the legacy era: the client opens
/// the session's GET stream (once initialized, on a thread of its own), on
/// which list changes and resource updates reach `listen`, each once.
#[test]
fn a_legacy_client_hears_list_changes_and_updates_on_our_servers_get_stream() {
    let http = serve(crate::everything::build());
    let client = connect_legacy(&http.url);
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["mem://counter".into()]),
        ..Default::default()
    };
    let mut sub = client.listen(filter).unwrap();
    // A list change goes on the GET stream only: heard once it is open.
    let heard = (0..50).any(|_| {
        client.call("toggle_tool", json!({})).unwrap();
        sub.recv_timeout(Duration::from_millis(100)).unwrap()
            == Some(SubscriptionEvent::ToolsListChanged)
    });
    assert!(heard, "no tools/list_changed on the GET stream");
    client.call("bump", json!({})).unwrap();
    assert_eq!(
        sub.recv_timeout(WAIT).unwrap(),
        Some(SubscriptionEvent::ResourceUpdated {
            uri: "mem://counter".into()
        })
    );
    assert_eq!(
        sub.recv_timeout(Duration::from_millis(200)).unwrap(),
        None,
        "the update came once (the bump's POST stream carried none)"
    );
    client.close().unwrap();
}

#[test]
fn a_refused_connection_is_an_error_that_names_the_url() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let e = Client::builder()
        .probe_timeout(WAIT)
        .connect_url(&url)
        .unwrap_err();
    assert!(e.to_string().contains(&url), "{e}");
    // With the feature, tests/it/https.rs reaches https:// URLs.
    #[cfg(not(feature = "https"))]
    {
        let tls = Client::connect_url("https://example.com/mcp").unwrap_err();
        assert!(tls.to_string().contains("`https` feature"), "{tls}");
    }
}

/// One request the scripted peer got.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    verb: String,
    headers: HashMap<String, String>,
    pub(crate) body: Value,
}

/// Reads one request from `conn`; `None` at the connection's end.
fn read_request(conn: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    if conn.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let verb = line.split(' ').next()?.to_owned();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        conn.read_line(&mut line).ok()?;
        let field = line.trim_end();
        if field.is_empty() {
            break;
        }
        let (name, value) = field.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let len: usize = headers
        .get("content-length")
        .map_or(0, |l| l.parse().unwrap());
    let mut body = vec![0; len];
    conn.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Seen {
        verb,
        headers,
        body,
    })
}

pub(crate) fn respond(conn: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).unwrap();
    conn.write_all(body.as_bytes()).unwrap();
}

/// A legacy (2025-11-25) Streamable HTTP server with sessions, as the
/// Python SDK's: a request without the session is a `400` with a text
/// body. `tools/call` of `greet` answers on an SSE stream that first asks
/// the client to elicit and waits for the answer's POST; of `resumed`, on
/// a stream that ends after a priming event (`id: e-7`, `retry: 50`), the
/// answer coming on the GET that resumes it from `e-7`; of `vanish`, on a
/// stream that ends with nothing. The standalone GET stream sends what
/// the test pushes on `push` (and a comment every 100 ms); the client's
/// answers to the server's requests (`greet`'s ask, pushed ones) go to
/// `answered`.
struct Scripted {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    push: Sender<Value>,
    answered: Receiver<Value>,
}

fn scripted_legacy() -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (answered_tx, answered_rx): (Sender<Value>, Receiver<Value>) =
        crossbeam_channel::unbounded();
    let (push_tx, push_rx): (Sender<Value>, Receiver<Value>) = crossbeam_channel::unbounded();
    // The id of `resumed`'s call, for the GET that resumes its stream.
    let (resume_tx, resume_rx) = crossbeam_channel::unbounded::<Value>();
    let answers = answered_rx.clone();
    let record = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let (seen, answered_tx, answered_rx, push_rx) = (
                record.clone(),
                answered_tx.clone(),
                answers.clone(),
                push_rx.clone(),
            );
            let (resume_tx, resume_rx) = (resume_tx.clone(), resume_rx.clone());
            std::thread::spawn(move || {
                let mut writer = conn.try_clone().unwrap();
                let mut reader = BufReader::new(conn);
                while let Some(req) = read_request(&mut reader) {
                    seen.lock().unwrap().push(req.clone());
                    let session_ok =
                        req.headers.get("mcp-session-id").map(String::as_str) == Some("s-1");
                    let method = req.body["method"].as_str().unwrap_or("");
                    let id = req.body["id"].clone();
                    let events = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
                    if req.verb == "DELETE" {
                        respond(&mut writer, "200 OK", "", "");
                    } else if method == "initialize" {
                        let result = json!({ "jsonrpc": "2.0", "id": id, "result": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": { "tools": { "listChanged": true } },
                            "serverInfo": { "name": "scripted", "version": "1" } } });
                        respond(
                            &mut writer,
                            "200 OK",
                            "Content-Type: application/json\r\nMcp-Session-Id: s-1\r\n",
                            &result.to_string(),
                        );
                    } else if !session_ok {
                        respond(
                            &mut writer,
                            "400 Bad Request",
                            // As the Python SDK does: a session named on a
                            // refusal, which the client must not adopt.
                            "Content-Type: text/plain\r\nMcp-Session-Id: refused\r\n",
                            "Bad Request: Missing session ID",
                        );
                    } else if req.verb == "GET" {
                        writer.write_all(events.as_bytes()).unwrap();
                        if req.headers.get("last-event-id").map(String::as_str) == Some("e-7") {
                            // The resumed stream of `resumed`'s call.
                            let id = resume_rx.recv_timeout(WAIT).unwrap();
                            let result = json!({ "jsonrpc": "2.0", "id": id, "result": {
                                "content": [{ "type": "text", "text": "resumed" }] } });
                            let _ =
                                writer.write_all(format!("id: e-8\ndata: {result}\n\n").as_bytes());
                            return;
                        }
                        if !req.headers.contains_key("last-event-id") {
                            // The first standalone GET: a priming event,
                            // then closed, as a server that has the client
                            // poll does (the client is to come back after
                            // `retry` with `Last-Event-ID: g-1`).
                            let _ = writer.write_all(b"id: g-1\nretry: 50\ndata: \n\n");
                            return;
                        }
                        loop {
                            let event = match push_rx.recv_timeout(Duration::from_millis(100)) {
                                Ok(message) => format!("data: {message}\n\n"),
                                Err(_) => ": ping\n\n".to_owned(),
                            };
                            if writer.write_all(event.as_bytes()).is_err() {
                                return;
                            }
                        }
                    } else if req.body.get("method").is_none() {
                        let _ = answered_tx.send(req.body.clone());
                        respond(&mut writer, "202 Accepted", "", "");
                    } else if method == "tools/call" {
                        writer.write_all(events.as_bytes()).unwrap();
                        match req.body["params"]["name"].as_str() {
                            Some("resumed") => {
                                let priming = "id: e-7\nretry: 50\ndata: \n\n";
                                writer.write_all(priming.as_bytes()).unwrap();
                                resume_tx.send(id.clone()).unwrap();
                            }
                            Some("vanish") => {}
                            name => {
                                // `same-id` asks with the call's own id: the
                                // two directions' ids are apart (JSON-RPC).
                                let ask_id = match name {
                                    Some("same-id") => id.clone(),
                                    _ => json!("s1"),
                                };
                                let ask = json!({ "jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create",
                                    "params": { "mode": "form", "message": "name?", "requestedSchema": { "type": "object", "properties": {} } } });
                                writer
                                    .write_all(
                                        format!("event: message\ndata: {ask}\n\n").as_bytes(),
                                    )
                                    .unwrap();
                                let answer = answered_rx.recv_timeout(WAIT).unwrap();
                                let name = answer["result"]["content"]["name"]
                                    .as_str()
                                    .unwrap_or("?")
                                    .to_owned();
                                let result = json!({ "jsonrpc": "2.0", "id": id, "result": {
                                    "content": [{ "type": "text", "text": format!("hi {name}") }] } });
                                writer
                                    .write_all(format!("data: {result}\n\n").as_bytes())
                                    .unwrap();
                            }
                        }
                        return;
                    } else if id.is_null() {
                        respond(&mut writer, "202 Accepted", "", "");
                    } else {
                        let result = json!({ "jsonrpc": "2.0", "id": id, "result": {} });
                        respond(
                            &mut writer,
                            "200 OK",
                            "Content-Type: application/json\r\n",
                            &result.to_string(),
                        );
                    }
                }
            });
        }
    });
    Scripted {
        addr,
        seen,
        push: push_tx,
        answered: answered_rx,
    }
}

/// The client's answer to a legacy server's request is no request of the
/// client's: it waits for no answer, and its id, which may be that of one
/// of the client's requests (each side numbers its own), names nothing
/// else in flight. Before: the answer's POST was taken for a request of
/// that id, and its `202` failed the client's call of the same id with
/// "the server ended the response stream without answering".
#[test]
fn an_answer_with_the_id_of_a_call_in_flight_is_not_taken_for_it() {
    let scripted = scripted_legacy();
    let client = Client::builder()
        .on_elicitation(|_| {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(content))
        })
        .connect_url(&format!("http://{}/mcp", scripted.addr))
        .unwrap();
    for _ in 0..5 {
        let result = client.call("same-id", json!({})).unwrap();
        assert_eq!(result.text_content(), "hi Ada");
    }
    client.close().unwrap();
}

#[test]
fn a_legacy_session_is_probed_echoed_answered_and_deleted() {
    let scripted = scripted_legacy();
    let client = Client::builder()
        .header("X-Test", "yes")
        .on_elicitation(|params| {
            assert!(matches!(params, ElicitRequestParams::Form(_)));
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(content))
        })
        .connect_url(&format!("http://{}/mcp", scripted.addr))
        .unwrap();
    assert_eq!(
        client.era(),
        Era::Legacy {
            version: "2025-11-25".into()
        }
    );
    assert_eq!(
        client.call("greet", json!({})).unwrap().text_content(),
        "hi Ada"
    );
    client.close().unwrap();
    let seen = scripted.seen.lock().unwrap().clone();
    // The standalone GET stream runs beside the POSTs (its own test).
    let (gets, seen): (Vec<Seen>, Vec<Seen>) = seen.into_iter().partition(|s| s.verb == "GET");
    let methods: Vec<String> = seen
        .iter()
        .map(|s| match s.body["method"].as_str() {
            Some(m) => m.to_owned(),
            None if s.verb == "DELETE" => "DELETE".to_owned(),
            None => "response".to_owned(),
        })
        .collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call",
            "response",
            "DELETE"
        ]
    );
    // The probe carried the modern headers; everything after initialize
    // echoes the session and the agreed version.
    assert_eq!(seen[0].headers["mcp-method"], "server/discover");
    assert_eq!(seen[0].headers["mcp-protocol-version"], "2026-07-28");
    assert_eq!(
        seen[0].headers["accept"],
        "application/json, text/event-stream"
    );
    for s in seen[2..].iter().chain(&gets) {
        assert_eq!(s.headers["mcp-session-id"], "s-1", "{s:?}");
        assert_eq!(s.headers["mcp-protocol-version"], "2025-11-25", "{s:?}");
        assert_eq!(s.headers["x-test"], "yes");
    }
    assert_eq!(seen[3].headers["mcp-name"], "greet");
    assert_eq!(seen[4].body["id"], "s1");
}

/// Spec 2025-11-25 basic/transports, "Listening for Messages from the
/// Server": once initialized, the client opens a GET stream, on which the
/// server's list changes reach a `listen` and its own requests are
/// answered by the input handlers (with a POST). The scripted server
/// closes the first GET after a priming event: the client comes back
/// after its `retry` with `Last-Event-ID`.
#[test]
fn a_legacy_server_talks_on_its_get_stream() {
    let scripted = scripted_legacy();
    let client = Client::builder()
        .on_roots(|| {
            Ok(serde_json::from_value(json!({ "roots": [{ "uri": "file:///work" }] })).unwrap())
        })
        .connect_url(&format!("http://{}/mcp", scripted.addr))
        .unwrap();
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..SubscriptionFilter::default()
    };
    let mut subscription = client.listen(filter).unwrap();
    scripted
        .push
        .send(json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }))
        .unwrap();
    let event = subscription.recv_timeout(WAIT).unwrap();
    assert_eq!(event, Some(SubscriptionEvent::ToolsListChanged));
    scripted
        .push
        .send(json!({ "jsonrpc": "2.0", "id": "r1", "method": "roots/list" }))
        .unwrap();
    let answer = scripted.answered.recv_timeout(WAIT).unwrap();
    assert_eq!(answer["id"], "r1");
    assert_eq!(answer["result"]["roots"][0]["uri"], "file:///work");
    drop(subscription);
    client.close().unwrap();
    let seen = scripted.seen.lock().unwrap().clone();
    let gets: Vec<&Seen> = seen.iter().filter(|s| s.verb == "GET").collect();
    assert_eq!(gets[0].headers["accept"], "text/event-stream");
    assert_eq!(gets[0].headers.get("last-event-id"), None);
    assert_eq!(gets[1].headers["last-event-id"], "g-1", "{gets:?}");
}

/// Spec 2025-11-25 basic/transports, "Resumability and Redelivery": a
/// request's stream that ends before its answer is resumed with a GET
/// carrying `Last-Event-ID`, after the `retry` the server asked for, and
/// the answer arriving there is the call's.
#[test]
fn a_legacy_stream_that_ends_early_is_resumed_from_its_last_event() {
    let scripted = scripted_legacy();
    let client = Client::connect_url(&format!("http://{}/mcp", scripted.addr)).unwrap();
    let started = std::time::Instant::now();
    let answer = client.call("resumed", json!({})).unwrap();
    assert_eq!(answer.text_content(), "resumed");
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "retry: 50 waited"
    );
    client.close().unwrap();
    let seen = scripted.seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|s| s.verb == "GET"
            && s.headers.get("last-event-id").map(String::as_str) == Some("e-7")),
        "{seen:?}"
    );
}

/// A stream that ends without the answer, with nothing to resume from, is
/// an error for its call at once, not a wait for the timeout.
#[test]
fn a_stream_that_ends_without_the_answer_is_an_error() {
    let scripted = scripted_legacy();
    let client = Client::builder()
        .request_timeout(Duration::from_secs(30))
        .connect_url(&format!("http://{}/mcp", scripted.addr))
        .unwrap();
    let started = std::time::Instant::now();
    let e = client.call("vanish", json!({})).unwrap_err();
    assert!(
        e.to_string()
            .contains("ended the response stream without answering"),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    client.close().unwrap();
}

// req: streamable-http:x-mcp-header
#[test]
fn marked_arguments_go_in_param_headers_learned_again_after_a_mismatch() {
    let server = crate::everything::build();
    let region = Tool::new("regional", "Returns its region.").input_schema(json!({
        "type": "object",
        "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
        "required": ["region"]
    }));
    server.add_tool(region, |_ctx, args: Value| {
        let region = args["region"].as_str().unwrap_or_default();
        Ok(CallToolResult::text(format!("region: {region}")))
    });
    let http = serve(server);
    let client = Client::builder().connect_url(&http.url).unwrap();
    // Unlisted, the client does not know the mark: the server refuses
    // (-32020), and the client lists the tools again and retries, as the
    // transport page says it SHOULD.
    let answer = client.call("regional", json!({ "region": "eu" })).unwrap();
    assert_eq!(answer.text_content(), "region: eu");
    assert!(client.tools().any(|t| t.unwrap().name == "regional"));
    let answer = client
        .call("regional", json!({ "region": "日本" }))
        .unwrap();
    assert_eq!(answer.text_content(), "region: 日本");
}

// req: streamable-http:x-mcp-header-invalid
#[test]
fn a_tool_whose_marks_are_invalid_is_left_out_of_the_list_with_a_note() {
    let server = crate::everything::build();
    let marked = |name: &str, property: Value| {
        Tool::new(name, "Marked.").input_schema(json!({
            "type": "object", "properties": { "x": property } }))
    };
    let bad = [
        (
            "on_a_number",
            json!({ "type": "number", "x-mcp-header": "X" }),
        ),
        (
            "not_a_token",
            json!({ "type": "string", "x-mcp-header": "X Y" }),
        ),
        (
            "in_items",
            json!({ "type": "array", "items": { "type": "string", "x-mcp-header": "X" } }),
        ),
    ];
    for (name, property) in bad
        .iter()
        .cloned()
        .chain([("fine", json!({ "type": "string", "x-mcp-header": "X" }))])
    {
        server.add_tool(marked(name, property), |_ctx, _: Value| {
            Ok(CallToolResult::text("ran"))
        });
    }
    let http = serve(server);
    let notes = Arc::new(Mutex::new(Vec::new()));
    let seen = notes.clone();
    let client = Client::builder()
        .trace(move |note| seen.lock().unwrap().push(note.to_owned()))
        .connect_url(&http.url)
        .unwrap();
    let names: Vec<String> = client.tools().map(|t| t.unwrap().name).collect();
    assert!(names.contains(&"fine".to_owned()), "{names:?}");
    for (name, _) in &bad {
        assert!(
            !names.contains(&name.to_string()),
            "{name} listed: {names:?}"
        );
    }
    // The tool left out can still be called by name; the rest work as listed.
    assert_eq!(
        client
            .call("fine", json!({ "x": "a" }))
            .unwrap()
            .text_content(),
        "ran"
    );
    client.close().unwrap();
    let notes = notes.lock().unwrap();
    for (name, _) in &bad {
        assert!(
            notes
                .iter()
                .any(|n| n.contains(&format!("left out the tool {name:?}"))),
            "{name}: {notes:#?}"
        );
    }
}

// req: streamable-http:backward-compatibility
#[test]
fn a_400_with_a_modern_error_is_answered_not_fallen_back_from() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let mut writer = conn.try_clone().unwrap();
            let mut reader = BufReader::new(conn);
            while let Some(req) = read_request(&mut reader) {
                record.lock().unwrap().push(req.body["method"].clone());
                let error = json!({ "jsonrpc": "2.0", "id": req.body["id"], "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": { "supported": ["2099-01-01"], "requested": "2026-07-28" } } });
                let headers = "Content-Type: application/json\r\n";
                respond(&mut writer, "400 Bad Request", headers, &error.to_string());
            }
        }
    });
    let e = Client::builder()
        .connect_url(&format!("http://{addr}/mcp"))
        .unwrap_err();
    assert!(
        e.to_string().contains("no protocol version in common"),
        "{e}"
    );
    assert_eq!(*seen.lock().unwrap(), [json!("server/discover")]);
}

// req: streamable-http:backward-compatibility
/// Issue 49, item 4: a probe the server refused for reasons of its own (a
/// `500`, a body limit's `413`) was taken for a legacy server's refusal,
/// and `initialize` sent; a `405` without a body is a legacy server's
/// answer, and is fallen back from.
#[test]
fn a_probe_refused_for_the_servers_own_reasons_is_no_era() {
    for (status, legacy) in [
        ("500 Internal Server Error", false),
        ("405 Method Not Allowed", true),
    ] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let addr = scripted(move |req, writer| {
            let method = req.body["method"].as_str().unwrap_or("").to_owned();
            record.lock().unwrap().push(method.clone());
            if method == "initialize" {
                let result = json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": { "name": "scripted", "version": "1" } });
                answer_json(req, writer, "", result);
            } else if method == "server/discover" {
                respond(writer, status, "Content-Type: text/plain\r\n", "no");
            } else {
                respond(writer, "202 Accepted", "", "");
            }
            true
        });
        let res = Client::builder().connect_url(&format!("http://{addr}/mcp"));
        let methods = seen.lock().unwrap().clone();
        if legacy {
            let client = res.unwrap();
            assert!(matches!(client.era(), mcp_stdio::Era::Legacy { .. }));
            assert_eq!(methods[..2], ["server/discover", "initialize"]);
        } else {
            let e = res.unwrap_err();
            assert!(e.is_transport_failure(), "{e}");
            assert!(e.to_string().contains("answered HTTP 500"), "{e}");
            assert_eq!(methods, ["server/discover"]);
        }
    }
}

/// A peer on a plain `TcpListener` that answers each request with
/// `answer(request, writer)`, one thread per connection; whatever it does
/// with the connection after (keep it open, close it) is `answer`'s.
pub(crate) fn scripted(
    answer: impl Fn(&Seen, &mut TcpStream) -> bool + Send + Sync + 'static,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let answer = Arc::clone(&answer);
            std::thread::spawn(move || {
                let mut writer = conn.try_clone().unwrap();
                let mut reader = BufReader::new(conn);
                while let Some(req) = read_request(&mut reader) {
                    if !answer(&req, &mut writer) {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The JSON answer `result` to request `req`.
pub(crate) fn answer_json(req: &Seen, writer: &mut TcpStream, headers: &str, result: Value) {
    let body = json!({ "jsonrpc": "2.0", "id": req.body["id"], "result": result });
    respond(
        writer,
        "200 OK",
        &format!("Content-Type: application/json\r\n{headers}"),
        &body.to_string(),
    );
}

/// A scripted modern server's `DiscoverResult` (2026-07-28, tools), naming
/// the server `name`: its answer to `server/discover`.
pub(crate) fn discover_json(name: &str) -> Value {
    json!({ "supportedVersions": ["2026-07-28"],
        "capabilities": { "tools": {} },
        "serverInfo": { "name": name, "version": "1" },
        "resultType": "complete" })
}

/// A scripted legacy server's `InitializeResult` (2025-11-25, tools),
/// naming the server `name`: its answer to `initialize`.
pub(crate) fn initialize_json(name: &str) -> Value {
    json!({ "protocolVersion": "2025-11-25",
        "capabilities": { "tools": {} },
        "serverInfo": { "name": name, "version": "1" } })
}

/// A client that speaks legacy only (`EraPolicy::LegacyOnly`), connected
/// to `url`.
fn connect_legacy(url: &str) -> Client {
    Client::builder()
        .era(EraPolicy::LegacyOnly)
        .connect_url(url)
        .unwrap()
}

/// Issue 47, item 11: a notification's POST waits a bounded time, even
/// for a server that answers it with an event stream it keeps going (a
/// keep-alive comment every 100 ms: no read timeout ever fires). The
/// legacy `notifications/initialized` is POSTed by the caller of
/// `connect_url`, which returned only once that stream ended: here after
/// 30 s (`WAIT * 3`), when the server let go. Now within 10 s of reading
/// (`ACCEPT_TIMEOUT`).
#[test]
fn a_notification_answered_with_an_endless_stream_is_let_go() {
    let addr = scripted(|req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "initialize" => answer_json(
                req,
                writer,
                "Mcp-Session-Id: s-1\r\n",
                initialize_json("chatty"),
            ),
            "notifications/initialized" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
                writer.write_all(head.as_bytes()).unwrap();
                let started = std::time::Instant::now();
                while started.elapsed() < WAIT * 3 {
                    if writer.write_all(b": ping\n\n").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                return false;
            }
            _ if req.verb == "GET" => respond(writer, "405 Method Not Allowed", "", ""),
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let started = std::time::Instant::now();
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(15), "connected after {took:?}");
    let _ = client.close();
}

/// Issue 47, item 11: a server that never answers one of the client's
/// notifications holds nothing else. A legacy server takes the client's
/// `notifications/cancelled` (sent when a call times out) and never
/// answers that POST; the next call is answered all the same. Before, the
/// cancellation was POSTed on the link's writer thread, with no timeout,
/// and every later message waited behind it: the next call timed out.
#[test]
fn a_notification_the_server_never_answers_holds_up_no_later_call() {
    let addr = scripted(|req, writer| {
        let method = req.body["method"].as_str().unwrap_or("");
        match method {
            "initialize" => answer_json(
                req,
                writer,
                "Mcp-Session-Id: s-1\r\n",
                initialize_json("stuck"),
            ),
            "tools/call" if req.body["params"]["name"] == "slow" => {
                // An event stream that never answers: the client times out.
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
                writer.write_all(head.as_bytes()).unwrap();
                std::thread::sleep(WAIT);
                return false;
            }
            "tools/call" => answer_json(
                req,
                writer,
                "",
                json!({ "content": [{ "type": "text", "text": "fine" }] }),
            ),
            // Read, never answered.
            "notifications/cancelled" => {
                std::thread::sleep(WAIT * 2);
                return false;
            }
            _ if req.verb == "GET" => respond(writer, "405 Method Not Allowed", "", ""),
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    let slow = client.call_tool_with(
        "slow",
        json!({}),
        RequestOptions::new().timeout(Duration::from_millis(200)),
    );
    assert!(matches!(slow, Err(Error::Timeout)), "{slow:?}");
    let started = std::time::Instant::now();
    let fine = client.call_tool_with(
        "echo",
        json!({}),
        RequestOptions::new().timeout(Duration::from_secs(5)),
    );
    assert!(
        matches!(&fine, Ok(Outcome::Complete(r)) if r.text_content() == "fine"),
        "{fine:?} after {:?}",
        started.elapsed()
    );
}

/// Issue 47, item 11: a response stream the server leaves open after the
/// answer is closed by the client once it has the answer (a thread and a
/// socket each otherwise, until the client closes). The scripted modern
/// server answers `tools/call` on an event stream it never ends, and
/// waits for the client to close the connection. Before, the client read
/// on until `close`.
#[test]
fn a_stream_left_open_after_its_answer_is_closed_by_the_client() {
    let (closed_tx, closed) = crossbeam_channel::unbounded::<bool>();
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => answer_json(req, writer, "", discover_json("open")),
            "tools/call" => {
                let result = json!({ "jsonrpc": "2.0", "id": req.body["id"], "result": {
                    "content": [{ "type": "text", "text": "answered" }],
                    "resultType": "complete" } });
                let stream = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\ndata: {result}\n\n\r\n",
                    format!("data: {result}\n\n").len()
                );
                writer.write_all(stream.as_bytes()).unwrap();
                // Never ended: does the client let go?
                writer.set_read_timeout(Some(WAIT)).unwrap();
                let mut byte = [0u8; 1];
                let _ = closed_tx.send(matches!(writer.read(&mut byte), Ok(0)));
                return false;
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = Client::builder()
        .era(EraPolicy::ModernOnly)
        .connect_url(&format!("http://{addr}/mcp"))
        .unwrap();
    for _ in 0..3 {
        let answered = client.call("echo", json!({})).unwrap();
        assert_eq!(answered.text_content(), "answered");
        assert!(
            closed.recv_timeout(WAIT + Duration::from_secs(1)).unwrap(),
            "the client kept the stream open after its answer"
        );
    }
}

/// A scripted modern server whose `tools/call` answers with task
/// `task_id` only once the client's side of the stream has ended (its
/// give-up) or after `WAIT`, and which sends each `tasks/cancel`'s task id
/// to `cancelled`: a task made just as the call was given up on.
pub(crate) fn late_task_server(task_id: &'static str, cancelled_tx: Sender<Value>) -> SocketAddr {
    scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => answer_json(req, writer, "", discover_json("late")),
            "tools/call" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
                writer.write_all(head.as_bytes()).unwrap();
                // Until the client gives up (its side of the stream ends).
                writer.set_read_timeout(Some(WAIT)).unwrap();
                let _ = writer.read(&mut [0u8; 1]);
                let created = json!({ "jsonrpc": "2.0", "id": req.body["id"], "result": {
                    "taskId": task_id, "status": "working",
                    "createdAt": "2026-07-28T10:30:00.000Z",
                    "lastUpdatedAt": "2026-07-28T10:30:00.000Z",
                    "ttlMs": 60000, "pollIntervalMs": 20, "resultType": "task" } });
                let event = format!("data: {created}\n\n");
                let chunk = format!("{:x}\r\n{event}\r\n0\r\n\r\n", event.len());
                let _ = writer.write_all(chunk.as_bytes());
                return false;
            }
            "tasks/cancel" => {
                let _ = cancelled_tx.send(req.body["params"]["taskId"].clone());
                answer_json(req, writer, "", json!({ "resultType": "complete" }));
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    })
}

/// A `tools/call` of a client that declares the Tasks extension, given up
/// at its timeout, whose answer (a task) the server wrote as the stream's
/// close reached it: the answer crosses the cancellation, and the client
/// still reads it on the stream and cancels the task (`tasks/cancel`),
/// which nobody could otherwise ever poll or cancel. The scripted modern
/// server writes the `CreateTaskResult` once the client's side of the
/// stream has ended (or after `WAIT`). Before, the give-up shut the stream
/// at once, the answer was never read, and the task ran on, unknown.
#[test]
fn a_task_made_as_a_call_over_http_gave_up_is_cancelled() {
    let (cancelled_tx, cancelled) = crossbeam_channel::unbounded::<Value>();
    let addr = late_task_server("t-late", cancelled_tx);
    let client = Client::builder()
        .era(EraPolicy::ModernOnly)
        .tasks(true)
        .connect_url(&format!("http://{addr}/mcp"))
        .unwrap();
    let called = client.call_tool_with(
        "slow",
        json!({}),
        RequestOptions::new().timeout(Duration::from_secs(1)),
    );
    assert!(matches!(called, Err(Error::Timeout)), "{called:?}");
    let task = cancelled.recv_timeout(WAIT);
    assert_eq!(
        task.ok(),
        Some(json!("t-late")),
        "the task made as the call gave up was never cancelled"
    );
}

/// The streams held open after a give-up to hear a late answer (see
/// `a_task_made_as_a_call_over_http_gave_up_is_cancelled`) are bounded:
/// at most 16 per client (`late::MAX_HELD`; past it a give-up shuts its
/// stream at once), each let go by its end, the call's timeout after the
/// give-up, though the server neither answers nor closes. The scripted
/// server answers each `tools/call` with an event stream it keeps going
/// with comments after the client's side ended, until a write fails, and
/// reports how long that took. 20 calls give up at once.
#[test]
fn streams_held_after_a_give_up_are_at_most_sixteen_and_each_let_go_at_its_end() {
    const TIMEOUT: Duration = Duration::from_secs(1);
    const CALLS: usize = 20;
    let (lasted_tx, lasted) = crossbeam_channel::unbounded::<Duration>();
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => answer_json(req, writer, "", discover_json("silent")),
            "tools/call" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
                writer.write_all(head.as_bytes()).unwrap();
                writer.set_read_timeout(Some(WAIT)).unwrap();
                let _ = writer.read(&mut [0u8; 1]);
                let ended = std::time::Instant::now();
                let ping = b"a\r\n: ping\n\n\n\r\n";
                while ended.elapsed() < WAIT && writer.write_all(ping).is_ok() {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = lasted_tx.send(ended.elapsed());
                return false;
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = Arc::new(
        Client::builder()
            .era(EraPolicy::ModernOnly)
            .tasks(true)
            .connect_url(&format!("http://{addr}/mcp"))
            .unwrap(),
    );
    let calls: Vec<_> = (0..CALLS)
        .map(|_| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || {
                client.call_tool_with("silent", json!({}), RequestOptions::new().timeout(TIMEOUT))
            })
        })
        .collect();
    for call in calls {
        let called = call.join().unwrap();
        assert!(matches!(called, Err(Error::Timeout)), "{called:?}");
    }
    let mut held = 0;
    for _ in 0..CALLS {
        let took = lasted.recv_timeout(WAIT + WAIT).unwrap();
        assert!(
            took < TIMEOUT + Duration::from_secs(4),
            "a stream given up on was let go {took:?} after the client's side ended"
        );
        if took >= TIMEOUT / 2 {
            held += 1;
        }
    }
    assert!(
        (1..=16).contains(&held),
        "{held} streams held open after their give-up"
    );
}

/// Issue 47, item 10: 2025-11-25 basic/transports, "Session Management":
/// a client that gets `404` for a request carrying its session id MUST
/// start a new session with a new `initialize`. Our server forgets the
/// client's session (at `max_sessions(1)`, a new one pushes it out); the
/// client's next call starts a new session and is answered, and its
/// resource subscription holds on the new session (set again). Before,
/// the client kept the dead id: every later call failed with `404`.
#[test]
fn a_legacy_session_the_server_forgot_is_started_again() {
    let http = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let server = crate::everything::build();
        let stop = server.stop_handle();
        let options = HttpOptions::new().max_sessions(1);
        let thread = std::thread::spawn(move || server.serve_http(listener, options));
        Http {
            url,
            stop,
            thread: Some(thread),
        }
    };
    let client = connect_legacy(&http.url);
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://counter".into()]),
        ..SubscriptionFilter::default()
    };
    let mut subscription = client.listen(filter).unwrap();
    assert_eq!(
        client
            .call("echo", json!({ "text": "one" }))
            .unwrap()
            .text_content(),
        "one"
    );
    // Another client's session pushes this one's out.
    let other = connect_legacy(&http.url);
    other.close().unwrap();
    let again = client.call("echo", json!({ "text": "two" }));
    assert_eq!(again.unwrap().text_content(), "two");
    // The subscription is set again after the call that renewed the
    // session was answered (`Shared::resubscribe`: an update before it is
    // back is not heard), so a bump sent at once may come first (CI run
    // 40): bump until one is heard.
    let deadline = std::time::Instant::now() + WAIT;
    let event = loop {
        client.call("bump", json!({})).unwrap();
        let event = subscription
            .recv_timeout(Duration::from_millis(200))
            .unwrap();
        if event.is_some() || std::time::Instant::now() > deadline {
            break event;
        }
    };
    assert_eq!(
        event,
        Some(SubscriptionEvent::ResourceUpdated {
            uri: "mem://counter".into()
        })
    );
    client.close().unwrap();
}

/// A legacy server with sessions that the test can make forget them: its
/// `initialize` number `refuse` (counting from 1) is `503` (a server at
/// its connection cap), the others open session `s-N`; `initialize` number
/// `hold` waits for `release` after telling `holding`. A request without a
/// session is `400` (as the Python SDK's), one of a session other than the
/// live one `404`. `tools/call` answers `fine`; each is told on `calls`
/// as it arrives, with its session id, and so is each `DELETE` (named
/// `DELETE`).
struct Forgetful {
    url: String,
    live: Arc<Mutex<Option<String>>>,
    calls: Receiver<(String, Option<String>)>,
}

fn forgetful(refuse: usize, hold: usize, holding: Sender<()>, release: Receiver<()>) -> Forgetful {
    let live: Arc<Mutex<Option<String>>> = Arc::default();
    let inits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (calls_tx, calls) = crossbeam_channel::unbounded();
    let state = Arc::clone(&live);
    let addr = scripted(move |req, writer| {
        let session = req.headers.get("mcp-session-id").cloned();
        let method = req.body["method"].as_str().unwrap_or("");
        if req.verb == "GET" {
            respond(writer, "405 Method Not Allowed", "", "");
        } else if req.verb == "DELETE" {
            let _ = calls_tx.send(("DELETE".to_owned(), session.clone()));
            respond(writer, "200 OK", "", "");
        } else if method == "initialize" {
            let n = inits.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            if n == hold {
                let _ = holding.send(());
                let _ = release.recv_timeout(WAIT);
            }
            if n == refuse {
                respond(
                    writer,
                    "503 Service Unavailable",
                    "Content-Type: text/plain\r\n",
                    "busy",
                );
                return true;
            }
            let id = format!("s-{n}");
            *state.lock().unwrap() = Some(id.clone());
            answer_json(
                req,
                writer,
                &format!("Mcp-Session-Id: {id}\r\n"),
                json!({ "protocolVersion": "2025-11-25",
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "forgetful", "version": "1" } }),
            );
        } else {
            if method == "tools/call" {
                let name = req.body["params"]["name"].as_str().unwrap_or("").to_owned();
                let _ = calls_tx.send((name, session.clone()));
            }
            if session.is_none() {
                respond(
                    writer,
                    "400 Bad Request",
                    "Content-Type: text/plain\r\n",
                    "Bad Request: Missing session ID",
                );
            } else if session != *state.lock().unwrap() {
                respond(
                    writer,
                    "404 Not Found",
                    "Content-Type: text/plain\r\n",
                    "Session not found",
                );
            } else if method == "tools/call" {
                answer_json(
                    req,
                    writer,
                    "",
                    json!({ "content": [{ "type": "text", "text": "fine" }] }),
                );
            } else if req.body.get("id").is_some() {
                answer_json(req, writer, "", json!({}));
            } else {
                respond(writer, "202 Accepted", "", "");
            }
        }
        true
    });
    Forgetful {
        url: format!("http://{addr}/mcp"),
        live,
        calls,
    }
}

/// Review of issue 47, item 10 (review-47h): a renewal that fails leaves
/// the client able to renew again. The server forgets the session; the
/// next call's `404` starts a new one, whose `initialize` is refused
/// (`503`, a server at its cap for a moment): that call fails. The call
/// after it must start a session again and be answered. On main the
/// client dropped the dead session id before the `initialize` and kept
/// none when it failed: every later call goes with no `Mcp-Session-Id`
/// (served statelessly by our server, `400` by the SDKs' and this one),
/// and no `404` ever starts a session again.
#[test]
fn a_session_renewal_that_fails_is_tried_again_on_the_next_call() {
    let (holding, _) = crossbeam_channel::unbounded();
    let (_, release) = crossbeam_channel::unbounded();
    let server = forgetful(2, 0, holding, release);
    let client = connect_legacy(&server.url);
    assert_eq!(
        client.call("one", json!({})).unwrap().text_content(),
        "fine"
    );
    *server.live.lock().unwrap() = None;
    let refused = client.call("two", json!({}));
    assert!(refused.is_err(), "{refused:?}");
    let after = client.call("three", json!({}));
    let seen: Vec<_> = server.calls.try_iter().collect();
    assert!(
        matches!(&after, Ok(r) if r.text_content() == "fine"),
        "{after:?}; the server saw {seen:?}"
    );
    let _ = client.close();
}

/// Review of issue 47, item 10 (review-47h): a call made while a new
/// session is being started goes in that session. The server forgets the
/// session; call `a`'s `404` starts a new one, whose `initialize` the
/// server holds until call `b` has reached it. On main, `b` went with no
/// `Mcp-Session-Id` (the client cleared the dead one before sending
/// `initialize`): a stateless request for our server (no capabilities, no
/// log level, a `resources/subscribe` kept nowhere), `400` for the SDKs'.
#[test]
fn a_call_made_while_the_session_is_started_again_goes_in_the_new_session() {
    let (holding_tx, holding) = crossbeam_channel::unbounded();
    let (release, release_rx) = crossbeam_channel::unbounded();
    let server = forgetful(0, 2, holding_tx, release_rx);
    let client = Arc::new(connect_legacy(&server.url));
    *server.live.lock().unwrap() = None;
    let first = Arc::clone(&client);
    let a = std::thread::spawn(move || first.call("a", json!({})));
    holding
        .recv_timeout(WAIT)
        .expect("the new session's initialize");
    let second = Arc::clone(&client);
    let b = std::thread::spawn(move || second.call("b", json!({})));
    // `b` reached the server while the new session's initialize is held.
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|(name, _): &(String, Option<String>)| name == "b")
    {
        seen.push(server.calls.recv_timeout(WAIT).expect("call b"));
    }
    release.send(()).unwrap();
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    seen.extend(server.calls.try_iter());
    assert!(
        matches!(&a, Ok(r) if r.text_content() == "fine"),
        "{a:?}; the server saw {seen:?}"
    );
    assert!(
        matches!(&b, Ok(r) if r.text_content() == "fine"),
        "{b:?}; the server saw {seen:?}"
    );
}

/// Task 47r, item 7: `close` while a session is being started again ends
/// the new session too. The server forgets the session; call `a`'s `404`
/// starts a new one, whose `initialize` the server holds; the client is
/// closed meanwhile (its `DELETE` names the dead session), then the
/// `initialize` is answered with session `s-2`. Before, nothing ever
/// deleted `s-2`: `close` had read the dead id, and the renewal went on
/// setting up a session nobody would use, which the server kept until it
/// forgot it for newer ones.
#[test]
fn closing_while_the_session_is_started_again_deletes_the_new_session() {
    let (holding_tx, holding) = crossbeam_channel::unbounded();
    let (release, release_rx) = crossbeam_channel::unbounded();
    let server = forgetful(0, 2, holding_tx, release_rx);
    let client = Arc::new(connect_legacy(&server.url));
    *server.live.lock().unwrap() = None;
    let caller = Arc::clone(&client);
    let a = std::thread::spawn(move || caller.call("a", json!({})));
    holding
        .recv_timeout(WAIT)
        .expect("the new session's initialize");
    let closing = Arc::clone(&client);
    let closed = std::thread::spawn(move || closing.close_shared());
    let deleted = |session: &str| {
        let mut seen = Vec::new();
        loop {
            match server.calls.recv_timeout(WAIT) {
                Ok((name, id)) if name == "DELETE" && id.as_deref() == Some(session) => {
                    return Ok(());
                }
                Ok(other) => seen.push(other),
                Err(_) => return Err(seen),
            }
        }
    };
    assert_eq!(deleted("s-1"), Ok(()), "close's DELETE of the dead session");
    release.send(()).unwrap();
    assert_eq!(
        deleted("s-2"),
        Ok(()),
        "the session started while the client closed was never deleted"
    );
    let _ = closed.join().unwrap();
    let _ = a.join().unwrap();
}

/// Review of issue 47 (review-47h): a caller's answer is never delivered
/// to another caller. Over HTTP the response on a POST's stream belongs to
/// that POST's request; a careless server answers call `a`'s POST with the
/// id of call `b`, which is in flight on another POST (and is never
/// answered there). On main the client routed it by its id alone: `b`'s
/// caller got `a`'s result (`for-a`), and `a`'s failed.
#[test]
fn an_answer_on_one_calls_stream_with_another_calls_id_is_not_given_to_that_call() {
    let (b_id_tx, b_id) = crossbeam_channel::unbounded::<Value>();
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => answer_json(req, writer, "", discover_json("crossed")),
            "tools/call" if req.body["params"]["name"] == "b" => {
                b_id_tx.send(req.body["id"].clone()).unwrap();
                // Never answered here: held until the client lets go.
                writer.set_read_timeout(Some(WAIT)).unwrap();
                let mut byte = [0u8; 1];
                let _ = writer.read(&mut byte);
                return false;
            }
            "tools/call" => {
                let Ok(other) = b_id.recv_timeout(WAIT) else {
                    return false;
                };
                let body = json!({ "jsonrpc": "2.0", "id": other, "result": {
                    "content": [{ "type": "text", "text": "for-a" }],
                    "resultType": "complete" } });
                respond(
                    writer,
                    "200 OK",
                    "Content-Type: application/json\r\nConnection: close\r\n",
                    &body.to_string(),
                );
                return false;
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = Arc::new(
        Client::builder()
            .era(EraPolicy::ModernOnly)
            .connect_url(&format!("http://{addr}/mcp"))
            .unwrap(),
    );
    let caller_b = Arc::clone(&client);
    let b = std::thread::spawn(move || {
        caller_b.call_tool_with(
            "b",
            json!({}),
            RequestOptions::new().timeout(Duration::from_secs(3)),
        )
    });
    let a = client.call_tool_with(
        "a",
        json!({}),
        RequestOptions::new().timeout(Duration::from_secs(3)),
    );
    let b = b.join().unwrap();
    assert!(
        !matches!(&b, Ok(Outcome::Complete(r)) if r.text_content() == "for-a"),
        "caller b got the answer sent on a's stream: {b:?} (a: {a:?})"
    );
}

/// Review of issue 47, item 11 (review-47h): a notification is POSTed
/// once. The server reads the legacy `notifications/initialized` and
/// never answers it. The client gives up after 10 s (`ACCEPT_TIMEOUT`);
/// on main it then sent the notification again on a new connection (the
/// first went on a kept-alive one, and a failed read on a reused
/// connection is taken for one the server had closed), so the server got
/// it twice and `connect_url` took 20 s. A read that timed out says the
/// server has the request: sending it again repeats it.
#[test]
fn a_notification_the_server_never_answers_is_posted_once() {
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "initialize" => answer_json(
                req,
                writer,
                "Mcp-Session-Id: s-1\r\n",
                initialize_json("mute"),
            ),
            "notifications/initialized" => {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                // Read, never answered; the connection held open.
                writer.set_read_timeout(Some(WAIT * 3)).unwrap();
                let mut byte = [0u8; 1];
                let _ = writer.read(&mut byte);
                return false;
            }
            _ if req.verb == "GET" => respond(writer, "405 Method Not Allowed", "", ""),
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let started = std::time::Instant::now();
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    let took = started.elapsed();
    let posted = count.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        posted, 1,
        "notifications/initialized POSTed {posted} times; connect_url took {took:?}"
    );
    let _ = client.close();
}

/// The threads of this process named `name` (Linux; 15 bytes at most).
fn threads_named(name: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// Review of issue 47, item 11 (review-47h): the client's threads are
/// bounded whatever the server sends. A legacy server sends 300 `ping`
/// requests on its GET stream and never answers the POSTs that carry the
/// client's answers. Each answer is a message of its own, and a message
/// that finds no idle worker starts one (`workers::submit`), held up to
/// `ACCEPT_TIMEOUT`: on main the server made the client start a thread
/// per ping (about 300, counted while the answers arrive).
///
/// Threads are counted per process, and the other tests of this binary run
/// clients of their own beside it (CI once counted 108 with 8 answers under
/// way): the test runs itself again, alone, in a child process.
#[test]
fn a_server_that_sends_many_requests_starts_a_bounded_number_of_client_threads() {
    const ALONE: &str = "MCP_STDIO_TEST_ALONE";
    if std::env::var_os(ALONE).is_none() {
        let name = "http_client::a_server_that_sends_many_requests_starts_a_bounded_number_of_client_threads";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && printed.contains("1 passed"),
            "the test alone in a child process: {printed}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    const PINGS: usize = 300;
    let answers = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&answers);
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str() {
            Some("initialize") => answer_json(
                req,
                writer,
                "Mcp-Session-Id: s-1\r\n",
                initialize_json("pinger"),
            ),
            _ if req.verb == "GET" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
                writer.write_all(head.as_bytes()).unwrap();
                for n in 0..PINGS {
                    let ping =
                        json!({ "jsonrpc": "2.0", "id": format!("p-{n}"), "method": "ping" });
                    if writer
                        .write_all(format!("data: {ping}\n\n").as_bytes())
                        .is_err()
                    {
                        return false;
                    }
                }
                writer.set_read_timeout(Some(WAIT * 2)).unwrap();
                let mut byte = [0u8; 1];
                let _ = writer.read(&mut byte);
                return false;
            }
            // An answer: read, never accepted.
            None => {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                writer.set_read_timeout(Some(WAIT * 2)).unwrap();
                let mut byte = [0u8; 1];
                let _ = writer.read(&mut byte);
                return false;
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut most = 0;
    while answers.load(std::sync::atomic::Ordering::SeqCst) < PINGS
        && std::time::Instant::now() < deadline
    {
        most = most.max(threads_named("mcp-client-http"));
        std::thread::sleep(Duration::from_millis(20));
    }
    most = most.max(threads_named("mcp-client-http"));
    let answered = answers.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        most < 100,
        "{most} threads named mcp-client-http while {answered} answers to pings were under way"
    );
    let _ = client.close();
}

/// Review of issue 47, item 11 (review-47h): "each waits at most 10 s"
/// (README) holds for a server that answers with interim responses too.
/// The server answers the legacy `notifications/initialized` with a
/// `100 Continue` every 100 ms, never a final status: each comes within
/// the read timeout, and `exchange::read_head` reads the next one for as
/// long as they come (the 10 s bound of an answer's body,
/// `Body::until`, begins after the head). `connect_url`, which POSTs that
/// notification itself, returned on main only when the server let go,
/// after 30 s.
#[test]
fn a_notification_answered_with_endless_interim_responses_is_let_go() {
    let addr = scripted(|req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "initialize" => answer_json(
                req,
                writer,
                "Mcp-Session-Id: s-1\r\n",
                initialize_json("continuing"),
            ),
            "notifications/initialized" => {
                let started = std::time::Instant::now();
                while started.elapsed() < WAIT * 3 {
                    if writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                return false;
            }
            _ if req.verb == "GET" => respond(writer, "405 Method Not Allowed", "", ""),
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let started = std::time::Instant::now();
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(15), "connected after {took:?}");
    let _ = client.close();
}

/// Review 47z: a notification's POST is still held past `ACCEPT_TIMEOUT`
/// by a server that trickles one line of its answer's head.
/// `exchange::read_head` (src/client/http/exchange.rs) checks its deadline
/// only between lines, and `read_line` reads on while each byte comes
/// within the socket's read timeout (`ACCEPT_TIMEOUT`, 10 s), up to the
/// head's 64 KiB: one byte every 500 ms holds a brief worker for nine
/// hours (`Body::chunk_line` reads a chunk-size line the same way, past
/// `Body::until`). The legacy `notifications/initialized` is POSTed by
/// the caller of `connect_url`: on main it returned only when the server
/// let go, after 30 s.
#[test]
fn a_notification_whose_status_line_trickles_in_is_let_go() {
    let addr = scripted(|req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "initialize" => answer_json(
                req,
                writer,
                "Mcp-Session-Id: s-1\r\n",
                initialize_json("trickling"),
            ),
            "notifications/initialized" => {
                let _ = writer.write_all(b"HTTP/1.1 202 Accepted");
                let started = std::time::Instant::now();
                while started.elapsed() < WAIT * 3 {
                    if writer.write_all(b" ").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
                return false;
            }
            _ if req.verb == "GET" => respond(writer, "405 Method Not Allowed", "", ""),
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let started = std::time::Instant::now();
    let client = Client::builder()
        .era(EraPolicy::LegacyOnly)
        .connect_url(&format!("http://{addr}/mcp"));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(15), "connected after {took:?}");
    if let Ok(client) = client {
        let _ = client.close();
    }
}

/// Review 47z: a `tools/call` the server read and then dropped the
/// connection on, answering nothing, is sent again on a new connection,
/// and runs twice. `Shared::start` (src/client/http/post/connection.rs)
/// takes an end before the head on a reused connection (`Ok(None) if
/// was_reused`, and a reset or broken pipe, `closed_meanwhile`) for a
/// connection the server closed while it was idle; but the server may have read the request and
/// acted on it (it crashed, a proxy cut it), and a POST is not idempotent
/// (RFC 9110 section 9.2.2: a client SHOULD NOT automatically retry a
/// non-idempotent request unless it can tell the first was never
/// applied). The scripted modern server keeps `server/discover`'s
/// connection alive, reads the first `tools/call` on it whole and closes:
/// on main it saw the call twice, and the caller got the second's answer.
#[test]
fn a_call_the_server_read_before_the_connection_ended_is_not_sent_again() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => answer_json(req, writer, "", discover_json("dropping")),
            "tools/call" => {
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    // Read whole (and, for a real server, acted on); then
                    // the connection ends with no answer.
                    let _ = writer.shutdown(std::net::Shutdown::Both);
                    return false;
                }
                answer_json(
                    req,
                    writer,
                    "",
                    json!({ "content": [{ "type": "text", "text": "again" }],
                        "resultType": "complete" }),
                );
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = Client::builder()
        .era(EraPolicy::ModernOnly)
        .connect_url(&format!("http://{addr}/mcp"))
        .unwrap();
    let answered = client.call_tool_with(
        "transfer",
        json!({}),
        RequestOptions::new().timeout(Duration::from_secs(5)),
    );
    let seen = calls.load(Ordering::SeqCst);
    assert_eq!(
        seen, 1,
        "the server got the call {seen} times (the caller got {answered:?})"
    );
    let _ = client.close();
}

/// An idle kept-alive connection the server has closed is not used for
/// a call: the call goes on a new connection, once, and is answered. The
/// scripted modern server ends `server/discover`'s connection after its
/// answer (no `Connection: close`); the client now sends a call only
/// once a reused connection ended under it, so without looking at an
/// idle connection first (`Kept::still_open`) this call failed.
#[test]
fn an_idle_connection_the_server_closed_is_not_used_for_a_call() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let (closed_tx, closed) = crossbeam_channel::unbounded::<()>();
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => {
                answer_json(req, writer, "", discover_json("closing"));
                let _ = writer.shutdown(std::net::Shutdown::Both);
                let _ = closed_tx.send(());
                return false;
            }
            "tools/call" => {
                counted.fetch_add(1, Ordering::SeqCst);
                answer_json(
                    req,
                    writer,
                    "",
                    json!({ "content": [{ "type": "text", "text": "once" }],
                        "resultType": "complete" }),
                );
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = Client::builder()
        .era(EraPolicy::ModernOnly)
        .connect_url(&format!("http://{addr}/mcp"))
        .unwrap();
    closed.recv_timeout(WAIT).unwrap();
    let answered = client.call_tool_with(
        "transfer",
        json!({}),
        RequestOptions::new().timeout(Duration::from_secs(5)),
    );
    assert!(
        matches!(&answered, Ok(Outcome::Complete(r)) if r.text_content() == "once"),
        "{answered:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let _ = client.close();
}

/// Review 47z: a message on one call's stream still reaches another
/// caller when its envelope cannot be parsed. `messages::answers_another`
/// (src/client/http/messages.rs) drops a response naming another request
/// only when serde reads the message (`is_ok_and`); one it cannot read (a
/// member named with a lone surrogate escape, `"\ud800"`) goes on to
/// `Link::route`, whose `unreadable` scans the envelope (`EnvelopeScan`,
/// which does not decode keys), finds the other request's id and fails
/// that request. The server answers call `a`'s POST with such a message
/// naming `b`; `b`'s own stream answers `b` once `a` has returned. On main
/// caller `b` got `Err(Protocol("the server's response to request 3 could
/// not be read: it is not JSON-RPC: unexpected end of hex escape ..."))`
/// instead of its answer. (An `id` given twice does not do it: the scan
/// takes no id then.)
#[test]
fn an_unreadable_message_on_one_calls_stream_fails_no_other_call() {
    let (b_id_tx, b_id) = crossbeam_channel::unbounded::<Value>();
    let (a_done_tx, a_done) = crossbeam_channel::unbounded::<()>();
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => answer_json(req, writer, "", discover_json("crossed")),
            "tools/call" if req.body["params"]["name"] == "b" => {
                b_id_tx.send(req.body["id"].clone()).unwrap();
                if a_done.recv_timeout(WAIT).is_ok() {
                    let body = json!({ "jsonrpc": "2.0", "id": req.body["id"], "result": {
                        "content": [{ "type": "text", "text": "for-b" }],
                        "resultType": "complete" } });
                    respond(
                        writer,
                        "200 OK",
                        "Content-Type: application/json\r\nConnection: close\r\n",
                        &body.to_string(),
                    );
                }
                return false;
            }
            "tools/call" => {
                let Ok(other) = b_id.recv_timeout(WAIT) else {
                    return false;
                };
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{other},"result":{{"content":[],"resultType":"complete"}},"\ud800":0}}"#
                );
                respond(
                    writer,
                    "200 OK",
                    "Content-Type: application/json\r\nConnection: close\r\n",
                    &body,
                );
                return false;
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = Arc::new(
        Client::builder()
            .era(EraPolicy::ModernOnly)
            .connect_url(&format!("http://{addr}/mcp"))
            .unwrap(),
    );
    let caller_b = Arc::clone(&client);
    let b = std::thread::spawn(move || {
        caller_b.call_tool_with(
            "b",
            json!({}),
            RequestOptions::new().timeout(Duration::from_secs(5)),
        )
    });
    let a = client.call_tool_with(
        "a",
        json!({}),
        RequestOptions::new().timeout(Duration::from_secs(5)),
    );
    a_done_tx.send(()).unwrap();
    let b = b.join().unwrap();
    assert!(
        matches!(&b, Ok(Outcome::Complete(r)) if r.text_content() == "for-b"),
        "caller b did not get its own answer: {b:?} (a: {a:?})"
    );
}

/// Review 47z: a server whose GET stream answers `404` in every session
/// (a replica behind a balancer that never saw the session, or a server
/// that forgets at once) makes the client start new sessions in a tight
/// loop. `Shared::listen` (src/client/http/get_stream.rs) takes a `404`
/// as the session's end, renews it (`Shared::renew`: `initialize`,
/// `notifications/initialized`) and, when that succeeds, `continue`s with
/// `failures = 0` and no pause; the next GET's `404` renews again. The
/// scripted server numbers its sessions and refuses every GET: on main it
/// saw 1,001 `initialize` POSTs (the 1,000 it answers here, then one
/// refused `503`) within the test's 3 s window after `connect_url`.
#[test]
fn a_get_stream_refused_in_every_new_session_does_not_renew_in_a_loop() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let initializes = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&initializes);
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            _ if req.verb == "GET" => respond(writer, "404 Not Found", "", ""),
            "initialize" => {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                if n >= 1_000 {
                    respond(writer, "503 Service Unavailable", "", "");
                    return false;
                }
                answer_json(
                    req,
                    writer,
                    &format!("Mcp-Session-Id: s-{n}\r\n"),
                    json!({ "protocolVersion": "2025-11-25",
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": "forgetful", "version": "1" } }),
                );
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    let started = std::time::Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let seen = initializes.load(Ordering::SeqCst);
    let _ = client.close();
    assert!(
        seen <= 5,
        "{seen} sessions started in {:?}: a GET refused 404 renews the session with no pause",
        started.elapsed()
    );
}

/// Review 47z: a request made while a session is renewed reaches the
/// server in the new session before that session's
/// `notifications/initialized` (2025-11-25 basic/lifecycle: the client
/// MUST send it after a successful `initialize`; the Python SDK refuses
/// any other request that comes before it). `Shared::exchange_on`
/// (src/client/http/post/answer.rs) adopts the session id as soon as the
/// renewal's `initialize` answer's head arrives, and `Shared::renew`
/// (src/client/http/session.rs) POSTs `notifications/initialized` (then
/// the level and the subscriptions) only after that answer is read: every
/// request sent meanwhile names the new session. At connect this order is
/// kept (`Shared::send` POSTs `notifications/initialized` on its caller's
/// thread); at a renewal it is not. The scripted server forgets `s-1` for
/// calls (a `404` starts the renewal) but answers `ping` in any session,
/// and holds the body of the renewal's `initialize` answer (its head names
/// `s-2`) until a request arrives in `s-2`, or 5 s; the test pings until
/// one arrives in `s-2`. On main a `ping` came in `s-2` before its
/// `notifications/initialized`.
#[test]
fn a_request_made_during_a_renewal_waits_for_the_new_sessions_initialized() {
    #[derive(Default)]
    struct State {
        initializes: usize,
        initialized: Vec<String>,
        early: Vec<String>,
    }
    let state = Arc::new(Mutex::new(State::default()));
    let (release_tx, release) = crossbeam_channel::unbounded::<()>();
    let (renewed_tx, renewed) = crossbeam_channel::unbounded::<()>();
    let seen = Arc::clone(&state);
    let addr = scripted(move |req, writer| {
        let session = req.headers.get("mcp-session-id").cloned();
        match req.body["method"].as_str().unwrap_or("") {
            _ if req.verb == "GET" => respond(writer, "405 Method Not Allowed", "", ""),
            "initialize" => {
                let n = {
                    let mut state = seen.lock().unwrap();
                    state.initializes += 1;
                    state.initializes
                };
                let body = json!({ "jsonrpc": "2.0", "id": req.body["id"], "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "renewing", "version": "1" } } })
                .to_string();
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-{n}\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                writer.write_all(head.as_bytes()).unwrap();
                if n > 1 {
                    // The renewal: its head is out, its body held.
                    let _ = release.recv_timeout(Duration::from_secs(5));
                }
                writer.write_all(body.as_bytes()).unwrap();
            }
            "notifications/initialized" => {
                seen.lock()
                    .unwrap()
                    .initialized
                    .push(session.unwrap_or_default());
                respond(writer, "202 Accepted", "", "");
            }
            "tools/call" if session.as_deref() == Some("s-1") => {
                respond(writer, "404 Not Found", "", "");
            }
            method => {
                let session = session.unwrap_or_default();
                if session != "s-1" {
                    let mut state = seen.lock().unwrap();
                    if !state.initialized.contains(&session) {
                        state.early.push(format!("{method} in {session}"));
                    }
                    let _ = release_tx.send(());
                    let _ = renewed_tx.send(());
                }
                if req.body["id"].is_null() {
                    respond(writer, "202 Accepted", "", "");
                } else if method == "tools/call" {
                    let text = json!([{ "type": "text", "text": "answered" }]);
                    answer_json(req, writer, "", json!({ "content": text }));
                } else {
                    answer_json(req, writer, "", json!({}));
                }
            }
        }
        true
    });
    let client = Arc::new(connect_legacy(&format!("http://{addr}/mcp")));
    let caller = Arc::clone(&client);
    let call = std::thread::spawn(move || {
        caller.call_tool_with(
            "a",
            json!({}),
            RequestOptions::new().timeout(Duration::from_secs(10)),
        )
    });
    let deadline = std::time::Instant::now() + WAIT;
    while renewed.try_recv().is_err() && std::time::Instant::now() < deadline {
        client.ping().unwrap();
    }
    let call = call.join().unwrap();
    let early = std::mem::take(&mut state.lock().unwrap().early);
    assert!(
        early.is_empty(),
        "requests before their session's notifications/initialized: {early:?} (the call: {call:?})"
    );
}

/// Review 47z, noticed: a `resources/subscribe` the server refused is not
/// sent again when the session is renewed. `Shared::keep`
/// (src/client/http/session.rs) kept every subscribe as it was sent, and
/// `Shared::renew` sends them all again in a new session. The scripted
/// legacy server refuses `bad://x` and takes `good://y`, then forgets the
/// session; a call's `404` renews it. The subscribes are kept in the order
/// sent (`bad://x` first) and sent again in that order on one thread, so
/// once `good://y` arrives in `s-2` a re-sent `bad://x` has arrived too.
#[test]
fn a_refused_resource_subscription_is_not_sent_again_in_a_new_session() {
    let live: Arc<Mutex<Option<String>>> = Arc::default();
    let inits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (subscribed_tx, subscribed) = crossbeam_channel::unbounded::<(String, String)>();
    let state = Arc::clone(&live);
    let addr = scripted(move |req, writer| {
        let session = req.headers.get("mcp-session-id").cloned();
        let method = req.body["method"].as_str().unwrap_or("");
        if req.verb == "GET" {
            respond(writer, "405 Method Not Allowed", "", "");
        } else if req.verb == "DELETE" {
            respond(writer, "200 OK", "", "");
        } else if method == "initialize" {
            let n = inits.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let id = format!("s-{n}");
            *state.lock().unwrap() = Some(id.clone());
            answer_json(
                req,
                writer,
                &format!("Mcp-Session-Id: {id}\r\n"),
                json!({ "protocolVersion": "2025-11-25",
                    "capabilities": { "tools": {}, "resources": { "subscribe": true } },
                    "serverInfo": { "name": "choosy", "version": "1" } }),
            );
        } else if session.is_none() || session != *state.lock().unwrap() {
            respond(writer, "404 Not Found", "", "");
        } else if method == "resources/subscribe" {
            let uri = req.body["params"]["uri"].as_str().unwrap_or("").to_owned();
            let _ = subscribed_tx.send((uri.clone(), session.unwrap_or_default()));
            if uri == "bad://x" {
                let body = json!({ "jsonrpc": "2.0", "id": req.body["id"],
                    "error": { "code": -32602, "message": "no such resource" } });
                respond(
                    writer,
                    "200 OK",
                    "Content-Type: application/json\r\n",
                    &body.to_string(),
                );
            } else {
                answer_json(req, writer, "", json!({}));
            }
        } else if method == "tools/call" {
            answer_json(
                req,
                writer,
                "",
                json!({ "content": [{ "type": "text", "text": "fine" }] }),
            );
        } else if req.body.get("id").is_some() {
            answer_json(req, writer, "", json!({}));
        } else {
            respond(writer, "202 Accepted", "", "");
        }
        true
    });
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["bad://x".into(), "good://y".into()]),
        ..SubscriptionFilter::default()
    };
    let subscription = client.listen(filter).unwrap();
    *live.lock().unwrap() = None;
    let call = client.call("a", json!({}));
    assert!(
        matches!(&call, Ok(r) if r.text_content() == "fine"),
        "{call:?}"
    );
    let mut seen = Vec::new();
    while !seen.contains(&("good://y".to_owned(), "s-2".to_owned())) {
        match subscribed.recv_timeout(WAIT) {
            Ok(one) => seen.push(one),
            Err(_) => panic!("good://y not subscribed in s-2: {seen:?}"),
        }
    }
    assert!(
        !seen.contains(&("bad://x".to_owned(), "s-2".to_owned())),
        "the refused subscription was sent again: {seen:?}"
    );
    drop(subscription);
    let _ = client.close();
}

/// Review 47z, noticed: a renewal that sends many subscriptions again
/// does not hold up the calls that wait for it. `Shared::renew` sent every
/// kept `resources/subscribe` one by one while holding the renewal's lock,
/// and only then was the call that got the `404` sent again (and every
/// other call that got one waited on the lock). The scripted legacy server
/// takes 100 subscriptions, forgets the session, and answers each one sent
/// again in `s-2` after 50 ms (5 s in all); the call must be answered well
/// before that.
#[test]
fn a_renewal_with_many_subscriptions_does_not_hold_up_the_calls_waiting_for_it() {
    const URIS: usize = 100;
    let live: Arc<Mutex<Option<String>>> = Arc::default();
    let inits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (again_tx, again) = crossbeam_channel::unbounded::<String>();
    let state = Arc::clone(&live);
    let addr = scripted(move |req, writer| {
        let session = req.headers.get("mcp-session-id").cloned();
        let method = req.body["method"].as_str().unwrap_or("");
        if req.verb == "GET" {
            respond(writer, "405 Method Not Allowed", "", "");
        } else if req.verb == "DELETE" {
            respond(writer, "200 OK", "", "");
        } else if method == "initialize" {
            let n = inits.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let id = format!("s-{n}");
            *state.lock().unwrap() = Some(id.clone());
            answer_json(
                req,
                writer,
                &format!("Mcp-Session-Id: {id}\r\n"),
                json!({ "protocolVersion": "2025-11-25",
                    "capabilities": { "tools": {}, "resources": { "subscribe": true } },
                    "serverInfo": { "name": "subscribed", "version": "1" } }),
            );
        } else if session.is_none() || session != *state.lock().unwrap() {
            respond(writer, "404 Not Found", "", "");
        } else if method == "resources/subscribe" {
            if session.as_deref() == Some("s-2") {
                std::thread::sleep(Duration::from_millis(50));
                let uri = req.body["params"]["uri"].as_str().unwrap_or("").to_owned();
                let _ = again_tx.send(uri);
            }
            answer_json(req, writer, "", json!({}));
        } else if method == "tools/call" {
            answer_json(
                req,
                writer,
                "",
                json!({ "content": [{ "type": "text", "text": "fine" }] }),
            );
        } else if req.body.get("id").is_some() {
            answer_json(req, writer, "", json!({}));
        } else {
            respond(writer, "202 Accepted", "", "");
        }
        true
    });
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    let filter = SubscriptionFilter {
        resource_subscriptions: Some((0..URIS).map(|n| format!("r://{n}")).collect()),
        ..SubscriptionFilter::default()
    };
    let subscription = client.listen(filter).unwrap();
    assert_eq!(
        subscription
            .accepted()
            .resource_subscriptions
            .as_ref()
            .map(Vec::len),
        Some(URIS)
    );
    *live.lock().unwrap() = None;
    let started = std::time::Instant::now();
    let call = client.call("a", json!({}));
    let took = started.elapsed();
    assert!(
        matches!(&call, Ok(r) if r.text_content() == "fine"),
        "{call:?}"
    );
    assert!(
        took < Duration::from_millis(2500),
        "the call waited {took:?} for the subscriptions"
    );
    // They are all sent again in the new session, all the same.
    let mut resent = std::collections::HashSet::new();
    while resent.len() < URIS {
        let uri = again
            .recv_timeout(WAIT)
            .expect("every subscription sent again");
        resent.insert(uri);
    }
    drop(subscription);
    let _ = client.close();
}

/// Review 47z: a tool whose two `x-mcp-header` names differ only by `_`
/// and `-` cannot be called over HTTP. The spec allows both names
/// (2026-07-28 server/tools, "x-mcp-header": `1*tchar`, unique without
/// regard to case, and `_` and `-` are both tchars), and a client sends
/// `Mcp-Param-Region_Code` and `Mcp-Param-Region-Code`; since 21193b8,
/// `guard::single_fields` (src/server/http/guard.rs) reads `_` as `-` in
/// every `Mcp-*` name, so the two are one field sent twice: `-32020`
/// before the body is read. On main our client's call to our server
/// failed with `Rpc(-32020 "Header mismatch: the mcp-param-region-code
/// header is sent more than once: send it once")`.
#[test]
fn a_tool_marked_with_names_that_differ_by_an_underscore_can_be_called() {
    let server = crate::everything::build();
    let coded = Tool::new("coded", "Returns its two codes.").input_schema(json!({
        "type": "object",
        "properties": {
            "a": { "type": "string", "x-mcp-header": "Region_Code" },
            "b": { "type": "string", "x-mcp-header": "Region-Code" }
        },
        "required": ["a", "b"]
    }));
    server.add_tool(coded, |_ctx, args: Value| {
        Ok(CallToolResult::text(format!("{} {}", args["a"], args["b"])))
    });
    let http = serve(server);
    let client = Client::builder().connect_url(&http.url).unwrap();
    assert!(client.tools().any(|t| t.unwrap().name == "coded"));
    let answer = client.call("coded", json!({ "a": "eu", "b": "us" }));
    assert!(
        matches!(&answer, Ok(r) if r.text_content() == r#""eu" "us""#),
        "{answer:?}"
    );
}

/// A legacy server may drop what it sends on its own while no GET stream
/// is open (spec 2025-11-25 basic/transports: the server MAY send on that
/// stream; the TypeScript SDK's transport discards a message that belongs
/// to no request when there is none). The suite's
/// `elicitation-sep1034-client-defaults` server sends its `elicitation/create`
/// that way, from inside a `tools/call`: about one run in ten under load the
/// call reached the server before the client's GET, the elicitation was
/// dropped, and the call never ended. Here the server answers the GET's
/// head after 300 ms: the client's first request after `connect_url` must
/// find the stream open. Before the fix: the `ping` came first.
#[test]
fn the_get_stream_is_open_before_the_first_request_after_connecting() {
    let opened = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (first_tx, first_rx) = crossbeam_channel::bounded::<bool>(1);
    let open = Arc::clone(&opened);
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str() {
            Some("initialize") => answer_json(
                req,
                writer,
                "Mcp-Session-Id: s-1\r\n",
                initialize_json("slow-get"),
            ),
            _ if req.verb == "GET" => {
                std::thread::sleep(Duration::from_millis(300));
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
                // Open from before the head leaves: a client that saw it
                // may send its ping before this thread runs again (once
                // under load, with the flag stored after the write).
                open.store(true, std::sync::atomic::Ordering::SeqCst);
                writer.write_all(head.as_bytes()).unwrap();
                // Held open until the client lets go.
                writer.set_read_timeout(Some(WAIT)).unwrap();
                let mut byte = [0u8; 1];
                let _ = writer.read(&mut byte);
                return false;
            }
            Some("ping") => {
                let _ = first_tx.try_send(open.load(std::sync::atomic::Ordering::SeqCst));
                answer_json(req, writer, "", json!({}));
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = connect_legacy(&format!("http://{addr}/mcp"));
    client.ping().unwrap();
    let open_at_first = first_rx.recv_timeout(WAIT).unwrap();
    assert!(
        open_at_first,
        "the first request after connect_url reached the server before the GET stream was open"
    );
    let _ = client.close();
}

// Review review-46c2: claims about today's client changes that a test
// shows on main. Each is ignored until fixed; its doc comment says what it
// saw.

/// Claim (review-46c2): a legacy server that sends its GET stream's head
/// only with its first event (a server that does not flush its headers,
/// or is slow to) makes every `connect_url` take 5 s more, whatever the
/// application's own bounds say (src/client/http/get_stream.rs
/// `Shared::start_listening`, `OPEN_WAIT`: the link's writer waits for the
/// GET's head before the message after `notifications/initialized`;
/// `probe_timeout` and `start_timeout` do not cut it, though
/// `start_timeout` promises "how long starting may take in all"). Seen on
/// main: "connect_url took 5.0s, and a ping after it 0.0s more", with
/// both at 1 s, and `connect_url` succeeded.
#[test]
fn a_get_stream_whose_head_never_comes_costs_connecting_no_more_than_its_bounds() {
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str() {
            Some("initialize") => answer_json(
                req,
                writer,
                "Mcp-Session-Id: s-1\r\n",
                initialize_json("silent-get"),
            ),
            _ if req.verb == "GET" => {
                // No head until an event, and no event comes.
                writer.set_read_timeout(Some(WAIT)).unwrap();
                let mut byte = [0u8; 1];
                let _ = writer.read(&mut byte);
                return false;
            }
            Some("ping") => answer_json(req, writer, "", json!({})),
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let started = std::time::Instant::now();
    let client = Client::builder()
        .era(EraPolicy::LegacyOnly)
        .probe_timeout(Duration::from_secs(1))
        .start_timeout(Duration::from_secs(1))
        .connect_url(&format!("http://{addr}/mcp"))
        .unwrap();
    let connected = started.elapsed();
    client.ping().unwrap();
    let took = started.elapsed();
    let _ = client.close();
    assert!(
        took < Duration::from_secs(3),
        "connect_url took {:.1}s, and a ping after it {:.1}s more",
        connected.as_secs_f64(),
        (took - connected).as_secs_f64()
    );
}

/// Review httplate13: a held stream (`late.rs`) reads what the server
/// writes after the give-up, and that is the call's answer only: a
/// `HeaderMismatch` (`-32020`) the server writes once the client's side
/// ended must not start the bridge's re-listing and retry (`relist.rs`)
/// for a call its caller gave up. Before the hold, the stream was shut
/// both ways and nothing after the give-up was read.
#[test]
fn a_header_mismatch_read_after_a_give_up_lists_no_tools() {
    let (listed_tx, listed) = crossbeam_channel::unbounded::<()>();
    let (written_tx, written) = crossbeam_channel::unbounded::<()>();
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => answer_json(req, writer, "", discover_json("mismatch")),
            "tools/call" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
                writer.write_all(head.as_bytes()).unwrap();
                writer.set_read_timeout(Some(WAIT)).unwrap();
                let _ = writer.read(&mut [0u8; 1]);
                let refused = json!({ "jsonrpc": "2.0", "id": req.body["id"],
                    "error": { "code": -32020, "message": "header mismatch" } });
                let event = format!("data: {refused}\n\n");
                let chunk = format!("{:x}\r\n{event}\r\n0\r\n\r\n", event.len());
                let _ = writer.write_all(chunk.as_bytes());
                let _ = written_tx.send(());
                return false;
            }
            "tools/list" => {
                let _ = listed_tx.send(());
                answer_json(
                    req,
                    writer,
                    "",
                    json!({ "tools": [], "resultType": "complete" }),
                );
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = Client::builder()
        .era(EraPolicy::ModernOnly)
        .tasks(true)
        .connect_url(&format!("http://{addr}/mcp"))
        .unwrap();
    let called = client.call_tool_with(
        "slow",
        json!({}),
        RequestOptions::new().timeout(Duration::from_millis(300)),
    );
    assert!(matches!(called, Err(Error::Timeout)), "{called:?}");
    written.recv_timeout(WAIT).unwrap();
    assert!(
        listed.recv_timeout(Duration::from_secs(2)).is_err(),
        "the tools were listed again for a call given up on"
    );
}

/// Review httplate13: a stream held after its give-up (`late.rs`, here
/// for 30 s: the call's timeout, `reset_timeout_on_progress` cutting the
/// wait at 200 ms) is let go when the client is dropped without `close`,
/// not at its end: the server, which keeps the stream going with
/// comments and notices the client's going only when a write fails, sees
/// it go within a few seconds.
#[test]
fn a_held_stream_is_let_go_when_its_client_is_dropped() {
    let (ended_tx, ended) = crossbeam_channel::unbounded::<()>();
    let (gone_tx, gone) = crossbeam_channel::unbounded::<()>();
    let addr = scripted(move |req, writer| {
        match req.body["method"].as_str().unwrap_or("") {
            "server/discover" => answer_json(req, writer, "", discover_json("pinging")),
            "tools/call" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
                writer.write_all(head.as_bytes()).unwrap();
                writer.set_read_timeout(Some(WAIT)).unwrap();
                let _ = writer.read(&mut [0u8; 1]);
                let _ = ended_tx.send(());
                let since = std::time::Instant::now();
                let ping = b"a\r\n: ping\n\n\n\r\n";
                while since.elapsed() < Duration::from_secs(60) && writer.write_all(ping).is_ok() {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = gone_tx.send(());
                return false;
            }
            _ => respond(writer, "202 Accepted", "", ""),
        }
        true
    });
    let client = Client::builder()
        .era(EraPolicy::ModernOnly)
        .tasks(true)
        .connect_url(&format!("http://{addr}/mcp"))
        .unwrap();
    let options = RequestOptions::new()
        .timeout(Duration::from_secs(30))
        .reset_timeout_on_progress(Duration::from_millis(200));
    let called = client.call_tool_with("slow", json!({}), options);
    assert!(matches!(called, Err(Error::Timeout)), "{called:?}");
    ended.recv_timeout(WAIT).unwrap();
    drop(client);
    assert!(
        gone.recv_timeout(WAIT).is_ok(),
        "the held stream outlived its client"
    );
}
