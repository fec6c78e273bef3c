//! `proxy::serve_as` (features `server`, `client` and `http`): the
//! everything server, reached through one client, served again over
//! HTTP, and driven by our HTTP client in both eras. What the callers see
//! must be what the server behind offers.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use mcp_stdio::types::{
    CallToolResult, ElicitRequestParams, ElicitResult, GetPromptResult, Prompt, PromptMessage,
    Role, SubscriptionFilter, Tool,
};
use mcp_stdio::{
    Client, EraPolicy, Error, HttpOptions, RequestOptions, Server, StopHandle, SubscriptionEvent,
    Transport,
};
use serde_json::{Value, json};

use crate::support::WAIT;

/// The everything server behind a proxy served over HTTP: its address and
/// URL, and the proxy's stop handle (the proxy stops when dropped).
struct Proxied {
    addr: SocketAddr,
    url: String,
    stop: StopHandle,
}

impl Drop for Proxied {
    fn drop(&mut self) {
        self.stop.stop();
    }
}

fn proxied() -> Proxied {
    proxied_behind(crate::everything::build())
}

/// `behind` behind a proxy served over HTTP.
fn proxied_behind(behind: Server) -> Proxied {
    let (ours, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let client = Client::connect(ours).unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}/mcp");
    let stop = proxy.stop_handle();
    thread::spawn(move || proxy.serve_http(listener, HttpOptions::new()));
    Proxied { addr, url, stop }
}

fn caller(url: &str, era: EraPolicy) -> Client {
    Client::builder()
        .era(era)
        .on_elicitation(|params| {
            assert!(matches!(params, ElicitRequestParams::Form(_)));
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(content))
        })
        .connect_url(url)
        .unwrap()
}

