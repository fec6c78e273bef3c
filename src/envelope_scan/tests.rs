use super::*;

/// Scans `line` whole, and split at every position (and byte by byte),
/// and checks that every way gives the same answer.
fn scan(line: &str) -> Envelope {
    let bytes = line.as_bytes();
    let mut whole = EnvelopeScan::new();
    whole.feed(bytes);
    let whole = whole.finish();
    for split in 0..=bytes.len() {
        let mut scan = EnvelopeScan::new();
        scan.feed(&bytes[..split]);
        scan.feed(&bytes[split..]);
        assert_eq!(scan.finish(), whole, "split at {split} of {line}");
    }
    let mut bytewise = EnvelopeScan::new();
    for b in bytes.chunks(1) {
        bytewise.feed(b);
    }
    assert_eq!(bytewise.finish(), whole, "byte by byte: {line}");
    whole
}

fn id_of(line: &str) -> Option<RequestId> {
    scan(line).id
}

/// Claim (review size11): `end_key` reads a key through `from_utf8` +
/// `from_str` since ada2551; a key that is not UTF-8, that starts with
/// a byte order mark or holds a lone surrogate is no member, as with
/// `from_slice`, and the real `id` after it is still found.
#[test]
fn a_key_that_is_not_utf8_or_holds_a_lone_surrogate_is_not_the_id() {
    let id_of_bytes = |line: &[u8]| {
        let mut scan = EnvelopeScan::new();
        scan.feed(line);
        scan.finish().id
    };
    for key in [
        &b"\"id\xff\""[..],
        b"\"\xffid\"",
        b"\"\xef\xbb\xbfid\"",
        b"\"i\xed\xa0\x80d\"",
        br#""\ud800id""#,
        br#""id\udc00""#,
        br#""\ufeffid""#,
    ] {
        let mut line = b"{".to_vec();
        line.extend_from_slice(key);
        line.extend_from_slice(br#":1,"id":2,"method":"m"}"#);
        assert_eq!(id_of_bytes(&line), Some(2.into()), "{line:?}");
        let mut alone = b"{".to_vec();
        alone.extend_from_slice(key);
        alone.extend_from_slice(br#":1,"method":"m"}"#);
        assert_eq!(id_of_bytes(&alone), None, "{alone:?}");
    }
    assert_eq!(
        id_of_bytes(br#"{"\ud83d\ude00":1,"i\u0064":3}"#),
        Some(3.into())
    );
}

#[test]
fn the_id_is_found_wherever_it_is() {
    assert_eq!(
        id_of(r#"{"jsonrpc":"2.0","id":5,"method":"m","params":{"x":"y"}}"#),
        Some(5.into())
    );
    assert_eq!(
        id_of(r#"{"result":{"content":[{"type":"text","text":"a\"}b"}]},"jsonrpc":"2.0","id":5}"#),
        Some(5.into())
    );
    assert_eq!(
        id_of(" {\"params\" : { \"id\" : 1 } , \"id\" : \"a\\\"b\" }\r\n"),
        Some("a\"b".into())
    );
    assert_eq!(
        id_of(r#"{"id":-9223372036854775809,"method":"m"}"#),
        Some(RequestId::BigNumber("-9223372036854775809".into()))
    );
    // A key written with escapes is the same key.
    assert_eq!(id_of(r#"{"\u0069d":7,"method":"m"}"#), Some(7.into()));
    // A byte order mark before the object is allowed.
    assert_eq!(id_of("\u{feff}{\"id\":8}"), Some(8.into()));
}

#[test]
fn ids_that_are_not_top_level_or_not_ids_do_not_count() {
    assert_eq!(id_of(r#"{"params":{"id":1},"method":"m"}"#), None);
    assert_eq!(id_of(r#"{"text":"\"id\":2","method":"m"}"#), None);
    assert_eq!(id_of(r#"{"a":["id",3],"method":"m"}"#), None);
    assert_eq!(id_of(r#"{"id":null,"method":"m"}"#), None);
    assert_eq!(id_of(r#"{"id":1.5,"method":"m"}"#), None);
    assert_eq!(id_of(r#"{"id":{"x":1},"method":"m"}"#), None);
    assert_eq!(id_of(r#"{"id":1,"id":2,"method":"m"}"#), None);
    let long = format!(r#"{{"id":"{}","method":"m"}}"#, "x".repeat(ID_LIMIT));
    assert_eq!(id_of(&long), None);
}

#[test]
fn nothing_is_reported_for_a_line_that_is_not_one_object() {
    for line in [
        r#"[{"id":1}]"#,
        r#"x{"id":1}"#,
        r#"{"id":1,"method":"m""#,
        r#"{"id":1} {"id":2}"#,
        r#"{"id":1]"#,
        "\u{c}{\"id\":1}",
    ] {
        assert_eq!(scan(line), Envelope::default(), "{line}");
    }
    assert_eq!(id_of("{\"id\":1} \t\r\n"), Some(1.into()));
}

#[test]
fn responses_are_told_from_requests() {
    assert!(scan(r#"{"jsonrpc":"2.0","result":{},"id":1}"#).is_response());
    assert!(scan(r#"{"error":{"code":1,"message":"m"},"id":1}"#).is_response());
    assert!(!scan(r#"{"id":1,"method":"m","params":{"result":1}}"#).is_response());
    assert!(!scan(r#"{"id":1,"method":"m","result":{}}"#).is_response());
    assert!(scan(r#"{"method":"m","params":{"id":1}}"#).is_notification());
    assert!(!scan(r#"{"method":"m","id":null}"#).is_notification());
}
