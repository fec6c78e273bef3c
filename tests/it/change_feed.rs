//! `ServerBuilder::change_feed`: what one replica publishes reaches the
//! subscriptions held by another, through a feed (here an in-memory bus
//! standing in for Redis pub/sub), once, and only what stays local stays
//! local.

use std::sync::{Arc, Mutex};

use mcp_stdio::types::{CallToolResult, Tool};
use mcp_stdio::{Change, ChangeFeed, MemoryTaskStore, Server};
use serde_json::{Value, json};

use crate::support::{Peer, request, server_meta};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The replicas' side of a bus: each replica's deliveries, by its number.
type Deliveries = Arc<Mutex<Vec<(usize, Box<dyn Fn(Change) + Send + Sync>)>>>;

/// One replica's end of an in-memory bus: what it sends reaches every
/// other replica, in order, on the sending thread; a replica never gets
/// its own changes back.
struct BusEnd {
    replica: usize,
    bus: Deliveries,
    sent: Arc<Mutex<Vec<Change>>>,
}

impl ChangeFeed for BusEnd {
    fn send(&self, change: &Change) {
        self.sent.lock().unwrap().push(change.clone());
        // Through JSON, as a real bus carries it.
        let wire = serde_json::to_string(change).unwrap();
        for (replica, deliver) in self.bus.lock().unwrap().iter() {
            if *replica != self.replica {
                deliver(serde_json::from_str(&wire).unwrap());
            }
        }
    }

    fn receive(&self, deliver: Box<dyn Fn(Change) + Send + Sync>) {
        self.bus.lock().unwrap().push((self.replica, deliver));
    }
}

/// The two ends of a new bus.
fn bus_ends() -> (BusEnd, BusEnd) {
    let (bus, sent) = (Deliveries::default(), Arc::new(Mutex::new(Vec::new())));
    let end = |replica| BusEnd {
        replica,
        bus: Arc::clone(&bus),
        sent: Arc::clone(&sent),
    };
    (end(0), end(1))
}

/// Two replicas of one server on one bus, and what each sent on it.
fn replicas() -> (Server, Server, Arc<Mutex<Vec<Change>>>) {
    let bus = Deliveries::default();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let replica = |n: usize| {
        let feed = BusEnd {
            replica: n,
            bus: Arc::clone(&bus),
            sent: Arc::clone(&sent),
        };
        Server::builder("replicated", "1.0.0")
            .inline_tool(
                Tool::new("touch", "Publishes a change."),
                |ctx, args: Value| {
                    let _ = ctx;
                    Ok(CallToolResult::text(args.to_string()))
                },
            )
            .enable_resources()
            .change_feed(feed)
            .build()
    };
    (replica(0), replica(1), sent)
}

fn listen(id: &str) -> Value {
    request(
        id,
        "subscriptions/listen",
        json!({ "notifications": {
            "toolsListChanged": true,
            "resourceSubscriptions": ["file:///a"]
        } }),
    )
}

