//! A second hostile review of issue 48, of its fixes (merged in f9d3c9c):
//! each claim against a real `redis-server`, each failing on the code as
//! it was reviewed. A worker's write id pushed out by the client's own
//! answers; a listen shown a task's old status (a publisher's kept outbox,
//! a replay to a replica that started after the message); a resync with
//! every change past the outbox; a replica whose clock is a minute off,
//! whose listens are never told; a password shown when its URL does not
//! parse. Ignored by `cargo test`, as the rest of `redis_faults`:
//! `tests/redis.sh` runs them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::review::{follow, heard_until};
use super::*;

/// A client of Redis subscribed to `channel`, keeping what it hears.
struct Eavesdropper {
    heard: mpsc::Receiver<Vec<u8>>,
    /// How many messages it heard, and how many of them were resyncs.
    count: Arc<AtomicU64>,
    resyncs: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

impl Eavesdropper {
    /// Subscribed when this returns.
    fn on(url: &str, channel: &str) -> Eavesdropper {
        let (url, channel) = (url.to_owned(), channel.to_owned());
        let (heard_tx, heard) = mpsc::channel();
        let (count, resyncs) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = mpsc::channel();
        let thread = {
            let (count, resyncs, stop) =
                (Arc::clone(&count), Arc::clone(&resyncs), Arc::clone(&stop));
            thread::spawn(move || {
                let mut c = connection(&url);
                let mut pubsub = c.as_pubsub();
                pubsub.subscribe(&channel).unwrap();
                pubsub
                    .set_read_timeout(Some(Duration::from_millis(100)))
                    .unwrap();
                ready_tx.send(()).unwrap();
                while !stop.load(Ordering::Acquire) {
                    if let Ok(message) = pubsub.get_message() {
                        let payload = message.get_payload_bytes();
                        count.fetch_add(1, Ordering::AcqRel);
                        if contains(payload, br#""kind":"reconnected""#) {
                            resyncs.fetch_add(1, Ordering::AcqRel);
                        }
                        let _ = heard_tx.send(payload.to_vec());
                    }
                }
            })
        };
        ready.recv_timeout(Duration::from_secs(5)).unwrap();
        Eavesdropper {
            heard,
            count,
            resyncs,
            stop,
            thread,
        }
    }

