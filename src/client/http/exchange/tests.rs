use super::*;
use std::net::{TcpListener, TcpStream};

/// A connection whose server side has already sent `bytes` and closed.
fn replayed(bytes: &[u8]) -> Connection {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = TcpStream::connect(addr).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    server.write_all(bytes).unwrap();
    drop(server);
    BufReader::new(Stream::Plain(client))
}

/// Every message `read_events` hands over from `body` (at most 1,024
/// bytes an event), and where the stream got to.
fn events_in(body: &mut Body<'_>) -> (Vec<String>, Cursor) {
    let mut events = Vec::new();
    let mut cursor = Cursor::default();
    read_events(body, 1024, &mut cursor, |e| {
        events.push(String::from_utf8(e).unwrap());
        true
    })
    .unwrap();
    (events, cursor)
}

#[test]
fn a_chunked_event_stream_yields_each_event() {
    let mut conn = replayed(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
          7\r\n: ping\n\r\n1a\r\nevent: message\ndata: {\"a\":\r\nf\r\n1}\ndata: [2]\r\n\n\r\n\
          0\r\n\r\n",
    );
    let head = read_head(&mut conn, false, None).unwrap().unwrap();
    assert_eq!(head.status, 200);
    assert!(head.is_event_stream() && head.keeps_alive());
    let mut body = Body::new(&mut conn, &head);
    let (events, cursor) = events_in(&mut body);
    assert_eq!(events, ["{\"a\":1} [2]"]);
    assert_eq!(cursor.last_id, None);
    assert!(body.is_done());
}

// The SSE rules and what servers send: a byte order mark first, JSON
// spread over several `data:` lines (joined by a LF, which must not
// split the message for the line-based link), a batch array, and a line
// far past the limit, which is dropped as it is read.
#[test]
fn multi_line_data_a_bom_a_batch_and_an_overlong_line() {
    let mut stream = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
        \xEF\xBB\xBFdata: {\"a\":\ndata:  1, \"q\": \"\\\"\"\ndata: }\n\n\
        data: [{\"b\":2},{\"c\":3}]\n\n"
        .to_vec();
    stream.extend_from_slice(b"data: ");
    stream.extend(std::iter::repeat_n(b'x', 20_000));
    stream.extend_from_slice(b"\n\nid: ");
    stream.extend(std::iter::repeat_n(b'i', 20_000));
    stream.extend_from_slice(b"\ndata: {\"d\":4}\n\n");
    let mut conn = replayed(&stream);
    let head = read_head(&mut conn, false, None).unwrap().unwrap();
    let mut body = Body::new(&mut conn, &head);
    let (events, cursor) = events_in(&mut body);
    assert_eq!(
        events,
        [
            r#"{"a":  1, "q": "\"" }"#,
            r#"{"b":2}"#,
            r#"{"c":3}"#,
            r#"{"d":4}"#
        ]
    );
    assert_eq!(cursor.last_id, None, "an id cut short is ignored");
    let mut line = Vec::new();
    let mut endless = &[b'y'; 10_000][..];
    assert_eq!(
        read_line_capped(&mut endless, &mut line, 100).unwrap(),
        Some(true)
    );
    assert_eq!(line.len(), 100);
}

#[test]
fn a_priming_event_moves_the_cursor_and_delivers_nothing() {
    let mut conn = replayed(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
          id: event-1\nretry: 500\ndata: \n\n\
          id: bad\0id\nretry: 5s\nevent: message\ndata: {}\n\n",
    );
    let head = read_head(&mut conn, false, None).unwrap().unwrap();
    let mut body = Body::new(&mut conn, &head);
    let (events, cursor) = events_in(&mut body);
    assert_eq!(events, ["{}"]);
    assert_eq!(cursor.last_id.as_deref(), Some("event-1"));
    assert_eq!(cursor.retry, Some(Duration::from_millis(500)));
}

#[test]
fn a_json_batch_splits_and_a_length_body_ends_where_it_says() {
    let mut conn =
        replayed(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 13\r\n\r\n[{\"a\":1}, 2 ]extra");
    let head = read_head(&mut conn, false, None).unwrap().unwrap();
    assert_eq!(head.status, 400);
    let mut body = Body::new(&mut conn, &head);
    let messages = read_json(&mut body, 100).unwrap();
    assert_eq!(messages, [b"{\"a\":1}".to_vec(), b"2".to_vec()]);
    assert!(body.is_done());
}

/// One deadline over a head and a body that trickle in a byte at a
/// time, each byte well within any read timeout: the status line, and
/// a chunk's size line after a head in time. Before, each line read
/// on while the bytes came (up to 64 KiB, or 4 KiB).
#[test]
fn a_trickled_head_or_chunk_line_ends_at_the_deadline() {
    for prefix in [
        &b"HTTP/1.1 200 OK"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1",
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        server.write_all(prefix).unwrap();
        let trickle = std::thread::spawn(move || {
            for _ in 0..60 {
                if server.write_all(b" ").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut conn = BufReader::new(crate::client::http::stream::Stream::Plain(client));
        let started = Instant::now();
        let deadline = started + Duration::from_millis(300);
        let read = read_head(&mut conn, false, Some(deadline)).and_then(|head| {
            let head = head.expect("a head");
            let mut body = Body::new(&mut conn, &head);
            body.until(deadline);
            body.read(&mut [0; 16])
        });
        let took = started.elapsed();
        assert!(read.is_err(), "{read:?}");
        assert!(took < Duration::from_millis(1500), "took {took:?}");
        drop(conn);
        trickle.join().unwrap();
    }
}

#[test]
fn an_ended_connection_is_no_response() {
    let mut conn = replayed(b"");
    assert!(read_head(&mut conn, false, None).unwrap().is_none());
    let mut conn = replayed(b"SSH-2.0\r\n\r\n");
    assert!(read_head(&mut conn, false, None).is_err());
}