fn delivered(id: &str, method: &str, extra: Value) -> Value {
    let mut params = json!({ "_meta": { SUBSCRIPTION_ID: id } });
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

#[test]
fn a_change_published_on_one_replica_reaches_the_listens_of_both_once() {
    let (a, b, sent) = replicas();
    let mut on_a = Peer::start(&a);
    let mut on_b = Peer::start(&b);
    on_a.send(&listen("sa"));
    on_b.send(&listen("sb"));
    assert_eq!(
        on_a.recv()["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        on_b.recv()["method"],
        "notifications/subscriptions/acknowledged"
    );

    a.notifier().tools_list_changed();
    a.notifier().resource_updated("file:///a");
    a.notifier().resource_updated("file:///not-asked-for");
    let tools = "notifications/tools/list_changed";
    let updated = "notifications/resources/updated";
    for (peer, id) in [(&on_a, "sa"), (&on_b, "sb")] {
        assert_eq!(peer.recv(), delivered(id, tools, json!({})));
        assert_eq!(
            peer.recv(),
            delivered(id, updated, json!({ "uri": "file:///a" }))
        );
    }
    // B's own change goes the other way.
    b.notifier().tools_list_changed();
    assert_eq!(on_a.recv(), delivered("sa", tools, json!({})));
    assert_eq!(on_b.recv(), delivered("sb", tools, json!({})));
    assert_eq!(
        *sent.lock().unwrap(),
        [
            Change::ToolsListChanged,
            Change::ResourceUpdated {
                uri: "file:///a".into()
            },
            Change::ResourceUpdated {
                uri: "file:///not-asked-for".into()
            },
            Change::ToolsListChanged,
        ]
    );

    // Closing subscriptions is local: A's stream ends, B's stays open.
    a.notifier().close_subscriptions();
    let closed = on_a.recv();
    assert_eq!(closed["id"], "sa");
    assert_eq!(closed["result"]["_meta"][SUBSCRIPTION_ID], "sa");
    assert_eq!(sent.lock().unwrap().len(), 4, "a close is not sent");
    let (rest_a, _) = on_a.finish();
    assert_eq!(rest_a, Vec::<Value>::new());
    let (rest_b, _) = on_b.finish();
    // B's listen ends at its own end of input, with its final result.
    let mut meta = server_meta(&b);
    meta[SUBSCRIPTION_ID] = json!("sb");
    assert_eq!(
        rest_b,
        [
            json!({ "jsonrpc": "2.0", "id": "sb", "result": { "resultType": "complete", "_meta": meta } })
        ]
    );
}

#[test]
fn a_change_reads_back_from_the_json_a_feed_carries() {
    let changes = [
        (
            Change::ToolsListChanged,
            json!({ "kind": "toolsListChanged" }),
        ),
        (
            Change::PromptsListChanged,
            json!({ "kind": "promptsListChanged" }),
        ),
        (
            Change::ResourcesListChanged,
            json!({ "kind": "resourcesListChanged" }),
        ),
        (
            Change::ResourceUpdated {
                uri: "file:///x".into(),
            },
            json!({ "kind": "resourceUpdated", "uri": "file:///x" }),
        ),
    ];
    for (change, wire) in changes {
        assert_eq!(serde_json::to_value(&change).unwrap(), wire);
        assert_eq!(serde_json::from_value::<Change>(wire).unwrap(), change);
    }
}

#[test]
fn a_task_is_answered_and_cancelled_through_the_replica_that_does_not_run_it() {
    use crate::tasks::{accept, cancel_task, poll, start, update};
    // One task store (in memory here, shared as a Redis one would be) and
    // one bus: the fixture server twice.
    let store = Arc::new(MemoryTaskStore::default());
    let (end_a, end_b) = bus_ends();
    let replica = |end: BusEnd| {
        let store = Arc::clone(&store);
        crate::everything::build_with(move |builder| builder.task_store(store).change_feed(end))
    };
    let (a, b) = (replica(end_a), replica(end_b));
    let (mut on_a, mut on_b) = (Peer::start(&a), Peer::start(&b));

    // Runs on A, waits for a confirmation; answered through B.
    let id = start(
        &mut on_a,
        "confirm_delete",
        json!({ "filename": "across.txt" }),
    );
    poll(&mut on_b, &id, &["input_required"]);
    update(
        &mut on_b,
        &id,
        json!({ "confirm": accept(json!({ "confirm": true })) }),
    );
    let done = poll(&mut on_b, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(
        done["result"]["content"][0]["text"], "Deleted across.txt",
        "{done}"
    );

    // Runs on A, cancelled through B: A's handler stops (its token trips)
    // and the task stays cancelled, not completed by a late handler.
    let id = start(
        &mut on_a,
        "confirm_delete",
        json!({ "filename": "kept.txt" }),
    );
    poll(&mut on_b, &id, &["input_required"]);
    cancel_task(&mut on_b, &id);
    let cancelled = poll(&mut on_a, &id, &["cancelled", "completed", "failed"]);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    on_a.finish_quietly();
    on_b.finish_quietly();
}