    /// The first message heard that holds every one of `parts`.
    fn first_with(&self, parts: &[&str], within: Duration) -> Vec<u8> {
        let deadline = Instant::now() + within;
        loop {
            let message = self
                .heard
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no message with {parts:?} on the channel"));
            let text = String::from_utf8_lossy(&message);
            if parts.iter().all(|part| text.contains(part)) {
                return message;
            }
        }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.join().unwrap();
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn publish(url: &str, channel: &str, message: &[u8]) {
    let _: i64 = redis::cmd("PUBLISH")
        .arg(channel)
        .arg(message)
        .query(&mut connection(url))
        .unwrap();
}

/// A message on the feed as a replica named `from` sends it, with its
/// clock at `at` and its sequence number `seq`, signed as the replicas
/// that share `key` (`request_state_key`) sign theirs (`redis_feed.rs`:
/// the feed's key is HMAC-SHA256 of "mcp-stdio change feed" under it; the
/// MAC covers the channel's name, its length first, and the body).
fn signed(
    key: &[u8; 32],
    channel: &str,
    from: &str,
    at: SystemTime,
    seq: u64,
    change: &mcp_stdio::Change,
) -> Vec<u8> {
    use hmac::{Hmac, Mac};
    type HmacSha256 = Hmac<sha2::Sha256>;
    let at_ms = at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let change = serde_json::to_string(change).unwrap();
    let body = format!(r#"{{"from":"{from}","at":{at_ms},"seq":{seq},"change":{change}}}"#);
    let mut derive = <HmacSha256 as Mac>::new_from_slice(key).unwrap();
    derive.update(b"mcp-stdio change feed");
    let feed_key = derive.finalize().into_bytes();
    let mut mac = <HmacSha256 as Mac>::new_from_slice(&feed_key).unwrap();
    mac.update(&(channel.len() as u64).to_be_bytes());
    mac.update(channel.as_bytes());
    mac.update(body.as_bytes());
    let mut message = b"mcp-stdio-feed-v2.".to_vec();
    for b in mac.finalize().into_bytes() {
        message.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    message.push(b'.');
    message.extend_from_slice(body.as_bytes());
    message
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_question_answered_key_by_key_while_its_write_reply_was_late_is_not_failed() {
    // "Exactly once" and "outcome unknown": a handler asks nine questions;
    // Redis applies the write that shows them, and its reply is held (a
    // network that lost it: the store waits its 5 s). Meanwhile the client
    // sees the questions and answers them one `tasks/update` at a time
    // through another replica: nine writes, each with an id of its own,
    // all legitimate. The worker's retry then finds its id pushed out of
    // the record's last 8 and the version 10 past the one it read, and
    // fails with `{"outcome":"unknown"}`; `change_durably` does not try
    // again, `ask` returns the error, and the task fails, although its
    // question was shown and every answer was taken. The client is told
    // "read the task": it just did.
    let prefix = prefix("review-b-form");
    let proxy = Proxy::to(&redis_url());
    let lease = Duration::from_secs(10);
    let (did_tx, did) = mpsc::channel();
    let on_ask = Mutex::new(did_tx);
    const KEYS: usize = 9;
    let runner = builder()
        .request_state_key([7; 32])
        .task_tool(
            Tool::new("form", "Asks nine questions."),
            TaskMode::Required,
            move |ctx, _: Value| {
                let did = on_ask.lock().unwrap().clone();
                let mut asked = InputRequests::new();
                for n in 0..KEYS {
                    asked.insert(format!("q{n}"), InputRequest::ListRoots(None));
                }
                match ctx.ask(asked) {
                    Ok(answers) => {
                        let _ = did.send(Did::Answered(json!(answers.len())));
                        Ok(CallToolResult::text("filled"))
                    }
                    Err(e) => {
                        let _ = did.send(Did::Stopped);
                        Err(e)
                    }
                }
            },
        )
        .task_store(
            RedisTaskStore::open(&proxy.url, &prefix)
                .unwrap()
                .lease(lease),
        )
        .build();
    let other = replica(&redis_url(), &prefix, false, lease);
    let mut on_runner = Peer::start(&runner);
    let mut on_other = Peer::start(&other.server);
    // The first write of a task through the proxy is the one that shows
    // its questions (creation is another script).
    proxy.hold_next_write_reply();
    let id = start(&mut on_runner, "form", json!({}));
    poll(&mut on_other, &id, &["input_required"]);
    assert_eq!(
        proxy.held(),
        1,
        "the question's write reply was not the one held"
    );
    for n in 0..KEYS {
        let answer = task_request(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": { format!("q{n}"): { "roots": [] } } }),
        );
        let ack = reply(&mut on_other, &answer);
        assert!(ack.get("result").is_some(), "{ack}");
    }
    // The store waits 5 s for the held reply, then reads again.
    let got = did.recv_timeout(Duration::from_secs(20)).ok();
    let done = poll(&mut on_other, &id, &["completed", "failed", "cancelled"]);
    assert_eq!(
        got,
        Some(Did::Answered(json!(KEYS))),
        "the handler never got the {KEYS} answers the client gave; the task ended {}: {}",
        done["status"],
        done["error"]["message"]
    );
    assert_eq!(done["status"], "completed", "{done}");
    on_runner.finish_quietly();
    on_other.finish_quietly();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_listen_opened_after_a_task_ended_is_not_shown_the_statuses_a_publisher_kept() {
    // `Replicas::deliver_status`: "a listen is never shown a status older
    // than the last it was shown". The runner's feed is cut off while its
    // task asks, is answered and completes: the publisher keeps the three
    // changes (as it should), and sends them when Redis is back, stamped
    // then. On another replica a listen that began after the task had
    // completed, which no status of the task had reached, is shown the
    // task asking for input again, then working, then completed: its
    // client asks its user again for what was answered minutes ago.
    let prefix = prefix("review-b-kept");
    let proxy = Proxy::to(&redis_url());
    let lease = Duration::from_secs(10);
    let (did_tx, did) = mpsc::channel();
    let (_release, release_rx) = mpsc::channel();
    let runner = server(
        RedisTaskStore::open(&redis_url(), &prefix)
            .unwrap()
            .lease(lease),
        Some(RedisChangeFeed::open(&proxy.url, &prefix).unwrap()),
        did_tx,
        Arc::new(Mutex::new(release_rx)),
    );
    let listener = replica(&redis_url(), &prefix, true, lease);
    wait_for_the_feed(&runner, &listener.server);
    proxy.cut();
    let mut on_runner = Peer::start(&runner);
    let id = start(&mut on_runner, "ask", json!({}));
    assert!(matches!(
        did.recv_timeout(Duration::from_secs(5)),
        Ok(Did::Started(_))
    ));
    poll(&mut on_runner, &id, &["input_required"]);
    let ack = reply(&mut on_runner, &update_request(&id));
    assert!(ack.get("result").is_some(), "{ack}");
    poll(&mut on_runner, &id, &["completed"]);
    // A listen that begins now: the task has completed.
    let listen = follow(&listener.server, &id);
    proxy.restore();
    let heard = heard_until(&listen, "completed", Duration::from_secs(10));
    assert!(
        heard.iter().all(|status| status == "completed"),
        "a listen opened after its task completed was shown {heard:?}: the statuses the \
         runner's publisher kept through its outage"
    );
    let _ = listen.finish();
    on_runner.finish_quietly();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_status_replayed_to_a_replica_started_after_it_is_not_shown_to_a_listen() {
    // README: a client of Redis that may PUBLISH on the channel "cannot
    // show a listener a change, nor show one again". The stamp keeps a
    // replay within a minute of the original, and the sequence number
    // stops it at the replicas that heard the original or anything later
    // from its sender; a replica that started since (a rolling restart, a
    // scale-out) has heard neither, and its listens have been shown no
    // status of the task. A genuine `input_required`, replayed there, is
    // shown to a listen of a task that completed.
    let prefix = prefix("review-b-replay");
    let lease = Duration::from_secs(10);
    let runner = replica(&redis_url(), &prefix, true, lease);
    let eavesdropper = Eavesdropper::on(&redis_url(), &prefix);
    let mut on_runner = Peer::start(&runner.server);
    let id = start(&mut on_runner, "ask", json!({}));
    poll(&mut on_runner, &id, &["input_required"]);
    let ack = reply(&mut on_runner, &update_request(&id));
    assert!(ack.get("result").is_some(), "{ack}");
    poll(&mut on_runner, &id, &["completed"]);
    let genuine = eavesdropper.first_with(
        &[&id, "\"status\":\"input_required\""],
        Duration::from_secs(5),
    );
    eavesdropper.stop();
    // Started now; its feed is up (warmed with a third replica: the
    // runner publishes nothing more).
    let fresh = replica(&redis_url(), &prefix, true, lease);
    let third = replica(&redis_url(), &prefix, true, lease);
    wait_for_the_feed(&third.server, &fresh.server);
    let listen = follow(&fresh.server, &id);
    publish(&redis_url(), &prefix, &genuine);
    let replayed = listen.try_recv(Duration::from_secs(3));
    assert_eq!(
        replayed, None,
        "a replayed, genuine message showed a listen on a replica started since a task that \
         had completed asking again"
    );
    let _ = listen.finish();
    on_runner.finish_quietly();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_publisher_past_its_outbox_sends_a_resync_now_and_then_not_with_every_change() {
    // The resync on overflow: a replica whose changes come faster than
    // its one connection publishes them, after an outage that filled its
    // outbox. Each change that finds the outbox full sets `overflowed`,
    // and the publisher sends a resync before the next change it takes:
    // one resync for every change sent, as long as the overload lasts.
    // Each resync makes every other replica tell each of its listens that
    // every list changed, read every task its listens follow and every
    // task it runs, and sweep.
    let prefix = prefix("review-b-storm");
    let proxy = Proxy::to(&redis_url());
    let talker = builder()
        .request_state_key([7; 32])
        .change_feed(RedisChangeFeed::open(&proxy.url, &prefix).unwrap())
        .build();
    let eavesdropper = Eavesdropper::on(&redis_url(), &prefix);
    talker.notifier().tools_list_changed();
    eavesdropper.first_with(&["toolsListChanged"], Duration::from_secs(5));
    proxy.cut();
    // Past the outbox (65,536 changes).
    for _ in 0..70_000 {
        talker.notifier().tools_list_changed();
    }
    proxy.restore();
    // Three seconds of changes faster than one connection publishes, and
    // on until more than 1,000 were published (a loaded machine published
    // 943 in 3 s once: CI with four lanes), 15 s at most.
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(3)
        || (eavesdropper.count.load(Ordering::Acquire) <= 1000
            && began.elapsed() < Duration::from_secs(15))
    {
        for _ in 0..100 {
            talker.notifier().tools_list_changed();
        }
    }
    let overload = began.elapsed();
    let (count, resyncs) = (
        eavesdropper.count.load(Ordering::Acquire),
        eavesdropper.resyncs.load(Ordering::Acquire),
    );
    drop(talker);
    eavesdropper.stop();
    assert!(
        count > 1000,
        "the publisher published {count} changes in {overload:?}: no overload"
    );
    // One a second at most, and a little slack (5 in 3 s before).
    assert!(
        resyncs <= overload.as_secs() + 2,
        "{resyncs} resyncs among {count} messages in {overload:?} of overload: each tells \
         every listen of every other replica that every list changed"
    );
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_listen_hears_a_task_end_that_a_replica_whose_clock_is_a_minute_ahead_published() {
    // The feed's stamp: a subscriber drops a message stamped more than
    // 60 s from its clock, and says so on the trace. A replica whose clock
    // drifted 61 s (NTP down) thus reaches no listen on any other replica,
    // ever: its task ends, the store says so, `tasks/get` on the listen's
    // replica says so, and the listen waits for ever; nothing reads the
    // store for it (only a reconnection does). Before the fixes, with no
    // stamp, it heard. Here the test is that replica: it writes the
    // task's end in the store and publishes it, signed with the replicas'
    // key, stamped by its clock. (A message from another sender, stamped
    // now, checks the signing first.)
    let prefix = prefix("review-b-skew");
    let lease = Duration::from_secs(10);
    let key = [7; 32];
    let traced = Arc::new(Mutex::new(Vec::<String>::new()));
    let into = Arc::clone(&traced);
    let (did_tx, _did) = mpsc::channel();
    let (_release, release_rx) = mpsc::channel();
    let listener = server_builder(
        RedisTaskStore::open(&redis_url(), &prefix)
            .unwrap()
            .lease(lease),
        Some(RedisChangeFeed::open(&redis_url(), &prefix).unwrap()),
        did_tx,
        Arc::new(Mutex::new(release_rx)),
    )
    .trace(move |line| into.lock().unwrap().push(line.to_owned()))
    .build();
    let other = replica(&redis_url(), &prefix, true, lease);
    wait_for_the_feed(&other.server, &listener);
    // The replica whose clock is ahead runs the task.
    let ahead = Duration::from_secs(61);
    let store = RedisTaskStore::open(&redis_url(), &prefix)
        .unwrap()
        .lease(lease);
    let id = format!("skewed-{}", std::process::id());
    store.create(working(&id)).unwrap();
    let mut peer = Peer::start(&listener);
    peer.send(&task_request(
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true, "taskIds": [id] } }),
    ));
    let ack = peer.recv();
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    let control = signed(
        &key,
        &prefix,
        "control",
        SystemTime::now(),
        1,
        &mcp_stdio::Change::ToolsListChanged,
    );
    publish(&redis_url(), &prefix, &control);
    let heard = peer
        .try_recv(Duration::from_secs(5))
        .expect("the control message was not taken");
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
    let done = store
        .update(&id, &mut |t| {
            t.task.task.status = TaskStatus::Completed;
            t.task.task.last_updated_at = mcp_stdio::types::iso8601(SystemTime::now() + ahead);
            t.task.result = Some(json!({ "content": [] }).as_object().unwrap().clone());
        })
        .unwrap()
        .unwrap();
    let change = mcp_stdio::Change::TaskStatus {
        task: Box::new(done.task),
    };
    publish(
        &redis_url(),
        &prefix,
        &signed(
            &key,
            &prefix,
            "ahead",
            SystemTime::now() + ahead,
            1,
            &change,
        ),
    );
    let heard = heard_until(&peer, "completed", Duration::from_secs(15));
    let status = {
        let mut asker = Peer::start(&listener);
        let status = get(&mut asker, &id)["status"].clone();
        asker.finish_quietly();
        status
    };
    let traced = traced.lock().unwrap().clone();
    assert_eq!(status, "completed");
    assert!(
        heard.iter().any(|s| s == "completed"),
        "a listen following a task that completed (tasks/get on its replica says so) heard \
         {heard:?} in 15 s; its replica's trace: {traced:?}"
    );
    let _ = peer.finish();
}

#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_redis_password_with_a_slash_a_hash_or_a_question_mark_is_never_shown() {
    // "No message shows the URL's user or password": `shown_url` cuts the
    // URL at its first '?' or '#', then the authority at its first '/',
    // before it looks for the '@'. A password with one of those put in the
    // URL as it is (`openssl rand -base64` gives '/' in most passwords)
    // makes a URL that does not parse, and the error `open` returns, which
    // the application logs, shows the password, or its start.
    let mut leaked = Vec::new();
    for password in ["Pw8/Zq9+Ab", "Pw8#Zq9", "Pw8?Zq9"] {
        let url = format!("redis://mcp:{password}@127.0.0.1:6379/");
        let store = RedisTaskStore::open(&url, "review-b")
            .err()
            .map(|e| e.message);
        let feed = RedisChangeFeed::open(&url, "review-b")
            .err()
            .map(|e| e.to_string());
        for (what, message) in [
            ("RedisTaskStore::open", store),
            ("RedisChangeFeed::open", feed),
        ] {
            let message = message.unwrap_or_else(|| panic!("{what} took {url}"));
            if message.contains("Pw8") {
                leaked.push(format!("{what}({url}): {message}"));
            }
        }
    }
    assert!(
        leaked.is_empty(),
        "the password is in these errors: {leaked:#?}"
    );
}
