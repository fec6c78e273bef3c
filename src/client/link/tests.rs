//! A legacy server's own requests, on a link over pipes.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::ClientBuilder;
use crate::client::input::InputHandlers;
use crate::client::link::over_pipes;
use crate::types::ListRootsResult;

const WAIT: Duration = Duration::from_secs(10);

/// Spec 2025-11-25 basic/utilities/cancellation: the receiver of a
/// cancellation SHOULD not send a response for the cancelled request. A
/// request the server cancels while its handler runs gets no answer; the
/// server's other requests do.
#[test]
fn a_legacy_servers_request_it_cancels_gets_no_answer() {
    let options = ClientBuilder::default().trace(|_| {});
    let (link, mut server, written) = over_pipes(&options);
    let (entered_tx, entered) = crossbeam_channel::unbounded();
    let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
    link.answer_server_requests(InputHandlers {
        roots: Some(Arc::new(move || {
            let _ = entered_tx.send(());
            let _ = release.recv();
            Ok(ListRootsResult::default())
        })),
        ..InputHandlers::default()
    });
    let mut say = |line: &str| writeln!(server, "{line}").unwrap();
    say(r#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#);
    entered.recv_timeout(WAIT).unwrap();
    say(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#);
    say(r#"{"jsonrpc":"2.0","id":"after-cancel","method":"ping"}"#);
    // The ping's answer: the cancellation before it was read.
    let pong = written.recv_timeout(WAIT).unwrap();
    assert_eq!(pong["id"], "after-cancel");
    drop(release_tx);
    let deadline = Instant::now() + WAIT;
    while link.answering() > 0 {
        assert!(
            Instant::now() < deadline,
            "the answering thread never ended"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // Whatever the thread sent went out before this ping's answer.
    say(r#"{"jsonrpc":"2.0","id":8,"method":"roots/list"}"#);
    entered.recv_timeout(WAIT).unwrap();
    let answer = written.recv_timeout(WAIT).unwrap();
    assert_eq!(answer["id"], 8, "answered: {answer}");
    assert_eq!(answer["result"], serde_json::json!({ "roots": [] }));
}

/// Review of issue 47, finding 2, on a legacy server: a subscription whose
/// events the application does not read ends `Overflowed` after the line
/// limit of them, and its resource is unsubscribed (a legacy server has no
/// cancellation of it); the reader went on routing (the ping after the
/// flood is answered).
#[test]
fn a_legacy_subscription_left_unread_overflows_and_is_unsubscribed() {
    use crate::client::link::{SubscriptionDelivery, SubscriptionSink};
    use crate::types::SubscriptionFilter;
    let options = ClientBuilder::default()
        .trace(|_| {})
        .max_line_bytes(16 * 1024);
    let (link, mut server, written) = over_pipes(&options);
    link.answer_server_requests(InputHandlers::default());
    let (sink, events) = SubscriptionSink::channel();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["a://1".into()]),
        ..SubscriptionFilter::default()
    };
    let id = link.next_id();
    link.adopt_legacy_subscription(&id, filter, sink);
    let padding = "x".repeat(1024);
    for _ in 0..40 {
        writeln!(
            server,
            r#"{{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{{"uri":"a://1","_meta":{{"pad":"{padding}"}}}}}}"#
        )
        .unwrap();
    }
    writeln!(
        server,
        r#"{{"jsonrpc":"2.0","id":"after","method":"ping"}}"#
    )
    .unwrap();
    let unsubscribe = written.recv_timeout(WAIT).unwrap();
    assert_eq!(
        unsubscribe["method"], "resources/unsubscribe",
        "{unsubscribe}"
    );
    assert_eq!(unsubscribe["params"]["uri"], "a://1");
    let pong = written.recv_timeout(WAIT).unwrap();
    assert_eq!(pong["id"], "after", "{pong}");
    let got: Vec<SubscriptionDelivery> = events.try_iter().collect();
    let (last, updates) = got.split_last().unwrap();
    assert!(
        matches!(last, SubscriptionDelivery::Overflowed),
        "the last delivery: {last:?}"
    );
    assert!(
        (1..40).contains(&updates.len())
            && updates
                .iter()
                .all(|d| matches!(d, SubscriptionDelivery::Notification { .. })),
        "{} deliveries before the end: {updates:?}",
        updates.len()
    );
    // Forgotten by the link: nothing more is routed to it.
    assert!(matches!(
        link.forget_subscription(&id),
        crate::client::link::Forgotten::Nothing
    ));
}

/// Review client15: a legacy subscription is the client's own, under an id
/// that never goes on the wire (`legacy_listen`), and a legacy server has
/// no response that ends it. A response the server sends with that id (a
/// careless server's stray or doubled answer, or one that guesses the
/// ids, which the client numbers 1, 2, 3, ...) ends nothing: the
/// subscription still gets the updates that follow.
#[test]
fn a_legacy_servers_response_with_a_subscriptions_id_ends_no_subscription() {
    use crate::client::link::{SubscriptionDelivery, SubscriptionSink};
    use crate::types::SubscriptionFilter;
    let options = ClientBuilder::default().trace(|_| {});
    let (link, mut server, written) = over_pipes(&options);
    link.answer_server_requests(InputHandlers::default());
    let (sink, events) = SubscriptionSink::channel();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["a://1".into()]),
        ..SubscriptionFilter::default()
    };
    let id = link.next_id();
    link.adopt_legacy_subscription(&id, filter, sink);
    let mut say = |line: String| writeln!(server, "{line}").unwrap();
    say(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    say(
        r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a://1"}}"#
            .into(),
    );
    say(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#.into());
    // The ping's answer: every line before it was routed.
    let pong = written.recv_timeout(WAIT).unwrap();
    assert_eq!(pong["id"], "after", "{pong}");
    let got: Vec<SubscriptionDelivery> = events.try_iter().collect();
    assert!(
        matches!(
            got.as_slice(),
            [SubscriptionDelivery::Notification { method, .. }]
                if method == "notifications/resources/updated"
        ),
        "the subscription got {got:?}"
    );
}

/// Review client15: every request of a legacy server the client cannot
/// read (a form with a field no form may have) is answered `-32602`, and
/// noted as a problem, which goes to the application's stderr when it set
/// no trace. A server that sends hundreds of them must not make hundreds
/// of notes: they are rate-limited, as every note a server's output
/// causes (`NoteLimiter`, at most 10 a second).
#[test]
fn a_flood_of_unreadable_legacy_requests_is_noted_at_a_bounded_rate() {
    const FLOOD: usize = 300;
    let notes = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = Arc::clone(&notes);
    let options =
        ClientBuilder::default().trace(move |note| kept.lock().unwrap().push(note.to_owned()));
    let (link, mut server, written) = over_pipes(&options);
    link.answer_server_requests(InputHandlers {
        elicitation: Some(Arc::new(|_| Ok(crate::types::ElicitResult::decline()))),
        ..InputHandlers::default()
    });
    let started = Instant::now();
    for n in 0..FLOOD {
        writeln!(
            server,
            r#"{{"jsonrpc":"2.0","id":{n},"method":"elicitation/create","params":{{"message":"m","requestedSchema":{{"type":"object","properties":{{"a":{{"type":"object"}}}}}}}}}}"#
        )
        .unwrap();
    }
    for _ in 0..FLOOD {
        let answer = written.recv_timeout(WAIT).unwrap();
        assert!(answer["error"].is_object(), "{answer}");
    }
    let seconds = started.elapsed().as_secs() as usize + 1;
    options.notes.flush(WAIT);
    let unreadable = (notes.lock().unwrap().iter())
        .filter(|note| note.contains("could not read the server's request"))
        .count();
    assert!(
        unreadable <= 11 * (seconds + 1),
        "{unreadable} notes for {FLOOD} unreadable requests in about {seconds} s"
    );
}

/// Review client15, a doc that said otherwise (`RequestOptions::log`): a
/// client whose requests are many callers' (a proxy's) gives a server's
/// log message to no request, not even to the only one in flight, which
/// asked for logs (`route::route_log`, review-47h): the message goes to
/// the client's own log (the trace here).
#[cfg(feature = "server")]
#[test]
fn a_client_of_many_callers_gives_a_log_message_to_no_request() {
    use crate::client::link::Delivery;
    let notes = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = Arc::clone(&notes);
    let options =
        ClientBuilder::default().trace(move |note| kept.lock().unwrap().push(note.to_owned()));
    options.notes.serve_many_callers();
    let (link, mut server, _written) = over_pipes(&options);
    let id = link.next_id();
    let rx = link.register(&id, None, true);
    writeln!(
        server,
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"whose?"}}}}"#
    )
    .unwrap();
    writeln!(server, r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).unwrap();
    let first = rx.recv_timeout(WAIT).unwrap();
    assert!(matches!(first, Delivery::Reply(Ok(_))), "{first:?}");
    options.notes.flush(WAIT);
    assert!(
        notes.lock().unwrap().iter().any(|n| n.contains("whose?")),
        "{:?}",
        notes.lock().unwrap()
    );
}

