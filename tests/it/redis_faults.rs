//! Replicas under Redis faults (issue 48), each against a real
//! `redis-server`: a stall (`DEBUG SLEEP`, on a Redis of the test's own),
//! a reply lost after Redis applied the command, Redis out of reach, a
//! subscriber cut or gone silent (through [`proxy::Proxy`]), a replica
//! gone, a forged message on the feed. Ignored by `cargo test`:
//! `tests/redis.sh` runs them with `REDIS_URL` set, `redis-server` on the
//! path and `--ignored`.

mod opening;
mod proxy;
mod review;
mod review_b;
mod sweep;

use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use mcp_stdio::types::{
    CallToolResult, DetailedTask, InputRequest, InputRequests, Task, TaskStatus, Tool,
};
use mcp_stdio::{RedisChangeFeed, RedisTaskStore, Server, StoredTask, TaskMode, TaskStore};
use serde_json::{Value, json};

use crate::support::{Peer, request};
use crate::tasks::{get, poll, reply, start, task_request};
use proxy::Proxy;

const TASKS_CHANNEL: &str = "io.modelcontextprotocol/subscriptionId";

fn redis_url() -> String {
    std::env::var("REDIS_URL").expect("REDIS_URL: run these through tests/redis.sh")
}

/// A key prefix (and feed channel) of this test's own.
fn prefix(name: &str) -> String {
    format!("mcp-stdio-faults:{name}:{}", std::process::id())
}

/// A `redis-server` of the test's own (a stall or a restart would disturb
/// the other tests on a shared one), stopped when dropped.
struct OwnRedis {
    child: Child,
    port: u16,
    url: String,
}

impl OwnRedis {
    fn start() -> OwnRedis {
        OwnRedis::start_with(&[])
    }