#[test]
fn the_proxy_lists_what_the_server_behind_offers_byte_for_byte() {
    let proxy = proxied();
    let direct = {
        let (ours, theirs) = Transport::memory();
        let behind = crate::everything::build();
        thread::spawn(move || behind.serve(theirs));
        Client::connect(ours).unwrap()
    };
    let through = caller(&proxy.url, EraPolicy::ModernOnly);
    let tools = |c: &Client| {
        serde_json::to_value(c.tools().collect::<Result<Vec<_>, _>>().unwrap()).unwrap()
    };
    assert_eq!(tools(&through), tools(&direct));
    let templates = |c: &Client| {
        serde_json::to_value(
            c.resource_templates()
                .collect::<Result<Vec<_>, _>>()
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(templates(&through), templates(&direct));
    let prompts = |c: &Client| {
        serde_json::to_value(c.prompts().collect::<Result<Vec<_>, _>>().unwrap()).unwrap()
    };
    assert_eq!(prompts(&through), prompts(&direct));
    assert_eq!(
        through.server_info().unwrap().name,
        direct.server_info().unwrap().name
    );
}

#[test]
fn calls_progress_and_multi_round_trip_pass_through_in_both_eras() {
    let proxy = proxied();
    for era in [EraPolicy::ModernOnly, EraPolicy::LegacyOnly] {
        let client = caller(&proxy.url, era);
        let echo = client.call("echo", json!({ "text": "through" })).unwrap();
        assert_eq!(echo.text_content(), "through", "{era:?}");
        // The server behind asks (input_required); the caller answers
        // through the proxy, which sends the answer on.
        let asked = client.call("ask", json!({})).unwrap();
        assert!(asked.text_content().contains("Ada"), "{era:?}: {asked:?}");
        let (tx, rx) = crossbeam_channel::unbounded();
        let options = RequestOptions::new().on_progress(move |p| {
            let _ = tx.send(p.progress);
        });
        client
            .call_tool_with("progress", json!({ "steps": 3 }), options)
            .unwrap();
        let seen: Vec<f64> = rx.try_iter().collect();
        assert_eq!(seen.len(), 3, "{era:?}: {seen:?}");
        let unknown = client.call("no_such_tool", json!({})).unwrap_err();
        assert!(
            matches!(unknown, Error::Rpc(ref e) if e.code == -32602),
            "{unknown}"
        );
        client.close().unwrap();
    }
}

#[test]
fn a_caller_that_cancels_cancels_the_call_behind() {
    let (tripped_tx, tripped) = crossbeam_channel::unbounded();
    let behind = Server::builder("behind", "1")
        .tool(
            Tool::new("hold", "Waits to be cancelled."),
            move |ctx, _: Value| {
                let _ = tripped_tx.send(ctx.wait_cancelled(WAIT));
                Ok(CallToolResult::text("held"))
            },
        )
        .build();
    let proxy = proxied_behind(behind);
    let client = caller(&proxy.url, EraPolicy::ModernOnly);
    let e = client
        .call_tool_with(
            "hold",
            json!({}),
            RequestOptions::new().timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(matches!(e, Error::Timeout), "{e}");
    // The caller's timeout closed its stream; the proxy cancelled the call
    // behind it, whose handler's token tripped.
    assert_eq!(tripped.recv_timeout(WAIT), Ok(true));
}

#[test]
fn list_changes_and_resource_updates_behind_reach_a_listen_on_the_proxy() {
    let proxy = proxied();
    let client = caller(&proxy.url, EraPolicy::ModernOnly);
    let mut listen = client
        .listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            resource_subscriptions: Some(vec!["mem://counter".into()]),
            ..SubscriptionFilter::default()
        })
        .unwrap();
    // The proxy subscribed behind it before acknowledging: a bump at once
    // is heard.
    client.call("bump", json!({})).unwrap();
    let event = listen.recv_timeout(WAIT).unwrap();
    assert_eq!(
        event,
        Some(SubscriptionEvent::ResourceUpdated {
            uri: "mem://counter".into()
        })
    );
    client.call("toggle_tool", json!({})).unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let names: Vec<String> = client.tools().map(|t| t.unwrap().name).collect();
        if names.contains(&"ephemeral".to_owned()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ephemeral never listed: {names:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    // One change behind is one change here: only the tool that changed is
    // mirrored again (not every one of the server's tools).
    let mut heard = 0;
    while let Ok(Some(event)) = listen.recv_timeout(Duration::from_millis(500)) {
        heard += usize::from(event == SubscriptionEvent::ToolsListChanged);
    }
    assert_eq!(heard, 1, "tools/list_changed through the proxy");
}

/// A resource update the server behind sends before a call's reply reaches
/// a legacy caller over HTTP before that reply, on the call's own stream
/// (it has no other: no GET stream). The proxy read its subscription on a
/// thread of its own, which raced the call's handler: when the handler
/// won, the reply went out first and the update reached no one (CI,
/// `serve-http.sh`, the Python SDK 1.30). Many rounds: it was a race.
#[test]
fn an_update_behind_reaches_a_legacy_caller_before_the_reply_that_followed_it() {
    use crate::http::{json_body, post};
    use crate::http_legacy::{assert_updated_then_answered, call, headers, initialize};
    let proxy = proxied();
    let addr = proxy.addr;
    let session = initialize(addr, json!({}));
    let subscribe = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": { "uri": "mem://counter" } });
    let response = post(
        addr,
        &headers(Some(&session), false),
        &subscribe.to_string(),
    );
    assert_eq!(json_body(&response)["id"], 2, "{response}");
    for round in 3..103 {
        let response = post(
            addr,
            &headers(Some(&session), true),
            &call(round, "bump").to_string(),
        );
        assert_updated_then_answered(&response, round, round);
    }
}

/// A legacy server that declares what `mcp-server-time` (PyPI) does:
/// tools, and resources without subscriptions or list changes; no logging,
/// no prompts, no completions. It answers `server/discover` with `-32601`.
fn time_like() -> Client {
    use std::io::{BufRead, Write};
    let (ours, theirs) = Transport::memory();
    let (reader, mut writer) = theirs.into_parts();
    thread::spawn(move || {
        for line in reader.lines() {
            let Ok(line) = line else { return };
            let msg: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = msg.get("id").cloned() else {
                continue;
            };
            let result = match msg["method"].as_str().unwrap_or_default() {
                "initialize" => json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {
                        "tools": { "listChanged": false },
                        "resources": { "subscribe": false, "listChanged": false }
                    },
                    "serverInfo": { "name": "time-like", "version": "1" }
                }),
                "tools/list" => json!({ "tools": [
                    { "name": "now", "inputSchema": { "type": "object" } }
                ] }),
                "resources/list" => json!({ "resources": [
                    { "uri": "time://now", "name": "now" }
                ] }),
                "resources/templates/list" => json!({ "resourceTemplates": [] }),
                "tools/call" => json!({ "content": [{ "type": "text", "text": "12:00" }] }),
                method => {
                    let error =
                        json!({ "code": -32601, "message": format!("Method not found: {method}") });
                    let line = json!({ "jsonrpc": "2.0", "id": id, "error": error });
                    let _ = writeln!(writer, "{line}");
                    continue;
                }
            };
            let _ = writeln!(
                writer,
                "{}",
                json!({ "jsonrpc": "2.0", "id": id, "result": result })
            );
        }
    });
    Client::connect(ours).unwrap()
}

/// Issue 43, item 4 (spec 2026-07-28 basic/patterns/subscriptions:
/// "Notification types the server does not support are omitted"): in
/// front of a server without subscriptions, list changes or logging, the
/// proxy claims none of them, in either era, acknowledges none of them,
/// and refuses the legacy requests for them (`-32601`). Before, it
/// advertised `subscribe`, `listChanged` and `logging`, acknowledged a
/// subscription to a resource it could never deliver, and answered
/// `resources/subscribe` and `logging/setLevel` with `{}`.
#[test]
fn the_proxy_claims_only_what_the_server_behind_declares() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let proxy = mcp_stdio::proxy::serve_as(time_like()).unwrap();
    let _stop = Proxied {
        addr: listener.local_addr().unwrap(),
        url: url.clone(),
        stop: proxy.stop_handle(),
    };
    thread::spawn(move || proxy.serve_http(listener, HttpOptions::new()));
    let declared = json!({
        "tools": { "listChanged": false },
        "resources": { "subscribe": false, "listChanged": false }
    });
    let mut failed = Vec::new();
    for era in [EraPolicy::ModernOnly, EraPolicy::LegacyOnly] {
        let client = caller(&url, era);
        let offered = serde_json::to_value(client.server_capabilities()).unwrap();
        if offered != declared {
            failed.push(format!("{era:?} capabilities: {offered}"));
        }
        assert_eq!(
            client.call("now", json!({})).unwrap().text_content(),
            "12:00"
        );
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            resources_list_changed: Some(true),
            resource_subscriptions: Some(vec!["time://now".into()]),
            ..SubscriptionFilter::default()
        };
        if era == EraPolicy::ModernOnly {
            let subscription = client.listen(filter).unwrap();
            if *subscription.accepted() != SubscriptionFilter::default() {
                failed.push(format!("acknowledged {:?}", subscription.accepted()));
            }
            continue;
        }
        for (method, params) in [
            ("resources/subscribe", json!({ "uri": "time://now" })),
            ("logging/setLevel", json!({ "level": "info" })),
        ] {
            match client.request(method, params) {
                Err(Error::Rpc(e)) if e.code == -32601 => {}
                other => failed.push(format!("{method}: {other:?}")),
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// A modern server behind the proxy that logs where it was not asked to:
/// `noisy` writes a log message (that no request asked for), then answers
/// the `wait` call it held, then its own.
fn noisy_behind() -> Client {
    use std::io::{BufRead, Write};
    let (ours, theirs) = Transport::memory();
    let (reader, mut writer) = theirs.into_parts();
    thread::spawn(move || {
        let mut held = None;
        for line in reader.lines() {
            let Ok(line) = line else { return };
            let msg: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = msg.get("id").cloned() else {
                continue;
            };
            let mut send = |line: Value| {
                let _ = writeln!(writer, "{line}");
            };
            let result = match msg["method"].as_str().unwrap_or_default() {
                "server/discover" => json!({
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": { "tools": {}, "logging": {} },
                    "serverInfo": { "name": "noisy", "version": "1" },
                    "resultType": "complete"
                }),
                "tools/list" => json!({ "tools": [
                    { "name": "wait", "inputSchema": { "type": "object" } },
                    { "name": "noisy", "inputSchema": { "type": "object" } }
                ], "resultType": "complete" }),
                "tools/call" if msg["params"]["name"] == "wait" => {
                    held = Some(id);
                    continue;
                }
                "tools/call" => {
                    send(json!({ "jsonrpc": "2.0", "method": "notifications/message",
                        "params": { "level": "error", "data": "the noisy caller's secret" } }));
                    if let Some(held) = held.take() {
                        send(json!({ "jsonrpc": "2.0", "id": held, "result": {
                            "content": [{ "type": "text", "text": "waited" }],
                            "resultType": "complete" } }));
                    }
                    json!({ "content": [{ "type": "text", "text": "noisy" }], "resultType": "complete" })
                }
                method => {
                    let error = json!({ "code": -32601, "message": format!("no {method}") });
                    send(json!({ "jsonrpc": "2.0", "id": id, "error": error }));
                    continue;
                }
            };
            send(json!({ "jsonrpc": "2.0", "id": id, "result": result }));
        }
    });
    Client::builder()
        .era(EraPolicy::ModernOnly)
        .connect(ours)
        .unwrap()
}

/// Issue 47, item 12: a caller never reads another caller's logs. Caller A
/// asks for logs on a call the server behind holds; caller B's call makes
/// that server write a log message no request asked for. Stdio carries no
/// request id for a log, so it belongs to no caller: it must not reach A.
/// Before, the proxy's client gave it to the one request in flight that
/// asked for logs, A's, and A read B's message.
#[test]
fn a_caller_never_reads_another_callers_log() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let proxy = mcp_stdio::proxy::serve_as(noisy_behind()).unwrap();
    let _stop = Proxied {
        addr: listener.local_addr().unwrap(),
        url: url.clone(),
        stop: proxy.stop_handle(),
    };
    thread::spawn(move || proxy.serve_http(listener, HttpOptions::new()));
    let a = caller(&url, EraPolicy::ModernOnly);
    let b = caller(&url, EraPolicy::ModernOnly);
    let (logs_tx, logs) = crossbeam_channel::unbounded();
    let waiting = thread::spawn(move || {
        let options = RequestOptions::new().timeout(WAIT).log(
            mcp_stdio::types::LoggingLevel::Debug,
            move |m| {
                let _ = logs_tx.send(m.data.clone());
            },
        );
        let waited = a.call_tool_with("wait", json!({}), options);
        (a, waited)
    });
    // A's call is held behind; B's then runs (retried until A's is there).
    let deadline = Instant::now() + WAIT;
    loop {
        let noisy = b.call("noisy", json!({})).unwrap();
        assert_eq!(noisy.text_content(), "noisy");
        if waiting.is_finished() || Instant::now() > deadline {
            break;
        }
    }
    let (_a, waited) = waiting.join().unwrap();
    assert!(waited.is_ok(), "{waited:?}");
    let leaked: Vec<Value> = logs.try_iter().collect();
    assert!(leaked.is_empty(), "caller A read: {leaked:?}");
}

/// The threads of this process whose name starts with `prefix` (Linux).
fn threads_named(prefix: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

/// Issue 47, item 12: what callers subscribe to does not grow the proxy
/// without a bound. Each URI a caller names is one subscription behind,
/// published by one thread for them all, and past 1,000 URIs no new one is
/// taken (left out of the acknowledgment). Before, each new URI started a
/// thread of its own (300 URIs, 300 threads) and there was no bound.
#[test]
fn subscriptions_behind_the_proxy_take_one_thread_and_are_bounded() {
    let proxy = proxied();
    let client = caller(&proxy.url, EraPolicy::ModernOnly);
    let before = threads_named("mcp-proxy-res");
    let uris = |from: usize, n: usize| -> Vec<String> {
        (from..from + n)
            .map(|i| format!("mem://thread-test/{i}"))
            .collect()
    };
    let listen = client
        .listen(SubscriptionFilter {
            resource_subscriptions: Some(uris(0, 300)),
            ..SubscriptionFilter::default()
        })
        .unwrap();
    assert_eq!(
        listen
            .accepted()
            .resource_subscriptions
            .as_ref()
            .map(Vec::len),
        Some(300)
    );
    let started = threads_named("mcp-proxy-res").saturating_sub(before);
    assert!(started <= 5, "{started} threads for 300 URIs");
    let more = client
        .listen(SubscriptionFilter {
            resource_subscriptions: Some(uris(300, 1000)),
            ..SubscriptionFilter::default()
        })
        .unwrap();
    let taken = more
        .accepted()
        .resource_subscriptions
        .as_ref()
        .map_or(0, Vec::len);
    assert_eq!(taken, 700, "1,000 URIs at most behind the proxy");
}

/// Issue 47, item 12, found wrong: a caller's subscription that waits for
/// the server behind holds no lock of the proxy's. The server behind
/// takes its time to accept `mem://slow` (its own subscription filter
/// waits); meanwhile a tool is added to the proxy (its registry's write
/// lock) and another caller lists the tools, both at once. The reading was
/// that the proxy held its registry's read lock across that round trip, so
/// that the write waited, and every request behind it; the listen's
/// filter runs with no lock held (`dispatch::methods::accept`), and this
/// passes on the code as it was.
#[test]
fn a_subscription_waiting_behind_the_proxy_holds_no_lock() {
    let (entered_tx, entered) = crossbeam_channel::unbounded::<()>();
    let (release_tx, release) = crossbeam_channel::unbounded::<()>();
    let behind = crate::everything::build_with(move |builder| {
        builder.resource_subscription_filter(move |uri| {
            if uri == "mem://slow" {
                let _ = entered_tx.send(());
                let _ = release.recv_timeout(WAIT);
            }
            true
        })
    });
    let (ours, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let proxy = mcp_stdio::proxy::serve_as(Client::connect(ours).unwrap()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let serving = proxy.clone();
    let _stop = Proxied {
        addr: listener.local_addr().unwrap(),
        url: url.clone(),
        stop: proxy.stop_handle(),
    };
    thread::spawn(move || serving.serve_http(listener, HttpOptions::new()));
    let a = caller(&url, EraPolicy::ModernOnly);
    let subscribing = thread::spawn(move || {
        let listen = a.listen(SubscriptionFilter {
            resource_subscriptions: Some(vec!["mem://slow".into()]),
            ..SubscriptionFilter::default()
        });
        (a, listen.map(|l| l.accepted().clone()))
    });
    entered.recv_timeout(WAIT).unwrap();
    let b = caller(&url, EraPolicy::ModernOnly);
    let started = Instant::now();
    proxy.add_tool(
        Tool::new("added", "Added while a subscription waits."),
        |_ctx, _: Value| Ok(CallToolResult::text("added")),
    );
    let names: Vec<String> = b.tools().map(|t| t.unwrap().name).collect();
    let took = started.elapsed();
    release_tx.send(()).unwrap();
    assert!(names.contains(&"added".to_owned()), "{names:?}");
    assert!(took < Duration::from_secs(2), "the proxy waited {took:?}");
    let (_a, accepted) = subscribing.join().unwrap();
    assert_eq!(
        accepted.unwrap().resource_subscriptions,
        Some(vec!["mem://slow".to_owned()])
    );
}

// ---------------------------------------------------------------------------
// The review of issue 43 (review-43): claims, each a test that failed on
// the code as merged.
// ---------------------------------------------------------------------------

/// Issue 43, item 4 ("refuse what the child cannot do"), for one URI: a
/// server behind that takes subscriptions only to `mem://` URIs leaves
/// `nope://x` out of its acknowledgment, and refuses a legacy
/// `resources/subscribe` to it. The proxy's filter (`proxy::subscribe`)
/// answers `true` whatever the server behind acknowledged, even when its
/// listen failed: the caller is told it will hear updates of `nope://x`,
/// which no one will ever send. Expected: the proxy acknowledges exactly
/// what the server behind did, in both eras.
#[test]
fn the_proxy_acknowledges_only_the_uris_the_server_behind_acknowledged() {
    let only_mem = || {
        crate::everything::build_with(|builder| {
            builder.resource_subscription_filter(|uri| uri.starts_with("mem://"))
        })
    };
    let asked = SubscriptionFilter {
        resource_subscriptions: Some(vec!["mem://counter".into(), "nope://x".into()]),
        ..SubscriptionFilter::default()
    };
    let direct = {
        let (ours, theirs) = Transport::memory();
        let behind = only_mem();
        thread::spawn(move || behind.serve(theirs));
        Client::connect(ours).unwrap()
    };
    let behind_accepted = direct.listen(asked.clone()).unwrap().accepted().clone();
    assert_eq!(
        behind_accepted.resource_subscriptions,
        Some(vec!["mem://counter".to_owned()]),
        "the server behind"
    );
    let proxy = proxied_behind(only_mem());
    let mut failed = Vec::new();
    let modern = caller(&proxy.url, EraPolicy::ModernOnly);
    let accepted = modern.listen(asked).unwrap().accepted().clone();
    if accepted.resource_subscriptions != behind_accepted.resource_subscriptions {
        failed.push(format!(
            "modern: the proxy acknowledged {:?}",
            accepted.resource_subscriptions
        ));
    }
    let legacy = caller(&proxy.url, EraPolicy::LegacyOnly);
    if let Ok(answer) = legacy.request("resources/subscribe", json!({ "uri": "nope://x" })) {
        failed.push(format!(
            "legacy: resources/subscribe nope://x answered {answer}"
        ));
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Found reading the fix of the test above: the proxy asked the server
/// behind with the lock of its subscribed URIs held, so a URI the server
/// behind takes its time to accept (`mem://slow`, its filter waits) held
/// up every other caller's subscription, to any URI, for as long. Expected:
/// a caller of another URI is acknowledged at once meanwhile.
#[test]
fn a_slow_subscription_behind_the_proxy_holds_up_no_other_uri() {
    let (entered_tx, entered) = crossbeam_channel::unbounded::<()>();
    let (release_tx, release) = crossbeam_channel::unbounded::<()>();
    let behind = crate::everything::build_with(move |builder| {
        builder.resource_subscription_filter(move |uri| {
            if uri == "mem://slow" {
                let _ = entered_tx.send(());
                let _ = release.recv_timeout(WAIT);
            }
            true
        })
    });
    // Behind over HTTP, where each request is read on its own: over one
    // stream the server behind would read nothing while its filter waits.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let behind_url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let _behind_stop = Proxied {
        addr: listener.local_addr().unwrap(),
        url: behind_url.clone(),
        stop: behind.stop_handle(),
    };
    thread::spawn(move || behind.serve_http(listener, HttpOptions::new()));
    let client = Client::builder()
        .era(EraPolicy::ModernOnly)
        .connect_url(&behind_url)
        .unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let _stop = Proxied {
        addr: listener.local_addr().unwrap(),
        url: url.clone(),
        stop: proxy.stop_handle(),
    };
    thread::spawn(move || proxy.serve_http(listener, HttpOptions::new()));
    let a = caller(&url, EraPolicy::ModernOnly);
    let slow = thread::spawn(move || {
        let listen = a.listen(SubscriptionFilter {
            resource_subscriptions: Some(vec!["mem://slow".into()]),
            ..SubscriptionFilter::default()
        });
        listen.map(|l| l.accepted().resource_subscriptions.clone())
    });
    entered.recv_timeout(WAIT).unwrap();
    let b = caller(&url, EraPolicy::ModernOnly);
    let started = Instant::now();
    let accepted = b
        .listen(SubscriptionFilter {
            resource_subscriptions: Some(vec!["mem://counter".into()]),
            ..SubscriptionFilter::default()
        })
        .map(|l| l.accepted().resource_subscriptions.clone());
    let took = started.elapsed();
    release_tx.send(()).unwrap();
    assert_eq!(accepted.unwrap(), Some(vec!["mem://counter".to_owned()]));
    assert!(
        took < Duration::from_secs(2),
        "mem://counter waited {took:?}"
    );
    let slow = slow.join().unwrap().unwrap();
    assert_eq!(slow, Some(vec!["mem://slow".to_owned()]));
}

/// Threads of this process named as the proxy's resource threads
/// (`mcp-proxy-resource`, cut to the kernel's 15 bytes).
fn proxy_resource_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == "mcp-proxy-resou")
        .count()
}

/// Unbounded growth through the proxy: each URI a caller names in
/// `resourceSubscriptions` that the proxy has not seen gets a `listen` on
/// the server behind and a thread of the proxy's, kept while the proxy
/// runs (`proxy::subscribe`), whether or not the URI names anything and
/// after the caller's subscription ended. One listen may name 1,000 URIs
/// (`max_subscription_uris`), and any caller may send as many listens as
/// it likes: here 3 listens of 50 made-up URIs each, each cancelled at
/// once, left 150 threads (and 150 listens behind). Expected: what the
/// proxy holds follows its callers' live subscriptions (a handful here,
/// once they ended).
#[test]
fn subscriptions_through_the_proxy_hold_no_thread_after_they_end() {
    let proxy = proxied();
    let client = caller(&proxy.url, EraPolicy::ModernOnly);
    let before = proxy_resource_threads();
    for round in 0..3 {
        let uris = (0..50).map(|i| format!("mem://made-up/{round}/{i}"));
        let subscription = client
            .listen(SubscriptionFilter {
                resource_subscriptions: Some(uris.collect()),
                ..SubscriptionFilter::default()
            })
            .unwrap();
        subscription.cancel();
    }
    let grew = proxy_resource_threads().saturating_sub(before);
    assert!(
        grew < 20,
        "3 cancelled listens of 50 URIs each left {grew} proxy threads behind"
    );
}

/// Review of issue 47, item 12 (review-47h): the proxy's 1,000 URIs are
/// those callers subscribe to now, not every URI any caller ever named.
/// Caller A subscribes to 1,000 URIs and ends its subscription; caller B
/// then subscribes to one new URI. On main the proxy never lets go of a
/// URI (`Subscribed::taken` only grows, each subscription behind kept
/// while the proxy runs): one caller's 1,000 names close the proxy's
/// subscriptions to every later caller, for the proxy's whole life. Now a
/// URI leaves once no caller's subscription names it (each holds it,
/// `UriHold`), when a new one needs the room: while A's listen is open
/// B's is refused, and once A's stream is closed B's is taken. The
/// proxy's server sees that close within 50 ms (`exchange::WATCH`), so B
/// asks again until then (each answer is the event waited for).
#[test]
fn uris_no_caller_subscribes_to_any_more_leave_room_for_new_ones() {
    let proxy = proxied();
    let a = caller(&proxy.url, EraPolicy::ModernOnly);
    let names: Vec<String> = (0..1000).map(|i| format!("mem://gone/{i}")).collect();
    let listen = a
        .listen(SubscriptionFilter {
            resource_subscriptions: Some(names),
            ..SubscriptionFilter::default()
        })
        .unwrap();
    let taken = (listen.accepted().resource_subscriptions.as_ref()).map_or(0, Vec::len);
    assert_eq!(taken, 1000);
    let b = caller(&proxy.url, EraPolicy::ModernOnly);
    let counter = || {
        b.listen(SubscriptionFilter {
            resource_subscriptions: Some(vec!["mem://counter".into()]),
            ..SubscriptionFilter::default()
        })
        .unwrap()
    };
    let refused = counter();
    assert_eq!(
        refused.accepted().resource_subscriptions,
        None,
        "past 1,000 URIs callers name now"
    );
    drop(refused);
    drop(listen);
    a.close().unwrap();
    let deadline = Instant::now() + WAIT;
    let fresh = loop {
        let fresh = counter();
        if fresh.accepted().resource_subscriptions.is_some() || Instant::now() > deadline {
            break fresh;
        }
    };
    assert_eq!(
        fresh.accepted().resource_subscriptions,
        Some(vec!["mem://counter".to_owned()]),
        "a caller's subscription refused for URIs no one listens to any more"
    );
}

/// A modern server behind the proxy that logs late: `plant` answers at
/// once, and the message it logs (no request asked for it) is written
/// just before the answer to the next call, `peek`.
fn late_logger_behind() -> Client {
    use std::io::{BufRead, Write};
    let (ours, theirs) = Transport::memory();
    let (reader, mut writer) = theirs.into_parts();
    thread::spawn(move || {
        let mut planted = false;
        for line in reader.lines() {
            let Ok(line) = line else { return };
            let msg: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = msg.get("id").cloned() else {
                continue;
            };
            let mut send = |line: Value| {
                let _ = writeln!(writer, "{line}");
            };
            let result = match msg["method"].as_str().unwrap_or_default() {
                "server/discover" => json!({
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": { "tools": {}, "logging": {} },
                    "serverInfo": { "name": "late", "version": "1" },
                    "resultType": "complete"
                }),
                "tools/list" => json!({ "tools": [
                    { "name": "plant", "inputSchema": { "type": "object" } },
                    { "name": "peek", "inputSchema": { "type": "object" } }
                ], "resultType": "complete" }),
                "tools/call" if msg["params"]["name"] == "plant" => {
                    planted = true;
                    json!({ "content": [{ "type": "text", "text": "planted" }], "resultType": "complete" })
                }
                "tools/call" => {
                    if std::mem::take(&mut planted) {
                        send(json!({ "jsonrpc": "2.0", "method": "notifications/message",
                            "params": { "level": "error", "data": "the planting caller's secret" } }));
                    }
                    json!({ "content": [{ "type": "text", "text": "peeked" }], "resultType": "complete" })
                }
                method => {
                    let error = json!({ "code": -32601, "message": format!("no {method}") });
                    send(json!({ "jsonrpc": "2.0", "id": id, "error": error }));
                    continue;
                }
            };
            send(json!({ "jsonrpc": "2.0", "id": id, "result": result }));
        }
    });
    Client::builder()
        .era(EraPolicy::ModernOnly)
        .connect(ours)
        .unwrap()
}

/// Review of issue 47, item 12 (review-47h): "no caller reads another's
/// logs" (`proxy::serve_as`) holds only for a log that arrives beside
/// another request. Caller B's call makes the server behind log a message
/// no request asked for, which it writes late (just before its next
/// answer); caller A's call, alone in flight and asking for logs, is that
/// next one. On stdio a log names no request, so by the rule of
/// `a_caller_never_reads_another_callers_log` it belongs to no caller; on
/// main A read it (`route_log`: a request alone in flight since it was
/// sent takes every log). No timing tells such a log from A's own, so now
/// a client of many callers gives a log to none.
#[test]
fn a_late_log_from_the_server_behind_reaches_no_caller() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let proxy = mcp_stdio::proxy::serve_as(late_logger_behind()).unwrap();
    let _stop = Proxied {
        addr: listener.local_addr().unwrap(),
        url: url.clone(),
        stop: proxy.stop_handle(),
    };
    thread::spawn(move || proxy.serve_http(listener, HttpOptions::new()));
    let a = caller(&url, EraPolicy::ModernOnly);
    let b = caller(&url, EraPolicy::ModernOnly);
    assert_eq!(
        b.call("plant", json!({})).unwrap().text_content(),
        "planted"
    );
    let (logs_tx, logs) = crossbeam_channel::unbounded();
    let options =
        RequestOptions::new()
            .timeout(WAIT)
            .log(mcp_stdio::types::LoggingLevel::Debug, move |m| {
                let _ = logs_tx.send(m.data.clone());
            });
    let peeked = a.call_tool_with("peek", json!({}), options).unwrap();
    assert!(matches!(peeked, mcp_stdio::Outcome::Complete(_)));
    let leaked: Vec<Value> = logs.try_iter().collect();
    assert!(leaked.is_empty(), "caller A read: {leaked:?}");
}

/// Review of issue 47, item 12 (review-47h): a caller that stops reading
/// its listen stream holds up no other caller's call. The proxy publishes
/// an update from under its subscription's lock (`publish_from`, on the
/// publishing thread), and every forwarded call takes each subscription's
/// lock before its reply (`Updates::publish_waiting`): while the
/// publishing thread waits, up to the write timeout, on a listener whose
/// buffers are full, caller B's `echo` waits with it. Updates of a 64 KiB
/// URI fill the stuck listener's buffers within a few hundred; B calls
/// `echo` meanwhile. Before the fix one of B's calls took about the write
/// timeout (3 s then; 10 s by default, once for each stuck listener); 13 s
/// once the updates were paced. (The review's 2,000 updates at once
/// measured the flood: B's calls waited as long with A reading.) Now a
/// published event never waits on a client (`server::http::body`).
///
/// The write timeout is long (60 s) and the bound a third of it: the
/// defect held a call for the whole timeout, while a loaded machine (the
/// whole suite on two CPUs beside CI's other steps) delayed B's calls up
/// to 4 s behind the 19 MiB the proxy forwards meanwhile, which a 3 s
/// timeout took for the defect (CI, 2026-12-06); with three helpers
/// building beside the suite (load average 18 on two CPUs) one call took
/// 18.6 s, past the 10 s a 30 s timeout gave (2026-12-07). A call that
/// passes takes no longer for it.
#[test]
fn a_caller_that_stops_reading_its_listen_holds_up_no_other_callers_call() {
    use std::io::{Read, Write};
    let behind = crate::everything::build();
    let notifier = behind.notifier();
    let (ours, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let proxy = mcp_stdio::proxy::serve_as(Client::connect(ours).unwrap()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}/mcp");
    let timeout = Duration::from_secs(60);
    let _stop = Proxied {
        addr,
        url: url.clone(),
        stop: proxy.stop_handle(),
    };
    thread::spawn(move || proxy.serve_http(listener, HttpOptions::new().write_timeout(timeout)));
    let uri = format!("mem://{}", "x".repeat(64 * 1024));
    let listen = crate::http::body(
        1,
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": [uri] } }),
    );
    let mut stuck = std::net::TcpStream::connect(addr).unwrap();
    stuck.set_read_timeout(Some(WAIT)).unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        listen.len()
    );
    for (name, value) in crate::http::mirrored("subscriptions/listen", None) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&listen);
    stuck.write_all(request.as_bytes()).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("acknowledged") {
        let n = stuck.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
    // The listener reads no more; the server behind publishes 300
    // updates over 3 s (19 MiB: more than the socket's buffers and what
    // the server holds for a stream, `UNSENT_LIMIT`), at a pace the proxy
    // keeps up with, so that B's calls wait for no flood, only for A.
    let publishing = thread::spawn(move || {
        for _ in 0..300 {
            notifier.resource_updated(&uri);
            thread::sleep(Duration::from_millis(10));
        }
    });
    let b = caller(&url, EraPolicy::ModernOnly);
    let mut longest = Duration::ZERO;
    let mut published = false;
    // Calls while the updates come, and one after the last.
    while !published {
        published = publishing.is_finished();
        let one = Instant::now();
        let echoed = b.call("echo", json!({ "text": "hi" })).unwrap();
        assert_eq!(echoed.text_content(), "hi");
        longest = longest.max(one.elapsed());
    }
    publishing.join().unwrap();
    assert!(
        longest < timeout / 3,
        "a call of caller B waited {longest:?} for caller A's stuck stream (write timeout {timeout:?})"
    );
    drop(stuck);
}

/// Review of issue 47, item 12 (review-47h): a URI is acknowledged only
/// while the proxy's subscription to it behind lives. When that
/// subscription ends, the URI stayed in `Subscribed::taken`: a later
/// caller's listen of it was acknowledged at once, and no update of it
/// ever reached that caller. (The review ended it by overflowing the
/// proxy's client behind a listener that stopped reading, which held the
/// proxy's publishing thread; a stuck listener no longer holds it, so here
/// the server behind ends its subscriptions.) A later caller's listen is
/// then acknowledged only with a subscription behind, and hears the
/// updates published after it: tried until the proxy has seen the end
/// (a few milliseconds), which on main never came.
#[test]
fn a_uri_whose_subscription_behind_ended_is_not_acknowledged_for_nothing() {
    let behind = crate::everything::build();
    let notifier = behind.notifier();
    let (ours, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let proxy = mcp_stdio::proxy::serve_as(Client::connect(ours).unwrap()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}/mcp");
    let _stop = Proxied {
        addr,
        url: url.clone(),
        stop: proxy.stop_handle(),
    };
    thread::spawn(move || proxy.serve_http(listener, HttpOptions::new()));
    let uri = "mem://ended".to_owned();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec![uri.clone()]),
        ..SubscriptionFilter::default()
    };
    let a = caller(&url, EraPolicy::ModernOnly);
    let _first = a.listen(filter.clone()).unwrap();
    // The server behind ends the proxy's subscription to `uri`.
    notifier.close_subscriptions();
    let c = caller(&url, EraPolicy::ModernOnly);
    let deadline = Instant::now() + 4 * WAIT;
    loop {
        let mut subscription = c.listen(filter.clone()).unwrap();
        let acknowledged = subscription
            .accepted()
            .resource_subscriptions
            .as_ref()
            .is_some_and(|uris| uris.contains(&uri));
        notifier.resource_updated(&uri);
        let heard = subscription.recv_timeout(Duration::from_millis(300));
        if acknowledged && matches!(heard, Ok(Some(SubscriptionEvent::ResourceUpdated { .. }))) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "acknowledged {acknowledged}, and then heard {heard:?}, {:?} after the end",
            4 * WAIT
        );
    }
}

/// Issue 49, item 6: the proxy left the server's Tasks extension out of
/// what it advertises, and called the server without it, so a tool the
/// server runs only as a task (`failing_job`) could not be called through
/// it at all. Through the proxy a caller that declares the extension gets
/// the tool's result, the input the task behind asks for on the way
/// included; one that does not gets the server's `-32021`.
#[test]
fn the_tasks_extension_of_the_server_behind_passes_through() {
    use mcp_stdio::types::TASKS_EXTENSION;
    let proxy = proxied();
    let tasks = Client::builder()
        .tasks(true)
        .on_elicitation(|_params| {
            let mut content = serde_json::Map::new();
            content.insert("confirm".into(), json!(true));
            Ok(ElicitResult::accept(content))
        })
        .connect_url(&proxy.url)
        .unwrap();
    let extensions = tasks.server_capabilities().extensions.unwrap_or_default();
    assert!(extensions.contains_key(TASKS_EXTENSION), "{extensions:?}");
    let failing = tasks.call_tool("failing_job", json!({})).unwrap();
    let failing = failing.into_result().unwrap();
    assert_eq!(failing.is_error, Some(true));
    assert!(failing.text_content().contains("the job ran and failed"));
    let asked = tasks.call_tool("confirm_delete", json!({ "filename": "a.txt" }));
    assert_eq!(
        asked.unwrap().into_result().unwrap().text_content(),
        "Deleted a.txt"
    );
    let computed = tasks.call_tool("slow_compute", json!({ "seconds": 0, "label": "x" }));
    assert!(computed.unwrap().into_result().unwrap().is_error != Some(true));
    let plain = caller(&proxy.url, EraPolicy::ModernOnly);
    match plain.call_tool("failing_job", json!({})) {
        Err(Error::Rpc(e)) => assert_eq!(e.code, -32021, "{e:?}"),
        other => panic!("failing_job without the extension: {other:?}"),
    }
}

/// A transport to `behind` whose requests are counted by method on their
/// way: `(transport, count of tools/list requests)`.
fn counted_transport(behind: Server) -> (Transport, Arc<AtomicUsize>) {
    use std::io::{BufRead, Write};
    let (ours, relay_front) = Transport::memory();
    let (relay_back, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let listed = Arc::new(AtomicUsize::new(0));
    let (mut front_in, mut front_out) = relay_front.into_parts();
    let (mut back_in, mut back_out) = relay_back.into_parts();
    let counted = Arc::clone(&listed);
    thread::spawn(move || {
        let mut line = String::new();
        while front_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            if line.contains(r#""method":"tools/list""#) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            if back_out.write_all(line.as_bytes()).is_err() || back_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    thread::spawn(move || {
        let mut line = String::new();
        while back_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            if front_out.write_all(line.as_bytes()).is_err() || front_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    (ours, listed)
}

/// Claim (review-proxy10): `lists::follow_list_changes` lists again for
/// each list change the server behind announces, one by one, however many
/// wait: a server that announces 300 changes in a burst (a buggy loop, a
/// hostile child, a registry rebuilt tool by tool) costs 300 full
/// `tools/list` round trips, each as large as the list. One listing after
/// a burst answers all the changes in it. First found wrong (12 listings
/// on main), but those were only the listings made before the caller next
/// looked: the proxy went on listing, once for each of the 301 changes
/// (flaky13: under load the caller looked later, and 38 were counted).
/// Counted now once the proxy has taken every change of the burst: a
/// prompt added behind after it is mirrored only then (the changes are
/// taken in order, and only a change of the prompts lists them).
#[test]
fn a_burst_of_list_changes_behind_costs_the_proxy_a_few_listings() {
    const BURST: usize = 300;
    let behind = crate::everything::build_with(|builder| {
        builder.tool(
            Tool::new("burst", "Announces a burst of tool list changes."),
            |ctx, _: Value| {
                for _ in 0..BURST {
                    ctx.notifier().tools_list_changed();
                }
                ctx.server()
                    .add_tool(Tool::new("last", "Added last."), |_ctx, _: Value| {
                        Ok::<_, mcp_stdio::ErrorObject>(CallToolResult::text("last"))
                    });
                Ok::<_, mcp_stdio::ErrorObject>(CallToolResult::text("burst"))
            },
        )
    });
    let (transport, listed) = counted_transport(behind.clone());
    let client = Arc::new(Client::connect(transport).unwrap());
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client)).unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::connect(ours).unwrap();
    let at_start = listed.load(Ordering::SeqCst);
    caller.call("burst", json!({})).unwrap();
    assert!(
        offers_within_wait(&caller, "last"),
        "the proxy never offered `last`"
    );
    behind.add_prompt(Prompt::new("sentinel", "Added after the burst."), |_, _| {
        Ok(GetPromptResult::new(vec![PromptMessage::text(
            Role::User,
            "sentinel",
        )]))
    });
    let deadline = Instant::now() + WAIT;
    while !(caller.prompts().filter_map(Result::ok)).any(|p| p.name == "sentinel") {
        assert!(
            Instant::now() < deadline,
            "the proxy never offered `sentinel`"
        );
        thread::sleep(Duration::from_millis(20));
    }
    let listings = listed.load(Ordering::SeqCst) - at_start;
    assert!(
        listings <= 20,
        "{listings} tools/list requests behind the proxy for a burst of {BURST} changes"
    );
}

/// A transport to `behind` that holds the first `subscriptions/listen` on
/// its way until `release` says (or `WAIT` passes), and says on
/// `holding` that it holds it; every other line passes at once.
fn listen_held(
    behind: Server,
    holding: crossbeam_channel::Sender<()>,
    release: crossbeam_channel::Receiver<()>,
) -> Transport {
    use std::io::{BufRead, Write};
    let (ours, relay_front) = Transport::memory();
    let (relay_back, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let (mut front_in, mut front_out) = relay_front.into_parts();
    let (mut back_in, back_out) = relay_back.into_parts();
    let back_out = Arc::new(std::sync::Mutex::new(back_out));
    thread::spawn(move || {
        let mut line = String::new();
        let mut held = false;
        while front_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            if !held && line.contains(r#""method":"subscriptions/listen""#) {
                held = true;
                let (listen, back_out) = (line.clone(), Arc::clone(&back_out));
                let release = release.clone();
                let _ = holding.send(());
                thread::spawn(move || {
                    let _ = release.recv_timeout(WAIT);
                    let mut back_out = back_out.lock().unwrap();
                    let _ = back_out.write_all(listen.as_bytes());
                    let _ = back_out.flush();
                });
            } else {
                let mut back_out = back_out.lock().unwrap();
                if back_out.write_all(line.as_bytes()).is_err() || back_out.flush().is_err() {
                    break;
                }
            }
            line.clear();
        }
    });
    thread::spawn(move || {
        let mut line = String::new();
        while back_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            if front_out.write_all(line.as_bytes()).is_err() || front_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    ours
}

/// Waits until `caller` lists a tool named `name`; false after `WAIT`.
fn offers_within_wait(caller: &Client, name: &str) -> bool {
    let deadline = Instant::now() + WAIT;
    while !(caller.tools().filter_map(Result::ok)).any(|t| t.name == name) {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Claim (flaky13): `serve_as` lists the server behind, then its lists
/// thread sends the one listen that hears the server's list changes; a
/// change the server makes between the two (before the listen is
/// acknowledged) is announced to nobody, and `follow_list_changes` listed
/// again only when the link had changed meanwhile (a restart). The proxy
/// then offers the old list until the next change. This is how
/// `a_burst_of_list_changes_behind_costs_the_proxy_a_few_listings` failed
/// under load: its lists thread had not sent the listen yet when the
/// burst, and the tool it adds, went by. (Since review proxy14 the lists
/// are listed once, after the ack: `serve_as` waits for it, and the tool
/// comes while it waits.)
#[test]
fn a_change_behind_before_the_proxys_listen_is_acknowledged_is_mirrored() {
    let behind = crate::everything::build();
    let (held_tx, held) = crossbeam_channel::bounded(1);
    let (release, release_rx) = crossbeam_channel::bounded(1);
    let client = Client::connect(listen_held(behind.clone(), held_tx, release_rx)).unwrap();
    let starting = thread::spawn(move || mcp_stdio::proxy::serve_as(client).unwrap());
    held.recv_timeout(WAIT).expect("the proxy sent no listen");
    // The listen not yet acknowledged: a tool comes behind.
    behind.add_tool(
        Tool::new("late", "Added before the listen."),
        |_ctx, _: Value| Ok::<_, mcp_stdio::ErrorObject>(CallToolResult::text("late")),
    );
    release.send(()).unwrap();
    let proxy = starting.join().unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::connect(ours).unwrap();
    assert!(
        offers_within_wait(&caller, "late"),
        "the proxy never offered `late`, added behind before its listen was acknowledged"
    );
}

/// A transport to `behind` that notes when the listen was acknowledged
/// (`.1`), and puts an error (`-32603`, as a server that failed on it) in
/// place of the first answer to a `tools/list` that lists `late`; every
/// other line passes.
fn the_first_listing_of_late_fails(behind: Server) -> (Transport, Arc<AtomicBool>) {
    use std::io::{BufRead, Write};
    let (ours, relay_front) = Transport::memory();
    let (relay_back, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let acknowledged = Arc::new(AtomicBool::new(false));
    let to_fail = AtomicBool::new(true);
    let (mut front_in, mut front_out) = relay_front.into_parts();
    let (mut back_in, mut back_out) = relay_back.into_parts();
    thread::spawn(move || {
        let mut line = String::new();
        while front_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            if back_out.write_all(line.as_bytes()).is_err() || back_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    let heard = Arc::clone(&acknowledged);
    thread::spawn(move || {
        let mut line = String::new();
        while back_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            if line.contains("notifications/subscriptions/acknowledged") {
                heard.store(true, Ordering::SeqCst);
            }
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let lists_late = (message["result"]["tools"].as_array())
                .is_some_and(|tools| tools.iter().any(|t| t["name"] == "late"));
            if lists_late && to_fail.swap(false, Ordering::SeqCst) {
                let error = json!({"jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32603, "message": "busy"}});
                line = format!("{error}\n");
            }
            if front_out.write_all(line.as_bytes()).is_err() || front_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    (ours, acknowledged)
}

/// Claim (lead, flaky13): `follow_list_changes` skips a listing behind
/// that fails (`let Ok(changed) = mirror(..) else { continue }`): the
/// change it was for is lost, and the proxy offers the old list until the
/// server announces another change. One `tools/list` answered with an
/// error (a server busy for a moment, a timeout) must not cost the change.
#[test]
fn a_listing_behind_that_fails_once_is_listed_again() {
    let behind = crate::everything::build();
    let (transport, acknowledged) = the_first_listing_of_late_fails(behind.clone());
    let client = Client::connect(transport).unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::connect(ours).unwrap();
    let deadline = Instant::now() + WAIT;
    while !acknowledged.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the proxy's listen was never acknowledged"
        );
        thread::sleep(Duration::from_millis(5));
    }
    behind.add_tool(
        Tool::new("late", "Added once the proxy listens."),
        |_ctx, _: Value| Ok::<_, mcp_stdio::ErrorObject>(CallToolResult::text("late")),
    );
    assert!(
        offers_within_wait(&caller, "late"),
        "the proxy never offered `late`: the listing after its change failed, and none followed"
    );
}

/// Claim (review proxy10): a call that runs longer than the proxy's
/// request timeout while the server behind reports progress is not cut
/// by that timeout: each progress restarts it, as a caller that asked for
/// progress expects of a server that reports it (spec basic/patterns/
/// cancellation, "Timeouts"; the caller keeps its own timeout, and the
/// proxy passes a cancellation on). `serve-http` gives its client a 60 s
/// timeout unless `--timeout`: a tool of two minutes that reported
/// progress every second failed there at 60 s.
#[test]
fn a_call_reporting_progress_outlives_the_proxys_request_timeout() {
    let behind = Server::builder("slow", "1.0.0")
        .tool(
            Tool::new("slow", "Reports progress every 100 ms for 1.5 s."),
            |ctx, _: Value| {
                for step in 1..=15 {
                    thread::sleep(Duration::from_millis(100));
                    ctx.progress(f64::from(step), Some(15.0), None);
                }
                Ok(CallToolResult::text("done"))
            },
        )
        .build();
    let (ours, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let client = Client::builder()
        .request_timeout(Duration::from_millis(500))
        .connect(ours)
        .unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = proxy.stop_handle();
    thread::spawn(move || proxy.serve_http(listener, HttpOptions::new()));
    let through = caller(&url, EraPolicy::ModernOnly);
    let (tx, rx) = crossbeam_channel::unbounded();
    let options = RequestOptions::new().timeout(WAIT).on_progress(move |p| {
        let _ = tx.send(p.progress);
    });
    let done = through.call_tool_with("slow", json!({}), options);
    let seen = rx.try_iter().count();
    stop.stop();
    let done = done.unwrap_or_else(|e| panic!("after {seen} progress notifications: {e}"));
    let mcp_stdio::Outcome::Complete(done) = done else {
        panic!("{done:?}");
    };
    assert_eq!(done.text_content(), "done");
    assert_eq!(seen, 15);
}

/// A transport to `behind` that never passes a `tasks/get` on (a server
/// behind that hangs on a poll), and notes when a `tasks/cancel` passes.
fn polls_swallowed(behind: Server) -> (Transport, Arc<std::sync::Mutex<Option<Instant>>>) {
    use std::io::{BufRead, Write};
    let (ours, relay_front) = Transport::memory();
    let (relay_back, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let cancelled = Arc::new(std::sync::Mutex::new(None));
    let (mut front_in, mut front_out) = relay_front.into_parts();
    let (mut back_in, mut back_out) = relay_back.into_parts();
    let noted = Arc::clone(&cancelled);
    thread::spawn(move || {
        let mut line = String::new();
        while front_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            if line.contains(r#""method":"tasks/cancel""#) {
                noted.lock().unwrap().get_or_insert_with(Instant::now);
            }
            let swallowed = line.contains(r#""method":"tasks/get""#);
            if !swallowed
                && (back_out.write_all(line.as_bytes()).is_err() || back_out.flush().is_err())
            {
                break;
            }
            line.clear();
        }
    });
    thread::spawn(move || {
        let mut line = String::new();
        while back_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            if front_out.write_all(line.as_bytes()).is_err() || front_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    (ours, cancelled)
}

/// A caller that cancels the proxy's task while the proxy waits for a
/// `tasks/get` the server behind never answers: the proxy cancelled the
/// task behind only once that poll timed out (its client's request
/// timeout, 60 s in `serve-http`), leaving the task running meanwhile.
/// The wait for each request of the task now gives up on the caller's
/// cancellation, and `tasks/cancel` goes at once.
#[test]
fn a_caller_that_cancels_during_a_hung_poll_cancels_the_task_behind_at_once() {
    use mcp_stdio::ToolCallStart;
    let (transport, cancelled) = polls_swallowed(crate::everything::build());
    let client = Client::builder()
        .request_timeout(3 * WAIT)
        .connect(transport)
        .unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::builder().tasks(true).connect(ours).unwrap();
    let started = caller.start_tool_call(
        "slow_compute",
        json!({ "seconds": 60, "label": "x" }),
        RequestOptions::new(),
    );
    let ToolCallStart::Task(handle) = started.unwrap() else {
        panic!("the proxy answered a caller of the extension without a task");
    };
    // The proxy's first poll behind goes out at once and hangs.
    thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    handle.cancel().unwrap();
    let deadline = asked + WAIT;
    loop {
        if let Some(at) = *cancelled.lock().unwrap() {
            assert!(at >= asked, "tasks/cancel went before the caller cancelled");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no tasks/cancel behind within {WAIT:?} of the caller's"
        );
        thread::sleep(Duration::from_millis(10));
    }
    proxy.stop_handle().stop();
}

/// A transport to `behind` through a relay that writes down each line
/// sent behind, as JSON. A reply from behind whose id is in `hold` waits
/// until the proxy sends `notifications/cancelled` for it (which the
/// relay keeps from the server): a reply that crossed the cancellation
/// on the wire. With `garble_polls`, each answer to a `tasks/get` is
/// replaced by it (its `result` or `error`, the id kept, `TASK_ID` in it
/// the id polled).
fn relay_noting(
    behind: Server,
    hold_method: Option<&'static str>,
    garble_polls: Option<Value>,
) -> (Transport, Arc<std::sync::Mutex<Vec<Value>>>) {
    use std::io::{BufRead, Write};
    let (ours, relay_front) = Transport::memory();
    let (relay_back, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    // The held request's id, and whether its cancellation went by.
    let held = Arc::new(std::sync::Mutex::new((None::<Value>, false)));
    let (mut front_in, mut front_out) = relay_front.into_parts();
    let (mut back_in, mut back_out) = relay_back.into_parts();
    let (noted, holding) = (Arc::clone(&sent), Arc::clone(&held));
    let polls = Arc::clone(&sent);
    thread::spawn(move || {
        let mut line = String::new();
        while front_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            noted.lock().unwrap().push(message.clone());
            let mut swallowed = false;
            {
                let mut held = holding.lock().unwrap();
                if hold_method.is_some()
                    && message["method"].as_str() == hold_method
                    && held.0.is_none()
                {
                    held.0 = Some(message["id"].clone());
                }
                if message["method"] == "notifications/cancelled"
                    && held.0.as_ref() == Some(&message["params"]["requestId"])
                {
                    held.1 = true;
                    swallowed = true;
                }
            }
            if !swallowed
                && (back_out.write_all(line.as_bytes()).is_err() || back_out.flush().is_err())
            {
                break;
            }
            line.clear();
        }
    });
    thread::spawn(move || {
        let mut line = String::new();
        while back_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let wait = message.get("method").is_none()
                && held.lock().unwrap().0.as_ref() == message.get("id");
            if wait {
                let deadline = Instant::now() + WAIT;
                while !held.lock().unwrap().1 && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(5));
                }
            }
            let poll = message.get("method").is_none()
                && (polls.lock().unwrap().iter())
                    .any(|m| m["method"] == "tasks/get" && Some(&m["id"]) == message.get("id"));
            if let Some(garbled) = garble_polls.as_ref().filter(|_| poll) {
                let mut reply = garbled.clone();
                reply["jsonrpc"] = json!("2.0");
                reply["id"] = message["id"].clone();
                let asked = (polls.lock().unwrap().iter())
                    .find(|m| Some(&m["id"]) == message.get("id"))
                    .map(|m| m["params"]["taskId"].as_str().unwrap_or("").to_owned());
                line = reply
                    .to_string()
                    .replace("TASK_ID", &asked.unwrap_or_default())
                    + "\n";
            }
            if front_out.write_all(line.as_bytes()).is_err() || front_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    (ours, sent)
}

/// A proxy over `transport` served over memory to a caller that declares
/// the Tasks extension, whose `slow_compute` of 60 s is under way as the
/// proxy's task.
fn slow_task_through(transport: Transport) -> (Server, Client, mcp_stdio::TaskHandle) {
    use mcp_stdio::ToolCallStart;
    let client = Client::builder()
        .request_timeout(3 * WAIT)
        .connect(transport)
        .unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::builder().tasks(true).connect(ours).unwrap();
    let started = caller.start_tool_call(
        "slow_compute",
        json!({ "seconds": 60, "label": "x" }),
        RequestOptions::new(),
    );
    let ToolCallStart::Task(handle) = started.unwrap() else {
        panic!("the proxy answered a caller of the extension without a task");
    };
    (proxy, caller, handle)
}

/// Waits until a line sent behind has `method`; returns it.
fn sent_behind(sent: &std::sync::Mutex<Vec<Value>>, method: &str) -> Option<Value> {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if let Some(m) = (sent.lock().unwrap().iter()).find(|m| m["method"] == method) {
            return Some(m.clone());
        }
        thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Claim (review-proxy11): `follow_task` now waits for each `tasks/get`
/// with `wait_unless`, which on the caller's cancellation sends
/// `notifications/cancelled` for that `tasks/get`. The library's own rule
/// for the requests of a task (src/client/tasks.rs, spec extensions/tasks
/// "Task Cancellation": `notifications/cancelled` MUST NOT be used for
/// task cancellation) is to forget them quietly: `tasks/cancel` stands
/// for them all.
#[test]
fn a_caller_that_cancels_during_a_hung_poll_sends_no_notifications_cancelled_behind() {
    // The first poll is answered only once cancelled: a hung poll.
    let (transport, sent) = relay_noting(crate::everything::build(), Some("tasks/get"), None);
    let (proxy, _caller, handle) = slow_task_through(transport);
    let poll = sent_behind(&sent, "tasks/get").expect("no poll behind");
    handle.cancel().unwrap();
    assert!(
        sent_behind(&sent, "tasks/cancel").is_some(),
        "no tasks/cancel behind"
    );
    let cancelled: Vec<Value> = (sent.lock().unwrap().iter())
        .filter(|m| m["method"] == "notifications/cancelled")
        .cloned()
        .collect();
    proxy.stop_handle().stop();
    assert!(
        !cancelled
            .iter()
            .any(|m| m["params"]["requestId"] == poll["id"]),
        "notifications/cancelled for the tasks/get {}: {cancelled:?}",
        poll["id"]
    );
}

/// Claim (review-proxy11): the server behind answers the proxy's
/// `tools/call` with a task just as the caller cancels: its answer
/// crosses the proxy's `notifications/cancelled` on the wire (a server
/// MAY answer a request it had finished). The client drops that late
/// answer, so the proxy never learns the task's id, and the task behind
/// runs on with nobody to cancel it.
#[test]
fn a_task_behind_whose_creation_crosses_the_callers_cancel_is_cancelled() {
    let (transport, sent) = relay_noting(crate::everything::build(), Some("tools/call"), None);
    let (proxy, _caller, handle) = slow_task_through(transport);
    let call = sent_behind(&sent, "tools/call").expect("no tools/call behind");
    handle.cancel().unwrap();
    let cancel = sent_behind(&sent, "tasks/cancel");
    proxy.stop_handle().stop();
    assert!(
        cancel.is_some(),
        "no tasks/cancel behind within {WAIT:?} for the task the server made of tools/call {}",
        call["id"]
    );
}

/// Claim (review-proxy11): a hostile server behind answers `tasks/get`
/// with a result of the wrong shape; the proxy gives up on the task, and
/// the task behind must not run on. Found wrong since e7402ab (each
/// give-up sends `tasks/cancel`); kept as a guard.
#[test]
fn a_poll_answered_with_the_wrong_shape_cancels_the_task_behind() {
    let (transport, sent) = relay_noting(
        crate::everything::build(),
        None,
        Some(json!({ "result": { "resultType": "complete", "status": 42 } })),
    );
    let (proxy, _caller, handle) = slow_task_through(transport);
    let cancel = sent_behind(&sent, "tasks/cancel");
    let ended = handle.wait_timeout(WAIT);
    proxy.stop_handle().stop();
    assert!(
        cancel.is_some(),
        "no tasks/cancel behind after a garbled poll"
    );
    assert!(ended.is_err(), "{ended:?}");
}

/// Claim (review-proxy11): when a `tasks/get` behind fails with the
/// server's JSON-RPC error, `follow_task` passes that error on as it is,
/// as the error of the caller's call: the caller's `tools/call` fails with
/// `-32602 Invalid params` naming the server's task id, a request the
/// caller never made and an id it must never see (module docs: "a caller
/// never sees the server's").
#[test]
fn a_failed_poll_behind_is_not_passed_off_as_the_callers_error() {
    let (transport, sent) = relay_noting(
        crate::everything::build(),
        None,
        Some(json!({ "error": { "code": -32602, "message": "no task TASK_ID" } })),
    );
    let (proxy, _caller, handle) = slow_task_through(transport);
    let ended = handle.wait_timeout(WAIT);
    let cancel = sent_behind(&sent, "tasks/cancel");
    let poll = sent_behind(&sent, "tasks/get").expect("no poll behind");
    let theirs = poll["params"]["taskId"].as_str().unwrap().to_owned();
    proxy.stop_handle().stop();
    assert!(
        cancel.is_some(),
        "no tasks/cancel behind after a failed poll"
    );
    match ended {
        Err(Error::Rpc(e)) => assert!(
            e.code != -32602 && !e.message.contains(&theirs),
            "the caller got the server's error for tasks/get: {e:?}"
        ),
        other => panic!("{other:?}"),
    }
}

/// Claim (review-proxy11): the proxy stops serving while it follows a
/// task behind: the task behind must not run on with nobody left to take
/// its result (a `tasks/cancel` goes behind).
#[test]
fn a_proxy_that_stops_cancels_the_task_it_follows() {
    let (transport, sent) = relay_noting(crate::everything::build(), None, None);
    let (proxy, _caller, _handle) = slow_task_through(transport);
    assert!(sent_behind(&sent, "tasks/get").is_some(), "no poll behind");
    proxy.stop_handle().stop();
    assert!(
        sent_behind(&sent, "tasks/cancel").is_some(),
        "no tasks/cancel behind within {WAIT:?} of the proxy's stop"
    );
}

/// How many lines sent behind have `method`, once no more come: the count
/// after `settle` with none added (a second `tasks/cancel` would come from
/// a thread the test cannot join; a late one can only hide, never fail).
fn count_behind(sent: &std::sync::Mutex<Vec<Value>>, method: &str, settle: Duration) -> usize {
    let count = || {
        (sent.lock().unwrap().iter())
            .filter(|m| m["method"] == method)
            .count()
    };
    let mut last = count();
    loop {
        thread::sleep(settle);
        let now = count();
        if now == last {
            return now;
        }
        last = now;
    }
}

/// Claim (review-proxy12): the caller cancels its task just as the proxy
/// stops, from two threads, the stop twice: whoever takes the work out
/// sends the one `tasks/cancel` behind, so exactly one goes (not none,
/// not two). Found false.
#[test]
fn a_cancel_racing_two_stops_sends_one_tasks_cancel_behind() {
    let (transport, sent) = relay_noting(crate::everything::build(), None, None);
    let (proxy, _caller, handle) = slow_task_through(transport);
    assert!(sent_behind(&sent, "tasks/get").is_some(), "no poll behind");
    let stops: Vec<_> = (0..2)
        .map(|_| {
            let stop = proxy.stop_handle();
            thread::spawn(move || stop.stop())
        })
        .collect();
    let _ = handle.cancel();
    for stop in stops {
        stop.join().unwrap();
    }
    assert!(
        sent_behind(&sent, "tasks/cancel").is_some(),
        "no tasks/cancel behind"
    );
    let cancels = count_behind(&sent, "tasks/cancel", Duration::from_millis(300));
    assert_eq!(
        cancels,
        1,
        "tasks/cancel behind: {:?}",
        sent.lock().unwrap()
    );
}

/// Claim (review-proxy12): the proxy stops while its `tools/call` behind
/// is unanswered (no task followed yet, nothing kept for the stop); the
/// answer, a task, comes after the stop: that task must still get its
/// `tasks/cancel` (the late hook if the stop gave the call up, the
/// stop's work run at once if the follower starts after it), once.
/// Found false: the stop does not give the call up; the task its answer
/// names is cancelled by the stop's work, run at once.
#[test]
fn a_task_made_behind_after_the_proxy_stopped_is_cancelled_once() {
    let (transport, sent) = relay_noting(crate::everything::build(), Some("tools/call"), None);
    let (proxy, _caller, _handle) = slow_task_through(transport);
    sent_behind(&sent, "tools/call").expect("no tools/call behind");
    proxy.stop_handle().stop();
    // The stop does not give up the call behind: its answer comes when
    // the relay stops holding it, `WAIT` after it came.
    let cancel = sent_behind(&sent, "tasks/cancel").or_else(|| sent_behind(&sent, "tasks/cancel"));
    assert!(
        cancel.is_some(),
        "no tasks/cancel behind for the task made after the stop: {:?}",
        sent.lock().unwrap()
    );
    let cancels = count_behind(&sent, "tasks/cancel", Duration::from_millis(300));
    assert_eq!(
        cancels,
        1,
        "tasks/cancel behind: {:?}",
        sent.lock().unwrap()
    );
}

/// A relay to `behind`: `front` sees each line from the client to the
/// server, and may hold it (until the channel it returns says, or `WAIT`
/// passes; the lines after it pass); `back` sees each line from the
/// server to the client, and may rewrite it.
fn relay(
    behind: Server,
    mut front: impl FnMut(&str) -> Option<crossbeam_channel::Receiver<()>> + Send + 'static,
    mut back: impl FnMut(String) -> String + Send + 'static,
) -> Transport {
    use std::io::{BufRead, Write};
    let (ours, relay_front) = Transport::memory();
    let (relay_back, theirs) = Transport::memory();
    thread::spawn(move || behind.serve(theirs));
    let (mut front_in, mut front_out) = relay_front.into_parts();
    let (mut back_in, back_out) = relay_back.into_parts();
    let back_out = Arc::new(std::sync::Mutex::new(back_out));
    thread::spawn(move || {
        let mut line = String::new();
        while front_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            let out = std::mem::take(&mut line);
            let back_out = Arc::clone(&back_out);
            let write = move |out: String| {
                let mut back_out = back_out.lock().unwrap();
                back_out.write_all(out.as_bytes()).is_ok() && back_out.flush().is_ok()
            };
            match front(&out) {
                Some(release) => {
                    thread::spawn(move || {
                        let _ = release.recv_timeout(WAIT);
                        write(out)
                    });
                }
                None if !write(out) => break,
                None => {}
            }
        }
    });
    thread::spawn(move || {
        let mut line = String::new();
        while back_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            let out = back(std::mem::take(&mut line));
            if front_out.write_all(out.as_bytes()).is_err() || front_out.flush().is_err() {
                break;
            }
        }
    });
    ours
}

/// Claim (review-flaky13): the proxy's one listen behind ends
/// `Overflowed` when more list changes wait than the client holds for a
/// subscription (the line limit, 16 MiB by default: a server that floods
/// `notifications/tools/list_changed` while a listing is answered slowly),
/// and `follow_list_changes` then lists once and ends: every later change
/// behind is heard by nobody, and the proxy offers a stale list for good.
/// A flood must cost listings, not the following of changes.
#[test]
fn a_flood_of_list_changes_behind_does_not_end_the_proxys_following() {
    let behind = Server::builder("flooding", "1").enable_tools().build();
    let (held_tx, held) = crossbeam_channel::unbounded::<()>();
    let (release, release_rx) = crossbeam_channel::bounded::<()>(1);
    let holding = Arc::new(AtomicBool::new(false));
    // The ids of the tools/list requests behind, and how many of them were
    // answered.
    let ids = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let answered = Arc::new(AtomicUsize::new(0));
    let (holds, noted, seen, counted) = (
        Arc::clone(&holding),
        Arc::clone(&ids),
        Arc::clone(&ids),
        Arc::clone(&answered),
    );
    let transport = relay(
        behind.clone(),
        move |line| {
            if !line.contains(r#""method":"tools/list""#) {
                return None;
            }
            let message: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            noted.lock().unwrap().push(message["id"].clone());
            holds.swap(false, Ordering::SeqCst).then(|| {
                let _ = held_tx.send(());
                release_rx.clone()
            })
        },
        move |line| {
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if message.get("id").is_some() && seen.lock().unwrap().contains(&message["id"]) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            line
        },
    );
    let client = Client::builder()
        .max_line_bytes(16 * 1024)
        .connect(transport)
        .unwrap();
    let client = Arc::new(client);
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client)).unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::connect(ours).unwrap();
    // A listing behind held (the one after the ack, or the one for this
    // change), then a flood past the client's hold for the listen.
    holding.store(true, Ordering::SeqCst);
    behind.notifier().tools_list_changed();
    held.recv_timeout(WAIT)
        .expect("no tools/list behind was held");
    for _ in 0..2_000 {
        behind.notifier().tools_list_changed();
    }
    // The client's reader has taken every notification of the flood once
    // this answer, sent behind them, is read.
    client.discover().unwrap();
    let before = answered.load(Ordering::SeqCst);
    release.send(()).unwrap();
    // The held listing, and the one after it, answered: a tool added now
    // is heard only by a listen.
    let deadline = Instant::now() + WAIT;
    while answered.load(Ordering::SeqCst) < before + 2 {
        assert!(Instant::now() < deadline, "the proxy listed no more");
        thread::sleep(Duration::from_millis(5));
    }
    behind.add_tool(
        Tool::new("after", "Added after the flood."),
        |_ctx, _: Value| Ok::<_, mcp_stdio::ErrorObject>(CallToolResult::text("after")),
    );
    assert!(
        offers_within_wait(&caller, "after"),
        "the proxy never offered `after`: its listen behind overflowed and was not sent again"
    );
}

/// Claim (review-flaky13): a listing behind that fails part way (the
/// resources listed and mirrored, which announces their change to the
/// proxy's callers; the templates' page failing) is tried again whole,
/// and the retry, finding the resources as mirrored, announces the
/// server's change once more (`announced && !changed`): each caller lists
/// again for nothing. The change is announced once.
#[test]
fn a_change_whose_listing_failed_part_way_is_announced_once() {
    use mcp_stdio::types::Resource;
    let behind = Server::builder("partly", "1")
        .enable_tools()
        .enable_resources()
        .enable_prompts()
        .build();
    let failing = Arc::new(AtomicBool::new(false));
    let fails = Arc::clone(&failing);
    let templates_id = Arc::new(std::sync::Mutex::new(None::<Value>));
    let noted = Arc::clone(&templates_id);
    // Set once a templates listing was answered after the one failed:
    // the retry's announcement, if any, is made before the lists thread
    // takes the next change.
    let failed_in = Arc::new(AtomicBool::new(false));
    let retried = Arc::new(AtomicBool::new(false));
    let retried_in = Arc::clone(&retried);
    let transport = relay(
        behind.clone(),
        move |line| {
            if line.contains(r#""method":"resources/templates/list""#) {
                let message: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                *noted.lock().unwrap() = Some(message["id"].clone());
            }
            None
        },
        move |line| {
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let id = templates_id.lock().unwrap().clone();
            if id.is_some_and(|id| id == message["id"]) {
                if fails.swap(false, Ordering::SeqCst) {
                    failed_in.store(true, Ordering::SeqCst);
                    let error = json!({"jsonrpc": "2.0", "id": message["id"],
                        "error": {"code": -32603, "message": "busy"}});
                    return format!("{error}\n");
                }
                if failed_in.load(Ordering::SeqCst) {
                    retried_in.store(true, Ordering::SeqCst);
                }
            }
            line
        },
    );
    let client = Client::connect(transport).unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::connect(ours).unwrap();
    let mut listen = caller
        .listen(SubscriptionFilter {
            resources_list_changed: Some(true),
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        })
        .unwrap();
    // The listing after the proxy's ack, done: a prompt added behind is
    // mirrored only after it.
    behind.add_prompt(Prompt::new("first", "A first change."), |_, _| {
        Ok(GetPromptResult::new(vec![PromptMessage::text(
            Role::User,
            "first",
        )]))
    });
    let deadline = Instant::now() + WAIT;
    while !(caller.prompts().filter_map(Result::ok)).any(|p| p.name == "first") {
        assert!(Instant::now() < deadline, "the proxy never offered `first`");
        thread::sleep(Duration::from_millis(20));
    }
    while listen.try_recv().unwrap().is_some() {}
    failing.store(true, Ordering::SeqCst);
    behind.add_resource(Resource::new("test://added", "added"), |_ctx, req| {
        Ok(mcp_stdio::types::ReadResourceResult::new(vec![
            mcp_stdio::types::ResourceContents::text(&req.uri, "added"),
        ]))
    });
    // Once the retry answered, a tool added behind is announced after
    // whatever the retry announced.
    let deadline = Instant::now() + WAIT;
    while !(caller.resources().filter_map(Result::ok)).any(|r| r.uri == "test://added") {
        assert!(
            Instant::now() < deadline,
            "the proxy never offered `test://added`"
        );
        thread::sleep(Duration::from_millis(20));
    }
    while !retried.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the failed templates listing was not tried again"
        );
        thread::sleep(Duration::from_millis(5));
    }
    behind.add_tool(Tool::new("sentinel", "Added after."), |_ctx, _: Value| {
        Ok::<_, mcp_stdio::ErrorObject>(CallToolResult::text("sentinel"))
    });
    let mut announced = 0;
    loop {
        match listen.recv_timeout(WAIT) {
            Ok(Some(SubscriptionEvent::ResourcesListChanged)) => announced += 1,
            Ok(Some(SubscriptionEvent::ToolsListChanged)) => break,
            Ok(Some(_)) => {}
            other => panic!("no tools change came: {other:?}"),
        }
    }
    assert_eq!(
        announced, 1,
        "the resource added behind was announced {announced} times"
    );
}

/// Claim (review-flaky13): a proxy whose lists thread waits to try a
/// failed listing again (0.1 s to 1.6 s, 3.1 s in all) holds up its stop.
/// Found false: the thread is never waited for; kept as a guard.
#[test]
fn a_proxy_that_stops_during_a_listing_retry_stops_at_once() {
    let behind = Server::builder("failing", "1").enable_tools().build();
    let failing = Arc::new(AtomicBool::new(false));
    let (fails, retrying) = (Arc::clone(&failing), Arc::new(AtomicUsize::new(0)));
    let failed = Arc::clone(&retrying);
    let transport = relay(
        behind.clone(),
        |_| None,
        move |line| {
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if fails.load(Ordering::SeqCst) && message["result"]["tools"].is_array() {
                failed.fetch_add(1, Ordering::SeqCst);
                let error = json!({"jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32603, "message": "busy"}});
                return format!("{error}\n");
            }
            line
        },
    );
    let proxy = mcp_stdio::proxy::serve_as(Client::connect(transport).unwrap()).unwrap();
    failing.store(true, Ordering::SeqCst);
    behind.notifier().tools_list_changed();
    let deadline = Instant::now() + WAIT;
    while retrying.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline, "no listing behind failed twice");
        thread::sleep(Duration::from_millis(5));
    }
    let started = Instant::now();
    proxy.stop_handle().stop();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the stop took {:?}",
        started.elapsed()
    );
}

/// `count` once it stays the same for `settle` (what a thread the test
/// cannot join still does: a late addition can only hide, never fail).
fn settled(count: &AtomicUsize, settle: Duration) -> usize {
    let mut last = count.load(Ordering::SeqCst);
    loop {
        thread::sleep(settle);
        let now = count.load(Ordering::SeqCst);
        if now == last {
            return now;
        }
        last = now;
    }
}

/// The page cap of the proxy's client in the tests of lists whose pages
/// never end (`ClientBuilder::max_pages`; 1,000 by default): a listing
/// fails at the cap all the same, in 50 pages rather than 1,000 (2.5 s
/// of a debug build alone, 22 s on a loaded machine, each test). A
/// listing tried again costs another 50: what they count stays apart
/// from one listing.
const PAGE_CAP: usize = 50;

/// How many `tools/list` pages the proxy asks of a server behind for one
/// change of its tools, once no more come, when every page the server
/// answers names a next one: `cursor(n)` on its `n`th page. (The server
/// behind is asked for its first page each time: the relay takes the
/// cursor out of the request, and puts one in the answer.) The proxy's
/// client stops a listing at [`PAGE_CAP`] pages.
fn pages_asked_for_one_change(cursor: fn(usize) -> String) -> usize {
    use std::io::{BufRead, Write};
    let behind = Server::builder("paging", "1").enable_tools().build();
    let (ours, relay_front) = Transport::memory();
    let (relay_back, theirs) = Transport::memory();
    let serving = behind.clone();
    thread::spawn(move || serving.serve(theirs));
    let (mut front_in, mut front_out) = relay_front.into_parts();
    let (mut back_in, mut back_out) = relay_back.into_parts();
    let endless = Arc::new(AtomicBool::new(false));
    let pages = Arc::new(AtomicUsize::new(0));
    let (paging, asked) = (Arc::clone(&endless), Arc::clone(&pages));
    thread::spawn(move || {
        let mut line = String::new();
        while front_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            let mut message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if message["method"] == "tools/list" {
                asked.fetch_add(1, Ordering::SeqCst);
                if let Some(params) = message["params"].as_object_mut() {
                    params.remove("cursor");
                }
                line = format!("{message}\n");
            }
            if back_out.write_all(line.as_bytes()).is_err() || back_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    thread::spawn(move || {
        let mut line = String::new();
        let mut n = 0;
        while back_in.read_line(&mut line).is_ok_and(|n| n > 0) {
            let mut message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if paging.load(Ordering::SeqCst) && message["result"]["tools"].is_array() {
                message["result"]["nextCursor"] = json!(cursor(n));
                n += 1;
                line = format!("{message}\n");
            }
            if front_out.write_all(line.as_bytes()).is_err() || front_out.flush().is_err() {
                break;
            }
            line.clear();
        }
    });
    let client = Client::builder().max_pages(PAGE_CAP).connect(ours).unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    // The listings of the proxy's start are over.
    let before = settled(&pages, Duration::from_millis(300));
    endless.store(true, Ordering::SeqCst);
    behind.notifier().tools_list_changed();
    let deadline = Instant::now() + WAIT;
    while pages.load(Ordering::SeqCst) == before {
        assert!(Instant::now() < deadline, "the change was not listed");
        thread::sleep(Duration::from_millis(5));
    }
    // Longer than the first waits between two retries (0.1 s, 0.2 s).
    let asked = settled(&pages, Duration::from_millis(500)) - before;
    proxy.stop_handle().stop();
    asked
}

/// Claim (review proxy14): a server behind whose tools never end (a new
/// `nextCursor` on every page) fails each listing at the client's page
/// cap (1,000 pages by default, `Error::Protocol`; [`PAGE_CAP`] here),
/// and `follow_list_changes` tries that listing again five times: 6,000
/// page requests for one change, none of which could pass. A listing
/// that cannot pass is not retried until the next change.
#[test]
fn a_list_behind_whose_pages_never_end_costs_one_listing_per_change() {
    let pages = pages_asked_for_one_change(|n| format!("page-{n}"));
    assert!(
        pages <= PAGE_CAP,
        "{pages} tools/list pages asked behind the proxy for one change"
    );
}

/// Claim (review proxy14): as above, for a server whose cursor repeats
/// (the client ends the listing at the second page, a cycle).
#[test]
fn a_list_behind_whose_cursor_repeats_costs_one_listing_per_change() {
    let pages = pages_asked_for_one_change(|_| "again".to_owned());
    assert!(
        pages <= 2,
        "{pages} tools/list pages asked behind the proxy for one change"
    );
}

/// Claim (review proxy14): every list behind is listed twice as the proxy
/// starts: once by `serve_as`, once more by `follow_list_changes` when
/// its listen is acknowledged. Once is enough when the listen comes
/// first (a change before it is still mirrored:
/// `a_change_behind_before_the_proxys_listen_is_acknowledged_is_mirrored`).
#[test]
fn the_proxy_lists_each_list_behind_once_as_it_starts() {
    let listed = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let acknowledged = Arc::new(AtomicBool::new(false));
    let listings = Arc::new(AtomicUsize::new(0));
    let (noted, counted, heard) = (
        Arc::clone(&listed),
        Arc::clone(&listings),
        Arc::clone(&acknowledged),
    );
    let transport = relay(
        crate::everything::build(),
        move |line| {
            let message: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            if let Some(method) = message["method"].as_str().filter(|m| m.ends_with("/list")) {
                noted.lock().unwrap().push(method.to_owned());
                counted.fetch_add(1, Ordering::SeqCst);
            }
            None
        },
        move |line| {
            if line.contains("notifications/subscriptions/acknowledged") {
                heard.store(true, Ordering::SeqCst);
            }
            line
        },
    );
    let proxy = mcp_stdio::proxy::serve_as(Client::connect(transport).unwrap()).unwrap();
    let deadline = Instant::now() + WAIT;
    while !acknowledged.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the proxy's listen was never acknowledged"
        );
        thread::sleep(Duration::from_millis(5));
    }
    // Whatever the proxy lists once its listen is acknowledged.
    settled(&listings, Duration::from_millis(300));
    proxy.stop_handle().stop();
    let mut listed = listed.lock().unwrap().clone();
    listed.sort();
    assert_eq!(
        listed,
        [
            "prompts/list",
            "resources/list",
            "resources/templates/list",
            "tools/list"
        ],
        "the lists asked behind the proxy as it started"
    );
}

/// Claim (review proxy14): a server behind that floods list changes
/// again and again overflows the proxy's listen each time (more changes
/// wait than the client holds for it), and each overflow writes a note
/// to stderr: a flood that never ends fills the proxy's log. Found
/// false: the note goes through the reader's `NoteLimiter` (at most 10 a
/// second, with a count of the rest); kept as a guard.
#[test]
fn a_listen_behind_that_overflows_again_and_again_is_noted_at_most_ten_times_a_second() {
    const SPELLS: usize = 60;
    let behind = Server::builder("flooding", "1").enable_tools().build();
    let (held_tx, held) = crossbeam_channel::unbounded::<()>();
    let (release, release_rx) = crossbeam_channel::unbounded::<()>();
    let holding = Arc::new(AtomicBool::new(false));
    let listens = Arc::new(AtomicUsize::new(0));
    let (holds, listened) = (Arc::clone(&holding), Arc::clone(&listens));
    let transport = relay(
        behind.clone(),
        move |line| {
            if line.contains(r#""method":"subscriptions/listen""#) {
                listened.fetch_add(1, Ordering::SeqCst);
            }
            let hold = line.contains(r#""method":"tools/list""#) && holds.load(Ordering::SeqCst);
            hold.then(|| {
                let _ = held_tx.send(());
                release_rx.clone()
            })
        },
        |line| line,
    );
    let notes = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let noted = Arc::clone(&notes);
    let client = Client::builder()
        .max_line_bytes(2048)
        .trace_problems(move |note| noted.lock().unwrap().push(note.to_owned()))
        .connect(transport)
        .unwrap();
    let client = Arc::new(client);
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client)).unwrap();
    // Every tools/list held from here on, till the test lets it go.
    holding.store(true, Ordering::SeqCst);
    behind.notifier().tools_list_changed();
    let started = Instant::now();
    for spell in 0..SPELLS {
        // A listing held; a flood past the client's hold for the listen,
        // taken by the client's reader once this answer behind it is.
        held.recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no listing held in spell {spell}"));
        for _ in 0..100 {
            behind.notifier().tools_list_changed();
        }
        client.discover().unwrap();
        // The held listing answered, then the one for the changes taken
        // before the overflow; the listen is sent again, and its listing
        // of every list is the next spell's held one.
        release.send(()).unwrap();
        held.recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no second listing held in spell {spell}"));
        release.send(()).unwrap();
    }
    let elapsed = started.elapsed();
    holding.store(false, Ordering::SeqCst);
    release.send(()).unwrap();
    proxy.stop_handle().stop();
    assert!(
        listens.load(Ordering::SeqCst) >= SPELLS,
        "the listen behind was sent {} times",
        listens.load(Ordering::SeqCst)
    );
    let overflows = || {
        (notes.lock().unwrap().iter())
            .filter(|n| n.contains("ended subscription"))
            .count()
    };
    let deadline = Instant::now() + WAIT;
    while overflows() == 0 {
        assert!(Instant::now() < deadline, "no overflow was noted");
        thread::sleep(Duration::from_millis(5));
    }
    let windows = elapsed.as_secs() as usize + 1;
    let noted = overflows();
    assert!(
        noted <= 10 * windows,
        "{noted} overflow notes in {elapsed:?} for {SPELLS} overflows"
    );
}

/// Claim (review proxy14c): `lists::mirror_each` stops at the first list
/// that fails. A `tools/list` behind whose pages never end fails at the
/// client's page cap (`Error::Protocol`, which `may_pass` keeps for the
/// next change; [`PAGE_CAP`] pages here), and the tools stay to be
/// listed: on every later change they are listed first, fail again, and
/// the list that did change (the prompts here) is never mirrored. One
/// list's failure must cost only that list.
#[test]
fn a_list_behind_whose_pages_never_end_holds_up_no_other_list() {
    let behind = Server::builder("paging", "1")
        .enable_tools()
        .enable_prompts()
        .build();
    let endless = Arc::new(AtomicBool::new(false));
    let pages = Arc::new(AtomicUsize::new(0));
    // The ids of the tools/list requests, answered with one more page.
    let ids = Arc::new(std::sync::Mutex::new(
        std::collections::HashSet::<String>::new(),
    ));
    let (asked, noted, paging, answered) = (
        Arc::clone(&pages),
        Arc::clone(&ids),
        Arc::clone(&endless),
        Arc::clone(&ids),
    );
    let transport = relay(
        behind.clone(),
        move |line| {
            let message: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            if message["method"] == "tools/list" {
                asked.fetch_add(1, Ordering::SeqCst);
                noted.lock().unwrap().insert(message["id"].to_string());
            }
            None
        },
        move |line| {
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let id = message["id"].to_string();
            if paging.load(Ordering::SeqCst) && answered.lock().unwrap().remove(&id) {
                let page = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"tools": [], "nextCursor": format!("page-{id}")}});
                return format!("{page}\n");
            }
            line
        },
    );
    let client = (Client::builder().max_pages(PAGE_CAP))
        .connect(transport)
        .unwrap();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::connect(ours).unwrap();
    let before = settled(&pages, Duration::from_millis(300));
    endless.store(true, Ordering::SeqCst);
    behind.notifier().tools_list_changed();
    let deadline = Instant::now() + WAIT;
    while pages.load(Ordering::SeqCst) == before {
        assert!(Instant::now() < deadline, "the change was not listed");
        thread::sleep(Duration::from_millis(5));
    }
    // The endless listing over (failed at the page cap).
    let stuck = settled(&pages, Duration::from_millis(500));
    behind.add_prompt(Prompt::new("later", "Added after."), |_, _| {
        Ok(GetPromptResult::new(vec![PromptMessage::text(
            Role::User,
            "later",
        )]))
    });
    let deadline = Instant::now() + WAIT;
    while !(caller.prompts().filter_map(Result::ok)).any(|p| p.name == "later") {
        assert!(
            Instant::now() < deadline,
            "the proxy never offered the prompt `later`: the endless tools/list held it up"
        );
        thread::sleep(Duration::from_millis(20));
    }
    // The prompts' change listed the prompts only: the tools, stuck, wait
    // for a change of theirs (before, any change listed them again, and
    // under load the prompt waited behind another 1,000 pages: another
    // PAGE_CAP here).
    let more = settled(&pages, Duration::from_millis(300)) - stuck;
    assert!(
        more < 10,
        "{more} tools/list pages asked for a prompts change"
    );
    proxy.stop_handle().stop();
}

/// Claim (review proxy14c): since proxy14 the lists thread sends the
/// listen first, and a listen that fails with the link dead is taken for
/// a restart to come: `serve_as` answers `Ok` at once, with nothing
/// mirrored. On a client that does not restart its server (one connected
/// over a transport) no restart ever comes: `serve_as` of a server that
/// died answers `Ok` with a proxy whose lists stay empty for good (before
/// proxy14 its first listing failed, and so did `serve_as`).
#[test]
fn serve_as_a_dead_server_that_no_restart_follows_is_an_error() {
    let behind = crate::everything::build();
    let (ours, theirs) = Transport::memory();
    let stop = behind.stop_handle();
    let serving = thread::spawn(move || behind.serve(theirs));
    let client = Client::connect(ours).unwrap();
    stop.stop();
    let _ = serving.join();
    let deadline = Instant::now() + WAIT;
    while client.discover().is_ok() {
        assert!(Instant::now() < deadline, "the server behind never died");
        thread::sleep(Duration::from_millis(10));
    }
    match mcp_stdio::proxy::serve_as(client) {
        Err(_) => {}
        Ok(proxy) => panic!(
            "serve_as answered Ok for a dead server no restart follows ({} tools mirrored)",
            tools_offered(&proxy)
        ),
    }
}

/// Claim (review proxy14c): `serve_as` waits for the ack of its listen;
/// a server behind that never answers it holds `serve_as` up to the
/// client's request timeout, and no longer (its docs), the lists then
/// listed. Found false (kept as a guard).
#[test]
fn serve_as_a_server_that_never_acknowledges_the_listen_returns_after_the_request_timeout() {
    let (_never, swallowed) = crossbeam_channel::bounded::<()>(1);
    let transport = relay(
        crate::everything::build(),
        move |line| {
            (line.contains(r#""method":"subscriptions/listen""#)).then(|| swallowed.clone())
        },
        |line| line,
    );
    let client = Client::builder()
        .request_timeout(Duration::from_millis(500))
        .connect(transport)
        .unwrap();
    let started = Instant::now();
    let proxy = mcp_stdio::proxy::serve_as(client).unwrap();
    let took = started.elapsed();
    assert!(took < WAIT / 2, "serve_as took {took:?}");
    assert!(tools_offered(&proxy) > 0, "the lists were not listed");
    proxy.stop_handle().stop();
}

/// Claim (review proxy14c): a server behind that answers the proxy's
/// listen with an error (one that has no `subscriptions/listen`) leaves
/// `serve_as` waiting. Found false: the error is the listen's answer, and
/// the lists are listed at once (kept as a guard).
#[test]
fn serve_as_a_server_that_refuses_the_listen_returns_with_its_lists() {
    let listen_id = Arc::new(std::sync::Mutex::new(None::<Value>));
    let (noted, refused) = (Arc::clone(&listen_id), Arc::clone(&listen_id));
    let transport = relay(
        crate::everything::build(),
        move |line| {
            let message: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            if message["method"] == "subscriptions/listen" {
                *noted.lock().unwrap() = Some(message["id"].clone());
            }
            None
        },
        move |line| {
            if !line.contains("notifications/subscriptions/acknowledged") {
                return line;
            }
            let id = refused.lock().unwrap().clone().unwrap_or(Value::Null);
            let error = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}});
            format!("{error}\n")
        },
    );
    let started = Instant::now();
    let proxy = mcp_stdio::proxy::serve_as(Client::connect(transport).unwrap()).unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "serve_as took {took:?}");
    assert!(tools_offered(&proxy) > 0, "the lists were not listed");
    proxy.stop_handle().stop();
}

/// Claim (review proxy14c): an application that closes its client while
/// `serve_as` waits for the listen's ack leaves `serve_as` waiting the
/// request timeout (60 s by default). Found false: the close fails the
/// listen at once (kept as a guard).
#[test]
fn closing_the_client_while_serve_as_waits_for_the_ack_ends_the_wait() {
    let (held_tx, held) = crossbeam_channel::bounded(1);
    let (_never, swallowed) = crossbeam_channel::bounded::<()>(1);
    let transport = relay(
        crate::everything::build(),
        move |line| {
            let listen = line.contains(r#""method":"subscriptions/listen""#);
            if listen {
                let _ = held_tx.try_send(());
            }
            listen.then(|| swallowed.clone())
        },
        |line| line,
    );
    let client = Arc::new(Client::connect(transport).unwrap());
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let starting = Arc::clone(&client);
    thread::spawn(move || {
        let _ = done_tx.send(mcp_stdio::proxy::serve_as(starting).map(drop));
    });
    held.recv_timeout(WAIT).expect("the proxy sent no listen");
    let _ = client.close_shared();
    let ended = done.recv_timeout(Duration::from_secs(10));
    assert!(
        ended.is_ok(),
        "serve_as still waits after the client was closed"
    );
}

/// How many tools `proxy` offers a caller.
fn tools_offered(proxy: &Server) -> usize {
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::connect(ours).unwrap();
    caller.tools().filter_map(Result::ok).count()
}

/// Claim (review proxy14c): a change the server behind makes after it
/// acknowledged the proxy's listen, while the first listing is under way
/// (its answer already made, without the change), is not mirrored: the
/// lists thread enters its loop with nothing pending. Found false: the
/// change reaches the listen, which holds it till the loop takes it, and
/// the tools are listed again (kept as a guard).
#[test]
fn a_change_behind_during_the_first_listing_is_mirrored() {
    let behind = crate::everything::build();
    let (held_tx, held) = crossbeam_channel::bounded(1);
    let (release, release_rx) = crossbeam_channel::bounded::<()>(1);
    let acknowledged = Arc::new(AtomicBool::new(false));
    let heard = Arc::clone(&acknowledged);
    let mut holding = true;
    let transport = relay(
        behind.clone(),
        |_| None,
        move |line| {
            if line.contains("notifications/subscriptions/acknowledged") {
                heard.store(true, Ordering::SeqCst);
            }
            let listing = line.contains(r#""tools":["#);
            if holding && listing && heard.load(Ordering::SeqCst) {
                // The first listing's answer, made: held till the change.
                holding = false;
                let _ = held_tx.send(());
                let _ = release_rx.recv_timeout(WAIT);
            }
            line
        },
    );
    let client = Client::connect(transport).unwrap();
    let starting = thread::spawn(move || mcp_stdio::proxy::serve_as(client).unwrap());
    held.recv_timeout(WAIT).expect("no listing after the ack");
    behind.add_tool(
        Tool::new("during", "Added during the first listing."),
        |_ctx, _: Value| Ok::<_, mcp_stdio::ErrorObject>(CallToolResult::text("during")),
    );
    release.send(()).unwrap();
    let proxy = starting.join().unwrap();
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = Client::connect(ours).unwrap();
    assert!(
        offers_within_wait(&caller, "during"),
        "the proxy never offered `during`, added behind during its first listing"
    );
    proxy.stop_handle().stop();
}