/// Review fixes15a: a legacy subscription's id is the client's own and
/// never goes on the wire (`legacy_listen`), and a legacy server tags
/// nothing with a subscription id (2025-11-25 has none): its changes come
/// untagged and are filtered (`deliver_untagged`). A notification a
/// legacy server tags with that id (a guess at the client's numbering,
/// 1, 2, 3, ...) reaches no subscription: not a change the subscription
/// did not ask for, nor an acknowledgment that would read as
/// `Resubscribed` and widen what it accepted.
#[test]
fn a_legacy_servers_notification_tagged_with_a_subscriptions_id_reaches_no_subscription() {
    use crate::client::link::{SubscriptionDelivery, SubscriptionSink};
    use crate::types::SubscriptionFilter;
    let options = ClientBuilder::default().trace(|_| {});
    let (link, mut server, written) = over_pipes(&options);
    link.answer_server_requests(InputHandlers::default());
    let (sink, events) = SubscriptionSink::channel();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["a://1".into()]),
        ..SubscriptionFilter::default()
    };
    let id = link.next_id();
    link.adopt_legacy_subscription(&id, filter, sink);
    let mut say = |line: String| writeln!(server, "{line}").unwrap();
    let tag = format!(r#""_meta":{{"io.modelcontextprotocol/subscriptionId":{id}}}"#);
    say(format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{"notifications":{{"toolsListChanged":true}},{tag}}}}}"#
    ));
    say(format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{{{tag}}}}}"#
    ));
    say(format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{{"uri":"b://not-asked",{tag}}}}}"#
    ));
    say(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#.into());
    // The ping's answer: every line before it was routed.
    let pong = written.recv_timeout(WAIT).unwrap();
    assert_eq!(pong["id"], "after", "{pong}");
    let got: Vec<SubscriptionDelivery> = events.try_iter().collect();
    assert!(got.is_empty(), "the legacy subscription got {got:?}");
}
