//! A listen's opening reads the tasks it follows from the store, and from
//! then on no older status of them is shown on that replica (the second
//! review of issue 48: `review_b`, a listen opened after its task ended
//! was shown the statuses a publisher kept). What that read found must
//! still reach everyone who has not heard it: the listens already open
//! there, and through the feed the other replicas, when the change's own
//! publication comes after the read. Both against a real `redis-server`;
//! `tests/redis.sh` runs them.

use super::review::{follow, heard_until};
use super::*;

/// The status a task's replica keeps in its outbox (its feed cut off)
/// while another replica's listen opens: the listens already open on that
/// replica hear it then, since the message, when it comes, is older than
/// what the opening read.
#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_listen_open_before_another_hears_the_status_the_others_opening_read() {
    let prefix = prefix("opening-kept");
    let proxy = Proxy::to(&redis_url());
    let lease = Duration::from_secs(10);
    let (did_tx, did) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
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
    let mut on_runner = Peer::start(&runner);
    let id = start(&mut on_runner, "wait", json!({}));
    assert!(matches!(
        did.recv_timeout(Duration::from_secs(5)),
        Ok(Did::Started(_))
    ));
    let first = follow(&listener.server, &id);
    proxy.cut();
    release.send("done".into()).unwrap();
    assert_eq!(did.recv_timeout(Duration::from_secs(5)), Ok(Did::Finished));
    let mut asker = Peer::start(&listener.server);
    poll(&mut asker, &id, &["completed"]);
    asker.finish_quietly();
    let second = follow(&listener.server, &id);
    proxy.restore();
    let heard = heard_until(&first, "completed", Duration::from_secs(10));
    assert_eq!(
        heard.last().map(String::as_str),
        Some("completed"),
        "a listen open before the task completed heard {heard:?}: the completion another \
         listen's opening read was taken as shown to it"
    );
    let _ = first.finish();
    let _ = second.finish();
    on_runner.finish_quietly();
}

/// The worker's write is in the store, its reply late (the store waits
/// for it, then finds its write there): a listen opened on the task's own
/// replica meanwhile reads the new status. The status is still sent to
/// the other replicas when the worker publishes it.
#[test]
#[ignore = "needs Redis: tests/redis.sh"]
fn a_status_read_by_a_listens_opening_before_its_publication_still_reaches_the_other_replicas() {
    let prefix = prefix("opening-late");
    let proxy = Proxy::to(&redis_url());
    let lease = Duration::from_secs(10);
    let (did_tx, did) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let runner = server(
        RedisTaskStore::open(&proxy.url, &prefix)
            .unwrap()
            .lease(lease),
        Some(RedisChangeFeed::open(&redis_url(), &prefix).unwrap()),
        did_tx,
        Arc::new(Mutex::new(release_rx)),
    );
    let other = replica(&redis_url(), &prefix, true, lease);
    wait_for_the_feed(&runner, &other.server);
    let mut on_runner = Peer::start(&runner);
    let id = start(&mut on_runner, "wait", json!({}));
    assert!(matches!(
        did.recv_timeout(Duration::from_secs(5)),
        Ok(Did::Started(_))
    ));
    let elsewhere = follow(&other.server, &id);
    // The end's write goes in; its reply is held until the store gives up
    // on it (5 s), and its next try finds it.
    proxy.hold_next_write_reply();
    release.send("done".into()).unwrap();
    assert_eq!(did.recv_timeout(Duration::from_secs(5)), Ok(Did::Finished));
    let mut asker = Peer::start(&other.server);
    poll(&mut asker, &id, &["completed"]);
    asker.finish_quietly();
    assert_eq!(
        proxy.held(),
        1,
        "the end's write reply was not the one held"
    );
    let here = follow(&runner, &id);
    let heard = heard_until(&elsewhere, "completed", Duration::from_secs(15));
    assert_eq!(
        heard.last().map(String::as_str),
        Some("completed"),
        "a listen on another replica heard {heard:?}: the completion a listen's opening on the \
         task's replica read before the worker published it was never sent"
    );
    let _ = elsewhere.finish();
    let _ = here.finish();
    on_runner.finish_quietly();
}