    /// A `redis-server` of the test's own with `args` added.
    fn start_with(args: &[&str]) -> OwnRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--enable-debug-command", "yes", "--dir", "/tmp"])
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on the path: run these through tests/redis.sh");
        let url = format!("redis://127.0.0.1:{port}/");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            thread::sleep(Duration::from_millis(20));
        }
        OwnRedis { child, port, url }
    }

    /// `DEBUG SLEEP`: Redis answers nothing for `stall`, from now.
    fn stall(&self, stall: Duration) -> thread::JoinHandle<()> {
        let url = self.url.clone();
        let seconds = format!("{:.3}", stall.as_secs_f64());
        let _ = self.port;
        thread::spawn(move || {
            let mut c = connection(&url);
            let _: () = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg(seconds)
                .query(&mut c)
                .unwrap();
        })
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn connection(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

fn working(id: &str) -> StoredTask {
    let now = mcp_stdio::types::iso8601(SystemTime::now());
    StoredTask {
        task: DetailedTask::new(Task {
            task_id: id.into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: now.clone(),
            last_updated_at: now,
            ttl_ms: None,
            poll_interval_ms: Some(100),
        }),
        answers: Default::default(),
        expires: None,
        owner: None,
    }
}

/// `PTTL` of `key` in milliseconds.
fn pttl(c: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(c).unwrap()
}

/// Sleeps until just before the next renewal of the lease `key` (of a
/// `lease`), the worst moment for Redis to stop: the lease then has only
/// what is left since the last one. Found from the key's PTTL, which jumps
/// up at each renewal. Returns how often they run.
fn until_just_before_a_renewal(c: &mut redis::Connection, key: &str, lease: Duration) -> Duration {
    let mut renewals = Vec::new();
    let mut last = pttl(c, key);
    let deadline = Instant::now() + lease * 3;
    while renewals.len() < 2 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
        let now = pttl(c, key);
        if now > last + 20 {
            renewals.push(Instant::now());
        }
        last = now;
    }
    assert_eq!(renewals.len(), 2, "no renewal seen");
    let every = renewals[1] - renewals[0];
    let next = renewals[1] + every;
    thread::sleep(next.saturating_duration_since(Instant::now() + Duration::from_millis(40)));
    every
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_stall_shorter_than_the_lease_at_the_worst_moment_fails_no_task() {
    // Item 1, a stall starting just before a renewal.
    let redis = OwnRedis::start();
    let lease = Duration::from_millis(3000);
    let store = RedisTaskStore::open(&redis.url, "stall")
        .unwrap()
        .lease(lease);
    store.create(working("t")).unwrap();
    let mut c = connection(&redis.url);
    let every = until_just_before_a_renewal(&mut c, "stall:lease:t", lease);
    // Three quarters of the lease: shorter than the lease by more than a
    // fifth of it, the margin the store documents.
    let stall = lease * 3 / 4;
    redis.stall(stall).join().unwrap();
    let task = store.get("t").unwrap().unwrap();
    assert_eq!(
        task.task.task.status,
        TaskStatus::Working,
        "a stall of {stall:?} starting just before a renewal (renewals every {every:?}) failed the task: {:?}",
        task.task.task.status_message
    );
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_long_script_shorter_than_three_quarters_of_the_lease_fails_no_task() {
    // README's margin for a Redis busy with a long script (another
    // client's): past `busy-reply-threshold` Redis answers every renewal
    // `BUSY` at once, so a renewal is not held until it wakes, as in a
    // stall, but tried again every twentieth of the lease; the lease
    // outlasts a script shorter than three quarters of it.
    let redis = OwnRedis::start_with(&["--busy-reply-threshold", "100"]);
    let lease = Duration::from_millis(2000);
    let store = RedisTaskStore::open(&redis.url, "busy")
        .unwrap()
        .lease(lease);
    store.create(working("t")).unwrap();
    let mut c = connection(&redis.url);
    let every = until_just_before_a_renewal(&mut c, "busy:lease:t", lease);
    let busy = lease * 7 / 10;
    let micros = busy.as_micros().to_string();
    let _: i64 = redis::cmd("EVAL")
        .arg(
            "local t = redis.call('TIME') local from = t[1] * 1000000 + t[2] \
             while true do t = redis.call('TIME') \
             if t[1] * 1000000 + t[2] - from > tonumber(ARGV[1]) then return 1 end end",
        )
        .arg(0)
        .arg(&micros)
        .query(&mut c)
        .unwrap();
    let task = store.get("t").unwrap().unwrap();
    assert_eq!(
        task.task.task.status,
        TaskStatus::Working,
        "a script of {busy:?} starting just before a renewal (renewals every {every:?}) failed the task: {:?}",
        task.task.task.status_message
    );
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_task_redis_keeps_is_there_for_a_replica_whose_clock_is_ahead() {
    // A task's expiry is Redis's own (its key's PX); the record's
    // `expiresMs` is the creating replica's clock. A replica whose clock is
    // ahead read a task Redis still kept as gone (`tasks/get` -32602, and
    // the task's own worker stopped).
    let prefix = prefix("clock");
    let store = RedisTaskStore::open(&redis_url(), &prefix).unwrap();
    let mut task = working("t");
    task.expires = Some(SystemTime::now() + Duration::from_secs(60));
    store.create(task).unwrap();
    // As a replica whose clock is 70 s ahead sees it: expired 10 s ago.
    let key = format!("{prefix}:task:t");
    let mut c = connection(&redis_url());
    let raw: String = redis::cmd("GET").arg(&key).query(&mut c).unwrap();
    let mut record: Value = serde_json::from_str(&raw).unwrap();
    let now_ms = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    record["expiresMs"] = json!(u64::try_from(now_ms).unwrap() - 10_000);
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(record.to_string())
        .arg("KEEPTTL")
        .query(&mut c)
        .unwrap();
    assert!(pttl(&mut c, &key) > 50_000, "Redis keeps it");
    assert!(
        store.get("t").unwrap().is_some(),
        "a task Redis keeps was read as gone"
    );
    let changed = store
        .update("t", &mut |t| t.task.task.status_message = Some("on".into()))
        .unwrap();
    assert!(changed.is_some(), "a task Redis keeps was gone for update");
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_task_created_while_the_leases_are_renewed_keeps_its_lease() {
    // Item 1: the creating script is slow (delayed on its way), and a
    // renewal runs while it waits.
    let proxy = Proxy::to(&redis_url());
    let lease = Duration::from_millis(900);
    let prefix = prefix("create-race");
    let store = RedisTaskStore::open(&proxy.url, &prefix)
        .unwrap()
        .lease(lease);
    // The renewal thread runs (it starts with the first task).
    store.create(working("first")).unwrap();
    proxy.delay_scripts(lease / 2);
    store.create(working("second")).unwrap();
    proxy.delay_scripts(Duration::ZERO);
    thread::sleep(lease * 3);
    let second = store.get("second").unwrap().unwrap();
    assert_eq!(
        second.task.task.status,
        TaskStatus::Working,
        "the lease of a task created while a renewal ran was never renewed: {:?}",
        second.task.task.status_message
    );
}

/// What a task handler of these tests did, as it tells the test.
#[derive(Debug, PartialEq)]
enum Did {
    Started(String),
    Answered(Value),
    Stopped,
    Finished,
}

/// A server whose tools report to `did`: `ask` asks for the roots and
/// returns what it got; `wait` runs until cancelled, or until `release`
/// gives it a word, which it returns.
/// A builder with one tool, so that its listens may follow the tool list.
fn builder() -> mcp_stdio::ServerBuilder {
    Server::builder("faults", "1.0.0")
        .inline_tool(Tool::new("noop", "Does nothing."), |_, _: Value| {
            Ok(CallToolResult::text("ok"))
        })
}

fn server(
    store: RedisTaskStore,
    feed: Option<RedisChangeFeed>,
    did: mpsc::Sender<Did>,
    release: Arc<Mutex<mpsc::Receiver<String>>>,
) -> Server {
    server_builder(store, feed, did, release).build()
}

/// [`server`]'s builder, before `build`.
fn server_builder(
    store: RedisTaskStore,
    feed: Option<RedisChangeFeed>,
    did: mpsc::Sender<Did>,
    release: Arc<Mutex<mpsc::Receiver<String>>>,
) -> mcp_stdio::ServerBuilder {
    let (on_ask, on_wait) = (Mutex::new(did.clone()), Mutex::new(did));
    let mut builder = builder()
        .request_state_key([7; 32])
        .task_tool(
            Tool::new("ask", "Asks for the roots."),
            TaskMode::Required,
            move |ctx, _: Value| {
                let did = on_ask.lock().unwrap().clone();
                let mut asked = InputRequests::new();
                asked.insert("roots".into(), InputRequest::ListRoots(None));
                let _ = did.send(Did::Started(String::new()));
                match ctx.ask(asked) {
                    Ok(answers) => {
                        let got = serde_json::to_value(&answers).unwrap();
                        let _ = did.send(Did::Answered(got.clone()));
                        Ok(CallToolResult::text(got.to_string()))
                    }
                    Err(e) => {
                        let _ = did.send(Did::Stopped);
                        Err(e)
                    }
                }
            },
        )
        .task_tool(
            Tool::new("wait", "Runs until cancelled or released."),
            TaskMode::Required,
            move |ctx, _: Value| {
                let did = on_wait.lock().unwrap().clone();
                let _ = did.send(Did::Started(String::new()));
                loop {
                    if ctx.wait_cancelled(Duration::from_millis(20)) {
                        let _ = did.send(Did::Stopped);
                        return Ok(CallToolResult::text("stopped"));
                    }
                    let word = release.lock().unwrap().try_recv();
                    if let Ok(word) = word {
                        let _ = did.send(Did::Finished);
                        return Ok(CallToolResult::text(word));
                    }
                }
            },
        )
        .task_store(store);
    if let Some(feed) = feed {
        builder = builder.change_feed(feed);
    }
    builder
}

/// A replica with its store (and feed) at `url`.
struct Replica {
    server: Server,
    did: mpsc::Receiver<Did>,
    release: mpsc::Sender<String>,
}

fn replica(url: &str, prefix: &str, feed: bool, lease: Duration) -> Replica {
    let store = RedisTaskStore::open(url, prefix).unwrap().lease(lease);
    let feed = feed.then(|| RedisChangeFeed::open(url, prefix).unwrap());
    let (did_tx, did) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let server = server(store, feed, did_tx, Arc::new(Mutex::new(release_rx)));
    Replica {
        server,
        did,
        release,
    }
}

impl Replica {
    fn next(&self, within: Duration) -> Option<Did> {
        self.did.recv_timeout(within).ok()
    }
}

fn roots_answer() -> Value {
    json!({ "roots": { "roots": [] } })
}

fn update_request(task_id: &str) -> Value {
    task_request(
        "tasks/update",
        json!({ "taskId": task_id, "inputResponses": roots_answer() }),
    )
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn an_update_whose_write_reply_was_lost_still_reaches_the_handler() {
    // Item 2: Redis applies the update, the reply is lost, the store tries
    // again on a new connection and finds nothing left to answer.
    let proxy = Proxy::to(&redis_url());
    let one = replica(
        &proxy.url,
        &prefix("lost-write"),
        false,
        Duration::from_secs(10),
    );
    let mut peer = Peer::start(&one.server);
    let id = start(&mut peer, "ask", json!({}));
    assert!(matches!(
        one.next(Duration::from_secs(5)),
        Some(Did::Started(_))
    ));
    poll(&mut peer, &id, &["input_required"]);
    proxy.lose_next_write_reply();
    let ack = reply(&mut peer, &update_request(&id));
    assert!(ack.get("result").is_some(), "{ack}");
    let got = one.next(Duration::from_secs(5));
    assert_eq!(
        got,
        Some(Did::Answered(json!({ "roots": { "roots": [] } }))),
        "the handler never got the answers the store took (the ack said OK)"
    );
    let done = poll(&mut peer, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(done["status"], "completed", "{done}");
    peer.finish_quietly();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_cancel_whose_write_reply_was_lost_still_stops_the_handler_on_another_replica() {
    // Item 2, on the way to another replica's handler.
    let prefix = prefix("lost-cancel");
    let proxy = Proxy::to(&redis_url());
    let runner = replica(&redis_url(), &prefix, true, Duration::from_secs(10));
    let other = replica(&proxy.url, &prefix, true, Duration::from_secs(10));
    let mut on_runner = Peer::start(&runner.server);
    let mut on_other = Peer::start(&other.server);
    wait_for_the_feed(&runner.server, &other.server);
    let id = start(&mut on_runner, "wait", json!({}));
    assert!(matches!(
        runner.next(Duration::from_secs(5)),
        Some(Did::Started(_))
    ));
    proxy.lose_next_write_reply();
    let ack = reply(
        &mut on_other,
        &task_request("tasks/cancel", json!({ "taskId": id })),
    );
    assert!(ack.get("result").is_some(), "{ack}");
    assert_eq!(get(&mut on_other, &id)["status"], "cancelled");
    assert_eq!(
        runner.next(Duration::from_secs(5)),
        Some(Did::Stopped),
        "the handler on the other replica was never stopped"
    );
    on_runner.finish_quietly();
    on_other.finish_quietly();
}

/// Until a change published on `a` reaches a listen on `b` and the
/// reverse: both subscribers are up.
fn wait_for_the_feed(a: &Server, b: &Server) {
    for (from, to) in [(a, b), (b, a)] {
        let mut peer = Peer::start(to);
        peer.send(&request(
            "warm",
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        ));
        assert_eq!(
            peer.recv()["method"],
            "notifications/subscriptions/acknowledged"
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            from.notifier().tools_list_changed();
            if peer.try_recv(Duration::from_millis(200)).is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "the feed never carried a change");
        }
        // The warm-up's repeats are not checked.
        let _ = peer.finish();
    }
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn answers_sent_while_the_runners_subscriber_is_cut_reach_its_handler() {
    // Item 3: the runner's feed is cut (Redis restarted, the network
    // broke); the answers taken meanwhile by another replica are published
    // to nobody.
    let prefix = prefix("lost-answers");
    let proxy = Proxy::to(&redis_url());
    let runner_store = RedisTaskStore::open(&redis_url(), &prefix).unwrap();
    let runner_feed = RedisChangeFeed::open(&proxy.url, &prefix).unwrap();
    let (did_tx, did) = mpsc::channel();
    let (_release, release_rx) = mpsc::channel();
    let runner = server(
        runner_store,
        Some(runner_feed),
        did_tx,
        Arc::new(Mutex::new(release_rx)),
    );
    let other = replica(&redis_url(), &prefix, true, Duration::from_secs(10));
    wait_for_the_feed(&runner, &other.server);
    let mut on_runner = Peer::start(&runner);
    let mut on_other = Peer::start(&other.server);
    let id = start(&mut on_runner, "ask", json!({}));
    assert!(matches!(
        did.recv_timeout(Duration::from_secs(5)),
        Ok(Did::Started(_))
    ));
    poll(&mut on_other, &id, &["input_required"]);
    proxy.cut();
    let ack = reply(&mut on_other, &update_request(&id));
    assert!(ack.get("result").is_some(), "{ack}");
    thread::sleep(Duration::from_millis(500));
    proxy.restore();
    assert_eq!(
        did.recv_timeout(Duration::from_secs(10)).ok(),
        Some(Did::Answered(roots_answer())),
        "the answers published while the runner's subscriber was cut never reached its handler"
    );
    on_runner.finish_quietly();
    on_other.finish_quietly();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_silent_subscriber_is_noticed_and_its_listeners_are_told() {
    // Item 3: the subscriber's connection goes silent without a reset.
    let prefix = prefix("silent");
    let proxy = Proxy::to(&redis_url());
    let listener = builder()
        .change_feed(RedisChangeFeed::open(&proxy.url, &prefix).unwrap())
        .build();
    let talker = builder()
        .change_feed(RedisChangeFeed::open(&redis_url(), &prefix).unwrap())
        .build();
    wait_for_the_feed(&talker, &listener);
    let mut peer = Peer::start(&listener);
    peer.send(&request(
        "l",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    ));
    assert_eq!(
        peer.recv()["method"],
        "notifications/subscriptions/acknowledged"
    );
    proxy.silence_open_connections();
    let started = Instant::now();
    let mut heard = None;
    while started.elapsed() < Duration::from_secs(30) {
        talker.notifier().tools_list_changed();
        if let Some(got) = peer.try_recv(Duration::from_millis(500)) {
            heard = Some(got);
            break;
        }
    }
    let heard = heard
        .unwrap_or_else(|| panic!("a listen behind a silent subscriber heard nothing in 30 s"));
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
    assert_eq!(heard["params"]["_meta"][TASKS_CHANNEL], "l");
    eprintln!("heard again after {:?}", started.elapsed());
    // The changes sent while it was silent, and its reconnection's, are
    // not counted.
    let _ = peer.finish();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_quiet_feed_is_pinged_not_reopened_and_still_carries_changes() {
    // Item 3's ping must not take a healthy, quiet subscriber for dead: a
    // reconnection would tell the listens every list changed.
    let prefix = prefix("quiet");
    let (a, b) = (
        builder()
            .change_feed(RedisChangeFeed::open(&redis_url(), &prefix).unwrap())
            .build(),
        builder()
            .change_feed(RedisChangeFeed::open(&redis_url(), &prefix).unwrap())
            .build(),
    );
    wait_for_the_feed(&a, &b);
    let mut peer = Peer::start(&b);
    peer.send(&request(
        "l",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    ));
    assert_eq!(
        peer.recv()["method"],
        "notifications/subscriptions/acknowledged"
    );
    // Quiet for more than a ping and its longest answer.
    let heard = peer.try_recv(Duration::from_secs(12));
    assert_eq!(heard, None, "a quiet subscriber was taken for dead");
    a.notifier().tools_list_changed();
    let heard = peer
        .try_recv(Duration::from_secs(2))
        .expect("the change after the quiet");
    assert_eq!(heard["method"], "notifications/tools/list_changed");
    let _ = peer.finish();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_task_whose_replica_is_gone_is_heard_failed_without_a_poll_and_its_handler_stopped() {
    // Items 1 and 4: the runner is cut off from Redis past its lease
    // (gone, for the others); nobody polls the task.
    let prefix = prefix("gone");
    let proxy = Proxy::to(&redis_url());
    let lease = Duration::from_millis(1500);
    let runner = replica(&proxy.url, &prefix, false, lease);
    let other = replica(&redis_url(), &prefix, true, lease);
    // A replica that serves task tools, so that its listens may follow
    // tasks.
    let listening = replica(&redis_url(), &prefix, true, lease);
    let listening = &listening.server;
    wait_for_the_feed(&other.server, listening);
    let mut on_runner = Peer::start(&runner.server);
    let id = start(&mut on_runner, "wait", json!({}));
    assert!(matches!(
        runner.next(Duration::from_secs(5)),
        Some(Did::Started(_))
    ));
    let mut peer = Peer::start(listening);
    peer.send(&task_request(
        "subscriptions/listen",
        json!({ "notifications": { "taskIds": [id] } }),
    ));
    let ack = peer.recv();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    proxy.cut();
    // Nobody reads the task: the others must end it themselves.
    let heard = peer.try_recv(lease + Duration::from_secs(8));
    let key = format!("{prefix}:task:{id}");
    let raw: Option<String> = redis::cmd("GET")
        .arg(&key)
        .query(&mut connection(&redis_url()))
        .unwrap();
    let raw: Value = serde_json::from_str(&raw.unwrap()).unwrap();
    proxy.restore();
    let stopped = runner.next(Duration::from_secs(8));
    assert_eq!(
        raw["task"]["status"], "failed",
        "a task nobody polls stays {} in Redis after its lease",
        raw["task"]["status"]
    );
    let heard = heard.expect("a listen following the task never heard it fail");
    assert_eq!(heard["method"], "notifications/tasks", "{heard}");
    assert_eq!(heard["params"]["status"], "failed", "{heard}");
    assert_eq!(
        stopped,
        Some(Did::Stopped),
        "the handler whose lease lapsed was never told"
    );
    let (rest, _) = peer.finish();
    assert!(
        rest.iter().all(|m| m["method"] != "notifications/tasks"),
        "the failure was heard more than once: {rest:?}"
    );
    on_runner.finish_quietly();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_result_finished_while_redis_is_out_is_written_when_it_returns() {
    // Item 1: the handler ends while Redis is out of reach, for less than
    // the lease.
    let proxy = Proxy::to(&redis_url());
    let lease = Duration::from_secs(4);
    let one = replica(&proxy.url, &prefix("outage"), false, lease);
    let mut peer = Peer::start(&one.server);
    let id = start(&mut peer, "wait", json!({}));
    assert!(matches!(
        one.next(Duration::from_secs(5)),
        Some(Did::Started(_))
    ));
    proxy.cut();
    one.release.send("kept".into()).unwrap();
    assert_eq!(one.next(Duration::from_secs(5)), Some(Did::Finished));
    thread::sleep(Duration::from_millis(1500));
    proxy.restore();
    let done = poll(&mut peer, &id, &["completed", "failed"]);
    assert_eq!(
        done["status"], "completed",
        "the result finished while Redis was out was dropped: {done}"
    );
    assert_eq!(done["result"]["content"][0]["text"], "kept");
    peer.finish_quietly();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_forged_answer_or_stop_on_the_feed_reaches_no_handler() {
    // Item 5: a client of Redis that can PUBLISH on the channel, without
    // the replicas' key.
    let prefix = prefix("forged");
    let runner = replica(&redis_url(), &prefix, true, Duration::from_secs(10));
    let other = replica(&redis_url(), &prefix, true, Duration::from_secs(10));
    wait_for_the_feed(&runner.server, &other.server);
    let mut peer = Peer::start(&runner.server);
    let asking = start(&mut peer, "ask", json!({}));
    assert!(matches!(
        runner.next(Duration::from_secs(5)),
        Some(Did::Started(_))
    ));
    let waiting = start(&mut peer, "wait", json!({}));
    assert!(matches!(
        runner.next(Duration::from_secs(5)),
        Some(Did::Started(_))
    ));
    poll(&mut peer, &asking, &["input_required"]);
    let mut c = connection(&redis_url());
    for change in [
        json!({ "kind": "taskAnswers", "task_id": asking, "responses": { "roots": { "roots": [{ "uri": "file:///forged" }] } } }),
        json!({ "kind": "taskStop", "task_id": waiting }),
    ] {
        let envelope = json!({ "from": "forger", "change": change }).to_string();
        let _: i64 = redis::cmd("PUBLISH")
            .arg(&prefix)
            .arg(envelope)
            .query(&mut c)
            .unwrap();
    }
    let got = runner.next(Duration::from_secs(3));
    assert_eq!(got, None, "a forged message reached a handler: {got:?}");
    assert_eq!(get(&mut peer, &asking)["status"], "input_required");
    assert_eq!(get(&mut peer, &waiting)["status"], "working");
    peer.finish_quietly();
}
